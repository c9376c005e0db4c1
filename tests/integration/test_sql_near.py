"""simpg.near returns exactly the brute-force set, for every supported layout."""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg.sql import SQL, Identifier

from simpg import bits
from simpg.layout import Layout
from tests.layouts import MAX_TEST_K, one_level_layouts, two_level_layouts
from tests.oracles import brute_near_numbered


def flip(fp: int, positions) -> int:
    for i in positions:
        fp ^= 1 << i
    return fp


def corpus_for(k: int, seed: int) -> tuple[list[int], list[int]]:
    """Queries and a corpus with planted neighbours at distances 0..k+1 of each query."""
    rng = random.Random(seed)
    queries = [rng.getrandbits(64), 1 << 63, 0, 2**64 - 1, rng.getrandbits(64) | (1 << 63)]
    rows: list[int] = []
    for q in queries:
        rows += [q, q]  # duplicates of the query: distance 0, in different rows
        for d in range(0, k + 2):
            rows.append(flip(q, rng.sample(range(64), d)))
            # adversarial: the flipped bits include bit 0 and bit 63 (the sign bit)
            edge = [0, 63][: d] + rng.sample(range(1, 63), max(d - 2, 0))
            rows.append(flip(q, edge))
    rows += [rng.getrandbits(64) for _ in range(150)]
    return queries, rows


def check_layout(conn: psycopg.Connection, layout: Layout, queries: list[int], rows: list[int]) -> None:
    blocks = layout.levels[0]
    inner = layout.levels[1] if len(layout.levels) > 1 else None
    conn.execute("SELECT simpg.create_index('corpus', 'fp', %s, %s, %s)", [layout.k, blocks, inner])
    for q in queries:
        for k in {layout.k, max(layout.k - 1, 0)}:
            got = conn.execute(
                "SELECT id, simpg.hamming(fp, %(q)s) FROM simpg.near(NULL::corpus, %(q)s, %(k)s)",
                {"q": bits.to_db(q), "k": k},
            ).fetchall()
            assert sorted(got) == sorted(brute_near_numbered(rows, q, k)), (layout.name, q, k)
            assert [d for _, d in got] == sorted(d for _, d in got)  # nearest first
    conn.execute("SELECT simpg.drop_index('corpus', 'fp')")


@pytest.mark.parametrize("k", range(MAX_TEST_K + 1))
def test_near_equals_brute_force_for_every_layout(conn, k):
    queries, rows = corpus_for(k, seed=k)
    layouts = [layout for layout in one_level_layouts() if layout.k == k]
    layouts += [layout for layout in two_level_layouts() if layout.k == k][::9]
    assert layouts
    # The table is re-created below; a statement psycopg prepared would keep the old row type.
    conn.prepare_threshold = None
    for layout in layouts:
        # a fresh table each time: dropped columns still count toward PostgreSQL's 1600
        conn.execute("DROP TABLE IF EXISTS corpus")
        conn.execute("CREATE TABLE corpus (id bigserial PRIMARY KEY, fp bigint NOT NULL)")
        with conn.cursor().copy("COPY corpus (fp) FROM STDIN") as copy:
            for fp in rows:
                copy.write_row((bits.to_db(fp),))
        check_layout(conn, layout, queries, rows)
    # drop_index removed exactly what create_index added
    columns = [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 'corpus'::regclass AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum").fetchall()]
    assert columns == ["id", "fp"]
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone()[0] == 0


def test_near_uses_the_prefix_indexes_never_a_seq_scan(conn):
    conn.execute("CREATE TABLE corpus (id bigserial PRIMARY KEY, fp bigint NOT NULL)")
    conn.execute("INSERT INTO corpus (fp) SELECT (random() * 2^63)::bigint * (CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END) "
                 "FROM generate_series(1, 20000) g")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 3, 5)")
    query = conn.execute("SELECT simpg.near_query('corpus', 12345, 3)").fetchone()[0]
    plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query}").fetchall())
    assert "Seq Scan" not in plan
    assert plan.count("Bitmap Index Scan on corpus_fp_p") == 10
    # and through the function itself, on a tiny table where the planner would prefer a scan
    conn.execute("LOAD 'auto_explain'")
    conn.execute("SET auto_explain.log_min_duration = 0")
    conn.execute("SET auto_explain.log_nested_statements = on")
    conn.execute("SET client_min_messages = log")
    conn.execute("SET auto_explain.log_level = notice")
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    conn.execute("CREATE TABLE tiny (id int, fp bigint)")
    conn.execute("INSERT INTO tiny VALUES (1, 5), (2, 7)")
    conn.execute("SELECT simpg.create_index('tiny', 'fp', 3, 5)")
    conn.execute("SELECT * FROM simpg.near(NULL::tiny, 5, 3)").fetchall()
    nested = [n for n in notices if "tiny" in n and "simpg.hamming" not in n or "Bitmap" in n]
    text = "\n".join(notices)
    assert "Bitmap Index Scan on tiny_fp_p0_idx" in text, text
    assert "Seq Scan on tiny" not in text
    assert nested


