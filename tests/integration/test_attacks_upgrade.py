"""Attacks on the update path, played as roles (issue 27, class 1; docs/security.md).

Under 0.1.0 the installer (``alice``, a database owner without superuser) owned schema
``simpg`` and the extension. Before an update she can plant objects there: a function
with the signature of one the next version adds, made a member with ``ALTER EXTENSION
... ADD`` so that the update's ``CREATE OR REPLACE`` keeps her as its owner; or, on a
plain install, a look-alike of a table the update script reads, which would run her code
as whoever runs the update. Every update from every earlier version this package ships
must refuse such a schema before it calls or replaces anything in it, and every install
or update must end with schema simpg owned by the role that ran the script alone
(sql/functions/90_audit.sql).
"""

from __future__ import annotations

import re
import subprocess

import psycopg
import pytest
from psycopg import sql

from simpg import schema
from simpg.cli import main
from tests.integration.scenes import EARLIER, GRAB, PATHS, Scene, docs_table, extension_path, psql

#: the same through a program the server starts, which no rollback undoes: a script that
#: fails after its first call to alice's code still makes her a superuser
GRAB_FOR_GOOD = """
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE pg_catalog.format('COPY (SELECT 1) TO PROGRAM %L', {command});
    END IF;
    RETURN false;
END
"""


def new_functions(admin: psycopg.Connection, earlier: str) -> list[str]:
    """Signatures of the current version's functions that ``earlier`` lacks, with return types."""
    found = []
    for statement in re.findall(r"^CREATE FUNCTION (simpg\.\w+)\(", schema.script(), flags=re.M):
        if statement not in found and f"CREATE FUNCTION {statement}(" not in schema.script(earlier):
            found.append(statement)
    assert found, f"the current version adds no function to {earlier}"
    return found


def objects_of_others(admin: psycopg.Connection, owner: str) -> list[str]:
    """Objects of schema simpg (and the schema) whose owner is not ``owner``."""
    return [r[0] for r in admin.execute(
        """SELECT pg_describe_object(x.classid, x.objid, 0) || ' owned by ' || pg_get_userbyid(x.owner)
           FROM (SELECT 'pg_class'::regclass AS classid, oid AS objid, relowner AS owner, relnamespace AS nsp
                 FROM pg_class
                 UNION ALL SELECT 'pg_proc'::regclass, oid, proowner, pronamespace FROM pg_proc
                 UNION ALL SELECT 'pg_type'::regclass, oid, typowner, typnamespace FROM pg_type
                 UNION ALL SELECT 'pg_namespace'::regclass, oid, nspowner, oid FROM pg_namespace) AS x
           WHERE x.nsp = 'simpg'::regnamespace AND x.owner <> %s::regrole ORDER BY 1""", [owner]).fetchall()]


def install_earlier(scene: Scene, how: str, version: str) -> None:
    """alice installs ``version`` as it was released: trusted CREATE EXTENSION or the plain script."""
    with scene.connect(scene.alice) as alice:
        if how == "extension":
            alice.execute(sql.SQL("CREATE EXTENSION simpg VERSION {}").format(sql.Literal(version)))
        else:
            schema.install_plain(alice, version=version)
        docs_table(alice)


def version(conn: psycopg.Connection) -> str | None:
    return schema.installed_version(conn)


#: other look-alikes alice can make in her schema and add to her extension under 0.1.0:
#: (statements, the object the refusal names)
PLANTED = {
    "overload": (["CREATE FUNCTION simpg.hamming(a bigint, b integer) RETURNS integer LANGUAGE plpgsql AS $$"
                  + GRAB.format(alice="{alice}", result="0") + "$$",
                  "ALTER EXTENSION simpg ADD FUNCTION simpg.hamming(bigint, integer)"],
                 "function simpg.hamming(bigint,integer)"),
    "operator": (["CREATE FUNCTION simpg.eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$"
                  + GRAB.format(alice="{alice}", result="$1 = $2") + "$$",
                  "CREATE OPERATOR simpg.= (leftarg = bigint, rightarg = bigint, function = simpg.eq)",
                  "ALTER EXTENSION simpg ADD FUNCTION simpg.eq(bigint, bigint)",
                  "ALTER EXTENSION simpg ADD OPERATOR simpg.= (bigint, bigint)"],
                 "operator simpg.=(bigint,bigint)"),
    "view": (["CREATE VIEW simpg.index_names AS SELECT 1 AS x", "ALTER EXTENSION simpg ADD VIEW simpg.index_names"],
             "view simpg.index_names"),
    "type": (["CREATE TYPE simpg.layout AS (k integer)", "ALTER EXTENSION simpg ADD TYPE simpg.layout"],
             "type simpg.layout"),
}


