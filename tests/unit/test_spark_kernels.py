"""simpg.spark.kernels (the numpy work of one Spark task) against brute force, without Spark."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

from simpg.layout import Layout
from simpg.spark import kernels


def test_doctests() -> None:
    assert doctest.testmod(kernels).failed == 0


@pytest.mark.parametrize("nb", [1, 2, 5])
def test_near_pairs_over_all_tables_and_blocks_equal_brute_force(nb: int) -> None:
    rng = np.random.default_rng(nb)
    k = 2
    base = rng.integers(-2**63, 2**63 - 1, 60, dtype=np.int64, endpoint=True)
    near = base[:40] ^ (np.int64(1) << rng.integers(0, 64, 40)) ^ (np.int64(1) << rng.integers(0, 64, 40))
    popular = np.int64(0x0123_4567_89AB_C000) | rng.choice(4096, 80, replace=False).astype(np.int64)
    fp = np.unique(np.concatenate([base, near, popular, [0, -1, -2**63, 2**63 - 1]]))
    masks = [p.source_mask for p in Layout(k, (4,)).permutations]
    # what the Spark job sends to the tasks: a row per table, block and block pair
    rows = []
    for t, m in enumerate(masks):
        key = (fp.view(np.uint64) & np.uint64(m)).view(np.int64)
        blk = (fp.view(np.uint64) % np.uint64(nb)).astype(np.int64)
        for j in range(nb):
            rows.append((np.full(len(fp), t), key, np.minimum(blk, j), np.maximum(blk, j), blk, fp))
    cols = [np.concatenate(c) for c in zip(*rows, strict=True)]
    got = sorted((int(a), int(b), int(d)) for chunk in kernels.near_pairs(*cols, k, masks)
                 for a, b, d in zip(*chunk, strict=True))
    expected = sorted((int(min(a, b)), int(max(a, b)), d) for a, b in itertools.combinations(fp.tolist(), 2)
                      if (d := bin((a ^ b) & (2**64 - 1)).count("1")) <= k)
    assert got == expected
    assert len(got) == len(set(got))


def test_equal_pairs_every_pair_once() -> None:
    fp = np.array([5] * 7 + [9] * 3 + [4], dtype=np.int64)
    ids = np.arange(100, 111, dtype=np.int64)
    nb = np.where(fp == 5, 3, 1)
    blk = ids % nb
    rows = [(fp, np.minimum(blk, j), np.maximum(blk, j), blk, ids) for j in range(3)]
    keep = [np.array([j < n for n in nb]) for j in range(3)]
    cols = [np.concatenate([r[c][m] for r, m in zip(rows, keep, strict=True)]) for c in range(5)]
    got = sorted((int(a), int(b)) for chunk in kernels.equal_pairs(*cols) for a, b in zip(*chunk, strict=True))
    assert got == sorted([*itertools.combinations(range(100, 107), 2), *itertools.combinations(range(107, 110), 2)])
