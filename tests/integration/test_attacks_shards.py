"""Attacks on shards (issue 27, classes 3 and 5), played as roles on the suite's server.

Class 3: a foreign server or user mapping that is not the caller's. ``bob`` (a stranger
allowed to make postgres_fdw servers) makes a server under the name the owner is about
to use, pointing at a database of his, with a PUBLIC user mapping. Then the owner runs
``simpg shard create`` / ``create_shards`` / ``create_server`` / ``attach_*``: the
owner's password must never land in a mapping bob can read, no row may reach bob's
database, and simpg refuses naming the server and its owner. postgres_fdw runs over
the suite's own server (loopback): the shard is another database there.

Class 5: range shards written around the triggers. Local partitions stand in for the
shards (the functions are the same); a write straight to a partition of the base table,
ATTACH / DETACH / DROP of a partition, a trigger disabled on a partition, a child table,
the base attached under another table: every lookup equals brute force or refuses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from simpg import bits, schema, shards
from simpg.cli import main
from simpg.exc import SimpgError
from simpg.psycopg import Neighbor
from simpg.shards import Shard, ShardedColumn
from tests.integration.scenes import FRESH
from tests.oracles import brute_near

PASSWORD = "Sup3rsecret-owner"


@dataclass
class Scene:
    """The owner's coordinator and shard databases, bob and his database, on the suite's server."""

    pg: object
    coord: str   # the owner's coordinator database
    shard: str   # the owner's shard database
    bobdb: str   # bob's database, where a hijacked shard would send rows
    bob: str
    alice: str   # a role without superuser, for the checks that need no connection

    def dsn(self, db: str, user: str | None = None) -> str:
        return self.pg.server.dsn(db, user=user)  # type: ignore[attr-defined]

    def connect(self, db: str, user: str | None = None) -> psycopg.Connection:
        return psycopg.connect(self.dsn(db, user), autocommit=True)

    def shard_dsn(self) -> str:
        # the password the attacker wants (the suite's server trusts local connections:
        # it is not checked, but postgres_fdw would put it in the user mapping)
        return self.dsn(self.shard) + f" password={PASSWORD}"


@pytest.fixture(params=FRESH)
def scene(request, pg) -> Iterator[Scene]:
    """Both install paths: CREATE EXTENSION and the plain script."""
    plain = request.param == "plain"
    suffix = uuid.uuid4().hex[:8]
    found = Scene(pg, f"coord_{suffix}", f"shard_{suffix}", f"bobdb_{suffix}", f"bob_{suffix}", f"alice_{suffix}")
    with psycopg.connect(pg.server.dsn(), autocommit=True) as root:
        for role in (found.bob, found.alice):
            root.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(
                sql.Identifier(role)))
        for db in (found.coord, found.shard):
            root.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(db)))
        root.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
            sql.Identifier(found.bobdb), sql.Identifier(found.bob)))
    try:
        for db in (found.coord, found.shard):
            with found.connect(db) as conn:
                schema.install(conn, plain=plain or not pg.extension_files)
        with found.connect(found.coord) as conn:
            conn.execute("CREATE EXTENSION postgres_fdw")
            # servers are not for superusers only: a site lets its users make their own
            for role in (found.bob, found.alice):
                conn.execute(sql.SQL("GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO {}").format(
                    sql.Identifier(role)))
                conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        with found.connect(found.bobdb, found.bob) as conn:
            # what a hijacked shard would receive: the shard's table, in bob's database
            conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint, body text)")
        yield found
    finally:
        with psycopg.connect(pg.server.dsn(), autocommit=True) as root:
            for db in (found.coord, found.shard, found.bobdb):
                root.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
            for role in (found.bob, found.alice):
                root.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def plant_server(scene: Scene, name: str = "s1", owner: str | None = None) -> None:
    """bob (or owner) makes foreign server name, pointing at bob's database, with a PUBLIC mapping."""
    who = owner or scene.bob
    with scene.connect(scene.coord, who) as conn:
        conn.execute(sql.SQL("CREATE SERVER {} FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host {}, port {}, dbname {})")
                     .format(sql.Identifier(name), sql.Literal(scene.pg.server.host),  # type: ignore[attr-defined]
                             sql.Literal(str(scene.pg.server.port)), sql.Literal(scene.bobdb)))  # type: ignore[attr-defined]
        conn.execute(sql.SQL("CREATE USER MAPPING FOR PUBLIC SERVER {} OPTIONS (user {})").format(
            sql.Identifier(name), sql.Literal(scene.bob)))
        conn.execute(sql.SQL("GRANT USAGE ON FOREIGN SERVER {} TO PUBLIC").format(sql.Identifier(name)))


