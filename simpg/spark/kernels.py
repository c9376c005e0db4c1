"""The numpy work of one Spark task: every pair within its groups (no Spark needed here).

A Spark task of :mod:`simpg.spark.engine` receives rows already shuffled so that each
*unit* (one table's prefix group, or one block pair of a group too big for one task)
is whole in one partition. These functions find every pair inside each unit,
vectorised over all units of the partition at once: after a sort by unit, position
``p`` is compared with ``p + d`` for ``d = 1, 2, ...`` while both are in the same unit
(units are contiguous, so the positions still inside a unit at ``d`` are a subset of
those at ``d - 1``), exactly as :func:`simpg.allpairs.pair_chunks` does in memory.

A unit ``(lo, hi)`` with ``lo != hi`` holds the rows of blocks ``lo`` and ``hi`` of a
split group: only pairs across the two blocks are its own (each block's inner pairs
belong to the unit ``(b, b)``), so every pair of a group is produced by exactly one unit.

Example:
    >>> import numpy as np
    >>> fp = np.array([0b1011, 0b1001, 0b0111, -2**63 | 0b1011], dtype=np.int64)
    >>> zero = np.zeros(4, dtype=np.int64)
    >>> chunks = near_pairs(zero, zero, zero, zero, zero, fp, 1, [0])  # one table, one unit
    >>> sorted((int(a), int(b), int(d)) for chunk in chunks for a, b, d in zip(*chunk))
    [(-9223372036854775797, 11, 1), (9, 11, 1)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

__all__ = ["equal_pairs", "near_pairs", "unit_starts"]

_U64 = np.uint64


def unit_starts(*keys: np.ndarray) -> np.ndarray:
    """Unit number of each position of rows sorted by ``keys`` (equal keys, one unit)."""
    n = len(keys[0])
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    return np.cumsum(change)


def _diagonals(unit: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """Positions ``p`` whose ``p + d`` is in the same unit, for ``d = 1, 2, ...``."""
    n = len(unit)
    active = np.arange(max(n - 1, 0))
    d = 1
    while len(active):
        active = active[active + d < n]
        active = active[unit[active + d] == unit[active]]
        if not len(active):
            return
        yield active, d
        d += 1


def near_pairs(t: np.ndarray, key: np.ndarray, lo: np.ndarray, hi: np.ndarray, blk: np.ndarray,
               fp: np.ndarray, k: int, masks: Sequence[int],
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Pairs of distinct fingerprints within ``k``, each once over all tables.

    Args:
        t: table number of each row.
        key: the row's prefix in that table (``fp & masks[t]``).
        lo: the unit's first block (0 for an unsplit group).
        hi: the unit's second block (``lo`` again for a group's inner pairs).
        blk: the row's block in its group.
        fp: signed 64-bit fingerprints, distinct within a table.
        k: largest distance kept.
        masks: each table's prefix mask (``Permutation.source_mask``, unsigned): a pair
            found by table ``t`` is kept only if it shares no earlier table's prefix.

    Yields:
        ``(a, b, distance)`` arrays with ``a < b`` (signed), in chunks.
    """
    order = np.lexsort((fp, hi, lo, key, t))
    t, lo, hi, blk, fp = t[order], lo[order], hi[order], blk[order], fp[order]
    unit = unit_starts(t, key[order], lo, hi)
    u = fp.view(_U64)
    cross = lo != hi
    earlier = [_U64(m) for m in masks]
    for p, d in _diagonals(unit):
        q = p + d
        x = u[p] ^ u[q]
        dist = np.bitwise_count(x)
        ok = dist <= k
        ok &= ~cross[p] | (blk[p] != blk[q])
        if not ok.any():
            continue
        p, q, x, dist = p[ok], q[ok], x[ok], dist[ok]
        table = t[p]
        keep = np.ones(len(p), dtype=bool)
        for e, mask in enumerate(earlier[: int(table.max())]):
            keep &= (table <= e) | ((x & mask) != 0)
        if keep.any():
            a, b = fp[p[keep]], fp[q[keep]]  # sorted by fp within a unit: a < b
            yield a, b, dist[keep].astype(np.int32)


def equal_pairs(fp: np.ndarray, lo: np.ndarray, hi: np.ndarray, blk: np.ndarray, ids: np.ndarray,
                ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every pair of rows with the same fingerprint (distance 0), by units of blocks.

    Yields:
        ``(id_a, id_b)`` arrays with ``id_a < id_b``, in chunks.
    """
    order = np.lexsort((ids, hi, lo, fp))
    lo, hi, blk, ids = lo[order], hi[order], blk[order], ids[order]
    unit = unit_starts(fp[order], lo, hi)
    cross = lo != hi
    for p, d in _diagonals(unit):
        q = p + d
        ok = ~cross[p] | (blk[p] != blk[q])
        if ok.any():
            yield ids[p[ok]], ids[q[ok]]  # sorted by id within a unit