def test_near_errors_name_the_values(conn):
    conn.execute("CREATE TABLE corpus (id int, fp bigint, other bigint, title text)")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 2, 4)")
    cases = [
        ("SELECT * FROM simpg.near(NULL::corpus, 1, 3)",
         "k=3 is above the radius k=2 that the simpg index on public.corpus.fp guarantees"),
        ("SELECT * FROM simpg.near(NULL::corpus, NULL, 2)", "fingerprint must not be null"),
        ("SELECT * FROM simpg.near(NULL::corpus, 1, -1)", "k must be a non-negative integer, got -1"),
        ("SELECT * FROM simpg.near(NULL::corpus, 1, NULL)", "k must be a non-negative integer, got null"),
        ("SELECT * FROM simpg.near(NULL::corpus, 1, 1, 'other')", "no simpg index on public.corpus.other"),
        ("SELECT simpg.create_index('corpus', 'other', 3, 3)", "blocks must be greater than k (blocks=3, k=3)"),
        ("SELECT simpg.create_index('corpus', 'title', 3)", "column public.corpus.title is text, expected bigint"),
        ("SELECT simpg.create_index('corpus', 'nope', 3)", "column nope of table public.corpus does not exist"),
        ("SELECT simpg.create_index('corpus', 'fp', 3, 5)", "column public.corpus.fp already has a simpg index"),
        ("SELECT simpg.drop_index('corpus', 'other')", "no simpg index on public.corpus.other"),
        ("SELECT * FROM simpg.near(1::bigint, 1, 1)",
         "first argument must be a table row type such as NULL::articles, got bigint"),
    ]
    for sql, message in cases:
        with pytest.raises(psycopg.Error) as err:
            conn.execute(sql)
        assert err.value.diag.message_primary == message, sql
    # nothing changed by the failed calls
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone()[0] == 1


def test_two_fingerprint_columns_need_naming(conn):
    conn.execute("CREATE TABLE corpus (id int, a bigint, b bigint)")
    conn.execute("INSERT INTO corpus VALUES (1, 10, 20)")
    conn.execute("SELECT simpg.create_index('corpus', 'a', 1, 2)")
    conn.execute("SELECT simpg.create_index('corpus', 'b', 1, 2)")
    with pytest.raises(psycopg.Error, match="table public.corpus has 2 simpg indexes; name the fingerprint column"):
        conn.execute("SELECT * FROM simpg.near(NULL::corpus, 10, 0)")
    assert conn.execute("SELECT id FROM simpg.near(NULL::corpus, 20, 0, 'b')").fetchall() == [(1,)]


def test_create_index_default_blocks_follow_the_table_size(conn):
    conn.execute("CREATE TABLE corpus (id int, fp bigint)")
    conn.execute("INSERT INTO corpus SELECT g, g FROM generate_series(1, 3000) g")
    levels = conn.execute("SELECT levels FROM simpg.create_index('corpus', 'fp', 3)").fetchone()[0]
    expected = conn.execute("SELECT simpg.default_levels(3, 3000)").fetchone()[0]
    assert levels == expected


def test_generated_columns_follow_inserts_and_updates(conn):
    conn.execute("CREATE TABLE corpus (id int PRIMARY KEY, fp bigint)")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 3, 6)")
    conn.execute("INSERT INTO corpus VALUES (1, -1), (2, NULL)")
    conn.execute("UPDATE corpus SET fp = 4 WHERE id = 1")
    layout = Layout(3, (6,))
    row = conn.execute("SELECT " + ", ".join(f"fp_p{t}" for t in range(20)) + " FROM corpus WHERE id = 1").fetchone()
    assert list(row) == [layout.permute(4, t) for t in range(20)]
    assert conn.execute("SELECT fp_p3 FROM corpus WHERE id = 2").fetchone()[0] is None
    assert conn.execute("SELECT id FROM simpg.near(NULL::corpus, 5, 1)").fetchall() == [(1,)]


