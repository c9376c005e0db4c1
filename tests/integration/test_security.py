"""Security: hostile identifiers, other roles, row-level security, search_path hijacks.

Every simpg function is SECURITY INVOKER and builds its dynamic SQL only from regclass
values and format('%I'); these tests try to break that from the outside, with real
login roles that are not superusers. (tests/pgtap/security.sql checks the same
properties from the catalog: no SECURITY DEFINER, pinned search_path, RLS policies.)
"""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import sql

from simpg import bits
from tests.integration.roles import login_role, role_dsn
from tests.oracles import adversarial_fingerprints, brute_pairs, brute_representatives

HOSTILE = [
    ("public", 'a"b; drop table sentinel;--', "fp", "id"),
    ("public", "Robert'); DROP TABLE sentinel;--", "Robert'); DROP TABLE sentinel;--", "Key'Col"),
    ("public", "MixedCase Table", "Finger Print", "ID"),
    ("public", "ünï cödé 表", "指纹", "ключ"),
    ("my.schema", "tbl.name", "fp.col", "key.col"),
    ("public", "t" * 63, "f" * 63, "k" * 63),  # longest identifiers: prefix column names get hashed
]


@pytest.mark.parametrize("schema, table, column, key", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_identifiers(conn, schema, table, column, key):
    conn.execute("CREATE TABLE sentinel (x int)")
    if schema != "public":
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    rel = sql.Identifier(schema, table)
    rel_text = rel.as_string(conn)
    conn.execute(
        sql.SQL("CREATE TABLE {} ({} bigint PRIMARY KEY, {} bigint)").format(
            rel, sql.Identifier(key), sql.Identifier(column)
        )
    )
    rng = random.Random(len(table))
    fps = adversarial_fingerprints(rng, 2, 3, random_rows=40)
    rows = dict(zip(rng.sample(range(1, 5000), len(fps)), fps, strict=True))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(rel)) as copy:
        for k, fp in rows.items():
            copy.write_row((k, None if fp is None else bits.to_db(fp)))

    conn.execute("SELECT simpg.create_index(%s, %s, 2, 3)", [rel_text, column])
    layout = conn.execute(
        "SELECT indexed_table = %s::regclass, prefix_columns FROM simpg.index_layout(%s)",
        [rel_text, rel_text],
    ).fetchone()
    assert layout[0] is True and len(layout[1]) == 3

    probe = next(fp for fp in fps if fp is not None)
    near = conn.execute(
        sql.SQL("SELECT {} FROM simpg.near(NULL::{}, %s, 2)").format(sql.Identifier(key), rel),
        [bits.to_db(probe)],
    ).fetchall()
    assert {r[0] for r in near} == {
        k for k, fp in rows.items() if fp is not None and bits.hamming(fp, probe) <= 2
    }
    query = conn.execute(
        "SELECT simpg.near_query(%s, %s, 2)", [rel_text, bits.to_db(probe)]
    ).fetchone()[0]
    assert len(conn.execute(query).fetchall()) == len(near)

    pairs = conn.execute(
        "SELECT key_a, key_b, distance FROM simpg.pairs(%s, 2, %s, %s)", [rel_text, column, key]
    ).fetchall()
    assert {(a, b): d for a, b, d in pairs} == brute_pairs(rows, 2)
    clusters = conn.execute(
        "SELECT key, cluster_id, size FROM simpg.clusters(%s, 2, %s, %s)", [rel_text, column, key]
    ).fetchall()
    assert {k: (c, s) for k, c, s in clusters} == brute_representatives(rows, 2)
    stats = conn.execute(
        "SELECT rows, duplicated_rows FROM simpg.duplicate_stats(%s, 2, %s)", [rel_text, column]
    ).fetchone()
    assert stats == (sum(fp is not None for fp in fps), len(brute_representatives(rows, 2)))
    assert (
        conn.execute("SELECT sum(rows) FROM simpg.cluster_sizes(%s, 2)", [rel_text]).fetchone()[0]
        == stats[0]
    )

    conn.execute("SELECT simpg.drop_index(%s, %s)", [rel_text, column])
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone()[0] == 0
    columns = conn.execute(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped",
        [rel_text],
    ).fetchone()[0]
    assert columns == 2
    assert conn.execute("SELECT to_regclass('sentinel') IS NOT NULL").fetchone()[0]


