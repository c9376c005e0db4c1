"""Attacks on the install, the catalog and backups, played as roles (docs/security.md).

``alice`` owns her database and is not a superuser: she may install the trusted
extension, or run the plain script. ``bob`` has no special rights. ``postgres`` is the
superuser whose later calls an attacker would like to hijack. Each attack of the 0.1.1
review (issue 13) stays here as a regression test, on both install paths.
"""

from __future__ import annotations

import random
import subprocess
import time

import psycopg
import pytest
from psycopg import sql

from simpg import bits
from tests.integration.scenes import (
    FRESH,
    PATHS,
    assert_exact,
    docs_table,
    dump,
    extension_path,
    restore,
)
from tests.oracles import brute_pairs

# -- 1. the installer cannot become superuser ------------------------------------------


@pytest.mark.parametrize("how", PATHS)
def test_schema_and_functions_belong_to_whoever_ran_the_script(scene, how):
    scene.install(how)
    owner, acl = scene.admin.execute(
        "SELECT pg_get_userbyid(nspowner), nspacl::text FROM pg_namespace WHERE nspname = 'simpg'").fetchone()
    # trusted CREATE EXTENSION runs the script as the bootstrap superuser; the plain
    # script as alice, whose own functions only she (and those who trust her) run
    assert owner == ("postgres" if extension_path(how) else scene.alice)
    assert "=U/" in acl and "=UC/" not in acl.replace(f"{owner}=UC/", "")  # others: USAGE only
    assert scene.admin.execute("SELECT count(*) FROM pg_event_trigger").fetchone() == (0,)
    assert scene.admin.execute(
        "SELECT count(*) FROM pg_proc WHERE pronamespace = 'simpg'::regnamespace AND prosecdef"
    ).fetchone() == (0,)


def test_installer_of_the_trusted_extension_cannot_replace_the_schema(scene):
    """Attack 1a: rename schema simpg and put a look-alike catalog with a trigger in its place."""
    scene.install("extension")
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint)")
        alice.execute("SELECT simpg.create_index('docs', 'fp', 3, 4)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            alice.execute("ALTER SCHEMA simpg RENAME TO simpg_real")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            alice.execute("CREATE TABLE simpg.indexes_shadow (x int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            alice.execute("ALTER EXTENSION simpg DROP FUNCTION simpg.hamming(bigint, bigint)")
        # what is left to her: her own schema, which nothing of simpg's reads
        alice.execute("CREATE SCHEMA mine")
        alice.execute("CREATE FUNCTION mine.grab() RETURNS trigger LANGUAGE plpgsql AS "
                      f"$$BEGIN ALTER ROLE {scene.alice} SUPERUSER; RETURN OLD; END$$")
    # the superuser drops and indexes tables as usual
    scene.admin.execute("DROP TABLE docs")
    scene.admin.execute("CREATE TABLE other (id bigint PRIMARY KEY, fp bigint)")
    scene.admin.execute("SELECT simpg.create_index('other', 'fp', 3, 4)")
    scene.admin.execute("SELECT simpg.drop_index('other', 'fp')")
    assert not scene.is_superuser(scene.alice)


@pytest.mark.parametrize("how", FRESH)
def test_a_schema_simpg_made_before_the_install_is_refused(scene, how):
    """Attack 1b: alice makes schema simpg with an operator simpg.= (oid, regclass) first."""
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE SCHEMA simpg")
        alice.execute("CREATE FUNCTION simpg.eq(oid, regclass) RETURNS boolean LANGUAGE sql "
                      f"AS $$ALTER ROLE {scene.alice} SUPERUSER; SELECT $1 = $2::oid$$")
        alice.execute("CREATE OPERATOR simpg.= (leftarg = oid, rightarg = regclass, function = simpg.eq)")
    with pytest.raises((psycopg.errors.DuplicateSchema, subprocess.CalledProcessError)) as err:
        scene.install(how)
    message = err.value.stderr if isinstance(err.value, subprocess.CalledProcessError) else str(err.value)
    assert "schema simpg already exists" in message
    assert not scene.is_superuser(scene.alice)


@pytest.mark.parametrize("how", PATHS)
def test_bob_cannot_add_overloads_that_simpg_calls(scene, how):
    """Attack 1c: an untyped literal would let hamming(bigint, integer) decide distances."""
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        rows = docs_table(alice)
        alice.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(sql.Identifier(scene.bob)))
        query = alice.execute("SELECT simpg.near_query('docs', 5, 3)").fetchone()[0]
    assert "simpg.hamming(t.fp, '5'::bigint) <= 3::integer" in query
    # ranges typed too: computed from typed literals, folded when PostgreSQL plans
    assert " BETWEEN simpg.prefix_lo('5'::bigint, 3::integer, '{5}'::integer[], 0::integer) AND " in query
    with scene.connect(scene.bob) as bob:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("CREATE FUNCTION simpg.hamming(bigint, integer) RETURNS integer LANGUAGE sql RETURN 0")
        assert_exact(bob, rows)


@pytest.mark.parametrize("how", PATHS)
def test_operators_in_public_are_never_bound_into_simpg(scene, how):
    """Attack 2: bob's operators in public (writable before PostgreSQL 15) at install time."""
    scene.admin.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(scene.bob)))
    with scene.connect(scene.bob) as bob:
        bob.execute("CREATE TABLE public.trap (who text)")
        bob.execute("GRANT INSERT ON public.trap TO PUBLIC")
        bob.execute("CREATE FUNCTION public.eq(oid, regclass) RETURNS boolean LANGUAGE sql "
                    "AS $$INSERT INTO public.trap VALUES (current_user); SELECT $1 = $2::oid$$")
        bob.execute("CREATE OPERATOR public.= (leftarg = oid, rightarg = regclass, function = public.eq)")
        bob.execute("CREATE FUNCTION public.sh(bigint, integer) RETURNS bigint LANGUAGE sql "
                    "AS $$INSERT INTO public.trap VALUES (current_user); SELECT 0::bigint$$")
        bob.execute("CREATE OPERATOR public.>> (leftarg = bigint, rightarg = integer, function = public.sh)")
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        rows = docs_table(alice)
        assert_exact(alice, rows)
    scene.admin.execute("CREATE TABLE su (id bigint PRIMARY KEY, fp bigint)")
    scene.admin.execute("INSERT INTO su SELECT g, g * 7919 FROM generate_series(1, 100) g")
    scene.admin.execute("SELECT simpg.create_index('su', 'fp', 2, 3)")
    scene.admin.execute("SELECT count(*) FROM simpg.pairs('su', 2)")
    assert scene.admin.execute("SELECT count(*) FROM public.trap").fetchone() == (0,)


