"""Every near-duplicate pair, and the clusters, of a set of fingerprints: in memory, with numpy.

This is seed 001's "single pass through all tables": for each table of a layout,
permute every fingerprint (vectorised shifts and masks from :attr:`Layout.permutations`),
find the fingerprints that share the table's prefix with another one, and compare
those within each run of equal prefixes. Each table costs a sort of 32-bit keys
(much cheaper than sorting 64-bit values and their row numbers), and only the rows
whose prefix repeats are sorted in full.

A pair is reported once, by the first table in which the two fingerprints share the
prefix (a table ``t`` sees the pair when ``(a ^ b)`` has no bit in ``t``'s prefix;
:func:`prefix_masks`), so results stream out table by table without a global
de-duplication. Rows with equal fingerprints are pairs at distance 0, unlike seomoz's
``find_all``, which keeps a set of fingerprints and loses them.

Clusters come two ways (:data:`CLUSTER_METHODS`). ``"representative"``: rows are taken
in order (earliest first), each joins the earliest representative it is within ``k`` of,
or becomes a representative itself, so every member is a near-duplicate of its cluster's
representative and chains of neighbours never join unrelated rows; deterministic, and
incremental (a new row only needs its neighbours among the representatives).
``"components"``: connected components (seed 004), where a row joins when it is within
``k`` of any member, so two members may be far apart.

Example:
    >>> import numpy as np
    >>> fps = np.array([0b1011, 0b1001, 0b1011, 2**63], dtype=np.uint64)
    >>> sorted((int(i), int(j), int(d)) for a, b, c in pair_chunks(fps, 1) for i, j, d in zip(a, b, c))
    [(0, 1, 1), (0, 2, 0), (1, 2, 1)]
    >>> [list(map(int, c)) for c in clusters(fps, 1)]
    [[0, 1, 2]]
    >>> chain = np.array([0b0000, 0b0001, 0b0011, 0b0111], dtype=np.uint64)
    >>> [list(map(int, c)) for c in clusters(chain, 1, method="components")]
    [[0, 1, 2, 3]]
    >>> [list(map(int, c)) for c in clusters(chain, 1)]
    [[0, 1], [2, 3]]
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from simpg import bits
from simpg.exc import InvalidFingerprint, InvalidLayout, SimpgError
from simpg.fingerprint.minhash import BANDS, SKETCH_BYTES, checked_max_sketch_distance
from simpg.layout import Layout, Permutation, check_radius
from simpg.results import Pair

logger = logging.getLogger(__name__)

__all__ = [
    "CLUSTER_METHODS",
    "Decided",
    "as_band_keys",
    "as_fingerprints",
    "as_sketches",
    "band_keys_with_nulls",
    "clusters",
    "band_pair_chunks",
    "cluster_method",
    "clusters_of",
    "component_labels",
    "confirmed_clusters_of",
    "confirmed_pair_chunks",
    "confirmed_pairs_of",
    "decide",
    "pair_arrays",
    "pair_chunks",
    "pair_tables",
    "pairs_from_arrays",
    "pairs_layout",
    "permute",
    "prefix_masks",
    "representative_labels",
    "segment_masks",
]

#: How :func:`clusters` groups rows: around a representative (the default), or as
#: connected components.
CLUSTER_METHODS = ("representative", "components")

_U64 = np.uint64
_WORDS = SKETCH_BYTES // 8  # uint64 words of a sketch
_EMPTY = np.empty(0, dtype=np.int64)

# Cost model of pairs_layout, from timings on a 2-core bench machine (docs/python.md):
# nanoseconds per row per table (permute, key sort, bitset), per row whose key repeats
# (gathered and sorted in full), and per candidate pair compared.
_NS_PER_ROW_TABLE = 30.0
_NS_PER_REPEATED_ROW = 150.0
_NS_PER_CANDIDATE = 15.0
#: Fingerprints sampled to fit a plan to the data (as simpg.pair_masks in SQL).
_PLAN_SAMPLE = 3000


def as_fingerprints(values: Any) -> np.ndarray:
    """Fingerprints as a 1-D ``uint64`` array.

    Accepts a ``uint64`` array (unsigned fingerprints), an ``int64`` array (the signed
    bigint form PostgreSQL stores: same bits), or an iterable of unsigned Python ints,
    each checked with :func:`simpg.bits.check` (so -1, 2**64 or None raise, naming
    the value).
    """
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise InvalidFingerprint(f"expected a 1-D array of fingerprints, got shape {values.shape}")
        if values.dtype == np.uint64:
            return values
        if values.dtype == np.int64:
            return values.view(np.uint64)
        raise InvalidFingerprint(f"expected a uint64 or int64 array of fingerprints, got {values.dtype}")
    items = list(values)
    for value in items:
        bits.check(value)
    return np.array(items, dtype=np.uint64)


def as_sketches(values: Any) -> np.ndarray:
    """Sketches (:mod:`simpg.fingerprint.minhash`) as an ``(n, 4)`` ``uint64`` array.

    Accepts such an array, an ``(n, 32)`` ``uint8`` array, or an iterable of 32-byte
    ``bytes``; anything else raises, naming the value.
    """
    if isinstance(values, np.ndarray):
        if values.ndim == 2 and values.dtype == np.uint64 and values.shape[1] == _WORDS:
            return values
        if values.ndim == 2 and values.dtype == np.uint8 and values.shape[1] == SKETCH_BYTES:
            return np.ascontiguousarray(values).view(">u8").astype(np.uint64)
        raise InvalidFingerprint(f"expected sketches as an (n, {SKETCH_BYTES}) uint8 array, got "
                                 f"{values.dtype} of shape {values.shape}")
    items = list(values)
    for value in items:
        if not isinstance(value, (bytes, bytearray)) or len(value) != SKETCH_BYTES:
            raise InvalidFingerprint(f"expected a sketch of {SKETCH_BYTES} bytes, got {value!r}")
    raw = np.frombuffer(b"".join(bytes(v) for v in items), dtype=np.uint8).reshape(len(items), SKETCH_BYTES)
    return as_sketches(raw)


def as_band_keys(values: Any, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Band keys (:func:`simpg.fingerprint.sketch_and_bands`) as an ``(n, BANDS)`` ``int64`` array and a mask.

    Accepts such an array (every row has keys), such an array and the mask as a pair, or
    an iterable of :data:`BANDS`-tuples of signed 64-bit keys or None (a text too short to
    have any: it shares no band). The mask says which rows have keys. ``n``: the number
    of rows expected.
    """
    if isinstance(values, tuple) and len(values) == 2 and all(isinstance(v, np.ndarray) for v in values):
        keys, has = as_band_keys(values[0])[0], np.asarray(values[1], dtype=bool)
        if has.shape != (len(keys),):
            raise InvalidFingerprint(f"expected one has-keys flag per row of band keys, got shape {has.shape}")
    elif isinstance(values, np.ndarray):
        if values.ndim != 2 or values.shape[1] != BANDS or values.dtype not in (np.int64, np.uint64):
            raise InvalidFingerprint(f"expected band keys as an (n, {BANDS}) int64 array, got "
                                     f"{values.dtype} of shape {values.shape}")
        keys, has = values.view(np.int64), np.ones(len(values), dtype=bool)
    else:
        items = list(values)
        for value in items:
            if value is not None and (not isinstance(value, (tuple, list)) or len(value) != BANDS or not all(
                    isinstance(x, int) and not isinstance(x, bool) and -2**63 <= x < 2**63 for x in value)):
                raise InvalidFingerprint(f"expected {BANDS} signed 64-bit band keys or None, got {value!r}")
        has = np.array([v is not None for v in items], dtype=bool)
        keys = np.array([v if v is not None else (0,) * BANDS for v in items], dtype=np.int64).reshape(-1, BANDS)
    if n is not None and len(keys) != n:
        raise InvalidFingerprint(f"expected band keys for each of {n} rows, got {len(keys)}")
    return keys, has


