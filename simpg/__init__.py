"""simpg: exact near-duplicate search with 64-bit SimHash inside PostgreSQL."""

from __future__ import annotations

import importlib.metadata

from simpg.bits import from_db, hamming, to_db
from simpg.exc import ExtensionNotInstalled, InvalidFingerprint, InvalidLayout, SimpgError
from simpg.layout import Layout

try:
    __version__ = importlib.metadata.version("simpg")
except importlib.metadata.PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
    "ExtensionNotInstalled",
    "InvalidFingerprint",
    "InvalidLayout",
    "Layout",
    "SimpgError",
    "__version__",
    "from_db",
    "hamming",
    "to_db",
]


def __dir__() -> list[str]:
    return __all__
