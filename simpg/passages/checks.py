"""The checks of a passage search's arguments, one per argument, shared by every surface.

The lookups (psycopg, SQLAlchemy), the pair reports (in memory, SQL, Spark) and the CLI all
check here, so an argument has one rule and one error: lowercase, naming the value. SQL's
``simpg.checked_max_common`` words its error as :func:`checked_max_common` does (a test holds
the two equal).

Example:
    >>> checked_max_common(-1)
    Traceback (most recent call last):
    ...
    simpg.fingerprint.errors.InvalidConfig: max_common must be an integer of at least 0, got -1
"""

from __future__ import annotations

from typing import Any

from simpg.fingerprint.errors import InvalidConfig
from simpg.passages.config import K, PassageConfig

__all__ = ["checked_limit", "checked_max_common", "checked_min_containment", "checked_min_tokens"]


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


def checked_max_common(value: Any) -> int | None:
    """``max_common`` (hashes in more rows than this are skipped; None: none), or an error naming it."""
    if value is not None and (not _is_int(value) or value < 0):
        raise InvalidConfig(f"max_common must be an integer of at least 0, got {value!r}")
    return None if value is None else int(value)


def checked_limit(value: Any) -> int | None:
    """``limit`` (at most this many matches; None: all), or an error naming it."""
    if value is not None and (not _is_int(value) or value < 1):
        raise InvalidConfig(f"limit must be an integer of at least 1, got {value!r}")
    return None if value is None else int(value)
