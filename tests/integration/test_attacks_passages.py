"""Passage indexes (sql/functions/45_passages.sql) played as roles (docs/security.md).

``alice`` owns her database and is not a superuser: she installs simpg (trusted extension
or plain script, fresh or updated from an earlier version) and does everything with
passage indexes on her own tables. ``bob`` is a stranger: with no rights on her table he
gets permission errors, never rows, hashes or statistics; with rights limited by column
privileges or row-level security he gets exactly what a plain SELECT would show him.
Backups made and restored by alice or the superuser keep the index and its config.
"""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import errors, sql

from simpg.passages import DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW
from tests.integration.scenes import FRESH, PATHS, Scene, dump, restore
from tests.oracles import HashArray, adversarial_hash_arrays, brute_passage_candidates, brute_passage_pairs


def passage_table(conn: psycopg.Connection, seed: int = 3) -> dict[int, HashArray]:
    """alice's docs (id, body, passages) with adversarial arrays, indexed; returns id -> array."""
    rows = adversarial_hash_arrays(random.Random(seed), 120)
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[])")
    with conn.cursor().copy("COPY docs (id, body, passages) FROM STDIN") as copy:
        for key, values in rows.items():
            copy.write_row((key, f"text {key}", values))
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    return rows


def assert_passages_exact(conn: psycopg.Connection, rows: dict[int, HashArray]) -> None:
    got = conn.execute("SELECT key_a, key_b, shared FROM simpg.passage_pairs('docs', 'passages', 1, NULL)").fetchall()
    assert {(a, b): n for a, b, n in got} == brute_passage_pairs(rows, 1)
    for probe in ([42], [1, 2, 3], [-(1 << 63), 5]):
        found = conn.execute("SELECT (c.hit).id, c.shared FROM simpg.passage_candidates(NULL::docs, 'passages', "
                             "%s::bigint[], NULL) AS c", [probe]).fetchall()
        assert dict(found) == brute_passage_candidates(rows, probe)