def what_bob_sees(scene: Scene) -> list[tuple[str, str, list[str] | None]]:
    """Every user mapping bob can read, with its options (the owner of a server sees them all)."""
    with scene.connect(scene.coord, scene.bob) as conn:
        return conn.execute("SELECT srvname::text, usename::text, umoptions FROM pg_user_mappings "
                            "ORDER BY 1, 2").fetchall()


def assert_bob_got_nothing(scene: Scene) -> None:
    seen = what_bob_sees(scene)
    assert all(PASSWORD not in str(options) for _, _, options in seen), seen
    assert [(server, user) for server, user, _ in seen] == [("s1", "public")]  # his own mapping only
    with scene.connect(scene.bobdb, scene.bob) as conn:
        assert conn.execute("SELECT count(*) FROM docs").fetchone() == (0,)


def hash_table(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE docs (id bigint NOT NULL, simhash bigint, body text) PARTITION BY HASH (id)")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")


# -- class 3: servers and user mappings that are not the caller's -----------------------


def test_shard_create_refuses_a_strangers_server_and_gives_him_no_password(scene, capsys):
    plant_server(scene)
    with scene.connect(scene.coord) as conn:
        hash_table(conn)
    code = main(["shard", "create", "--dsn", scene.dsn(scene.coord), "--table", "docs", "--column", "simhash",
                 "--blocks", "5", "--shard", f"s1={scene.shard_dsn()}"])
    err = capsys.readouterr().err
    assert code != 0
    assert f'foreign server s1 cannot carry shards: foreign server s1 belongs to role {scene.bob}' in err
    assert PASSWORD not in err
    assert_bob_got_nothing(scene)
    with scene.connect(scene.coord) as conn:
        assert shards.shards(conn, "docs") == []  # nothing attached through bob's server
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"belongs to role {scene.bob}"):
            conn.execute("SELECT simpg.attach_shard('docs', 's1', 1, 0)")
        # rows written now have no partition to go to: none reaches bob
        with pytest.raises(psycopg.Error):
            conn.execute("INSERT INTO docs VALUES (1, 1, 'secret')")
    assert_bob_got_nothing(scene)


def test_create_shards_range_refuses_a_strangers_server(scene):
    plant_server(scene)
    with scene.connect(scene.coord) as conn:
        conn.execute("CREATE TABLE notes (id bigint PRIMARY KEY, fp bigint)")
        conn.execute("INSERT INTO notes SELECT g, g * 7919 FROM generate_series(1, 50) AS g")
        with pytest.raises(SimpgError, match=f"foreign server s1 belongs to role {scene.bob}, not to postgres"):
            shards.create_shards(conn, "notes", "fp", [Shard("s1", scene.shard_dsn())], k=3, blocks=5,
                                 distribution="range")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="server not owned"):
            conn.execute("SELECT simpg.attach_range_shard('notes', 's1', 0, 1)")
        assert conn.execute("SELECT count(*) FROM simpg.range_shards('notes')").fetchone() == (0,)
    assert_bob_got_nothing(scene)


