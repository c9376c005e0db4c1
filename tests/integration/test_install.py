"""The three install paths give the same objects: CREATE EXTENSION, the plain script, and the upgrade."""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from simpg import schema
from simpg.cli import main
from simpg.exc import ExtensionNotInstalled, SimpgError

OBJECTS = """
SELECT 'function ' || p.oid::regprocedure::text || ' ' || p.provolatile::text || p.proisstrict::text
       || p.proparallel::text || ' secdef=' || p.prosecdef::text || ' config=' || coalesce(p.proconfig::text, '')
       || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '') || ' body=' || md5(p.prosrc)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'simpg'
UNION ALL
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || ' notnull=' || a.attnotnull::text
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'simpg' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'schema owner=' || pg_get_userbyid(n.nspowner)::text || ' acl=' || n.nspacl::text
FROM pg_namespace n WHERE n.nspname = 'simpg'
UNION ALL
SELECT 'view ' || c.relname || ' ' || md5(pg_get_viewdef(c.oid))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'simpg' AND c.relkind = 'v'
UNION ALL
SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' rls=' || c.relrowsecurity::text
       || ' acl=' || coalesce(array_to_string(ARRAY(SELECT a.privilege_type || ':' || a.grantee::regrole::text
                                       FROM aclexplode(c.relacl) a WHERE a.grantee = 0 ORDER BY 1), ','), '')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'simpg'
UNION ALL
SELECT 'policy ' || polname || ' ' || polcmd::text || ' ' || coalesce(pg_get_expr(polqual, polrelid), '')
       || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), '')
FROM pg_policy WHERE polrelid = 'simpg.indexes'::regclass
ORDER BY 1
"""


def objects(conn: psycopg.Connection) -> list[str]:
    # aclexplode lists grants to PUBLIC as grantee 0; regrole prints it as '-'
    return [r[0] for r in conn.execute(OBJECTS).fetchall()]


def test_create_extension_after_install_extension_command(bare_db, capsys):
    server = bare_db.pg.server
    assert main(["install-extension", "--pg-config", str(server.pg_config)]) == 0
    assert "CREATE EXTENSION simpg" in capsys.readouterr().out
    bare_db.conn.execute("CREATE EXTENSION simpg")
    assert schema.installed_version(bare_db.conn) == schema.default_version() == "0.2.0"
    assert bare_db.conn.execute("SELECT simpg.hamming(0, -1)").fetchone()[0] == 64


def test_plain_script_gives_the_same_objects_as_the_extension(pg, bare_db, db, capsys):
    assert main(["install", "--plain", "--dsn", bare_db.dsn]) == 0
    assert "is now installed" in capsys.readouterr().out
    plain = objects(bare_db.conn)
    assert len(plain) > 40
    assert plain == objects(db.conn)  # db: the template, installed with CREATE EXTENSION where possible
    assert schema.installed_version(bare_db.conn) == "0.2.0"
    # a second install is refused clearly, and the CLI says it is already there
    assert main(["install", "--dsn", bare_db.dsn]) == 0
    assert "already installed (as a plain script)" in capsys.readouterr().out
    # --extension asks for CREATE EXTENSION, which a plain install is not: refused, saying so
    assert main(["install", "--extension", "--dsn", bare_db.dsn]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "simpg: simpg 0.2.0 is installed here as a plain script, not with CREATE EXTENSION; "
        "use it as it is (run without --extension), or remove the plain install "
        "before installing the extension\n")


def test_install_chooses_extension_when_files_are_present(pg, bare_db):
    version = schema.install(bare_db.conn)
    kind = bare_db.conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simpg'").fetchone()[0]
    assert version == "0.2.0" and kind == (1 if pg.extension_files else 0)


