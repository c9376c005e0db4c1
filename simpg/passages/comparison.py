"""Exact comparison of two texts: the passages they share and how much of each is in the other.

A shared passage is a maximal run of equal tokens (it cannot be extended left or right) of at
least :data:`~simpg.passages.config.K` tokens, reported with its token range and its character
offsets in both texts. Every run is found, on every diagonal: a text that contains a passage
twice gives both occurrences. Containment is counted exactly over token 3-shingle sets (a text
of 1 or 2 tokens has one shingle of all its tokens): ``b_in_a = |S(a) ∩ S(b)| / |S(b)|``.
Tokens, shingles and k-grams are matched by their 64-bit hashes (:attr:`Tokens.hashes
<simpg.passages.tokens.Tokens.hashes>` and hashes of them), and every match is checked: equal
token hashes must be equal words (within each text, and for every hash both texts hold),
equal shingle and k-gram hashes equal token hashes. A pair with any collision is compared
again as strings (:func:`_compare_words`, the slow reference), so a collision changes nothing.
What a text needs for this is derived once per :class:`~simpg.passages.tokens.Tokens` and
kept on it: a query compared with many candidates derives it once (about 64 bytes a token).

Every pair of matching k-grams is enumerated, :data:`MATCH_CHUNK` at a time so that memory
stays bounded; of each pair only whether it starts or ends a run is kept. Two texts that
repeat one phrase of p tokens r times make about r² × p pairs for about 2r runs: that work
is not capped (a run's start is only known by looking at its pair), it costs a few
vectorised operations a pair (docs/benchmarks.md, "repeated phrase": 880 tokens, 70,000
pairs, 2-3 ms).

A lookup verifies each candidate the passage index found with :func:`compare` (passing the
query's :class:`~simpg.passages.tokens.Tokens` once tokenised): nothing is reported above its
true value.

Example:
    >>> source = "It was the best of times, it was the worst of times, it was the age of wisdom."
    >>> copy = "Dickens wrote: it was the best of times, IT WAS THE WORST of times! Then more."
    >>> c = compare(source, copy)
    >>> [(p.a_start, p.a_end, p.b_start, p.b_end) for p in c.passages]
    [(0, 12, 2, 14), (10, 15, 6, 11)]
    >>> p = c.passages[0]
    >>> source[p.a_char_start:p.a_char_end]
    'It was the best of times, it was the worst of times'
    >>> copy[p.b_char_start:p.b_char_end]
    'it was the best of times, IT WAS THE WORST of times'
    >>> c.passages[1].length  # "of times, it was the" again, further on in a
    5
    >>> round(c.b_in_a, 3), round(c.a_in_b, 3)
    (0.692, 0.75)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.errors import InvalidDocument
from simpg.passages.config import K
from simpg.passages.tokens import Tokens, tokens
from simpg.passages.winnow import _splitmix

__all__ = ["MATCH_CHUNK", "SHINGLE", "Comparison", "SharedPassage", "compare"]

#: Tokens per shingle of the containment.
SHINGLE = 3
#: Matching k-gram pairs enumerated at a time: bounds the memory of texts that repeat a phrase.
MATCH_CHUNK = 1 << 20

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]

_MULTIPLIER = np.uint64(0x100000001B3)


@dataclass(frozen=True)
class SharedPassage:
    """One maximal run of equal tokens in text a and text b.

    Token ranges are ``[start, end)`` token indices; character offsets ``[char_start, char_end)``
    index the original texts (``a_text[a_char_start:a_char_end]`` is the passage as written in a).
    """

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    a_char_start: int
    a_char_end: int
    b_char_start: int
    b_char_end: int

    @property
    def length(self) -> int:
        """Tokens in the passage."""
        return self.a_end - self.a_start


@dataclass(frozen=True)
class Comparison:
    """What two texts share: the passages, and the shingle counts of the containment both ways."""

    passages: tuple[SharedPassage, ...]
    a_shingles: int
    b_shingles: int
    shared_shingles: int

    @property
    def shared_tokens(self) -> int:
        """Tokens of all shared passages together (a passage found twice counts twice)."""
        return sum(p.length for p in self.passages)

    @property
    def longest(self) -> int:
        """Tokens of the longest shared passage (0 for none)."""
        return max((p.length for p in self.passages), default=0)

    @property
    def a_in_b(self) -> float:
        """How much of a is in b: ``|S(a) ∩ S(b)| / |S(a)|`` (0.0 for a text without tokens)."""
        return self.shared_shingles / self.a_shingles if self.a_shingles else 0.0

    @property
    def b_in_a(self) -> float:
        """How much of b is in a: ``|S(a) ∩ S(b)| / |S(b)|`` (0.0 for a text without tokens)."""
        return self.shared_shingles / self.b_shingles if self.b_shingles else 0.0


def _as_tokens(text: str | Tokens, name: str) -> Tokens:
    if isinstance(text, Tokens):
        return text
    if not isinstance(text, str):
        raise InvalidDocument(f"expected str or Tokens for {name}, got {text!r:.60}")
    return tokens(text)


def _gram_ids(seqs: list[IntArray], n: int, alphabet: int) -> list[IntArray]:
    """Ids of every n consecutive symbols of each sequence, equal ids for equal n-grams across all.

    Symbols are ids below ``alphabet``. Pairs are numbered again after each step (np.unique),
    so keys stay below ``count * alphabet`` whatever n is: exact, no hashing.
    """
    counts = [max(0, len(s) - n + 1) for s in seqs]
    keys = np.concatenate([s[:c] for s, c in zip(seqs, counts, strict=True)]) if seqs else np.zeros(0, np.int64)
    for t in range(1, n):
        step = np.concatenate([s[t : t + c] for s, c in zip(seqs, counts, strict=True)])
        _, keys = np.unique(keys * alphabet + step, return_inverse=True)
        keys = keys.astype(np.int64)
    return np.split(keys, np.cumsum(counts)[:-1])


def _shingles(ids: IntArray, alphabet: int) -> IntArray:
    """The sequence padded so that a text of 1 or 2 tokens makes one shingle of them all."""
    if 0 < len(ids) < SHINGLE:
        return np.concatenate([ids, np.full(SHINGLE - len(ids), alphabet, dtype=np.int64)])
    return ids


def _run_ends(ga: IntArray, gb: IntArray, pa: IntArray, pb: IntArray) -> tuple[IntArray, IntArray]:
    """Where runs of matching k-gram pairs ``(pa, pb)`` start and end, as indices into ``pa``.

    A run starts where the pair before does not match, and ends where the pair after does not.
    """
    na, nb = len(ga), len(gb)
    # index -1 wraps around: harmless, its answer is replaced by the text's edge
    first = (pa == 0) | (pb == 0) | (ga[pa - 1] != gb[pb - 1])
    last = (pa == na - 1) | (pb == nb - 1) | (ga[np.minimum(pa + 1, na - 1)] != gb[np.minimum(pb + 1, nb - 1)])
    return np.flatnonzero(first), np.flatnonzero(last)


def _match_runs(
    ga: IntArray, gb: IntArray, lo: IntArray, cnt: IntArray, order: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Every maximal run of matching k-grams (``ga[i] == gb[i + diagonal]``): (diagonal, first, last + 1).

    k-gram ``i`` of a matches ``cnt[i]`` k-grams of b: ``order[lo[i]:lo[i] + cnt[i]]`` (``order``
    sorts b's k-grams). Of the matching pairs only a run's first and last are kept, so the
    pairs need no sorting: the runs' starts and ends, each ordered by diagonal then position,
    pair up one to one. The pairs are enumerated :data:`MATCH_CHUNK` at a time (a text
    repeating one phrase makes their number quadratic in its length: the work stays, the
    memory is bounded).
    """
    ends = np.cumsum(cnt)
    cuts = np.unique(np.searchsorted(ends, np.arange(MATCH_CHUNK, int(ends[-1]) if len(ends) else 0, MATCH_CHUNK)))
    firsts: list[tuple[IntArray, IntArray]] = []
    lasts: list[tuple[IntArray, IntArray]] = []
    for s, e in itertools.pairwise([0, *cuts.tolist(), len(lo)]):
        c = cnt[s:e]
        total = int(c.sum())
        if total == 0:
            continue
        pa = np.repeat(np.arange(s, e, dtype=np.int64), c)
        offset = np.repeat(lo[s:e] - (np.cumsum(c) - c), c) + np.arange(total, dtype=np.int64)
        pb = order[offset].astype(np.int64)
        first, last = _run_ends(ga, gb, pa, pb)
        firsts.append((pa[first], pb[first] - pa[first]))
        lasts.append((pa[last], pb[last] - pa[last]))
    if not firsts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    start_a, start_diag = (np.concatenate(x) for x in zip(*firsts, strict=True))
    end_a, end_diag = (np.concatenate(x) for x in zip(*lasts, strict=True))
    by_start, by_end = np.lexsort((start_a, start_diag)), np.lexsort((end_a, end_diag))
    return start_diag[by_start], start_a[by_start], end_a[by_end] + 1


