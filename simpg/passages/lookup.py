"""The checks and the verification step of a passage lookup, shared by every surface (SQLAlchemy, psycopg).

A surface checks the arguments here (:func:`checked_thresholds`, :func:`checked_max_common`,
:func:`checked_limit`), prepares the text once (:func:`prepared_query`: its tokens, its
k-gram hashes, its passage hashes), runs the one lookup statement (SQL's
``simpg.passage_lookup_statement``: rows sharing a hash with the text, but for the common
hashes :func:`to_skip` names) and hands the rows to :func:`verify` (or runs
``simpg.passage_probe_statement`` and hands its rows to :class:`Verification`, which asks
for the texts it needs a batch at a time), which compares each row's text with the query
text (:func:`~simpg.passages.compare`) and keeps those that share a passage of at least
``min_tokens`` tokens and, with ``min_containment``, hold or are held that much.

Order and ``limit``: matches come in the statement's order, the most shared hashes first
(distinct hashes of the text, less the skipped ones, that the row holds), then by key;
``limit`` keeps the first ``limit`` matches of that order. The order is known before any
text is read, so candidates are verified in it, their texts read a batch at a time, and
the verification stops at the ``limit``-th match (:class:`Verification`): exact, and a
boilerplate paragraph in a thousand rows costs ``limit`` verifications, not a thousand.
A candidate's longest shared passage is bounded from its stored hashes before its text is
read (:func:`longest_bounds`); one bounded below ``min_tokens`` is dropped unread. Orders
by what verification finds (the longest passage, the tokens shared) allow no early stop:
see :class:`Verification`.

Thresholds: the text is winnowed as the rows are (windows weighted by script), so the
index finds every row sharing a run of at least the config's ``guarantee``
(``max(window, spaceless_window) + K - 1``) tokens with the text, and no promise below it, so
``min_tokens`` below the guarantee is refused (:func:`checked_thresholds`): an answer is
never silently incomplete. ``min_containment`` filters those rows further; a row that
holds much of the text only in passages shorter than the guarantee is not found.

Example:
    >>> from simpg.passages import PassageConfig, passage_hashes
    >>> words = " ".join(f"w{i}" for i in range(80))
    >>> bodies = {1: "intro " + words, 2: "unrelated text"}
    >>> rows = [(key, body, passage_hashes(body), 1) for key, body in bodies.items()]
    >>> [m.key for m in verify(words, PassageConfig(), rows)]
    [1]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.errors import InvalidDocument
from simpg.passages.checks import checked_limit, checked_max_common, checked_min_containment, checked_min_tokens
from simpg.passages.comparison import compare
from simpg.passages.config import K, PassageConfig, config_or_default
from simpg.passages.tokens import Tokens, spaceless_tokens, tokens
from simpg.passages.winnow import I64Array, U64Array, kgram_hashes, window_minima, winnowed
from simpg.results import PassageMatch

#: Windows whose minimum is taken at a time: bounds the memory of a very long query text.
_MINIMA_CHUNK = 1 << 15
#: Candidate rows whose bounds are computed at a time (a rows x windows table of booleans).
_BOUND_CHUNK = 1024
#: The default ``max_common`` of a lookup: 0.1% of the table's rows by the statistics, and
#: never fewer than 1,000 rows (``simpg.max_common_rows``). A share rather than a count: an
#: absolute 1,000 skips nothing on a table of 10,000 rows and skips a passage quoted in
#: 0.001% of a table of 100 million rows (which the statistics cannot even list: their
#: resolution is a share of the rows too, docs/partial.md); the floor keeps small tables
#: exact where reading every candidate costs milliseconds.
DEFAULT_MAX_COMMON = 0.001
#: Most texts a lookup reads and verifies in one batch (:class:`Verification`).
TEXT_BATCH = 64

__all__ = ["DEFAULT_MAX_COMMON", "TEXT_BATCH", "Query", "Verification", "bound_window", "checked_limit",
           "checked_max_common", "checked_thresholds", "longest_bounds", "prepared_query", "query_text", "to_skip",
           "verify"]


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
    hashes: I64Array  #: its passage hashes (as a row stores them), sorted: what the lookup statement searches ($1)
    minima: I64Array  #: the distinct minima of its windows (as winnowing makes them), sorted (signed, as stored)
    window_of: npt.NDArray[np.intp]  #: for each such window in text order, the index of its minimum in ``minima``


def prepared_query(text: str | Tokens | Query, config: PassageConfig | None = None) -> Query:
    """The tokens, k-gram hashes and passage hashes (as a row stores them) of a text, each made once."""
    if isinstance(text, Query):
        return text
    toks = text if isinstance(text, Tokens) else tokens(query_text(text))
    grams = kgram_hashes(toks.hashes)
    # under K tokens the one "k-gram" is all the tokens: no run of K tokens to check against
    distinct = np.unique(grams) if len(toks) >= K else np.zeros(0, dtype=np.uint64)
    cfg = config_or_default(config)
    minima, window_of = _window_minima(grams, toks, cfg) if len(toks) >= K else (
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.intp))
    return Query(toks, distinct, winnowed(grams, toks, cfg), minima, window_of)


def bound_window(config: PassageConfig) -> int:
    """The longest window in k-grams, which the bounds of :func:`longest_bounds` assume: the config's larger one.

    What they rely on: a window of the query's (:func:`~simpg.passages.winnow.window_minima`)
    that lies inside a run the row shares is the same window in the row's text (its extent
    depends only on the k-grams inside it), so the row stores its minimum; and no window is
    longer than ``max(window, spaceless_window)`` k-grams.
    """
    return max(config.window, config.spaceless_window)


def _window_minima(grams: U64Array, toks: Tokens, config: PassageConfig) -> tuple[I64Array, npt.NDArray[np.intp]]:
    # the minimum of each of the query's windows in text order (uint64 order, as winnowing compares them)
    mins = grams[window_minima(grams, spaceless_tokens(toks), config)]
    minima, window_of = np.unique(mins.view(np.int64), return_inverse=True)
    return minima, window_of.astype(np.intp)


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


def _stored(hashes: Any) -> I64Array:
    # a row's stored hashes as int64 (NULL elements, which simpg never writes, ignored)
    if hashes is None:
        return np.zeros(0, dtype=np.int64)
    if isinstance(hashes, np.ndarray):
        return hashes.astype(np.int64, copy=False)
    try:
        return np.fromiter(hashes, dtype=np.int64, count=len(hashes))
    except TypeError:
        return np.array([h for h in hashes if h is not None], dtype=np.int64)


def longest_bounds(query: Query, config: PassageConfig | None, stored: Sequence[Any]) -> npt.NDArray[np.int64]:
    """For each row's stored hashes, an upper bound of the longest run of tokens it shares with the query.

    A run of ``L`` equal tokens is ``L - K + 1`` equal k-grams; every window of the query
    inside the run has its minimum stored in the row, and every window starting in the run
    at least ``W =`` :func:`bound_window` k-grams before its end lies inside it (see there),
    so the query's windows whose minima the row holds include a run of at least
    ``L - K - W + 2`` consecutive windows. Hence ``L <= m + W + K - 2`` for ``m`` the longest
    run of consecutive query windows whose minima the row holds, and with no such window
    ``L <= W + K - 2``, below the guarantee: such a row cannot be a match. Never above the
    query's tokens. Exact for repeated text too: windows are counted by position in the
    query, not by distinct hashes. Assumes the stored hashes are those of the row's text.
    """
    window = bound_window(config_or_default(config))
    n_tokens = len(query.tokens)
    none = min(n_tokens, window + K - 2)
    bounds = np.full(len(stored), none, dtype=np.int64)
    minima, window_of = query.minima, query.window_of
    if not len(minima) or not len(stored):
        return bounds
    n_windows = len(window_of)
    for first in range(0, len(stored), _BOUND_CHUNK):
        chunk = stored[first : first + _BOUND_CHUNK]
        lengths = np.fromiter((0 if h is None else len(h) for h in chunk), dtype=np.intp, count=len(chunk))
        try:  # one pass over every row's hashes
            flat = np.fromiter(itertools.chain.from_iterable(h for h in chunk if h is not None), dtype=np.int64,
                               count=int(lengths.sum()))
            rows: Sequence[Any] = chunk
        except (TypeError, ValueError):  # NULL elements or arrays: row by row
            rows = [_stored(h) for h in chunk]
            lengths = np.fromiter((len(r) for r in rows), dtype=np.intp, count=len(rows))
            flat = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        owner = np.repeat(np.arange(len(rows)), lengths)
        at = np.minimum(np.searchsorted(minima, flat), len(minima) - 1)
        hit = minima[at] == flat
        held = np.zeros((len(rows), len(minima)), dtype=bool)
        held[owner[hit], at[hit]] = True
        # each row's windows whose minimum it holds, a False column between rows
        ok = np.zeros((len(rows), n_windows + 1), dtype=bool)
        ok[:, :n_windows] = held[:, window_of]
        edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.ravel().view(np.int8), [0]))))
        starts, ends = edges[::2], edges[1::2]
        longest = np.zeros(len(rows), dtype=np.int64)
        np.maximum.at(longest, starts // (n_windows + 1), ends - starts)
        bounds[first : first + len(rows)] = np.where(longest > 0, np.minimum(longest + window + K - 2, n_tokens),
                                                     none)
    return bounds


class Verification:
    """The candidates of a lookup, verified in the answer's order until ``limit`` matches are found.

    The answer's order is the lookup statement's: the most shared hashes first (distinct
    hashes of the text, less those skipped as common, that the row holds), then by key. It
    is known before any text is read, so the first ``limit`` matches of the whole answer are
    the first ``limit`` candidates, in that order, that pass verification: candidates are
    verified in that order, their texts read a batch at a time, and the verification stops
    at the ``limit``-th match. Candidates whose bound (:func:`longest_bounds`) is below
    ``min_tokens`` are dropped without their text.

    Why not the longest passage first: no bound from the stored hashes is tight at a
    passage's ends (the k-grams next to a shared run are not stored, so the run may as well
    go on for up to a window's width each side), so the rows holding one boilerplate
    paragraph all have a bound above their true length, and an early stop by longest
    passage would have to read every one of them.

    Use: ``keys = v.pending()``; read those rows' texts; ``v.check({key: text})``; again
    until ``pending()`` is empty; then ``v.matches()``.

    Args:
        text: the query text (or its tokens, or :func:`prepared_query`'s answer).
        config: the passage index's config.
        candidates: the probe statement's rows, ``(key, hashes, shared)``, in its order.
        min_tokens, min_containment, limit: as :func:`verify`'s.
    """

    def __init__(self, text: str | Tokens | Query, config: PassageConfig | None,
                 candidates: Iterable[Sequence[Any]], *, min_tokens: int | None = None,
                 min_containment: float | None = None, limit: int | None = None) -> None:
        self.least, self.containment = checked_thresholds(config_or_default(config), min_tokens, min_containment)
        self.limit = checked_limit(limit)
        self.query = prepared_query(text, config)
        self.config = config
        #: the candidates, in the statement's order
        self._rows = [(row[0], row[1], int(row[2])) for row in candidates]
        #: the bounds of the first candidates (computed as the verification reaches them)
        self._bounds: list[int] = []
        self._next = 0
        self._found: list[PassageMatch] = []
        self.candidates = len(self._rows)  #: rows the statement found
        self.read = 0  #: texts read and verified

    def _may_match(self, i: int) -> bool:
        # bounds are computed a chunk at a time as the verification reaches them: with a
        # small limit, most candidates are never reached
        while i >= len(self._bounds):
            chunk = self._rows[len(self._bounds) : len(self._bounds) + TEXT_BATCH]
            self._bounds += longest_bounds(self.query, self.config, [r[1] for r in chunk]).tolist()
        return self._bounds[i] >= self.least

    def _batch(self) -> tuple[int, list[int]]:
        # the candidates of the next batch (positions), and where the batch ends
        if self.limit is not None and len(self._found) >= self.limit:
            return self._next, []
        # with a limit, as many texts as matches are wanted (and a few more: some fail)
        size = TEXT_BATCH if self.limit is None else min(TEXT_BATCH, max(self.limit - len(self._found), 4))
        picked: list[int] = []
        i = self._next
        while i < len(self._rows) and len(picked) < size:
            if self._may_match(i):
                picked.append(i)
            i += 1
        return i, picked

    def pending(self) -> list[Any]:
        """The keys of the next batch of candidates to read and verify; empty when the answer is complete."""
        return [self._rows[i][0] for i in self._batch()[1]]

    def check(self, texts: Mapping[Any, str | None]) -> None:
        """Verify the batch :meth:`pending` named, given their texts by key (a key missing: the row is gone)."""
        self._next, picked = self._batch()
        for key, _hashes, shared in (self._rows[i] for i in picked):
            body = texts.get(key)
            if body is None:  # a NULL text, or a row deleted since: nothing to verify, nothing claimed
                continue
            self.read += 1
            match = self._match(key, body, shared)
            if match is not None:
                self._found.append(match)
                if self.limit is not None and len(self._found) >= self.limit:
                    return

    def _match(self, key: Any, body: str, shared: int) -> PassageMatch | None:
        row = tokens(body)
        if _longest_kgram_run(self.query.grams, row) < self.least:
            return None  # cheap and exact: compare() would find no run this long
        c = compare(self.query.tokens, row)
        if c.longest < self.least or max(c.a_in_b, c.b_in_a) < self.containment:
            return None
        return PassageMatch(key, c.passages, c.shared_tokens, c.longest, row_in_text=c.b_in_a,
                            text_in_row=c.a_in_b, shared_hashes=shared)

    def matches(self) -> list[PassageMatch]:
        """The matches found, in the statement's order (most shared hashes, then key); at most ``limit``."""
        return list(self._found)


def verify(
    text: str | Tokens | Query,
    config: PassageConfig | None,
    rows: Iterable[Sequence[Any]],
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    limit: int | None = None,
) -> list[PassageMatch]:
    """The candidate rows that truly share passages with ``text``, in the statement's order (most shared hashes first).

    Args:
        text: the query text (or its tokens, or :func:`prepared_query`'s answer).
        config: the passage index's config (its guarantee is the default ``min_tokens``).
        rows: the lookup statement's rows, ``(key, body, hashes, shared)``, in its order,
            which breaks ties. A NULL body matches nothing.
        min_tokens: the longest shared passage must have at least this many tokens
            (default and lowest: the config's guarantee).
        min_containment: ``max(text_in_row, row_in_text)`` must reach it (default 0).
        limit: at most this many matches: the first ones of the answer's order; None: all.

    Returns:
        One :class:`~simpg.results.PassageMatch` per row kept, in the statement's order
        (most shared hashes, then key). Rows are verified in that order, and no further
        than ``limit`` needs (:class:`Verification`).
    """
    rows = list(rows)
    texts = {row[0]: row[1] for row in rows}
    check = Verification(text, config, [(row[0], row[2], row[3]) for row in rows], min_tokens=min_tokens,
                         min_containment=min_containment, limit=limit)
    while check.pending():
        check.check(texts)
    return check.matches()
