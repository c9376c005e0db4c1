"""The brute-force reference answers the suite compares simpg with, and the adversarial inputs
they are compared on.

Every oracle is written once, here, as plain loops over all rows or all pairs, with its own
popcount and its own union-find: slow, obviously right, and independent of the code under
test (no simpg function decides anything here; simpg only fingerprints the texts of the
text oracles, as the input). There are four ideas:

(a) pairs within k: :func:`brute_pairs`;
(b) the sketch-confirmed decision: within k, or sharing a band key, and sketches within t;
    a row without a fingerprint or a sketch is nobody's duplicate: :func:`brute_decision`;
(c) one query against the rows: :func:`brute_near`, :func:`brute_duplicates` (with or without
    band keys);
(d) clusters over those pairs: :func:`components` (connected components) and
    :func:`representative_groups` (rows in order, each joins the earliest representative it
    is paired with, else becomes one).

Rows are ``{key: fingerprint or None}`` (None = NULL, skipped) or, for (b) and (c) with
sketches, ``{key: (fingerprint, sketch, band keys)}``. Fingerprints may be signed (bigint)
or unsigned; sketches ``bytes`` or ``int``. The other functions are adapters to the shapes
tests need (ids 1..n, numpy arrays, texts) and return the same plain loops' answers.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from simpg.layout import block_widths

Key = Any  # any key the rows use: int, text, uuid, ...
Sketch = bytes | int
Doc = tuple[int | None, Sketch | None, Sequence[int | None] | None]  # fingerprint, sketch, band keys

MASK64 = (1 << 64) - 1


class Neighbor(NamedTuple):  # equal (as a tuple) to simpg's result types of the same fields
    id: Any
    distance: int


class Pair(NamedTuple):
    a: Any
    b: Any
    distance: int


class Duplicate(NamedTuple):
    id: Any
    distance: int
    sketch_distance: int


# -- adversarial inputs ------------------------------------------------------------------

def flip(fp: int, positions: Iterable[int]) -> int:
    """fp with the given bits flipped (0 = most significant, as in simpg.layout)."""
    for p in positions:
        fp ^= 1 << (63 - p)
    return fp


def block_starts(widths: list[int]) -> list[int]:
    return list(itertools.accumulate([0, *widths[:-1]]))


def adversarial_fingerprints(
    rng: random.Random, k: int, blocks: int, random_rows: int
) -> list[int | None]:
    """Unsigned fingerprints (None = NULL) that probe every way a pair report can go wrong."""
    widths = block_widths(64, blocks)
    starts = block_starts(widths)
    bases = [0, MASK64, 1 << 63, (1 << 63) - 1, 0x5555555555555555] + [
        rng.getrandbits(64) for _ in range(4)
    ]
    fps: list[int | None] = []
    for base in bases:
        fps += [base, base]  # distance 0 in two rows
        fps += [flip(base, [0]), flip(base, [63])]  # sign bit and lowest bit
        # k bits flipped in k different blocks, at block edges: only one table sees the pair
        for chosen in itertools.islice(itertools.combinations(range(blocks), k), 12):
            edge = [starts[b] + (widths[b] - 1 if (b + base) % 2 else 0) for b in chosen]
            fps.append(flip(base, edge))
        # k + 1 bits flipped: must not pair with base (it may pair with the k-flipped rows)
        fps.append(flip(base, rng.sample(range(64), k + 1)))
        # a chain base -> c1 -> c2 with each step k bits: c2 is up to 2k from base
        c1 = flip(base, rng.sample(range(64), k))
        fps += [c1, flip(c1, rng.sample(range(64), k))]
    fps += [rng.getrandbits(64) for _ in range(random_rows)]
    fps += [None, None]
    return fps


def planted_corpus(seed: int, k: int, n: int = 400) -> tuple[list[int], list[int]]:
    """Rows (random, planted neighbours at 0..k+1 bits of the queries, duplicates,
    values >= 2**63, bit 0 and bit 63 flips) and the queries they were planted around."""
    def flip_low(value: int, positions: list[int]) -> int:  # 0 = least significant bit
        for p in positions:
            value ^= 1 << p
        return value

    rng = random.Random(seed)
    rows = [rng.getrandbits(64) for _ in range(n)]
    queries = [rng.getrandbits(64) for _ in range(12)] + [0, 2**64 - 1, 1 << 63]
    for q in queries:
        for d in range(k + 2):
            rows.append(flip_low(q, rng.sample(range(64), d)))
        rows.append(q)  # a second row with distance 0: equal fingerprints in two rows
        rows.append(flip_low(q, [0]))
        rows.append(flip_low(q, [63]))
    queries += rows[:3]  # some queries that are rows themselves
    rng.shuffle(rows)
    return rows, queries


def flip_each(fp: int, *positions: int) -> int:
    """flip with the positions as arguments."""
    return flip(fp, positions)


def adversarial_rows_around(queries: list[int], rng: random.Random) -> list[int]:
    """Neighbours of each query at distances 0..k+1, on bits 0 and 63, across and inside blocks."""
    out = []
    for q in queries:
        out += [q, q]  # distance 0, duplicated in two rows
        out += [flip_each(q, 0), flip_each(q, 63), flip_each(q, 0, 63)]
        out += [flip_each(q, 0, 13, 26), flip_each(q, 1, 2, 3), flip_each(q, 60, 61, 62), flip_each(q, 0, 20, 63)]  # k
        out += [flip_each(q, 0, 13, 26, 39), flip_each(q, 1, 2, 3, 4), flip_each(q, 0, 20, 40, 63)]  # k + 1
        out += [flip_each(q, *rng.sample(range(64), rng.randint(1, 5))) for _ in range(6)]
    return out


def extreme_queries(rng: random.Random) -> list[int]:
    return [
        0,
        MASK64,
        1 << 63,
        1,
        0x0123456789ABCDEF,
        rng.getrandbits(64) | 1 << 63,
        rng.getrandbits(64),
    ]


# -- the distances ---------------------------------------------------------------------------

def hamming(a: int, b: int) -> int:
    """Differing bits of two 64-bit fingerprints, signed (bigint) or unsigned alike."""
    return bin((a ^ b) & MASK64).count("1")


def sketch_distance(a: Sketch, b: Sketch) -> int:
    """Differing bits of two sketches (bytes, big-endian, or int)."""
    x = int.from_bytes(a, "big") if isinstance(a, bytes) else a
    y = int.from_bytes(b, "big") if isinstance(b, bytes) else b
    return bin(x ^ y).count("1")


def share_band(a: Sequence[int | None] | None, b: Sequence[int | None] | None) -> bool:
    """Two rows share a band key: the same non-NULL key in the same band."""
    if a is None or b is None:
        return False
    return any(x is not None and x == y for x, y in zip(a, b, strict=True))


# -- (a) pairs within k ----------------------------------------------------------------------

def brute_pairs(rows: Mapping[Key, int | None], k: int) -> dict[tuple[Key, Key], int]:
    """{(key_a, key_b): distance} for key_a < key_b and distance <= k."""
    found = {}
    items = sorted((key, fp) for key, fp in rows.items() if fp is not None)
    for (ka, fa), (kb, fb) in itertools.combinations(items, 2):
        d = hamming(fa, fb)
        if d <= k:
            found[(ka, kb)] = d
    return found


# -- (b) the sketch-confirmed decision ------------------------------------------------------

def brute_decision(rows: Mapping[Key, Doc], k: int, t: int,
                   bands: bool = True) -> dict[tuple[Key, Key], tuple[int, int]]:
    """{(key_a, key_b): (distance, sketch distance)} for key_a < key_b: within k bits or (with
    ``bands``) sharing a band key, and sketches within t. A row without a fingerprint or a
    sketch is nobody's duplicate."""
    found = {}
    items = sorted((key, doc) for key, doc in rows.items()
                   if doc[0] is not None and doc[1] is not None)
    for (ka, (fa, sa, ba)), (kb, (fb, sb, bb)) in itertools.combinations(items, 2):
        d, sd = hamming(fa, fb), sketch_distance(sa, sb)  # type: ignore[arg-type]
        if (d <= k or (bands and share_band(ba, bb))) and sd <= t:
            found[(ka, kb)] = (d, sd)
    return found


