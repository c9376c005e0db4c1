"""Layout math of the permuted-prefix index: the one definition shared with SQL.

A fingerprint has 64 bits, numbered here from the most significant (bit index 0)
down to the least significant (bit index 63). A *layout* ``(k, levels)`` answers
"every fingerprint within Hamming distance ``k``" exactly (seeds 001 and 004,
Manku et al., "Detecting near-duplicates for web crawling", 2007):

* Level 1 splits the 64 bits into ``m = levels[0]`` contiguous blocks, as evenly as
  possible, wider blocks first (64 = 11+11+11+11+10+10 for m = 6). Two fingerprints
  that differ in at most ``k`` bits differ in at most ``k`` blocks, so at least
  ``m - k`` blocks are equal (pigeonhole).
* Each choice of ``m - k`` blocks is a *table*: its permutation moves the chosen blocks
  to the top, in their original order, followed by the other blocks in order, so that
  fingerprints agreeing on the chosen blocks share a prefix of the permuted value.
* A second level (Google's two-level designs, e.g. ``levels = (4, 4)`` for k = 3: 16
  tables with 28-bit prefixes) splits the bits left after level 1's chosen blocks into
  ``levels[1]`` blocks the same way, and chooses ``levels[1] - k`` of those too.

Tables are numbered in mixed radix, level 1 most significant; within a level, the
choices of blocks come in lexicographic order (``itertools.combinations``). The SQL
functions ``simpg.table_segments`` and ``simpg.permute`` implement exactly this, and
the test suite compares both on every table of every supported layout.

Permuted values and prefix bounds are returned as signed bigint (what PostgreSQL
stores). A prefix always contains bit 0 (the sign bit of the permuted value), so the
set of values sharing a prefix is one contiguous range in signed order too.

Example:
    >>> layout = Layout(k=3, levels=(6,))
    >>> layout.tables, layout.prefix_bits(0)
    (20, 33)
    >>> lo, hi = layout.prefix_range(0x0123456789ABCDEF, 0)
    >>> lo <= layout.permute(0x0123456789ABCDEF, 0) <= hi
    True
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property

from simpg import bits
from simpg.exc import InvalidLayout

__all__ = ["MAX_K", "MAX_TABLES", "Layout", "Segment", "block_widths", "default_blocks"]

#: Largest radius the layouts support (C(m, m-k) tables grow fast beyond it).
MAX_K = 16
#: Most tables (generated columns + B-tree indexes) one layout may create.
MAX_TABLES = 256
#: Most contiguous segments one table's permutation may move (simpg.permute's body).
MAX_SEGMENTS = 12


def block_widths(nbits: int, m: int) -> list[int]:
    """Split ``nbits`` into ``m`` contiguous blocks as evenly as possible, wider first."""
    base, extra = divmod(nbits, m)
    return [base + 1 if i < extra else base for i in range(m)]


@dataclass(frozen=True)
class Segment:
    """A run of bits that a permutation moves as one piece.

    ``permuted |= ((fp >> src_shift) & mask) << dst_shift``, all on 64-bit two's
    complement values; ``mask`` is signed like everything that goes to PostgreSQL.
    """

    src_shift: int
    mask: int
    dst_shift: int


@dataclass(frozen=True)
class Layout:
    """An index layout: radius ``k`` and the number of blocks at each level."""

    k: int
    levels: tuple[int, ...]

    def __post_init__(self) -> None:
        k, levels = self.k, self.levels
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_K:
            raise InvalidLayout(f"k must be an integer from 0 to {MAX_K}, got {k!r}")
        if not isinstance(levels, tuple) or not 1 <= len(levels) <= 2:
            raise InvalidLayout(f"levels must be a tuple of one or two block counts, got {levels!r}")
        remaining = bits.BITS
        for m in levels:
            if isinstance(m, bool) or not isinstance(m, int):
                raise InvalidLayout(f"blocks must be an integer, got {m!r}")
            if m <= k:
                raise InvalidLayout(f"blocks must be greater than k (blocks={m}, k={k})")
            if m > remaining:
                raise InvalidLayout(f"blocks={m} is more than the {remaining} bits left to split")
            # The smallest choice of m - k blocks decides how many bits a next level gets.
            remaining -= sum(sorted(block_widths(remaining, m))[: m - k])
        if self.tables > MAX_TABLES:
            raise InvalidLayout(
                f"layout k={k} blocks={'x'.join(map(str, levels))} needs {self.tables} tables, "
                f"more than {MAX_TABLES}"
            )

    @classmethod
    def one_level(cls, k: int, blocks: int) -> Layout:
        """The plain design: ``blocks`` blocks, C(blocks, blocks - k) tables."""
        return cls(k, (blocks,))

    @property
    def name(self) -> str:
        """Short text form, e.g. ``k3:6`` or ``k3:4x4``."""
        return f"k{self.k}:" + "x".join(str(m) for m in self.levels)

    @property
    def tables(self) -> int:
        """Number of permuted tables (generated columns, B-tree indexes)."""
        return math.prod(math.comb(m, m - self.k) for m in self.levels)

    def _order(self, t: int) -> tuple[list[int], int]:
        """Source bit index (MSB = 0) for each output position, and the prefix length."""
        self._check_table(t)
        # Mixed radix, level 1 most significant.
        choices = []
        for m in reversed(self.levels):
            count = math.comb(m, m - self.k)
            choices.append(t % count)
            t //= count
        choices.reverse()

        remaining = list(range(bits.BITS))
        order: list[int] = []
        prefix = 0
        for m, choice in zip(self.levels, choices, strict=True):
            widths = block_widths(len(remaining), m)
            starts = list(itertools.accumulate([0, *widths]))
            blocks = [remaining[starts[i] : starts[i + 1]] for i in range(m)]
            chosen = next(itertools.islice(itertools.combinations(range(m), m - self.k), choice, None))
            for i in chosen:
                order.extend(blocks[i])
                prefix += widths[i]
            remaining = [b for i in range(m) if i not in chosen for b in blocks[i]]
        order.extend(remaining)
        return order, prefix

    def prefix_bits(self, t: int) -> int:
        """Number of leading bits of table ``t``'s permuted value that must be equal."""
        return self._order(t)[1]

    def segments(self, t: int) -> list[Segment]:
        """Table ``t``'s permutation as runs of contiguous bits (what SQL evaluates)."""
        self._check_table(t)
        return self._segments[t]

    def _check_table(self, t: int) -> None:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < self.tables:
            raise InvalidLayout(f"table must be from 0 to {self.tables - 1}, got {t!r}")

    @cached_property
    def _segments(self) -> list[list[Segment]]:
        result = []
        for t in range(self.tables):
            order, _ = self._order(t)
            runs: list[tuple[int, int, int]] = []  # (output position, source index, width)
            for pos, src in enumerate(order):
                if runs and runs[-1][1] + runs[-1][2] == src:
                    out, start, width = runs[-1]
                    runs[-1] = (out, start, width + 1)
                else:
                    runs.append((pos, src, 1))
            segs = [
                Segment(
                    src_shift=bits.BITS - src - width,
                    mask=bits.to_db((1 << width) - 1),
                    dst_shift=bits.BITS - out - width,
                )
                for out, src, width in runs
            ]
            if len(segs) > MAX_SEGMENTS:
                raise InvalidLayout(f"layout {self.name} moves {len(segs)} segments, more than {MAX_SEGMENTS}")
            result.append(segs)
        return result

    def permute(self, fingerprint: int, t: int) -> int:
        """Table ``t``'s permuted value of an unsigned fingerprint, as signed bigint."""
        fp = bits.check(fingerprint)
        out = 0
        for seg in self.segments(t):
            out |= ((fp >> seg.src_shift) & (seg.mask & bits.MASK)) << seg.dst_shift
        return bits.to_db(out)

    def prefix_range(self, fingerprint: int, t: int) -> tuple[int, int]:
        """Signed ``[lo, hi]`` of table ``t``'s values sharing the query's prefix."""
        low_bits = bits.BITS - self.prefix_bits(t)
        permuted = bits.from_db(self.permute(fingerprint, t))
        lo = permuted >> low_bits << low_bits
        hi = lo | ((1 << low_bits) - 1)
        return bits.to_db(lo), bits.to_db(hi)

    def prefix_ranges(self, fingerprint: int) -> list[tuple[int, int]]:
        """``prefix_range`` for every table, in table order."""
        return [self.prefix_range(fingerprint, t) for t in range(self.tables)]

    def expected_candidates(self, rows: int) -> float:
        """Mean rows read per lookup on uniform fingerprints: sum over tables of N / 2^prefix."""
        # float(): int ** int is not float to a type checker (a negative power would be)
        return float(sum(rows / 2 ** self.prefix_bits(t) for t in range(self.tables)))


def default_blocks(k: int, rows: int) -> int:
    """The simple sizing rule used when ``blocks`` is not given (``simpg.default_blocks`` in SQL).

    The fewest blocks whose narrowest table has a prefix of at least ``log2(rows) - 4``
    bits (so at most about 16 candidates per table on uniform fingerprints), stopping
    before a layout would need more than 64 tables.
    """
    want = max(math.ceil(math.log2(max(rows, 2))) - 4, 1)
    m = k + 1
    while True:
        narrowest = sum(sorted(block_widths(bits.BITS, m))[: m - k])
        if narrowest >= want or m + 1 > bits.BITS or math.comb(m + 1, m + 1 - k) > 64:
            return m
        m += 1
