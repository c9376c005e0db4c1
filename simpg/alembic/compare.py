"""Autogenerate: turn declared simhash indexes into create/drop_simhash_index operations.

Alembic's own comparison sees a declared index as N generated columns and N B-tree
indexes, and knows nothing of the ``simpg.indexes`` catalog row. This comparator runs
after Alembic's (``DispatchPriority.LAST``), compares each declared
:class:`~simpg.sqlalchemy.SimHashIndex` with the catalog, and replaces those column and
index operations with one ``op.create_simhash_index(...)`` or ``op.drop_simhash_index(...)``.
When the database already matches the model it adds nothing, so a second
autogenerate run stays empty. When it creates a simhash index in a database without
simpg, the migration starts with ``op.install_simpg()`` (and its downgrade ends with
``op.uninstall_simpg()``), so the first migration runs as generated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from alembic.autogenerate.api import AutogenContext
from alembic.autogenerate.compare import comparators
from alembic.operations import ops
from alembic.util import DispatchPriority, PriorityDispatchResult
from sqlalchemy import Column, text

from simpg.alembic.ops import (
    _VERSION_SQL,
    CreatePassageIndexOp,
    CreateSimhashGuardOp,
    CreateSimhashIndexOp,
    DropSimhashIndexOp,
    InstallSimpgOp,
)
from simpg.alembic.render import mark_simhash_types
from simpg.sqlalchemy.index import SimHashIndex, table_guards, table_indexes
from simpg.sqlalchemy.passages import is_passage_comment, table_passage_indexes

logger = logging.getLogger(__name__)

__all__ = ["CatalogIndex", "compare_partitions", "compare_passage_indexes", "compare_simhash_guards",
           "compare_simhash_indexes"]

_T = TypeVar("_T")
Key = tuple[Any, str, str]  # (schema or None for the default one, table, fingerprint column)


@dataclass(frozen=True)
class CatalogIndex:
    """A row of simpg.indexes, as autogenerate needs it."""

    k: int
    levels: tuple[int, ...]
    prefix_columns: tuple[str, ...]
    index_names: tuple[str, ...]
    fingerprint_config: str | None


_CATALOG_SQL = text("""
SELECT n.nspname, c.relname, i.fingerprint_column, i.k, i.levels, i.prefix_columns, i.index_names,
       i.fingerprint_config