def lookup_statement(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT simpg.passage_lookup_statement('docs', 'passages', 'body')").fetchone()[0]


@pytest.mark.parametrize("how", PATHS)
def test_the_owner_does_everything_and_a_stranger_gets_errors_only(scene: Scene, how: str) -> None:
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        rows = passage_table(alice)
        assert alice.execute("SELECT indexed_table::text, passage_window, spaceless_window FROM simpg.passage_indexes"
                             ).fetchall() == [("docs", DEFAULT_WINDOW, DEFAULT_SPACELESS_WINDOW)]
        assert_passages_exact(alice, rows)
        statement = lookup_statement(alice)
    with scene.connect(scene.bob) as bob:
        for call in ("SELECT simpg.create_passage_index('docs', 'passages')",
                     "SELECT simpg.drop_passage_index('docs', 'passages')",
                     "SELECT * FROM simpg.passage_pairs('docs', 'passages')",
                     "SELECT * FROM simpg.passage_pairs(NULL::text, 'docs', 'passages', 1, NULL)",
                     "SELECT * FROM simpg.passage_candidates(NULL::docs, 'passages', '{42}', NULL)",
                     "SELECT * FROM simpg.passage_candidates(NULL::docs, 'passages', '{42}')",
                     "SELECT simpg.common_passage_hashes('docs', 'passages', 0)"):
            with pytest.raises(errors.InsufficientPrivilege):
                bob.execute(call)
        with pytest.raises(errors.InsufficientPrivilege), psycopg.RawCursor(bob) as cur:
            cur.execute(statement, [[42], []])
        # the statistics a lookup reads are not bob's to read either
        assert bob.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'docs'").fetchone() == (0,)
        # the catalog and check tell him what pg_indexes and pg_class show anyone, no more
        assert bob.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [
            ("docs_passages_keys_idx", 16)]
        assert bob.execute("SELECT indexdef LIKE '%(simpg.passage_keys(passages, 16))' FROM pg_indexes "
                           "WHERE indexname = 'docs_passages_keys_idx'").fetchone() == (True,)
        assert bob.execute("SELECT count(*) FROM simpg.check('docs')").fetchone() == (0,)
    with scene.connect(scene.alice) as alice:  # bob changed nothing
        assert alice.execute("SELECT index_name FROM simpg.passage_indexes").fetchall() == [("docs_passages_keys_idx",)]
        alice.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
        assert alice.execute("SELECT count(*) FROM simpg.passage_indexes").fetchone() == (0,)


@pytest.mark.parametrize("how", FRESH)
def test_column_privileges_and_row_level_security_bound_what_a_reader_sees(scene: Scene, how: str) -> None:
    scene.install(how)
    bob_id = sql.Identifier(scene.bob)
    with scene.connect(scene.alice) as alice:
        rows = passage_table(alice)
        alice.execute(sql.SQL("GRANT SELECT (id, body) ON docs TO {}").format(bob_id))
    with scene.connect(scene.bob) as bob:
        for call in ("SELECT * FROM simpg.passage_pairs('docs', 'passages', 1, NULL)",
                     "SELECT simpg.common_passage_hashes('docs', 'passages', 0)"):
            with pytest.raises(errors.InsufficientPrivilege):
                bob.execute(call)
    with scene.connect(scene.alice) as alice:
        alice.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(bob_id))
        alice.execute("ALTER TABLE docs ENABLE ROW LEVEL SECURITY")
        alice.execute(sql.SQL("CREATE POLICY even ON docs FOR SELECT TO {} USING (id % 2 = 0)").format(bob_id))
        alice.execute("ANALYZE docs")
    visible = {key: values for key, values in rows.items() if key % 2 == 0}
    with scene.connect(scene.bob) as bob:
        assert_passages_exact(bob, visible)
        with psycopg.RawCursor(bob) as cur:
            got = cur.execute(lookup_statement(bob), [[42, 1, 2, 3], None]).fetchall()
        assert {key: n for key, _, _, n in got} == brute_passage_candidates(visible, [42, 1, 2, 3])
        # statistics of a table under row-level security are hidden from him: nothing skipped
        assert bob.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 0)").fetchone() == ([],)


@pytest.mark.parametrize("how", FRESH)
def test_dump_and_restore_keep_the_passage_index(scene: Scene, how: str) -> None:
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        rows = passage_table(alice)
        alice.execute("CREATE TABLE parts (id bigint PRIMARY KEY, body text, passages bigint[]) "
                      "PARTITION BY RANGE (id)")
        alice.execute("CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO (100)")
        alice.execute("SELECT simpg.create_passage_index('parts', 'passages', 20, 30)")
        alice.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 3)")  # a rebuild
        want = alice.execute("SELECT indexed_table::text, passage_column, passage_window, spaceless_window, format, k, "
                             "index_name, key_bits FROM simpg.passage_indexes ORDER BY 1").fetchall()
    assert want == [("docs", "passages", DEFAULT_WINDOW, DEFAULT_SPACELESS_WINDOW, 1, 5, "docs_passages_keys_idx1", 3),
                    ("parts", "passages", 20, 30, 1, 5, "parts_passages_keys_idx", 16)]
    for dumper, restorer, target in ((scene.alice, scene.alice, f"{scene.name}_r1"),
                                     ("postgres", "postgres", f"{scene.name}_r2")):
        done = restore(scene, dump(scene, dumper), restorer, target)
        assert done.returncode == 0, done.stderr.decode()
        with psycopg.connect(scene.dsn(scene.alice, target), autocommit=True) as conn:
            assert conn.execute("SELECT indexed_table::text, passage_column, passage_window, spaceless_window, "
                                "format, k, index_name, key_bits FROM simpg.passage_indexes ORDER BY 1"
                                ).fetchall() == want
            assert_passages_exact(conn, rows)
            # the partition keeps the parent's index, and a new one gets it
            conn.execute("CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM (100) TO (200)")
            assert conn.execute("SELECT count(*) FROM pg_indexes WHERE tablename IN ('parts_1', 'parts_2') "
                                "AND indexdef LIKE '%USING gin (simpg.passage_keys(passages, 16))'").fetchone() == (2,)


