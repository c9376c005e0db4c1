"""Exceptions raised while fingerprinting. All are :class:`simpg.exc.SimpgError` subclasses.

Messages are lowercase, without a final period, and name the offending value, e.g.
``expected str, bytes or mapping, got None``. Each class also derives from the matching
built-in (``ValueError`` or ``TypeError``) so generic handlers keep working.
"""

from __future__ import annotations

from simpg.exc import SimpgError

__all__ = [
    "DecodeError",
    "EmptyDocument",
    "FingerprintError",
    "InvalidConfig",
    "InvalidDocument",
    "NoFeatures",
]


class FingerprintError(SimpgError):
    """fingerprinting failed"""  # noqa: D415 - the docstring is the default message


class InvalidConfig(FingerprintError, ValueError):
    """invalid fingerprint config"""  # noqa: D415 - the docstring is the default message


class InvalidDocument(FingerprintError, TypeError):
    """expected str, bytes or mapping"""  # noqa: D415 - the docstring is the default message


class NoFeatures(FingerprintError, ValueError):
    """document has no usable features"""  # noqa: D415 - the docstring is the default message


class EmptyDocument(NoFeatures):
    """empty document"""  # noqa: D415 - the docstring is the default message


class DecodeError(FingerprintError, ValueError):
    """invalid utf-8"""  # noqa: D415 - the docstring is the default message