FROM simpg.indexes AS i
JOIN pg_catalog.pg_class AS c ON c.oid = i.indexed_table
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
""")


def _catalog(
    autogen_context: AutogenContext, default_schema: str | None
) -> dict[Key, CatalogIndex]:
    conn = autogen_context.connection
    assert conn is not None
    if not conn.execute(text("SELECT to_regclass('simpg.indexes') IS NOT NULL")).scalar():
        return {}
    found = {}
    for nsp, rel, col, k, levels, columns, indexes, config in conn.execute(_CATALOG_SQL):
        schema = None if nsp == default_schema else nsp
        found[(schema, rel, col)] = CatalogIndex(
            k, tuple(levels), tuple(columns), tuple(indexes), config
        )
    return found


def _same_table(op: Any, schema: str | None, table: str, default_schema: str | None) -> bool:
    op_schema = None if getattr(op, "schema", None) in (None, default_schema) else op.schema
    return getattr(op, "table_name", None) == table and op_schema == schema


def _strip(
    upgrade_ops: ops.UpgradeOps,
    schema: str | None,
    table: str,
    default_schema: str | None,
    columns: set[str],
    indexes: set[str],
) -> None:
    """Remove Alembic's per-column/per-index operations on a simhash index's objects."""

    def unwanted(op: Any) -> bool:
        if isinstance(op, (ops.CreateIndexOp, ops.DropIndexOp)) and op.index_name in indexes:
            return _same_table(op, schema, table, default_schema) or op.table_name is None
        if isinstance(op, ops.AddColumnOp):
            return _same_table(op, schema, table, default_schema) and op.column.name in columns
        if isinstance(op, (ops.DropColumnOp, ops.AlterColumnOp)):
            return _same_table(op, schema, table, default_schema) and op.column_name in columns
        return False

    def keep_columns(items: Sequence[Any]) -> list[Any]:
        return [c for c in items if not (isinstance(c, Column) and c.name in columns)]

    kept = []
    for op in upgrade_ops.ops:
        if isinstance(op, ops.ModifyTableOps):
            op.ops = [inner for inner in op.ops if not unwanted(inner)]
            if op.is_empty():
                continue
        elif unwanted(op):
            continue
        elif isinstance(op, ops.CreateTableOp) and _same_table(op, schema, table, default_schema):
            op.columns = keep_columns(op.columns)
        elif isinstance(op, ops.DropTableOp) and _same_table(op, schema, table, default_schema):
            if op._reverse is not None:  # the downgrade re-creates the table without them
                op._reverse.columns = keep_columns(op._reverse.columns)
        kept.append(op)
    upgrade_ops.ops = kept


def _positions(
    upgrade_ops: ops.UpgradeOps, schema: str | None, table: str, default_schema: str | None
) -> list[int]:
    return [
        i for i, op in enumerate(upgrade_ops.ops) if _same_table(op, schema, table, default_schema)
    ]


def _create_op(spec: SimHashIndex, schema: str | None) -> CreateSimhashIndexOp:
    levels = spec.layout.levels
    return CreateSimhashIndexOp(
        spec.table.name,
        spec.column.name,
        k=spec.layout.k,
        blocks=levels[0],
        inner_blocks=levels[1] if len(levels) > 1 else None,
        fingerprint_config=spec.config_identity(),
        schema=schema,
    )


def _drop_op(key: Key, row: CatalogIndex) -> DropSimhashIndexOp:
    schema, table, column = key
    create = CreateSimhashIndexOp(
        table,
        column,
        k=row.k,
        blocks=row.levels[0],
        inner_blocks=row.levels[1] if len(row.levels) > 1 else None,
        fingerprint_config=row.fingerprint_config,
        schema=schema,
    )
    return create.reverse()


def _model_tables(autogen_context: AutogenContext, schemas: set[str | None],
                  norm: Callable[[str | None], str | None]) -> list[tuple[str | None, Any]]:
    """The model's tables autogenerate compares: in ``schemas``, past the name and object filters."""
    out = []
    for model_table in autogen_context.sorted_tables:
        schema = norm(model_table.schema)
        if schema not in schemas:
            continue
        if not autogen_context.run_name_filters(model_table.name, "table", {"schema_name": model_table.schema}):
            continue
        if not autogen_context.run_object_filters(model_table, model_table.name, "table", False, None):
            continue
        out.append((schema, model_table))
    return out


def _normaliser(default_schema: str | None) -> Callable[[str | None], str | None]:
    """Schema names as the comparators key them: None for the connection's default schema."""
    def norm(schema: str | None) -> str | None:
        return None if schema in (None, default_schema) else schema

    return norm


def _declared(autogen_context: AutogenContext, schemas: set[str | None],
              norm: Callable[[str | None], str | None], per_table: Callable[[Any], dict[str, _T]],
              ) -> tuple[dict[Key, _T], set[tuple[str | None, str]]]:
    """What the model declares per (schema, table, column), and the tables compared."""
    declared: dict[Key, _T] = {}
    compared: set[tuple[str | None, str]] = set()
    for schema, model_table in _model_tables(autogen_context, schemas, norm):
        compared.add((schema, model_table.name))
        for column, item in per_table(model_table).items():
            declared[(schema, model_table.name, column)] = item
    return declared, compared


