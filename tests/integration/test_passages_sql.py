"""The SQL of passage indexes (sql/functions/45_passages.sql) against brute force.

A passage index is a bigint[] column of winnowed hashes with a GIN index and the config in
the column's comment. These tests fill the column with arrays directly (the Python core that
hashes texts is tested on its own) and compare every answer with tests/oracles.py: pairs of
rows sharing values, and the rows sharing values with a probe, on random and adversarial
arrays (NULL, empty, NULL elements, repeats, unsorted, the int64 extremes, one value in most
rows), on plain and partitioned tables, with common hashes skipped and not.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import psycopg
import pytest
from psycopg import errors

from simpg.passages import DEFAULT_SPACELESS_WINDOW as WS
from simpg.passages import DEFAULT_WINDOW as W
from simpg.passages import PassageConfig
from tests.oracles import (
    HashArray,
    adversarial_hash_arrays,
    brute_passage_candidates,
    brute_passage_pairs,
)

COMMENT = 'simpg passages: {"format": 1, "k": 5, "window": %s, "spaceless_window": %s}'
#: what simpg wrote before the second window: both windows equal
ONE_WINDOW_COMMENT = 'simpg passages: {"format": 1, "k": 5, "window": %s}'


def make_docs(conn: psycopg.Connection, rows: Mapping[int, HashArray], table: str = "docs") -> None:
    """A table (id, body, passages) holding rows."""
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, body text, passages bigint[])")
    insert(conn, rows, table)


def insert(conn: psycopg.Connection, rows: Mapping[int, HashArray], table: str = "docs") -> None:
    with conn.cursor().copy(f"COPY {table} (id, body, passages) FROM STDIN") as copy:
        for key, values in rows.items():
            copy.write_row((key, f"text {key}", values))


def pairs(conn: psycopg.Connection, min_shared: int = 1, max_common: float | None = None,
          table: str = "docs") -> dict[tuple[int, int], int]:
    got = conn.execute("SELECT key_a, key_b, shared FROM simpg.passage_pairs(%s, 'passages', %s, %s)",
                       [table, min_shared, max_common]).fetchall()
    found = {(a, b): n for a, b, n in got}
    assert len(found) == len(got)  # each pair once
    return found


def candidates(conn: psycopg.Connection, hashes: HashArray, max_common: int | None = None,
               table: str = "docs") -> dict[int, int]:
    got = conn.execute(f"SELECT (c.hit).id, c.shared FROM simpg.passage_candidates(NULL::{table}, 'passages', "
                       "%s::bigint[], %s) AS c", [hashes, max_common]).fetchall()
    assert [n for _, n in got] == sorted((n for _, n in got), reverse=True)  # most shared first
    return dict(got)


def lookup(conn: psycopg.Connection, hashes: HashArray, skip: list[int] | None,
           table: str = "docs") -> list[tuple[int, str, list[int | None] | None, int]]:
    """The lookup statement, as the Python handle runs it: $1 the hashes, $2 those to skip."""
    statement = conn.execute("SELECT simpg.passage_lookup_statement(%s, 'passages', 'body')",
                             [table]).fetchone()[0]
    with psycopg.RawCursor(conn) as cur:
        return cur.execute(statement, [hashes, skip]).fetchall()


# -- the catalog -----------------------------------------------------------------------------


def test_create_is_recorded_in_the_comment_idempotent_and_dropped(conn):
    make_docs(conn, {1: [1, 2, 3], 2: [3]})
    row = conn.execute("SELECT indexed_table::text, passage_column, passage_window, spaceless_window, format, k, "
                       "index_name, key_bits FROM simpg.create_passage_index('docs', 'passages')").fetchone()
    assert row == ("docs", "passages", W, WS, 1, 5, "docs_passages_keys_idx", 16)
    assert conn.execute("SELECT col_description('docs'::regclass, 3)").fetchone() == (COMMENT % (W, WS),)
    # the comment is the Python config's, written by one function
    assert conn.execute("SELECT simpg.passage_comment(%s, %s), simpg.passage_comment(7, 3)", [W, WS]).fetchone() == (
        PassageConfig().to_comment(), PassageConfig(7, 3).to_comment())
    assert conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'docs_passages_keys_idx'"
                        ).fetchone() == ("CREATE INDEX docs_passages_keys_idx ON public.docs USING gin "
                                         "(simpg.passage_keys(passages, 16))",)
    assert conn.execute("SELECT indexed_table::text, passage_column, passage_window, spaceless_window, format, k, "
                        "index_name, key_bits FROM simpg.passage_indexes").fetchall() == [row]
    # again: the same row, nothing added
    assert conn.execute("SELECT index_name FROM simpg.create_passage_index('docs', 'passages', %s, %s)", [W, WS]
                        ).fetchone() == ("docs_passages_keys_idx",)
    assert conn.execute("SELECT count(*) FROM pg_index WHERE indrelid = 'docs'::regclass").fetchone() == (2,)
    # a GIN index dropped by hand: listed without it, made again by create
    conn.execute("DROP INDEX docs_passages_keys_idx")
    assert conn.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [(None, None)]
    assert pairs(conn) == {(1, 2): 1}  # still exact, without the index
    assert conn.execute("SELECT index_name FROM simpg.create_passage_index('docs', 'passages')"
                        ).fetchone() == ("docs_passages_keys_idx",)
    with pytest.raises(errors.DuplicateObject,
                       match=f"already has a simpg passage index with windows {W} and {WS} .format 1, k 5., not "
                             f"windows 30 and {WS}"):
        conn.execute("SELECT simpg.create_passage_index('docs', 'passages', 30)")
    with pytest.raises(errors.DuplicateObject, match=f"not windows {W} and 30"):
        conn.execute("SELECT simpg.create_passage_index('docs', 'passages', %s, 30)", [W])
    conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    assert conn.execute("SELECT count(*) FROM simpg.passage_indexes").fetchone() == (0,)
    assert conn.execute("SELECT col_description('docs'::regclass, 3)").fetchone() == (None,)
    assert conn.execute("SELECT count(*) FROM pg_index WHERE indrelid = 'docs'::regclass").fetchone() == (1,)
    assert conn.execute("SELECT passages FROM docs ORDER BY id").fetchall() == [([1, 2, 3],), ([3],)]
    with pytest.raises(errors.UndefinedObject, match=r"no simpg passage index on public.docs.passages"):
        conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    # other windows once dropped
    assert conn.execute("SELECT passage_window, spaceless_window FROM simpg.create_passage_index('docs', 'passages', "
                        "30, spaceless_window => 20)").fetchone() == (30, 20)


def test_a_one_window_comment_records_both_windows_equal(conn):
    make_docs(conn, {1: [1, 2, 3], 2: [3]})
    conn.execute("CREATE INDEX ON docs USING gin (passages)")
    conn.execute("COMMENT ON COLUMN docs.passages IS %s" % ("'" + ONE_WINDOW_COMMENT % 46 + "'"))
    assert conn.execute("SELECT passage_window, spaceless_window FROM simpg.passage_indexes").fetchall() == [(46, 46)]
    assert PassageConfig.from_comment(ONE_WINDOW_COMMENT % 46) == PassageConfig(46, 46)
    # a plain GIN on the hashes is not a passage index: create with the same windows makes
    # the keys index (the old comment stays); other windows are refused
    assert conn.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [(None, None)]
    assert conn.execute("SELECT index_name FROM simpg.create_passage_index('docs', 'passages', 46, 46)"
                        ).fetchone() == ("docs_passages_keys_idx",)
    with pytest.raises(errors.DuplicateObject, match=f"windows 46 and 46 .format 1, k 5., not windows {W} and {WS}"):
        conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    assert [r[:2] for r in lookup(conn, [3], None)] == [(1, "text 1"), (2, "text 2")]


def test_hostile_identifiers_are_quoted(conn):
    conn.execute('CREATE SCHEMA "s; x"')
    conn.execute("""CREATE TABLE "s; x"."t'); DROP TABLE y; --" ("Id" bigint PRIMARY KEY, "Bo""dy" text, """
                 """"pa ss'es" bigint[])""")
    conn.execute("""INSERT INTO "s; x"."t'); DROP TABLE y; --" VALUES (1, 'a', '{1,2}'), (2, 'b', '{2,3}')""")
    table = """'"s; x"."t''); DROP TABLE y; --"'"""
    assert conn.execute(f"SELECT index_name FROM simpg.create_passage_index({table}, 'pa ss''es')").fetchone() == (
        "t'); DROP TABLE y; --_pa ss'es_keys_idx",)
    assert conn.execute(f"SELECT * FROM simpg.passage_pairs({table}, 'pa ss''es')").fetchall() == [(1, 2, 1)]
    statement = conn.execute(f"""SELECT simpg.passage_lookup_statement({table}, 'pa ss''es', 'Bo"dy')""").fetchone()[0]
    with psycopg.RawCursor(conn) as cur:
        assert cur.execute(statement, [[3], None]).fetchall() == [(2, "b", [2, 3], 1)]
    conn.execute(f"SELECT simpg.drop_passage_index({table}, 'pa ss''es')")
    assert conn.execute("SELECT count(*) FROM simpg.passage_indexes").fetchone() == (0,)


def test_a_comment_of_another_shape_or_type_is_not_an_index(conn):
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[], other integer[])")
    conn.execute("COMMENT ON COLUMN docs.passages IS 'simpg passages: {\"format\": 1, \"k\": 5}'")
    conn.execute("COMMENT ON COLUMN docs.other IS %s" % ("'" + COMMENT % (26, 46) + "'"))
    assert conn.execute("SELECT count(*) FROM simpg.passage_indexes").fetchone() == (0,)
    with pytest.raises(errors.UndefinedObject, match="no simpg passage index"):
        conn.execute("SELECT * FROM simpg.passage_pairs('docs', 'passages')")
    conn.execute("COMMENT ON COLUMN docs.passages IS %s" % ("'" + (COMMENT % (26, 46)).replace('"k": 5', '"k": 7')
                                                             + "'"))
    with pytest.raises(errors.FeatureNotSupported, match="format 1 and k 7"):
        conn.execute("SELECT * FROM simpg.passage_pairs('docs', 'passages')")


@pytest.mark.parametrize(("call", "error", "message"), [
    ("simpg.create_passage_index('docs', 'fp')", errors.DatatypeMismatch,
     r"column public.docs.fp is bigint, expected bigint\[\]"),
    ("simpg.create_passage_index('docs', 'ints')", errors.DatatypeMismatch,
     r"column public.docs.ints is integer\[\], expected bigint\[\]"),
    ("simpg.create_passage_index('docs', 'nope')", errors.UndefinedColumn,
     "column nope of table public.docs does not exist"),
    ("simpg.create_passage_index('nope', 'passages')", errors.UndefinedTable, 'relation "nope" does not exist'),
    ("simpg.create_passage_index('docs', 'passages', 0)", errors.InvalidParameterValue,
     "passage_window must be at least 1, got 0"),
    ("simpg.create_passage_index('docs', 'passages', -5)", errors.InvalidParameterValue,
     "passage_window must be at least 1, got -5"),
    ("simpg.create_passage_index('docs', 'passages', NULL)", errors.InvalidParameterValue,
     "passage_window must be at least 1, got null"),
    ("simpg.create_passage_index('docs', 'passages', 26, 0)", errors.InvalidParameterValue,
     "spaceless_window must be at least 1, got 0"),
    ("simpg.create_passage_index('docs', 'passages', 26, NULL)", errors.InvalidParameterValue,
     "spaceless_window must be at least 1, got null"),
    ("simpg.passage_index_ddl('docs', 'passages', 26, -3)", errors.InvalidParameterValue,
     "spaceless_window must be at least 1, got -3"),
    ("simpg.create_passage_index(NULL, 'passages')", errors.NullValueNotAllowed, "must not be null"),
    ("simpg.drop_passage_index('docs', 'fp')", errors.DatatypeMismatch, "expected bigint"),
    ("simpg.common_passage_hashes('docs', 'passages', -1)", errors.InvalidParameterValue,
     "max_common must be an integer of at least 0, a fraction between 0 and 1, or null, got -1"),
    ("simpg.common_passage_hashes('docs', 'ints', 5)", errors.DatatypeMismatch, "expected bigint"),
    ("simpg.passage_pairs('docs', 'passages', 1, -1)", errors.InvalidParameterValue, "got -1"),
    ("simpg.passage_pairs('docs', 'passages', 0)", errors.InvalidParameterValue,
     "min_shared must be at least 1, got 0"),
    ("simpg.passage_pairs('docs', 'passages', NULL::integer)", errors.InvalidParameterValue, "got null"),
    ("simpg.passage_pairs(NULL::uuid, 'docs', 'passages')", errors.DatatypeMismatch,
     "key column public.docs.id is bigint, not uuid"),
    ("simpg.passage_candidates(NULL::docs, 'passages', '{1}', -2)", errors.InvalidParameterValue, "got -2"),
    ("simpg.passage_candidates(NULL::docs, 'passages', NULL)", errors.NullValueNotAllowed,
     "hashes must not be null"),
    ("simpg.passage_candidates(NULL::docs, 'ints', '{1}')", errors.DatatypeMismatch, "expected bigint"),
    ("simpg.passage_lookup_statement('docs', 'passages', 'nope')", errors.UndefinedColumn,
     "column nope of table public.docs does not exist"),
    ("simpg.passage_lookup_statement('docs', 'passages', 'body', 'fp')", errors.InvalidParameterValue,
     "must be not null and unique"),
])
def test_bad_input_is_refused_naming_the_value(conn, call, error, message):
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[], fp bigint, ints integer[])")
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    with pytest.raises(error, match=message):
        conn.execute(f"SELECT * FROM {call}")


@pytest.mark.parametrize("bad", [-1, -2, -2**63, 1.5, -0.5])
def test_max_common_is_refused_with_the_python_message(conn, bad):
    """SQL's check of max_common (every function taking it) words its error as simpg.passages.checks does."""
    from simpg.fingerprint.errors import InvalidConfig
    from simpg.passages.checks import checked_max_common

    with pytest.raises(InvalidConfig) as python:
        checked_max_common(bad)
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, passages bigint[])")
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    for call in ("simpg.common_passage_hashes('docs', 'passages', %s)",
                 "simpg.passage_pairs('docs', 'passages', 1, %s)",
                 "simpg.passage_candidates(NULL::docs, 'passages', '{1}', %s)"):
        with pytest.raises(errors.InvalidParameterValue) as sql:
            conn.execute(f"SELECT * FROM {call}", [bad])
        # the same words; each language names its own null (passage_pairs takes a double
        # precision, which names -2**63 as -9.223372036854776e+18)
        message = str(python.value).replace(", or None,", ", or null,")
        if "passage_pairs" in call and bad == -2**63:
            message = message.replace(str(bad), "-9.223372036854776e+18")
        assert sql.value.diag.message_primary == message, call


