"""The checks and the verification step of a passage lookup, shared by every surface (SQLAlchemy, psycopg).

A surface checks the arguments here (:func:`checked_thresholds`, :func:`checked_max_common`,
:func:`checked_limit`), prepares the text once (:func:`prepared_query`: its tokens, its
k-gram hashes, its passage hashes), runs the one lookup statement (SQL's
``simpg.passage_lookup_statement``: rows sharing a hash with the text, but for the common
hashes :func:`to_skip` names) and hands the rows to :func:`verify`, which compares each
row's text with the query text (:func:`~simpg.passages.compare`) and keeps those that share
a passage of at least ``min_tokens`` tokens and, with ``min_containment``, hold or are
held that much.

Thresholds: the text is winnowed as the rows are (windows weighted by script), so the
index finds every row sharing a run of at least the config's ``guarantee``
(``max(window, spaceless_window) + K - 1``) tokens with the text, and no promise below it, so
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
from typing import Any, NamedTuple

import numpy as np

from simpg.fingerprint.errors import InvalidDocument
from simpg.passages.checks import checked_limit, checked_max_common, checked_min_containment, checked_min_tokens
from simpg.passages.comparison import compare
from simpg.passages.config import K, PassageConfig, config_or_default
from simpg.passages.tokens import Tokens, tokens
from simpg.passages.winnow import I64Array, U64Array, kgram_hashes, winnowed
from simpg.results import PassageMatch

__all__ = ["Query", "checked_limit", "checked_max_common", "checked_thresholds", "prepared_query", "query_text",
           "to_skip", "verify"]


def checked_thresholds(config: PassageConfig, min_tokens: Any, min_containment: Any) -> tuple[int, float]:
    """``(min_tokens, min_containment)`` checked (:mod:`simpg.passages.checks`), with the lookup's defaults.

    ``min_tokens`` None means the config's guarantee; below it is refused.
    ``min_containment`` None means 0.0.
    """
    least = checked_min_tokens(min_tokens, config)
    containment = checked_min_containment(min_containment)
    return config.guarantee if least is None else least, 0.0 if containment is None else containment


def query_text(text: Any) -> str:
    """``text`` if it is a str, else an error naming it."""
    if not isinstance(text, str):
        raise InvalidDocument(f"expected a text (str), got {text!r:.60}")
    return text


class Query(NamedTuple):
    """A text to look up, prepared once: every candidate is compared with it."""

    tokens: Tokens
    grams: U64Array  #: its distinct k-gram hashes (none under K tokens): the cheap check's
    hashes: I64Array  #: its passage hashes, sorted: what the lookup statement searches ($1)


def prepared_query(text: str | Tokens | Query, config: PassageConfig | None = None) -> Query:
    """The tokens, k-gram hashes and passage hashes (as a row stores them) of a text, each made once."""
    if isinstance(text, Query):
        return text
    toks = text if isinstance(text, Tokens) else tokens(query_text(text))
    grams = kgram_hashes(toks.hashes)
    # under K tokens the one "k-gram" is all the tokens: no run of K tokens to check against
    distinct = np.unique(grams) if len(toks) >= K else np.zeros(0, dtype=np.uint64)
    return Query(toks, distinct, winnowed(grams, toks, config))


def to_skip(hashes: I64Array, common: Iterable[int]) -> list[int]:
    """The query's passage hashes among the column's ``common`` ones, sorted: what the lookup skips ($2)."""
    common = frozenset(common)
    return sorted(common.intersection(hashes.tolist())) if common else []


def _longest_kgram_run(query_grams: U64Array, row: Tokens) -> int:
    """The longest run of consecutive k-grams of ``row`` whose hashes are k-gram hashes of the query, in tokens.

    Equal tokens have equal hashes, so a run of ``n`` tokens the two texts share is a run of
    ``n - K + 1`` such k-grams: a row whose longest run is shorter than ``min_tokens`` shares
    no run of ``min_tokens`` tokens, and is dropped without the full comparison (exact: it
    only ever drops rows that :func:`~simpg.passages.compare` would drop).
    """
    grams = kgram_hashes(row.hashes) if len(row) >= K else np.zeros(0, dtype=np.uint64)
    hit = np.isin(grams, query_grams)
    if not hit.any():
        return 0
    edges = np.flatnonzero(np.diff(np.concatenate(([0], hit.view(np.int8), [0]))))
    return int((edges[1::2] - edges[::2]).max()) + K - 1


def verify(
    text: str | Tokens | Query,
    config: PassageConfig | None,
    rows: Iterable[Sequence[Any]],
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    limit: int | None = None,
) -> list[PassageMatch]:
    """The candidate rows that truly share passages with ``text``, most shared tokens first.

    Args:
        text: the query text (or its tokens, or :func:`prepared_query`'s answer).
        config: the passage index's config (its guarantee is the default ``min_tokens``).
        rows: the lookup statement's rows, ``(key, body, hashes, shared)`` (``hashes`` unused);
            in the statement's order, which breaks ties. A NULL body matches nothing.
        min_tokens: the longest shared passage must have at least this many tokens
            (default and lowest: the config's guarantee).
        min_containment: ``max(text_in_row, row_in_text)`` must reach it (default 0).
        limit: at most this many matches (the most shared tokens first); None: all.

    Returns:
        One :class:`~simpg.results.PassageMatch` per row kept, by shared tokens (most
        first), then in the statement's order.
    """
    least, containment = checked_thresholds(config_or_default(config), min_tokens, min_containment)
    checked_limit(limit)
    query = prepared_query(text, config)
    found: list[PassageMatch] = []
    for key, body, _hashes, shared in rows:
        if body is None:  # a NULL text: nothing to verify, nothing claimed
            continue
        row = tokens(body)
        if _longest_kgram_run(query.grams, row) < least:
            continue  # cheap and exact: compare() would find no run this long
        c = compare(query.tokens, row)
        if c.longest < least or max(c.a_in_b, c.b_in_a) < containment:
            continue
        found.append(PassageMatch(key, c.passages, c.shared_tokens, c.longest, row_in_text=c.b_in_a,
                                  text_in_row=c.a_in_b, shared_hashes=int(shared)))
    # stable: rows with as many shared tokens keep the statement's order (most hashes, then key)
    found.sort(key=lambda m: -m.shared_tokens)
    return found if limit is None else found[:limit]
