"""Partial duplicates among documents held in memory: candidate pairs, verified pairs, "copied from" clusters.

The report ``simpg dedup --passages`` makes, without a database. Every document's passage
hashes (:func:`~simpg.passages.winnow.passage_hashes`) go into an inverted index (numpy: the
(hash, document) postings sorted by hash); two documents posted under one hash are a
candidate pair (:func:`candidate_pairs`), so every pair sharing a run of at least the
config's guarantee (``max(window, spaceless_window) + K - 1`` tokens; windows are weighted
by script) is a candidate. Each candidate is verified on the texts with
:func:`~simpg.passages.comparison.compare` and kept when it meets the threshold
(:func:`passage_pairs`): nothing is reported above its true value. Hashes posted by more than
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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.batch import _each
from simpg.fingerprint.errors import InvalidConfig, InvalidDocument
from simpg.passages.checks import checked_max_common, checked_min_containment, checked_min_tokens, max_common_rows
from simpg.passages.comparison import Comparison, compare
from simpg.passages.config import PassageConfig, config_or_default
from simpg.passages.tokens import Tokens, tokens
from simpg.passages.winnow import passage_hashes_array

__all__ = [
    "PAIR_CHUNK",
    "VERIFY_BATCH",
    "CandidatePairs",
    "CommonHash",
    "PassageCluster",
    "PassagePair",
    "PassagePairs",
    "candidate_pairs",
    "check_thresholds",
    "pair_direction",
    "pair_kept",
    "passage_clusters",
    "passage_pairs",
    "verified_pairs",
    "verify_batch",
]

I64Array = npt.NDArray[np.int64]

#: Postings pairs enumerated at a time: bounds the memory of a hash many documents share.
PAIR_CHUNK = 1 << 22
#: Candidate pairs verified at a time (one task of a worker): its documents are tokenised once.
VERIFY_BATCH = 2048

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
    watch: Callable[[Iterator[Comparison]], Iterable[Comparison]] | None = None,
) -> tuple[PassagePair, ...]:
    """The candidate pairs ``(a[i], b[i])`` that meet a threshold, verified on the texts, with a direction.

    The verification step of :func:`passage_pairs`, for candidates found elsewhere (the SQL
    report reads them from ``simpg.passage_pairs``): each pair is compared with
    :func:`compare`, kept when its longest shared passage has ``min_tokens`` tokens or one
    text holds ``min_containment`` of the other, and given a source as
    :func:`passage_pairs` does. ``texts`` and ``rank`` are indexed by the numbers in
    ``a`` and ``b`` (lists, or mappings such as row id -> text); at least one threshold is
    needed. Pairs come back in the candidates' order. ``watch`` wraps the comparisons as they
    are made, one per candidate (a progress bar).
    """
    if min_tokens is None and min_containment is None:
        raise InvalidConfig("expected min_tokens or min_containment, got neither")
    a_list, b_list = list(a), list(b)
    comparisons: Iterable[Comparison] = _verify(texts, a_list, b_list, workers)
    if watch is not None:
        comparisons = watch(iter(comparisons))
    kept = []
    for x, y, c in zip(a_list, b_list, comparisons, strict=True):
        if pair_kept(c, min_tokens, min_containment):
            source, rule = _direction(x, y, c, rank)
            kept.append(PassagePair(x, y, c, source, rule))
    return tuple(kept)


def _verify(texts: Sequence[str] | Mapping[int, str], a_list: list[int], b_list: list[int],
            workers: int | None) -> Iterator[Comparison]:
    """compare() of every candidate pair, in order, :data:`VERIFY_BATCH` pairs at a time.

    A document is tokenised once per batch (pairs come by their first document, and a
    boilerplate-sharing document recurs as the second): the tokens held at a time are those
    of one batch's documents per process, whatever the number of documents.
    """
    items = ((({d: texts[d] for d in {*a_list[s:s + VERIFY_BATCH], *b_list[s:s + VERIFY_BATCH]}},
               a_list[s:s + VERIFY_BATCH], b_list[s:s + VERIFY_BATCH]))
             for s in range(0, len(a_list), VERIFY_BATCH))
    # _each is typed for documents; it maps any picklable items in order
    for comparisons in _each(_verify_batch, items, workers, 1, "spawn"):  # type: ignore[arg-type]
        yield from comparisons


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