# -- exact answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pairs_candidates_and_lookup_equal_brute_force(conn, seed):
    rng = random.Random(seed)
    rows = adversarial_hash_arrays(rng, 150)
    make_docs(conn, rows)
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    for m in (1, 2, 3, 5):
        assert pairs(conn, m) == brute_passage_pairs(rows, m)
    probes: list[HashArray] = [[], [None], [42], [-(1 << 63), (1 << 63) - 1], [7, 7, 7, None, -3],
                               *(rng.sample(range(-70, 70), rng.randrange(1, 15)) for _ in range(20)),
                               *(v for v in list(rows.values())[:10])]
    for probe in probes:
        want = brute_passage_candidates(rows, probe)
        if probe is None:
            with pytest.raises(errors.NullValueNotAllowed, match="hashes must not be null"):
                candidates(conn, probe)
        else:
            assert candidates(conn, probe) == want
        got = lookup(conn, probe, None)
        assert {key: n for key, _, _, n in got} == want
        assert all(body == f"text {key}" and stored == rows[key] for key, body, stored, _ in got)
        assert [(-n, key) for key, _, _, n in got] == sorted((-n, key) for key, _, _, n in got)
        skip = [42, 7]
        assert {key: n for key, _, _, n in lookup(conn, probe, skip)} == brute_passage_candidates(rows, probe, skip)


