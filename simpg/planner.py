"""Layout planner: which permuted-table design to build for radius ``k`` and ``rows`` rows.

Every layout of :mod:`simpg.layout` answers "within distance k" exactly; they differ
in cost. More tables mean longer prefixes, so fewer *candidates* (rows read and
compared per lookup), but each table costs a generated column (8 bytes of heap per
row), a B-tree (about 20.3 bytes per row when built), write work on every insert and
build time. The planner lists the designs worth considering and recommends one:

* **Designs**: one level (``m`` blocks choosing ``m - k``: C(m, m - k) tables) and
  Google's two levels (``m1`` blocks, then the bits left in ``m2`` blocks, e.g.
  ``k3:4x4``: 16 tables with 28-bit prefixes), up to 256 tables. A design is listed
  only if no other design has at most as many tables *and* at most as many expected
  candidates (the Pareto front), ties going to the one-level design; the list stops
  at the first design expecting fewer than 0.01 candidates per lookup, since more
  tables cannot buy anything after it (``everything=True`` lists the whole front).
* **Expected candidates** per lookup on uniform fingerprints: the sum over tables of
  ``rows / 2^prefix_bits`` (rows found through several tables count once per table,
  so this is an upper bound).
* **Recommendation**: the design with the lowest lookup cost ``tables + candidates /
  4``, in units of one B-tree probe: measured with prepared statements (generic plans)
  on rows in shared buffers (bench/index_bench.py), a probe is worth about 4 candidates
  (a candidate that is not cached costs a random heap read, so more). The effect is the
  seeds' rule (seed 001): prefix bits close to
  ``log2(rows)``, about one candidate per table, e.g. ``k3:5`` (10 tables, 25-26 bit
  prefixes) from about 400k to 200M rows for k=3, then k3:4x4 and k3:6.
* **Bytes per row**: 8 bytes of heap per table (a stored bigint column; measured
  8.1 to 9.0 with page packing) and 20.3 bytes of B-tree per table (16-byte index
  tuple + 4-byte line pointer in leaf pages filled completely, the fillfactor 100 that
  ``simpg.create_index`` builds with; measured 20.27 with ``pg_indexes_size`` on 1M
  rows, against 22.49 at PostgreSQL's default fillfactor 90).
  Random inserts after the build leave leaf pages about 70% full, about 29 bytes.

``simpg.plan(k, rows)`` and ``simpg.default_levels(k, rows)`` in SQL
(sql/functions/60_planner.sql) compute the same list and recommendation; the test
suite compares them.

Example:
    >>> from simpg.planner import plan, recommend
    >>> recommend(3, 10_000_000).name
    'k3:5'
    >>> [d.layout.name for d in plan(3, 10_000_000)]
    ['k3:4', 'k3:5', 'k3:4x4', 'k3:6', 'k3:7']
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from simpg import bits
from simpg.exc import InvalidLayout
from simpg.layout import MAX_TABLES, Layout, check_radius

__all__ = [
    "CANDIDATES_PER_PROBE",
    "HEAP_BYTES_PER_TABLE",
    "INDEX_BYTES_PER_TABLE",
    "STOP_CANDIDATES",
    "Design",
    "plan",
    "recommend",
]

#: Candidate rows that cost as much as one B-tree probe (see the module docstring).
CANDIDATES_PER_PROBE = 4
#: Heap bytes per row of one stored bigint prefix column.
HEAP_BYTES_PER_TABLE = 8.0
#: B-tree bytes per row of one prefix index built by simpg.create_index (fillfactor 100).
INDEX_BYTES_PER_TABLE = 20.3
#: The listing stops at the first design expecting fewer candidates per lookup.
STOP_CANDIDATES = Fraction(1, 100)


@dataclass(frozen=True)
class Design:
    """One candidate layout with its figures for a table of ``rows`` rows.

    Attributes:
        layout: The layout (``layout.levels`` is what ``simpg.create_index`` takes).
        rows: The number of rows the figures are for.
        min_prefix_bits: The shortest prefix of any table (the most candidates).
        max_prefix_bits: The longest prefix of any table.
        expected_candidates: Mean rows read per lookup on uniform fingerprints.
        heap_bytes_per_row: Heap added per row by the prefix columns.
        index_bytes_per_row: B-tree bytes per row of the prefix indexes, as built.
        cost: Lookup cost in B-tree probes: ``tables + expected_candidates / 4``.
        recommended: Whether :func:`recommend` picks this design.
    """

    layout: Layout
    rows: int
    min_prefix_bits: int
    max_prefix_bits: int
    expected_candidates: float
    heap_bytes_per_row: float
    index_bytes_per_row: float
    cost: float
    recommended: bool = False

    @property
    def tables(self) -> int:
        """Number of permuted tables (prefix columns and B-tree indexes)."""
        return self.layout.tables

    @property
    def bytes_per_row(self) -> float:
        """Heap plus index bytes per row that the layout adds."""
        return self.heap_bytes_per_row + self.index_bytes_per_row

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON-ready values (what ``simpg plan --json`` prints)."""
        return {
            "layout": self.layout.name,
            "k": self.layout.k,
            "levels": list(self.layout.levels),
            "tables": self.tables,
            "min_prefix_bits": self.min_prefix_bits,
            "max_prefix_bits": self.max_prefix_bits,
            "expected_candidates": self.expected_candidates,
            "heap_bytes_per_row": self.heap_bytes_per_row,
            "index_bytes_per_row": self.index_bytes_per_row,
            "bytes_per_row": self.bytes_per_row,
            "cost": self.cost,
            "recommended": self.recommended,
        }


