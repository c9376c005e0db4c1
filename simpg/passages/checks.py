"""The checks of a passage search's arguments, one per argument, shared by every surface.

The lookups (psycopg, SQLAlchemy), the pair reports (in memory, SQL, Spark) and the CLI all
check here, so an argument has one rule and one error: lowercase, naming the value. SQL's
``simpg.checked_max_common`` words its error as :func:`checked_max_common` does (a test holds
the two equal).

Example:
    >>> checked_max_common(0.001), checked_max_common(5.0), max_common_rows(0.001, 10**7)
    (0.001, 5, 10000.0)
    >>> checked_limit(0)
    Traceback (most recent call last):
    ...
    simpg.fingerprint.errors.InvalidConfig: limit must be an integer of at least 1, got 0
"""

from __future__ import annotations

import math
from typing import Any

from simpg.fingerprint.errors import InvalidConfig
from simpg.passages.config import K, PassageConfig

__all__ = ["checked_key_bits", "checked_limit", "checked_max_common", "checked_min_containment",
           "checked_min_tokens", "max_common_rows"]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked_min_tokens(value: Any, config: PassageConfig | None = None) -> int | None:
    """``min_tokens`` (tokens of the longest shared passage), None, or an error naming it.

    With ``config`` it must reach the config's guarantee: shorter shared runs are not all
    candidates, and an answer below it would be silently incomplete; without, at least 1.
    """
    if value is None:
        return None
    least = 1 if config is None else config.guarantee
    if not _is_int(value) or value < least:
        why = "" if config is None else (f" (the passage index's larger window "
                                         f"{max(config.window, config.spaceless_window)} + {K - 1}: "
                                         "shorter shared runs are not all found)")
        raise InvalidConfig(f"min_tokens must be an integer of at least {least}{why}, got {value!r}")
    return int(value)


def checked_min_containment(value: Any) -> float | None:
    """``min_containment`` (share of a text the other holds) as a float, None, or an error naming it."""
    if value is None:
        return None
    # NaN fails the range test too
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidConfig(f"min_containment must be a number from 0 to 1, got {value!r}")
    return float(value)


def checked_max_common(value: Any) -> int | float | None:
    """``max_common`` (hashes in more rows than this are skipped; None: none), or an error naming it.

    A count of rows (an integer of at least 0, or a float of a whole value), or a share of
    the rows, a float above 0 and below 1 (:func:`max_common_rows`). The same rule and
    words as SQL's ``simpg.checked_max_common`` (which says null for None).
    """
    if value is None:
        return None
    if not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value):
        if 0 < value < 1:
            return float(value)
        if value >= 0 and value == int(value):
            return int(value)
    raise InvalidConfig(f"max_common must be an integer of at least 0, a fraction between 0 and 1, or None, "
                        f"got {value!r}")


def max_common_rows(max_common: int | float | None, rows: int) -> int | float | None:
    """The rows (of ``rows``) above which a hash is common: a count as given, a share as ``max(1000, share * rows)``.

    SQL's ``simpg.max_common_rows``: the floor of 1,000 keeps a small table exact (a passage
    copied into a dozen rows of a 10,000-row table is not boilerplate).
    """
    if max_common is not None and 0 < max_common < 1:
        return max(1000.0, max_common * max(rows, 0))
    return max_common


def checked_limit(value: Any) -> int | None:
    """``limit`` (at most this many matches; None: all), or an error naming it."""
    if value is not None and (not _is_int(value) or value < 1):
        raise InvalidConfig(f"limit must be an integer of at least 1, got {value!r}")
    return None if value is None else int(value)


def checked_key_bits(value: Any) -> int | None:
    """``key_bits`` (the bits of each hash a passage index keeps, 1 to 32), None, or an error naming it.

    SQL's ``simpg.checked_key_bits`` words it the same way (it says "null" for None).
    """
    if value is None:
        return None
    if not _is_int(value) or not 1 <= value <= 32:
        raise InvalidConfig(f"key_bits must be an integer between 1 and 32, got {value!r}")
    return int(value)
