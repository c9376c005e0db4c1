"""SQL and Python agree bit for bit on the layout math, for every table of every supported layout."""

import itertools
import random

import psycopg
import pytest

from simpg import bits
from simpg.layout import Layout
from tests.layouts import one_level_layouts, two_level_layouts

ADVERSARIAL = [0, 2**64 - 1, 1, 2**63, 2**63 - 1, 0x8000000000000001, 0xAAAAAAAAAAAAAAAA]


def _tables(layouts):
    return [(layout, t) for layout in layouts for t in range(layout.tables)]


def _flat(layout, t):
    return [v for s in layout.segments(t) for v in (s.src_shift, s.mask, s.dst_shift)]


@pytest.mark.parametrize("kind", ["one-level", "two-level"])
def test_segments_and_prefix_bits_match_for_every_table(conn, kind):
    layouts = one_level_layouts() if kind == "one-level" else two_level_layouts()
    tables = _tables(layouts)
    ks = [layout.k for layout, _ in tables]
    m1 = [layout.levels[0] for layout, _ in tables]
    m2 = [layout.levels[1] if len(layout.levels) > 1 else None for layout, _ in tables]
    ts = [t for _, t in tables]
    rows = conn.execute(
        """SELECT simpg.table_segments(k, levels, t), simpg.prefix_bits(k, levels, t), simpg.table_count(k, levels)
           FROM (SELECT k, CASE WHEN b IS NULL THEN ARRAY[a] ELSE ARRAY[a, b] END AS levels, t, n
                 FROM unnest(%s::int[], %s::int[], %s::int[], %s::int[]) WITH ORDINALITY AS u(k, a, b, t, n)) s
           ORDER BY n""",
        [ks, m1, m2, ts],
    ).fetchall()
    assert len(rows) == len(tables) > 1000
    for (layout, t), (segs, prefix, count) in zip(tables, rows, strict=True):
        assert segs == _flat(layout, t), (layout.name, t)
        assert prefix == layout.prefix_bits(t), (layout.name, t)
        assert count == layout.tables


@pytest.mark.parametrize("kind, per_table", [("one-level", 2), ("two-level", 1)])
def test_permute_and_prefix_range_match(conn, kind, per_table):
    layouts = one_level_layouts() if kind == "one-level" else two_level_layouts()
    rng = random.Random(kind)
    cases = []
    for layout, t in _tables(layouts):
        for i in range(per_table):
            fp = ADVERSARIAL[(t + i) % len(ADVERSARIAL)] if i == 0 else rng.getrandbits(64)
            cases.append((layout, t, fp))
    rows = conn.execute(
        """SELECT simpg.permute(fp, k, levels, t), r.lo, r.hi
           FROM (SELECT fp, k, CASE WHEN b IS NULL THEN ARRAY[a] ELSE ARRAY[a, b] END AS levels, t, n
                 FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::int[], %s::int[])
                      WITH ORDINALITY AS u(fp, k, a, b, t, n)) s,
                LATERAL simpg.prefix_range(fp, k, levels, t) AS r
           ORDER BY n""",
        [[bits.to_db(fp) for _, _, fp in cases], [c[0].k for c in cases], [c[0].levels[0] for c in cases],
         [c[0].levels[1] if len(c[0].levels) > 1 else None for c in cases], [c[1] for c in cases]],
    ).fetchall()
    assert len(rows) == len(cases)
    for (layout, t, fp), (permuted, lo, hi) in zip(cases, rows, strict=True):
        assert permuted == layout.permute(fp, t), (layout.name, t, fp)
        assert (lo, hi) == layout.prefix_range(fp, t), (layout.name, t, fp)


def test_permute_folds_to_shifts_in_generated_columns(conn):
    """With constant layout arguments the planner inlines permute: no PL/pgSQL call per row."""
    conn.execute("CREATE TABLE t (fp bigint)")
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN (VERBOSE) SELECT simpg.permute(fp, 3, '{6}', 7) FROM t").fetchall())
    assert "permute" not in plan and "table_segments" not in plan and ">>" in plan


