"""The layout planner: designs, figures, recommendation, and `simpg plan`."""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from fractions import Fraction

import pytest

from simpg import cli, planner
from simpg.exc import InvalidLayout
from simpg.layout import MAX_K, Layout
from tests.layouts import one_level_layouts, two_level_layouts

ROWS = [0, 1, 1000, 123_457, 1_000_000, 10_000_000, 2**34, 2**62]

#: What create_index's SQL (simpg.apply_segments) can move: 12 runs of bits.
SQL_MAX_SEGMENTS = 12


@functools.cache
def _all_layouts() -> tuple[Layout, ...]:
    return tuple(one_level_layouts() + two_level_layouts())


def _weight(layout: Layout) -> Fraction:
    """Expected candidates per row, exactly."""
    return sum((Fraction(1, 2 ** layout.prefix_bits(t)) for t in range(layout.tables)), Fraction(0))


def test_prefix_histogram_matches_layout_on_every_supported_layout():
    layouts = _all_layouts()
    assert len(layouts) > 300
    for layout in layouts:
        expected = Counter(layout.prefix_bits(t) for t in range(layout.tables))
        assert planner.prefix_histogram(layout.k, layout.levels) == expected, layout.name


@pytest.mark.parametrize("k", range(0, 8))
def test_front_is_pareto_optimal_over_every_valid_layout(k):
    everything = [lay for lay in _all_layouts() if lay.k == k]
    front = planner.plan(k, 1_000_000, everything=True)
    listed = {d.layout for d in front}
    # fewest tables first, and each listed design expects strictly fewer candidates
    assert [d.tables for d in front] == sorted(d.tables for d in front)
    assert all(
        a.expected_candidates > b.expected_candidates
        for a, b in zip(front, front[1:], strict=False)
    )
    weight = {layout: _weight(layout) for layout in everything}
    for design in front:
        mine = (design.tables, weight[design.layout])
        for other in everything:
            dominates = (
                other.tables <= mine[0]
                and weight[other] <= mine[1]
                and (other.tables, weight[other]) != mine
            )
            assert not dominates, (other.name, design.layout.name)
    # every valid layout missing from the front is matched or beaten by a listed one
    for other in everything:
        if other not in listed:
            assert any(
                d.tables <= other.tables and weight[d.layout] <= weight[other] for d in front
            ), other.name


@pytest.mark.parametrize("k", range(0, MAX_K + 1))
@pytest.mark.parametrize("rows", ROWS)
def test_figures_and_recommendation(k, rows):
    designs = planner.plan(k, rows)
    assert designs and sum(d.recommended for d in designs) == 1
    for d in designs:
        layout = d.layout
        assert (d.tables, d.rows) == (layout.tables, rows)
        prefixes = [layout.prefix_bits(t) for t in range(layout.tables)]
        assert (d.min_prefix_bits, d.max_prefix_bits) == (min(prefixes), max(prefixes))
        assert d.expected_candidates == pytest.approx(layout.expected_candidates(rows), rel=1e-9)
        assert d.cost == pytest.approx(
            layout.tables + layout.expected_candidates(rows) / 4, rel=1e-9
        )
        assert d.heap_bytes_per_row == 8.0 * layout.tables
        assert d.bytes_per_row == d.heap_bytes_per_row + d.index_bytes_per_row
    best = next(d for d in designs if d.recommended)
    assert best.cost == min(d.cost for d in designs)
    assert planner.recommend(k, rows) == best.layout
    # the list stops at the first design expecting fewer than 0.01 candidates
    assert all(d.expected_candidates >= 0.01 for d in designs[:-1])
    full = planner.plan(k, rows, everything=True)
    assert [d.layout for d in full[: len(designs)]] == [d.layout for d in designs]
    assert len(full) == len(designs) or designs[-1].expected_candidates < 0.01


@pytest.mark.parametrize("k", range(0, MAX_K + 1))
def test_every_listable_design_can_be_built_in_sql(k):
    for design in planner.plan(k, 2**62, everything=True):
        layout = design.layout
        assert max(len(layout.segments(t)) for t in range(layout.tables)) <= SQL_MAX_SEGMENTS, (
            layout.name
        )