def test_keys_of_other_types(conn):
    rows = {1: [1, 2], 2: [2, 3], 3: [1, 2, 3]}
    conn.execute("CREATE TABLE docs (name text PRIMARY KEY, body text, passages bigint[])")
    conn.cursor().executemany("INSERT INTO docs VALUES (%s, 'b', %s)", [(f"k{key}", v) for key, v in rows.items()])
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    got = conn.execute("SELECT * FROM simpg.passage_pairs(NULL::text, 'docs', 'passages')").fetchall()
    assert sorted(got) == [("k1", "k2", 1), ("k1", "k3", 2), ("k2", "k3", 2)]
    with pytest.raises(errors.DatatypeMismatch, match="pass NULL::text"):
        conn.execute("SELECT * FROM simpg.passage_pairs('docs', 'passages')")


def test_common_hashes_come_from_the_statistics_and_are_skipped_only_when_asked(conn):
    rng = random.Random(5)
    boiler, frequent = 7_777_777_777, -123
    rows: dict[int, HashArray] = {}
    for key in range(1, 1001):
        values = set(rng.sample(range(1_000_000), 5))
        if key % 4:
            values.add(boiler)  # in 750 rows
        if key % 20 == 0:
            values.add(frequent)  # in 50 rows
        rows[key] = sorted(values)
    rows[1001] = None
    make_docs(conn, rows)
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")  # analyzes
    assert conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', NULL)").fetchone() == ([],)
    assert conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 100)").fetchone() == ([boiler],)
    assert conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 10)").fetchone() == (
        [frequent, boiler],)
    assert conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 749)").fetchone() == ([boiler],)
    assert conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 750)").fetchone() == ([],)
    # skipping off: exact; on: exact without the skipped hash
    assert pairs(conn, 1, None) == brute_passage_pairs(rows, 1)
    assert pairs(conn, 1, 100) == brute_passage_pairs(rows, 1, [boiler])
    assert pairs(conn, 1, 10) == brute_passage_pairs(rows, 1, [boiler, frequent])
    # a share of the rows: greatest(1000, share * rows), 1000 here (1,001 rows): nothing skipped
    assert pairs(conn, 1, 0.5) == pairs(conn, 1, 1000) == brute_passage_pairs(rows, 1)
    assert candidates(conn, [boiler, frequent], None) == brute_passage_candidates(rows, [boiler, frequent])
    assert candidates(conn, [boiler, frequent], 100) == brute_passage_candidates(rows, [frequent])
    assert candidates(conn, [boiler], 100) == {}


