"""The in-memory all-pairs engine against brute force (Python popcount), on random and adversarial data."""

from __future__ import annotations

import itertools
import random
import struct

import numpy as np
import pytest

from simpg import allpairs, bits
from simpg.exc import InvalidFingerprint, InvalidLayout
from simpg.layout import Layout
from simpg.psycopg.ranges import RangeMaker
from tests import oracles
from tests.layouts import mask_family_is_exact

LAYOUTS = [Layout(3, (4,)), Layout(3, (5,)), Layout(3, (4, 4)), Layout(4, (6,)), Layout(1, (2,)), Layout(0, (1,))]


def flip(value: int, positions: list[int]) -> int:
    for p in positions:
        value ^= 1 << p
    return value


def adversarial(seed: int, n: int = 80, max_k: int = 4) -> list[int]:
    """Random fingerprints with planted neighbours at 0..max_k+1 bits, duplicates,
    values >= 2**63 (negative in PostgreSQL), and flips of bit 0 and bit 63."""
    rng = random.Random(seed)
    base = [rng.getrandbits(64) for _ in range(n)]
    out = list(base)
    for i, b in enumerate(base[: n // 2]):
        d = i % (max_k + 2)
        out.append(flip(b, rng.sample(range(64), d)))
    out += base[:5]  # the same fingerprint in two rows
    out += [0, 1, 1 << 63, (1 << 63) | 1, 2**64 - 1, 2**64 - 2, 1 << 62, 0]
    out += [flip(base[0], [0]), flip(base[1], [63]), flip(base[2], [0, 63]), flip(base[3], [0, 31, 63])]
    rng.shuffle(out)
    return out


def brute_pairs(fps: list[int], k: int) -> set[tuple[int, int, int]]:
    """Adapter: oracles.brute_pairs over the rows by position, as (i, j, distance)."""
    return {(i, j, d) for (i, j), d in oracles.brute_pairs(dict(enumerate(fps)), k).items()}


def brute_clusters(n: int, edges: set[tuple[int, int, int]]) -> set[frozenset[int]]:
    """Adapter: oracles.components of rows 0..n-1 over the edges, groups of two or more."""
    return {frozenset(g) for g in oracles.components(range(n), ((i, j) for i, j, _ in edges)) if len(g) > 1}


def engine_pairs(fps: list[int], k: int, layout: Layout | None) -> list[tuple[int, int, int]]:
    return [(int(i), int(j), int(d)) for a, b, c in allpairs.pair_chunks(fps, k, layout)
            for i, j, d in zip(a, b, c, strict=True)]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pairs_equal_brute_force_for_every_k(layout: Layout, seed: int) -> None:
    fps = adversarial(seed, max_k=layout.k)
    for k in range(layout.k + 1):
        got = engine_pairs(fps, k, layout)
        assert len(got) == len(set(got)), "a pair was reported twice"
        assert all(i < j for i, j, _ in got)
        assert set(got) == brute_pairs(fps, k)


def test_pairs_with_the_default_layout_and_many_duplicates() -> None:
    rng = random.Random(7)
    base = [rng.getrandbits(64) for _ in range(30)]
    fps = [base[i % 30] for i in range(300)] + [flip(base[0], [5])] * 20
    got = engine_pairs(fps, 3, None)
    assert len(got) == len(set(got))
    assert set(got) == brute_pairs(fps, 3)


def test_pairs_accept_signed_int64_arrays() -> None:
    fps = adversarial(4)
    signed = np.array([bits.to_db(f) for f in fps], dtype=np.int64)
    assert set(engine_pairs(signed, 3, Layout(3, (5,)))) == brute_pairs(fps, 3)  # type: ignore[arg-type]


def test_larger_random_set_with_planted_pairs() -> None:
    rng = np.random.default_rng(11)
    fps = rng.integers(0, 2**64, size=20_000, dtype=np.uint64)
    planted = []
    for d in range(5):
        for _ in range(20):
            i = int(rng.integers(len(fps)))
            v = flip(int(fps[i]), rng.choice(64, d, replace=False).tolist())
            planted.append((i, v, d))
    all_fps = np.concatenate([fps, np.array([v for _, v, _ in planted], dtype=np.uint64)])
    got = {(int(i), int(j)) for a, b, _ in allpairs.pair_chunks(all_fps, 3) for i, j in zip(a, b, strict=True)}
    for n, (i, _, d) in enumerate(planted):
        assert ((i, len(fps) + n) in got) == (d <= 3)
    # every reported pair is within 3 bits
    values = [int(x) for x in all_fps]
    assert all(bits.hamming(values[i], values[j]) <= 3 for i, j in got)


def low_entropy(kind: str, n: int, seed: int) -> list[int]:
    """Fingerprints with few random bits, and neighbours within 0 to 4 of those bits."""
    rng = random.Random(seed)
    if kind == "32-bit values":
        free, base = list(range(32)), 0
    elif kind == "small negative":
        free, base = list(range(20)), bits.MASK  # -1 - (20 random bits) as bigint
    else:  # a template: bits 0 and 63 and 14 others vary
        free, base = [0, 63, *rng.sample(range(1, 63), 14)], rng.getrandbits(64)
    fps = []
    for _ in range(n):
        fp = base
        for b in free:
            if rng.random() < 0.5:
                fp ^= 1 << b
        fps.append(fp)
    for i in range(n // 5):
        fp = fps[i]
        for b in rng.sample(free, rng.randint(0, 4)):
            fp ^= 1 << b
        fps.append(fp)
    return fps


@pytest.mark.parametrize("kind", ["32-bit values", "small negative", "template"])
def test_pairs_on_low_entropy_fingerprints_fit_the_data_and_stay_exact(kind: str) -> None:
    """Issue 13 item 9: nearly constant prefixes made every pass compare every pair."""
    fps = low_entropy(kind, 1500, seed=len(kind))
    tables = allpairs.pair_tables(fps, 3)
    layout = allpairs.pairs_layout(3, len(fps))
    masks = [t.source_mask for t in tables]
    assert masks != allpairs.prefix_masks(layout)  # fitted to the data
    assert mask_family_is_exact(masks, 3)
    for k in (0, 2, 3):
        got = engine_pairs(fps, k, None)
        assert len(got) == len(set(got)), "a pair was reported twice"
        assert set(got) == brute_pairs(fps, k)
    assert {frozenset(map(int, c)) for c in allpairs.clusters(fps, 3, method="components")} == brute_clusters(
        len(fps), brute_pairs(fps, 3))


def test_uniform_fingerprints_keep_the_layout() -> None:
    fps = np.random.default_rng(5).integers(0, 2**64, size=5000, dtype=np.uint64)
    tables = allpairs.pair_tables(fps, 3)
    assert [t.source_mask for t in tables] == allpairs.prefix_masks(allpairs.pairs_layout(3, 5000))


@pytest.mark.parametrize("mask", [0xFFFF, 1 << 63 | 1, 0x5555555555555555, bits.MASK, 0xF0F0 << 40])
def test_mask_tables_keep_every_distance_and_share_prefixes_on_the_mask(mask: int) -> None:
    table = allpairs._mask_table(mask)
    rng = np.random.default_rng(mask % 1000)
    fps = rng.integers(0, 2**64, size=300, dtype=np.uint64)
    perm = allpairs._permute(fps, table)
    # a bijection of bits: distances are kept
    d_orig = np.bitwise_count(fps[:, None] ^ fps[None, :])
    d_perm = np.bitwise_count(perm[:, None] ^ perm[None, :])
    assert np.array_equal(d_orig, d_perm)
    # the prefix is exactly the masked bits
    shift = np.uint64(64 - table.prefix_bits)
    same_prefix = (perm[:, None] >> shift) == (perm[None, :] >> shift)
    same_mask = ((fps[:, None] ^ fps[None, :]) & np.uint64(mask)) == 0
    assert np.array_equal(same_prefix, same_mask)


def test_segment_masks_refuse_bad_arguments() -> None:
    with pytest.raises(InvalidLayout, match="k=3, s=3"):
        allpairs.segment_masks(3, 3, [1.0] * 64)
    with pytest.raises(InvalidLayout, match="63 weights"):
        allpairs.segment_masks(1, 3, [1.0] * 63)


def test_k_above_the_layout_is_an_error() -> None:
    with pytest.raises(InvalidLayout, match="k=4 is above the radius k=3"):
        list(allpairs.pair_chunks([1, 2], 4, Layout(3, (5,))))
    with pytest.raises(InvalidLayout, match="non-negative"):
        list(allpairs.pair_chunks([1, 2], -1, Layout(3, (5,))))


@pytest.mark.parametrize("bad", [-1, 2**64, None, "12", 1.5, True])
def test_bad_fingerprints_are_named(bad: object) -> None:
    with pytest.raises(InvalidFingerprint, match="expected 64-bit fingerprint"):
        list(allpairs.pair_chunks([1, bad], 3))


def test_bad_arrays_are_refused() -> None:
    with pytest.raises(InvalidFingerprint, match="float64"):
        allpairs.as_fingerprints(np.zeros(3))
    with pytest.raises(InvalidFingerprint, match="1-D"):
        allpairs.as_fingerprints(np.zeros((2, 2), dtype=np.uint64))


def test_empty_and_single_inputs() -> None:
    assert list(allpairs.pair_chunks([], 3)) == []
    assert list(allpairs.pair_chunks([5], 3)) == []
    assert allpairs.clusters([], 3) == []
    assert allpairs.clusters([5], 3) == []


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_permute_matches_layout(layout: Layout) -> None:
    fps = adversarial(5)
    arr = np.array(fps, dtype=np.uint64)
    for t in range(layout.tables):
        got = allpairs.permute(arr, layout, t).view(np.int64).tolist()
        assert got == [layout.permute(f, t) for f in fps]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_prefix_masks_decide_shared_prefixes(layout: Layout) -> None:
    fps = adversarial(6)
    masks = allpairs.prefix_masks(layout)
    for a, b in itertools.pairwise(fps):
        for t in range(layout.tables):
            same = layout.prefix_range(a, t) == layout.prefix_range(b, t)
            assert same == ((a ^ b) & masks[t] == 0)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_range_maker_matches_layout(layout: Layout) -> None:
    fps = adversarial(8)
    maker = RangeMaker(layout)
    arrays = maker.arrays(np.array(fps, dtype=np.uint64))
    for n, fp in enumerate(fps):
        expected = [x for r in layout.prefix_ranges(fp) for x in r]
        assert maker.flat(fp) == expected
        assert [int(a[n]) for a in arrays] == expected
        # what near sends: a binary bigint[] of each table's lo
        payload = maker.lows_array(fp).payload
        ndim, nulls, oid, length, lower = struct.unpack_from(">iiiii", payload)
        items = struct.unpack_from(">" + "iq" * length, payload, 20)
        assert (ndim, nulls, oid, length, lower) == (1, 0, 20, layout.tables, 1)
        assert len(payload) == 20 + 12 * length
        assert items[0::2] == (8,) * length and list(items[1::2]) == expected[0::2]


def test_component_labels_on_chains_and_stars() -> None:
    rng = random.Random(3)
    n = 500
    # a long chain in shuffled order (worst case for naive label propagation), stars, pairs
    order = list(range(200))
    rng.shuffle(order)
    edges = list(itertools.pairwise(order))
    edges += [(250, x) for x in range(251, 300)]
    edges += [(x, x + 1) for x in range(300, 400, 2)]
    rng.shuffle(edges)
    i = np.array([e[0] for e in edges])
    j = np.array([e[1] for e in edges])
    labels = allpairs.component_labels(n, i, j)
    expected = brute_clusters(n, {(a, b, 0) for a, b in edges})
    got: dict[int, set[int]] = {}
    for node, label in enumerate(labels.tolist()):
        got.setdefault(label, set()).add(node)
    assert {frozenset(g) for g in got.values() if len(g) > 1} == expected
    assert all(labels[x] == min(g) for g in expected for x in g)


@pytest.mark.parametrize("seed", [1, 2])
def test_clusters_equal_brute_force(seed: int) -> None:
    fps = adversarial(seed)
    for k in range(4):
        got = {frozenset(int(x) for x in c) for c in allpairs.clusters(fps, k, method="components")}
        assert got == brute_clusters(len(fps), brute_pairs(fps, k))


def brute_representatives(fps: list[int], k: int, rank: list[int]) -> set[frozenset[int]]:
    """Adapter: oracles.representative_groups of the rows by (rank, position) over the pairs within k."""
    order = sorted(range(len(fps)), key=lambda r: (rank[r], r))
    edges = oracles.brute_pairs(dict(enumerate(fps)), k)
    return {frozenset(g) for g in oracles.representative_groups(order, edges) if len(g) > 1}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_representative_clusters_equal_brute_force(seed: int) -> None:
    fps = adversarial(seed)
    rng = random.Random(seed)
    for rank in (list(range(len(fps))), [rng.randrange(50) for _ in fps]):  # ties: row order
        for k in range(4):
            got = allpairs.clusters(fps, k, rank=rank)
            assert {frozenset(int(x) for x in c) for c in got} == brute_representatives(fps, k, rank)
            for c in got:  # every member is a near-duplicate of the earliest row
                rep = min((int(x) for x in c), key=lambda r: (rank[r], r))
                assert all(bits.hamming(fps[rep], fps[int(x)]) <= k for x in c)


def test_a_chain_is_cut_around_representatives_not_joined() -> None:
    """Each link is 2 bits from the last: components join all 10 rows (ends 18 bits apart),
    representatives keep every member within 2 bits of its cluster's first row."""
    chain = [0]
    for b in range(9):
        chain.append(chain[-1] ^ (0b11 << (2 * b)))
    assert [len(c) for c in allpairs.clusters(chain, 2, method="components")] == [10]
    groups = allpairs.clusters(chain, 2)
    assert sorted(sorted(int(x) for x in c) for c in groups) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    # a later arrival order makes other representatives, still within 2 bits each
    reverse = allpairs.clusters(chain, 2, rank=list(range(10, 0, -1)))
    assert sorted(sorted(int(x) for x in c) for c in reverse) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_unknown_cluster_method_is_named() -> None:
    with pytest.raises(InvalidLayout, match="cluster method must be one of representative, components, got 'x'"):
        allpairs.clusters([1, 2], 1, method="x")


def test_clusters_are_ordered_largest_first() -> None:
    fps = [0, 1, 3, 2**40, 2**40 + 1, 7]
    groups = allpairs.clusters(fps, 1)
    assert [len(g) for g in groups] == sorted((len(g) for g in groups), reverse=True)


@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_pairs_layout_has_the_radius(k: int) -> None:
    for rows in (0, 10, 10**6, 10**8):
        assert allpairs.pairs_layout(k, rows).k == k


# -- band keys as a second candidate source (issue 28) -------------------------------------


def banded_rows(seed: int, n: int = 160) -> tuple[list[int], list[bytes], list[tuple[int, ...] | None]]:
    """Fingerprints near and far, sketches near and far, band keys shared in one band, several, all,
    none (None), keys at -2**63 and 2**63 - 1, a large group sharing one key, equal rows."""
    rng = random.Random(seed)
    fps = adversarial(seed, n // 2)[:n]
    sketch_centres = [rng.getrandbits(256) for _ in range(6)]
    sketches, keys = [], []
    for i in range(len(fps)):
        s = rng.choice(sketch_centres)
        for b in rng.sample(range(256), rng.choice([0, 3, 20, 36, 37, 60])):
            s ^= 1 << b
        sketches.append(s.to_bytes(32, "big"))
        kind = rng.random()
        if kind < 0.15:
            keys.append(None)
        elif kind < 0.35:
            keys.append((7, -(2**63), 2**63 - 1, i))  # one large group per shared band
        else:
            keys.append(tuple(rng.choice([rng.randrange(4), rng.getrandbits(63)]) for _ in range(4)))
    fps += fps[:3]  # equal rows: equal everything
    sketches += sketches[:3]
    keys += keys[:3]
    return fps, sketches, keys


def brute_decision(fps: list[int], sketches: list[bytes], keys: list[tuple[int, ...] | None], k: int, t: int,
                   ) -> dict[tuple[int, int], tuple[int, int]]:
    """Adapter: oracles.brute_decision over the rows by position."""
    return oracles.brute_decision(dict(enumerate(zip(fps, sketches, keys, strict=True))), k, t)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("k", [0, 3])
def test_confirmed_pairs_with_bands_equal_brute_force(seed: int, k: int) -> None:
    fps, sketches, keys = banded_rows(seed)
    got: dict[tuple[int, int], tuple[int, int]] = {}
    for i, j, d, sd in allpairs.confirmed_pair_chunks(fps, sketches, k, 36, band_keys=keys):
        for pair in zip(i.tolist(), j.tolist(), d.tolist(), sd.tolist(), strict=True):
            assert pair[:2] not in got, f"pair {pair[:2]} reported twice"
            got[pair[:2]] = pair[2:]
    want = brute_decision(fps, sketches, keys, k, 36)
    assert got == want
    assert any(d > k for d, _ in want.values())  # pairs only a band key finds
    # the band pairs alone: those beyond k
    alone = {(a, b) for i, j, _, _ in allpairs.band_pair_chunks(fps, sketches, keys, k, 36)
             for a, b in zip(i.tolist(), j.tolist(), strict=True)}
    assert alone == {p for p, (d, _) in want.items() if d > k}
    # the same keys as an (n, 4) array and a mask
    mask = np.array([kk is not None for kk in keys])
    array = np.array([kk or (0, 0, 0, 0) for kk in keys], dtype=np.int64)
    again = {(a, b) for i, j, _, _ in allpairs.confirmed_pair_chunks(fps, sketches, k, 36, band_keys=(array, mask))
             for a, b in zip(i.tolist(), j.tolist(), strict=True)}
    assert again == set(want)


@pytest.mark.parametrize("method", allpairs.CLUSTER_METHODS)
def test_clusters_with_bands_are_made_of_the_decided_pairs(method: str) -> None:
    fps, sketches, keys = banded_rows(4)
    want = brute_decision(fps, sketches, keys, 3, 36)
    i = np.array([p[0] for p in want], dtype=np.int64)
    j = np.array([p[1] for p in want], dtype=np.int64)
    labels = (allpairs.component_labels(len(fps), i, j) if method == "components"
              else allpairs.representative_labels(len(fps), i, j))
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(row)
    expected = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g[0]))
    got = allpairs.clusters(fps, 3, sketches=sketches, max_sketch_distance=36, band_keys=keys, method=method)
    assert [c.tolist() for c in got] == expected


def test_bad_band_keys_are_named() -> None:
    fps, sketches = [1, 2], [bytes(32), bytes(32)]
    with pytest.raises(InvalidFingerprint, match=r"expected 4 signed 64-bit band keys or None, got \(1, 2\)"):
        list(allpairs.confirmed_pair_chunks(fps, sketches, 3, band_keys=[(1, 2), None]))
    with pytest.raises(InvalidFingerprint, match="got 2\\*\\*63|got \\(9223372036854775808"):
        list(allpairs.confirmed_pair_chunks(fps, sketches, 3, band_keys=[(2**63, 0, 0, 0), None]))
    with pytest.raises(InvalidFingerprint, match="expected band keys for each of 2 rows, got 1"):
        list(allpairs.confirmed_pair_chunks(fps, sketches, 3, band_keys=[None]))
    with pytest.raises(InvalidFingerprint, match="band keys are candidates only with sketches"):
        allpairs.clusters(fps, 3, band_keys=[None, None])