@pytest.mark.parametrize("base, suffix", [
    ("articles_simhash", "_p3_idx"),
    ("a" * 70, "_p12_idx"),
    ("résumé_" * 12, "_p7_idx"),
    ("文档指纹" * 10, "_p0"),
])
def test_object_names_fit_63_bytes_and_match_python(conn, base, suffix):
    from simpg.sqlalchemy.index import object_name

    got = conn.execute("SELECT simpg.object_name(%s, %s)::text", [base, suffix]).fetchone()[0]
    assert len(got.encode()) <= 63 and got.endswith(suffix)
    assert got == object_name(base, suffix)
    other = conn.execute("SELECT simpg.object_name(%s, %s)::text", [base + "x", suffix]).fetchone()[0]
    assert other != got or len((base + suffix).encode()) <= 63


def test_long_unicode_table_names_get_distinct_index_names(conn):
    name = "résumé_" * 9
    conn.execute(f'CREATE TABLE "{name}" (id int, fp bigint)')
    conn.execute("SELECT simpg.create_index(%s, 'fp', 3, 5)", [f'"{name}"'])
    names = conn.execute("SELECT index_names FROM simpg.indexes").fetchone()[0]
    assert len(set(names)) == 10 and all(len(n.encode()) <= 63 for n in names)


def test_dropping_an_indexed_table_or_column_forgets_its_catalog_row(conn):
    for table in ("a", "b", "c"):
        conn.execute(f"CREATE TABLE {table} (id int, fp bigint)")
        conn.execute(f"SELECT simpg.create_index('{table}', 'fp', 2, 3)")
    conn.execute("DROP TABLE a")
    conn.execute("ALTER TABLE b DROP COLUMN fp CASCADE")
    rows = conn.execute("SELECT indexed_table::text FROM simpg.indexes").fetchall()
    assert rows == [("c",)]
    conn.execute("SELECT simpg.drop_index('c', 'fp')")  # its own drops fire the trigger too
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone()[0] == 0


# -- the session's prepared lookups (simpg.near, simpg.near_many) ---------------------------


def load_corpus(conn: psycopg.Connection, rows: list[int], table: str = "corpus") -> None:
    conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, fp bigint NOT NULL)")
    with conn.cursor().copy(f"COPY {table} (fp) FROM STDIN") as copy:
        for fp in rows:
            copy.write_row((bits.to_db(fp),))


def near_ids(conn: psycopg.Connection, q: int, k: int, table: str = "corpus") -> list[tuple[int, int]]:
    return sorted(conn.execute(
        f"SELECT id, simpg.hamming(fp, %(q)s) FROM simpg.near(NULL::{table}, %(q)s, %(k)s)",
        {"q": bits.to_db(q), "k": k}).fetchall())


def test_near_many_equals_brute_force_query_by_query(conn):
    k = 3
    queries, rows = corpus_for(k, seed=11)
    load_corpus(conn, rows)
    conn.execute("SELECT simpg.create_index('corpus', 'fp', %s, 4)", [k])
    # NULLs find nothing; a repeated query is answered at each of its positions
    fps = [bits.to_db(q) for q in queries] + [None, bits.to_db(queries[0])]
    for radius in range(k + 1):
        got = conn.execute(
            "SELECT n.query, (n.hit).id, simpg.hamming((n.hit).fp, (%(fps)s::bigint[])[n.query]) "
            "FROM simpg.near_many(NULL::corpus, %(fps)s, %(k)s) AS n",
            {"fps": fps, "k": radius}).fetchall()
        want = [(i + 1, row_id, d) for i, fp in enumerate(fps) if fp is not None
                for row_id, d in brute_near_numbered(rows, bits.from_db(fp), radius)]  # nearest first
        # by query, then nearest first (ties in any order)
        assert sorted(got) == sorted(want)
        assert [(q, d) for q, _, d in got] == sorted((q, d) for q, _, d in got)
    assert conn.execute("SELECT count(*) FROM simpg.near_many(NULL::corpus, '{}', 3)").fetchone() == (0,)
    with pytest.raises(psycopg.Error, match="fingerprints must not be null"):
        conn.execute("SELECT * FROM simpg.near_many(NULL::corpus, NULL, 3)")
    with pytest.raises(psycopg.Error, match="k=4 is above the radius k=3"):
        conn.execute("SELECT * FROM simpg.near_many(NULL::corpus, '{1}', 4)")