def test_partitioned_table_is_covered_and_listed_once(conn):
    rows = adversarial_hash_arrays(random.Random(11), 160)
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[]) PARTITION BY HASH (id)")
    for r in (0, 1):
        conn.execute(f"CREATE TABLE docs_{r} PARTITION OF docs FOR VALUES WITH (MODULUS 4, REMAINDER {r})")
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    assert conn.execute("SELECT indexed_table::text, index_name FROM simpg.passage_indexes").fetchall() == [
        ("docs", "docs_passages_keys_idx")]
    with pytest.raises(errors.WrongObjectType, match="is a partition of"):
        conn.execute("SELECT simpg.create_passage_index('docs_0', 'passages')")
    with pytest.raises(errors.WrongObjectType, match="is a partition of"):
        conn.execute("SELECT simpg.drop_passage_index('docs_1', 'passages')")
    # a partition created later, and a table of its own attached later, get the GIN index
    conn.execute("CREATE TABLE docs_2 PARTITION OF docs FOR VALUES WITH (MODULUS 4, REMAINDER 2)")
    conn.execute("CREATE TABLE stage (id bigint NOT NULL, body text, passages bigint[])")
    insert(conn, rows, "stage")
    conn.execute("CREATE TABLE docs_3 (LIKE stage)")
    in_3 = "satisfies_hash_partition('docs'::regclass, 4, 3, id)"
    conn.execute(f"INSERT INTO docs_3 SELECT * FROM stage WHERE {in_3}")
    conn.execute(f"INSERT INTO docs SELECT * FROM stage WHERE NOT {in_3}")
    conn.execute("ALTER TABLE docs ATTACH PARTITION docs_3 FOR VALUES WITH (MODULUS 4, REMAINDER 3)")
    leaves = conn.execute("SELECT count(*) FROM pg_partition_tree('docs') AS t JOIN pg_index AS i "
                          "ON i.indrelid = t.relid JOIN pg_class AS c ON c.oid = i.indexrelid "
                          "JOIN pg_am AS am ON am.oid = c.relam WHERE t.isleaf AND am.amname = 'gin' "
                          "AND i.indisvalid").fetchone()
    assert leaves == (4,)
    assert conn.execute("SELECT count(*) FROM docs_3").fetchone()[0] > 0
    assert conn.execute("SELECT count(*) FROM simpg.passage_indexes").fetchone() == (1,)
    conn.execute("ANALYZE docs")
    for m in (1, 2):
        assert pairs(conn, m) == brute_passage_pairs(rows, m)
    for probe in ([42], [1, 2, 3], [-(1 << 63)]):
        assert candidates(conn, probe) == brute_passage_candidates(rows, probe)
        assert {key: n for key, _, _, n in lookup(conn, probe, [])} == brute_passage_candidates(rows, probe)
    skipped = conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 20)").fetchone()[0]
    assert 42 in skipped  # in most rows of every partition: the whole tree's statistics
    assert pairs(conn, 1, 20) == brute_passage_pairs(rows, 1, skipped)
    conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    assert conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%USING gin%'").fetchall() == []