def _matches(ga: IntArray, sorted_b: IntArray) -> tuple[IntArray, IntArray]:
    """For each of ``ga``: where its equals start in ``sorted_b``, and how many there are."""
    lo = np.searchsorted(sorted_b, ga, "left").astype(np.int64)
    return lo, np.searchsorted(sorted_b, ga, "right").astype(np.int64) - lo


def _sort_keys(keys: U64Array, windows: npt.NDArray[Any]) -> tuple[bool, IntArray, IntArray, IntArray]:
    """Hashes ``keys`` of ``windows`` (one each) sorted: (exact, the hashes as signed ints, order, sorted).

    ``exact``: equal hashes are equal windows (False: a collision within the text).
    """
    signed = keys.view(np.int64)  # sorting and searching int64 is faster than uint64
    order = np.argsort(signed).astype(np.int64)
    ordered = signed[order]
    repeat = np.flatnonzero(ordered[1:] == ordered[:-1])
    return bool(np.all(windows[order[repeat]] == windows[order[repeat + 1]])), signed, order, ordered


@dataclass(frozen=True)
class _Distinct:
    """One text's distinct token or shingle hashes, sorted (``keys``), each with a position it is at.

    ``windows`` are what the hashes hash: the words, or the rows of SHINGLE token hashes.
    """

    exact: bool
    keys: IntArray
    first: IntArray
    windows: npt.NDArray[Any]

    @classmethod
    def of(cls, keys: U64Array, windows: npt.NDArray[Any]) -> _Distinct:
        exact, _, order, ordered = _sort_keys(keys, windows)
        new = np.ones(len(ordered), dtype=bool)
        new[1:] = ordered[1:] != ordered[:-1]
        return cls(exact, ordered[new], order[new], windows)


