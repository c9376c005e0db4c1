"""Tables the psycopg handle tests load and index (ids 1..n, in the order of the rows given)."""

from __future__ import annotations

import psycopg

from simpg import bits
from simpg.layout import Layout
from simpg.psycopg import SimHashColumn, _internals


def make_table(conn: psycopg.Connection, layout: Layout, rows: list[int], name: str = "docs") -> SimHashColumn:
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, simhash bigint, note text)")
    index = SimHashColumn(conn, name, "simhash")
    with conn.cursor() as cur, cur.copy(f"COPY {name} (id, simhash) FROM STDIN") as copy:
        for i, fp in enumerate(rows, start=1):
            copy.write_row((i, bits.to_db(fp)))
    inner = layout.levels[1] if len(layout.levels) > 1 else None
    assert index.create(layout.k, layout.levels[0], inner) == layout
    return index


def psycopg_notices_deallocate() -> bool:
    """Whether psycopg forgets its prepared statements after a DEALLOCATE ALL it sends (3.3.6, psycopg#1408)."""
    return _internals._version(psycopg.__version__) >= (3, 3, 6)