def _keys(fps: np.ndarray, sketches: np.ndarray | None, band_keys: tuple[np.ndarray, np.ndarray] | None = None,
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, tuple[np.ndarray, np.ndarray] | None]:
    """Distinct rows: their fingerprints, each row's key number, and the keys' sketches and band keys.

    Rows equal in fingerprint (and sketch and band keys, when given) are one key: a value
    repeated in many rows costs one comparison, not one per pair of rows.
    """
    if sketches is None:
        unique, inverse = np.unique(fps, return_inverse=True)
        return unique, inverse.reshape(-1), None, None
    if len(sketches) != len(fps):
        raise InvalidFingerprint(f"expected one sketch per fingerprint, got {len(sketches)} for {len(fps)}")
    parts = [fps[:, None], sketches]
    if band_keys is not None:
        parts += [band_keys[0].view(np.uint64), band_keys[1].astype(np.uint64)[:, None]]
    rows = np.concatenate(parts, axis=1)
    # Only rows whose fingerprint repeats can be equal rows: a row-wise np.unique (a sort of
    # whole rows) over just those, the others each their own key.
    _, fp_inverse, fp_counts = np.unique(fps, return_inverse=True, return_counts=True)
    repeated = fp_counts[fp_inverse.reshape(-1)] > 1
    alone, shared = np.flatnonzero(~repeated), np.flatnonzero(repeated)
    shared_unique, shared_inverse = np.unique(rows[shared], axis=0, return_inverse=True)
    unique = np.concatenate([rows[alone], shared_unique])
    inverse = np.empty(len(fps), dtype=np.int64)
    inverse[alone] = np.arange(len(alone))
    inverse[shared] = len(alone) + shared_inverse.reshape(-1)
    key_bands = None
    if band_keys is not None:
        first = 1 + _WORDS  # after the fingerprint and the sketch: the keys, then the has-keys flag
        key_bands = (np.ascontiguousarray(unique[:, first:first + BANDS]).view(np.int64), unique[:, first + BANDS] == 1)
    key_sketches = np.ascontiguousarray(unique[:, 1:1 + _WORDS])
    return np.ascontiguousarray(unique[:, 0]), inverse.reshape(-1), key_sketches, key_bands


def _confirmed(chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], sketches: np.ndarray | None,
               max_sketch_distance: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The candidate pairs whose sketches differ in at most ``max_sketch_distance`` bits."""
    for i, j, d in chunks:
        if sketches is None:
            yield i, j, d, np.zeros(len(i), dtype=np.int64)
            continue
        sd = np.bitwise_count(sketches[i] ^ sketches[j]).sum(axis=1, dtype=np.int64)
        ok = sd <= max_sketch_distance
        if ok.any():
            yield i[ok], j[ok], d[ok], sd[ok]


def confirmed_pair_chunks(fps: Any, sketches: Any, k: int, max_sketch_distance: int | None = None,
                          layout: Layout | None = None, band_keys: Any = None,
                          ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Every pair of rows within ``k`` bits, or sharing a band key, whose sketches confirm it, in chunks.

    The decision of ``simpg dedup`` and of every report and lookup that a sketch confirms
    (docs/fingerprinting.md, "One decision"): the fingerprints find candidates (exactly, as
    :func:`pair_chunks`), and with ``band_keys`` so do shared band keys (:func:`band_pair_chunks`);
    the sketches (:mod:`simpg.fingerprint.minhash`) keep those whose estimated Jaccard
    similarity is high enough.

    Args:
        fps: fingerprints (see :func:`as_fingerprints`).
        sketches: one sketch per row (see :func:`as_sketches`).
        k: largest fingerprint distance of a candidate.
        max_sketch_distance: largest sketch distance that confirms a candidate (default
            :data:`simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`).
        layout: as :func:`pair_chunks`.
        band_keys: one row of band keys per row (see :func:`as_band_keys`), or None: fingerprint
            candidates only.

    Yields:
        ``(i, j, distance, sketch_distance)`` int64 arrays with ``i < j``, each pair once
        (a pair sharing a band key may be more than ``k`` bits apart).
    """
    fps = as_fingerprints(fps)
    sk = as_sketches(sketches)
    limit = _sketch_limit(max_sketch_distance)
    _check_k(k, layout)
    if len(sk) != len(fps):
        raise InvalidFingerprint(f"expected one sketch per fingerprint, got {len(sk)} for {len(fps)}")
    keys = None if band_keys is None else as_band_keys(band_keys, len(fps))
    yield from _confirmed(pair_chunks(fps, k, layout), sk, limit)
    if keys is not None:
        yield from _band_pairs(fps, sk, keys, k, limit)


