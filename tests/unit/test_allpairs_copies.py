"""allpairs.decide pairs one row per group of copies (same fingerprint, sketch and band keys)
and gives the copies its pairs and its cluster: the clusters and the pairs must be exactly
those of pairing every row, for both clustering methods, with and without sketches and band
keys (what simpg dedup, find-all and the handles' clusters() report)."""

from __future__ import annotations

import numpy as np
import pytest

from simpg import allpairs, bits
from tests import oracles

Bands = list[tuple[int, ...] | None]


def corpus(seed: int) -> tuple[np.ndarray, np.ndarray, list[bytes | None], Bands]:
    """Ids in shuffled order; fingerprints near each other in small families, many exact
    copies (same fingerprint and sketch), copies whose sketch differs, and rows without one."""
    rng = np.random.default_rng(seed)
    fps: list[int] = []
    sketches: list[bytes | None] = []
    bands: Bands = []
    for family in range(40):
        base = int(rng.integers(0, 2**64, dtype=np.uint64))
        sketch = rng.bytes(32)
        for _ in range(int(rng.integers(1, 6))):
            flip = 0 if rng.random() < 0.5 else 1 << int(rng.integers(64))
            if rng.random() < 0.15:  # a revision far from its family in bits: only its band key finds it
                flip = int(rng.integers(0, 2**64, dtype=np.uint64)) | 0xFF
            copies = int(rng.integers(1, 8))
            near = bytearray(sketch)
            if rng.random() < 0.3:  # a sketch a few bits away
                near[int(rng.integers(32))] ^= 1 << int(rng.integers(8))
            if rng.random() < 0.2:  # unrelated text under the same fingerprint
                near = bytearray(rng.bytes(32))
            # band keys: mostly the family's, sometimes one band shared with a far fingerprint, or none
            keys: tuple[int, ...] | None = (family, int(rng.integers(2**40)), -int(rng.integers(2**40)),
                                            int(rng.integers(3)))
            if rng.random() < 0.2:
                keys = None
            for _ in range(copies):
                fps.append(base ^ flip)
                sketches.append(None if rng.random() < 0.05 else bytes(near))
                bands.append(keys)
    fps.extend([0, 0, (1 << 64) - 1, (1 << 64) - 1, 1 << 63, 1])  # bits 0 and 63, negative int8
    sketches.extend([b"\x00" * 32] * 6)
    bands.extend([None] * 6)
    ids = rng.permutation(np.arange(1000, 1000 + len(fps), dtype=np.int64))
    return ids, np.array([bits.to_db(f) for f in fps], dtype=np.int64), sketches, bands


def brute_pairs(ids: np.ndarray, fps: np.ndarray, sketches: list[bytes | None] | None, k: int, t: int,
                bands: Bands | None = None) -> list[tuple[int, int, int, int | None]]:
    """Adapter: the oracle's pairs of the rows keyed by id, as sorted (id_a, id_b, distance,
    sketch distance or None): oracles.brute_decision with sketches, oracles.brute_pairs without."""
    keys, values = ids.tolist(), fps.tolist()
    if sketches is None:
        plain = oracles.brute_pairs(dict(zip(keys, values, strict=True)), k)
        return sorted((a, b, d, None) for (a, b), d in plain.items())
    docs = {key: (fp, sketches[n], None if bands is None else bands[n])
            for n, (key, fp) in enumerate(zip(keys, values, strict=True))}
    return sorted((a, b, d, sd) for (a, b), (d, sd) in oracles.brute_decision(docs, k, t).items())


def brute_clusters(ids: np.ndarray, pairs: list[tuple[int, int, int, int | None]], method: str) -> list[list[int]]:
    """Adapter: the oracle's clusters over the pairs, ranked by id, largest first."""
    return oracles.by_size(oracles.cluster_groups(method, sorted(ids.tolist()), ((p[0], p[1]) for p in pairs)))


def decided(ids: np.ndarray, fps: np.ndarray, sketches: list[bytes | None] | None, k: int, t: int,
            bands: Bands | None = None) -> tuple[allpairs.Decided, np.ndarray, list[tuple[int, int, int, int | None]]]:
    """allpairs.decide over the rows with a sketch (all rows without sketches), and its pairs as ids."""
    rows = np.arange(len(ids)) if sketches is None else np.flatnonzero([s is not None for s in sketches])
    made = allpairs.decide(fps[rows], k, sketches=None if sketches is None else [sketches[r] for r in rows],
                           max_sketch_distance=t, band_keys=None if bands is None else [bands[r] for r in rows])
    pairs = []
    for i, j, d, sd in made.pair_chunks():
        sds = [None] * len(i) if sd is None else sd.tolist()
        pairs += [(min(a, b), max(a, b), x, s) for a, b, x, s in
                  zip(ids[rows][i].tolist(), ids[rows][j].tolist(), d.tolist(), sds, strict=True)]
    return made, ids[rows], sorted(pairs)


def as_ids(made: allpairs.Decided, ids: np.ndarray, method: str) -> list[list[int]]:
    found = [sorted(ids[c].tolist()) for c in made.clusters(method, rank=ids)]
    return sorted(found, key=lambda g: (-len(g), g[0]))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("confirm", "with_bands"), [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize("method", ["representative", "components"])
def test_copies_give_the_clusters_and_pairs_of_pairing_every_row(seed, confirm, with_bands, method):
    ids, fps, sketches, bands = corpus(seed)
    k, t = 3, 4
    stored = sketches if confirm else None
    keys = bands if with_bands else None
    want = brute_pairs(ids, fps, stored, k, t, keys)
    made, kept, pairs = decided(ids, fps, stored, k, t, keys)
    assert made.keys < made.n - 20  # the corpus has copies to collapse
    assert len(made.key_i) < len(want)
    if with_bands:
        assert any(p[2] > k for p in want)  # pairs that only a shared band key finds
    assert pairs == want
    assert as_ids(made, kept, method) == brute_clusters(ids, want, method)


def test_copies_without_sketches_are_nobodys_duplicates():
    ids = np.array([5, 3, 9, 7], dtype=np.int64)
    fps = np.array([42, 42, 42, 42], dtype=np.int64)
    made, kept, pairs = decided(ids, fps, [None, None, b"\x01" * 32, b"\x01" * 32], 3, 4)
    assert made.keys == 1 and len(made.key_i) == 0
    assert as_ids(made, kept, "representative") == [[7, 9]]
    assert pairs == [(7, 9, 0, 0)]


def test_one_row_and_none():
    for n in (0, 1):
        made = allpairs.decide(np.zeros(n, dtype=np.uint64), 3, sketches=[b"\x00" * 32] * n)
        assert made.clusters() == [] and list(made.pair_chunks()) == []
