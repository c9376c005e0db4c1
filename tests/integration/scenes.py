"""The attack scene: a database owned by alice (no superuser), a stranger bob, and the
superuser; the install paths every attack is played on; and the checks they end with.
The ``scene`` fixture is in tests/integration/conftest.py."""

from __future__ import annotations

import random
import re
import subprocess
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from simpg import bits, schema
from tests.oracles import adversarial_fingerprints, brute_pairs

#: every shipped version but the current one: each install path is also played after
#: alice installed that version and updated it (ALTER EXTENSION ... UPDATE, or the plain
#: install's update), so every attack below holds after an update too
EARLIER = sorted(m.group(1) for f in schema.sql_dir().iterdir()
                 if (m := re.fullmatch(r"simpg--([\d.]+)\.sql", f.name)) and m.group(1) != schema.default_version())
FRESH = ["extension", "plain"]
PATHS = [*FRESH, *(f"{how}-from-{v}" for v in EARLIER for how in FRESH)]


def extension_path(how: str) -> bool:
    """Whether ``how`` installs with CREATE EXTENSION (the bootstrap superuser owns simpg)."""
    return how.startswith("extension")


#: a PL/pgSQL body that makes alice a superuser when a superuser runs it, and does
#: nothing (no error) when anyone else does
GRAB = """
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE {alice} SUPERUSER';
    END IF;
    RETURN {result};
END
"""


@dataclass
class Scene:
    """A database owned by alice (no superuser), a stranger bob, and the superuser's connection."""

    pg: object
    name: str
    alice: str
    bob: str
    admin: psycopg.Connection

    def dsn(self, user: str | None = None, dbname: str | None = None) -> str:
        return self.pg.server.dsn(dbname or self.name, user=user)

    def connect(self, user: str | None = None) -> psycopg.Connection:
        return psycopg.connect(self.dsn(user), autocommit=True)

    def is_superuser(self, role: str) -> bool:
        return self.admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role]).fetchone()[0]

    def install(self, how: str) -> None:
        """alice installs simpg: trusted CREATE EXTENSION, or the plain script through psql;
        ``<path>-from-<version>``: that version first, then updated to the current one."""
        path, _, earlier = how.partition("-from-")
        if path == "extension" and not self.pg.extension_files:
            pytest.fail("the suite could not write this server's extension folder")
        with self.connect(self.alice) as conn:
            if path == "extension" and earlier:
                conn.execute(sql.SQL("CREATE EXTENSION simpg VERSION {}").format(sql.Literal(earlier)))
                conn.execute("ALTER EXTENSION simpg UPDATE")
            elif path == "extension":
                conn.execute("CREATE EXTENSION simpg")
            elif earlier:
                schema.install_plain(conn, version=earlier)
                schema.upgrade_plain(conn)
            else:
                psql(self, self.alice, schema.psql_script())


def psql(scene: Scene, user: str, script: str, dbname: str | None = None) -> subprocess.CompletedProcess:
    server = scene.pg.server
    return subprocess.run(
        [str(server.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", server.host,
         "-p", str(server.port), "-U", user, "-d", dbname or scene.name],
        input=script, text=True, capture_output=True, check=True)


def docs_table(conn: psycopg.Connection, seed: int = 7, k: int = 3) -> dict[int, int | None]:
    """A docs table with adversarial fingerprints, indexed for radius k; returns id -> fp."""
    rng = random.Random(seed)
    fps = adversarial_fingerprints(rng, k, 4, random_rows=300)
    rows = dict(enumerate(fps, start=1))
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint)")
    with conn.cursor().copy("COPY docs (id, fp) FROM STDIN") as copy:
        for key, fp in rows.items():
            copy.write_row((key, None if fp is None else bits.to_db(fp)))
    conn.execute("SELECT simpg.create_index('docs', 'fp', %s, 5)", [k])
    return rows


def assert_exact(conn: psycopg.Connection, rows: dict[int, int | None], k: int = 3) -> None:
    """near and pairs on docs equal brute force."""
    got = {(a, b): d for a, b, d in conn.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', %s)",
                                                 [k]).fetchall()}
    assert got == brute_pairs(rows, k)
    for probe in [fp for fp in rows.values() if fp is not None][:25]:
        near = {r[0] for r in conn.execute("SELECT id FROM simpg.near(NULL::docs, %s, %s)",
                                            [bits.to_db(probe), k]).fetchall()}
        assert near == {key for key, fp in rows.items() if fp is not None and bits.hamming(fp, probe) <= k}


def dump(scene: Scene, user: str) -> bytes:
    server = scene.pg.server
    return subprocess.run([str(server.bindir / "pg_dump"), "-h", server.host, "-p", str(server.port),
                           "-U", user, "-Fc", scene.name], check=True, capture_output=True).stdout


def restore(scene: Scene, archive: bytes, user: str, target: str) -> subprocess.CompletedProcess:
    server = scene.pg.server
    scene.admin.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
        sql.Identifier(target), sql.Identifier(scene.alice)))
    return subprocess.run([str(server.bindir / "pg_restore"), "-h", server.host, "-p", str(server.port),
                           "-U", user, "--exit-on-error", "-d", target], input=archive, capture_output=True)
