"""The verification step of a passage lookup, shared by every surface (SQLAlchemy, psycopg).

A surface runs the one lookup statement (SQL's ``simpg.passage_lookup_statement``: rows
sharing a hash with the text's :func:`query_hashes`) and hands the rows to
:func:`verify`, which compares each row's text with the query text
(:func:`~simpg.passages.compare`) and keeps those that share a passage of at least
``min_tokens`` tokens and, with ``min_containment``, hold or are held that much.

Thresholds: the index finds every row sharing a run of at least the config's
``guarantee`` (``window + K - 1``) tokens with the text, and no promise below it, so
``min_tokens`` below the guarantee is refused (:func:`checked_thresholds`): an answer is
never silently incomplete. ``min_containment`` filters those rows further; a row that
holds much of the text only in passages shorter than the guarantee is not found.

Example:
    >>> from simpg.passages import PassageConfig
    >>> words = " ".join(f"w{i}" for i in range(80))
    >>> rows = [(1, "intro " + words, None, 3), (2, "unrelated text", None, 1)]
    >>> [m.key for m in verify(words, PassageConfig(), rows)]
    [1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from simpg.fingerprint.errors import InvalidConfig, InvalidDocument
from simpg.passages.comparison import compare
from simpg.passages.config import K, PassageConfig, config_or_default
from simpg.passages.tokens import Tokens, tokens
from simpg.passages.winnow import passage_hashes
from simpg.results import PassageMatch

__all__ = ["checked_thresholds", "query_hashes", "verify"]


def checked_thresholds(config: PassageConfig, min_tokens: Any, min_containment: Any) -> tuple[int, float]:
    """``(min_tokens, min_containment)`` with their defaults, or an error naming the bad value.

    ``min_tokens`` None means the config's guarantee; below it (or below K) is refused.
    ``min_containment`` None means 0.0; it must be a number in [0, 1].
    """
    guarantee = config.guarantee
    if min_tokens is None:
        min_tokens = guarantee
    if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < K:
        raise InvalidConfig(f"expected min_tokens >= {K}, got {min_tokens!r}")
    if min_tokens < guarantee:
        raise InvalidConfig(
            f"min_tokens {min_tokens} is below the passage index's guarantee {guarantee} "
            f"(window {config.window} + k {K} - 1): shorter shared passages are not all found")
    if min_containment is None:
        min_containment = 0.0
    if isinstance(min_containment, bool) or not isinstance(min_containment, (int, float)) or not (
            0.0 <= min_containment <= 1.0):
        raise InvalidConfig(f"expected min_containment between 0 and 1, got {min_containment!r}")
    return min_tokens, float(min_containment)


def query_hashes(text: str | Tokens, config: PassageConfig | None = None) -> list[int]:
    """The hashes a lookup of ``text`` searches for ($1 of the lookup statement): its passage hashes."""
    if not isinstance(text, (str, Tokens)):
        raise InvalidDocument(f"expected a text (str), got {text!r:.60}")
    return passage_hashes(text, config)


def verify(
    text: str | Tokens,
    config: PassageConfig | None,
    rows: Iterable[Sequence[Any]],
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
) -> list[PassageMatch]:
    """The candidate rows that truly share passages with ``text``, most shared tokens first.

    Args:
        text: the query text (or its tokens).
        config: the passage index's config (its window sets the default ``min_tokens``).
        rows: the lookup statement's rows, ``(key, body, hashes, shared)`` (``hashes`` unused);
            in the statement's order, which breaks ties.
        min_tokens: the longest shared passage must have at least this many tokens
            (default and lowest: the config's guarantee).
        min_containment: ``max(text_in_row, row_in_text)`` must reach it (default 0).

    Returns:
        One :class:`~simpg.results.PassageMatch` per row kept, by shared tokens (most
        first), then in the statement's order.
    """
    cfg = config_or_default(config)
    least, containment = checked_thresholds(cfg, min_tokens, min_containment)
    query = text if isinstance(text, Tokens) else tokens(query_text(text))
    found: list[PassageMatch] = []
    for key, body, _hashes, shared in rows:
        if not isinstance(body, str):  # a NULL text: nothing to verify, nothing claimed
            continue
        c = compare(query, body)
        if c.longest < least or max(c.a_in_b, c.b_in_a) < containment:
            continue
        found.append(PassageMatch(key, c.passages, c.shared_tokens, c.a_in_b, c.b_in_a, int(shared)))
    # stable: rows with as many shared tokens keep the statement's order (most hashes, then key)
    return sorted(found, key=lambda m: -m.shared_tokens)


def query_text(text: Any) -> str:
    """``text`` if it is a str, else an error naming it."""
    if not isinstance(text, str):
        raise InvalidDocument(f"expected a text (str), got {text!r:.60}")
    return text
