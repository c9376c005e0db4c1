"""Exceptions raised by simpg. Messages are lowercase and name the offending value."""

from __future__ import annotations

__all__ = [
    "ExtensionNotInstalled",
    "InvalidFingerprint",
    "InvalidLayout",
    "NearDuplicate",
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


class NearDuplicate(SimpgError):
    """A simpg guard refused a write: a stored row is within k bits (SQLSTATE 23P01).

    Attributes:
        key: the stored row's key, as text (the guard's key column).
        distance: its Hamming distance to the refused fingerprint.
        guard: the guard (trigger) that refused it.
    """

    def __init__(self, message: str | None = None, *, key: str | None = None, distance: int | None = None,
                 guard: str | None = None) -> None:
        super().__init__(message)
        self.key, self.distance, self.guard = key, distance, guard