def compare_simhash_indexes(
    autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: set[str | None]
) -> PriorityDispatchResult:
    """The ``schema``-level comparator (registered when simpg.alembic is imported)."""
    conn = autogen_context.connection
    if conn is None or conn.dialect.name != "postgresql":
        return PriorityDispatchResult.CONTINUE
    default_schema = conn.dialect.default_schema_name
    norm = _normaliser(default_schema)
    declared, compared_tables = _declared(autogen_context, schemas, norm, table_indexes)

    catalog = {
        key: row
        for key, row in _catalog(autogen_context, default_schema).items()
        if key[0] in schemas
    }
    dropped_tables = {
        (norm(op.schema), op.table_name)
        for op in upgrade_ops.ops
        if isinstance(op, ops.DropTableOp)
    }

    for key in sorted(set(declared) | set(catalog), key=lambda k: (k[0] or "", k[1], k[2])):
        schema, table, column = key
        spec, row = declared.get(key), catalog.get(key)
        if (
            spec is not None
            and row is not None
            and (row.k, row.levels) == (spec.layout.k, spec.layout.levels)
        ):
            continue  # matches: nothing to do
        drop = create = None
        columns: set[str] = set()
        indexes: set[str] = set()
        if row is not None and (
            (schema, table) in compared_tables or (schema, table) in dropped_tables
        ):
            drop = _drop_op(key, row)
            columns |= set(row.prefix_columns)
            indexes |= set(row.index_names)
        if spec is not None:
            create = _create_op(spec, schema)
            columns |= set(spec.prefix_names)
            indexes |= set(spec.index_names)
        if drop is None and create is None:
            continue
        _strip(upgrade_ops, schema, table, default_schema, columns, indexes)
        where = _positions(upgrade_ops, schema, table, default_schema)
        # the drop goes before the table's other operations, the create after them
        if create is not None:
            upgrade_ops.ops.insert(where[-1] + 1 if where else len(upgrade_ops.ops), create)
            logger.info("Detected added simhash index on %s.%s", table, column)
        if drop is not None:
            upgrade_ops.ops.insert(
                where[0] if where else len(upgrade_ops.ops) - (create is not None), drop
            )
            logger.info("Detected removed simhash index on %s.%s", table, column)

    if any(isinstance(op, CreateSimhashIndexOp) for op in upgrade_ops.ops) and not any(
        isinstance(op, InstallSimpgOp) for op in upgrade_ops.ops
    ) and conn.execute(_VERSION_SQL).scalar() is None:
        upgrade_ops.ops.insert(0, InstallSimpgOp())
        logger.info("Detected simpg not installed: op.install_simpg() first")

    for op in upgrade_ops.ops:
        for inner in op.ops if isinstance(op, ops.ModifyTableOps) else [op]:
            mark_simhash_types(inner)
    return PriorityDispatchResult.CONTINUE


# The guards in the database: (schema, table, column) -> (k, key column, sketch column,
# largest sketch distance, bands). Guards are triggers of simpg.guard_check; none when
# simpg is not installed.
_GUARDS_SQL = text("""
SELECT n.nspname, c.relname, g.fingerprint_column, g.k, g.key_column, g.sketch_column, g.max_sketch_distance,
       g.band_columns IS NOT NULL
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
CROSS JOIN LATERAL simpg.table_guards(c.oid) AS g
WHERE EXISTS (SELECT FROM pg_catalog.pg_trigger AS t JOIN pg_catalog.pg_proc AS p ON p.oid = t.tgfoid
              WHERE t.tgrelid = c.oid AND p.proname = 'guard_check'
                AND p.pronamespace = to_regnamespace('simpg'))
""")


def compare_simhash_guards(
    autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: set[str | None]
) -> PriorityDispatchResult:
    """Declared guards (:func:`~simpg.sqlalchemy.simhash_guard`) against the database's.

    A guard is created after its table's other operations (its index first) and dropped
    before them (before its index). Runs after :func:`compare_simhash_indexes`.
    """
    conn = autogen_context.connection
    if conn is None or conn.dialect.name != "postgresql":
        return PriorityDispatchResult.CONTINUE
    default_schema = conn.dialect.default_schema_name
    norm = _normaliser(default_schema)
    declared, compared = _declared(autogen_context, schemas, norm, table_guards)
    stored: dict[Key, tuple[int, str, str | None, int | None, bool]] = {}
    if conn.execute(_VERSION_SQL).scalar() is not None:
        for nsp, table, column, k, key, sketch, max_sketch, bands in conn.execute(_GUARDS_SQL):
            if norm(nsp) in schemas:
                stored[(norm(nsp), table, column)] = (k, key, sketch, max_sketch, bands)
    for key in sorted(set(declared) | set(stored), key=lambda x: (x[0] or "", x[1], x[2])):
        schema, table, column = key
        want, row = declared.get(key), stored.get(key)
        if (want is not None and row is not None and row[0] == want.k and want.key_column in (None, row[1])
                and row[2:] == (want.sketch_column, want.max_sketch_distance, want.bands)):
            continue
        where = _positions(upgrade_ops, schema, table, default_schema)
        if want is not None:
            create = CreateSimhashGuardOp(table, column, k=want.k, key_column=want.key_column,
                                          sketch_column=want.sketch_column,
                                          max_sketch_distance=want.max_sketch_distance, bands=want.bands,
                                          schema=schema)
            upgrade_ops.ops.insert(where[-1] + 1 if where else len(upgrade_ops.ops), create)
            logger.info("Detected added simhash guard on %s.%s", table, column)
        if row is not None and (schema, table) in compared:
            drop = CreateSimhashGuardOp(table, column, k=row[0], key_column=row[1], sketch_column=row[2],
                                        max_sketch_distance=row[3], bands=row[4], schema=schema).reverse()
            upgrade_ops.ops.insert(where[0] if where else 0, drop)
            logger.info("Detected removed simhash guard on %s.%s", table, column)
    return PriorityDispatchResult.CONTINUE


