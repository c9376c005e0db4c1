"""The brute-force reference answers the suite compares simpg with, and the adversarial inputs
they are compared on.

Every oracle is a plain popcount over all rows or all pairs (and a union-find of its own for
clusters): slow, obviously right, and written once. The variants differ in the input they
take, as their names say:

- keyed: ``rows`` is ``{key: fingerprint or None}`` (None = NULL, skipped);
- numbered: ``rows`` is a list whose ids are 1..n in order (a table loaded with ``enumerate``);
- arrays: an object with numpy ``ids`` and ``fps`` (uint64), vectorised for the large shard corpora;
- text: documents, fingerprinted and sketched here the way ``simpg dedup`` decides.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Any, Protocol

import numpy as np

from simpg import bits
from simpg.layout import block_widths
from simpg.psycopg import Neighbor, Pair

Key = Hashable


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
    bases = [0, bits.MASK, 1 << 63, (1 << 63) - 1, 0x5555555555555555] + [
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
        bits.MASK,
        1 << 63,
        1,
        0x0123456789ABCDEF,
        rng.getrandbits(64) | 1 << 63,
        rng.getrandbits(64),
    ]


def brute_near_ids(rows: Iterable[tuple[Any, int]], q: int, k: int) -> set[Any]:
    """The keys of the (key, fingerprint) rows within k of q."""
    return {n.id for n in brute_near(dict(rows), q, k)}


# -- keyed rows: {key: fingerprint or None} -------------------------------------------------

def brute_near(rows: dict[Any, int | None], q: int, k: int) -> list[Neighbor]:
    """The rows within k of q, nearest first (ties by key)."""
    found = [Neighbor(key, bits.hamming(fp, q)) for key, fp in rows.items()
             if fp is not None and bits.hamming(fp, q) <= k]
    return sorted(found, key=lambda n: (n.distance, n.id))


def brute_pairs(rows: dict[Key, int | None], k: int) -> dict[tuple[Key, Key], int]:
    """{(key_a, key_b): distance} for key_a < key_b and distance <= k."""
    found = {}
    items = sorted((key, fp) for key, fp in rows.items() if fp is not None)  # type: ignore[type-var]
    for (ka, fa), (kb, fb) in itertools.combinations(items, 2):
        d = bits.hamming(fa, fb)
        if d <= k:
            found[(ka, kb)] = d
    return found


def components(keys: Iterable[Any], edges: Iterable[tuple[Any, Any]]) -> list[list[Any]]:
    """Connected components (each in key order) of the graph on keys with these edges."""
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


def brute_clusters(rows: dict[Key, int | None], k: int) -> dict[Key, tuple[Key, int]]:
    """{key: (smallest key of its cluster, cluster size)} for rows in clusters of 2 or more."""
    groups = components((key for key, fp in rows.items() if fp is not None), brute_pairs(rows, k))
    return {key: (group[0], len(group)) for group in groups if len(group) > 1 for key in group}


def brute_representatives(rows: dict[Key, int | None], k: int) -> dict[Key, tuple[Key, int]]:
    """{key: (its representative's key, cluster size)} for rows in clusters of 2 or more:
    rows in key order, each joins the earliest representative within k, else is one."""
    reps: list[Key] = []
    label: dict[Key, Key] = {}
    for key in sorted(key for key, fp in rows.items() if fp is not None):  # type: ignore[type-var]
        fp = rows[key]
        rep = next((r for r in reps if bits.hamming(rows[r], fp) <= k), None)  # type: ignore[arg-type]
        if rep is None:
            reps.append(key)
            rep = key
        label[key] = rep
    size = Counter(label.values())
    return {key: (rep, size[rep]) for key, rep in label.items() if size[rep] > 1}


# -- numbered rows: a list, ids 1..n ---------------------------------------------------------

def numbered(rows: list[int]) -> dict[int, int | None]:
    return dict(enumerate(rows, start=1))


def brute_near_numbered(rows: list[int], q: int, k: int) -> list[Neighbor]:
    return brute_near(numbered(rows), q, k)


def brute_pairs_numbered(rows: list[int], k: int) -> set[Pair]:
    return {Pair(a, b, d) for (a, b), d in brute_pairs(numbered(rows), k).items()}


def brute_clusters_numbered(n_rows: int, pairs: Iterable[Pair]) -> list[list[int]]:
    """The clusters of ids 1..n_rows joined by pairs, largest first (ties by smallest id)."""
    groups = components(range(1, n_rows + 1), ((p.a, p.b) for p in pairs))
    return sorted((g for g in groups if len(g) > 1), key=lambda g: (-len(g), g[0]))


def brute_representatives_numbered(rows: list[int], k: int) -> list[list[int]]:
    """Ids 1..n in order: each joins the earliest representative within k, else is one."""
    groups: dict[int, list[int]] = {}
    for id_, (rep, _) in sorted(brute_representatives(numbered(rows), k).items()):
        groups.setdefault(rep, []).append(id_)  # type: ignore[arg-type]
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


# -- numpy arrays: ids and uint64 fingerprints -------------------------------------------------

class Arrays(Protocol):
    ids: np.ndarray  # int64
    fps: np.ndarray  # uint64, fps[i] is the fingerprint of ids[i]


def brute_near_arrays(data: Arrays, q: int, k: int) -> list[Neighbor]:
    ids, fps = data.ids, data.fps
    d = np.bitwise_count(fps ^ np.uint64(q)).astype(np.int64)
    hit = np.nonzero(d <= k)[0]
    return sorted((Neighbor(int(ids[i]), int(d[i])) for i in hit), key=lambda n: (n.distance, n.id))


def brute_pairs_arrays(data: Arrays, k: int) -> set[tuple[int, int, int]]:
    """{(id at i, id at j, distance)} for positions i < j within k."""
    ids, fps = data.ids, data.fps
    out = set()
    for i in range(len(fps) - 1):
        d = np.bitwise_count(fps[i + 1:] ^ fps[i])
        for j in np.nonzero(d <= k)[0]:
            out.add((int(ids[i]), int(ids[i + 1 + j]), int(d[j])))
    return out


# -- texts: what simpg dedup counts as a near-duplicate ----------------------------------------

def brute_text_pairs(texts: dict[str, object], k: int,
                     confirm: bool = True) -> dict[frozenset[str], tuple[int, int | None]]:
    """Brute force over every pair: within k bits and, with ``confirm``, sketches within the limit.

    With ``confirm``, a pair sharing a band key is a candidate too, however far apart its
    fingerprints (the decision of simpg dedup, tests/integration/test_decision_paths.py).
    """
    from simpg.fingerprint import MAX_SKETCH_DISTANCE, fingerprint, sketch_and_bands, sketch_distance

    fps = {name: fingerprint(text) for name, text in texts.items()}  # type: ignore[arg-type]
    made = {name: sketch_and_bands(text) for name, text in texts.items()}  # type: ignore[arg-type]
    out: dict[frozenset[str], tuple[int, int | None]] = {}
    for a, b in itertools.combinations(sorted(texts), 2):
        (sa, ba), (sb, bb) = made[a], made[b]
        d, sd = bits.hamming(fps[a], fps[b]), sketch_distance(sa, sb)
        shared = ba is not None and bb is not None and any(x == y for x, y in zip(ba, bb, strict=True))
        if (d <= k or (confirm and shared)) and (not confirm or sd <= MAX_SKETCH_DISTANCE):
            out[frozenset((a, b))] = (d, sd if confirm else None)
    return out


def brute_text_clusters(texts: dict[str, object], k: int, confirm: bool = True) -> set[frozenset[str]]:
    """Connected components of the brute-force near-duplicate pairs of texts."""
    edges = (tuple(sorted(pair)) for pair in brute_text_pairs(texts, k, confirm))
    return {frozenset(g) for g in components(texts, edges) if len(g) > 1}  # type: ignore[arg-type]