# -- 3. backups restore exact answers ---------------------------------------------------


@pytest.mark.parametrize("how", PATHS)
def test_dump_and_restore_by_owner_and_superuser_give_exact_answers(scene, how):
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        rows = docs_table(alice)
        alice.execute("SELECT simpg.register_index('docs', 'fp', 3, '{5}', prefix_columns, index_names, "
                      "'simpg-fp1:test') FROM simpg.indexes")
    for dumper, restorer, target in ((scene.alice, scene.alice, f"{scene.name}_r1"),
                                     ("postgres", "postgres", f"{scene.name}_r2")):
        done = restore(scene, dump(scene, dumper), restorer, target)
        assert done.returncode == 0, done.stderr.decode()
        with psycopg.connect(scene.dsn(scene.alice, target), autocommit=True) as conn:
            assert conn.execute("SELECT indexed_table::text, k, levels, fingerprint_config FROM simpg.indexes"
                                ).fetchall() == [("docs", 3, [5], "simpg-fp1:test")]
            assert conn.execute("SELECT count(*) FROM simpg.check('docs')").fetchone() == (0,)
            assert_exact(conn, rows)
            owner = conn.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace "
                                 "WHERE nspname = 'simpg'").fetchone()[0]
            assert owner == ("postgres" if extension_path(how) else scene.alice)


# -- 4-6. table shapes that must never give a silent wrong answer ----------------------