# The passage indexes in the database: (schema, table, column) -> ((window, spaceless_window),
# GIN index name or None, key bits or None); none when simpg is not installed or predates them.
_PASSAGES_SQL = text("""
SELECT n.nspname, c.relname, p.passage_column, p.passage_window, p.spaceless_window, p.index_name, p.key_bits
FROM simpg.passage_indexes AS p
JOIN pg_catalog.pg_class AS c ON c.oid = p.indexed_table
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
""")


def _strip_passage_comments(upgrade_ops: ops.UpgradeOps, schema: str | None, table: str,
                             default_schema: str | None, column: str) -> None:
    """Remove Alembic's changes of a passage column's comment: the passage operations own it."""
    for op in upgrade_ops.ops:
        if not isinstance(op, ops.ModifyTableOps) or not _same_table(op, schema, table, default_schema):
            continue
        for inner in op.ops:
            if (isinstance(inner, ops.AlterColumnOp) and inner.column_name == column
                    and (is_passage_comment(inner.modify_comment) or is_passage_comment(inner.existing_comment))):
                inner.modify_comment = False
        op.ops = [inner for inner in op.ops if not (isinstance(inner, ops.AlterColumnOp) and not inner.has_changes())]
    upgrade_ops.ops = [op for op in upgrade_ops.ops if not (isinstance(op, ops.ModifyTableOps) and op.is_empty())]


def compare_passage_indexes(
    autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: set[str | None]
) -> PriorityDispatchResult:
    """Declared passage indexes (:func:`~simpg.sqlalchemy.passage_index`) against ``simpg.passage_indexes``.

    As for simhash indexes: Alembic's own operations on the GIN index (which the model
    does not declare: ``simpg.passage_index_ddl`` makes it) and on the column's comment
    (the recorded windows) are replaced by one ``op.create_passage_index(...)`` after the
    table's other operations, or ``op.drop_passage_index(...)`` before them; nothing when
    the database matches the model. Runs after :func:`compare_simhash_indexes`.
    """
    conn = autogen_context.connection
    if conn is None or conn.dialect.name != "postgresql":
        return PriorityDispatchResult.CONTINUE
    default_schema = conn.dialect.default_schema_name
    norm = _normaliser(default_schema)
    declared, compared = _declared(autogen_context, schemas, norm, table_passage_indexes)
    stored: dict[Key, tuple[tuple[int, int], str | None, int | None]] = {}
    if conn.execute(text("SELECT to_regclass('simpg.passage_indexes') IS NOT NULL")).scalar():
        for nsp, table, column, window, spaceless_window, index_name, key_bits in conn.execute(_PASSAGES_SQL):
            if norm(nsp) in schemas:
                stored[(norm(nsp), table, column)] = ((window, spaceless_window), index_name, key_bits)
    dropped = {(norm(op.schema), op.table_name) for op in upgrade_ops.ops if isinstance(op, ops.DropTableOp)}
    for key in sorted(set(declared) | set(stored), key=lambda x: (x[0] or "", x[1], x[2])):
        schema, table, column = key
        want, row = declared.get(key), stored.get(key)
        # the model declares no Index for the GIN index: Alembic would drop it
        _strip(upgrade_ops, schema, table, default_schema, set(), {row[1]} if row and row[1] else set())
        _strip_passage_comments(upgrade_ops, schema, table, default_schema, column)
        wanted = None if want is None else (want.window, want.spaceless_window)
        # key bits compared only where the model states them (None: by the table's rows)
        if (wanted is not None and row is not None and row[0] == wanted and row[1] is not None
                and want is not None and want.key_bits in (None, row[2])):
            continue  # matches
        where = _positions(upgrade_ops, schema, table, default_schema)
        replace = row is not None and wanted is not None and row[0] != wanted
        if want is not None:
            create = CreatePassageIndexOp(table, column, window=want.window, spaceless_window=want.spaceless_window,
                                          schema=schema, key_bits=want.key_bits)
            create.replaces_windows = row[0] if replace and row is not None else None
            upgrade_ops.ops.insert(where[-1] + 1 if where else len(upgrade_ops.ops), create)
            logger.info("Detected added passage index on %s.%s", table, column)
        seen = (schema, table) in compared or (schema, table) in dropped
        if row is not None and (want is None or replace) and seen:
            drop = CreatePassageIndexOp(table, column, window=row[0][0], spaceless_window=row[0][1],
                                        schema=schema).reverse()
            upgrade_ops.ops.insert(where[0] if where else 0, drop)
            logger.info("Detected removed passage index on %s.%s", table, column)
    if any(isinstance(op, CreatePassageIndexOp) for op in upgrade_ops.ops) and not any(
        isinstance(op, InstallSimpgOp) for op in upgrade_ops.ops
    ) and conn.execute(_VERSION_SQL).scalar() is None:
        upgrade_ops.ops.insert(0, InstallSimpgOp())
        logger.info("Detected simpg not installed: op.install_simpg() first")
    return PriorityDispatchResult.CONTINUE