def assert_update_refused(scene: Scene, by: str, earlier: str, names: list[str]) -> None:
    """The update, by alice or by a superuser, is refused naming ``names``; nothing changed."""
    updater = scene.connect(scene.alice) if by == "alice" else scene.connect()
    with updater, pytest.raises(psycopg.Error) as err:
        updater.execute("ALTER EXTENSION simpg UPDATE")
    assert not scene.is_superuser(scene.alice)  # the attack's effect, first
    assert isinstance(err.value, psycopg.errors.InsufficientPrivilege), err.value
    assert "belong to roles that are not superusers" in str(err.value)
    for name in names:
        assert name in str(err.value)
    assert scene.alice in str(err.value)
    assert version(scene.admin) == earlier  # nothing changed


@pytest.mark.parametrize("earlier", EARLIER)
@pytest.mark.parametrize("by", ["alice", "superuser"])
def test_a_function_of_the_next_version_planted_as_a_member_stops_the_update(scene, earlier, by):
    """alice creates a function the update will CREATE OR REPLACE and adds it to the extension."""
    install_earlier(scene, "extension", earlier)
    planted = new_functions(scene.admin, earlier)[0]
    # its exact signature, from the current script, so that CREATE OR REPLACE would match it
    signature = re.search(rf"^CREATE FUNCTION {re.escape(planted)}\((.*?)\)\s*RETURNS (\w+)",
                          schema.script(), flags=re.M | re.S)
    assert signature is not None
    args, returns = signature.group(1), signature.group(2)
    with scene.connect(scene.alice) as alice:
        alice.execute(f"CREATE FUNCTION {planted}({args}) RETURNS {returns} LANGUAGE plpgsql AS $$"
                      + GRAB.format(alice=scene.alice, result="NULL") + "$$")
        alice.execute(f"ALTER EXTENSION simpg ADD FUNCTION {planted}({args})")
    assert_update_refused(scene, by, earlier, [planted])


@pytest.mark.parametrize("earlier", EARLIER)
@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_look_alikes_planted_as_members_stop_the_update(scene, earlier, kind):
    install_earlier(scene, "extension", earlier)
    statements, name = PLANTED[kind]
    with scene.connect(scene.alice) as alice:
        for statement in statements:
            alice.execute(statement.replace("{alice}", scene.alice))
    assert_update_refused(scene, "superuser", earlier, [name])


@pytest.mark.parametrize("earlier", EARLIER)
def test_a_plain_install_is_updated_only_by_its_owner(scene, earlier):
    """On a plain install alice owns everything; a look-alike of the catalog the update reads
    would run her code as a superuser who updates it for her."""
    install_earlier(scene, "plain", earlier)
    with scene.connect(scene.alice) as alice:
        server = scene.pg.server
        command = (f"{server.bindir / 'psql'} -X -h {server.host} -p {server.port} -U postgres -d {scene.name} "
                   f"-c 'ALTER ROLE {scene.alice} SUPERUSER'")
        alice.execute("CREATE FUNCTION simpg.grab() RETURNS boolean LANGUAGE plpgsql AS $$"
                      + GRAB_FOR_GOOD.format(command=sql.Literal(command).as_string(alice)) + "$$")
        alice.execute("DROP TABLE simpg.indexes CASCADE")
        alice.execute("CREATE VIEW simpg.indexes AS SELECT 'docs'::regclass AS indexed_table, "
                      "ARRAY['fp']::name[] AS prefix_columns, 'x'::text AS fingerprint_config "
                      "FROM (SELECT simpg.grab() AS g) AS s WHERE s.g")
    with scene.connect() as admin, pytest.raises(psycopg.Error) as err:
        schema.upgrade_plain(admin)
    assert not scene.is_superuser(scene.alice)
    assert isinstance(err.value, psycopg.errors.InsufficientPrivilege)
    assert "its plain install holds objects of other roles" in str(err.value)
    assert version(scene.admin) == earlier
    # the same through the command, which says it in one line
    assert main(["upgrade", "--dsn", scene.dsn()]) != 0
    assert not scene.is_superuser(scene.alice)


