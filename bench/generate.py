"""Synthetic 64-bit fingerprints with planted neighbours, and query sets, for the benchmarks.

The table: uniform random fingerprints (about half of them >= 2**63, i.e. negative
bigint), plus planted neighbours: copies of an anchor row with ``d`` bits flipped,
``d`` from 0 (the same fingerprint in another row) to ``k + 1`` (a near miss that
must NOT match), where the flips hit bit 0 and bit 63 more often than chance. Rows are
shuffled, so neighbours are far apart in the table.

The queries come from another seed, so no tuning could have seen them: half are
stored rows with 0 to ``k + 1`` bits flipped, half uniform random (which match
nothing, the usual case of a dedup lookup).

Everything is seeded and cached as .npz in bench/data/ (ignored by git).

Usage:
    python bench/generate.py --rows 1000000            # writes bench/data/fps-1000000-s1-k3.npz
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
logger = logging.getLogger(__name__)


@dataclass
class Dataset:
    """Fingerprints (signed int64, what PostgreSQL stores) and what was planted in them.

    Attributes:
        fps: Fingerprint of row ``i`` (row ids are ``i + 1`` in the bench tables).
        planted: ``(anchor row, neighbour row, distance)`` triples, int64 columns.
        queries: Lookup fingerprints from a different seed.
        k: The radius the data was planted around.
    """

    fps: np.ndarray
    planted: np.ndarray
    queries: np.ndarray
    k: int


def _flip(values: np.ndarray, distances: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Flip ``distances[i]`` distinct bits of ``values[i]``; bits 0 and 63 come up often."""
    out = values.view(np.uint64).copy()
    for d in np.unique(distances):
        sel = np.flatnonzero(distances == d)
        if d == 0:
            continue
        # distinct bit positions per row: the first d of a random permutation of 0..63
        keys = rng.random((len(sel), 64))
        # edge bits first in a third of the rows (the sign bit and the lowest bit)
        edge = rng.random(len(sel)) < 1 / 3
        keys[edge, 0] = -1.0
        keys[edge, 63] = -0.5
        positions = np.argsort(keys, axis=1)[:, :d].astype(np.uint64)
        masks = np.bitwise_or.reduce(np.uint64(1) << positions, axis=1)
        out[sel] ^= masks
    return out.view(np.int64)


def generate(
    rows: int, *, k: int = 3, seed: int = 1, planted_fraction: float = 0.02, queries: int = 2000
) -> Dataset:
    """Build a dataset of ``rows`` fingerprints (see the module docstring).

    Args:
        rows: Number of table rows.
        k: Radius the planted distances are drawn around (0 .. k + 1).
        seed: Seed of the table; queries use an independent stream derived from it.
        planted_fraction: Share of rows that are planted neighbours of another row.
        queries: Number of lookup fingerprints.
    """
    rng = np.random.default_rng(seed)
    fps = rng.integers(
        np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=rows, dtype=np.int64, endpoint=True
    )
    n_planted = int(rows * planted_fraction)
    # neighbour rows overwrite random rows with a copy of another (anchor) row, flipped
    rows_perm = rng.permutation(rows)
    neighbours = rows_perm[:n_planted]
    anchors = rows_perm[n_planted:][rng.integers(0, rows - n_planted, size=n_planted)]
    # some anchors get several neighbours (clusters); distances 0..k+1
    anchors[1::4] = anchors[0::4][: len(anchors[1::4])]
    distances = rng.integers(0, k + 2, size=n_planted)
    fps[neighbours] = _flip(fps[anchors], distances, rng)
    planted = np.stack([anchors, neighbours, distances], axis=1).astype(np.int64)

    qrng = np.random.default_rng([seed, 0xC0FFEE])  # an independent stream
    half = queries // 2
    near = _flip(fps[qrng.integers(0, rows, size=half)], qrng.integers(0, k + 2, size=half), qrng)
    far = qrng.integers(
        np.iinfo(np.int64).min,
        np.iinfo(np.int64).max,
        size=queries - half,
        dtype=np.int64,
        endpoint=True,
    )
    qs = np.concatenate([near, far])
    qrng.shuffle(qs)
    return Dataset(fps=fps, planted=planted, queries=qs, k=k)


def load(rows: int, *, k: int = 3, seed: int = 1, queries: int = 2000) -> Dataset:
    """The cached dataset from bench/data/, generated on first use."""
    path = DATA / f"fps-{rows}-s{seed}-k{k}-q{queries}.npz"
    if path.exists():
        with np.load(path) as z:
            return Dataset(z["fps"], z["planted"], z["queries"], int(z["k"]))
    started = time.perf_counter()
    data = generate(rows, k=k, seed=seed, queries=queries)
    DATA.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, fps=data.fps, planted=data.planted, queries=data.queries, k=data.k)
    tmp.rename(path)
    logger.info("generated %s in %.1f s", path.name, time.perf_counter() - started)
    return data


def brute_force(fps: np.ndarray, query: int, k: int) -> np.ndarray:
    """Row numbers within distance ``k`` of ``query``, by popcount over every row."""
    # on signed integers np.bitwise_count counts the bits of the absolute value
    dist = np.bitwise_count((fps ^ np.int64(query)).view(np.uint64))
    return np.flatnonzero(dist <= k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    data = load(args.rows, k=args.k, seed=args.seed, queries=args.queries)
    dist = np.bincount(data.planted[:, 2], minlength=args.k + 2)
    print(
        f"{len(data.fps):,} fingerprints, {len(data.planted):,} planted neighbours "
        f"(by distance: {dict(enumerate(dist.tolist()))}), {len(data.queries):,} queries"
    )


if __name__ == "__main__":
    main()
