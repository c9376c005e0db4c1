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
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from simpg import bits
from simpg.exc import InvalidLayout

__all__ = [
    "MAX_K",
    "MAX_TABLES",
    "Layout",
    "Permutation",
    "Segment",
    "block_widths",
    "check_radius",
    "default_blocks",
]

#: Largest radius the layouts support (C(m, m-k) tables grow fast beyond it).
MAX_K = 16
#: Most tables (generated columns + B-tree indexes) one layout may create.
MAX_TABLES = 256
#: Most contiguous segments one table's permutation may move (simpg.permute's body).
MAX_SEGMENTS = 12


def check_radius(k: object, limit: int = MAX_K, *, what: str | None = None, hint: str | None = None) -> int:
    """``k`` if it is a radius from 0 to ``limit``, else :class:`InvalidLayout` naming the value.

    The one check of a radius in Python (``simpg.check_radius`` in SQL, same messages).
    Without ``what``, ``limit`` is the largest radius of any layout; with it, the radius
    that ``what`` (an index, a layout, range shards) answers exactly, and ``hint`` says
    what to do about a larger ``k``.

    Example:
        >>> check_radius(3, 4, what="the simpg index on docs.simhash")
        3
        >>> check_radius(5, 4, what="the simpg index on docs.simhash")
        Traceback (most recent call last):
        ...
        simpg.exc.InvalidLayout: k=5 is above the radius k=4 that the simpg index on docs.simhash guarantees
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0 or (what is None and k > limit):
        if what is None:
            raise InvalidLayout(f"k must be an integer from 0 to {limit}, got {k!r}")
        raise InvalidLayout(f"k must be a non-negative integer, got {k!r}")
    if k > limit:
        hint = f"; {hint}" if hint else ""
        raise InvalidLayout(f"k={k} is above the radius k={limit} that {what} guarantees{hint}")
    return k


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


#: One run of a :class:`Permutation`: ``(src_shift, mask, dst_shift)``, mask unsigned.
Run = tuple[int, int, int]


@dataclass(frozen=True)
class Permutation:
    """One table: a permutation of the 64 bits, and how many leading bits form its prefix.

    This is the one definition of the prefix arithmetic in Python: :class:`Layout`
    (``permute``, ``prefix_range``), the lookups' range computation
    (:class:`simpg.psycopg.ranges.RangeMaker`) and the all-pairs engine
    (:mod:`simpg.allpairs`, vectorised) all read a table from here.

    Attributes:
        runs: the contiguous pieces the permutation moves, in output order (most
            significant first): ``permuted |= ((fp >> src_shift) & mask) << dst_shift``
            on unsigned values.
        prefix_bits: leading bits of the permuted value that must be equal.
        source_mask: the fingerprint bits that land in the prefix (unsigned): two
            fingerprints share the prefix exactly when ``(a ^ b) & source_mask == 0``.
        prefix_runs: ``runs`` cut to the bits that land in the prefix (the others are
            zero in a prefix range's ``lo``).
        segments: ``runs`` as :class:`Segment` (signed masks, what SQL evaluates).
    """

    runs: tuple[Run, ...]
    prefix_bits: int
    source_mask: int = field(init=False)
    prefix_runs: tuple[Run, ...] = field(init=False)
    segments: tuple[Segment, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        low = bits.BITS - self.prefix_bits
        prefix_runs = []
        source_mask = 0
        for src, mask, dst in self.runs:
            cut = max(0, low - dst)  # bits of this run that land below the prefix
            if cut < mask.bit_length():
                prefix_runs.append((src + cut, mask >> cut, dst + cut))
                source_mask |= (mask >> cut) << (src + cut)
        object.__setattr__(self, "prefix_runs", tuple(prefix_runs))
        object.__setattr__(self, "source_mask", source_mask)
        object.__setattr__(self, "segments", tuple(Segment(src, bits.to_db(mask), dst) for src, mask, dst in self.runs))

    @classmethod
    def from_order(cls, order: Sequence[int], prefix_bits: int) -> Permutation:
        """The permutation that puts source bit ``order[pos]`` (MSB = 0) at output position ``pos``."""
        spans: list[tuple[int, int, int]] = []  # (output position, source index, width)
        for pos, src in enumerate(order):
            if spans and spans[-1][1] + spans[-1][2] == src:
                out, start, width = spans[-1]
                spans[-1] = (out, start, width + 1)
            else:
                spans.append((pos, src, 1))
        runs = tuple(
            (bits.BITS - src - width, (1 << width) - 1, bits.BITS - out - width) for out, src, width in spans
        )
        return cls(runs, prefix_bits)

    @classmethod
    def from_mask(cls, mask: int) -> Permutation:
        """A table whose prefix is the bits of ``mask`` (unsigned).

        They move to the top (highest first), the other bits below them, each group
        in its original order: a permutation of the bits, so it keeps every distance.
        """
        high_first = range(bits.BITS - 1, -1, -1)
        chosen = [b for b in high_first if mask >> b & 1]
        rest = [b for b in high_first if not mask >> b & 1]
        return cls.from_order([bits.BITS - 1 - b for b in chosen + rest], len(chosen))

    @property
    def ones(self) -> int:
        """The bits below the prefix, all set: ``hi - lo`` of a prefix range."""
        return (1 << (bits.BITS - self.prefix_bits)) - 1

    def apply(self, fp: int) -> int:
        """The permuted value of an unsigned fingerprint (unsigned, unchecked)."""
        out = 0
        for src, mask, dst in self.runs:
            out |= ((fp >> src) & mask) << dst
        return out

    def prefix_low(self, fp: int) -> int:
        """``lo`` of the prefix range of an unsigned fingerprint (unsigned, unchecked)."""
        lo = 0
        for src, mask, dst in self.prefix_runs:
            lo |= ((fp >> src) & mask) << dst
        return lo


@dataclass(frozen=True)
class Layout:
    """An index layout: radius ``k`` and the number of blocks at each level."""

    k: int
    levels: tuple[int, ...]

    def __post_init__(self) -> None:
        k, levels = check_radius(self.k), self.levels
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

    def check_radius(self, k: object) -> int:
        """``k`` if this layout answers it exactly (``0 <= k <= self.k``), else InvalidLayout naming it."""
        return check_radius(k, self.k, what=f"layout {self.name}")

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

    def permutation(self, t: int) -> Permutation:
        """Table ``t``'s permutation and prefix (:class:`Permutation`)."""
        self._check_table(t)
        return self._permutations[t]

    @property
    def permutations(self) -> tuple[Permutation, ...]:
        """Every table's :class:`Permutation`, in table order."""
        return self._permutations

    def prefix_bits(self, t: int) -> int:
        """Number of leading bits of table ``t``'s permuted value that must be equal."""
        return self.permutation(t).prefix_bits

    def segments(self, t: int) -> list[Segment]:
        """Table ``t``'s permutation as runs of contiguous bits (what SQL evaluates)."""
        return list(self.permutation(t).segments)

    def _check_table(self, t: int) -> None:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < self.tables:
            raise InvalidLayout(f"table must be from 0 to {self.tables - 1}, got {t!r}")

    @cached_property
    def _permutations(self) -> tuple[Permutation, ...]:
        return _layout_permutations(self)

    def permute(self, fingerprint: int, t: int) -> int:
        """Table ``t``'s permuted value of an unsigned fingerprint, as signed bigint."""
        fp = bits.check(fingerprint)
        return bits.to_db(self.permutation(t).apply(fp))

    def prefix_range(self, fingerprint: int, t: int) -> tuple[int, int]:
        """Signed ``[lo, hi]`` of table ``t``'s values sharing the query's prefix."""
        perm = self.permutation(t)
        lo = perm.prefix_low(bits.check(fingerprint))
        return bits.to_db(lo), bits.to_db(lo | perm.ones)

    def prefix_ranges(self, fingerprint: int) -> list[tuple[int, int]]:
        """``prefix_range`` for every table, in table order."""
        fp = bits.check(fingerprint)  # once, not per table: SQLAlchemy's within() calls this per query
        return [(bits.to_db(lo), bits.to_db(lo | perm.ones))
                for perm in self._permutations for lo in (perm.prefix_low(fp),)]

    def expected_candidates(self, rows: int) -> float:
        """Mean rows read per lookup on uniform fingerprints: sum over tables of N / 2^prefix."""
        # float(): int ** int is not float to a type checker (a negative power would be)
        return float(sum(rows / 2 ** self.prefix_bits(t) for t in range(self.tables)))


@lru_cache(maxsize=128)
def _layout_permutations(layout: Layout) -> tuple[Permutation, ...]:
    """A layout's tables, shared by equal layouts (``pairs_layout`` builds them afresh)."""
    result = []
    for t in range(layout.tables):
        perm = Permutation.from_order(*layout._order(t))
        if len(perm.runs) > MAX_SEGMENTS:
            raise InvalidLayout(f"layout {layout.name} moves {len(perm.runs)} segments, more than {MAX_SEGMENTS}")
        result.append(perm)
    return tuple(result)


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
