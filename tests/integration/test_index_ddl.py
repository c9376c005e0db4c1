"""One definition of index DDL (issue 15, code item 1): every path makes the same catalog.

simpg.index_ddl writes an index's statements; simpg.create_index runs them, and so do
Alembic's create_simhash_index(concurrently=True) and simpg backfill, which must run
CREATE INDEX CONCURRENTLY outside a function. SQLAlchemy's simhash_index declares the
same schema in Python (a model exists before its database), and Alembic's offline
mode renders from that declaration. Here the same index is built through each path,
each in a schema of its own, and the catalogs must be equal: prefix columns (name,
position, generation expression, comment with the fingerprint config), B-trees (name,
definition, fill factor, valid) and simpg.indexes; statistics wherever there were rows.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations
from psycopg import sql
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, create_engine

import simpg.alembic  # noqa: F401  (registers the operations)
from simpg import backfill
from simpg.layout import Layout
from simpg.sqlalchemy import simhash_index, url_from_dsn
from tests.integration.alembic_env import operations

CONFIG = "simhash-v1 words:3"
# long enough that index names are shortened with a hash; quotes, spaces, capitals, non-ASCII
AWKWARD = ('Ein "langer" Tabellenname für alle Dokumente', 'Sim Hash "fp"')


def _layout_args(layout: Layout) -> dict[str, Any]:
    return {"k": layout.k, "blocks": layout.levels[0],
            "inner_blocks": layout.levels[1] if len(layout.levels) > 1 else None}


def _sql(db: Any, schema: str, table: str, column: str, layout: Layout) -> None:
    args = _layout_args(layout)
    db.conn.execute("SELECT simpg.create_index(%s::regclass, %s, %s, %s, %s, %s)",
                    [_rel(schema, table), column, args["k"], args["blocks"], args["inner_blocks"], CONFIG])


def _alembic(db: Any, schema: str, table: str, column: str, layout: Layout, *, concurrently: bool) -> None:
    with operations(db.dsn) as op:
        op.create_simhash_index(table, column, schema=schema, fingerprint_config=CONFIG,  # type: ignore[attr-defined]
                                concurrently=concurrently, **_layout_args(layout))


def _alembic_offline(db: Any, schema: str, table: str, column: str, layout: Layout) -> None:
    """``alembic upgrade --sql``'s text for the operation, run statement by statement as psql would."""
    buffer = io.StringIO()
    context = MigrationContext.configure(dialect_name="postgresql",
                                         opts={"as_sql": True, "literal_binds": True, "output_buffer": buffer})
    Operations(context).create_simhash_index(  # type: ignore[attr-defined]
        table, column, schema=schema, fingerprint_config=CONFIG, concurrently=True, **_layout_args(layout))
    statements = [s.strip() for s in buffer.getvalue().split(";\n\n") if s.strip()]
    assert statements[0] == "COMMIT" and statements[-1] == "BEGIN"  # outside the migration's transaction
    for statement in statements[1:-1]:
        db.conn.execute(statement)


def _backfill(db: Any, schema: str, table: str, column: str, layout: Layout) -> None:
    backfill.build_index(db.conn, _rel(schema, table), column, fingerprint_config=CONFIG, **_layout_args(layout))


def _sqlalchemy(db: Any, schema: str, table: str, column: str, layout: Layout) -> None:
    # create_all makes the table with its prefix columns: drop the one made for the others
    db.conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(schema, table)))
    model = Table(table, MetaData(), Column("id", BigInteger, primary_key=True, autoincrement=False),
                  Column(column, BigInteger), schema=schema)
    simhash_index(model.c[column], fingerprint_config=CONFIG, **_layout_args(layout))
    engine = create_engine(url_from_dsn(db.dsn))
    try:
        model.metadata.create_all(engine)
    finally:
        engine.dispose()


PATHS: dict[str, Callable[..., None]] = {
    "sql": _sql,
    "alembic": lambda *a: _alembic(*a, concurrently=False),
    "alembic_concurrently": lambda *a: _alembic(*a, concurrently=True),
    "alembic_offline": _alembic_offline,
    "backfill": _backfill,
    "sqlalchemy": _sqlalchemy,
}


def _rel(schema: str, table: str) -> str:
    return sql.Identifier(schema, table).as_string(None)