def test_inheritance_parents_refuse_reports_and_near_stays_exact(db):
    conn = db.conn
    conn.execute("CREATE TABLE par (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("CREATE TABLE kid () INHERITS (par)")
    rng = random.Random(4)
    rows = {}
    for table in ("par", "kid"):
        for key in range(1, 201):  # the same keys in both tables
            fp = rng.getrandbits(64) if key % 2 else rows.get(("par", key), 5)
            rows[(table, key)] = fp
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s)", [key, bits.to_db(fp)])
    conn.execute("SELECT simpg.create_index('par', 'fp', 3, 4)")
    for report in ("simpg.pairs('par', 3)", "simpg.clusters('par', 3)"):
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="has inheritance children"):
            conn.execute(f"SELECT * FROM {report}")
    # near returns every row of the hierarchy, each once (equal keys in par and kid included)
    got = sorted(conn.execute("SELECT id, fp FROM simpg.near(NULL::par, 5, 3)").fetchall())
    assert got == sorted((key, bits.to_db(fp)) for (_, key), fp in rows.items() if bits.hamming(fp, 5) <= 3)
    assert len(got) > 100


def test_renamed_fingerprint_column_is_followed_never_mixed(db):
    conn = db.conn
    rows = docs_table(conn)
    conn.execute("ALTER TABLE docs RENAME fp TO fp_old")
    conn.execute("ALTER TABLE docs ADD fp bigint")
    conn.execute("UPDATE docs SET fp = 0")
    assert conn.execute("SELECT fingerprint_column FROM simpg.indexes").fetchall() == [("fp_old",)]
    probe = next(fp for fp in rows.values() if fp is not None)
    near = {r[0] for r in conn.execute("SELECT id FROM simpg.near(NULL::docs, %s, 3)",
                                       [bits.to_db(probe)]).fetchall()}
    assert near == {key for key, fp in rows.items() if fp is not None and bits.hamming(fp, probe) <= 3}
    with pytest.raises(psycopg.errors.UndefinedObject, match=r"^no simpg index on public.docs.fp\n"):
        conn.execute("SELECT * FROM simpg.near(NULL::docs, 0, 3, 'fp')")
    with pytest.raises(psycopg.errors.DuplicateColumn, match="already has columns named fp_p0"):
        conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")


def test_a_dropped_prefix_column_is_reported_and_repaired(db):
    conn = db.conn
    rows = docs_table(conn)
    conn.execute("ALTER TABLE docs DROP COLUMN fp_p1")
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (0,)
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT * FROM simpg.near(NULL::docs, 0, 3)")
    assert err.value.sqlstate == "SPG02" and "is damaged" in str(err.value)
    problems = conn.execute("SELECT problem, detail FROM simpg.check('docs')").fetchall()
    assert problems == [("missing prefix column", "table 1 of k=3 blocks=5: no column simpg.permute(fp, 3, "
                         "'{5}'::integer[], 1)")]
    with pytest.raises(psycopg.errors.DuplicateObject):
        conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
    done = [r[0] for r in conn.execute("SELECT simpg.repair('docs')").fetchall()]
    assert done == ["ALTER TABLE public.docs DROP COLUMN fp_p0, DROP COLUMN fp_p2, DROP COLUMN fp_p3, "
                    "DROP COLUMN fp_p4, DROP COLUMN fp_p5, DROP COLUMN fp_p6, DROP COLUMN fp_p7, "
                    "DROP COLUMN fp_p8, DROP COLUMN fp_p9"]
    conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
    assert_exact(conn, rows)


def test_an_interrupted_concurrent_build_is_reported_and_repaired(db):
    """What a killed `simpg backfill --k` leaves: prefix columns, an invalid index, no B-tree."""
    conn = db.conn
    rows = docs_table(conn)
    conn.execute("DROP INDEX docs_fp_p2_idx")
    # a unique build on a column with equal values fails half way, leaving an INVALID index
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY docs_fp_p2_idx ON docs (fp_p2)")
    problems = conn.execute("SELECT problem FROM simpg.check('docs')").fetchall()
    assert problems == [("missing b-tree",), ("invalid index",)]
    assert_exact(conn, rows)  # slower, still exact
    done = [r[0] for r in conn.execute("SELECT simpg.repair('docs')").fetchall()]
    assert done == ["DROP INDEX public.docs_fp_p2_idx",
                    "CREATE INDEX docs_fp_p2_idx ON public.docs (fp_p2) WITH (fillfactor = 100)"]
    assert conn.execute("SELECT count(*) FROM simpg.check('docs')").fetchone() == (0,)
    assert conn.execute("SELECT index_names[3] FROM simpg.indexes").fetchone() == ("docs_fp_p2_idx",)