def test_hostile_names_as_arguments_are_only_names(conn):
    conn.execute("CREATE TABLE sentinel (x int)")
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 2, 3)")
    attacks = [
        "simhash; DROP TABLE sentinel;--",
        'simhash"; DROP TABLE sentinel;--',
        "x') OR true; --",
    ]
    for attack in attacks:
        for call in (
            "simpg.pairs('docs', 2, %s)",
            "simpg.clusters('docs', 2, 'simhash', %s)",
            "simpg.near(NULL::docs, 1, 2, %s)",
            "simpg.duplicate_stats('docs', 2, %s)",
        ):
            with pytest.raises(psycopg.Error) as err:
                conn.execute(f"SELECT * FROM {call}", [attack]).fetchall()
            assert attack.split(";")[0].split('"')[0] in err.value.diag.message_primary
    for attack in ["docs; DROP TABLE sentinel", "docs') ; DROP TABLE sentinel; --"]:
        with pytest.raises((psycopg.errors.InvalidName, psycopg.errors.UndefinedTable)):
            conn.execute("SELECT * FROM simpg.pairs(%s, 2)", [attack]).fetchall()
    assert conn.execute("SELECT to_regclass('sentinel') IS NOT NULL").fetchone()[0]


def make_docs(conn: psycopg.Connection, owner: str | None = None) -> dict[int, int | None]:
    rng = random.Random(3)
    fps = adversarial_fingerprints(rng, 2, 3, random_rows=30)
    rows = dict(enumerate(fps, 1))
    conn.execute(
        "CREATE TABLE docs (id bigint PRIMARY KEY, owner_name text, body text, simhash bigint)"
    )
    with conn.cursor().copy("COPY docs (id, owner_name, body, simhash) FROM STDIN") as copy:
        for k, fp in rows.items():
            copy.write_row(
                (
                    k,
                    owner or ("alice" if k % 2 else "bob"),
                    f"secret {k}",
                    None if fp is None else bits.to_db(fp),
                )
            )
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 2, 3)")
    return rows


READERS = [
    "SELECT * FROM simpg.pairs('docs', 2)",
    "SELECT * FROM simpg.pairs(NULL::text, 'docs', 2)",
    "SELECT * FROM simpg.clusters('docs', 2)",
    "SELECT * FROM simpg.cluster_sizes('docs', 2)",
    "SELECT * FROM simpg.duplicate_stats('docs', 2)",
    "SELECT * FROM simpg.fingerprint_clusters('docs', 2)",
    "SELECT * FROM simpg.near(NULL::docs, 0, 2)",
]


def test_no_simpg_function_reads_a_table_without_select(db):
    make_docs(db.conn)
    with login_role(db.conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as other:
        for query in READERS:
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
                other.execute(query).fetchall()
            assert "permission denied for table docs" in str(err.value), query
        # the statement's plan is fitted to a sample of the table: refused the same way
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
            other.execute("SELECT simpg.pairs_query('docs', 2)").fetchone()
        assert "permission denied for table docs" in str(err.value)


def test_column_privileges_are_enough_for_reports(db):
    """A role that may read the key and fingerprint columns, not the prefixes nor the body."""
    rows = make_docs(db.conn)
    with login_role(db.conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as other:
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in ["id", "simhash"])
        db.conn.execute(
            sql.SQL("GRANT SELECT ({}) ON docs TO {}").format(cols, sql.Identifier(role))
        )
        got = other.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', 2)").fetchall()
        assert {(a, b): d for a, b, d in got} == brute_pairs(rows, 2)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            other.execute("SELECT body FROM docs").fetchall()
        # with the prefix columns too, the reports read the B-trees: still not the body
        prefixes = db.conn.execute("SELECT prefix_columns FROM simpg.indexes").fetchone()[0]
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in prefixes)
        db.conn.execute(sql.SQL("GRANT SELECT ({}) ON docs TO {}").format(cols, sql.Identifier(role)))
        passes = other.execute("SELECT simpg.pairs_passes('docs', 2)").fetchone()[0]
        assert len(passes) == len(prefixes) and "LATERAL" in passes[0]
        got = other.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', 2)").fetchall()
        assert {(a, b): d for a, b, d in got} == brute_pairs(rows, 2)
        clusters = other.execute("SELECT key, cluster_id, size FROM simpg.clusters('docs', 2)").fetchall()
        assert {k: (c, s) for k, c, s in clusters} == brute_representatives(rows, 2)
        stats = other.execute("SELECT rows, duplicated_rows FROM simpg.duplicate_stats('docs', 2)").fetchone()
        assert stats == (sum(fp is not None for fp in rows.values()), len(brute_representatives(rows, 2)))
        sizes = other.execute("SELECT sum(rows) FROM simpg.cluster_sizes('docs', 2, method => 'components')")
        assert sizes.fetchone() == (sum(fp is not None for fp in rows.values()),)