def band_pair_chunks(fps: Any, sketches: Any, band_keys: Any, k: int, max_sketch_distance: int | None = None,
                     ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The pairs that share a band key, are more than ``k`` bits apart and whose sketches confirm them.

    What band keys add to the pairs within ``k`` (:func:`confirmed_pair_chunks` with
    ``band_keys``), as ``simpg.band_passes`` does in SQL: band ``b``'s pass reports the pairs
    that share key ``b`` and no earlier one, so each pair comes out once. Rows without
    band keys share none.

    Yields:
        ``(i, j, distance, sketch_distance)`` int64 arrays with ``i < j``.
    """
    fps = as_fingerprints(fps)
    sk = as_sketches(sketches)
    _check_k(k, None)
    if len(sk) != len(fps):
        raise InvalidFingerprint(f"expected one sketch per fingerprint, got {len(sk)} for {len(fps)}")
    yield from _band_pairs(fps, sk, as_band_keys(band_keys, len(fps)), k, _sketch_limit(max_sketch_distance))


def _band_pairs(fps: np.ndarray, sketches: np.ndarray, band_keys: tuple[np.ndarray, np.ndarray], k: int,
                limit: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    keys, has = band_keys
    rows = np.flatnonzero(has)
    for b in range(keys.shape[1]):
        order = rows[np.argsort(keys[rows, b], kind="stable")]
        for active, d in _run_steps(keys[order, b]):
            x, y = order[active], order[active + d]
            i, j = np.minimum(x, y), np.maximum(x, y)
            keep = np.bitwise_count(fps[i] ^ fps[j]).astype(np.int64) > k
            for earlier in range(b):  # a pair sharing an earlier band came out there
                keep &= keys[i, earlier] != keys[j, earlier]
            i, j = i[keep], j[keep]
            sd = np.bitwise_count(sketches[i] ^ sketches[j]).sum(axis=1, dtype=np.int64)
            ok = sd <= limit
            if ok.any():
                i, j = i[ok], j[ok]
                yield i, j, np.bitwise_count(fps[i] ^ fps[j]).astype(np.int64), sd[ok]


def _run_steps(values: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """Every pair of positions ``(p, p + d)`` of sorted ``values`` that hold the same value.

    Yields ``(positions p, d)`` for d = 1, 2, ...: runs of equal values are contiguous, so
    the positions still in a run at d are a subset of those at d - 1, and it stops after
    one step per row of the longest run. The pass engine pairs rows of one prefix with it,
    the band pass rows of one band key.
    """
    active = np.arange(len(values) - 1)
    d = 1
    while len(active):
        active = active[active + d < len(values)]
        active = active[values[active + d] == values[active]]
        if not len(active):
            return
        yield active, d
        d += 1


def _sketch_limit(value: int | None) -> int:
    return checked_max_sketch_distance(value)


#: One pass of the engine: a table's permutation and prefix. A layout's tables
#: (:attr:`Layout.permutations`) or one built from any mask (:func:`_mask_table`).
_Table = Permutation


def _tables(layout: Layout) -> tuple[_Table, ...]:
    return layout.permutations


def prefix_masks(layout: Layout) -> list[int]:
    """For each table, the (unsigned) mask of fingerprint bits that form its prefix.

    Two fingerprints share table ``t``'s prefix exactly when ``(a ^ b) & mask == 0``.
    """
    return [tb.source_mask for tb in _tables(layout)]


def permute(fps: np.ndarray, layout: Layout, t: int) -> np.ndarray:
    """Table ``t``'s permuted values of unsigned fingerprints (``uint64``).

    Bit for bit :meth:`Layout.permute`, vectorised (unsigned rather than signed).
    """
    fps = as_fingerprints(fps)
    return _permute(fps, layout.permutation(t))


def _permute(fps: np.ndarray, table: _Table, out: np.ndarray | None = None,
             tmp: np.ndarray | None = None) -> np.ndarray:
    out = np.empty(len(fps), dtype=np.uint64) if out is None else out
    tmp = np.empty(len(fps), dtype=np.uint64) if tmp is None else tmp
    out.fill(0)
    for src, mask, dst in table.runs:
        np.right_shift(fps, _U64(src), out=tmp)
        np.bitwise_and(tmp, _U64(mask), out=tmp)
        np.left_shift(tmp, _U64(dst), out=tmp)
        np.bitwise_or(out, tmp, out=out)
    return out


def _pass_cost(layout: Layout, rows: int) -> float:
    """Estimated nanoseconds of one pass over ``rows`` uniform fingerprints."""
    cost = 0.0
    for t in range(layout.tables):
        pbits = layout.prefix_bits(t)
        key_slots = 2.0 ** min(pbits, 32)
        repeated = rows * -math.expm1(-rows / key_slots)
        candidates = rows * rows / 2 / 2.0**pbits
        cost += rows * _NS_PER_ROW_TABLE + repeated * _NS_PER_REPEATED_ROW + candidates * _NS_PER_CANDIDATE
    return cost


def pairs_layout(k: int, rows: int) -> Layout:
    """A one-level layout that makes :func:`pair_chunks` fast for ``rows`` uniform fingerprints.

    Any layout with radius ``>= k`` gives the same pairs; this one has the lowest
    estimated cost (:func:`_pass_cost`): a pass per table, the rows whose key
    repeats, and the candidate pairs compared.
    """
    check_radius(k)
    best: tuple[float, Layout] | None = None
    for m in range(k + 1, bits.BITS + 1):
        try:
            layout = Layout(k, (m,))
        except InvalidLayout:
            break  # too many tables from here on
        cost = _pass_cost(layout, rows)
        if best is None or cost < best[0]:
            best = (cost, layout)
    assert best is not None
    return best[1]


def segment_masks(k: int, s: int, weights: Any) -> list[int]:
    """Masks of every choice of ``s - k`` out of ``s`` segments of the 64 bits (unsigned).

    The segments partition the bits, balanced by ``weights`` (64 of them, bit 0 first:
    the information each bit carries): the heaviest bit first, each to the lightest
    segment. Any ``k`` differing bits touch at most ``k`` segments, so two fingerprints
    within ``k`` agree on some mask's bits, whatever the weights. Bit for bit
    ``simpg.segment_masks`` in SQL (tests/integration/test_reports.py checks it).
    """
    w = [float(x) for x in weights]
    if not 0 <= k < s <= bits.BITS or len(w) != bits.BITS:
        raise InvalidLayout(f"segment masks need 0 <= k < s <= 64 and 64 weights, got k={k}, s={s}, {len(w)} weights")
    segment = [0] * s
    total = [0.0] * s
    size = [0] * s
    for b in sorted(range(bits.BITS), key=lambda b: (-w[b], b)):
        to = min(range(s), key=lambda i: (total[i], size[i], i))
        segment[to] |= 1 << b
        total[to] += max(w[b], 0.0)
        size[to] += 1
    masks = []
    for combo in itertools.combinations(range(s), s - k):
        mask = 0
        for i in combo:
            mask |= segment[i]
        masks.append(mask)
    return masks


def _mask_table(mask: int) -> _Table:
    """A table whose prefix is the bits of ``mask`` (:meth:`Permutation.from_mask`)."""
    return Permutation.from_mask(mask)


def _sample(fps: np.ndarray) -> np.ndarray:
    if len(fps) <= 2 * _PLAN_SAMPLE:
        return fps
    return fps[np.random.default_rng(0).choice(len(fps), _PLAN_SAMPLE, replace=False)]


def _sample_cost(sample: np.ndarray, masks: list[int], rows: int) -> float:
    """Estimated nanoseconds of a pass per mask over ``rows`` rows like ``sample``."""
    m = len(sample)
    cost = 0.0
    for mask in masks:
        _, counts = np.unique(sample & _U64(mask), return_counts=True)
        collisions = float((counts.astype(np.float64) * (counts - 1)).sum())
        candidates = collisions / (m * (m - 1)) * rows * (rows - 1) / 2
        repeated = min(float(rows), 2 * candidates)
        cost += rows * _NS_PER_ROW_TABLE + repeated * _NS_PER_REPEATED_ROW + candidates * _NS_PER_CANDIDATE
    return cost


def pair_tables(fps: Any, k: int) -> tuple[_Table, ...]:
    """The tables :func:`pair_chunks` makes its passes over, fitted to ``fps``.

    :func:`pairs_layout` is the fastest for uniform fingerprints; on fingerprints whose
    bits are far from uniform (32-bit values, one template) its prefixes are nearly
    constant and a pass compares almost every pair of rows. A sample of the rows
    measures that; when the layout's passes would compare more pairs than they sort
    rows, segments balanced by each bit's entropy (:func:`segment_masks`) are tried
    too and the cheapest estimate wins. Exact either way. As ``simpg.pair_masks``.
    """
    fps = as_fingerprints(fps)
    _check_k(k, None)
    n = len(fps)
    layout = pairs_layout(k, n)
    if n < 2:
        return _tables(layout)
    sample = _sample(fps)
    best = (_sample_cost(sample, prefix_masks(layout), n), _tables(layout))
    if best[0] <= 2 * n * _NS_PER_ROW_TABLE * layout.tables:
        return best[1]
    ones = np.array([np.count_nonzero(sample & _U64(1 << b)) for b in range(bits.BITS)], dtype=np.float64)
    p = ones / len(sample)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = np.nan_to_num(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))
    for s in range(k + 1, min(bits.BITS, k + 5) + 1):
        if math.comb(s, k) > 256:
            break
        masks = segment_masks(k, s, entropy)
        cost = _sample_cost(sample, masks, n)
        if cost < best[0]:
            best = (cost, tuple(_mask_table(m) for m in masks))
    logger.debug("pair passes: %d tables, estimated %.3f s", len(best[1]), best[0] / 1e9)
    return best[1]


def _check_k(k: int, layout: Layout | None) -> None:
    if layout is None:
        check_radius(k)
    else:
        layout.check_radius(k)


class _Workspace:
    """Buffers reused by every table of a pass, and the pass's chunking.

    Work goes in chunks of rows that fit in the CPU cache (memory bandwidth, not
    arithmetic, bounds these loops), and fresh memory is slow to touch the first
    time, so the row-sized arrays are allocated once per pass.
    """

    #: Rows per chunk: 64K rows of 8 bytes stay in L2.
    CHUNK = 1 << 16
    #: Largest bitset marking repeated keys: 2**26 bits = 8 MiB.
    MAX_BITSET_BITS = 26

    def __init__(self, n: int) -> None:
        self.n = n
        self.perm = np.empty(n, dtype=np.uint64)
        self.key = np.empty(n, dtype=np.uint32)
        self.ordered = np.empty(n, dtype=np.uint32)
        self.hit = np.empty(n, dtype=bool)
        self.tmp = np.empty(min(n, self.CHUNK), dtype=np.uint64)
        # About 4 bits per row keeps rows that only share a bitset slot rare.
        self.bitset_bits = min(self.MAX_BITSET_BITS, max(math.ceil(math.log2(max(n, 2))) + 2, 8))
        self.bitset = np.zeros(1 << (self.bitset_bits - 3), dtype=np.uint8)

    def chunks(self) -> Iterator[slice]:
        for start in range(0, self.n, self.CHUNK):
            yield slice(start, min(start + self.CHUNK, self.n))


def _table_pairs(fps: np.ndarray, table: _Table, k: int, ws: _Workspace,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row pairs ``(i < j)`` that share ``table``'s prefix and are within ``k``."""
    perm, key = ws.perm, ws.key
    # A 32-bit key: the whole prefix when it fits, else its top 32 bits (a superset).
    key_bits = min(table.prefix_bits, 32)
    key_shift = _U64(bits.BITS - key_bits)
    for part in ws.chunks():
        _permute(fps[part], table, perm[part], ws.tmp[: part.stop - part.start])
        key[part] = perm[part] >> key_shift
    ordered = ws.ordered
    ordered[:] = key
    ordered.sort()
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not len(repeated):
        return _EMPTY, _EMPTY, _EMPTY
    # Mark the repeated keys in a bitset indexed by their top bits (a superset again,
    # sorted out below by the full prefix) and pick the rows that hit a mark.
    shift = np.uint32(max(key_bits - ws.bitset_bits, 0))
    marks = repeated >> shift
    np.bitwise_or.at(ws.bitset, marks >> 3, np.left_shift(1, marks & 7).astype(np.uint8))
    for part in ws.chunks():
        slot = key[part] >> shift
        ws.hit[part] = (ws.bitset[slot >> 3] >> (slot & 7).astype(np.uint8)) & 1
    ws.bitset[marks >> 3] = 0
    rows = np.flatnonzero(ws.hit)
    # Sort those rows by their full permuted value: runs of equal prefix.
    sub = perm[rows]
    order = np.argsort(sub)
    rows, sub = rows[order], sub[order]
    prefix = sub >> _U64(bits.BITS - table.prefix_bits)
    out_i, out_j, out_d = [], [], []
    for active, d in _run_steps(prefix):
        dist = np.bitwise_count(sub[active] ^ sub[active + d])
        ok = dist <= k
        if ok.any():
            a, b = rows[active[ok]], rows[active[ok] + d]
            out_i.append(np.minimum(a, b))
            out_j.append(np.maximum(a, b))
            out_d.append(dist[ok])
    if not out_i:
        return _EMPTY, _EMPTY, _EMPTY
    return (np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64),
            np.concatenate(out_d).astype(np.int64))