def test_temporary_tables_leave_no_catalog_rows(db):
    with psycopg.connect(db.dsn, autocommit=True) as other:
        other.execute("CREATE TEMP TABLE scratch (id bigint PRIMARY KEY, fp bigint)")
        other.execute("SELECT simpg.create_index('scratch', 'fp', 2, 3)")
        assert db.conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (1,)
        pid = other.info.backend_pid
    # the server drops a session's temporary tables as its backend exits, after the client
    # has closed: wait for that backend to be gone (it was flaky on a loaded machine)
    for _ in range(200):
        if db.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone() == (0,):
            break
        time.sleep(0.05)
    assert db.conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (0,)
    db.conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint)")  # may reuse the oid
    with pytest.raises(psycopg.errors.UndefinedObject):
        db.conn.execute("SELECT * FROM simpg.near(NULL::docs, 0, 2)")


def test_check_finds_stale_prefixes_after_a_layout_function_changes(db):
    """What simpg.check is for after an upgrade: stored prefixes that permute() no longer computes."""
    conn = db.conn
    docs_table(conn)
    assert conn.execute("SELECT count(*) FROM simpg.check('docs')").fetchone() == (0,)
    # a broken "upgrade" of a function that permute() calls (the superuser may replace it)
    conn.execute("CREATE OR REPLACE FUNCTION simpg.apply_segments(fp bigint, segs bigint[]) RETURNS bigint "
                 "LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN fp")
    stale = conn.execute("SELECT problem FROM simpg.check('docs')").fetchall()
    assert stale and set(stale) == {("stale prefix values",)}
    assert conn.execute("SELECT count(*) FROM simpg.check('docs', verify_rows => false)").fetchone() == (0,)


# -- 7. a table rewrite is not MVCC-safe: older snapshots must not answer from it ------

def older_snapshot(db) -> psycopg.Connection:
    """A REPEATABLE READ transaction whose snapshot is taken now (on another table)."""
    reader = psycopg.connect(db.dsn, autocommit=True)
    reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    reader.execute("SELECT count(*) FROM pg_class").fetchone()
    return reader


REWRITES = {
    "the index built again": "SELECT simpg.drop_index('docs', 'fp'); SELECT simpg.create_index('docs', 'fp', 3, 5)",
    "TRUNCATE and reload": "CREATE TEMP TABLE keep AS SELECT id, fp FROM docs; TRUNCATE docs; "
                           "INSERT INTO docs (id, fp) SELECT id, fp FROM keep",
    "VACUUM FULL": "VACUUM FULL docs",
}


@pytest.mark.parametrize("rewrite", list(REWRITES))
def test_a_snapshot_older_than_a_rewrite_gets_a_serialization_failure_not_an_empty_answer(db, rewrite):
    """Issue 13 item 7: after another session rewrote the table, a REPEATABLE READ
    transaction that began before sees it empty; every simpg read path now says so
    (SQLSTATE 40001, which applications retry) instead of answering from nothing."""
    from simpg.psycopg import SimHashColumn

    conn = db.conn
    rows = docs_table(conn)
    probe = bits.to_db(next(fp for fp in rows.values() if fp is not None))
    handle = SimHashColumn(psycopg.connect(db.dsn, autocommit=True), "docs", "fp")
    handle.near(probe, 3)  # the layout is read and the lookup prepared before the rewrite
    reader = older_snapshot(db)
    handle.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    handle.conn.execute("SELECT count(*) FROM pg_class").fetchone()
    for statement in REWRITES[rewrite].split("; "):
        conn.execute(statement)
    # what PostgreSQL itself shows such a transaction: the empty table (VACUUM FULL keeps
    # the rows' versions, so they stay visible; simpg cannot tell it from a rewrite by
    # the file alone and refuses too, which a retry answers)
    seen = reader.execute("SELECT count(*) FROM docs").fetchone()[0]
    assert seen == (len(rows) if rewrite == "VACUUM FULL" else 0)
    for query in (f"SELECT * FROM simpg.near(NULL::docs, {probe}, 3)",
                  "SELECT * FROM simpg.pairs('docs', 3)", "SELECT * FROM simpg.clusters('docs', 3)",
                  "SELECT * FROM simpg.duplicate_stats('docs', 3)"):
        reader.execute("SAVEPOINT q")
        with pytest.raises(psycopg.errors.SerializationFailure, match="public.docs was rewritten after"):
            reader.execute(query).fetchall()
        reader.execute("ROLLBACK TO SAVEPOINT q")
    with pytest.raises(psycopg.errors.SerializationFailure):
        handle.near(probe, 3)
    handle.conn.execute("ROLLBACK")
    reader.execute("ROLLBACK")  # it holds a lock on docs that the next rewrite waits for
    # pairs() reads the rows into Python: refused the same way
    handle.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    handle.conn.execute("SELECT count(*) FROM pg_class").fetchone()
    conn.execute(REWRITES["VACUUM FULL"])
    with pytest.raises(psycopg.errors.SerializationFailure):
        list(handle.pairs(3))
    handle.conn.execute("ROLLBACK")
    # retried in a new transaction: exact again
    assert_exact(reader, rows)
    expected = {key for key, fp in rows.items() if fp is not None and bits.hamming(bits.from_db(probe), fp) <= 3}
    assert {n.id for n in handle.near(probe, 3)} == expected
    assert {(p.a, p.b) for p in handle.pairs(3)} == set(brute_pairs(rows, 3))
    reader.close()
    handle.conn.close()


