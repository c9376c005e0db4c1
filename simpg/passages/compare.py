"""Exact comparison of two texts: the passages they share and how much of each is in the other.

A shared passage is a maximal run of equal tokens (it cannot be extended left or right) of at
least :data:`~simpg.passages.config.K` tokens, reported with its token range and its character
offsets in both texts. Every run is found, on every diagonal: a text that contains a passage
twice gives both occurrences. Containment is counted exactly over token 3-shingle sets (a text
of 1 or 2 tokens has one shingle of all its tokens): ``b_in_a = |S(a) ∩ S(b)| / |S(b)|``.
Tokens are compared as strings, not by their hashes, so a hash collision changes nothing.

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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.errors import InvalidDocument
from simpg.passages.config import K
from simpg.passages.tokens import Tokens, tokens

__all__ = ["MAX_MATCHES", "SHINGLE", "Comparison", "SharedPassage", "compare"]

#: Tokens per shingle of the containment.
SHINGLE = 3
#: Matching k-gram pairs a comparison may enumerate (texts that repeat one phrase thousands of
#: times make a number quadratic in their length): above it, an error rather than a partial answer.
MAX_MATCHES = 1 << 22

IntArray = npt.NDArray[np.int64]


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


def _matches(ga: IntArray, gb: IntArray) -> tuple[IntArray, IntArray]:
    """Every pair of positions (i, j) with ``ga[i] == gb[j]``."""
    order = np.argsort(gb, kind="stable")
    sorted_b = gb[order]
    lo = np.searchsorted(sorted_b, ga, "left")
    cnt = np.searchsorted(sorted_b, ga, "right") - lo
    total = int(cnt.sum())
    if total > MAX_MATCHES:
        raise InvalidDocument(f"texts repeat k-grams too often to compare: {total} matching pairs "
                              f"(at most {MAX_MATCHES})")
    ia = np.repeat(np.arange(len(ga), dtype=np.int64), cnt)
    offset = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total, dtype=np.int64)
    return ia, order[offset].astype(np.int64)


def compare(a: str | Tokens, b: str | Tokens) -> Comparison:
    """The passages ``a`` and ``b`` share and their containment both ways, exactly.

    Args:
        a: a text, or its :func:`~simpg.passages.tokens.tokens` (tokenise a query once and
            compare it with many candidates).
        b: the other text, or its tokens.

    Returns:
        The shared passages, ordered by their start in a then in b, and the shingle counts.

    Raises:
        InvalidDocument: a text is neither ``str`` nor :class:`Tokens`, or the two repeat
            k-grams so often that more than :data:`MAX_MATCHES` pairs would be compared.
    """
    ta, tb = _as_tokens(a, "a"), _as_tokens(b, "b")
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
        passages = _runs(ta, tb, *_matches(ga, gb))
    return Comparison(passages, len(ua), len(ub), shared)


def _runs(ta: Tokens, tb: Tokens, pa: IntArray, pb: IntArray) -> tuple[SharedPassage, ...]:
    """Maximal runs from matching k-gram positions: consecutive matches on one diagonal form one run."""
    if len(pa) == 0:
        return ()
    diag = pb - pa
    order = np.lexsort((pa, diag))
    pa, diag = pa[order], diag[order]
    new = np.ones(len(pa), dtype=bool)
    new[1:] = (diag[1:] != diag[:-1]) | (pa[1:] != pa[:-1] + 1)
    first = np.flatnonzero(new)
    a0 = pa[first]
    a1 = a0 + np.diff(np.append(first, len(pa))) + K - 1
    b0 = a0 + diag[first]
    b1 = a1 + diag[first]
    by_start = np.lexsort((b0, a0))
    a0, a1, b0, b1 = a0[by_start], a1[by_start], b0[by_start], b1[by_start]
    columns = (a0, a1, b0, b1, ta.starts[a0], ta.ends[a1 - 1], tb.starts[b0], tb.ends[b1 - 1])
    return tuple(SharedPassage(*row) for row in zip(*(c.tolist() for c in columns), strict=True))
