"""``simpg plan``: the index layouts worth considering for k and a row count.

Example:
    $ simpg plan -k 3 --rows 10M
    $ simpg plan -k 3 --rows 10000000 --json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from simpg import planner
from simpg.commands._common import parse_rows
from simpg.layout import check_radius


def register(subparsers: Any) -> None:
    """Add ``simpg plan``."""
    parser = subparsers.add_parser(
        "plan",
        help="list index layouts for k and a row count, with the recommended one",
        description="List the permuted-table layouts worth considering for radius k and the "
        "expected number of rows: tables, prefix bits, expected candidates per "
        "lookup, bytes per row. The recommended one (*) is what "
        "simpg.create_index picks when blocks are not given.",
    )
    parser.add_argument(
        "-k", required=True, metavar="K", help="largest Hamming distance to answer (0 to 16)"
    )
    parser.add_argument(
        "--rows", required=True, metavar="N", help="expected number of rows, e.g. 10000000 or 10M"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        dest="everything",
        help="list every Pareto-optimal layout, not only up to the first "
        "that expects fewer than 0.01 candidates per lookup",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.set_defaults(func=run)


def _k(text: str) -> int:
    try:
        value: object = int(text)
    except ValueError:
        value = text  # not a number: check_radius refuses it, naming the text as typed
    return check_radius(value)


def _create_call(design: planner.Design) -> str:
    levels = design.layout.levels
    args = f"k => {design.layout.k}, blocks => {levels[0]}"
    if len(levels) > 1:
        args += f", inner_blocks => {levels[1]}"
    return f"simpg.create_index('table', 'column', {args})"


def _candidates(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 0.01:
        return f"{value:.2f}"
    return f"{value:.1e}" if value else "0"


def format_table(designs: list[planner.Design]) -> str:
    """The designs as an aligned text table, recommended one marked with ``*``."""
    header = [
        "layout",
        "tables",
        "prefix bits",
        "candidates/lookup",
        "heap B/row",
        "index B/row",
        "total B/row",
        "cost",
    ]
    rows = []
    for d in designs:
        bits = (
            str(d.min_prefix_bits)
            if d.min_prefix_bits == d.max_prefix_bits
            else f"{d.min_prefix_bits}-{d.max_prefix_bits}"
        )
        rows.append(
            [
                d.layout.name + (" *" if d.recommended else ""),
                str(d.tables),
                bits,
                _candidates(d.expected_candidates),
                f"{d.heap_bytes_per_row:.0f}",
                f"{d.index_bytes_per_row:.0f}",
                f"{d.bytes_per_row:.0f}",
                f"{d.cost:,.1f}",
            ]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w)
            for i, (h, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the plan."""
    k = _k(args.k)
    rows = parse_rows(args.rows)
    designs = planner.plan(k, rows, everything=args.everything)
    if args.json:
        print(
            json.dumps({"k": k, "rows": rows, "designs": [d.as_dict() for d in designs]}, indent=2)
        )
        return 0
    best = next(d for d in designs if d.recommended)
    print(
        f"k={k}, {rows:,} rows: recommended {best.layout.name} "
        f"({best.tables} tables, ~{_candidates(best.expected_candidates)} candidates per lookup)"
    )
    print()
    print(format_table(designs))
    print()
    print(
        "candidates/lookup: rows read per lookup on uniform fingerprints (sum of rows / 2^prefix)"
    )
    print("B/row: stored prefix columns (heap) and B-trees as built (fillfactor 100);")
    print("       random inserts later leave B-tree pages ~70% full: ~29 index B/row per table")
    print(f"cost: tables + candidates/{planner.CANDIDATES_PER_PROBE}, in B-tree probes; * = lowest")
    print(f"create it: {_create_call(best)}")
    return 0