# -- (c) one query against the rows ---------------------------------------------------------

def brute_near(rows: Mapping[Key, int | None], q: int, k: int) -> list[Neighbor]:
    """The rows within k of q, nearest first (ties by key)."""
    found = [Neighbor(key, hamming(fp, q)) for key, fp in rows.items()
             if fp is not None and hamming(fp, q) <= k]
    return sorted(found, key=lambda n: (n.distance, n.id))


def brute_duplicates(rows: Mapping[Key, Doc], q: int, q_sketch: Sketch, k: int, t: int,
                     q_bands: Sequence[int | None] | None = None) -> list[Duplicate]:
    """The rows within k of q or (with ``q_bands``) sharing a band key with it, whose sketch is
    within t of q_sketch; by sketch distance, then distance, then key. Rows without a
    fingerprint or a sketch are never found."""
    found = []
    for key, (fp, sketch, row_bands) in rows.items():
        if fp is None or sketch is None:
            continue
        d, sd = hamming(fp, q), sketch_distance(sketch, q_sketch)
        if (d <= k or share_band(row_bands, q_bands)) and sd <= t:
            found.append(Duplicate(key, d, sd))
    return sorted(found, key=lambda x: (x.sketch_distance, x.distance, x.id))


def brute_near_ids(rows: Iterable[tuple[Any, int]], q: int, k: int) -> set[Any]:
    """The keys of the (key, fingerprint) rows within k of q."""
    return {n.id for n in brute_near(dict(rows), q, k)}