def test_a_transaction_sees_its_own_rewrite_and_read_committed_never_fails(db):
    conn = db.conn
    rows = docs_table(conn)
    # its own rewrite, inside REPEATABLE READ: visible to it, no failure
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute("SELECT count(*) FROM docs").fetchone()
        conn.execute("SELECT simpg.drop_index('docs', 'fp')")
        conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
        assert_exact(conn, rows)
    # READ COMMITTED takes a snapshot per statement: a rewrite in between is seen
    other = psycopg.connect(db.dsn, autocommit=True)
    other.execute("BEGIN")
    other.execute("SELECT count(*) FROM pg_class").fetchone()  # not docs: a lock would block the rewrite
    conn.execute("VACUUM FULL docs")
    assert_exact(other, rows)
    other.execute("COMMIT")
    other.close()


def test_a_rewritten_partition_is_seen_through_its_partitioned_table(db):
    conn = db.conn
    conn.execute("CREATE TABLE parts (id bigint PRIMARY KEY, fp bigint) PARTITION BY RANGE (id)")
    conn.execute("CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO (100)")
    conn.execute("CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM (100) TO (1000)")
    conn.execute("INSERT INTO parts SELECT g, g FROM generate_series(1, 500) AS g")
    conn.execute("SELECT simpg.create_index('parts', 'fp', 3)")
    reader = older_snapshot(db)
    conn.execute("CREATE TEMP TABLE keep AS SELECT id, fp FROM parts_2")
    conn.execute("TRUNCATE parts_2")
    conn.execute("INSERT INTO parts (id, fp) SELECT id, fp FROM keep")
    assert reader.execute("SELECT count(*) FROM parts").fetchone() == (99,)  # parts_2 looks empty
    with pytest.raises(psycopg.errors.SerializationFailure, match="public.parts_2 was rewritten"):
        reader.execute("SELECT * FROM simpg.near(NULL::parts, 200, 3)").fetchall()
    reader.execute("ROLLBACK")
    got = {r[0] for r in reader.execute("SELECT id FROM simpg.near(NULL::parts, 200, 3)").fetchall()}
    assert got == {i for i in range(1, 501) if bits.hamming(i, 200) <= 3}
    reader.close()


# -- the near-unique guard (issue 16) ------------------------------------------------------


