"""migrations/: simpg's reference schema, upgraded and downgraded on a real server.

The one definition of the table is the model simpg.sqlalchemy.documents.Document. The
migrated schema must equal what Alembic's autogenerate compares it with (the model), and
on the server's catalog, object for object, both ``metadata.create_all`` and
``simpg.reference.ensure_reference_schema`` (what the CLI runs: the model's DDL and
``simpg.create_index``), also when it moves a table of an earlier revision forward.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine

import simpg.alembic
from simpg import reference, schema
from simpg.sqlalchemy import url_from_dsn
from simpg.sqlalchemy.documents import metadata

ROOT = Path(__file__).resolve().parents[2]
INI = ROOT / "migrations" / "alembic.ini"


def snapshot(conn: psycopg.Connection) -> dict[str, object]:
    """Everything about simpg_documents and simpg_decisions that a schema difference could show in."""
    return {**table_snapshot(conn, "simpg_documents"),
            "decisions": table_snapshot(conn, "simpg_decisions") if conn.execute(
                "SELECT to_regclass('simpg_decisions')").fetchone() != (None,) else None}


def table_snapshot(conn: psycopg.Connection, rel: str) -> dict[str, object]:
    return {
        "columns": conn.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated, "
            "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute AS a "
            "LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped "
            # by name: a column a later migration adds comes after the prefix columns,
            # which the DDL and the model create last; the order is not what we compare
            "ORDER BY a.attname",
            (rel,),
        ).fetchall(),
        "indexes": conn.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass "
            "ORDER BY 1",
            (rel,),
        ).fetchall(),
        "constraints": conn.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass "
            "ORDER BY 1",
            (rel,),
        ).fetchall(),
        "catalog": conn.execute(
            "SELECT fingerprint_column, k, levels, prefix_columns, index_names, fingerprint_config "
            "FROM simpg.indexes WHERE indexed_table = %s::regclass",
            (rel,),
        ).fetchall(),
        "passages": conn.execute(
            "SELECT passage_column, passage_window, spaceless_window, format, k, index_name FROM simpg.passage_indexes "
            "WHERE indexed_table = %s::regclass ORDER BY 1",
            (rel,),
        ).fetchall(),
        "comments": conn.execute(
            "SELECT a.attname, col_description(a.attrelid, a.attnum) FROM pg_attribute AS a "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped "
            "AND col_description(a.attrelid, a.attnum) IS NOT NULL ORDER BY 1",
            (rel,),
        ).fetchall(),
    }


def alembic_config(dsn: str) -> Config:
    cfg = Config(str(INI))
    cfg.attributes["configure_logger"] = False
    cfg.cmd_opts = type("Opts", (), {"x": [f"dsn={dsn}"]})()
    return cfg


def test_upgrade_downgrade_and_equal_schemas(pg, bare_db, db):
    # the real command line, as an operator runs it
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "alembic",
            "-c",
            str(INI),
            "-x",
            f"dsn={bare_db.dsn}",
            "upgrade",
            "head",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr
    migrated = snapshot(bare_db.conn)
    assert schema.installed_version(bare_db.conn) == schema.default_version()
    # migration 0006 wrote out the windows the model declares
    assert migrated["passages"] == [("passages", reference.PASSAGE_WINDOW, reference.PASSAGE_SPACELESS_WINDOW, 1, 5,
                                      "simpg_documents_passages_keys_idx")]

    assert reference.ensure_reference_schema(db.conn) is True
    assert snapshot(db.conn) == migrated

    janitor = pg.new_db()
    with janitor:
        dsn = pg.server.dsn(janitor.dbname)
        engine = create_engine(url_from_dsn(dsn))
        metadata.create_all(engine)
        engine.dispose()
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert snapshot(conn) == migrated

    cfg = alembic_config(bare_db.dsn)
    command.check(cfg)  # the models and the migrated database agree
    command.downgrade(cfg, "0005")  # 0006 down: the passage index and column go, nothing else
    before = snapshot(bare_db.conn)
    assert before["passages"] == [] and "passages" not in [c[0] for c in before["columns"]]
    assert before["indexes"] == [i for i in migrated["indexes"] if "passages" not in i[0]]
    command.upgrade(cfg, "head")
    assert snapshot(bare_db.conn) == migrated
    command.downgrade(cfg, "base")
    assert bare_db.conn.execute("SELECT to_regclass('simpg_documents')").fetchone() == (None,)
    assert schema.installed_version(bare_db.conn) is None
    command.upgrade(cfg, "head")
    assert snapshot(bare_db.conn) == migrated


def test_no_database_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("SIMPG_DSN", raising=False)
    cfg = Config(str(INI))
    cfg.attributes["configure_logger"] = False
    with pytest.raises(Exception, match="no database: pass -x dsn="):
        command.upgrade(cfg, "head")


def autogenerate_differences(dsn: str) -> list[object]:
    """What Alembic's autogenerate finds between the database and the model, types and defaults included."""
    engine = create_engine(url_from_dsn(dsn))
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={
                "compare_type": True, "compare_server_default": True, "include_name": simpg.alembic.include_name})
            return list(compare_metadata(context, metadata))
    finally:
        engine.dispose()


def test_the_migrations_head_is_the_model(bare_db):
    cfg = alembic_config(bare_db.dsn)
    command.upgrade(cfg, "0003")
    assert autogenerate_differences(bare_db.dsn)  # the comparison sees a revision behind (no band keys)
    command.upgrade(cfg, "head")
    assert autogenerate_differences(bare_db.dsn) == []


@pytest.mark.parametrize("revision", ["0002", "0003", "0004", "0005"])
def test_ensure_reference_schema_moves_an_earlier_table_to_the_head(pg, bare_db, revision):
    command.upgrade(alembic_config(bare_db.dsn), "head")
    head = snapshot(bare_db.conn)

    janitor = pg.new_db(template=None)
    with janitor:
        dsn = pg.server.dsn(janitor.dbname)
        command.upgrade(alembic_config(dsn), revision)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO simpg_documents (source, body, simhash, fingerprint_config) "
                         "VALUES ('a.txt', 'stored before', 42, 'c')")
            assert snapshot(conn) != head
            assert reference.ensure_reference_schema(conn) is False
            assert snapshot(conn) == head
            assert conn.execute("SELECT source, sketch, sketch_b0, passages FROM simpg_documents").fetchall() == [
                ("a.txt", None, None, None)]
            before = snapshot(conn)
            assert reference.ensure_reference_schema(conn) is False  # nothing left to add
            assert snapshot(conn) == before
        assert autogenerate_differences(dsn) == []