# -- (d) clusters over pairs ----------------------------------------------------------------

def components(keys: Iterable[Any], edges: Iterable[tuple[Any, Any]]) -> list[list[Any]]:
    """Connected components (each in key order, singletons included) of the graph on keys."""
    parent = {key: key for key in keys}

    def find(x: Any) -> Any:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[Any, list[Any]] = {}
    for key in parent:
        groups.setdefault(find(key), []).append(key)
    return [sorted(group) for group in groups.values()]


def representative_groups(order: Iterable[Any], edges: Iterable[tuple[Any, Any]]) -> list[list[Any]]:
    """Representative clustering: the keys in the given order, each joins the earliest
    representative it has an edge with, else becomes one. Each group starts with its
    representative (singletons included)."""
    linked = {frozenset(edge) for edge in edges}
    groups: list[list[Any]] = []
    for key in order:
        group = next((g for g in groups if frozenset((g[0], key)) in linked), None)
        if group is None:
            groups.append([key])
        else:
            group.append(key)
    return groups


def cluster_groups(method: str, order: Iterable[Any], edges: Iterable[tuple[Any, Any]]) -> list[list[Any]]:
    """The groups of ``method`` as simpg names it ("components" or "representative") over the
    keys, taken in ``order`` (the representative method's rank)."""
    order = list(order)
    if method == "components":
        return components(order, edges)
    assert method == "representative", method
    return representative_groups(order, edges)


def labelled(groups: Iterable[list[Any]]) -> dict[Any, tuple[Any, int]]:
    """{key: (first key of its group, group size)} for groups of two or more (the SQL reports' shape)."""
    return {key: (group[0], len(group)) for group in groups if len(group) > 1 for key in group}


def by_size(groups: Iterable[list[Any]]) -> list[list[Any]]:
    """The groups of two or more, each sorted, largest first (ties by smallest key)."""
    return sorted((sorted(g) for g in groups if len(g) > 1), key=lambda g: (-len(g), g[0]))


def brute_clusters(rows: Mapping[Key, int | None], k: int) -> dict[Key, tuple[Key, int]]:
    """{key: (smallest key of its cluster, cluster size)} for rows in clusters of 2 or more."""
    return labelled(components((key for key, fp in rows.items() if fp is not None), brute_pairs(rows, k)))


def brute_representatives(rows: Mapping[Key, int | None], k: int) -> dict[Key, tuple[Key, int]]:
    """{key: (its representative's key, cluster size)} for rows in clusters of 2 or more:
    rows in key order, each joins the earliest representative within k, else is one."""
    keys = sorted(key for key, fp in rows.items() if fp is not None)
    return labelled(representative_groups(keys, brute_pairs(rows, k)))