def catalog(conn: psycopg.Connection[Any], schema: str, table: str) -> dict[str, Any]:
    """What an index is made of, on the table and (partitioned) every partition, without schema names."""
    rel = _rel(schema, table)
    members = [r[0] for r in conn.execute(
        "SELECT t.relid::regclass::text FROM simpg.relation_tree(%s::regclass) AS t ORDER BY t.level, 1", [rel])]
    found: dict[str, Any] = {
        "simpg.indexes": conn.execute(
            "SELECT fingerprint_column, k, levels, prefix_columns, index_names, fingerprint_config "
            "FROM simpg.indexes WHERE indexed_table = %s::regclass", [rel]).fetchall(),
    }
    for member in members:
        name = "root" if member == members[0] else member.split(".", 1)[1]  # schemas here need no quotes
        found[name + " columns"] = conn.execute(
            "SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attgenerated, "
            "pg_get_expr(d.adbin, d.adrelid), col_description(a.attrelid, a.attnum) "
            "FROM pg_attribute AS a LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            [member]).fetchall()
        found[name + " indexes"] = [
            (index, definition.replace(f" ON {member} ", " ON T ").replace(f" ON ONLY {member} ", " ON ONLY T "),
             options, valid, parent)
            for index, definition, options, valid, parent in conn.execute(
                "SELECT c.relname, pg_get_indexdef(i.indexrelid), c.reloptions, i.indisvalid, "
                "(SELECT p.relname FROM pg_inherits AS h JOIN pg_class AS p ON p.oid = h.inhparent "
                " WHERE h.inhrelid = i.indexrelid) "
                "FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = %s::regclass ORDER BY 1", [member])]
    return found


def analyzed(conn: psycopg.Connection[Any], schema: str, table: str, columns: list[str]) -> set[str]:
    rows = conn.execute("SELECT DISTINCT attname FROM pg_stats WHERE schemaname = %s AND tablename = %s "
                        "AND attname = ANY (%s)", [schema, table, columns]).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize(("names", "layout"), [(("docs", "simhash"), Layout(3, (5,))),
                                               (AWKWARD, Layout(1, (3, 3)))], ids=["plain", "awkward"])
def test_every_path_builds_the_same_index(db: Any, names: tuple[str, str], layout: Layout) -> None:
    table, column = names
    conn: psycopg.Connection[Any] = db.conn
    built = {}
    for path, build in PATHS.items():
        ident = sql.Identifier(path, table)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(path)))
        conn.execute(sql.SQL("CREATE TABLE {} (id bigint PRIMARY KEY, {} bigint)").format(
            ident, sql.Identifier(column)))
        conn.execute(sql.SQL("INSERT INTO {} SELECT g, g * 7919 FROM generate_series(1, 300) AS g").format(ident))
        build(db, path, table, column, layout)
        built[path] = catalog(conn, path, table)
        assert conn.execute("SELECT count(*) FROM simpg.check(%s::regclass)", [_rel(path, table)]).fetchone() == (0,)
    assert built["sql"]["simpg.indexes"][0][:3] == (column, layout.k, list(layout.levels))
    btrees = built["sql"]["simpg.indexes"][0][4]
    assert (btrees[0] == f"{table}_{column}_p0_idx") == (names != AWKWARD)  # else shortened with a hash
    options = [o for name, _, o, _, _ in built["sql"]["root indexes"] if name in btrees]
    assert options == [["fillfactor=100"]] * len(btrees)
    for path in PATHS:
        assert built[path] == built["sql"], path
    # ANALYZE ran wherever the table had rows when the index was built
    prefixes = built["sql"]["simpg.indexes"][0][3]
    for path in set(PATHS) - {"sqlalchemy"}:
        assert analyzed(conn, path, table, prefixes) == set(prefixes), path


TWO_LEVELS = [
    "CREATE TABLE {s}.docs (id bigint, region text, simhash bigint, PRIMARY KEY (id, region)) "
    "PARTITION BY LIST (region)",
    "CREATE TABLE {s}.docs_eu PARTITION OF {s}.docs FOR VALUES IN ('eu') PARTITION BY HASH (id)",
    "CREATE TABLE {s}.docs_eu_0 PARTITION OF {s}.docs_eu FOR VALUES WITH (MODULUS 2, REMAINDER 0)",
    "CREATE TABLE {s}.docs_eu_1 PARTITION OF {s}.docs_eu FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
    "CREATE TABLE {s}.docs_us PARTITION OF {s}.docs FOR VALUES IN ('us')",
]


def test_a_table_partitioned_on_two_levels_gets_the_same_index_on_every_path(db: Any) -> None:
    """Concurrently, each partition's B-tree is built on its own and attached: the same tree as one CREATE INDEX."""
    conn: psycopg.Connection[Any] = db.conn
    layout = Layout(2, (4,))
    built = {}
    paths = {p: PATHS[p] for p in ("sql", "alembic", "alembic_concurrently", "backfill", "sqlalchemy")}
    for path, build in paths.items():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(path)))
        for statement in TWO_LEVELS:
            conn.execute(statement.format(s=path))
        if path == "sqlalchemy":  # the parent from the model, then its partitions by hand
            conn.execute(f"DROP TABLE {path}.docs")
            model = Table("docs", MetaData(), Column("id", BigInteger, primary_key=True, autoincrement=False),
                          Column("region", Text, primary_key=True), Column("simhash", BigInteger), schema=path,
                          postgresql_partition_by="LIST (region)")
            simhash_index(model.c.simhash, fingerprint_config=CONFIG, **_layout_args(layout))
            engine = create_engine(url_from_dsn(db.dsn))
            try:
                model.metadata.create_all(engine)
            finally:
                engine.dispose()
            for statement in TWO_LEVELS[1:]:
                conn.execute(statement.format(s=path))
        else:
            conn.execute(f"INSERT INTO {path}.docs SELECT g, CASE WHEN g % 3 = 0 THEN 'us' ELSE 'eu' END, g * 7919 "
                         "FROM generate_series(1, 300) AS g")
            build(db, path, "docs", "simhash", layout)
        built[path] = catalog(conn, path, "docs")
        assert conn.execute("SELECT count(*) FROM simpg.check(%s::regclass)", [f"{path}.docs"]).fetchone() == (0,)
    assert set(built["sql"]) >= {"docs_eu_0 indexes", "docs_us indexes"}
    assert [i[0] for i in built["sql"]["docs_eu_0 indexes"]][:2] == ["docs_eu_0_pkey", "docs_eu_0_simhash_p0_idx"]
    for path in built:
        assert built[path] == built["sql"], path