def pair_chunks(fps: Any, k: int, layout: Layout | None = None,
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every pair of rows within Hamming distance ``k``, in chunks (one per table at most).

    Args:
        fps: fingerprints (see :func:`as_fingerprints`); the row number is the position.
        k: largest distance reported.
        layout: the tables to use (radius at least ``k``); default :func:`pair_tables`,
            fitted to the data.

    Yields:
        ``(i, j, distance)`` int64 arrays with ``i < j``. Each pair appears exactly
        once over all chunks; rows with equal fingerprints are pairs at distance 0.
    """
    fps = as_fingerprints(fps)
    _check_k(k, layout)
    if len(fps) < 2:
        return
    tables = _tables(layout) if layout is not None else pair_tables(fps, k)
    ws = _Workspace(len(fps))
    for t, table in enumerate(tables):
        i, j, d = _table_pairs(fps, table, k, ws)
        if t and len(i):
            # Keep a pair only in the first table that sees it.
            x = fps[i] ^ fps[j]
            keep = np.ones(len(i), dtype=bool)
            for earlier in tables[:t]:
                keep &= (x & _U64(earlier.source_mask)) != 0
            i, j, d = i[keep], j[keep], d[keep]
        logger.debug("table %d of %d: %d pairs", t + 1, len(tables), len(i))
        if len(i):
            yield i, j, d


def component_labels(n: int, i: Iterable[np.ndarray] | np.ndarray, j: Iterable[np.ndarray] | np.ndarray,
                     ) -> np.ndarray:
    """Connected components of ``n`` nodes and edges ``i[e] -- j[e]``.

    Union-find done as whole-array passes: hook every root to the smallest root it
    touches, then jump pointers until every node points at its root; repeat until no
    edge joins two roots. Only nodes that have an edge take part.

    Returns:
        For each node, the smallest node of its component (a node without edges is
        its own label).
    """
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    labels = np.arange(n, dtype=np.int64)
    if not len(i):
        return labels
    nodes = np.unique(np.concatenate([i, j]))
    a = np.searchsorted(nodes, i)
    b = np.searchsorted(nodes, j)
    parent = np.arange(len(nodes), dtype=np.int64)
    while len(a):
        pa, pb = parent[a], parent[b]
        open_ = pa != pb
        if not open_.any():
            break
        # Edges whose ends share a root stay joined: drop them.
        a, b, pa, pb = a[open_], b[open_], pa[open_], pb[open_]
        np.minimum.at(parent, np.maximum(pa, pb), np.minimum(pa, pb))
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
    # Node positions are sorted, so the smallest position is the smallest node.
    labels[nodes] = nodes[parent]
    return labels


def representative_labels(n: int, i: np.ndarray, j: np.ndarray, rank: np.ndarray | None = None,
                          cannot_link: Mapping[int, set[int]] | None = None) -> np.ndarray:
    """Each of ``n`` nodes' representative, given the edges ``i[e] -- j[e]``.

    Nodes are taken by ``rank`` (default: their number), earliest first; a node joins the
    earliest representative it has an edge to, else it is a representative (its own
    label). So a label is always a neighbour of the node or the node itself.
    ``cannot_link[x]``: nodes that must not share ``x``'s cluster (both directions given):
    ``x`` skips a representative whose cluster holds one of them.
    """
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    labels = np.arange(n, dtype=np.int64)
    if not len(i):
        return labels
    rank = np.arange(n, dtype=np.int64) if rank is None else np.asarray(rank, dtype=np.int64)
    first = rank[i] < rank[j]
    early, late = np.where(first, i, j), np.where(first, j, i)
    # Each late node's edges to earlier nodes, earliest first; a node's own status is
    # settled before any later node looks at it.
    order = np.lexsort((rank[early], rank[late]))
    is_rep = np.ones(n, dtype=bool)
    cannot = cannot_link or {}
    for a, b in zip(early[order].tolist(), late[order].tolist(), strict=True):
        if is_rep[b] and labels[b] == b and is_rep[a]:
            # nodes after b still have their own label, so only settled ones (and a) can match
            if b in cannot and any(labels[c] == a for c in cannot[b]):
                continue
            labels[b] = a
            is_rep[b] = False
    return labels


def _row_pairs(pairs: Iterable[tuple[int, int]], n: int, what: str) -> list[tuple[int, int]]:
    """Constraint pairs as ``(a, b)`` rows, checked (a row pair of one row is refused)."""
    out = []
    for pair in pairs:
        a, b = (int(x) for x in pair)
        if not (0 <= a < n and 0 <= b < n) or a == b:
            raise InvalidLayout(f"{what} must pair two rows from 0 to {n - 1}, got {tuple(pair)!r}")
        out.append((a, b))
    return out


def _split_keys(decided: Decided, rows: set[int]) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """The key graph with each of ``rows`` a key of its own: ``(key of row, keys, edges i, edges j)``.

    A row taken from a key of copies keeps that key's edges, and gets an edge to each
    other part of the key (they are equal: distance 0).
    """
    old = decided.key_of_row
    new = old.copy()
    fresh = decided.keys
    for r in sorted(rows):
        if decided.count[old[r]] > 1:
            new[r] = fresh
            fresh += 1
    uniq, inverse = np.unique(new, return_inverse=True)
    inverse = inverse.reshape(-1)
    parts: dict[int, list[int]] = {}  # old key -> its new keys, for the keys that were split
    for r in sorted(rows):
        if decided.count[old[r]] > 1:
            parts.setdefault(int(old[r]), [])
    for r in np.flatnonzero(np.isin(old, list(parts))).tolist():
        if int(inverse[r]) not in parts[int(old[r])]:
            parts[int(old[r])].append(int(inverse[r]))
    # an old key's new number: that of any of its rows (the unsplit keys have one)
    renumber = np.full(decided.keys, -1, dtype=np.int64)
    renumber[old] = inverse
    touched = np.isin(decided.key_i, list(parts)) | np.isin(decided.key_j, list(parts))
    key_i = [renumber[decided.key_i[~touched]]]
    key_j = [renumber[decided.key_j[~touched]]]
    extra_i: list[int] = []
    extra_j: list[int] = []
    for p, q in zip(decided.key_i[touched].tolist(), decided.key_j[touched].tolist(), strict=True):
        for a in parts.get(p, [int(renumber[p])]):
            for b in parts.get(q, [int(renumber[q])]):
                extra_i.append(a)
                extra_j.append(b)
    for new_keys in parts.values():
        for a, b in itertools.combinations(new_keys, 2):
            extra_i.append(a)
            extra_j.append(b)
    key_i.append(np.array(extra_i, dtype=np.int64))
    key_j.append(np.array(extra_j, dtype=np.int64))
    return inverse, len(uniq), np.concatenate(key_i), np.concatenate(key_j)


def _components_apart(n: int, i: np.ndarray, j: np.ndarray, cannot: set[tuple[int, int]]) -> np.ndarray:
    """Connected components, except that no component holds both nodes of a ``cannot`` pair.

    Components that would hold one are built again edge by edge (nearest first is not
    known here: in edge order), leaving out each edge that would join the two sides.
    """
    labels = component_labels(n, i, j)
    broken = {int(labels[a]) for a, b in cannot if labels[a] == labels[b]}
    if not broken:
        return labels
    inside = np.isin(labels[i], list(broken))
    parent = {int(x): int(x) for x in np.flatnonzero(np.isin(labels, list(broken)))}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    # each root's members that are in a cannot pair (few): a union is refused when it would join a pair
    named = {x for pair in cannot for x in pair}
    members = {x: {x} & named for x in parent}
    for a, b in zip(i[inside].tolist(), j[inside].tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra == rb or any((x, y) in cannot or (y, x) in cannot for x in members[ra] for y in members[rb]):
            continue
        ra, rb = min(ra, rb), max(ra, rb)
        parent[rb] = ra
        members[ra] |= members.pop(rb)
    for x in parent:
        labels[x] = find(x)
    return labels


def _merged(labels: np.ndarray, must: list[tuple[int, int]], cannot: set[tuple[int, int]]) -> np.ndarray:
    """``labels`` with the clusters of each ``must`` pair merged, unless a ``cannot`` pair would end together."""
    labels = labels.copy()
    for a, b in must:
        la, lb = int(labels[a]), int(labels[b])
        if la == lb:
            continue
        group = labels == la
        other = labels == lb
        if any((group[x] and other[y]) or (group[y] and other[x]) for x, y in cannot):
            logger.info("rows %d and %d are not merged: their clusters hold a cannot-link pair", a, b)
            continue
        labels[other] = min(la, lb)
        labels[group] = min(la, lb)
    return labels


class Decided:
    """Every decided pair of a set of rows, found once per distinct row, and their clusters.

    Rows equal in fingerprint (and sketch and band keys, when given) are one *key*: they
    are near-duplicates of each other and of exactly the same other rows, so only keys
    are paired (n copies of one licence cost one row, not n * (n - 1) / 2 pairs), and
    :meth:`pair_chunks` hands the copies their pairs back. Made by :func:`decide`.
    """

    def __init__(self, n: int, key_of_row: np.ndarray, keys: int, chunks: list[tuple[np.ndarray, ...]],
                 sketched: bool) -> None:
        self.n = n
        self.key_of_row = key_of_row
        self.keys = keys
        self.sketched = sketched
        self.key_i = np.concatenate([c[0] for c in chunks]) if chunks else _EMPTY
        self.key_j = np.concatenate([c[1] for c in chunks]) if chunks else _EMPTY
        self.key_d = np.concatenate([c[2] for c in chunks]) if chunks else _EMPTY
        self.key_sd = np.concatenate([c[3] for c in chunks]) if chunks else _EMPTY
        # rows grouped by key: rows_by_key[start[q]:start[q] + count[q]] are key q's rows, in row order
        self.rows_by_key = np.argsort(key_of_row, kind="stable")
        self.count = np.bincount(key_of_row, minlength=keys)
        self.start = np.cumsum(self.count) - self.count

    def clusters(self, method: str = "representative", rank: Any = None, *,
                 cannot_link: Iterable[tuple[int, int]] = (), must_link: Iterable[tuple[int, int]] = (),
                 ) -> list[np.ndarray]:
        """Clusters of two or more rows (see :data:`CLUSTER_METHODS`), as :func:`clusters` returns them.

        ``cannot_link`` and ``must_link`` are pairs of rows (reviewers' decisions,
        :mod:`simpg.review.decisions`). Two rows of a ``cannot_link`` pair are never in
        one cluster: their pair is no edge, and no third row joins them (a row skips a
        representative whose cluster holds a row it cannot be with; with components, an
        edge that would join them is left out). A ``must_link`` pair's clusters are merged
        into one, unless that would put a ``cannot_link`` pair together (the ``cannot_link``
        wins). Rows named in either are taken apart from their copies (rows equal in
        fingerprint and sketch) first, so a decision binds the rows it names.
        """
        if method not in CLUSTER_METHODS:
            raise InvalidLayout(f"cluster method must be one of {', '.join(CLUSTER_METHODS)}, got {method!r}")
        n = self.n
        cannot = _row_pairs(cannot_link, n, "cannot_link")
        must = _row_pairs(must_link, n, "must_link")
        if n < 2:
            return []
        inverse, keys, key_i, key_j = self.key_of_row, self.keys, self.key_i, self.key_j
        if cannot or must:
            inverse, keys, key_i, key_j = _split_keys(self, {r for p in cannot + must for r in p})
            key_cannot = {(int(inverse[a]), int(inverse[b])) for a, b in cannot}
            if key_cannot:  # no edge between a cannot_link pair
                pairs = np.minimum(key_i, key_j) * keys + np.maximum(key_i, key_j)
                banned = np.array([min(a, b) * keys + max(a, b) for a, b in key_cannot], dtype=np.int64)
                keep = ~np.isin(pairs, banned)
                key_i, key_j = key_i[keep], key_j[keep]
        if method == "components":
            if cannot:
                labels = _components_apart(keys, key_i, key_j, key_cannot)
            else:
                labels = component_labels(keys, key_i, key_j)
        else:
            # A key arrives with its earliest row, and takes that row as its label.
            row_rank = np.arange(n) if rank is None else np.unique(np.asarray(rank), return_inverse=True)[1].reshape(-1)
            order = np.lexsort((np.arange(n), row_rank))
            first_row = order[np.unique(inverse[order], return_index=True)[1]]
            apart: dict[int, set[int]] = {}
            for a, b in key_cannot if cannot else ():
                apart.setdefault(a, set()).add(b)
                apart.setdefault(b, set()).add(a)
            labels = representative_labels(keys, key_i, key_j, row_rank[first_row], apart)
        if must:
            labels = _merged(labels, [(int(inverse[a]), int(inverse[b])) for a, b in must],
                             key_cannot if cannot else set())
        comp = labels[inverse]
        # Rows sorted by cluster label; a label with two or more rows is a cluster.
        order = np.argsort(comp, kind="stable")
        comp_sorted = comp[order]
        starts = np.flatnonzero(np.r_[True, comp_sorted[1:] != comp_sorted[:-1]])
        sizes = np.diff(np.r_[starts, n])
        groups = [order[s:s + size] for s, size in zip(starts, sizes, strict=True) if size > 1]
        groups.sort(key=lambda g: (-len(g), int(g[0])))
        return groups

    def pair_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]:
        """Every decided pair of rows, copies included, in chunks.

        Yields:
            ``(i, j, distance, sketch_distance)`` int64 arrays with ``i < j``, each pair
            once; ``sketch_distance`` is None without sketches. Copies of one key are
            pairs at distance 0 (and sketch distance 0).
        """
        count, start, rows = self.count, self.start, self.rows_by_key
        if len(self.key_i):
            # every row of key p with every row of key q
            p, q = self.key_i, self.key_j
            each = count[p] * count[q]
            pair = np.repeat(np.arange(len(p)), each)
            offset = np.arange(int(each.sum())) - np.repeat(np.cumsum(each) - each, each)
            a = rows[start[p][pair] + offset // count[q][pair]]
            b = rows[start[q][pair] + offset % count[q][pair]]
            yield (np.minimum(a, b), np.maximum(a, b), self.key_d[pair],
                   self.key_sd[pair] if self.sketched else None)
        # the copies of each key among themselves: each row with the rows after it in its key
        pos = np.arange(self.n)
        after = np.repeat(start + count, count) - pos - 1
        if after.any():
            left = np.repeat(pos, after)
            right = left + 1 + np.arange(int(after.sum())) - np.repeat(np.cumsum(after) - after, after)
            a, b = rows[left], rows[right]
            zeros = np.zeros(len(a), dtype=np.int64)
            yield np.minimum(a, b), np.maximum(a, b), zeros, zeros.copy() if self.sketched else None


def decide(fps: Any, k: int, layout: Layout | None = None, sketches: Any = None,
           max_sketch_distance: int | None = None, band_keys: Any = None) -> Decided:
    """The near-duplicate pairs of ``fps`` (confirmed by ``sketches``, with ``band_keys`` as candidates too).

    The decision of :func:`confirmed_pair_chunks` (of :func:`pair_chunks` without
    sketches), made once per distinct row (:class:`Decided`); :func:`clusters`, ``simpg
    find-all``, ``simpg dedup`` and the handles' ``clusters()`` group what it decides.
    Arguments as :func:`clusters`.
    """
    fps = as_fingerprints(fps)
    n = len(fps)
    _check_k(k, layout)
    sk = None if sketches is None else as_sketches(sketches)
    limit = _sketch_limit(max_sketch_distance)
    if band_keys is not None and sk is None:
        raise InvalidFingerprint("band keys are candidates only with sketches to confirm them; pass sketches")
    keys = None if band_keys is None else as_band_keys(band_keys, n)
    unique, inverse, key_sketches, key_bands = _keys(fps, sk, keys)
    chunks: list[tuple[np.ndarray, ...]] = list(_confirmed(pair_chunks(unique, k, layout), key_sketches, limit))
    if key_bands is not None and key_sketches is not None:
        chunks += list(_band_pairs(unique, key_sketches, key_bands, k, limit))
    return Decided(n, inverse, len(unique), chunks, sk is not None)


def clusters(fps: Any, k: int, layout: Layout | None = None, method: str = "representative",
             rank: Any = None, sketches: Any = None, max_sketch_distance: int | None = None,
             band_keys: Any = None) -> list[np.ndarray]:
    """Clusters of rows within ``k`` (see :data:`CLUSTER_METHODS`), each of two or more rows.

    Equal fingerprints are folded together first, so a fingerprint repeated in many
    rows costs one comparison, not one per pair of rows (:func:`decide`).

    Args:
        fps: fingerprints (see :func:`as_fingerprints`); the row number is the position.
        k: largest distance within a cluster's pairs (to its representative, or along
            a chain of components).
        layout: the tables to use (radius at least ``k``); default: fitted to the data.
        method: ``"representative"`` (every member within ``k`` of the cluster's earliest
            row) or ``"components"`` (connected components).
        rank: the order rows arrive in for ``"representative"`` (default: row number);
            any sortable array, e.g. ids or timestamps.
        sketches: one sketch per row (:func:`as_sketches`): a pair joins a cluster only
            when the sketches confirm it (:func:`confirmed_pair_chunks`).
        max_sketch_distance: with ``sketches``, the largest sketch distance that confirms.
        band_keys: with ``sketches``, one row of band keys per row (:func:`as_band_keys`): rows
            sharing a band key are candidates too, as in :func:`confirmed_pair_chunks`.

    Returns:
        Arrays of row numbers, each sorted; largest cluster first, then by first row.
    """
    if method not in CLUSTER_METHODS:
        raise InvalidLayout(f"cluster method must be one of {', '.join(CLUSTER_METHODS)}, got {method!r}")
    return decide(fps, k, layout, sketches, max_sketch_distance, band_keys).clusters(method, rank)


# -- rows with ids: what the handles (simpg.psycopg, simpg.shards) return ---------------

def pair_arrays(ids: np.ndarray, fps: np.ndarray, k: int,
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Chunks of ``(ids a, ids b, distances)`` over every pair within ``k``."""
    numeric = ids.dtype != object
    for i, j, d in pair_chunks(fps, k):
        a, b = ids[i], ids[j]
        if numeric:
            a, b = np.minimum(a, b), np.maximum(a, b)
        yield a, b, d