# -- adapters: numbered rows (a list, ids 1..n) -----------------------------------------------

def numbered(rows: Iterable[Any]) -> dict[int, Any]:
    return dict(enumerate(rows, start=1))


def brute_near_numbered(rows: list[int], q: int, k: int) -> list[Neighbor]:
    return brute_near(numbered(rows), q, k)


def brute_pairs_numbered(rows: list[int], k: int) -> set[Pair]:
    return {Pair(a, b, d) for (a, b), d in brute_pairs(numbered(rows), k).items()}


def brute_clusters_numbered(n_rows: int, pairs: Iterable[Pair]) -> list[list[int]]:
    """The clusters of ids 1..n_rows joined by pairs, largest first (ties by smallest id)."""
    return by_size(components(range(1, n_rows + 1), ((p.a, p.b) for p in pairs)))


def brute_representatives_numbered(rows: list[int], k: int) -> list[list[int]]:
    """Ids 1..n in order: each joins the earliest representative within k, else is one."""
    return by_size(representative_groups(range(1, len(rows) + 1), brute_pairs(numbered(rows), k)))


# -- adapters: numpy arrays of ids and uint64 fingerprints ------------------------------------

class Arrays(Protocol):
    ids: np.ndarray  # int64
    fps: np.ndarray  # uint64, fps[i] is the fingerprint of ids[i]


def brute_near_arrays(data: Arrays, q: int, k: int) -> list[Neighbor]:
    return brute_near(dict(zip(data.ids.tolist(), data.fps.tolist(), strict=True)), q, k)


def brute_pairs_arrays(data: Arrays, k: int) -> set[tuple[int, int, int]]:
    """{(id at i, id at j, distance)} for positions i < j within k.

    The one oracle that uses numpy: the shard corpora hold 6,000 rows (18 million pairs, about
    ten seconds a call in plain Python); it is still one popcount of each row against every
    later row, nothing cleverer.
    """
    ids, fps = data.ids, data.fps
    out = set()
    for i in range(len(fps) - 1):
        d = np.bitwise_count(fps[i + 1:] ^ fps[i])
        for j in np.nonzero(d <= k)[0]:
            out.add((int(ids[i]), int(ids[i + 1 + j]), int(d[j])))
    return out


# -- adapters: texts, decided the way simpg dedup decides --------------------------------------

def brute_text_pairs(texts: dict[str, object], k: int,
                     confirm: bool = True) -> dict[frozenset[str], tuple[int, int | None]]:
    """Brute force over every pair of texts: within k bits and, with ``confirm``, the decision
    of simpg dedup (within k or a shared band key, sketches within the limit)."""
    from simpg.fingerprint import MAX_SKETCH_DISTANCE, fingerprint, sketch_and_bands

    fps = {name: fingerprint(text) for name, text in texts.items()}  # type: ignore[arg-type]
    if not confirm:
        return {frozenset(pair): (d, None) for pair, d in brute_pairs(fps, k).items()}
    docs = {name: (fps[name], *sketch_and_bands(text)) for name, text in texts.items()}
    return {frozenset(pair): (d, sd)
            for pair, (d, sd) in brute_decision(docs, k, MAX_SKETCH_DISTANCE).items()}


def brute_text_clusters(texts: dict[str, object], k: int, confirm: bool = True) -> set[frozenset[str]]:
    """Connected components of the brute-force near-duplicate pairs of texts."""
    edges = (tuple(sorted(pair)) for pair in brute_text_pairs(texts, k, confirm))
    return {frozenset(g) for g in components(texts, edges) if len(g) > 1}  # type: ignore[arg-type]


# -- (e) partial duplicates: passages of token lists (issue 30) ---------------------------------
# Token lists are compared as lists of strings: how a text becomes tokens is simpg's business
# (tests compare that with the study's rule separately); these loops decide what two token
# lists share.

