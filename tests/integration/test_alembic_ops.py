"""op.install_simpg / op.uninstall_simpg and the index operations, through Alembic's Operations."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DBAPIError

import simpg.alembic  # noqa: F401  (registers the operations)
from simpg import schema
from simpg.alembic import CreateSimhashIndexOp, DropSimhashIndexOp, InstallSimpgOp, UninstallSimpgOp
from simpg.exc import SimpgError
from simpg.sqlalchemy.index import PREFIX_INDEX_FILLFACTOR
from tests.integration.alembic_env import operations


def test_reverse_pairs():
    assert isinstance(InstallSimpgOp(plain=True).reverse(), UninstallSimpgOp)
    assert InstallSimpgOp(plain=True).reverse().reverse().plain is True
    create = CreateSimhashIndexOp("t", "fp", k=2, blocks=4)
    drop = create.reverse()
    assert isinstance(drop, DropSimhashIndexOp) and drop.reverse() is create
    with pytest.raises(ValueError, match="not reversible"):
        DropSimhashIndexOp("t", "fp").reverse()


@pytest.mark.parametrize("plain", [True, None])
def test_install_index_and_uninstall(bare_db, plain):
    conn = bare_db.conn
    with operations(bare_db.dsn) as op:
        op.install_simpg(plain=plain)
        op.install_simpg(plain=plain)  # installed already: nothing to do
        op.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, fp bigint)")
        op.create_simhash_index("docs", "fp", k=2, blocks=4)
    assert schema.installed_version(conn) == schema.default_version()
    is_extension = conn.execute(
        "SELECT count(*) FROM pg_extension WHERE extname = 'simpg'"
    ).fetchone()[0]
    assert is_extension == (0 if plain else 1)
    # search_path is the session's own again after the plain script
    assert conn.execute("SHOW search_path").fetchone()[0] == '"$user", public'

    with pytest.raises(
        SimpgError,
        match=r"1 table column\(s\) still have a simhash index: docs\.fp; "
        r"drop them first",
    ):
        with operations(bare_db.dsn) as op:
            op.uninstall_simpg()
    assert schema.installed_version(conn) is not None  # nothing was dropped

    with operations(bare_db.dsn) as op:
        op.drop_simhash_index("docs", "fp")
        op.execute("CREATE VIEW near_zero AS SELECT id FROM docs WHERE simpg.hamming(fp, 0) <= 1")
    if plain:
        with pytest.raises(
            SimpgError,
            match=r"cannot remove simpg: 1 object\(s\) use it: rule _RETURN on view near_zero",
        ):
            with operations(bare_db.dsn) as op:
                op.uninstall_simpg()
    else:
        with pytest.raises(
            DBAPIError, match="cannot drop extension simpg because other objects depend on it"
        ):
            with operations(bare_db.dsn) as op:
                op.uninstall_simpg()
    assert conn.execute("SELECT count(*) FROM docs").fetchone() == (0,)  # user objects intact
    with operations(bare_db.dsn) as op:
        op.execute("DROP VIEW near_zero")
        op.uninstall_simpg()
    assert schema.installed_version(conn) is None
    assert conn.execute("SELECT to_regclass('docs') IS NOT NULL").fetchone() == (True,)


def test_generated_columns_count_as_users_of_a_plain_install(bare_db):
    schema.install(bare_db.conn, plain=True)
    # a prefix column made outside simpg.create_index and never registered
    bare_db.conn.execute(
        "CREATE TABLE t (fp bigint, p bigint GENERATED ALWAYS AS "
        "(simpg.permute(fp, 1, '{2}'::integer[], 0)) STORED)"
    )
    with pytest.raises(SimpgError, match="default value for column p of table t"):
        with operations(bare_db.dsn) as op:
            op.uninstall_simpg()


def test_create_simhash_index_errors_are_clear(db):
    db.conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, fp bigint, body text)")
    with pytest.raises(SimpgError, match="concurrently=True. needs blocks="):
        with operations(db.dsn) as op:
            op.create_simhash_index("docs", "fp", concurrently=True)
    with pytest.raises(DBAPIError, match=r"column (public\.)?docs\.body is text, expected bigint"):
        with operations(db.dsn) as op:
            op.create_simhash_index("docs", "body", k=3, blocks=5)
    with operations(db.dsn) as op:
        op.create_simhash_index("docs", "fp", k=3)  # SQL picks the layout for the row count
    levels = db.conn.execute("SELECT levels FROM simpg.indexes").fetchone()[0]
    assert levels == db.conn.execute("SELECT simpg.default_levels(3, 0)").fetchone()[0]
    with operations(db.dsn) as op:
        op.drop_simhash_index("docs", "fp")
    with pytest.raises(DBAPIError, match=r"no simpg index on (public\.)?docs\.fp"):
        with operations(db.dsn) as op:
            op.drop_simhash_index("docs", "fp")


def test_schema_qualified_table(db):
    db.conn.execute(
        'CREATE SCHEMA news; CREATE TABLE news."Items" (id bigserial PRIMARY KEY, fp bigint)'
    )
    with operations(db.dsn) as op:
        op.create_simhash_index("Items", "fp", k=1, blocks=3, schema="news", concurrently=False)
    with operations(db.dsn) as op:
        op.drop_simhash_index("Items", "fp", schema="news", concurrently=True)
    with operations(db.dsn) as op:
        op.create_simhash_index("Items", "fp", k=1, blocks=3, schema="news", concurrently=True)
    row = db.conn.execute("SELECT indexed_table::text, index_names FROM simpg.indexes").fetchone()
    assert row == ('news."Items"', [f"Items_fp_p{t}_idx" for t in range(3)])
    # the online path builds the B-trees as simpg.create_index does (fillfactor 100)
    options = db.conn.execute(
        "SELECT c.reloptions FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'news.\"Items\"'::regclass AND NOT x.indisprimary"
    ).fetchall()
    assert options == [([f"fillfactor={PREFIX_INDEX_FILLFACTOR}"],)] * 3