@pytest.mark.parametrize("how", PATHS)
def test_guard_by_the_owner_binds_every_writer_and_survives_dump_and_restore(scene, how):
    """alice guards her table; bob, who may insert, can neither drop the guard nor get past
    it, even with an advisory lock of the same number held; dump and restore keep it."""
    scene.install(how)
    rng = random.Random(16)
    fps = [rng.getrandbits(64) for _ in range(200)]
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint)")
        with alice.cursor() as cur:
            cur.executemany("INSERT INTO docs VALUES (%s, %s)", [(i, bits.to_db(f)) for i, f in enumerate(fps, 1)])
        alice.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
        alice.execute("SELECT simpg.create_guard('docs', 'fp')")
        alice.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE ON docs TO {}").format(sql.Identifier(scene.bob)))
        keys = alice.execute("SELECT simpg.guard_lock_keys('docs', %s, 3, '{5}')",
                             [bits.to_db(fps[0] ^ 1)]).fetchone()[0]
    with scene.connect(scene.bob) as bob:
        for attack in ("SELECT simpg.drop_guard('docs', 'fp')", "DROP TRIGGER fp_simpg_guard ON docs",
                       "ALTER TABLE docs DISABLE TRIGGER fp_simpg_guard", "SELECT simpg.drop_index('docs', 'fp')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                bob.execute(attack)
        bob.execute("SELECT pg_advisory_lock(%s)", [keys[0]])  # bob's own lock on one of the keys
        with pytest.raises(psycopg.errors.ExclusionViolation):
            bob.execute("INSERT INTO docs VALUES (1000, %s)", [bits.to_db(fps[0] ^ 1)])
        with pytest.raises(psycopg.errors.ExclusionViolation):
            bob.execute("UPDATE docs SET fp = %s WHERE id = 2", [bits.to_db(fps[0] ^ 2)])
        bob.execute("SELECT pg_advisory_unlock_all()")
    for dumper, restorer, target in ((scene.alice, scene.alice, f"{scene.name}_r1"),
                                     ("postgres", "postgres", f"{scene.name}_r2")):
        done = restore(scene, dump(scene, dumper), restorer, target)
        assert done.returncode == 0, done.stderr.decode()
        with psycopg.connect(scene.dsn(scene.alice, target), autocommit=True) as conn:
            assert conn.execute("SELECT guard_name, k FROM simpg.table_guards('docs')").fetchall() == [
                ("fp_simpg_guard", 3)]
            with pytest.raises(psycopg.errors.ExclusionViolation):
                conn.execute("INSERT INTO docs VALUES (1000, %s)", [bits.to_db(fps[5] ^ 4)])
            assert conn.execute("SELECT count(*) FROM docs").fetchone() == (200,)


# -- 5. the session's prepared lookups ---------------------------------------------------


@pytest.mark.parametrize("how", PATHS)
def test_a_statement_prepared_under_simpgs_name_is_never_run(scene, how):
    """simpg.near runs the session's prepared statement for the table, with the caller's
    rights. bob had the session for a while (SET ROLE, or a function of his that the
    superuser called) and prepared his own statements under that name: one that records
    who runs it, one in simpg's own form whose stated layout is false, and simpg's exact
    text prepared on a search_path where his operator would be bound. None of them may
    run, and the answers stay exact."""
    scene.admin.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(scene.bob)))
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        rows = docs_table(alice)
        alice.execute("GRANT SELECT ON docs TO PUBLIC")
    with scene.connect(scene.bob) as bob:
        bob.execute("CREATE TABLE public.trap (who text)")
        bob.execute("GRANT INSERT ON public.trap TO PUBLIC")
        bob.execute("CREATE FUNCTION public.spy() RETURNS boolean LANGUAGE sql "
                    "AS $$INSERT INTO public.trap VALUES (current_user) RETURNING true$$")
        bob.execute("CREATE FUNCTION public.le(integer, integer) RETURNS boolean LANGUAGE sql "
                    "AS $$INSERT INTO public.trap VALUES (current_user) RETURNING true$$")
        bob.execute("CREATE OPERATOR public.<= (leftarg = integer, rightarg = integer, function = public.le)")
    admin = scene.admin
    name = "simpg_near_{}_0".format(admin.execute("SELECT 'docs'::regclass::oid").fetchone()[0])
    probes = [fp for fp in rows.values() if fp is not None][:5]

    def exact() -> None:
        for probe in probes:
            got = {r[0] for r in admin.execute("SELECT id FROM simpg.near(NULL::docs, %s, 3)",
                                               [bits.to_db(probe)]).fetchall()}
            assert got == {key for key, fp in rows.items() if fp is not None and bits.hamming(fp, probe) <= 3}

    def as_bob(statement: str) -> None:
        admin.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(scene.bob)))
        admin.execute(f"DEALLOCATE ALL; {statement}")
        admin.execute("RESET ROLE; RESET search_path")

    as_bob(f"PREPARE {name}(bigint, integer) AS SELECT t.* FROM public.docs AS t WHERE public.spy()")
    exact()
    # simpg's form, prefix columns of tables 0 and 1 swapped (in the stated layout and the ranges)
    columns = admin.execute("SELECT prefix_columns FROM simpg.indexes").fetchone()[0]
    columns[0], columns[1] = columns[1], columns[0]
    false = admin.execute("SELECT simpg.lookup_statement('near', 'docs', 'fp', 3, '{5}', %s, true)",
                          [columns]).fetchone()[0]
    as_bob(f"PREPARE {name}(bigint, integer) AS {false}")
    exact()
    # simpg's own text, prepared where public.<= comes before pg_catalog's
    text = admin.execute("SELECT statement FROM pg_prepared_statements WHERE name = %s", [name]).fetchone()[0]
    assert text.startswith(f"PREPARE {name}(bigint, integer) AS SELECT t.* FROM public.docs AS t WHERE ")
    as_bob(f"SET search_path = public, pg_catalog; {text}")
    exact()
    assert admin.execute("SELECT count(*) FROM public.trap").fetchone() == (0,)
    # the control: bob's operator does catch that statement run on his search_path
    admin.execute(f"SET search_path = public, pg_catalog; EXECUTE {name}(0, 3)")
    assert admin.execute("SELECT count(*) FROM public.trap").fetchone()[0] > 0


