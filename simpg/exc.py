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
        super().__init__(message or (self.__doc__ or "").strip())


class InvalidFingerprint(SimpgError, ValueError):
    """invalid fingerprint"""


class InvalidLayout(SimpgError, ValueError):
    """invalid index layout"""


class ExtensionNotInstalled(SimpgError):
    """simpg functions not found; run 'simpg install --dsn ...' or op.install_simpg()"""