# Every partition (at any level) and the root of its tree; pg_partition_root is PostgreSQL 12+.
_PARTITIONS_SQL = text("""
SELECT n.nspname, c.relname, rn.nspname, r.relname
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_class AS r ON r.oid = pg_catalog.pg_partition_root(c.oid)
JOIN pg_catalog.pg_namespace AS rn ON rn.oid = r.relnamespace
WHERE c.relispartition
""")


def compare_partitions(
    autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: set[str | None]
) -> PriorityDispatchResult:
    """Leave alone the partitions of the model's partitioned tables.

    A model declares a partitioned table (``postgresql_partition_by``), not its
    partitions: DDL or a tool such as pg_partman creates them, and PostgreSQL gives them
    the parent's columns and indexes, simpg's prefix columns and B-trees included.
    Alembic reflects them as tables the model lacks and would drop them (and their
    indexes); this comparator removes every operation on a partition that is not in the
    model itself and whose partitioned root is. Runs after :func:`compare_simhash_indexes`.
    """
    conn = autogen_context.connection
    if conn is None or conn.dialect.name != "postgresql":
        return PriorityDispatchResult.CONTINUE
    norm = _normaliser(conn.dialect.default_schema_name)
    compared = {(schema, table.name) for schema, table in _model_tables(autogen_context, schemas, norm)}
    partitions = {
        (norm(nsp), rel)
        for nsp, rel, root_nsp, root in conn.execute(_PARTITIONS_SQL)
        if (norm(root_nsp), root) in compared and (norm(nsp), rel) not in compared
    }
    if not partitions:
        return PriorityDispatchResult.CONTINUE

    def on_partition(op: Any) -> bool:
        name = getattr(op, "table_name", None)
        return name is not None and (norm(getattr(op, "schema", None)), name) in partitions

    kept = []
    for op in upgrade_ops.ops:
        if on_partition(op):
            logger.info("Kept partition %s of a model's partitioned table", getattr(op, "table_name", None))
            continue
        kept.append(op)
    upgrade_ops.ops = kept
    return PriorityDispatchResult.CONTINUE


def _register(fn: Callable[..., PriorityDispatchResult]) -> None:
    comparators.dispatch_for("schema", priority=DispatchPriority.LAST)(fn)


_register(compare_simhash_indexes)
_register(compare_simhash_guards)
_register(compare_passage_indexes)
_register(compare_partitions)