def brute_common_runs(a: Sequence[str], b: Sequence[str], min_length: int) -> list[tuple[int, int, int, int]]:
    """Every maximal run of equal tokens of at least ``min_length``: (a_start, a_end, b_start, b_end),
    ordered by a_start, then b_start.

    A run is maximal when it cannot be extended left or right; one starting at (i, j) starts
    where a[i - 1] != b[j - 1] (or at a text's start). Every diagonal counts on its own.
    """
    runs = []
    for i in range(len(a)):
        for j in range(len(b)):
            if a[i] != b[j] or (i > 0 and j > 0 and a[i - 1] == b[j - 1]):
                continue
            n = 0
            while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
                n += 1
            if n >= min_length:
                runs.append((i, i + n, j, j + n))
    return sorted(runs, key=lambda r: (r[0], r[2]))


def brute_shingle_set(tokens: Sequence[str], n: int = 3) -> set[tuple[str, ...]]:
    """The n-shingles of a token list; a list shorter than n has one shingle of all its tokens."""
    if not tokens:
        return set()
    if len(tokens) < n:
        return {tuple(tokens)}
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def brute_containment(a: Sequence[str], b: Sequence[str], n: int = 3) -> tuple[int, int, int]:
    """(|S(a)|, |S(b)|, |S(a) ∩ S(b)|) over n-shingle sets."""
    sa, sb = brute_shingle_set(a, n), brute_shingle_set(b, n)
    return len(sa), len(sb), len(sa & sb)


def brute_winnow(hashes: Sequence[int], window: int) -> set[int]:
    """Positions winnowing selects: in every window of ``window`` hashes (one window when fewer),
    the position of its minimum, the rightmost one of ties."""
    picked = set()
    for first in range(max(1, len(hashes) - window + 1)):
        inside = range(first, min(first + window, len(hashes)))
        if not inside:
            continue
        low = min(hashes[p] for p in inside)
        picked.add(max(p for p in inside if hashes[p] == low))
    return picked



def brute_weighted_winnow(hashes: Sequence[int], weights: Sequence[int], budget: int) -> set[int]:
    """Positions weighted winnowing selects: for every start, the window of the fewest hashes
    from it whose weights add up to ``budget`` (none if the rest of the text is lighter), the
    position of its minimum, the rightmost one of ties; a text lighter than ``budget`` is one window."""
    if not hashes:
        return set()
    if sum(weights) < budget:
        low = min(hashes)
        return {max(p for p in range(len(hashes)) if hashes[p] == low)}
    picked = set()
    for first in range(len(hashes)):
        total, end = 0, first
        while end < len(hashes) and total < budget:
            total += weights[end]
            end += 1
        if total < budget:
            break
        low = min(hashes[first:end])
        picked.add(max(p for p in range(first, end) if hashes[p] == low))
    return picked

# -- passage hashes: rows sharing stored values (the SQL of sql/functions/45_passages.sql) ------

HashArray = Sequence[int | None] | None  # a bigint[] as stored: NULL, empty, unsorted, repeated, NULL elements


def shared_values(a: HashArray, b: HashArray, skip: Iterable[int] = ()) -> int:
    """How many distinct non-NULL values two stored arrays have in common, values in skip left out."""
    left = {v for v in a or () if v is not None} - set(skip)
    return len(left & {v for v in b or () if v is not None})


def brute_passage_pairs(rows: Mapping[Key, HashArray], min_shared: int,
                        skip: Iterable[int] = ()) -> dict[tuple[Key, Key], int]:
    """{(key_a, key_b): shared} for key_a < key_b sharing at least min_shared distinct values
    (values in skip not counted)."""
    skipped = set(skip)
    found = {}
    for (ka, a), (kb, b) in itertools.combinations(sorted(rows.items()), 2):
        n = shared_values(a, b, skipped)
        if n >= min_shared:
            found[(ka, kb)] = n
    return found


def brute_passage_candidates(rows: Mapping[Key, HashArray], hashes: HashArray,
                             skip: Iterable[int] = ()) -> dict[Key, int]:
    """{key: shared} for every row sharing at least one value of hashes not in skip."""
    skipped = set(skip)
    return {key: n for key, stored in rows.items() if (n := shared_values(hashes, stored, skipped)) > 0}