def test_index_ddl_lists_what_each_path_runs(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
    steps = conn.execute("SELECT phase, t, statement FROM simpg.index_ddl('docs', 'simhash', 1, '{3}', 'cfg', true)"
                         ).fetchall()
    assert steps == [
        ("columns", None, "ALTER TABLE public.docs " + ", ".join(
            f"ADD COLUMN simhash_p{t} bigint GENERATED ALWAYS AS (simpg.permute(simhash, 1, '{{3}}'::integer[], {t}))"
            " STORED" for t in range(3))),
        *[("btree", t, f"CREATE INDEX CONCURRENTLY docs_simhash_p{t}_idx ON public.docs (simhash_p{t}) "
           "WITH (fillfactor = 100)") for t in range(3)],
        ("analyze", None, "ANALYZE public.docs (simhash_p0, simhash_p1, simhash_p2)"),
        ("register", None, "SELECT * FROM simpg.register_index('public.docs'::regclass, 'simhash'::name, 1::integer, "
                           "'{3}'::integer[], '{simhash_p0,simhash_p1,simhash_p2}'::name[], "
                           "'{docs_simhash_p0_idx,docs_simhash_p1_idx,docs_simhash_p2_idx}'::name[], 'cfg'::text)"),
    ]
    # what the table has already is left out: a stopped build resumes where it stopped,
    # after dropping the INVALID index that a failed CREATE INDEX CONCURRENTLY leaves
    conn.execute("INSERT INTO docs VALUES (1, 5), (2, 5)")
    for _, _, statement in steps[:2]:
        conn.execute(statement)
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY docs_simhash_p1_idx ON docs (simhash_p1)")
    left = conn.execute("SELECT phase, t, index_name, statement FROM simpg.index_ddl('docs', 'simhash', 1, '{3}', "
                        "concurrently => true)").fetchall()
    assert [row[:3] for row in left] == [
        ("drop_invalid", 1, "docs_simhash_p1_idx"), ("btree", 1, "docs_simhash_p1_idx"),
        ("btree", 2, "docs_simhash_p2_idx"), ("analyze", None, None), ("register", None, None)]
    assert left[0][3] == "DROP INDEX CONCURRENTLY IF EXISTS public.docs_simhash_p1_idx"
    for *_, statement in left:
        conn.execute(statement)
    assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []
    assert conn.execute("SELECT count(*) FROM simpg.index_ddl('docs', 'simhash', 1, '{3}')").fetchone() == (2,)


def test_alembic_resumes_a_stopped_concurrent_build(db: Any) -> None:
    """Run again after a failure, create_simhash_index(concurrently=True) keeps what was built."""
    conn: psycopg.Connection[Any] = db.conn
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
    conn.execute("INSERT INTO docs SELECT g, g % 50 FROM generate_series(1, 300) AS g")
    columns = conn.execute("SELECT statement FROM simpg.index_ddl('docs', 'simhash', 3, '{5}') "
                           "WHERE phase = 'columns'").fetchone()
    assert columns is not None
    conn.execute(columns[0])
    conn.execute("CREATE INDEX docs_simhash_p0_idx ON docs (simhash_p0) WITH (fillfactor = 100)")
    with pytest.raises(psycopg.errors.UniqueViolation):  # leaves an INVALID index, as a stopped build does
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY docs_simhash_p1_idx ON docs (simhash_p1)")
    rewrites = conn.execute("SELECT relfilenode FROM pg_class WHERE oid = 'docs'::regclass").fetchone()
    _alembic(db, "public", "docs", "simhash", Layout(3, (5,)), concurrently=True)
    assert conn.execute("SELECT relfilenode FROM pg_class WHERE oid = 'docs'::regclass").fetchone() == rewrites
    assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []
    assert conn.execute("SELECT fingerprint_config, index_names[2] FROM simpg.indexes").fetchone() == (
        CONFIG, "docs_simhash_p1_idx")
