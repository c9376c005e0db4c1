"""Managed PostgreSQL: installing and using simpg as a database owner without superuser.

Two ways, each with a real LOGIN role that owns its database and is not a superuser:
the plain SQL script (``simpg install --plain``, for servers whose extension folder
nobody can write) and ``CREATE EXTENSION simpg`` as a trusted extension. Both then
index, query and report as that role, and a second role reads without owning.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from simpg import bits, cli
from tests.oracles import adversarial_fingerprints, brute_pairs, brute_representatives


@dataclass
class OwnedDatabase:
    role: str
    name: str
    dsn: str
    admin: psycopg.Connection  # superuser connection to the same database


@pytest.fixture
def owned_db(pg) -> Iterator[OwnedDatabase]:
    """A fresh database (without simpg) owned by a fresh non-superuser LOGIN role."""
    server = pg.server
    suffix = uuid.uuid4().hex[:10]
    role, name = f"app_owner_{suffix}", f"managed_{suffix}"
    with psycopg.connect(server.dsn(), autocommit=True) as root:
        root.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(
                sql.Identifier(role)
            )
        )
        root.execute(
            sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
                sql.Identifier(name), sql.Identifier(role)
            )
        )
    try:
        with psycopg.connect(server.dsn(name), autocommit=True) as admin:
            yield OwnedDatabase(role, name, server.dsn(name, user=role), admin)
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as root:
            root.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            root.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def use_simpg_as(dsn: str) -> None:
    """Index, query and report on a table, as the role of dsn; compare with brute force."""
    rng = random.Random(4)
    fps = adversarial_fingerprints(rng, 3, 4, random_rows=100)
    rows = dict(zip(rng.sample(range(1, 10_000), len(fps)), fps, strict=True))
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert not conn.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()[0]
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, title text, simhash bigint)")
        with conn.cursor().copy("COPY docs (id, title, simhash) FROM STDIN") as copy:
            for key, fp in rows.items():
                copy.write_row((key, f"t{key}", None if fp is None else bits.to_db(fp)))
        conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
        probe = next(fp for fp in fps if fp is not None)
        near = conn.execute(
            "SELECT id FROM simpg.near(NULL::docs, %s, 3)", [bits.to_db(probe)]
        ).fetchall()
        assert {r[0] for r in near} == {
            k for k, fp in rows.items() if fp is not None and bits.hamming(fp, probe) <= 3
        }
        got = conn.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', 3)").fetchall()
        assert {(a, b): d for a, b, d in got} == brute_pairs(rows, 3)
        clusters = conn.execute(
            "SELECT key, cluster_id, size FROM simpg.clusters('docs', 3)"
        ).fetchall()
        assert {k: (c, s) for k, c, s in clusters} == brute_representatives(rows, 3)
        stats = conn.execute(
            "SELECT rows, duplicated_rows FROM simpg.duplicate_stats('docs', 3)"
        ).fetchone()
        assert stats == (sum(fp is not None for fp in fps), len(brute_representatives(rows, 3)))
        conn.execute("SELECT simpg.drop_index('docs', 'simhash')")
        conn.execute("SELECT simpg.create_index('docs', 'simhash', 2)")  # default blocks this time
        assert conn.execute("SELECT count(*) FROM simpg.pairs('docs', 2)").fetchone()[0] == len(
            brute_pairs(rows, 2)
        )


def test_plain_script_install_by_a_database_owner(owned_db, capsys):
    assert cli.main(["install", "--plain", "--dsn", owned_db.dsn]) == 0
    assert "is now installed" in capsys.readouterr().out
    assert owned_db.admin.execute(
        "SELECT count(*) FROM pg_extension WHERE extname = 'simpg'"
    ).fetchone() == (0,)
    owner = owned_db.admin.execute(
        "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'simpg'"
    ).fetchone()
    assert owner == (owned_db.role,)
    use_simpg_as(owned_db.dsn)
    assert cli.main(["install", "--dsn", owned_db.dsn]) == 0
    assert "was already installed" in capsys.readouterr().out


def test_trusted_extension_by_a_database_owner(pg, owned_db, capsys):
    if not pg.extension_files:
        pytest.fail("the suite could not write this server's extension folder")
    assert cli.main(["install", "--extension", "--dsn", owned_db.dsn]) == 0
    row = owned_db.admin.execute(
        "SELECT extowner::regrole::text, extversion FROM pg_extension WHERE extname = 'simpg'"
    ).fetchone()
    assert row is not None and row[0] == owned_db.role
    use_simpg_as(owned_db.dsn)


def test_create_extension_statement_by_a_database_owner(pg, owned_db):
    if not pg.extension_files:
        pytest.fail("the suite could not write this server's extension folder")
    with psycopg.connect(owned_db.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION simpg")
        # the owner may drop and re-create it too
        conn.execute("DROP EXTENSION simpg")
        conn.execute("CREATE EXTENSION simpg")
    use_simpg_as(owned_db.dsn)


@pytest.mark.parametrize("how", ["plain", "extension"])
def test_another_role_reads_reports_but_owns_nothing(pg, owned_db, how):
    if how == "extension" and not pg.extension_files:
        pytest.fail("the suite could not write this server's extension folder")
    assert cli.main(["install", f"--{how}", "--dsn", owned_db.dsn]) == 0
    use_simpg_as(owned_db.dsn)
    reader = f"reader_{uuid.uuid4().hex[:10]}"
    owned_db.admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(reader)))
    try:
        with psycopg.connect(owned_db.dsn, autocommit=True) as owner:
            owner.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(sql.Identifier(reader)))
        dsn = owned_db.admin.info.dsn.replace(f"user={owned_db.admin.info.user}", f"user={reader}")
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM simpg.pairs('docs', 2)").fetchone()[0] > 0
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):  # a view of the system catalogs
                conn.execute("DELETE FROM simpg.indexes")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT simpg.drop_index('docs', 'simhash')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "CREATE FUNCTION simpg.hamming(a integer, b integer) RETURNS integer "
                    "LANGUAGE sql RETURN 0"
                )
    finally:
        owned_db.admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(reader)))
        owned_db.admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(reader)))


def test_plain_install_without_create_privilege_fails_cleanly(pg, owned_db, capsys):
    outsider = f"outsider_{uuid.uuid4().hex[:10]}"
    owned_db.admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(outsider)))
    try:
        dsn = pg.server.dsn(owned_db.name, user=outsider)
        assert cli.main(["install", "--plain", "--dsn", dsn]) == 1
        err = capsys.readouterr().err
        assert (
            err.startswith("simpg: database error: permission denied for database")
            and err.count("\n") == 1
        )
        assert owned_db.admin.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'simpg'"
        ).fetchone() == (0,)
    finally:
        owned_db.admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(outsider)))