def _level_prefixes(nbits: int, m: int, k: int) -> Counter[int]:
    """Prefix lengths (with multiplicity) of choosing ``m - k`` of ``m`` blocks of ``nbits``.

    ``block_widths`` makes ``nbits % m`` blocks one bit wider than the others, so a
    choice holding ``j`` wide blocks has ``(m - k) * (nbits // m) + j`` bits.
    """
    base, wide = divmod(nbits, m)
    r = m - k
    return Counter(
        {
            r * base + j: math.comb(wide, j) * math.comb(m - wide, r - j)
            for j in range(max(0, r - (m - wide)), min(wide, r) + 1)
        }
    )


def prefix_histogram(k: int, levels: tuple[int, ...]) -> Counter[int]:
    """How many tables of layout ``(k, levels)`` have each prefix length (no validation)."""
    result: Counter[int] = Counter({0: 1})
    for m in levels:
        step: Counter[int] = Counter()
        for done, count in result.items():
            for more, n in _level_prefixes(bits.BITS - done, m, k).items():
                step[done + more] += count * n
        result = step
    return result


def _layouts(k: int) -> list[Layout]:
    """Every valid one- and two-level layout for ``k`` with at most MAX_TABLES tables."""
    found = []
    for m1 in range(k + 1, bits.BITS + 1):
        if math.comb(m1, k) > MAX_TABLES:
            break
        candidates: list[tuple[int, ...]] = [(m1,)]
        if k > 0:  # with k = 0 one table already matches all 64 bits
            candidates += [
                (m1, m2)
                for m2 in range(k + 1, bits.BITS + 1)
                if math.comb(m1, k) * math.comb(m2, k) <= MAX_TABLES
            ]
        for levels in candidates:
            try:
                found.append(Layout(k, levels))
            except InvalidLayout:
                continue
        if k == 0:  # every m gives the same identity table
            break
    return found


@functools.cache
def _scored(k: int) -> tuple[tuple[Layout, Counter[int], int], ...]:
    """Every layout for ``k`` with its prefix histogram and weight, in the planner's order.

    Exact arithmetic: weight = sum over tables of 2^(64 - prefix bits), an integer, so
    dominance and the recommendation never hinge on float rounding (SQL uses numeric).
    """
    scored = []
    for layout in _layouts(k):
        hist = prefix_histogram(k, layout.levels)
        weight = sum(n << (bits.BITS - p) for p, n in hist.items())
        scored.append((layout, hist, weight))
    scored.sort(key=lambda s: (s[0].tables, s[2], len(s[0].levels), s[0].levels))
    return tuple(scored)


def _check(k: object, rows: object) -> tuple[int, int]:
    radius = check_radius(k)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise InvalidLayout(f"rows must be a non-negative integer, got {rows!r}")
    return radius, rows


def plan(k: int, rows: int, *, everything: bool = False) -> list[Design]:
    """The designs worth considering for radius ``k`` and ``rows`` rows, fewest tables first.

    Args:
        k: Largest Hamming distance the index must answer (0 to 16).
        rows: Expected number of rows of the table.
        everything: List the whole Pareto front, not only up to the first design that
            expects fewer than 0.01 candidates per lookup.

    Returns:
        The designs, exactly one of them with ``recommended=True``.

    Raises:
        InvalidLayout: ``k`` or ``rows`` is out of range.
    """
    k, rows = _check(k, rows)
    front = []
    best_weight = None
    for layout, hist, weight in _scored(k):
        # sorted by tables: a design survives only by expecting fewer candidates than
        # every design with as few tables (ties went to the earlier, simpler one)
        if best_weight is not None and weight >= best_weight:
            continue
        best_weight = weight
        front.append((layout, hist, weight))
        if not everything and Fraction(rows * weight, 1 << bits.BITS) < STOP_CANDIDATES:
            break

    def exact_cost(entry: tuple[Layout, Counter[int], int]) -> Fraction:
        return entry[0].tables + Fraction(rows * entry[2], CANDIDATES_PER_PROBE << bits.BITS)

    best = min(front, key=lambda e: (exact_cost(e), e[0].tables))[0]
    designs = []
    for layout, hist, weight in front:
        candidates = Fraction(rows * weight, 1 << bits.BITS)
        designs.append(
            Design(
                layout=layout,
                rows=rows,
                min_prefix_bits=min(hist),
                max_prefix_bits=max(hist),
                expected_candidates=float(candidates),
                heap_bytes_per_row=HEAP_BYTES_PER_TABLE * layout.tables,
                index_bytes_per_row=INDEX_BYTES_PER_TABLE * layout.tables,
                cost=float(layout.tables + candidates / CANDIDATES_PER_PROBE),
                recommended=layout == best,
            )
        )
    return designs


def recommend(k: int, rows: int) -> Layout:
    """The recommended layout for radius ``k`` and ``rows`` rows (see the module docstring).

    Raises:
        InvalidLayout: ``k`` or ``rows`` is out of range.
    """
    return next(d.layout for d in plan(k, rows) if d.recommended)
