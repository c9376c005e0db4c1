"""simpg.range_scan_targets: which partitions of a permuted table a range lookup names
directly (so that PostgreSQL runs their foreign scans at once), and when it must read
the table itself instead. Local range partitions stand in for the shards' foreign ones:
the choice depends only on the partitions' bounds, kinds and the caller's rights."""

from __future__ import annotations

import psycopg
from psycopg import sql

from simpg import bits
from simpg.layout import Layout

MIN, MAX = -(2**63), 2**63 - 1


def targets(conn: psycopg.Connection, ranges: list[tuple[int, int]]) -> list[tuple[int, str]]:
    rows = conn.execute("SELECT i, target::text FROM simpg.range_scan_targets(ARRAY['r0', 'r1']::regclass[], "
                        "%s, %s, %s) ORDER BY i, target::text",
                        [[t for t, _ in enumerate(ranges)], [lo for lo, _ in ranges], [hi for _, hi in ranges]])
    return [(i, name) for i, name in rows.fetchall()]


def test_the_partitions_that_hold_each_range_are_named(conn):
    for table in ("r0", "r1"):
        conn.execute(f"CREATE TABLE {table} (p bigint NOT NULL, key bigint, fp bigint) PARTITION BY RANGE (p)")
        conn.execute(f"CREATE TABLE {table}_a PARTITION OF {table} FOR VALUES FROM (MINVALUE) TO (0)")
        conn.execute(f"CREATE TABLE {table}_b PARTITION OF {table} FOR VALUES FROM (0) TO (1000)")
        conn.execute(f"CREATE TABLE {table}_c PARTITION OF {table} FOR VALUES FROM (1000) TO (MAXVALUE)")
    # the bounds: lower inclusive, upper exclusive, MINVALUE and MAXVALUE, a range across a bound
    assert targets(conn, [(MIN, -1), (0, 999)]) == [(1, "r0_a"), (2, "r1_b")]
    assert targets(conn, [(1000, MAX), (-5, 5)]) == [(1, "r0_c"), (2, "r1_a"), (2, "r1_b")]
    assert targets(conn, [(999, 1000), (MIN, MAX)]) == [(1, "r0_b"), (1, "r0_c"),
                                                         (2, "r1_a"), (2, "r1_b"), (2, "r1_c")]
    # a default partition (its bound is no range): the table itself, pruned by PostgreSQL
    conn.execute("ALTER TABLE r1 DETACH PARTITION r1_c")
    conn.execute("ALTER TABLE r1 ATTACH PARTITION r1_c DEFAULT")
    assert targets(conn, [(5, 5), (5, 5)]) == [(1, "r0_b"), (2, "r1")]
    # a sub-partitioned partition: the table itself
    conn.execute("ALTER TABLE r0 DETACH PARTITION r0_a")
    conn.execute("CREATE TABLE r0_d PARTITION OF r0 FOR VALUES FROM (MINVALUE) TO (0) PARTITION BY HASH (key)")
    conn.execute("CREATE TABLE r0_d0 PARTITION OF r0_d FOR VALUES WITH (MODULUS 1, REMAINDER 0)")
    assert targets(conn, [(5, 5), (5, 5)]) == [(1, "r0"), (2, "r1")]


def test_a_partition_the_caller_may_not_read_sends_the_lookup_through_the_table(db):
    conn = db.conn
    role = f"reader_{db.name}"
    conn.execute("CREATE TABLE r0 (p bigint NOT NULL, key bigint, fp bigint) PARTITION BY RANGE (p)")
    conn.execute("CREATE TABLE r0_a PARTITION OF r0 FOR VALUES FROM (MINVALUE) TO (0)")
    conn.execute("CREATE TABLE r0_b PARTITION OF r0 FOR VALUES FROM (0) TO (MAXVALUE)")
    conn.execute("CREATE TABLE r1 (LIKE r0) PARTITION BY RANGE (p)")
    conn.execute("CREATE TABLE r1_a PARTITION OF r1 FOR VALUES FROM (MINVALUE) TO (MAXVALUE)")
    conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    try:
        # SELECT on the tables is granted, not on their partitions (a GRANT does not reach them)
        conn.execute(sql.SQL("GRANT SELECT ON r0, r1, r1_a TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        assert targets(conn, [(5, 5), (5, 5)]) == [(1, "r0"), (2, "r1_a")]
    finally:
        conn.execute("RESET ROLE")
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_prefix_ranges_equal_prefix_range_and_the_python_layout(conn):
    layout = Layout(3, (5,))
    fps = [0, 1, 2**63, 2**64 - 1, 2**63 - 1, 0x0123456789ABCDEF, None, 0xF0F0F0F0F0F0F0F0]
    got = conn.execute("SELECT n, t, lo, hi FROM simpg.prefix_ranges(%s::bigint[], 3, '{5}')",
                       [[None if f is None else bits.to_db(f) for f in fps]]).fetchall()
    want = [(n, t, lo, hi) for n, f in enumerate(fps, 1) if f is not None
            for t, (lo, hi) in enumerate(layout.prefix_ranges(f))]
    assert got == want
    one = conn.execute("SELECT x.lo, x.hi FROM simpg.prefix_range(%s, 3, '{5}', 7) AS x",
                       [bits.to_db(fps[5])]).fetchone()
    assert one == layout.prefix_range(fps[5], 7)