def test_row_level_security_limits_every_report(db):
    rows = make_docs(db.conn)
    db.conn.execute("ALTER TABLE docs ENABLE ROW LEVEL SECURITY")
    db.conn.execute("CREATE POLICY mine ON docs USING (owner_name = current_user)")
    with login_role(db.conn) as role:
        db.conn.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(sql.Identifier(role)))
        db.conn.execute("UPDATE docs SET owner_name = %s WHERE id %% 3 = 0", [role])
        visible = {k: fp for k, fp in rows.items() if k % 3 == 0}
        assert brute_pairs(visible, 2) != brute_pairs(rows, 2)
        with psycopg.connect(role_dsn(db, role), autocommit=True) as other:
            got = other.execute(
                "SELECT key_a, key_b, distance FROM simpg.pairs('docs', 2)"
            ).fetchall()
            assert {(a, b): d for a, b, d in got} == brute_pairs(visible, 2)
            clusters = other.execute(
                "SELECT key, cluster_id, size FROM simpg.clusters('docs', 2)"
            ).fetchall()
            assert {k: (c, s) for k, c, s in clusters} == brute_representatives(visible, 2)
            stats = other.execute("SELECT rows FROM simpg.duplicate_stats('docs', 2)").fetchone()
            assert stats == (sum(fp is not None for fp in visible.values()),)
            near = other.execute("SELECT id FROM simpg.near(NULL::docs, 0, 2)").fetchall()
            assert {r[0] for r in near} <= set(visible)