@pytest.mark.parametrize("k, levels, message", [
    (3, [3], "blocks must be greater than k (blocks=3, k=3)"),
    (-1, [4], "k must be an integer from 0 to 16, got -1"),
    (2, [65], "blocks=65 is more than the 64 bits left to split"),
    (7, [12], "layout k=7 blocks=12 needs 792 tables, more than 256"),
])
def test_invalid_layouts_raise_the_same_messages_as_python(conn, k, levels, message):
    import psycopg

    with pytest.raises(psycopg.errors.InvalidParameterValue) as err:
        conn.execute("SELECT simpg.table_count(%s, %s::int[])", [k, levels])
    assert err.value.diag.message_primary == message


def test_radius_error_decides_like_python(conn):
    """simpg.radius_error and simpg.layout.check_radius: the same radii pass, with the same messages."""
    from simpg.exc import InvalidLayout
    from simpg.layout import check_radius

    for k, limit, what in itertools.product([None, -1, 0, 3, 4, 16, 17], [0, 3, 16], [None, "the simpg index on d.fp"]):
        try:
            expected = None if check_radius(k, limit, what=what) == k else "wrong value"
        except InvalidLayout as err:
            expected = str(err).replace("None", "null")
        assert conn.execute("SELECT simpg.radius_error(%s, %s, %s)", [k, limit, what]).fetchone()[0] == expected
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err:
        conn.execute("SELECT simpg.check_radius(4, 3, 'the simpg index on d.fp', 'make it wider')")
    assert (err.value.diag.message_primary, err.value.diag.message_hint) == (
        "k=4 is above the radius k=3 that the simpg index on d.fp guarantees", "make it wider")
    assert conn.execute("SELECT simpg.check_radius(3, 3, 'x'), simpg.check_radius(16)").fetchone() == (3, 16)


def test_layout_error_never_raises_and_agrees_with_python(conn):
    """Documented never to raise (the catalog view asks it of every prefix column): every k
    and every one or two block counts, extremes included, give a message or NULL, and the
    message is Python's (k=16 blocks=40x32 once overflowed bigint counting tables)."""
    from simpg.layout import Layout

    values = [-2**31, -1, 0, 1, 2, 3, 5, 8, 16, 17, 20, 32, 40, 63, 64, 65, 2**31 - 1]
    cases = [(k, levels) for k in (-1, 0, 1, 3, 8, 16, 17)
             for levels in [[a] for a in values] + [[a, b] for a in values for b in values]]
    cases += [(None, [4]), (3, None), (3, []), (3, [4, 5, 6]), (3, [None])]
    got = conn.execute(
        "SELECT array_agg(simpg.layout_error(c.k, l.levels) ORDER BY c.n) "
        "FROM unnest(%s::integer[], %s::text[]) WITH ORDINALITY AS c(k, lv, n), "
        "LATERAL (SELECT c.lv::integer[] AS levels) AS l",
        [[k for k, _ in cases], [None if lv is None else "{" + ",".join("NULL" if v is None else str(v)
                                                                         for v in lv) + "}" for _, lv in cases]]
    ).fetchone()[0]
    for (k, levels), message in zip(cases, got, strict=True):
        if k is None or levels is None or None in levels or len(levels) not in (1, 2):
            assert message is not None
            continue
        try:
            Layout(k, tuple(levels))
            expected = None
        except ValueError as err:
            expected = str(err)
        assert message == expected, (k, levels)


def test_table_out_of_range(conn):
    import psycopg

    with pytest.raises(psycopg.errors.InvalidParameterValue, match="table must be from 0 to 19, got 20"):
        conn.execute("SELECT simpg.permute(1, 3, '{6}', 20)")
    assert Layout(3, (6,)).tables == 20


def test_binomial_is_exact_up_to_64(conn):
    # plain SQL over numeric factorials (inlined into table_order): every C(n, r) it can be asked
    import math

    rows = conn.execute(
        "SELECT n, r, simpg.binomial(n, r) FROM generate_series(0, 64) AS n, generate_series(-1, 65) AS r"
    ).fetchall()
    assert len(rows) == 65 * 67
    assert [v for _, _, v in rows] == [math.comb(n, r) if 0 <= r <= n else 0 for n, r, _ in rows]
    assert conn.execute("SELECT simpg.binomial(NULL, 2), simpg.binomial(5, NULL)").fetchone() == (None, None)
