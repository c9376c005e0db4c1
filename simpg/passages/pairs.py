"""Partial duplicates among documents held in memory: candidate pairs, verified pairs, "copied from" clusters.

The report ``simpg dedup --passages`` makes, without a database. Every document's passage
hashes (:func:`~simpg.passages.winnow.passage_hashes`) go into an inverted index (numpy: the
(hash, document) postings sorted by hash); two documents posted under one hash are a
candidate pair (:func:`candidate_pairs`), so every pair sharing a run of at least the
config's guarantee (``max(window, spaceless_window) + K - 1`` tokens; windows are weighted
by script) is a candidate. Each candidate is verified on the texts with
:func:`~simpg.passages.comparison.compare` and kept when it meets the threshold
(:func:`passage_pairs`): nothing is reported above its true value. Before compare(), an exact
pre-filter (:func:`could_be_kept`; the proof is in this module, above it) drops the candidates
that surely miss the thresholds: the pairs kept are those of comparing every candidate. Hashes posted by more than
``max_common`` documents (boilerplate: a licence paragraph in thousands of files) can be left
out of the candidates and are reported instead, with how many documents hold each.

Each kept pair has a direction (which document is the source) and the pairs link documents
into clusters of "copied from" (:func:`passage_clusters`), each with its sources.

Example:
    >>> words = [f"w{i}" for i in range(200)]
    >>> source = " ".join(words)
    >>> copy = "My notes. " + " ".join(words[20:90]) + " The end."
    >>> other = "Nothing in common with the others at all."
    >>> report = passage_pairs([copy, source, other], rank=[2, 1, 3], workers=1)
    >>> [(p.a, p.b, p.comparison.longest, p.source, p.copy, p.rule) for p in report.pairs]
    [(0, 1, 70, 1, 0, 'rank')]
    >>> passage_pairs([copy, source], workers=1).pairs[0].rule  # no rank: the one holding more of the other
    'containment'
    >>> [(c.members, c.sources) for c in passage_clusters(report.pairs)]
    [((0, 1), (1,))]
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.batch import _each
from simpg.fingerprint.errors import InvalidConfig, InvalidDocument
from simpg.passages.checks import checked_max_common, checked_min_containment, checked_min_tokens, max_common_rows
from simpg.passages.comparison import SHINGLE, Comparison, compare
from simpg.passages.config import K, PassageConfig, config_or_default
from simpg.passages.tokens import Tokens, tokens
from simpg.passages.winnow import kgram_hashes, passage_hashes_array, winnow

__all__ = [
    "PAIR_CHUNK",
    "VERIFY_BATCH",
    "CandidatePairs",
    "CommonHash",
    "PassageCluster",
    "PassagePair",
    "PassagePairs",
    "candidate_pairs",
    "FilterKeys",
    "could_be_kept",
    "filter_keys",
    "keys_could_be_kept",
    "prefiltered",
    "check_thresholds",
    "pair_direction",
    "pair_kept",
    "passage_clusters",
    "passage_pairs",
    "verified_pairs",
    "verify_batch",
    "verify_candidates",
]

I64Array = npt.NDArray[np.int64]

#: Postings pairs enumerated at a time: bounds the memory of a hash many documents share.
PAIR_CHUNK = 1 << 22
#: Candidate pairs verified at a time (one task of a worker): its documents are tokenised once.
VERIFY_BATCH = 2048
#: Documents a side of a tile of candidates verified together (VERIFY_TILE² is about VERIFY_BATCH).
VERIFY_TILE = 45
#: The largest window the pre-filter winnows a document with (its cost grows with the window).
ANCHOR_WINDOW = 64
#: Pairs of occurrences of one anchor the pre-filter follows before it leaves the pair to compare().
ANCHOR_PAIRS = 64

Rule = Literal["rank", "containment", "index"]


@dataclass(frozen=True)
class CommonHash:
    """A hash posted by more than ``max_common`` documents: not used to make candidates."""

    hash: int
    documents: int


@dataclass(frozen=True, eq=False)
class CandidatePairs:
    """Pairs of documents (``a < b``, by index) sharing at least one passage hash, ordered by (a, b).

    Attributes:
        a: the first document of each pair (``int64``).
        b: the second document (``int64``).
        shared: the hashes the two share, leaving out the common ones (``int64``).
        common: the hashes left out, by hash.
    """

    a: I64Array
    b: I64Array
    shared: I64Array
    common: tuple[CommonHash, ...]

    def __len__(self) -> int:
        return len(self.a)


@dataclass(frozen=True)
class PassagePair:
    """Two documents sharing passages, verified: ``comparison = compare(texts[a], texts[b])``.

    ``source`` is the document the other copied from (see :func:`passage_pairs`), ``rule`` what
    decided it: ``"rank"`` (the earlier), ``"containment"`` (the one holding more of the other)
    or ``"index"`` (neither: the one given first).
    """

    a: int
    b: int
    comparison: Comparison
    source: int
    rule: Rule

    @property
    def copy(self) -> int:
        """The document that copied from :attr:`source`."""
        return self.b if self.source == self.a else self.a


@dataclass(frozen=True)
class PassagePairs:
    """What :func:`passage_pairs` found: the kept pairs by (a, b), the common hashes left out, the candidates."""

    pairs: tuple[PassagePair, ...]
    common: tuple[CommonHash, ...]
    candidates: int


@dataclass(frozen=True)
class PassageCluster:
    """Documents linked by kept pairs; ``sources``: the members that copied from no other member."""

    members: tuple[int, ...]
    sources: tuple[int, ...]


def _hash_arrays(hashes: Iterable[Any]) -> list[I64Array]:
    out = []
    for n, h in enumerate(hashes):
        try:
            arr = np.asarray(h)
            if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
                raise TypeError
            arr = arr.astype(np.int64, casting="safe") if arr.size else np.zeros(0, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise InvalidDocument(f"expected a 1-d array of int64 hashes for document {n}, got {h!r:.60}") from None
        if arr.size > 1 and not bool(np.all(arr[1:] > arr[:-1])):
            raise InvalidDocument(f"expected sorted distinct hashes for document {n}, got {h!r:.60}")
        out.append(arr)
    return out


def candidate_pairs(
    hashes: Iterable[Any], *, max_common: int | float | None = None, chunk: int = PAIR_CHUNK
) -> CandidatePairs:
    """Every pair of documents sharing a passage hash, with the number of hashes they share.

    Args:
        hashes: each document's passage hashes, sorted and distinct (what
            :func:`~simpg.passages.winnow.passage_hashes` or ``passage_hashes_array`` give).
            Documents are numbered by their position.
        max_common: hashes posted by more than this many documents (a count, or a share of
            the documents: :func:`~simpg.passages.checks.max_common_rows`) make no candidates and
            are returned as :attr:`CandidatePairs.common`; None uses every hash (every pair
            sharing a run of the config's guarantee is then a candidate).
        chunk: postings pairs enumerated at a time (memory bound).

    Raises:
        InvalidDocument: a document's hashes are not a sorted distinct array of integers.
        InvalidConfig: ``max_common`` is not None or an int >= 0.
    """
    checked_max_common(max_common)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise InvalidConfig(f"expected chunk >= 1, got {chunk!r}")
    arrays = _hash_arrays(hashes)
    n_docs = len(arrays)
    empty = np.zeros(0, dtype=np.int64)
    if not arrays:
        return CandidatePairs(empty, empty, empty, ())
    key = np.concatenate(arrays)
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), [len(x) for x in arrays])
    order = np.argsort(key, kind="stable")  # stable: documents ascending within a hash
    key, doc = key[order], doc[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else empty
    sizes = np.diff(np.append(starts, len(key)))
    common: tuple[CommonHash, ...] = ()
    usable = sizes > 1
    limit = max_common_rows(max_common, n_docs)
    if limit is not None:
        too_many = sizes > limit
        common = tuple(CommonHash(h, c) for h, c in zip(key[starts[too_many]].tolist(),
                                                          sizes[too_many].tolist(), strict=True))
        usable &= ~too_many
    # every posting of a usable hash pairs with the postings after it under the same hash
    group = np.repeat(usable, sizes)
    rank_in_group = np.arange(len(key)) - np.repeat(starts, sizes)
    partners = np.where(group, np.repeat(sizes, sizes) - 1 - rank_in_group, 0)
    pair_keys, pair_counts = empty, empty
    ends = np.cumsum(partners)
    total = int(ends[-1]) if len(ends) else 0
    cuts = np.unique(np.searchsorted(ends, np.arange(chunk, total, chunk), "right"))
    for s, e in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(key)].tolist(), strict=True):
        c = partners[s:e]
        m = int(c.sum())
        if m == 0:
            continue
        first = np.repeat(np.arange(s, e, dtype=np.int64), c)
        second = first + 1 + (np.arange(m, dtype=np.int64) - np.repeat(np.cumsum(c) - c, c))
        keys, counts = np.unique(doc[first] * n_docs + doc[second], return_counts=True)
        pair_keys, pair_counts = _merge(pair_keys, pair_counts, keys, counts.astype(np.int64))
    return CandidatePairs(pair_keys // n_docs, pair_keys % n_docs, pair_counts, common)


def _merge(k1: I64Array, c1: I64Array, k2: I64Array, c2: I64Array) -> tuple[I64Array, I64Array]:
    """Two sorted (key, count) sets as one, the counts of a key added."""
    if not len(k1):
        return k2, c2
    keys, inverse = np.unique(np.concatenate([k1, k2]), return_inverse=True)
    counts = np.bincount(inverse.reshape(-1), weights=np.concatenate([c1, c2]), minlength=len(keys))
    return keys, counts.astype(np.int64)


def _direction(a: int, b: int, c: Comparison, rank: Sequence[Any] | Mapping[int, Any] | None,
               ) -> tuple[int, Rule]:
    return pair_direction(a, b, c, *((rank[a], rank[b]) if rank is not None else (None, None)))


def pair_direction(a: int, b: int, c: Comparison, rank_a: Any = None, rank_b: Any = None) -> tuple[int, Rule]:
    """The source of a verified pair and the rule that chose it (see :func:`passage_pairs`).

    ``a`` and ``b`` name the two documents (``a`` is the one given first), ``c`` is
    ``compare(a's text, b's text)``, ``rank_a`` and ``rank_b`` their ranks (None: no rank).
    The Spark engine (:mod:`simpg.spark.passages`) calls it for each pair, with ids as ranks.
    """
    if rank_a is not None and rank_b is not None and rank_a != rank_b:
        return (a if rank_a < rank_b else b), "rank"
    # a holds shared / b_shingles of b, b holds shared / a_shingles of a: the larger share (the
    # larger document, compared as integers) is the more complete
    if c.shared_shingles and c.a_shingles != c.b_shingles:
        return (a if c.a_shingles > c.b_shingles else b), "containment"
    return a, "index"


# The pre-filter: an exact test, cheaper than compare(), that a candidate cannot meet the thresholds.
#
# No bound on the number of passage hashes two documents share makes a safe pre-filter: a
# reported pair may share a single distinct hash at any threshold. A run of L equal tokens holds
# L - K + 1 equal k-grams and every full window of them gives a hash both documents keep, but
# those hashes may all be one value: "ha ha ha ..." repeated 200 times in both texts (a run of
# 200 tokens, one distinct k-gram), or any run in which the k-gram of the smallest hash occurs
# in each window. The stored arrays are distinct, and the SQL count is of distinct hashes, so
# ``min_shared`` must stay 1 (its default) for every threshold. The test below looks at the
# texts instead, which the verification tokenises anyway.
#
# min_tokens (longest >= L, L = max(min_tokens, K): a passage has at least K tokens, so
# longest is 0 or >= K). Let m = L - K + 1 and v = min(m, ANCHOR_WINDOW). Claim: if a and b
# share a run of L equal tokens, then (1) a value c is among the hashes that winnowing a's
# k-gram hashes with window v selects and among b's (the *anchors*), and (2) for some
# positions i of a and j of b whose k-gram hash is c, the diagonal run of equal k-gram hashes
# through (i, j) is at least m k-grams long.
# Proof. Equal tokens give equal token hashes, hence equal k-gram hashes (kgram_hashes is a
# function of the K token hashes), so the run gives m aligned positions s_a + t, s_b + t
# (0 <= t < m) with equal k-gram hashes. Take the window R = [s_a, s_a + v) of a (v <= m, so
# inside the run) and its aligned window R' of b: they hold the same values, with minimum c.
# Winnowing a with window v selects in R (one of its windows) the rightmost position holding
# c, and b in R' likewise, so c is an anchor of both: (1). Let i be a position in R holding c;
# j = i - s_a + s_b holds c in b, and the diagonal through (i, j) is equal over the whole run,
# m k-grams: (2). Collisions of k-gram hashes only add equalities, so they never hide a run.
# The test follows every pair of occurrences of every common anchor (at most ANCHOR_PAIRS per
# anchor, beyond which it keeps the pair for compare()) and keeps the pair when one diagonal
# run reaches m. The stored passage hashes are not used: the test holds whatever windows, or
# winnowing rule, made them.
#
# min_containment (max(a_in_b, b_in_a) >= x). compare() counts S(a), the distinct token
# 3-shingles of a (a text of 1 or 2 tokens has one shingle of all its tokens). Let H(a) be the
# distinct values of kgram_hashes(a's token hashes, 3) (the same shingles, hashed: one value of
# all the tokens below 3) and n_a(h) how many positions of a have the value h. Then
# |H(a)| <= |S(a)| (a function of the shingles) and |S(a) ∩ S(b)| <= U = sum over h in
# H(a) ∩ H(b) of min(n_a(h), n_b(h)) (equal shingles have equal hashes; the shingles of a with
# the value h are at most n_a(h)). So a_in_b = shared / |S(a)| <= U / |H(a)| (0 when a has no
# token: then both are 0), and the same for b; IEEE division is monotone, so the float
# values compare the same way. The test keeps the pair when U / |H(a)| or U / |H(b)| >= x.
#
# A pair is sent to compare() when either test (of a threshold given) keeps it; every pair it
# drops fails both thresholds, so the kept pairs are those of comparing every candidate.


@dataclass(frozen=True)
class FilterKeys:
    """What the pre-filter needs of one document (:func:`filter_keys`): about 4 bytes a token, 8 with shingles.

    Values are the low 32 bits of the 64-bit hashes: equal tokens still give equal values,
    and a collision only adds equalities, which can keep a pair for compare(), never drop one.
    """

    grams: npt.NDArray[np.uint32]  # k-gram values by position (none below K tokens: no passage)
    anchors: npt.NDArray[np.uint32]  # the distinct values winnowing grams with the anchor window selects
    shingles: npt.NDArray[np.uint32] | None  # distinct 3-shingle values (with min_containment)
    counts: npt.NDArray[np.int64] | None  # positions holding each


def filter_keys(t: Tokens, min_tokens: int | None, min_containment: float | None) -> FilterKeys:
    """The pre-filter's keys of a document's tokens for these thresholds (kept on ``t`` once made)."""
    window = anchor_window(min_tokens)
    key = f"pairs_filter_{window}_{min_containment is not None}"
    found = t._derived.get(key)
    if found is None:
        h = np.ascontiguousarray(t.hashes, dtype=np.uint64)
        grams = (kgram_hashes(h) if len(h) >= K else np.zeros(0, dtype=np.uint64)).astype(np.uint32)
        anchors = grams[:0]
        if min_tokens is not None and len(grams):
            anchors = np.unique(grams[winnow(grams.astype(np.uint64), window)])
        shingles = counts = None
        if min_containment is not None:
            shingles, n = np.unique(kgram_hashes(h, SHINGLE).astype(np.uint32), return_counts=True)
            counts = n.astype(np.int64)
        found = FilterKeys(grams, anchors, shingles, counts)
        t._derived[key] = found
    return found


def _diagonal_run(ga: npt.NDArray[np.uint32], gb: npt.NDArray[np.uint32], i: int, j: int, enough: int) -> int:
    """Equal values of ga and gb on the diagonal through (i, j), counted up to ``enough`` each way."""
    n = min(len(ga) - i, len(gb) - j, enough)
    ahead = np.flatnonzero(ga[i:i + n] != gb[j:j + n])
    run = int(ahead[0]) if len(ahead) else n
    n = min(i, j, enough)
    behind = np.flatnonzero(ga[i - n:i][::-1] != gb[j - n:j][::-1])
    return run + (int(behind[0]) if len(behind) else n)


def _has_run(fa: FilterKeys, fb: FilterKeys, grams: int) -> bool:
    """Whether a and b may share ``grams`` consecutive equal k-grams (False: they surely do not)."""
    if len(fa.grams) < grams or len(fb.grams) < grams:
        return False
    for c in np.intersect1d(fa.anchors, fb.anchors, assume_unique=True):
        at_a, at_b = np.flatnonzero(fa.grams == c), np.flatnonzero(fb.grams == c)
        if len(at_a) * len(at_b) > ANCHOR_PAIRS:
            return True
        for i in at_a.tolist():
            for j in at_b.tolist():
                if _diagonal_run(fa.grams, fb.grams, i, j, grams) >= grams:
                    return True
    return False


def _may_contain(fa: FilterKeys, fb: FilterKeys, min_containment: float) -> bool:
    """Whether one of a and b may hold ``min_containment`` of the other (False: surely not)."""
    assert fa.shingles is not None and fa.counts is not None and fb.shingles is not None and fb.counts is not None
    _, ia, ib = np.intersect1d(fa.shingles, fb.shingles, assume_unique=True, return_indices=True)
    most = int(np.minimum(fa.counts[ia], fb.counts[ib]).sum())
    return any(n and most / n >= min_containment for n in (len(fa.shingles), len(fb.shingles)))


def anchor_window(min_tokens: int | None) -> int:
    """The window the pre-filter winnows with for ``min_tokens``: ``min(L - K + 1, ANCHOR_WINDOW)``, L >= K."""
    return ANCHOR_WINDOW if min_tokens is None else min(max(min_tokens, K) - K + 1, ANCHOR_WINDOW)


def keys_could_be_kept(fa: FilterKeys, fb: FilterKeys, min_tokens: int | None,
                       min_containment: float | None) -> bool:
    """:func:`could_be_kept` from the two documents' :func:`filter_keys` (made for the same thresholds)."""
    if min_tokens is not None and _has_run(fa, fb, max(min_tokens, K) - K + 1):
        return True
    return min_containment is not None and _may_contain(fa, fb, min_containment)


def could_be_kept(a: Tokens, b: Tokens, min_tokens: int | None, min_containment: float | None) -> bool:
    """The pre-filter: False only for a pair that :func:`pair_kept` surely rejects (proof in this module).

    ``a`` and ``b`` are the two documents' tokens (what the test derives is kept on them, as
    :func:`compare` does). True means "compare it": the pair may or may not be kept.
    """
    return keys_could_be_kept(filter_keys(a, min_tokens, min_containment),
                              filter_keys(b, min_tokens, min_containment), min_tokens, min_containment)


def _keys_of_texts(item: tuple[list[str], int | None, float | None]) -> list[FilterKeys]:
    texts, min_tokens, min_containment = item
    return [filter_keys(tokens(t), min_tokens, min_containment) for t in texts]


def prefiltered(
    documents: Iterable[tuple[int, str]],
    a: Sequence[int],
    b: Sequence[int],
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    workers: int | None = None,
    batch: int = 512,
) -> npt.NDArray[np.bool_]:
    """Which candidate pairs ``(a[i], b[i])`` may meet a threshold: the pre-filter over many documents.

    Each document of ``documents`` (``(id, text)`` pairs, e.g. read from a table in key order
    in batches) is tokenised once, in ``workers`` processes, ``batch`` documents a task, and
    only its :class:`FilterKeys` are kept (about 4 bytes a token); then every candidate is
    tested. False marks a pair :func:`pair_kept` surely rejects; verify the others with
    :func:`verified_pairs` (which tests them again, cheaply, then compares them). A document
    of a candidate missing from ``documents`` is an :class:`InvalidDocument`.
    """
    if min_tokens is None and min_containment is None:
        raise InvalidConfig("expected min_tokens or min_containment, got neither")
    wanted = {*a, *b}
    keys: dict[int, FilterKeys] = {}

    def tasks() -> Iterator[tuple[list[int], tuple[list[str], int | None, float | None]]]:
        ids: list[int] = []
        texts: list[str] = []
        for d, text in documents:
            if d in wanted:
                ids.append(d)
                texts.append(text)
            if len(ids) == batch:
                yield ids, (texts, min_tokens, min_containment)
                ids, texts = [], []
        if ids:
            yield ids, (texts, min_tokens, min_containment)

    pending: list[list[int]] = []

    def items() -> Iterator[tuple[list[str], int | None, float | None]]:
        for ids, item in tasks():
            pending.append(ids)
            yield item

    # _each is typed for documents; it maps any picklable items in order
    for made in _each(_keys_of_texts, items(), workers, 1, "spawn"):  # type: ignore[arg-type]
        keys.update(zip(pending.pop(0), made, strict=True))
    missing = wanted - keys.keys()
    if missing:
        raise InvalidDocument(f"expected a text for every candidate's document, got none for {min(missing)}")
    return np.fromiter((keys_could_be_kept(keys[x], keys[y], min_tokens, min_containment)
                        for x, y in zip(a, b, strict=True)), dtype=bool, count=len(a))


def _verify_candidates(item: tuple[dict[int, str], list[int], list[int], int | None, float | None],
                       ) -> list[Comparison | None]:
    """compare() of each pair of a batch the pre-filter keeps (None for the others), each document tokenised once."""
    texts, a_list, b_list, min_tokens, min_containment = item
    made: dict[int, Tokens] = {}

    def tokens_of(d: int) -> Tokens:
        if d not in made:
            made[d] = tokens(texts[d])
        return made[d]

    return [compare(tokens_of(a), tokens_of(b)) if could_be_kept(tokens_of(a), tokens_of(b), min_tokens,
                                                                   min_containment) else None
            for a, b in zip(a_list, b_list, strict=True)]


def verify_candidates(texts: Mapping[int, str], a_list: list[int], b_list: list[int], min_tokens: int | None,
                      min_containment: float | None) -> list[Comparison | None]:
    """The comparison of each pair of a batch that may meet a threshold, None for a pair that surely does not.

    What :func:`verify_batch` gives, with the pre-filter (:func:`could_be_kept`) first: every
    pair :func:`pair_kept` keeps among ``verify_batch``'s comparisons has its comparison here,
    the same. At least one threshold is needed.
    """
    if min_tokens is None and min_containment is None:
        raise InvalidConfig("expected min_tokens or min_containment, got neither")
    return _verify_candidates((dict(texts), a_list, b_list, min_tokens, min_containment))


def _verify_batch(item: tuple[dict[int, str], list[int], list[int]]) -> list[Comparison]:
    """compare() of each pair of a batch, each document of the batch tokenised once."""
    texts, a_list, b_list = item
    made: dict[int, Tokens] = {}

    def tokens_of(d: int) -> Tokens:
        if d not in made:
            made[d] = tokens(texts[d])
        return made[d]

    return [compare(tokens_of(a), tokens_of(b)) for a, b in zip(a_list, b_list, strict=True)]


def pair_kept(c: Comparison, min_tokens: int | None, min_containment: float | None) -> bool:
    """Whether a verified pair meets the thresholds (:func:`check_thresholds`'s values)."""
    if min_tokens is not None and c.longest >= min_tokens:
        return True
    return min_containment is not None and max(c.a_in_b, c.b_in_a) >= min_containment


def check_thresholds(config: PassageConfig, min_tokens: int | None,
                     min_containment: float | None) -> tuple[int | None, float | None]:
    """The thresholds of :func:`passage_pairs`, checked; neither given: ``min_tokens = config.guarantee``.

    Raises:
        InvalidConfig: ``min_tokens`` is not an int >= 1, or ``min_containment`` not from 0 to 1.
    """
    min_tokens, min_containment = checked_min_tokens(min_tokens), checked_min_containment(min_containment)
    if min_tokens is None and min_containment is None:
        min_tokens = config.guarantee
    return min_tokens, min_containment


def verify_batch(texts: dict[int, str], a_list: list[int], b_list: list[int]) -> list[Comparison]:
    """``compare(texts[a], texts[b])`` for each pair of a batch, each document tokenised once."""
    return _verify_batch((texts, a_list, b_list))


def passage_pairs(
    texts: Sequence[str],
    config: PassageConfig | None = None,
    *,
    hashes: Sequence[Any] | None = None,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    max_common: int | float | None = None,
    rank: Sequence[Any] | None = None,
    workers: int | None = None,
) -> PassagePairs:
    """Every pair of texts sharing passages above a threshold, verified, with its direction.

    A pair is kept when its longest shared passage has at least ``min_tokens`` tokens, or when
    one text holds at least ``min_containment`` of the other (``max(a_in_b, b_in_a)``, token
    3-shingles); with neither given, ``min_tokens`` is the config's guarantee
    (``max(window, spaceless_window) + K - 1``: 50 tokens by default). Every value is counted
    on the texts by :func:`compare`, so no pair is reported above its true value. Candidates
    come from shared passage hashes: every pair sharing a run of the guarantee is one (with
    ``max_common=None``); a pair whose shared text has no such run may be missed.

    The source of a pair: with ``rank`` (arrival order: ids, timestamps; smaller is earlier),
    the earlier one; without it or on a tie, the one holding more of the other (the more
    complete); on a tie again, the one given first.

    Args:
        texts: the documents; results name them by position.
        config: the windows of the passage hashes (None: ``PassageConfig()``).
        hashes: each text's passage hashes if already made (sorted distinct ints, each with
            a window up to the config's for that text; None: made here).
        min_tokens: tokens of the longest shared passage from which a pair is kept.
        min_containment: share of a text (from 0 to 1) held by the other from which a pair is kept.
        max_common: hashes posted by more than this many texts make no candidates and are
            reported (:attr:`PassagePairs.common`); None skips nothing.
        rank: one comparable value per text: which came first.
        workers: processes hashing and verifying (None: every CPU; 1: this process).

    Raises:
        InvalidDocument: a text is not a ``str``, ``hashes`` or ``rank`` has another length
            than ``texts``, or hashes are not sorted distinct integers.
        InvalidConfig: a threshold, ``max_common`` or ``config`` is out of range.
    """
    cfg = config_or_default(config)
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InvalidDocument(f"expected a sequence of texts, got {texts!r:.60}")
    for n, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidDocument(f"expected str for text {n}, got {text!r:.60}")
    min_tokens, min_containment = check_thresholds(cfg, min_tokens, min_containment)
    checked_max_common(max_common)
    for name, values in (("hashes", hashes), ("rank", rank)):
        if values is not None and len(values) != len(texts):
            raise InvalidDocument(f"expected {len(texts)} {name} (one per text), got {len(values)}")
    if hashes is None:
        hashes = list(_each(functools.partial(passage_hashes_array, config=cfg), texts, workers, 16, "spawn"))
    found = candidate_pairs(hashes, max_common=max_common)
    kept = verified_pairs(texts, found.a.tolist(), found.b.tolist(), min_tokens=min_tokens,
                          min_containment=min_containment, rank=rank, workers=workers)
    return PassagePairs(kept, found.common, len(found))


def verified_pairs(
    texts: Sequence[str] | Mapping[int, str],
    a: Sequence[int],
    b: Sequence[int],
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    rank: Sequence[Any] | Mapping[int, Any] | None = None,
    workers: int | None = None,
    watch: Callable[[Iterator[Comparison | None]], Iterable[Comparison | None]] | None = None,
) -> tuple[PassagePair, ...]:
    """The candidate pairs ``(a[i], b[i])`` that meet a threshold, verified on the texts, with a direction.

    The verification step of :func:`passage_pairs`, for candidates found elsewhere (the SQL
    report reads them from ``simpg.passage_pairs``): each pair is compared with
    :func:`compare`, kept when its longest shared passage has ``min_tokens`` tokens or one
    text holds ``min_containment`` of the other, and given a source as
    :func:`passage_pairs` does. ``texts`` and ``rank`` are indexed by the numbers in
    ``a`` and ``b`` (lists, or mappings such as row id -> text); at least one threshold is
    needed. Pairs come back in the candidates' order. ``watch`` wraps the comparisons as they
    are made, one per candidate (a progress bar; None for a candidate the pre-filter dropped).

    Before :func:`compare`, each candidate goes through an exact pre-filter
    (:func:`could_be_kept`, the proof in this module): a pair that surely misses both
    thresholds is not compared. The pairs kept are those of comparing every candidate.
    """
    if min_tokens is None and min_containment is None:
        raise InvalidConfig("expected min_tokens or min_containment, got neither")
    a_list, b_list = list(a), list(b)
    found: dict[int, Comparison] = {}  # the kept ones, by candidate position

    def each() -> Iterator[Comparison | None]:
        for batch, comparisons in _verify(texts, a_list, b_list, min_tokens, min_containment, workers):
            found.update((i, c) for i, c in zip(batch, comparisons, strict=True)
                         if c is not None and pair_kept(c, min_tokens, min_containment))
            yield from comparisons

    for _ in (watch(each()) if watch is not None else each()):
        pass
    kept = []
    for i in sorted(found):
        x, y, c = a_list[i], b_list[i], found[i]
        source, rule = _direction(x, y, c, rank)
        kept.append(PassagePair(x, y, c, source, rule))
    return tuple(kept)


def _tile_order(a_list: list[int], b_list: list[int]) -> list[int]:
    """The candidates' positions ordered by tiles of VERIFY_TILE x VERIFY_TILE documents (by rank of id).

    A batch of pairs from one tile names at most 2 * VERIFY_TILE documents: where documents
    pair densely (boilerplate shared by a thousand rows: every pair of them a candidate) a
    document is tokenised once per tile instead of once per first document's pairs.
    """
    if not a_list:
        return []
    ids, ranks = np.unique(np.array(a_list + b_list, dtype=object if _big(a_list, b_list) else np.int64),
                           return_inverse=True)
    ranks = ranks.reshape(-1).astype(np.int64) // VERIFY_TILE
    ra, rb = ranks[:len(a_list)], ranks[len(a_list):]
    return np.lexsort((rb, ra)).tolist()  # type: ignore[no-any-return]  # numpy stubs: Any


def _big(a_list: list[int], b_list: list[int]) -> bool:
    """Whether ids leave int64 (any hashable comparable key is allowed in a mapping of texts)."""
    return not all(isinstance(x, int) and -(1 << 63) <= x < (1 << 63) for x in itertools.chain(a_list, b_list))


def _verify(texts: Sequence[str] | Mapping[int, str], a_list: list[int], b_list: list[int],
            min_tokens: int | None, min_containment: float | None, workers: int | None,
            ) -> Iterator[tuple[list[int], list[Comparison | None]]]:
    """compare() of every candidate pair the pre-filter keeps (None: dropped), VERIFY_BATCH at a time.

    Yields each batch's candidate positions and their comparisons, batches in tile order
    (:func:`_tile_order`): a document is tokenised once per batch, and a batch holds the
    pairs of a few documents where they pair densely. The tokens held at a time are those of
    one batch's documents per process, whatever the number of documents.
    """
    order = _tile_order(a_list, b_list)
    batches = [order[s:s + VERIFY_BATCH] for s in range(0, len(order), VERIFY_BATCH)]
    items = (({d: texts[d] for i in batch for d in (a_list[i], b_list[i])},
              [a_list[i] for i in batch], [b_list[i] for i in batch], min_tokens, min_containment)
             for batch in batches)
    # _each is typed for documents; it maps any picklable items in order
    done = _each(_verify_candidates, items, workers, 1, "spawn")  # type: ignore[arg-type]
    yield from zip(batches, done, strict=True)


def passage_clusters(pairs: Iterable[PassagePair]) -> list[PassageCluster]:
    """Clusters of "copied from": documents linked by the pairs (connected), largest first.

    A cluster's sources are its members that are the copy in no pair. When every member is
    a copy (a cycle of the containment rule), the sources are the members that are the source
    of the most pairs. Members and sources are sorted; clusters of equal size by first member.
    """
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    pairs = list(pairs)
    for p in pairs:
        parent.setdefault(p.a, p.a)
        parent.setdefault(p.b, p.b)
        ra, rb = find(p.a), find(p.b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for x in sorted(parent):
        members.setdefault(find(x), []).append(x)
    copies = {p.copy for p in pairs}
    led: dict[int, int] = {}
    for p in pairs:
        led[p.source] = led.get(p.source, 0) + 1
    out = []
    for group in members.values():
        sources = [x for x in group if x not in copies]
        if not sources:
            most = max(led.get(x, 0) for x in group)
            sources = [x for x in group if led.get(x, 0) == most]
        out.append(PassageCluster(tuple(group), tuple(sources)))
    return sorted(out, key=lambda c: (-len(c.members), c.members[0]))
