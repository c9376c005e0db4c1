"""Exceptions raised by simpg. Messages are lowercase and name the offending value."""

from __future__ import annotations

__all__ = [
    "ExtensionNotInstalled",
    "InvalidFingerprint",
    "InvalidLayout",
    "SimpgError",
]


class SimpgError(Exception):
    """simpg failed."""

    def __init__(self, message: str | None = None) -> None:
        # The docstring is the default message, in the lowercase style of every error.
        default = (self.__doc__ or "").strip().rstrip(".")
        super().__init__(message or default[:1].lower() + default[1:])


class InvalidFingerprint(SimpgError, ValueError):
    """Invalid fingerprint."""


class InvalidLayout(SimpgError, ValueError):
    """Invalid index layout."""


class ExtensionNotInstalled(SimpgError):
    """Simpg is not installed in this database; run 'simpg install --dsn ...' or op.install_simpg()."""
