"""Tables the tests load: fingerprints for the psycopg handles (ids 1..n, in the order of the rows
given), and texts for backfill."""

from __future__ import annotations

import random

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


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron".split()


def make_items_table(conn: psycopg.Connection, n: int) -> dict[int, str | None]:
    """items (id bigserial, body text) with n texts of 30 words: a NULL, an empty text and two equal ones."""
    rng = random.Random(7)
    conn.execute("CREATE TABLE items (id bigserial PRIMARY KEY, body text)")
    bodies: list[str | None] = [" ".join(rng.choices(WORDS, k=30)) for _ in range(n)]
    bodies[10] = None
    bodies[11] = ""
    bodies[12] = bodies[13]  # duplicate texts in different rows
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO items (body) VALUES (%s)", [(b,) for b in bodies])
    conn.execute("ANALYZE items")
    return dict(enumerate(bodies, start=1))