def test_catalog_is_read_only_and_only_the_owner_changes_an_index(db):
    """simpg.indexes: everyone reads; nobody writes it (a view of the system catalogs),
    and a role that does not own the table cannot create, drop, register or repair."""
    make_docs(db.conn)
    with login_role(db.conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as other:
        assert other.execute("SELECT k FROM simpg.indexes").fetchall() == [(2,)]
        for statement in ("UPDATE simpg.indexes SET k = 0", "DELETE FROM simpg.indexes",
                          "INSERT INTO simpg.indexes (indexed_table, fingerprint_column, k) VALUES ('docs', 'id', 0)"):
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
                other.execute(statement)
        for call in (
            "simpg.drop_index('docs', 'simhash')",
            "simpg.create_index('docs', 'id', 1, 2)",
            "simpg.register_index('docs', 'id', 0, '{1}', '{id}', '{docs_pkey}')",
            "simpg.repair('docs')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
                other.execute(f"SELECT {call}")
            assert err.value.diag.message_primary == "must be owner of table public.docs"
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            other.execute("ALTER VIEW simpg.indexes RENAME TO x")
    assert db.conn.execute(
        "SELECT k, cardinality(prefix_columns) FROM simpg.indexes"
    ).fetchall() == [(2, 3)]


def test_search_path_cannot_hijack_simpg(db):
    """Objects that shadow what simpg calls, first on the caller's search_path, are never used."""
    rows = make_docs(db.conn)
    conn = db.conn
    conn.execute("CREATE SCHEMA evil")
    conn.execute("CREATE TABLE evil.calls (what text)")
    conn.execute("GRANT ALL ON SCHEMA evil TO PUBLIC")
    conn.execute("GRANT ALL ON evil.calls TO PUBLIC")
    # functions and operators simpg uses, shadowed for exactly the types simpg passes
    conn.execute("""
        CREATE FUNCTION evil.bit_count(bit) RETURNS bigint LANGUAGE sql
            AS $$ INSERT INTO evil.calls VALUES ('bit_count') RETURNING 0::bigint $$;
        CREATE FUNCTION evil.xor(bigint, bigint) RETURNS bigint LANGUAGE sql
            AS $$ INSERT INTO evil.calls VALUES ('#') RETURNING 0::bigint $$;
        CREATE OPERATOR evil.# (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.xor);
        CREATE FUNCTION evil.shr(bigint, integer) RETURNS bigint LANGUAGE sql
            AS $$ INSERT INTO evil.calls VALUES ('>>') RETURNING 0::bigint $$;
        CREATE OPERATOR evil.>> (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = evil.shr);
        CREATE FUNCTION evil.format(text, VARIADIC text[]) RETURNS text LANGUAGE sql
            AS $$ INSERT INTO evil.calls VALUES ('format') RETURNING 'SELECT 1' $$;
        CREATE FUNCTION evil.unnest(name[]) RETURNS SETOF name LANGUAGE sql
            AS $$ INSERT INTO evil.calls VALUES ('unnest') RETURNING 'x'::name $$;
        CREATE TABLE evil.pg_index (x int);
    """)
    with login_role(conn) as role:
        conn.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(sql.Identifier(role)))
        with psycopg.connect(role_dsn(db, role), autocommit=True) as victim:
            victim.execute("SET search_path = evil, pg_catalog, public")
            # control: the shadows do catch unqualified calls made on this search_path
            victim.execute("SELECT 5::bigint # 3::bigint, bit_count(B'1'), 8::bigint >> 1")
            assert victim.execute("SELECT count(*) FROM evil.calls").fetchone() == (3,)
            victim.execute("DELETE FROM evil.calls")
            assert victim.execute("SELECT simpg.hamming(0, 7)").fetchone() == (3,)
            assert victim.execute("SELECT simpg.permute(-1, 3, '{4}', 1)").fetchone() == (-1,)
            got = victim.execute(
                "SELECT key_a, key_b, distance FROM simpg.pairs('public.docs', 2)"
            ).fetchall()
            assert {(a, b): d for a, b, d in got} == brute_pairs(rows, 2)
            clusters = victim.execute(
                "SELECT key, cluster_id, size FROM simpg.clusters('public.docs', 2)"
            ).fetchall()
            assert {k: (c, s) for k, c, s in clusters} == brute_representatives(rows, 2)
            near = victim.execute(
                "SELECT count(*) FROM simpg.near(NULL::public.docs, 0, 2)"
            ).fetchone()[0]
            assert near == sum(fp is not None and bits.hamming(fp, 0) <= 2 for fp in rows.values())
    assert conn.execute("SELECT count(*) FROM evil.calls").fetchone() == (0,)


def test_extension_refuses_a_schema_owned_by_another_role(pg, bare_db):
    """A role that pre-creates schema simpg would own the schema simpg installs into and
    could add overloads that shadow simpg's own calls; installing must refuse."""
    if not pg.extension_files:
        pytest.fail("the suite could not write this server's extension folder")
    conn = bare_db.conn
    with login_role(conn) as role:
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(bare_db.name), sql.Identifier(role)
            )
        )
        with psycopg.connect(role_dsn(bare_db, role), autocommit=True) as mallory:
            mallory.execute("CREATE SCHEMA simpg")
        try:
            with pytest.raises(psycopg.Error):
                conn.execute("CREATE EXTENSION simpg")
        finally:
            conn.execute("DROP EXTENSION IF EXISTS simpg")
            conn.execute("DROP SCHEMA simpg")




def make_sketched_docs_after(conn: psycopg.Connection) -> str:
    """Adds to make_docs's table a sketch equal to the one returned and band keys, band 0
    of every row 7. Returns the query sketch (bit-string input)."""
    conn.execute("ALTER TABLE docs ADD COLUMN sketch bit(256), ADD COLUMN sketch_b0 bigint, "
                 "ADD COLUMN sketch_b1 bigint, ADD COLUMN sketch_b2 bigint, ADD COLUMN sketch_b3 bigint")
    conn.execute("UPDATE docs SET sketch = repeat('0', 256)::bit(256), sketch_b0 = 7")
    for i in range(4):
        conn.execute(f"CREATE INDEX ON docs (sketch_b{i})")
    return "x" + "00" * 32


DUPLICATES_CALLS = [
    "SELECT * FROM simpg.duplicates(NULL::docs, 0, 2, %(s)s::bit(256))",
    "SELECT * FROM simpg.duplicates(NULL::docs, 0, 2, %(s)s::bit(256), '{7,1,2,3}')",
]