def test_a_prepared_lookup_notices_a_new_window(conn):
    make_docs(conn, {1: [1, 2], 2: [2]})
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    statement = conn.execute("SELECT simpg.passage_lookup_statement('docs', 'passages', 'body')").fetchone()[0]
    conn.execute(f"PREPARE p (bigint[], bigint[]) AS {statement}")
    assert conn.execute("EXECUTE p ('{2}', '{}')").fetchall() == [(1, "text 1", [1, 2], 1), (2, "text 2", [2], 1)]
    conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', 26, 20)")
    with pytest.raises(psycopg.Error, match=f"no longer the windows {W} and {WS} index of key bits 16") as err:
        conn.execute("EXECUTE p ('{2}', '{}')")
    assert err.value.sqlstate == "SPG01"


def test_the_lookup_reads_the_gin_index(conn):
    rows = {key: [key, key + 1, 10_000 + key % 7] for key in range(1, 5001)}
    make_docs(conn, rows)
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    statement = conn.execute("SELECT simpg.passage_lookup_statement('docs', 'passages', 'body')").fetchone()[0]
    conn.execute(f"PREPARE p (bigint[], bigint[]) AS {statement}")
    conn.execute("SET plan_cache_mode = force_generic_plan")
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN EXECUTE p ('{5, 6}', '{}')").fetchall())
    assert "Bitmap Index Scan on docs_passages_keys_idx" in plan, plan
    assert [r[0] for r in conn.execute("EXECUTE p ('{5, 6}', '{}')").fetchall()] == [5, 4, 6]