@dataclass(frozen=True)
class _Grams:
    """One text's k-gram hashes by position (``keys``), and sorted: ``sorted = keys[order]``.

    ``windows`` are the rows of K token hashes they hash.
    """

    exact: bool
    keys: IntArray
    order: IntArray
    sorted: IntArray
    windows: npt.NDArray[Any]

    @classmethod
    def of(cls, keys: U64Array, windows: npt.NDArray[Any]) -> _Grams:
        return cls(*_sort_keys(keys, windows), windows)


@dataclass(frozen=True)
class _Derived:
    """What comparing a text (of at least :data:`SHINGLE` tokens) by hashes needs, derived once.

    ``exact``: within the text, equal token hashes are equal words, and equal shingle and
    k-gram hashes equal token hashes (False: compare it as strings). About 64 bytes a token.
    """

    exact: bool
    tokens: _Distinct
    shingles: _Distinct
    grams: _Grams


def _window_keys(h: U64Array) -> tuple[U64Array, U64Array]:
    """A 64-bit hash of every :data:`SHINGLE` and of every K consecutive token hashes (at least SHINGLE).

    Only matched within one process and every match checked, so not the stored k-gram hashes
    (:func:`~simpg.passages.winnow.kgram_hashes`): one mix of the tokens, shared by both.
    """
    mixed = _splitmix(h)
    count = len(h) - SHINGLE + 1
    with np.errstate(over="ignore"):
        acc = mixed[:count].copy()
        for t in range(1, SHINGLE):
            acc = acc * _MULTIPLIER + mixed[t : t + count]
        shingles = acc
        count = max(0, len(h) - K + 1)
        acc = acc[:count]
        for t in range(SHINGLE, K):
            acc = acc * _MULTIPLIER + mixed[t : t + count]
    return shingles, acc


def _derived(t: Tokens) -> _Derived:
    """:class:`_Derived` of ``t``, made on the first call and kept on ``t`` (tokens do not change)."""
    found = t._derived.get("comparison")
    if found is None:
        h = np.ascontiguousarray(t.hashes, dtype=np.uint64)  # no copy for the hashes tokens() makes
        view = np.lib.stride_tricks.sliding_window_view
        shingle_keys, gram_keys = _window_keys(h)
        toks = _Distinct.of(h, np.array(t.words, dtype=object))
        shingles = _Distinct.of(shingle_keys, view(h, SHINGLE))
        grams = _Grams.of(gram_keys, view(h, min(K, len(t))))
        found = _Derived(toks.exact and shingles.exact and grams.exact, toks, shingles, grams)
        t._derived["comparison"] = found
    return found