def test_seed_designs_are_listed_with_the_seeds_figures():
    # seed 001: k=3, 6 blocks -> 20 tables searched on 31, 32 or 33 bits; 4 blocks -> 4
    # tables of 16 bits; Google's 4 x 4 -> 16 tables matching 28 bits
    by_name = {d.layout.name: d for d in planner.plan(3, 2**34, everything=True)}
    assert (
        by_name["k3:6"].tables,
        by_name["k3:6"].min_prefix_bits,
        by_name["k3:6"].max_prefix_bits,
    ) == (20, 31, 33)
    assert (by_name["k3:4"].tables, by_name["k3:4"].min_prefix_bits) == (4, 16)
    assert (
        by_name["k3:4x4"].tables,
        by_name["k3:4x4"].min_prefix_bits,
        by_name["k3:4x4"].max_prefix_bits,
    ) == (16, 28, 28)
    # "2^34 - 28 = 64 results per query" per table
    assert by_name["k3:4x4"].expected_candidates == 16 * 64


@pytest.mark.parametrize("k", range(1, 8))
def test_recommendation_follows_the_log2_rule(k):
    # the seeds' rule: more rows never asks for fewer tables, and once rows reach
    # 2^(shortest prefix of the recommended design) a design with more tables is chosen
    tables = [planner.recommend(k, rows).tables for rows in (10**e for e in range(2, 12))]
    assert tables == sorted(tables)
    for rows in (10**5, 10**6, 10**7):
        best = next(d for d in planner.plan(k, rows) if d.recommended)
        nxt = planner.plan(k, rows, everything=True)
        richer = [d for d in nxt if d.tables > best.tables]
        if richer:  # adding tables would remove fewer candidates than 4 per table
            gain = best.expected_candidates - richer[0].expected_candidates
            assert gain / 4 <= richer[0].tables - best.tables


def test_k3_at_ten_million_rows_is_five_blocks():
    # the reference schema's choice (10 tables): prefixes of 25-26 bits, log2(1e7) = 23.3
    best = next(d for d in planner.plan(3, 10_000_000) if d.recommended)
    assert best.layout == Layout(3, (5,))
    assert best.min_prefix_bits >= math.log2(10_000_000)


@pytest.mark.parametrize(
    "k, rows, message",
    [
        (-1, 10, "k must be an integer from 0 to 16, got -1"),
        (17, 10, "k must be an integer from 0 to 16, got 17"),
        (True, 10, "k must be an integer from 0 to 16, got True"),
        (3, -5, "rows must be a non-negative integer, got -5"),
        (3, 1.5, "rows must be a non-negative integer, got 1.5"),
    ],
)
def test_bad_input_names_the_value(k, rows, message):
    with pytest.raises(InvalidLayout, match=f"^{message}$"):
        planner.plan(k, rows)
    with pytest.raises(InvalidLayout, match=f"^{message}$"):
        planner.recommend(k, rows)


def test_cli_table(capsys):
    assert cli.main(["plan", "-k", "3", "--rows", "10M"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "recommended k3:5" in lines[0]
    table = lines[2 : 2 + 1 + len(planner.plan(3, 10_000_000))]
    assert table[0].split()[:3] == ["layout", "tables", "prefix"]
    assert [row.split()[0] for row in table[1:]] == [
        d.layout.name for d in planner.plan(3, 10_000_000)
    ]
    assert "k3:5 *" in out
    assert "simpg.create_index('table', 'column', k => 3, blocks => 5)" in out


def test_cli_json_is_the_plan(capsys):
    assert cli.main(["plan", "-k", "4", "--rows", "1_500_000", "--json", "--all"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["k"] == 4 and data["rows"] == 1_500_000
    assert data["designs"] == [d.as_dict() for d in planner.plan(4, 1_500_000, everything=True)]


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["-k", "3", "--rows", "ten"],
            "simpg: rows must be a non-negative integer such as 10000000 or 10M, got 'ten'",
        ),
        (["-k", "x", "--rows", "10"], "simpg: k must be an integer from 0 to 16, got 'x'"),
        (["-k", "20", "--rows", "10"], "simpg: k must be an integer from 0 to 16, got 20"),
    ],
)
def test_cli_bad_input_is_one_line(capsys, argv, message):
    assert cli.main(["plan", *argv]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == message and captured.out == ""


@pytest.mark.parametrize(
    "text, rows",
    [
        ("10000000", 10**7),
        ("10_000_000", 10**7),
        ("10,000,000", 10**7),
        ("10M", 10**7),
        ("1.5g", 1_500_000_000),
        ("0", 0),
        ("250k", 250_000),
    ],
)
def test_rows_argument(text, rows):
    from simpg.commands._common import parse_rows

    assert parse_rows(text) == rows