@pytest.mark.parametrize("earlier", EARLIER)
@pytest.mark.parametrize("how", ["extension", "plain"])
def test_every_update_leaves_schema_simpg_to_the_role_that_ran_it(scene, how, earlier):
    install_earlier(scene, how, earlier)
    if how == "extension":
        with scene.connect(scene.alice) as alice:
            alice.execute("ALTER EXTENSION simpg UPDATE")
        owner = "postgres"  # the bootstrap superuser runs a trusted extension's scripts
    else:
        with scene.connect(scene.alice) as alice:
            assert schema.upgrade_plain(alice) == (earlier, schema.default_version())
        owner = scene.alice
    assert version(scene.admin) == schema.default_version()
    assert objects_of_others(scene.admin, owner) == []
    # nobody but the owner holds more than USAGE, EXECUTE or SELECT
    assert scene.admin.execute(
        """SELECT count(*)
           FROM (SELECT proacl AS acl, proowner AS owner FROM pg_proc WHERE pronamespace = 'simpg'::regnamespace
                 UNION ALL SELECT relacl, relowner FROM pg_class WHERE relnamespace = 'simpg'::regnamespace
                 UNION ALL SELECT nspacl, nspowner FROM pg_namespace WHERE nspname = 'simpg') AS o,
                aclexplode(o.acl) AS a
           WHERE a.grantee <> o.owner AND (a.privilege_type NOT IN ('USAGE', 'EXECUTE', 'SELECT') OR a.is_grantable)"""
    ).fetchone() == (0,)
    with scene.connect(scene.alice) as alice:  # and the index made before the update still answers
        assert alice.execute("SELECT count(*) FROM simpg.check('docs')").fetchone() == (0,)


def audit_script() -> str:
    return (schema.sql_dir() / "functions" / "90_audit.sql").read_text(encoding="utf-8")


@pytest.mark.parametrize("how", PATHS)
def test_the_final_audit_refuses_a_schema_with_objects_or_grants_of_other_roles(scene, how):
    """The last statement of every install and update script, run against planted objects."""
    scene.install(how)
    owner = "postgres" if extension_path(how) else scene.alice
    psql(scene, owner, audit_script())  # a clean install passes
    # an object of another role in the schema (only a superuser could make one now)
    scene.admin.execute("CREATE FUNCTION simpg.planted() RETURNS integer LANGUAGE sql RETURN 1")
    scene.admin.execute(sql.SQL("ALTER FUNCTION simpg.planted() OWNER TO {}").format(sql.Identifier(scene.bob)))
    with pytest.raises(subprocess.CalledProcessError) as err:
        psql(scene, owner, audit_script())
    assert f"function simpg.planted() is owned by {scene.bob}" in err.value.stderr
    scene.admin.execute("DROP FUNCTION simpg.planted()")
    # a grant beyond EXECUTE (the right to pass it on)
    scene.admin.execute(sql.SQL("GRANT EXECUTE ON FUNCTION simpg.hamming(bigint, bigint) TO {} WITH GRANT OPTION")
                        .format(sql.Identifier(scene.bob)))
    with pytest.raises(subprocess.CalledProcessError) as err:
        psql(scene, owner, audit_script())
    assert f"grants EXECUTE WITH GRANT OPTION to {scene.bob}" in err.value.stderr
    scene.admin.execute(sql.SQL("REVOKE ALL ON FUNCTION simpg.hamming(bigint, bigint) FROM {}")
                        .format(sql.Identifier(scene.bob)))
    # a column grant beyond the guard's lock rows' own (INSERT, and UPDATE of slot only)
    scene.admin.execute(sql.SQL("GRANT UPDATE (guarded_table) ON simpg.guard_locks TO {}")
                        .format(sql.Identifier(scene.bob)))
    with pytest.raises(subprocess.CalledProcessError) as err:
        psql(scene, owner, audit_script())
    assert f"column guarded_table of simpg.guard_locks grants UPDATE to {scene.bob}" in err.value.stderr