def test_the_ddl_builds_concurrently_and_resumes_a_stopped_build(conn):
    make_docs(conn, {1: [1, 2], 2: [2, 3]})
    steps = conn.execute("SELECT phase, statement FROM simpg.passage_index_ddl('docs', 'passages', "
                         "concurrently => true)").fetchall()
    assert steps == [
        ("gin", "CREATE INDEX CONCURRENTLY docs_passages_keys_idx ON public.docs USING gin "
                "((simpg.passage_keys(passages, 16)))"),
        ("statistics", "ALTER TABLE public.docs ALTER COLUMN passages SET STATISTICS 1000"),
        ("analyze", "ANALYZE public.docs (passages)"),
        ("comment", "COMMENT ON COLUMN public.docs.passages IS '" + COMMENT % (W, WS) + "'"),
    ]
    conn.execute(steps[0][1])  # autocommit: outside a transaction block
    conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'docs_passages_keys_idx'::regclass")
    # an INVALID GIN index (what a stopped concurrent build leaves) is dropped and built again
    assert [phase for phase, _ in conn.execute(
        "SELECT phase, statement FROM simpg.passage_index_ddl('docs', 'passages', concurrently => true)"
    ).fetchall()] == [
        "drop_invalid", "gin", "statistics", "analyze", "comment"]
    for (statement,) in conn.execute(
            "SELECT statement FROM simpg.passage_index_ddl('docs', 'passages', concurrently => true)").fetchall():
        conn.execute(statement)
    assert conn.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [
        ("docs_passages_keys_idx", 16)]
    assert conn.execute("SELECT count(*) FROM simpg.passage_index_ddl('docs', 'passages')").fetchone() == (0,)
    assert conn.execute("SELECT attstattarget FROM pg_attribute WHERE attrelid = 'docs'::regclass "
                        "AND attname = 'passages'").fetchone() == (1000,)
    # a target set higher by the owner stays; one set lower is raised again (with a fresh ANALYZE)
    conn.execute("ALTER TABLE docs ALTER COLUMN passages SET STATISTICS 5000")
    assert conn.execute("SELECT count(*) FROM simpg.passage_index_ddl('docs', 'passages')").fetchone() == (0,)
    conn.execute("ALTER TABLE docs ALTER COLUMN passages SET STATISTICS 10")
    assert [phase for phase, _ in conn.execute("SELECT phase, statement FROM simpg.passage_index_ddl('docs', "
                                               "'passages')").fetchall()] == ["statistics", "analyze"]
    conn.execute("CREATE TABLE parts (id bigint, passages bigint[]) PARTITION BY RANGE (id)")
    with pytest.raises(errors.WrongObjectType, match="cannot build the passage index of public.parts concurrently"):
        conn.execute("SELECT * FROM simpg.passage_index_ddl('parts', 'passages', 26, 46, concurrently => true)")
