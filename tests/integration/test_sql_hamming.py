"""simpg.hamming in SQL against Python's popcount."""

import random

import pytest

from simpg import bits

EDGE = [0, 1, -1, 2**63 - 1, -(2**63), -(2**63) + 1, 1 << 62, -2, 0x5555555555555555, -0x5555555555555556]


def test_hamming_equals_python_popcount_on_100k_pairs(conn):
    rng = random.Random(20261122)
    a = [bits.to_db(rng.getrandbits(64)) for _ in range(100_000)]
    b = [bits.to_db(rng.getrandbits(64)) for _ in range(100_000)]
    # adversarial pairs: every edge value against every other, single bits 0 and 63, near pairs
    a += [x for x in EDGE for _ in EDGE] + [0, 0, -1, -(2**63)]
    b += [y for _ in EDGE for y in EDGE] + [1, -(2**63), 2**63 - 1, 2**63 - 1]
    for i in range(0, 64):
        x = bits.to_db(rng.getrandbits(64))
        a.append(x)
        b.append(bits.to_db(bits.from_db(x) ^ (1 << i)))
    rows = conn.execute(
        "SELECT simpg.hamming(x, y) FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS u(x, y, n) ORDER BY n",
        [a, b],
    ).fetchall()
    got = [r[0] for r in rows]
    expected = [bits.hamming(x, y) for x, y in zip(a, b, strict=True)]
    assert len(got) == len(a) > 100_000
    assert got == expected
    assert max(expected) == 64 and min(expected) == 0


@pytest.mark.parametrize("a, b, expected", [(0, -1, 64), (-(2**63), 0, 1), (1, 0, 1), (5, 5, 0)])
def test_hamming_edges(conn, a, b, expected):
    assert conn.execute("SELECT simpg.hamming(%s, %s)", [a, b]).fetchone()[0] == expected


def test_hamming_null_is_null(conn):
    assert conn.execute("SELECT simpg.hamming(NULL, 1)").fetchone()[0] is None


def test_hamming_is_inlined(conn):
    """The planner replaces the call by bit_count(...), so no function call per row."""
    conn.execute("CREATE TABLE t (fp bigint)")
    plan = conn.execute("EXPLAIN (VERBOSE) SELECT simpg.hamming(fp, 7) FROM t").fetchall()
    text = "\n".join(r[0] for r in plan)
    assert "bit_count" in text and "hamming" not in text