def test_create_server_writes_no_mapping_on_a_server_of_another_role_even_one_it_belongs_to(scene):
    """alice is a member of the role that owns the server: membership is not ownership
    (every member of that role reads the mappings on it)."""
    team = f"team_{scene.alice}"
    with scene.connect(scene.coord) as root:
        root.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(team)))
        root.execute(sql.SQL("GRANT {} TO {}, {}").format(sql.Identifier(team), sql.Identifier(scene.alice),
                                                          sql.Identifier(scene.bob)))
        root.execute(sql.SQL("GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO {}").format(sql.Identifier(team)))
    try:
        plant_server(scene, owner=scene.bob)
        with scene.connect(scene.coord, scene.bob) as conn:
            conn.execute(sql.SQL("ALTER SERVER s1 OWNER TO {}").format(sql.Identifier(team)))
        with scene.connect(scene.coord, scene.alice) as conn:
            with pytest.raises(SimpgError, match=f"belongs to role {team}, not to {scene.alice}"):
                shards.create_server(conn, Shard("s1", scene.shard_dsn()))
            assert conn.execute("SELECT count(*) FROM pg_user_mappings WHERE usename = current_user").fetchone() == (0,)
        assert all(PASSWORD not in str(options) for _, _, options in what_bob_sees(scene))
    finally:
        with scene.connect(scene.coord) as root:
            root.execute("DROP SERVER IF EXISTS s1 CASCADE")
            root.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(team)))
            root.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(team)))


def test_an_own_server_whose_options_are_not_the_dsns_is_refused(scene):
    """The caller's own server, made earlier for another database: reusing it would send
    the shard's rows (and the new mapping's password) there."""
    with scene.connect(scene.coord) as conn:
        conn.execute(sql.SQL("CREATE SERVER s1 FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host {}, port {}, dbname {})")
                     .format(sql.Literal(scene.pg.server.host), sql.Literal(str(scene.pg.server.port)),
                             sql.Literal(scene.bobdb)))
        with pytest.raises(SimpgError, match=f"foreign server s1 has dbname '{scene.bobdb}', "
                                             f"the connection string '{scene.shard}'"):
            shards.create_server(conn, Shard("s1", scene.shard_dsn()))
        assert conn.execute("SELECT count(*) FROM pg_user_mappings WHERE srvname = 's1'").fetchone() == (0,)
        # a host the DSN does not name is a difference too
        conn.execute("DROP SERVER s1")
        conn.execute(sql.SQL("CREATE SERVER s1 FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname {}, host 'elsewhere')")
                     .format(sql.Literal(scene.shard)))
        with pytest.raises(SimpgError, match="foreign server s1 has host 'elsewhere', the connection string none"):
            shards.create_server(conn, Shard("s1", f"dbname={scene.shard} password={PASSWORD}"))
        assert conn.execute("SELECT count(*) FROM pg_user_mappings WHERE srvname = 's1'").fetchone() == (0,)


def test_a_public_mapping_on_the_callers_own_server_is_not_relied_on(scene):
    """The owner's own server with only a PUBLIC mapping: attach refuses; create_server
    makes the owner's own mapping, and then the shard attaches and answers."""
    with scene.connect(scene.coord) as conn:
        hash_table(conn)
        host, port = scene.pg.server.host, str(scene.pg.server.port)
        conn.execute(sql.SQL("CREATE SERVER s1 FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host {}, port {}, dbname {})")
                     .format(sql.Literal(host), sql.Literal(port), sql.Literal(scene.shard)))
        conn.execute("CREATE USER MAPPING FOR PUBLIC SERVER s1 OPTIONS (user 'postgres')")
        problems = conn.execute("SELECT problem, detail "
                                "FROM simpg.remote_index_problems('docs', 's1', 'public', 'docs')").fetchall()
        assert problems == [("no user mapping", "foreign server s1 has no user mapping for postgres (a PUBLIC mapping "
                                                "is not used): CREATE USER MAPPING FOR CURRENT_USER SERVER s1")]
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no user mapping"):
            conn.execute("SELECT simpg.attach_shard('docs', 's1', 1, 0)")
        dsn = f"host={host} port={port} dbname={scene.shard} user=postgres"
        assert shards.create_shards(conn, "docs", "simhash", [Shard("s1", dsn)], blocks=5) == []
        assert conn.execute("SELECT umoptions FROM pg_user_mappings WHERE srvname = 's1' AND usename = 'postgres'"
                            ).fetchone() == (["user=postgres"],)
        conn.execute("INSERT INTO docs VALUES (1, 12345, 'a')")
    with scene.connect(scene.shard) as shard:
        assert shard.execute("SELECT id, simhash FROM docs").fetchall() == [(1, 12345)]