# -- range shards: the functions that take table and server names ------------------------


@pytest.mark.parametrize("how", PATHS)
def test_range_shard_functions_give_a_stranger_nothing_of_a_table(scene, how):
    """bob, without rights on alice's table, can neither read its keys through the range
    lookups, nor set up, fill, attach or drop its range shards, nor write its permuted
    tables through a trigger of his own that names them (the trigger runs as the writer)."""
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE TABLE secret (id bigint PRIMARY KEY, fp bigint)")
        alice.execute("INSERT INTO secret SELECT g, g * 7919 FROM generate_series(1, 50) AS g")
        alice.execute("SELECT simpg.create_range_index('secret', 'fp', 3, 5)")
        # local partitions stand in for the shards: the functions are the same
        for t in range(10):
            alice.execute(sql.SQL("CREATE TABLE {} PARTITION OF {} DEFAULT").format(
                sql.Identifier(f"secret_fp_r{t}_local"), sql.Identifier(f"secret_fp_r{t}")))
        assert alice.execute("SELECT simpg.range_fill('secret')").fetchone() == (50,)
        assert alice.execute("SELECT key, distance FROM simpg.range_near('secret', 7919, 0)").fetchall() == [(1, 0)]
        alice.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(scene.bob)))
    with scene.connect(scene.bob) as bob:
        for statement in ("SELECT * FROM simpg.range_near('secret', 7919, 0)",
                          "SELECT * FROM simpg.range_near_many('secret', '{7919}')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
                bob.execute(statement)
        for statement in ("SELECT simpg.create_range_index('secret', 'id', 3, 5, key_column => 'id')",
                          "SELECT simpg.drop_range_index('secret')",
                          "SELECT simpg.range_fill('secret')",  # it installs triggers: the owner's
                          "SELECT simpg.attach_range_shard('secret', 'nosuch', 0, 1)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner of table public.secret"):
                bob.execute(statement)
        # a trigger of bob's own table whose arguments name alice's permuted tables
        bob.execute("CREATE TABLE mine (id bigint PRIMARY KEY, fp bigint)")
        bob.execute("CREATE TRIGGER forged AFTER INSERT ON mine REFERENCING NEW TABLE AS simpg_new "
                    "FOR EACH STATEMENT EXECUTE FUNCTION "
                    "simpg.range_shards_write('fp', 'id', '3', '{5}', 'public', 'secret_fp_r')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table secret_fp_r0"):
            bob.execute("INSERT INTO mine VALUES (99, 7919)")
        # a lookup through the forged registry: refused before anything is read (its table
        # lacks the four range triggers), or by the permuted tables' rights
        with pytest.raises((psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectNotInPrerequisiteState),
                           match="permission denied for table secret_fp_r0|not in step"):
            bob.execute("SELECT * FROM simpg.range_near('mine', 7919, 0)")
    with scene.connect(scene.alice) as alice:
        assert alice.execute("SELECT key FROM simpg.range_near('secret', 7919, 0)").fetchall() == [(1,)]
        assert alice.execute("SELECT count(*) FROM secret_fp_r0").fetchone() == (50,)
