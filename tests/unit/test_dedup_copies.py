"""simpg dedup pairs one row per group of copies (same fingerprint, same sketch) and gives
the copies its cluster: the clusters and the listed pairs must be exactly those of
pairing every row, for both clustering methods, with and without sketches."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from simpg import allpairs, bits, dedup
from simpg.fingerprint.minhash import sketch_distance


def corpus(seed: int) -> tuple[np.ndarray, np.ndarray, list[bytes | None]]:
    """Ids in shuffled order; fingerprints near each other in small families, many exact
    copies (same fingerprint and sketch), copies whose sketch differs, and rows without one."""
    rng = np.random.default_rng(seed)
    fps: list[int] = []
    sketches: list[bytes | None] = []
    for _ in range(40):
        base = int(rng.integers(0, 2**64, dtype=np.uint64))
        sketch = rng.bytes(32)
        for _ in range(int(rng.integers(1, 6))):
            flip = 0 if rng.random() < 0.5 else 1 << int(rng.integers(64))
            copies = int(rng.integers(1, 8))
            near = bytearray(sketch)
            if rng.random() < 0.3:  # a sketch a few bits away
                near[int(rng.integers(32))] ^= 1 << int(rng.integers(8))
            if rng.random() < 0.2:  # unrelated text under the same fingerprint
                near = bytearray(rng.bytes(32))
            for _ in range(copies):
                fps.append(base ^ flip)
                sketches.append(None if rng.random() < 0.05 else bytes(near))
    fps.extend([0, 0, (1 << 64) - 1, (1 << 64) - 1, 1 << 63, 1])  # bits 0 and 63, negative int8
    sketches.extend([b"\x00" * 32] * 6)
    ids = rng.permutation(np.arange(1000, 1000 + len(fps), dtype=np.int64))
    return ids, np.array([bits.to_db(f) for f in fps], dtype=np.int64), sketches


def brute_pairs(ids: np.ndarray, fps: np.ndarray, sketches: list[bytes | None] | None, k: int, t: int,
                ) -> list[tuple[int, int, int, int | None]]:
    out = []
    for a, b in itertools.combinations(range(len(ids)), 2):
        d = bits.hamming(bits.from_db(int(fps[a])), bits.from_db(int(fps[b])))
        if d > k:
            continue
        if sketches is None:
            sd = None
        else:
            if sketches[a] is None or sketches[b] is None:
                continue
            sd = sketch_distance(sketches[a], sketches[b])
            if sd > t:
                continue
        x, y = sorted((int(ids[a]), int(ids[b])))
        out.append((x, y, d, sd))
    return sorted(out)


def brute_clusters(ids: np.ndarray, pairs: list[tuple[int, int, int, int | None]], method: str) -> list[list[int]]:
    order = np.sort(ids)
    i = np.searchsorted(order, [p[0] for p in pairs])
    j = np.searchsorted(order, [p[1] for p in pairs])
    labels = (allpairs.component_labels(len(order), i, j) if method == "components"
              else allpairs.representative_labels(len(order), i, j))
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(int(order[row]))
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g[0]))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("confirm", [True, False])
@pytest.mark.parametrize("method", ["representative", "components"])
def test_copies_give_the_clusters_and_pairs_of_pairing_every_row(seed, confirm, method):
    ids, fps, sketches = corpus(seed)
    k, t = 3, 4
    stored = sketches if confirm else None
    want = brute_pairs(ids, fps, stored, k, t)
    decided, copies = dedup._decide(ids, fps, stored, k, t)
    assert copies and max(len(m) for m in copies.values()) >= 3  # the corpus has copies to collapse
    assert len(decided) < len(want)
    assert dedup._all_pairs(decided, copies, confirm) == want
    assert dedup._clusters(ids, decided, method, copies) == brute_clusters(ids, want, method)


def test_copies_without_sketches_are_nobodys_duplicates():
    ids = np.array([5, 3, 9, 7], dtype=np.int64)
    fps = np.array([42, 42, 42, 42], dtype=np.int64)
    decided, copies = dedup._decide(ids, fps, [None, None, b"\x01" * 32, b"\x01" * 32], 3, 4)
    assert decided == [] and copies == {7: [7, 9]}
    assert dedup._clusters(ids, decided, "representative", copies) == [[7, 9]]
    assert dedup._all_pairs(decided, copies, True) == [(7, 9, 0, 0)]