def test_check_shards_names_a_partition_on_a_strangers_server_without_reading_through_it(scene):
    plant_server(scene)
    with scene.connect(scene.coord) as conn:
        hash_table(conn)
        # made by hand, around attach_shard
        conn.execute("CREATE FOREIGN TABLE docs_s1 PARTITION OF docs FOR VALUES WITH (MODULUS 1, REMAINDER 0) "
                     "SERVER s1 OPTIONS (table_name 'docs', async_capable 'true')")
        problems = shards.check_shards(conn, "docs")
        assert [(p.server, p.problem) for p in problems] == [("s1", "server not owned")]
        assert f"belongs to role {scene.bob}" in problems[0].detail


# -- class 5: range shards written around the triggers -----------------------------------


@pytest.fixture(params=FRESH)
def installed(request, bare_db) -> psycopg.Connection:
    """A database with simpg installed by either path (CREATE EXTENSION, the plain script)."""
    schema.install(bare_db.conn, plain=request.param == "plain" or not bare_db.pg.extension_files)
    return bare_db.conn


@pytest.fixture
def ranged(installed) -> psycopg.Connection:
    """parts, hash-partitioned in two, with range shards over local partitions."""
    conn = installed
    conn.execute("CREATE TABLE parts (id bigint PRIMARY KEY, fp bigint) PARTITION BY HASH (id)")
    for r in range(2):
        conn.execute(f"CREATE TABLE parts_{r} PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER {r})")
    conn.execute("INSERT INTO parts SELECT g, g * 104729 FROM generate_series(1, 200) AS g")
    conn.execute("SELECT simpg.create_range_index('parts', 'fp', 3, 5)")
    for t in range(10):
        conn.execute(f"CREATE TABLE parts_fp_r{t}_local PARTITION OF parts_fp_r{t} DEFAULT")
    assert conn.execute("SELECT simpg.range_fill('parts')").fetchone() == (200,)
    return conn


def brute(conn: psycopg.Connection, fp: int, k: int = 3) -> list[tuple[int, int]]:
    """brute_near over every row of parts, read with a plain SELECT (no simpg function)."""
    return [tuple(n) for n in brute_near(dict(conn.execute("SELECT id, fp FROM parts").fetchall()), fp, k)]


def assert_exact(conn: psycopg.Connection, probes: list[int]) -> None:
    index = ShardedColumn(conn, "parts", "fp")
    for fp in probes:
        want = brute(conn, fp)
        assert conn.execute("SELECT key, distance FROM simpg.range_near('parts', %s)", [fp]).fetchall() == want
        assert index.near(bits.from_db(fp)) == [Neighbor(i, d) for i, d in want]
    many = conn.execute("SELECT query, key, distance FROM simpg.range_near_many('parts', %s)", [probes]).fetchall()
    assert many == [(n, i, d) for n, fp in enumerate(probes, 1) for i, d in brute(conn, fp)]