def test_lateral_near_over_a_table_of_queries(conn):
    queries, rows = corpus_for(2, seed=5)
    load_corpus(conn, rows)
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 2)")
    conn.execute("CREATE TABLE probes (pid int, fp bigint)")
    conn.cursor().executemany("INSERT INTO probes VALUES (%s, %s)", [(i, bits.to_db(q)) for i, q in enumerate(queries)])
    got = conn.execute("SELECT p.pid, n.id FROM probes AS p CROSS JOIN LATERAL simpg.near(NULL::corpus, p.fp, 2) AS n"
                       ).fetchall()
    want = [(i, row_id) for i, q in enumerate(queries) for row_id, _ in brute_near_numbered(rows, q, 2)]
    assert sorted(got) == sorted(want)


def test_near_follows_every_change_of_the_index_between_calls(conn):
    """The statement a call prepares outlives it; the next call must still answer exactly."""
    queries, rows = corpus_for(3, seed=3)
    load_corpus(conn, rows)
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 2, 3)")
    assert near_ids(conn, queries[0], 2) == sorted(brute_near_numbered(rows, queries[0], 2))
    # a wider index: k=3 was above the old radius
    conn.execute("SELECT simpg.drop_index('corpus', 'fp')")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 3, 5)")
    for q in queries:
        assert near_ids(conn, q, 3) == sorted(brute_near_numbered(rows, q, 3))
    # another layout of the same radius: same prefix column names, other permutations
    conn.execute("SELECT simpg.drop_index('corpus', 'fp')")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 3, 4)")
    for q in queries:
        assert near_ids(conn, q, 3) == sorted(brute_near_numbered(rows, q, 3))
    # renamed table and columns, another index on a second column
    conn.execute("ALTER TABLE corpus RENAME TO corpus2")
    conn.execute("ALTER TABLE corpus2 RENAME COLUMN fp_p0 TO first_prefix")
    for q in queries:
        assert near_ids(conn, q, 3, "corpus2") == sorted(brute_near_numbered(rows, q, 3))
    conn.execute("ALTER TABLE corpus2 ADD COLUMN other bigint")
    conn.execute("SELECT simpg.create_index('corpus2', 'other', 1, 2)")
    with pytest.raises(psycopg.Error, match="has 2 simpg indexes; name the fingerprint column"):
        near_ids(conn, queries[0], 3, "corpus2")
    assert sorted(conn.execute(f"SELECT id FROM simpg.near(NULL::corpus2, {bits.to_db(queries[1])}, 3, 'fp')")
                  .fetchall()) == [(i,) for i, _ in sorted(brute_near_numbered(rows, queries[1], 3))]
    # rows written between calls are found
    conn.execute("INSERT INTO corpus2 (fp) VALUES (%s)", [bits.to_db(queries[2] ^ 1)])
    assert (len(rows) + 1, 1) in {(i, d) for i, d in conn.execute(
        "SELECT id, simpg.hamming(fp, %(q)s) FROM simpg.near(NULL::corpus2, %(q)s, 3, 'fp')",
        {"q": bits.to_db(queries[2])}).fetchall()}


def test_prepared_lookups_read_the_prefix_indexes(conn):
    conn.execute("CREATE TABLE corpus (id bigserial PRIMARY KEY, fp bigint NOT NULL)")
    conn.execute("INSERT INTO corpus (fp) SELECT (random() * 2^62)::bigint - (random() * 2^62)::bigint "
                 "FROM generate_series(1, 5000)")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 3, 4)")
    conn.execute("ANALYZE corpus")
    conn.execute("SELECT count(*) FROM simpg.near(NULL::corpus, 1, 3)")
    conn.execute("SELECT count(*) FROM simpg.near_many(NULL::corpus, '{1,2}', 3)")
    names = dict(conn.execute("SELECT split_part(name, '_', 2), name FROM pg_prepared_statements "
                              "WHERE name LIKE 'simpg\\_%'").fetchall())
    assert set(names) == {"near", "many"}
    # the plan simpg.near runs: generic (one plan for every fingerprint), without seq scans
    conn.execute("SET plan_cache_mode = force_generic_plan")
    for kind, args in (("near", "1, 3"), ("many", "'{1,2}', 3")):
        plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN EXECUTE {names[kind]}({args})").fetchall())
        assert "Seq Scan on corpus" not in plan, plan
        assert plan.count("Bitmap Index Scan on corpus_fp_p") == 4, plan


