"""Each table's prefix range of a query, fast: the arithmetic a lookup runs on every call.

The same values as :meth:`Layout.prefix_range <simpg.layout.Layout.prefix_range>`
(tested in tests/unit/test_allpairs.py), from each table's
:attr:`Permutation.prefix_runs <simpg.layout.Permutation.prefix_runs>` unpacked once
into plain tuples.
"""

from __future__ import annotations

import struct

import numpy as np

from simpg.layout import Layout
from simpg.psycopg.wire import INT8_ARRAY_HEADER, Int8Array, int8_array_header

__all__ = ["RangeMaker"]


class RangeMaker:
    """Each table's signed ``[lo, hi]`` prefix range of a query, fast.

    The same values as :meth:`Layout.prefix_range` (tested): each table's
    :attr:`Permutation.prefix_runs <simpg.layout.Permutation.prefix_runs>` (the runs cut
    to the bits that land in its prefix; the rest are zero in ``lo`` anyway), unpacked
    once into plain tuples, since a lookup computes them on every call.
    """

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._tables = [(p.prefix_runs, p.ones) for p in layout.permutations]
        n = len(self._tables)
        # a binary bigint[] of n elements: the header, then (length 8, value) per element
        self._array = struct.Struct(INT8_ARRAY_HEADER + "iq" * n)
        self._array_header = int8_array_header(n)

    def lows(self, fp: int) -> list[int]:
        """Each table's ``lo`` (signed) for one unsigned fingerprint."""
        out = []
        for segs, _ in self._tables:
            lo = 0
            for src, mask, dst in segs:
                lo |= ((fp >> src) & mask) << dst
            out.append(lo - (1 << 64) if lo >> 63 else lo)
        return out

    def lows_array(self, fp: int) -> Int8Array:
        """:meth:`lows` as a ready-made ``bigint[]`` parameter (what ``near`` sends)."""
        items: list[int] = []
        for lo in self.lows(fp):
            items += (8, lo)
        return Int8Array.from_payload(self._array.pack(*self._array_header, *items))

    def flat(self, fp: int) -> list[int]:
        """``[lo0, hi0, lo1, hi1, ...]`` as signed bigints for one unsigned fingerprint."""
        out: list[int] = []
        for lo, (_, ones) in zip(self.lows(fp), self._tables, strict=True):
            out += (lo, lo | ones)  # the low bits of lo are 0: | is +, also when negative
        return out

    def ones(self, t: int) -> int:
        """``hi - lo`` of table ``t``'s ranges: the bits below its prefix, all set."""
        return self._tables[t][1]

    def lows_many(self, fps: np.ndarray) -> list[np.ndarray]:
        """Per table, the ``lo`` array (int64) of many unsigned fingerprints."""
        out = []
        for segs, _ in self._tables:
            lo = np.zeros(len(fps), dtype=np.uint64)
            for src, mask, dst in segs:
                lo |= ((fps >> np.uint64(src)) & np.uint64(mask)) << np.uint64(dst)
            out.append(lo.view(np.int64))
        return out

    def arrays(self, fps: np.ndarray) -> list[np.ndarray]:
        """Per table, the ``lo`` and ``hi`` arrays (int64) of many unsigned fingerprints."""
        out = []
        for t, lo in enumerate(self.lows_many(fps)):
            out += [lo, lo | np.int64(self.ones(t))]
        return out
