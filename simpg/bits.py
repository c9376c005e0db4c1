"""64-bit fingerprint values: the one place that maps Python integers to PostgreSQL bigint.

Python code holds fingerprints as unsigned integers in ``[0, 2**64)``; PostgreSQL stores
them in ``bigint`` (signed, two's complement) with the same 64 bits. Every conversion
between the two goes through :func:`to_db` and :func:`from_db`.

Example:
    >>> to_db(2**63)
    -9223372036854775808
    >>> from_db(-1)
    18446744073709551615
    >>> hamming(0, 2**64 - 1)
    64
"""

from __future__ import annotations

from typing import Any

from simpg.exc import InvalidFingerprint

BITS = 64
MASK = (1 << BITS) - 1
SIGN = 1 << (BITS - 1)

__all__ = ["BITS", "MASK", "check", "from_db", "hamming", "to_db"]


def check(value: Any) -> int:
    """Return ``value`` as an unsigned 64-bit fingerprint, or raise naming the value.

    Accepts ``int`` in ``[0, 2**64)`` (not ``bool``). Signed database values must go
    through :func:`from_db` first, so a negative int is an error here, not a silent wrap.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFingerprint(f"expected 64-bit fingerprint, got {value!r}")
    if not 0 <= value <= MASK:
        raise InvalidFingerprint(f"expected 64-bit fingerprint in [0, 2**64), got {value}")
    return value


def to_db(fingerprint: int) -> int:
    """Map an unsigned 64-bit fingerprint to the signed bigint PostgreSQL stores."""
    value = check(fingerprint)
    return value - (1 << BITS) if value & SIGN else value


def from_db(value: int) -> int:
    """Map a signed bigint from PostgreSQL back to the unsigned fingerprint."""
    if isinstance(value, bool) or not isinstance(value, int) or not -SIGN <= value < SIGN:
        raise InvalidFingerprint(f"expected signed 64-bit integer, got {value!r}")
    return value & MASK


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints (signed or unsigned alike)."""
    return ((a ^ b) & MASK).bit_count()