def pairs_from_arrays(chunk: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[Pair]:
    """One chunk of :func:`pair_arrays` as Pair tuples of Python values."""
    a, b, d = chunk
    return [Pair(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), d.tolist(), strict=True)]


def cluster_method(value: Any) -> str:
    """clusters()'s ``method``, or SimpgError naming it."""
    if value not in CLUSTER_METHODS:
        raise SimpgError(f"method must be one of {', '.join(map(repr, CLUSTER_METHODS))}, got {value!r}")
    return str(value)


def _id_rank(ids: np.ndarray) -> np.ndarray | None:
    """The order rows arrive in for ``"representative"``: by id (None: ids without an order, the table's)."""
    if ids.dtype != object:
        return ids
    try:
        return np.argsort(np.array(sorted(range(len(ids)), key=ids.__getitem__)), kind="stable")
    except TypeError:  # ids without an order: the table's
        return None


def _id_clusters(ids: np.ndarray, groups: Iterable[np.ndarray], by_smallest_id: bool = False) -> list[list[Any]]:
    """Clusters of row numbers as sorted lists of ids, largest first (then by smallest id if asked)."""
    out = []
    for rows in groups:
        members = ids[rows].tolist()
        try:
            members.sort()
        except TypeError:  # ids without an order: keep the table's
            pass
        out.append(members)
    if by_smallest_id:
        try:
            out.sort(key=lambda c: c[0])
        except TypeError:  # ids without an order: the table's
            pass
    out.sort(key=lambda c: -len(c))
    return out