def test_duplicates_reads_nothing_beyond_the_callers_rights(db):
    """simpg.duplicates runs with the caller's rights: no SELECT, no rows; the columns of t.* it
    returns need SELECT, whatever columns the caller may read; row-level security holds."""
    rows = make_docs(db.conn)
    s = make_sketched_docs_after(db.conn)
    fingerprinted = {k for k, fp in rows.items() if fp is not None}
    with login_role(db.conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as other:
        for call in DUPLICATES_CALLS:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table docs"):
                other.execute(call, {"s": s}).fetchall()
        # every column but the body: the function cannot be used to read it
        columns = [r[0] for r in db.conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'docs'::regclass AND attnum > 0 "
            "AND NOT attisdropped AND attname <> 'body'").fetchall()]
        db.conn.execute(sql.SQL("GRANT SELECT ({}) ON docs TO {}").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)), sql.Identifier(role)))
        for call in DUPLICATES_CALLS:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table docs"):
                other.execute(call, {"s": s}).fetchall()
        # with SELECT and a policy: the rows of the policy only (band 0 finds every row)
        db.conn.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(sql.Identifier(role)))
        db.conn.execute("ALTER TABLE docs ENABLE ROW LEVEL SECURITY")
        db.conn.execute("CREATE POLICY mine ON docs USING (owner_name = current_user)")
        db.conn.execute("UPDATE docs SET owner_name = %s WHERE id %% 3 = 0", [role])
        got = other.execute("SELECT id FROM simpg.duplicates(NULL::docs, 0, 2, %(s)s::bit(256), '{7,1,2,3}')",
                            {"s": s}).fetchall()
        assert {r[0] for r in got} == {k for k in fingerprinted if k % 3 == 0}


def test_duplicates_trusts_no_statement_of_its_name_it_did_not_make(conn):
    """A statement prepared in the session under the name simpg.duplicates uses, returning
    every row, is not run: its text is not lookup_statement's, so it is prepared again."""
    rows = make_docs(conn)
    s = make_sketched_docs_after(conn)
    name, oid, prefixes = conn.execute(
        "SELECT (simpg.prepared_lookup('banded', 'docs', NULL, 'sketch')).statement_name, 'docs'::regclass::oid, "
        "prefix_columns::text FROM simpg.indexes").fetchone()
    # the layout it states is the table's: only the rest of its text differs
    conn.execute(sql.SQL("PREPARE {}(bigint, integer, bit(256), bigint[], integer) AS SELECT t.* FROM public.docs AS t "
                         "WHERE simpg.layout_is({}::oid::regclass, 'simhash'::name, 2, '{{3}}'::integer[], "
                         "{}::name[], true) AND (true) AND true").format(
        sql.Identifier(name), sql.Literal(oid), sql.Literal(prefixes)))
    planted = conn.execute(sql.SQL("EXECUTE {}(0, 2, NULL, NULL, 0)").format(sql.Identifier(name))).fetchall()
    assert len(planted) == len(rows)  # run as it is, it returns every row
    got = conn.execute("SELECT id FROM simpg.duplicates(NULL::docs, 0, 2, %s::bit(256), '{8,1,2,3}')", [s]).fetchall()
    assert {r[0] for r in got} == {k for k, fp in rows.items() if fp is not None and bits.hamming(fp, 0) <= 2}


def test_hostile_sketch_column_names_are_only_names(conn):
    conn.execute("CREATE TABLE sentinel (x int)")
    make_docs(conn)
    s = make_sketched_docs_after(conn)
    for attack in ["sketch; DROP TABLE sentinel;--", 'sketch"; DROP TABLE sentinel;--', "x') OR true; --"]:
        for bands in (None, "{7,1,2,3}"):
            with pytest.raises(psycopg.errors.UndefinedColumn) as err:
                conn.execute("SELECT * FROM simpg.duplicates(NULL::docs, 0, 2, %s::bit(256), %s, %s)",
                             [s, bands, attack]).fetchall()
            assert attack.split(";")[0].split('"')[0] in err.value.diag.message_primary
    assert conn.execute("SELECT to_regclass('sentinel') IS NOT NULL").fetchone()[0]