def assert_refused(conn: psycopg.Connection, why: str) -> None:
    index = ShardedColumn(conn, "parts", "fp")
    for lookup in (lambda: conn.execute("SELECT * FROM simpg.range_near('parts', 104729)").fetchall(),
                   lambda: conn.execute("SELECT * FROM simpg.range_near_many('parts', '{104729}')").fetchall(),
                   lambda: index.near(104729), lambda: index.fetch_all(), lambda: list(index.pairs(3))):
        with pytest.raises((psycopg.errors.ObjectNotInPrerequisiteState, SimpgError),
                           match=f"range shards of public.parts.fp are not in step with it: .*{why}"):
            lookup()
    assert "not in step" in {p.problem for p in shards.check_range_shards(conn, "parts", verify_rows=False)}


def assert_in_step(conn: psycopg.Connection) -> None:
    """check_range_shards finds nothing but the local partitions that stand in for shards."""
    assert {p.problem for p in shards.check_range_shards(conn, "parts")} == {"no shards"}


def test_writes_straight_to_a_partition_keep_the_shards_in_step(ranged):
    conn = ranged
    conn.execute("INSERT INTO parts_0 SELECT g, g * 104729 FROM generate_series(1000::bigint, 1100) AS g "
                 "WHERE satisfies_hash_partition('parts'::regclass, 2, 0, g)")
    conn.execute("UPDATE parts_1 SET fp = fp + 1 WHERE id < 100")
    conn.execute("DELETE FROM parts_0 WHERE id BETWEEN 100 AND 150")
    new_key = conn.execute("SELECT min(id) FROM parts_0 WHERE id >= 1000").fetchone()[0]
    deleted = conn.execute("SELECT g FROM generate_series(100::bigint, 150) AS g "
                           "WHERE satisfies_hash_partition('parts'::regclass, 2, 0, g) LIMIT 1").fetchone()[0]
    # the new key is found, the deleted one is not
    assert (new_key, 0) in conn.execute("SELECT key, distance FROM simpg.range_near('parts', %s, 0)",
                                        [new_key * 104729]).fetchall()
    assert conn.execute("SELECT key FROM simpg.range_near('parts', %s, 0)", [deleted * 104729]).fetchall() == []
    assert_exact(conn, [g * 104729 for g in (1, 2, 5, 99, 120, new_key)] + [5 * 104729 + 1])
    assert_in_step(conn)
    # TRUNCATE of one partition removes its rows only; of the table, all
    conn.execute("TRUNCATE parts_1")
    assert_exact(conn, [g * 104729 for g in range(1, 40)])
    assert_in_step(conn)
    conn.execute("TRUNCATE parts")
    assert conn.execute("SELECT count(*) FROM parts_fp_r3").fetchone() == (0,)


def test_attaching_a_table_with_rows_is_refused_until_range_fill(ranged):
    conn = ranged
    conn.execute("ALTER TABLE parts DETACH PARTITION parts_1")
    assert_refused(conn, "the partitions of public.parts changed")
    # writes to the detached table are not the base table's any more: its trigger refuses
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="no longer a partition"):
        conn.execute("INSERT INTO parts_1 VALUES (99999, 5)")
    gone = conn.execute("SELECT min(id) FROM parts_1").fetchone()[0]
    assert conn.execute("SELECT simpg.range_fill('parts')").fetchone() == (
        conn.execute("SELECT count(*) FROM parts").fetchone()[0],)
    assert conn.execute("SELECT key FROM simpg.range_near('parts', %s, 0)", [gone * 104729]).fetchall() == []
    conn.execute("INSERT INTO parts_1 VALUES (99999, 5)")  # range_fill dropped its triggers: a table of its own
    # attach a table that holds rows: refused until range_fill
    conn.execute("CREATE TABLE extra (id bigint NOT NULL, fp bigint)")
    conn.execute("INSERT INTO extra SELECT g, g * 104729 FROM generate_series(1::bigint, 200) AS g "
                 "WHERE satisfies_hash_partition('parts'::regclass, 2, 1, g)")
    conn.execute("DELETE FROM parts_1")
    conn.execute("DROP TABLE parts_1")
    conn.execute("ALTER TABLE parts ATTACH PARTITION extra FOR VALUES WITH (MODULUS 2, REMAINDER 1)")
    assert_refused(conn, "the partitions of public.parts changed")
    conn.execute("SELECT simpg.range_fill('parts')")
    assert_exact(conn, [g * 104729 for g in (1, 2, 3, 4, 5, 150)])
    # the attached table now keeps the shards in step when written directly
    conn.execute("UPDATE extra SET fp = 42 WHERE id = (SELECT min(id) FROM extra)")
    assert_exact(conn, [42, 1 * 104729, 2 * 104729])
    assert_in_step(conn)


