"""Alembic operations: ``op.install_simpg()``, ``op.create_simhash_index(...)`` and their reverses.

Every operation has ``reverse()``, so autogenerate writes the downgrade, and
``concurrently=True`` builds the B-tree indexes with ``CREATE INDEX CONCURRENTLY``
(outside the migration's transaction, in Alembic's ``autocommit_block``).

Example (in a migration file)::

    import simpg.alembic  # registers the operations

    def upgrade():
        op.install_simpg()
        op.create_simhash_index("articles", "simhash", k=3, blocks=5)
        op.create_simhash_guard("articles", "simhash")    # no two rows within k (docs/guard.md)
        op.create_passage_index("articles", "passages", window=22, spaceless_window=46)  # partial duplicates

    def downgrade():
        op.drop_passage_index("articles", "passages")
        op.drop_simhash_guard("articles", "simhash")
        op.drop_simhash_index("articles", "simhash")
        op.uninstall_simpg()
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

from alembic.operations import MigrateOperation, Operations
from psycopg import sql
from sqlalchemy import BigInteger, Boolean, Column, Integer, MetaData, Table, Text, cast, literal, select, text
from sqlalchemy.dialects.postgresql import REGCLASS
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex, ExecutableDDLElement
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.functions import Function

from simpg import schema as simpg_schema
from simpg.exc import SimpgError
from simpg.layout import Layout
from simpg.passages.config import DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW, PassageConfig
from simpg.sqlalchemy.index import register_statement, simhash_index
from simpg.sqlalchemy.passages import passage_index_statement
from simpg.sqlnames import quoted_name

logger = logging.getLogger(__name__)

__all__ = [
    "CreatePassageIndexOp",
    "CreateSimhashGuardOp",
    "CreateSimhashIndexOp",
    "DropPassageIndexOp",
    "DropSimhashGuardOp",
    "DropSimhashIndexOp",
    "InstallSimpgOp",
    "UninstallSimpgOp",
]


def _simpg(name: str, *args: Any) -> Function[Any]:
    return Function(name, *args, packagenames=("simpg",))


def _rel(table_name: str, schema: str | None) -> str:
    """Quoted, schema-qualified table name, as regclass input text (a bound value).

    Quoted by psycopg.sql, not the dialect's preparer, which doubles ``%`` for pyformat
    drivers: right in a statement, another table's name in a value.
    """
    return quoted_name(schema, table_name) if schema else quoted_name(table_name)


class _ColumnOp(MigrateOperation):
    """An operation on one column of a table: the table, the column, its schema, and its autogenerate entry.

    What the guard and passage index operations share, as Alembic's own operations share
    ``AlterTableOp``. ``to_diff_tuple`` is ``(diff_name, schema, table, column, *diff_values())``.
    """

    diff_name: ClassVar[str]

    def __init__(self, table_name: str, column_name: str, *, schema: str | None = None) -> None:
        self.table_name = table_name
        self.column_name = column_name
        self.schema = schema

    def diff_values(self) -> tuple[Any, ...]:
        """What autogenerate compares beyond the column (a create operation's settings)."""
        return ()

    def to_diff_tuple(self) -> tuple[Any, ...]:
        """This operation as an autogenerate diff entry."""
        return (self.diff_name, self.schema, self.table_name, self.column_name, *self.diff_values())


class _DropColumnOp(_ColumnOp):
    """Dropping what a create operation made: reversible when autogenerate made it as that operation's reverse."""

    #: why a drop written by hand cannot be reversed: the settings it does not know
    unknown: ClassVar[str]

    def __init__(self, table_name: str, column_name: str, *, schema: str | None = None,
                 _reverse: MigrateOperation | None = None) -> None:
        super().__init__(table_name, column_name, schema=schema)
        self._reverse = _reverse

    def reverse(self) -> MigrateOperation:
        """The operation that undoes this one."""
        if self._reverse is None:
            name = self.diff_name.replace("remove_", "drop_")
            raise ValueError(f"{name}({self.table_name!r}, {self.column_name!r}) is not reversible: "
                             f"{self.unknown}")
        return self._reverse


def _call_on_column(operations: Operations, function: str, op: _ColumnOp, *values: Any) -> None:
    """Run ``SELECT simpg.<function>(table, column, *values)`` (values: bound literals) in the migration."""
    operations.execute(select(_simpg(function, cast(literal(_rel(op.table_name, op.schema), Text), REGCLASS),
                                     literal(op.column_name, Text), *values)))


class _AddPrefixColumns(ExecutableDDLElement):
    """``ALTER TABLE t ADD COLUMN ..., ADD COLUMN ...``: the prefix columns in one rewrite (offline mode)."""

    def __init__(self, table: Table, columns: Sequence[Column[Any]]) -> None:
        self.table, self.columns = table, list(columns)


class _AnalyzeColumns(ExecutableDDLElement):
    """``ANALYZE t (columns)`` (offline mode)."""

    def __init__(self, table: Table, columns: Sequence[Column[Any]]) -> None:
        self.table, self.columns = table, list(columns)


# Both are compiled from the dialect's own quoted fragments, as SQLAlchemy's AddColumn is:
# every name is quoted (and its % escaped for the driver) once, by the same compiler.
@compiles(_AddPrefixColumns)
def _compile_add_prefix_columns(element: _AddPrefixColumns, compiler: Any, **kw: Any) -> str:
    adds = ", ".join("ADD COLUMN " + str(compiler.get_column_specification(c)) for c in element.columns)
    return "ALTER TABLE " + str(compiler.preparer.format_table(element.table)) + " " + adds


@compiles(_AnalyzeColumns)
def _compile_analyze_columns(element: _AnalyzeColumns, compiler: Any, **kw: Any) -> str:
    names = ", ".join(str(compiler.preparer.quote(c.name)) for c in element.columns)
    return "ANALYZE " + str(compiler.preparer.format_table(element.table)) + " (" + names + ")"


def _online_bind(operations: Operations, what: str) -> Connection:
    if operations.migration_context.as_sql:
        raise SimpgError(
            f"{what} needs a database connection; it cannot run in offline (--sql) mode"
        )
    return operations.get_bind()


# -- install / uninstall ---------------------------------------------------------------

_VERSION_SQL = text(
    "SELECT coalesce("
    " (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'simpg'),"
    " (SELECT coalesce(substring(obj_description(n.oid, 'pg_namespace') FROM 'version (\\S+)'),"
    "                  'unknown')"
    "  FROM pg_catalog.pg_namespace AS n JOIN pg_catalog.pg_proc AS p ON p.pronamespace = n.oid"
    "  WHERE n.nspname = 'simpg' AND p.proname = 'hamming' LIMIT 1))"
)


@Operations.register_operation("install_simpg")
class InstallSimpgOp(MigrateOperation):
    """Install simpg in the database (no-op when it is installed already)."""

    def __init__(self, *, plain: bool | None = None) -> None:
        self.plain = plain

    @classmethod
    def install_simpg(cls, operations: Operations, *, plain: bool | None = None) -> None:
        """Install simpg: CREATE EXTENSION when the server has the files, else the plain script.

        Args:
            operations: given by Alembic.
            plain: True always runs the plain script (managed servers); False requires
                CREATE EXTENSION; None (default) prefers the extension.
        """
        operations.invoke(cls(plain=plain))

    def reverse(self) -> UninstallSimpgOp:
        """The operation that undoes this one."""
        return UninstallSimpgOp(plain=self.plain)

    def to_diff_tuple(self) -> tuple[Any, ...]:
        """This operation as an autogenerate diff entry."""
        return ("install_simpg",)


@Operations.register_operation("uninstall_simpg")
class UninstallSimpgOp(MigrateOperation):
    """Remove simpg; refuses while any simhash index is recorded in simpg.indexes."""

    def __init__(self, *, plain: bool | None = None) -> None:
        self.plain = plain

    @classmethod
    def uninstall_simpg(cls, operations: Operations, *, plain: bool | None = None) -> None:
        """Remove simpg (DROP EXTENSION, or the plain install's schema).

        Refuses, naming them, while simpg.indexes lists indexes (tables still have prefix
        columns) or other objects use simpg's functions, so no user data goes with it.
        """
        operations.invoke(cls(plain=plain))

    def reverse(self) -> InstallSimpgOp:
        """The operation that undoes this one."""
        return InstallSimpgOp(plain=self.plain)

    def to_diff_tuple(self) -> tuple[Any, ...]:
        """This operation as an autogenerate diff entry."""
        return ("uninstall_simpg",)


@Operations.implementation_for(InstallSimpgOp)
def _install_simpg(operations: Operations, op: InstallSimpgOp) -> None:
    bind = _online_bind(operations, "install_simpg")
    version = bind.execute(_VERSION_SQL).scalar()
    if version is not None:
        logger.info("simpg %s is already installed", version)
        return
    available = bind.execute(
        text("SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'simpg'")
    ).scalar()
    if not op.plain and available:
        bind.exec_driver_sql("CREATE EXTENSION simpg")
        return
    if op.plain is False:
        raise SimpgError(
            "the server has no simpg extension files; run 'simpg install-extension' "
            "on the database host, or use op.install_simpg(plain=True)"
        )
    # The plain script, as simpg.schema.install_plain runs it: every name resolved
    # against pg_catalog and simpg only, for the script and nothing after it.
    saved = bind.execute(text("SELECT current_setting('search_path')")).scalar()
    bind.execute(text("SELECT set_config('search_path', 'pg_catalog, pg_temp', true)"))
    # no_parameters: the script holds % signs that are not placeholders (it makes schema
    # simpg itself, and pins search_path for the rest of the transaction)
    bind.exec_driver_sql(simpg_schema.script(), execution_options={"no_parameters": True})
    bind.exec_driver_sql(simpg_schema.version_comment_sql(simpg_schema.default_version()),
                         execution_options={"no_parameters": True})
    bind.execute(text("SELECT set_config('search_path', :saved, true)"), {"saved": saved})


# Objects outside simpg that use simpg's functions, tables or types (a plain install
# has no extension to make DROP refuse, so look before DROP SCHEMA ... CASCADE).
_DEPENDENTS_SQL = text("""
WITH simpg_objects AS (
    SELECT 'pg_catalog.pg_proc'::regclass AS classid, p.oid FROM pg_catalog.pg_proc AS p
    WHERE p.pronamespace = 'simpg'::regnamespace
    UNION ALL
    SELECT 'pg_catalog.pg_class'::regclass, c.oid FROM pg_catalog.pg_class AS c
    WHERE c.relnamespace = 'simpg'::regnamespace
    UNION ALL
    SELECT 'pg_catalog.pg_type'::regclass, t.oid FROM pg_catalog.pg_type AS t
    WHERE t.typnamespace = 'simpg'::regnamespace
)
SELECT DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) AS what
FROM pg_catalog.pg_depend AS d
JOIN simpg_objects AS o ON o.classid = d.refclassid AND o.oid = d.refobjid
WHERE d.deptype = 'n'
  AND (CASE d.classid
        WHEN 'pg_catalog.pg_proc'::regclass THEN
            (SELECT pronamespace FROM pg_catalog.pg_proc WHERE oid = d.objid)
        WHEN 'pg_catalog.pg_class'::regclass THEN
            (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = d.objid)
        WHEN 'pg_catalog.pg_type'::regclass THEN
            (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = d.objid)
        WHEN 'pg_catalog.pg_attrdef'::regclass THEN
            (SELECT c.relnamespace FROM pg_catalog.pg_attrdef AS a
             JOIN pg_catalog.pg_class AS c ON c.oid = a.adrelid WHERE a.oid = d.objid)
        WHEN 'pg_catalog.pg_rewrite'::regclass THEN
            (SELECT c.relnamespace FROM pg_catalog.pg_rewrite AS r
             JOIN pg_catalog.pg_class AS c ON c.oid = r.ev_class WHERE r.oid = d.objid)
        WHEN 'pg_catalog.pg_constraint'::regclass THEN
            (SELECT connamespace FROM pg_catalog.pg_constraint WHERE oid = d.objid)
        WHEN 'pg_catalog.pg_policy'::regclass THEN
            (SELECT c.relnamespace FROM pg_catalog.pg_policy AS y
             JOIN pg_catalog.pg_class AS c ON c.oid = y.polrelid WHERE y.oid = d.objid)
        ELSE 0
      END) IS DISTINCT FROM 'simpg'::regnamespace
ORDER BY 1
""")


@Operations.implementation_for(UninstallSimpgOp)
def _uninstall_simpg(operations: Operations, op: UninstallSimpgOp) -> None:
    bind = _online_bind(operations, "uninstall_simpg")
    if bind.execute(_VERSION_SQL).scalar() is None:
        logger.info("simpg is not installed")
        return
    recorded = (
        bind.execute(
            text(
                "SELECT i.indexed_table::text || '.' || quote_ident(i.fingerprint_column) "
                "FROM simpg.indexes AS i ORDER BY 1"
            )
        )
        .scalars()
        .all()
    )
    if recorded:
        raise SimpgError(
            f"{len(recorded)} table column(s) still have a simhash index: "
            f"{', '.join(recorded)}; "
            "drop them first with op.drop_simhash_index(table, column)"
        )
    extension = bind.execute(
        text("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'simpg'")
    ).scalar()
    if extension:
        # RESTRICT: PostgreSQL itself refuses while other objects depend on the extension
        bind.exec_driver_sql("DROP EXTENSION simpg RESTRICT")
        return
    users = bind.execute(_DEPENDENTS_SQL).scalars().all()
    if users:
        raise SimpgError(f"cannot remove simpg: {len(users)} object(s) use it: {'; '.join(users)}")
    bind.exec_driver_sql("DROP SCHEMA simpg CASCADE")


# -- simhash indexes ---------------------------------------------------------------------


@Operations.register_operation("create_simhash_index")
class CreateSimhashIndexOp(_ColumnOp):
    """Add a table's prefix columns and B-tree indexes, and record them in simpg.indexes."""

    diff_name = "add_simhash_index"

    def __init__(
        self,
        table_name: str,
        column_name: str,
        *,
        k: int = 3,
        blocks: int | None = None,
        inner_blocks: int | None = None,
        fingerprint_config: str | None = None,
        schema: str | None = None,
        concurrently: bool = False,
    ) -> None:
        super().__init__(table_name, column_name, schema=schema)
        self.k = k
        self.blocks = blocks
        self.inner_blocks = inner_blocks
        self.fingerprint_config = fingerprint_config
        self.concurrently = concurrently

    @classmethod
    def create_simhash_index(
        cls,
        operations: Operations,
        table_name: str,
        column_name: str,
        *,
        k: int = 3,
        blocks: int | None = None,
        inner_blocks: int | None = None,
        fingerprint_config: str | None = None,
        schema: str | None = None,
        concurrently: bool = False,
    ) -> None:
        """Index a bigint fingerprint column for within-k search (as ``simpg.create_index`` does).

        Args:
            operations: given by Alembic.
            table_name: the table.
            column_name: its bigint fingerprint column.
            k: largest radius the index answers.
            blocks: level-1 blocks; None lets SQL pick ``simpg.default_levels(k, rows)``
                (not with ``concurrently``, where the layout must be known up front).
            inner_blocks: level-2 blocks, optional.
            fingerprint_config: identity recorded in simpg.indexes.
            schema: the table's schema.
            concurrently: build the B-trees with CREATE INDEX CONCURRENTLY, outside the
                migration's transaction. Adding the generated columns still rewrites the
                table under an ACCESS EXCLUSIVE lock (see docs/alembic.md).
        """
        operations.invoke(
            cls(
                table_name,
                column_name,
                k=k,
                blocks=blocks,
                inner_blocks=inner_blocks,
                fingerprint_config=fingerprint_config,
                schema=schema,
                concurrently=concurrently,
            )
        )

    @property
    def layout(self) -> Layout | None:
        """The layout, when ``blocks`` is given."""
        if self.blocks is None:
            return None
        levels = (self.blocks,) if self.inner_blocks is None else (self.blocks, self.inner_blocks)
        return Layout(self.k, levels)

    def reverse(self) -> DropSimhashIndexOp:
        """The operation that undoes this one."""
        return DropSimhashIndexOp(
            self.table_name,
            self.column_name,
            schema=self.schema,
            concurrently=self.concurrently,
            _reverse=self,
        )

    def diff_values(self) -> tuple[Any, ...]:
        """The layout, which autogenerate compares."""
        return self.k, self.layout.levels if self.layout else None


@Operations.register_operation("drop_simhash_index")
class DropSimhashIndexOp(_DropColumnOp):
    """Remove a simhash index: its prefix columns, B-tree indexes and catalog row."""

    diff_name = "remove_simhash_index"
    unknown = "its layout is unknown"

    def __init__(
        self,
        table_name: str,
        column_name: str,
        *,
        schema: str | None = None,
        concurrently: bool = False,
        _reverse: CreateSimhashIndexOp | None = None,
    ) -> None:
        super().__init__(table_name, column_name, schema=schema, _reverse=_reverse)
        self.concurrently = concurrently

    @classmethod
    def drop_simhash_index(
        cls,
        operations: Operations,
        table_name: str,
        column_name: str,
        *,
        schema: str | None = None,
        concurrently: bool = False,
    ) -> None:
        """Drop what create_simhash_index made (``simpg.drop_index``).

        Args:
            operations: given by Alembic.
            table_name: the table.
            column_name: its fingerprint column.
            schema: the table's schema.
            concurrently: drop the B-trees with DROP INDEX CONCURRENTLY first, outside the
                migration's transaction; dropping the columns after that is metadata-only.
        """
        operations.invoke(
            cls(table_name, column_name, schema=schema, concurrently=concurrently)
        )


@Operations.implementation_for(CreateSimhashIndexOp)
def _create_simhash_index(operations: Operations, op: CreateSimhashIndexOp) -> None:
    rel = _rel(op.table_name, op.schema)
    if not op.concurrently:
        # One code path with SQL: simpg.create_index adds the same columns and indexes.
        operations.execute(
            select(
                _simpg(
                    "create_index",
                    cast(literal(rel, Text), REGCLASS),
                    literal(op.column_name, Text),
                    literal(op.k, Integer),
                    literal(op.blocks, Integer),
                    literal(op.inner_blocks, Integer),
                    literal(op.fingerprint_config, Text),
                )
            )
        )
        return
    layout = op.layout
    if layout is None:
        raise SimpgError("create_simhash_index(concurrently=True) needs blocks=")
    if operations.migration_context.as_sql:  # no database to ask simpg.index_ddl
        with operations.get_context().autocommit_block():
            for statement in _offline_statements(operations, op, layout):
                operations.execute(statement)
        return
    # The statements simpg.create_index runs (simpg.index_ddl), with CONCURRENTLY: they
    # cannot run inside a function, since a function runs in a transaction.
    statements = operations.get_bind().execute(
        text("SELECT s.statement FROM simpg.index_ddl(CAST(:rel AS regclass), :col, :k, "
             "CAST(:levels AS integer[]), :config, concurrently => true) "
             "WITH ORDINALITY AS s(phase, t, index_name, statement, n) ORDER BY s.n"),
        {"rel": rel, "col": op.column_name, "k": layout.k, "levels": list(layout.levels),
         "config": op.fingerprint_config},
    ).scalars().all()
    with operations.get_context().autocommit_block():
        for statement in statements:
            # no_parameters: the text is run as written (names may hold % or :)
            operations.get_bind().exec_driver_sql(statement, execution_options={"no_parameters": True})


def _offline_statements(operations: Operations, op: CreateSimhashIndexOp, layout: Layout) -> list[Executable]:
    """simpg.index_ddl's statements (concurrently) for a table that is not partitioned, without a database.

    Offline (``--sql``) there is no simpg.index_ddl to ask, so they are rendered from the
    SQLAlchemy declaration of the same index (:func:`simhash_index`), the one Python
    rendering of prefix columns and B-trees, which ``metadata.create_all`` runs too;
    tests/integration/test_index_ddl.py runs them and compares the catalog with
    simpg.create_index's.
    """
    table = Table(op.table_name, MetaData(), Column(op.column_name, BigInteger), schema=op.schema)
    spec = simhash_index(table.c[op.column_name], k=layout.k, blocks=layout.levels[0],
                         inner_blocks=layout.levels[1] if len(layout.levels) > 1 else None)
    statements: list[Executable] = [_AddPrefixColumns(table, spec.prefix_columns)]  # one rewrite
    for index in spec.indexes:
        index.dialect_options["postgresql"]["concurrently"] = True
        statements.append(CreateIndex(index))
    statements.append(_AnalyzeColumns(table, spec.prefix_columns))
    statements.append(register_statement(_rel(op.table_name, op.schema), op.column_name, layout,
                                         spec.prefix_names, spec.index_names, op.fingerprint_config))
    return statements


@Operations.implementation_for(DropSimhashIndexOp)
def _drop_simhash_index(operations: Operations, op: DropSimhashIndexOp) -> None:
    if not op.concurrently:
        _call_on_column(operations, "drop_index", op)
        return
    rel = _rel(op.table_name, op.schema)
    bind = _online_bind(operations, "drop_simhash_index(concurrently=True)")
    partitioned = bind.execute(
        text("SELECT relkind = 'p' FROM pg_catalog.pg_class WHERE oid = CAST(:rel AS regclass)"), {"rel": rel}
    ).scalar()
    if partitioned:
        # PostgreSQL cannot DROP INDEX CONCURRENTLY a partitioned index; dropping the
        # columns drops the B-trees with them, without reading the table
        logger.info("%s is partitioned: its B-trees are dropped with its prefix columns", rel)
        _call_on_column(operations, "drop_index", op)
        return
    names = (
        bind.execute(
            text("SELECT unnest((simpg.index_layout(CAST(:rel AS regclass), :col)).index_names)"),
            {"rel": rel, "col": op.column_name},
        )
        .scalars()
        .all()
    )
    with operations.get_context().autocommit_block():
        for name in names:
            index = sql.Identifier(op.schema, name) if op.schema else sql.Identifier(name)
            # no_parameters: run as psycopg composed it (names may hold % or :)
            bind.exec_driver_sql(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(index).as_string(None),
                                 execution_options={"no_parameters": True})
        _call_on_column(operations, "drop_index", op)


# -- near-unique guards (docs/guard.md) ------------------------------------------------------


@Operations.register_operation("create_simhash_guard")
class CreateSimhashGuardOp(_ColumnOp):
    """Add a near-unique guard on an indexed fingerprint column (``simpg.create_guard``)."""

    diff_name = "add_simhash_guard"

    def __init__(self, table_name: str, column_name: str, *, k: int | None = None,
                 key_column: str | None = None, sketch_column: str | None = None,
                 max_sketch_distance: int | None = None, bands: bool | None = None, schema: str | None = None) -> None:
        super().__init__(table_name, column_name, schema=schema)
        self.k = k
        self.key_column = key_column
        self.sketch_column = sketch_column
        self.max_sketch_distance = max_sketch_distance
        self.bands = bands

    @classmethod
    def create_simhash_guard(cls, operations: Operations, table_name: str, column_name: str, *,
                             k: int | None = None, key_column: str | None = None, sketch_column: str | None = None,
                             max_sketch_distance: int | None = None, bands: bool | None = None,
                             schema: str | None = None) -> None:
        """From now on no two committed rows within ``k`` bits (default: the index's k).

        Args:
            operations: given by Alembic.
            table_name: the table (its simhash index must exist).
            column_name: its fingerprint column.
            k: the guard's radius, up to the index's.
            key_column: the column naming rows in refusals (default: the primary key).
            sketch_column: a ``bit(256)`` column of sketches: only rows they confirm count.
            max_sketch_distance: the largest sketch distance that confirms (default 36).
            bands: rows sharing a band key (``<sketch_column>_b0`` .. ``_b3``) count too
                (default: with a sketch column, as ``simpg dedup`` decides).
            schema: the table's schema.
        """
        operations.invoke(cls(table_name, column_name, k=k, key_column=key_column, sketch_column=sketch_column,
                              max_sketch_distance=max_sketch_distance, bands=bands, schema=schema))

    def reverse(self) -> DropSimhashGuardOp:
        """The operation that undoes this one."""
        return DropSimhashGuardOp(self.table_name, self.column_name, schema=self.schema, _reverse=self)

    def diff_values(self) -> tuple[Any, ...]:
        """The guard's settings, which autogenerate compares."""
        return self.k, self.sketch_column, self.max_sketch_distance, self.bands


@Operations.register_operation("drop_simhash_guard")
class DropSimhashGuardOp(_DropColumnOp):
    """Remove the near-unique guard of a fingerprint column (``simpg.drop_guard``)."""

    diff_name = "remove_simhash_guard"
    unknown = "its k is unknown"

    @classmethod
    def drop_simhash_guard(cls, operations: Operations, table_name: str, column_name: str, *,
                           schema: str | None = None) -> None:
        """Drop what create_simhash_guard made."""
        operations.invoke(cls(table_name, column_name, schema=schema))


@Operations.implementation_for(CreateSimhashGuardOp)
def _create_simhash_guard(operations: Operations, op: CreateSimhashGuardOp) -> None:
    _call_on_column(operations, "create_guard", op, literal(op.k, Integer), literal(op.key_column, Text),
                    literal(op.sketch_column, Text), literal(op.max_sketch_distance, Integer),
                    literal(op.bands, Boolean))


@Operations.implementation_for(DropSimhashGuardOp)
def _drop_simhash_guard(operations: Operations, op: DropSimhashGuardOp) -> None:
    _call_on_column(operations, "drop_guard", op)


# -- passage indexes (partial duplicates, docs/partial.md) ---------------------------------


@Operations.register_operation("create_passage_index")
class CreatePassageIndexOp(_ColumnOp):
    """Give a ``bigint[]`` column its passage index: the GIN index and the windows' comment."""

    diff_name = "add_passage_index"

    def __init__(self, table_name: str, column_name: str, *, window: int = DEFAULT_WINDOW,
                 spaceless_window: int = DEFAULT_SPACELESS_WINDOW, schema: str | None = None,
                 concurrently: bool = False, key_bits: int | None = None) -> None:
        super().__init__(table_name, column_name, schema=schema)
        self.window = window
        self.spaceless_window = spaceless_window
        self.concurrently = concurrently
        self.key_bits = key_bits
        #: set by autogenerate when the index replaces one of other windows (window,
        #: spaceless_window): the rendered migration then says that the stored hashes must be made again
        self.replaces_windows: tuple[int, int] | None = None

    @property
    def config(self) -> PassageConfig:
        """The windows as a config (checked: each at least 1)."""
        return PassageConfig(self.window, self.spaceless_window)

    @classmethod
    def create_passage_index(cls, operations: Operations, table_name: str, column_name: str, *,
                             window: int = DEFAULT_WINDOW, spaceless_window: int = DEFAULT_SPACELESS_WINDOW,
                             schema: str | None = None, concurrently: bool = False,
                             key_bits: int | None = None) -> None:
        """Index a ``bigint[]`` column of passage hashes (as ``simpg.create_passage_index`` does).

        Args:
            operations: given by Alembic.
            table_name: the table.
            column_name: its ``bigint[]`` column (filled with these windows' hashes).
            window: the winnowing window of rows of spaced scripts, recorded in the column's comment.
            spaceless_window: that of rows mostly of a spaceless script (docs/partial.md).
            schema: the table's schema.
            concurrently: build the GIN index with CREATE INDEX CONCURRENTLY, outside the
                migration's transaction (not on a partitioned table; online only).
            key_bits: the bits of each hash the GIN index keeps (1 to 32; None: the bits of
                the index there is, else ``simpg.passage_key_bits`` of the table's rows). An
                index of other bits is built again: the new one first, then the old one dropped.
        """
        operations.invoke(cls(table_name, column_name, window=window, spaceless_window=spaceless_window,
                              schema=schema, concurrently=concurrently, key_bits=key_bits))

    def reverse(self) -> DropPassageIndexOp:
        """The operation that undoes this one."""
        return DropPassageIndexOp(self.table_name, self.column_name, schema=self.schema, _reverse=self)

    def diff_values(self) -> tuple[Any, ...]:
        """The windows, which autogenerate compares."""
        return self.window, self.spaceless_window


@Operations.register_operation("drop_passage_index")
class DropPassageIndexOp(_DropColumnOp):
    """Remove a passage index: the GIN index and the comment (the column and its hashes stay)."""

    diff_name = "remove_passage_index"
    unknown = "its windows are unknown"

    @classmethod
    def drop_passage_index(cls, operations: Operations, table_name: str, column_name: str, *,
                           schema: str | None = None) -> None:
        """Drop what create_passage_index made (``simpg.drop_passage_index``)."""
        operations.invoke(cls(table_name, column_name, schema=schema))


@Operations.implementation_for(CreatePassageIndexOp)
def _create_passage_index(operations: Operations, op: CreatePassageIndexOp) -> None:
    if not op.concurrently:
        _call_on_column(operations, "create_passage_index", op, literal(op.window, Integer),
                        literal(op.spaceless_window, Integer), cast(literal(op.key_bits, Integer), Integer))
        return
    rel = _rel(op.table_name, op.schema)
    bind = _online_bind(operations, "create_passage_index(concurrently=True)")
    # simpg.create_passage_index's statements (simpg.passage_index_ddl), with CONCURRENTLY:
    # they cannot run inside a function, since a function runs in a transaction
    statements = bind.execute(passage_index_statement(rel, op.column_name, op.config, key_bits=op.key_bits,
                                                      concurrently=True))
    with operations.get_context().autocommit_block():
        for statement in statements.scalars().all():
            # no_parameters: the text is run as written (names may hold % or :)
            bind.exec_driver_sql(statement, execution_options={"no_parameters": True})


@Operations.implementation_for(DropPassageIndexOp)
def _drop_passage_index(operations: Operations, op: DropPassageIndexOp) -> None:
    _call_on_column(operations, "drop_passage_index", op)