# Functions and operators that would run if simpg resolved a name on the caller's search_path:
# each raises, so a call anywhere (an insert, CREATE INDEX, a lookup, the catalog, check)
# fails the test. Exact matches for the argument types simpg's passage key code uses.
HOSTILE = """
CREATE FUNCTION {s}.shl(bigint, integer) RETURNS bigint LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hostile << of {s} ran'; END$$;
CREATE FUNCTION {s}.shr(bigint, integer) RETURNS bigint LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hostile >> of {s} ran'; END$$;
CREATE OPERATOR {s}.<< (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = {s}.shl);
CREATE OPERATOR {s}.>> (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = {s}.shr);
CREATE FUNCTION {s}.overlaps4(integer[], integer[]) RETURNS boolean LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hostile && of {s} ran'; END$$;
CREATE OPERATOR {s}.&& (LEFTARG = integer[], RIGHTARG = integer[], FUNCTION = {s}.overlaps4);
CREATE FUNCTION {s}.unnest(bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hostile unnest of {s} ran'; END$$;
CREATE FUNCTION {s}.int4(bigint) RETURNS integer LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hostile int4 of {s} ran'; END$$;
CREATE FUNCTION {s}.pg_get_expr(pg_node_tree, oid) RETURNS text LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hostile pg_get_expr of {s} ran'; END$$;
"""


@pytest.mark.parametrize("how", PATHS)
def test_the_keys_index_runs_no_code_of_the_owner_or_a_stranger(scene: Scene, how: str) -> None:
    """simpg.passage_keys is evaluated by whoever inserts and by CREATE INDEX: built-in code only."""
    scene.install(how)
    with scene.connect(scene.alice) as alice:  # bob may make a schema of his own in her database
        alice.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(sql.Identifier(scene.name),
                                                                         sql.Identifier(scene.bob)))
    with scene.connect(scene.bob) as bob:
        bob.execute(sql.SQL("CREATE SCHEMA bob_ops"))
        bob.execute(HOSTILE.format(s="bob_ops"))
        bob.execute(sql.SQL("GRANT USAGE ON SCHEMA bob_ops TO PUBLIC"))
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE SCHEMA alice_ops")
        alice.execute(HOSTILE.format(s="alice_ops"))
        rows = passage_table(alice)
        # both schemas before pg_catalog: an unqualified name would find their exact matches
        alice.execute("SET search_path = bob_ops, alice_ops, pg_catalog, public")
        alice.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
        alice.execute("SELECT simpg.create_passage_index('docs', 'passages')")  # CREATE INDEX, ANALYZE
        alice.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 2)")  # a rebuild
        more = adversarial_hash_arrays(random.Random(8), 40)
        for key, values in more.items():  # every insert evaluates the index expression
            alice.execute("INSERT INTO docs VALUES (%s, %s, %s)", [1000 + key, "more", values])
            rows[1000 + key] = values
        assert alice.execute("SELECT key_bits FROM simpg.passage_indexes").fetchall() == [(2,)]
        assert alice.execute("SELECT problem FROM simpg.check('docs')").fetchall() == [("passage keys too coarse",)]
        assert alice.execute("SELECT simpg.passage_keys('{-1, 5}', 2)").fetchone() == ([-1, 1],)
        assert_passages_exact(alice, rows)
        with psycopg.RawCursor(alice) as cur:
            got = cur.execute(lookup_statement(alice), [[42, 1, 2, 3], None]).fetchall()
        assert {key: n for key, _, _, n in got} == brute_passage_candidates(rows, [42, 1, 2, 3])
        alice.execute("REINDEX TABLE docs")
        alice.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