def test_a_new_or_dropped_partition_and_a_disabled_trigger_are_refused(ranged):
    conn = ranged
    conn.execute("ALTER TABLE parts DETACH PARTITION parts_1")
    conn.execute("CREATE TABLE parts_1b PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 1)")
    assert_refused(conn, "the partitions of public.parts changed")
    conn.execute("SELECT simpg.range_fill('parts')")
    conn.execute("INSERT INTO parts_1b SELECT g, g FROM generate_series(5000::bigint, 5100) AS g "
                 "WHERE satisfies_hash_partition('parts'::regclass, 2, 1, g)")
    assert_exact(conn, [5001, 5003, 104729 * 2])
    conn.execute("DROP TABLE parts_1b")
    assert_refused(conn, "the partitions of public.parts changed")
    conn.execute("SELECT simpg.range_fill('parts')")
    conn.execute("ALTER TABLE parts_0 DISABLE TRIGGER USER")
    assert_refused(conn, "lacks some of its enabled range triggers")
    conn.execute("ALTER TABLE parts_0 ENABLE TRIGGER USER")
    assert_exact(conn, [104729 * 2, 5001])


def test_the_base_table_under_another_or_with_a_child_is_refused(installed):
    conn = installed
    conn.execute("CREATE TABLE parts (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("INSERT INTO parts SELECT g, g * 104729 FROM generate_series(1, 50) AS g")
    conn.execute("SELECT simpg.create_range_index('parts', 'fp', 3, 5)")
    for t in range(10):
        conn.execute(f"CREATE TABLE parts_fp_r{t}_local PARTITION OF parts_fp_r{t} DEFAULT")
    conn.execute("SELECT simpg.range_fill('parts')")
    assert_exact(conn, [104729, 2 * 104729])
    # a child table: its rows are the table's, written around its triggers
    conn.execute("CREATE TABLE kid () INHERITS (parts)")
    conn.execute("INSERT INTO kid VALUES (1000, 104729 * 3)")
    assert_refused(conn, "the partitions of public.parts changed")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="inheritance children"):
        conn.execute("SELECT simpg.range_fill('parts')")
    conn.execute("DROP TABLE kid")
    assert_exact(conn, [104729, 3 * 104729])
    # the table made a partition of another: writes through that one fire none of its triggers
    conn.execute("CREATE TABLE top (id bigint NOT NULL, fp bigint) PARTITION BY RANGE (id)")
    conn.execute("ALTER TABLE top ATTACH PARTITION parts FOR VALUES FROM (0) TO (100000)")
    conn.execute("INSERT INTO top VALUES (77777, 104729 * 4)")
    assert_refused(conn, "public.parts is now a partition or child of public.top")


def test_a_key_column_changed_to_another_type_stops_writes(ranged):
    conn = ranged
    conn.execute("ALTER TABLE parts ALTER COLUMN fp TYPE numeric")
    with pytest.raises(psycopg.errors.DatatypeMismatch, match="column fp must be bigint"):
        conn.execute("INSERT INTO parts VALUES (5000, 1)")
    with pytest.raises(psycopg.errors.DatatypeMismatch, match="column fp must be bigint"):
        conn.execute("INSERT INTO parts_0 VALUES (5002, 1)")