@pytest.mark.parametrize("column", ["fp", "FP", "odd 'fp', \"quoted\"", "back\\slash"])
def test_a_call_runs_the_statement_the_last_call_prepared(conn, column):
    """The check that the session's statement is simpg's reads plain names with string
    functions and quoted ones with a regular expression; both must accept simpg's own
    text, or every call would prepare again (exact, but as slow as 0.1.0)."""
    fp = Identifier(column)
    conn.execute(SQL("CREATE TABLE corpus (id bigserial PRIMARY KEY, {} bigint NOT NULL)").format(fp))
    conn.execute(SQL("INSERT INTO corpus ({}) SELECT g FROM generate_series(1, 100) AS g").format(fp))
    conn.execute("SELECT simpg.create_index('corpus', %s, 2, 3)", [column])
    prepared = []
    for probe in (1, 2, 3):
        assert conn.execute("SELECT count(*) FROM simpg.near(NULL::corpus, %s, 2)", [probe]).fetchone()[0] > 0
        prepared.append(conn.execute("SELECT prepare_time FROM pg_prepared_statements "
                                     "WHERE name LIKE 'simpg\\_near\\_%'").fetchall())
    assert len(prepared[0]) == 1 and prepared[0] == prepared[1] == prepared[2]
    assert conn.execute("SELECT radius FROM simpg.prepared_lookup('near', 'corpus', NULL)").fetchone() == (2,)


def test_a_statement_whose_stated_layout_does_not_parse_is_replaced(conn):
    """The session's statement is read as simpg's only if its stated layout parses and
    its text is then exactly simpg's. A statement of that name whose "layout" holds no
    numbers (here inside a string literal) must be replaced, not raise a cast error."""
    conn.execute("CREATE TABLE corpus (id bigserial PRIMARY KEY, fp bigint NOT NULL)")
    conn.execute("INSERT INTO corpus (fp) SELECT g FROM generate_series(1, 100) AS g")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 2, 3)")
    oid = conn.execute("SELECT 'corpus'::regclass::oid").fetchone()[0]
    name = f"simpg_near_{oid}_0"
    conn.execute(f"PREPARE {name}(bigint, integer) AS SELECT t.* FROM public.corpus AS t "
                 f"WHERE 'simpg.layout_is({oid}::oid::regclass, ''fp''::name, x, ''{{y}}''::integer[], "
                 f"''{{NULL}}''::name[], maybe) AND (' <> '' AND $1 IS NOT NULL AND $2 IS NOT NULL")
    assert conn.execute("SELECT radius FROM simpg.prepared_lookup('near', 'corpus', NULL)").fetchone() == (None,)
    got = {r[0] for r in conn.execute("SELECT fp FROM simpg.near(NULL::corpus, 8, 2)").fetchall()}
    assert got == {g for g in range(1, 101) if bits.hamming(g, 8) <= 2}
    assert conn.execute("SELECT radius FROM simpg.prepared_lookup('near', 'corpus', NULL)").fetchone() == (2,)


def test_no_statement_name_for_a_column_that_does_not_exist(conn):
    conn.execute("CREATE TABLE corpus (id bigserial PRIMARY KEY, fp bigint NOT NULL)")
    conn.execute("SELECT simpg.create_index('corpus', 'fp', 2, 3)")
    for col, sketch in ((None, None), ("fp", None), ("nope", None), (None, "nope"), ("fp", "id")):
        name, radius = conn.execute("SELECT * FROM simpg.prepared_lookup('near', 'corpus', %s, %s)",
                                    [col, sketch]).fetchone()
        assert radius is None
        assert (name is None) == ("nope" in (col, sketch)), (col, sketch, name)
    with pytest.raises(psycopg.Error, match="nope"):
        conn.execute("SELECT * FROM simpg.near(NULL::corpus, 1, 2, 'nope')")