def clusters_of(ids: np.ndarray, fps: np.ndarray, k: int, method: str = "representative") -> list[list[Any]]:
    """Clusters (size >= 2) as lists of ids, largest first.

    ``"representative"`` takes rows in id order (the table's order for ids that have
    none), so the representative is the smallest id of its cluster.
    """
    rank = _id_rank(ids) if method == "representative" else None
    return _id_clusters(ids, clusters(fps, k, method=method, rank=rank))


def band_keys_with_nulls(keys: np.ndarray, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Band keys read from a table, where any key may be NULL, as :func:`as_band_keys` takes them.

    ``nulls``: bit ``b`` set where band ``b`` is NULL. A NULL key shares no band, as in SQL
    (``NULL = NULL`` is not true): a row with every key NULL has none (mask False), and a
    NULL among keys gets a value found nowhere else in its band column, each its own.
    """
    keys = np.array(keys, dtype=np.int64, copy=True)
    has = np.ones(len(keys), dtype=bool)
    every = (1 << keys.shape[1]) - 1
    has[(nulls.astype(np.int64) & every) == every] = False
    for b in range(keys.shape[1]):
        null = (nulls.astype(np.int64) >> b) & 1 == 1
        fill = int(np.count_nonzero(null & has))
        if not fill:
            continue
        present = np.unique(keys[~null, b])
        unused = np.setdiff1d(np.arange(fill + len(present), dtype=np.int64) + np.iinfo(np.int64).min, present,
                              assume_unique=True)
        keys[null & has, b] = unused[:fill]
    return keys, has


def confirmed_pairs_of(ids: np.ndarray, fps: np.ndarray, k: int, sketches: Any,
                       max_sketch_distance: int | None = None,
                       band_keys: tuple[np.ndarray, np.ndarray] | None = None) -> list[Pair]:
    """Every pair :func:`decide` decides over rows with ids, as Pairs ``a < b``, sorted by ``(a, b)``.

    ``sketches``, ``band_keys`` as :func:`decide` takes them (band keys None: fingerprint
    candidates only). Ids without an order come in the table's order.
    """
    decided = decide(fps, k, sketches=sketches, max_sketch_distance=max_sketch_distance, band_keys=band_keys)
    chunks = list(decided.pair_chunks())
    if not chunks:
        return []
    i = np.concatenate([c[0] for c in chunks])
    j = np.concatenate([c[1] for c in chunks])
    d = np.concatenate([c[2] for c in chunks])
    a, b = ids[i], ids[j]
    if ids.dtype != object:
        a, b = np.minimum(a, b), np.maximum(a, b)
        order = np.lexsort((b, a))
        return [Pair(x, y, z) for x, y, z in zip(a[order].tolist(), b[order].tolist(), d[order].tolist(),
                                                 strict=True)]
    pairs = [Pair(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), d.tolist(), strict=True)]
    try:
        pairs = sorted(Pair(x, y, z) if x < y else Pair(y, x, z) for x, y, z in pairs)
    except TypeError:  # ids without an order: the table's
        pass
    return pairs


def confirmed_clusters_of(ids: np.ndarray, fps: np.ndarray, k: int, method: str, sketches: Any,
                          max_sketch_distance: int | None = None,
                          band_keys: tuple[np.ndarray, np.ndarray] | None = None) -> list[list[Any]]:
    """:func:`clusters_of` over the pairs :func:`confirmed_pairs_of` decides, ties by smallest id.

    ``"representative"`` takes rows in id order: every member is a confirmed
    near-duplicate of its cluster's smallest id.
    """
    decided = decide(fps, k, sketches=sketches, max_sketch_distance=max_sketch_distance, band_keys=band_keys)
    rank = _id_rank(ids) if method == "representative" else None
    return _id_clusters(ids, decided.clusters(method, rank=rank), by_smallest_id=True)