def adversarial_hash_arrays(rng: random.Random, n: int) -> dict[int, list[int | None] | None]:
    """n stored arrays {1..n: array}: random small hashes (so rows share), the int64 extremes,
    NULL arrays, empty ones, NULL elements, repeats and unsorted orders, and one value (42) in
    most rows."""
    extremes = [-(1 << 63), (1 << 63) - 1, -1, 0, 1]
    rows: dict[int, list[int | None] | None] = {}
    for key in range(1, n + 1):
        kind = rng.random()
        if kind < 0.05:
            rows[key] = None
        elif kind < 0.1:
            rows[key] = []
        else:
            values: list[int | None] = [rng.randrange(-60, 60) for _ in range(rng.randrange(1, 12))]
            if rng.random() < 0.3:
                values.append(rng.choice(extremes))
            if rng.random() < 0.6:
                values.append(42)
            if rng.random() < 0.1:
                values.append(None)
            if rng.random() < 0.2:
                values += values[: rng.randrange(1, len(values) + 1)]  # repeats
            if rng.random() < 0.5:
                values = [v for v in sorted({v for v in values if v is not None})]  # as simpg stores them
            else:
                rng.shuffle(values)
            rows[key] = values
    return rows


def brute_shared_hashes(hashes: Sequence[Sequence[int]],
                        max_common: int | None = None) -> tuple[dict[tuple[int, int], int], dict[int, int]]:
    """Every pair of documents (i < j) sharing a hash, with the number they share, leaving out the
    hashes more than ``max_common`` documents hold; and those hashes with their document counts."""
    holders: dict[int, int] = {}
    for doc in hashes:
        for h in set(doc):
            holders[h] = holders.get(h, 0) + 1
    common = {h: n for h, n in holders.items() if max_common is not None and n > max_common}
    shared = {}
    for i in range(len(hashes)):
        for j in range(i + 1, len(hashes)):
            n = len((set(hashes[i]) & set(hashes[j])) - set(common))
            if n:
                shared[(i, j)] = n
    return shared, common


class BrutePassagePair(NamedTuple):
    longest: int  # tokens of the longest maximal common run of >= 5 tokens (0 for none)
    a_shingles: int
    b_shingles: int
    shared_shingles: int
    source: int
    rule: str


def brute_passage_pair(a: Sequence[str], b: Sequence[str], ia: int, ib: int,
                       rank: Sequence[Any] | None = None, k: int = 5) -> BrutePassagePair:
    """What documents ``ia`` and ``ib`` (token lists a and b) share, and which is the source: the
    earlier by rank; else the one holding the larger share of the other; else ``ia``."""
    runs = brute_common_runs(a, b, k)
    longest = max((r[1] - r[0] for r in runs), default=0)
    na, nb, shared = brute_containment(a, b)
    if rank is not None and rank[ia] != rank[ib]:
        source, rule = (ia if rank[ia] < rank[ib] else ib), "rank"
    elif shared * na != shared * nb:  # shared / nb (b in a) vs shared / na (a in b): cross-multiplied
        source, rule = (ia if na > nb else ib), "containment"
    else:
        source, rule = ia, "index"
    return BrutePassagePair(longest, na, nb, shared, source, rule)


def brute_copy_clusters(edges: Iterable[tuple[int, int, int]]) -> list[tuple[list[int], list[int]]]:
    """Clusters of "copied from" over (a, b, source) edges: connected groups, largest first (ties by
    first member), each with its sources (members that are the copy in no edge; when none, the
    members that are the source of the most edges), all sorted."""
    edges = list(edges)
    keys = sorted({x for a, b, _ in edges for x in (a, b)})
    copies = {b if s == a else a for a, b, s in edges}
    led = {x: sum(1 for _, _, s in edges if s == x) for x in keys}
    out = []
    for group in by_size(components(keys, [(a, b) for a, b, _ in edges])):
        sources = [x for x in group if x not in copies]
        if not sources:
            sources = [x for x in group if led[x] == max(led[y] for y in group)]
        out.append((group, sources))
    return out