def test_alter_extension_update_from_0_1_0(pg, bare_db, capsys):
    schema.install_extension_files(sharedir=pg.server.sharedir)
    conn = bare_db.conn
    conn.execute("CREATE EXTENSION simpg")
    fresh = objects(conn)
    conn.execute("DROP EXTENSION simpg")
    conn.execute("CREATE EXTENSION simpg VERSION '0.1.0'")  # the script as released
    assert objects(conn) != fresh
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("INSERT INTO docs SELECT i, i * 7919 FROM generate_series(1, 100) AS i")
    conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
    assert main(["upgrade", "--dsn", bare_db.dsn, "--to", "0.2.0"]) == 0
    assert "0.1.0 -> 0.2.0" in capsys.readouterr().out
    assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simpg'").fetchone()[0] == "0.2.0"
    assert objects(conn) == fresh  # every function body included
    # an index made by 0.1.0 keeps working, and new ones get 0.2.0's B-trees
    assert conn.execute("SELECT id FROM simpg.near(NULL::docs, 7919 * 3, 0)").fetchall() == [(3,)]
    conn.execute("CREATE TABLE more (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("SELECT simpg.create_index('more', 'fp', 3, 5)")
    options = conn.execute("SELECT DISTINCT c.reloptions FROM pg_index AS x JOIN pg_class AS c "
                           "ON c.oid = x.indexrelid WHERE x.indrelid = 'more'::regclass AND NOT x.indisprimary")
    assert options.fetchall() == [(["fillfactor=100"],)]


def test_plain_install_upgrades_with_the_same_scripts(bare_db, db, capsys):
    conn = bare_db.conn
    assert schema.install_plain(conn, version="0.1.0") == "0.1.0"
    assert schema.installed_version(conn) == "0.1.0"
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("INSERT INTO docs SELECT i, i * 7919 FROM generate_series(1, 100) AS i")
    conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
    assert main(["upgrade", "--dsn", bare_db.dsn]) == 0
    assert "0.1.0 -> 0.2.0 (plain script)" in capsys.readouterr().out
    assert schema.installed_version(conn) == "0.2.0"
    assert objects(conn) == objects(db.conn)  # a fresh 0.2.0, function bodies included
    assert conn.execute("SELECT id FROM simpg.near(NULL::docs, 7919 * 5, 0)").fetchall() == [(5,)]
    assert schema.upgrade_plain(conn) == ("0.2.0", "0.2.0")  # nothing left to do
    with pytest.raises(SimpgError, match="no upgrade path from simpg 0.2.0 to 9.9.9"):
        schema.upgrade_plain(conn, "9.9.9")
    with pytest.raises(SimpgError, match="no install script for simpg 0.0.1"):
        schema.script("0.0.1")


def test_missing_simpg_says_how_to_install(bare_db, capsys):
    with pytest.raises(ExtensionNotInstalled) as err:
        schema.require_installed(bare_db.conn)
    assert "CREATE EXTENSION simpg" in str(err.value) and "simpg install" in str(err.value)
    assert main(["upgrade", "--dsn", bare_db.dsn]) == 1
    assert capsys.readouterr().err.strip() == "simpg: simpg is not installed here; nothing to upgrade"


def test_every_function_is_commented_and_plpgsql_pins_search_path(conn):
    rows = conn.execute(
        "SELECT p.proname, l.lanname, p.proconfig, obj_description(p.oid, 'pg_proc'), p.prosecdef "
        "FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang "
        "WHERE p.pronamespace = 'simpg'::regnamespace").fetchall()
    assert len(rows) > 20
    for name, language, config, comment, security_definer in rows:
        assert comment, name
        assert not security_definer, name  # none at all (docs/security.md)
        if language == "plpgsql":
            assert config and "search_path=pg_catalog, pg_temp" in config, name


def test_pg_dump_and_restore_keep_the_catalog(pg, db, bare_db):
    if not pg.extension_files or db.pg.server.name == "external":
        pytest.fail("this server cannot take extension files; pg_dump test needs CREATE EXTENSION")
    conn = db.conn
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, fp bigint)")
    conn.execute("INSERT INTO docs SELECT g, g * 7919 FROM generate_series(1, 500) g")
    conn.execute("SELECT simpg.create_index('docs', 'fp', 2, 4)")
    server = pg.server
    dump = subprocess.run([str(server.bindir / "pg_dump"), "-h", server.host, "-p", str(server.port),
                           "-U", server.user, "-Fc", db.name], check=True, capture_output=True).stdout
    subprocess.run([str(server.bindir / "pg_restore"), "-h", server.host, "-p", str(server.port),
                    "-U", server.user, "-d", bare_db.name], input=dump, check=True, capture_output=True)
    restored = bare_db.conn
    assert restored.execute("SELECT indexed_table::text, levels FROM simpg.indexes").fetchall() == [("docs", [4])]
    assert restored.execute("SELECT id FROM simpg.near(NULL::docs, 7919 * 3, 0)").fetchall() == [(3,)]


def test_database_owner_without_superuser_creates_extension_and_searches(pg):
    """The trusted extension: a database owner who is not a superuser installs and uses simpg."""
    import random

    from simpg import bits

    server = pg.server
    role = f"owner_{abs(hash(server.host)) % 10**6}_{random.randrange(10**6)}"
    admin = psycopg.connect(server.dsn(), autocommit=True)
    try:
        admin.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        admin.execute(f"CREATE DATABASE {role} OWNER {role} TEMPLATE template0")
        with psycopg.connect(server.dsn(role, user=role), autocommit=True) as conn:
            assert not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
            conn.execute("CREATE EXTENSION simpg")
            conn.execute("CREATE TABLE articles (id bigint PRIMARY KEY, simhash bigint NOT NULL)")
            rng = random.Random(99)
            corpus = [rng.getrandbits(64) for _ in range(20_000)]
            queries = [rng.getrandbits(64) for _ in range(20)]
            for i, q in enumerate(queries):  # planted neighbours the queries have never been part of
                corpus[i * 7] = q ^ (1 << (i % 64)) ^ (1 << ((i * 5 + 3) % 64))
            with conn.cursor().copy("COPY articles (id, simhash) FROM STDIN") as copy:
                for i, fp in enumerate(corpus):
                    copy.write_row((i, bits.to_db(fp)))
            conn.execute("SELECT simpg.create_index('articles', 'simhash', 3)")
            for q in queries:
                got = sorted(r[0] for r in conn.execute(
                    "SELECT id FROM simpg.near(NULL::articles, %s, 3)", [bits.to_db(q)]).fetchall())
                assert got == [i for i, fp in enumerate(corpus) if bits.hamming(fp, q) <= 3]
                assert got  # each query has its planted neighbour
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN " + conn.execute("SELECT simpg.near_query('articles', %s, 3)",
                                          [bits.to_db(queries[0])]).fetchone()[0]).fetchall())
            assert "Seq Scan" not in plan and "Index Scan" in plan
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {role}")
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.close()