def _hash_runs(da: _Derived, db: _Derived) -> tuple[IntArray, IntArray, IntArray] | None:
    """:func:`_match_runs` of the two texts' k-gram hashes, or None on a collision.

    A collision: a k-gram hash of a that b holds is not the same K token hashes in both.
    """
    ga, gb = da.grams, db.grams
    lo_sorted, cnt_sorted = _matches(ga.sorted, gb.sorted)  # sorted needles: a faster search
    some = np.flatnonzero(cnt_sorted)
    if not np.array_equal(ga.windows[ga.order[some]], gb.windows[gb.order[lo_sorted[some]]]):
        return None
    lo, cnt = np.empty_like(lo_sorted), np.empty_like(cnt_sorted)
    lo[ga.order], cnt[ga.order] = lo_sorted, cnt_sorted
    return _match_runs(ga.keys, gb.keys, lo, cnt, gb.order)


def _same(a: _Distinct, b: _Distinct) -> int | None:
    """How many distinct hashes a and b share, or None if one of them hashes different windows."""
    both = np.concatenate([a.keys, b.keys])
    order = np.argsort(both, kind="stable")  # merges the two sorted runs; a's value before b's
    ordered = both[order]
    pair = np.flatnonzero(ordered[1:] == ordered[:-1])
    if not np.array_equal(a.windows[a.first[order[pair]]], b.windows[b.first[order[pair + 1] - len(a.keys)]]):
        return None
    return len(pair)


def compare(a: str | Tokens, b: str | Tokens) -> Comparison:
    """The passages ``a`` and ``b`` share and their containment both ways, exactly.

    Args:
        a: a text, or its :func:`~simpg.passages.tokens.tokens` (tokenise a query once and
            compare it with many candidates: what it needs is derived once).
        b: the other text, or its tokens.

    Returns:
        The shared passages, ordered by their start in a then in b, and the shingle counts.

    Raises:
        InvalidDocument: a text is neither ``str`` nor :class:`Tokens`.
    """
    ta, tb = _as_tokens(a, "a"), _as_tokens(b, "b")
    if len(ta) < SHINGLE or len(tb) < SHINGLE:
        return _compare_words(ta, tb)
    da, db = _derived(ta), _derived(tb)
    # a token hash both texts hold must be one word in both, a shingle hash the same 3 token hashes
    if not (da.exact and db.exact) or _same(da.tokens, db.tokens) is None:
        return _compare_words(ta, tb)
    shared = _same(da.shingles, db.shingles)
    if shared is None:
        return _compare_words(ta, tb)
    passages: tuple[SharedPassage, ...] = ()
    if len(ta) >= K and len(tb) >= K:
        runs = _hash_runs(da, db)
        if runs is None:
            return _compare_words(ta, tb)
        passages = _passages(ta, tb, *runs)
    return Comparison(passages, len(da.shingles.keys), len(db.shingles.keys), shared)


def _compare_words(ta: Tokens, tb: Tokens) -> Comparison:
    """:func:`compare` with tokens matched as strings: exact whatever the hashes (the reference).

    Used for texts of fewer than :data:`SHINGLE` tokens and for a pair whose hashes collide.
    """
    words = np.array(ta.words + tb.words, dtype=str)
    _, inverse = np.unique(words, return_inverse=True)
    inverse = inverse.astype(np.int64).reshape(-1)
    ia, ib = inverse[: len(ta)], inverse[len(ta) :]
    alphabet = len(words) + 1
    sa, sb = _gram_ids([_shingles(ia, alphabet), _shingles(ib, alphabet)], SHINGLE, alphabet + 1)
    ua, ub = np.unique(sa), np.unique(sb)
    shared = len(np.intersect1d(ua, ub, assume_unique=True))
    passages: tuple[SharedPassage, ...] = ()
    if len(ia) >= K and len(ib) >= K:
        ga, gb = _gram_ids([ia, ib], K, alphabet)
        order = np.argsort(gb, kind="stable")
        passages = _passages(ta, tb, *_match_runs(ga, gb, *_matches(ga, gb[order]), order))
    return Comparison(passages, len(ua), len(ub), shared)


def _passages(ta: Tokens, tb: Tokens, diag: IntArray, first: IntArray, stop: IntArray) -> tuple[SharedPassage, ...]:
    """Runs of matching k-grams as passages of tokens (a run of m k-grams is m + K - 1 tokens), by start."""
    a0, a1 = first, stop + K - 1
    b0, b1 = a0 + diag, a1 + diag
    by_start = np.lexsort((b0, a0))
    a0, a1, b0, b1 = a0[by_start], a1[by_start], b0[by_start], b1[by_start]
    columns = (a0, a1, b0, b1, ta.starts[a0], ta.ends[a1 - 1], tb.starts[b0], tb.ends[b1 - 1])
    return tuple(SharedPassage(*row) for row in zip(*(c.tolist() for c in columns), strict=True))
