"""simpg.plan / simpg.default_levels in SQL agree with simpg.planner, and create_index uses them."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest

from simpg import planner
from simpg.layout import Layout

CASES = [
    (k, rows)
    for k in range(0, 9)
    for rows in (0, 1, 999, 123_457, 1_000_000, 10_000_000, 2**34, 2**62 + 12345)
    if k != 1 or rows in (999, 10_000_000, 2**62 + 12345)
]  # k = 1 has ~1000 layouts: slower
CASES += [(k, rows) for k in (10, 13, 16) for rows in (1000, 10**8)]


def _sql_plan(conn, k, rows, everything=False):
    return conn.execute(
        "SELECT layout, levels, tables, min_prefix_bits, max_prefix_bits, expected_candidates, "
        "heap_bytes_per_row, index_bytes_per_row, cost, recommended FROM simpg.plan(%s, %s, %s)",
        [k, rows, everything],
    ).fetchall()


def _check_same(sql_rows, designs):
    assert [r[0] for r in sql_rows] == [d.layout.name for d in designs]
    for r, d in zip(sql_rows, designs, strict=True):
        assert tuple(r[1]) == d.layout.levels
        assert (r[2], r[3], r[4]) == (d.tables, d.min_prefix_bits, d.max_prefix_bits)
        assert r[5] == pytest.approx(d.expected_candidates, rel=1e-12, abs=1e-300)
        assert (r[6], r[7]) == (d.heap_bytes_per_row, d.index_bytes_per_row)
        assert r[8] == pytest.approx(d.cost, rel=1e-12)
        assert r[9] is d.recommended


def test_plan_and_default_levels_match_python(conn):
    for k, rows in CASES:
        _check_same(_sql_plan(conn, k, rows), planner.plan(k, rows))
        levels = conn.execute("SELECT simpg.default_levels(%s, %s)", [k, rows]).fetchone()[0]
        assert tuple(levels) == planner.recommend(k, rows).levels, (k, rows)


@pytest.mark.parametrize("k", [1, 3, 7])
def test_whole_front_matches_python(conn, k):
    _check_same(_sql_plan(conn, k, 10_000_000, True), planner.plan(k, 10_000_000, everything=True))


def test_prefix_histogram_matches_prefix_bits(conn):
    for layout in (
        Layout(0, (1,)),
        Layout(1, (5, 3)),
        Layout(3, (5,)),
        Layout(3, (4, 4)),
        Layout(3, (6,)),
        Layout(6, (8, 7)),
        Layout(7, (10,)),
    ):
        hist = dict(
            conn.execute(
                "SELECT prefix_bits, tables FROM simpg.prefix_histogram(%s, %s)",
                [layout.k, list(layout.levels)],
            ).fetchall()
        )
        by_sql = Counter(
            r[0]
            for r in conn.execute(
                "SELECT simpg.prefix_bits(%s, %s, t) FROM generate_series(0, %s) AS t",
                [layout.k, list(layout.levels), layout.tables - 1],
            ).fetchall()
        )
        assert hist == by_sql == Counter(layout.prefix_bits(t) for t in range(layout.tables)), (
            layout.name
        )


@pytest.mark.parametrize(
    "k, rows, message",
    [
        (-1, 10, "k must be an integer from 0 to 16, got -1"),
        (17, 10, "k must be an integer from 0 to 16, got 17"),
        (3, -1, "rows must be a non-negative integer, got -1"),
    ],
)
def test_bad_input_names_the_value(conn, k, rows, message):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        conn.execute("SELECT * FROM simpg.plan(%s, %s)", [k, rows])
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        conn.execute("SELECT simpg.default_levels(%s, %s)", [k, rows])


@pytest.mark.parametrize("k, rows", [(3, 0), (3, 3000), (0, 50), (7, 200)])
def test_create_index_without_blocks_builds_the_recommendation(conn, k, rows):
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint NOT NULL)")
    conn.execute(
        "INSERT INTO docs SELECT i, (i * 2654435761) # (i << 40) FROM generate_series(1, %s) AS i",
        [rows],
    )
    row = conn.execute(
        "SELECT k, levels, cardinality(prefix_columns) FROM simpg.create_index('docs', 'fp', %s)",
        [k],
    ).fetchone()
    expected = planner.recommend(k, rows)
    assert (row[0], tuple(row[1]), row[2]) == (k, expected.levels, expected.tables)
