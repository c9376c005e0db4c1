"""Declaring a simhash index on a model: ordinary SQLAlchemy schema objects.

``simhash_index(Article.simhash, k=3, blocks=5)`` adds to the table exactly what
``simpg.create_index`` makes in SQL: one ``bigint`` column per table of the layout,
``GENERATED ALWAYS AS (simpg.permute(simhash, 3, '{5}'::integer[], t)) STORED``
(``Computed(..., persisted=True)``), named ``simhash_p<t>``, and one B-tree ``Index``
``<table>_simhash_p<t>_idx`` on each. ``metadata.create_all`` and Alembic therefore see
plain schema, and so does ``simpg.indexes``, a view of exactly these columns and
B-trees; an ``after_create`` event checks them and stores the fingerprint config
(``simpg.register_index``), and SQL's ``simpg.near`` works on the table too.

This is the one Python rendering of an index's DDL, and the only one besides SQL's
``simpg.index_ddl``: a model declares its schema before any database is there (and
autogenerate compares it with the database's). Alembic's offline ``--sql`` mode
renders ``create_simhash_index(concurrently=True)`` from it too; every other path runs
``simpg.index_ddl``'s statements. tests/integration/test_index_ddl.py builds the same
index through each path and requires the same catalog.

The prefix columns are added to the ``Table`` but not mapped: ORM queries never load
them, and inserts never write them (PostgreSQL computes them).

Example:
    >>> from sqlalchemy import BigInteger, Column, MetaData, Table
    >>> t = Table("articles", MetaData(), Column("id", BigInteger, primary_key=True),
    ...           Column("simhash", BigInteger, nullable=False))
    >>> spec = simhash_index(t.c.simhash, k=3, blocks=5)
    >>> spec.layout.tables, spec.prefix_columns[0].name, spec.indexes[0].name
    (10, 'simhash_p0', 'articles_simhash_p0_idx')
    >>> str(spec.prefix_columns[0].computed.sqltext)
    "simpg.permute(simhash, 3, '{5}'::integer[], 0)"
"""

from __future__ import annotations

import hashlib
import logging
import re
import weakref
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Computed,
    Index,
    Integer,
    Table,
    Text,
    bindparam,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql.base import RESERVED_WORDS
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement, TextClause

from simpg import exc
from simpg.exc import SimpgError
from simpg.exc import near_duplicate as _psycopg_near_duplicate
from simpg.fingerprint.errors import InvalidConfig
from simpg.fingerprint.minhash import checked_max_sketch_distance
from simpg.layout import Layout, check_radius, default_blocks
from simpg.results import IndexProblem
from simpg.sqlalchemy.functions import _levels, layout_is
from simpg.sqlnames import quoted_name

logger = logging.getLogger(__name__)

__all__ = [
    "SimHashGuard",
    "SimHashIndex",
    "index_for",
    "NearDuplicate",
    "near_duplicate",
    "raise_near_duplicates",
    "layout_guard",
    "object_name",
    "PREFIX_INDEX_FILLFACTOR",
    "prefix_expression",
    "register",
    "register_statement",
    "simhash_guard",
    "simhash_index",
    "table_guards",
    "table_indexes",
]

#: Rows that the default layout is sized for when ``blocks`` is not given.
DEFAULT_ROWS = 10_000_000
_INFO_KEY = "simpg_index"  # Column.info key of the fingerprint column's SimHashIndex
# Table -> {fingerprint column name: SimHashIndex}. Not in Table.info, which Alembic
# renders into create_table().
_TABLE_SPECS: weakref.WeakKeyDictionary[Table, dict[str, SimHashIndex]] = (
    weakref.WeakKeyDictionary()
)
_NAMEDATALEN = 63


def object_name(base: str, suffix: str) -> str:
    """``base + suffix`` cut to PostgreSQL's 63 bytes like SQL's ``simpg.object_name``.

    A name that is too long keeps the start of ``base``, then ``_`` and 8 hex digits of
    md5(base), then ``suffix``, so two long names never collide after truncation.
    """
    name = base + suffix
    if len(name.encode()) > _NAMEDATALEN:
        room = _NAMEDATALEN - len(suffix.encode()) - 9  # 9: "_" and 8 hex digits
        head = base[: max(room, 0)]
        while len(head.encode()) > room:  # cut on a character boundary, counted in bytes
            head = head[:-1]
        name = head + "_" + hashlib.md5(base.encode()).hexdigest()[:8] + suffix
    return name


def _quote_ident(name: str) -> str:
    # Any valid quoting works: PostgreSQL stores the parsed expression and prints it
    # back with its own quote_ident, which is what simpg.register_index compares.
    if re.fullmatch(r"[a-z_][a-z0-9_]*", name) and name not in RESERVED_WORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def prefix_expression(column: str, layout: Layout, t: int) -> str:
    """Generation expression of table ``t``'s prefix column (SQL's ``simpg.prefix_expression``)."""
    return f"simpg.permute({_quote_ident(column)}, {layout.k}, '{_levels(layout.levels)}'::integer[], {t})"


#: Fill factor of the prefix B-trees, as SQL's simpg.prefix_btree_statement writes it.
#: Their keys are random, so the 10% that PostgreSQL's default of 90 leaves free for
#: ascending inserts only makes the built index bigger; random inserts split pages anyway.
PREFIX_INDEX_FILLFACTOR = 100


@dataclass(frozen=True, eq=False)
class SimHashIndex:
    """A simhash index declared on a fingerprint column, and the schema objects it added."""

    table: Table
    column: Column[Any]
    layout: Layout
    prefix_columns: tuple[Column[Any], ...]
    indexes: tuple[Index, ...]
    fingerprint_config: str | None = None

    @property
    def prefix_names(self) -> list[str]:
        """Names of the prefix columns, in table order."""
        return [c.name for c in self.prefix_columns]

    @property
    def index_names(self) -> list[str]:
        """Names of the B-tree indexes, in table order."""
        return [str(i.name) for i in self.indexes]

    def config_identity(self) -> str | None:
        """The fingerprint config shown in simpg.indexes (from fingerprint_on_write if set)."""
        if self.fingerprint_config is not None:
            return self.fingerprint_config
        writer = self.column.info.get("simpg_fingerprint")
        return writer.config.identity if writer is not None else None

    def check(self, connection: Connection, *, verify_rows: bool = True) -> list[IndexProblem]:
        """Problems of this index in the database (``simpg.check``); an empty list: all is well.

        The problems of :meth:`simpg.psycopg.SimHashColumn.check`, and ``'layout differs from
        the model'`` when the database's index has another layout than this declaration
        (``within()`` queries then fail with SQLSTATE ``SPG01``). With a ``Session``, pass
        ``session.connection()``; with an async one, ``await conn.run_sync(spec.check)``.

        Raises:
            SimpgError: the database has no simpg index on the column.
        """
        if not isinstance(verify_rows, bool):
            raise SimpgError(f"verify_rows must be True or False, got {verify_rows!r}")
        rel, name = _regclass(connection, self.table), self.column.name
        problems = [
            IndexProblem(*row)
            for row in connection.execute(
                text("SELECT c.fingerprint_column, c.problem, c.detail "
                     "FROM simpg.check(CAST(:rel AS regclass), :col, :verify) AS c").bindparams(
                    bindparam("rel", rel, Text()), bindparam("col", name, Text()),
                    bindparam("verify", verify_rows, Boolean())))
        ]
        layouts = [
            Layout(k, tuple(levels))
            for k, levels in connection.execute(
                text("SELECT i.k, i.levels FROM simpg.indexes AS i "
                     "WHERE i.indexed_table = CAST(:rel AS regclass) AND i.fingerprint_column = :col "
                     "ORDER BY i.k, i.levels").bindparams(
                    bindparam("rel", rel, Text()), bindparam("col", name, Text())))
        ]
        if not problems and not layouts:
            raise SimpgError(f"no simpg index on {rel}.{name} in the database; create the table "
                             "(metadata.create_all) or the index (op.create_simhash_index)")
        if layouts and self.layout not in layouts:
            problems.append(IndexProblem(
                name, "layout differs from the model",
                f"the database has {', '.join(x.name for x in layouts)}, the model declares {self.layout.name}"))
        return problems

    def repair(self, connection: Connection) -> list[str]:
        """``simpg.repair`` of this column: the statements run (see :meth:`simpg.psycopg.SimHashColumn.repair`).

        Runs in the connection's transaction; commit it. An index that lost a prefix
        column has the others dropped: create it again (``op.create_simhash_index``).
        """
        statement = text("SELECT s FROM simpg.repair(CAST(:rel AS regclass), :col) AS s").bindparams(
            bindparam("rel", _regclass(connection, self.table), Text()),
            bindparam("col", self.column.name, Text()))
        return [row[0] for row in connection.execute(statement)]

    def __repr__(self) -> str:
        return (
            f"SimHashIndex({self.table.name}.{self.column.name}, k={self.layout.k}, "
            f"levels={self.layout.levels})"
        )


def _resolve_column(column: Any) -> Column[Any]:
    """A Table column from a Column or an ORM attribute such as ``Article.simhash``."""
    prop = getattr(column, "property", None)
    if prop is not None and getattr(prop, "columns", None):
        column = prop.columns[0]
    if not isinstance(column, Column) or not isinstance(column.table, Table):
        raise SimpgError(f"expected a table column or a mapped column attribute, got {column!r}")
    return column


def simhash_index(
    column: Any,
    *,
    k: int = 3,
    blocks: int | None = None,
    inner_blocks: int | None = None,
    fingerprint_config: str | None = None,
    name: str | None = None,
) -> SimHashIndex:
    """Declare a simhash index on a fingerprint column: add prefix columns and B-tree indexes.

    Call it once per column, after the model (or ``Table``) is defined and before
    ``create_all`` or Alembic's autogenerate look at the metadata.

    Args:
        column: the fingerprint column, e.g. ``Article.simhash`` or ``table.c.simhash``
            (``SimHash`` or ``BigInteger``).
        k: the largest radius ``within`` may ask for.
        blocks: level-1 blocks; default ``simpg.layout.default_blocks(k, 10_000_000)``
            (5 for k=3: 10 tables, the reference layout).
        inner_blocks: level-2 blocks (Google's two-level layouts), optional.
        fingerprint_config: identity shown in ``simpg.indexes``; default: the config
            of :func:`simpg.sqlalchemy.fingerprint_on_write` on this column, if any.
        name: the start of the B-trees' names, ``<name>_p<t>_idx``; default
            ``<table>_<column>``, as ``simpg.create_index`` names them. Needed only when
            two declarations would name their B-trees alike (table ``a_b`` column ``c``
            and table ``a`` column ``b_c``), which is refused.

    Returns:
        The :class:`SimHashIndex` (also reachable with :func:`index_for`).
    """
    col = _resolve_column(column)
    table = col.table
    if not isinstance(col.type, BigInteger) and not isinstance(
        getattr(col.type, "impl_instance", None), BigInteger
    ):
        raise SimpgError(
            f"column {table.name}.{col.name} is {col.type!r}, expected SimHash or BigInteger"
        )
    if _INFO_KEY in col.info:
        raise SimpgError(f"column {table.name}.{col.name} already has a simhash index")
    if blocks is None:
        if inner_blocks is not None:
            raise SimpgError("inner_blocks needs blocks")
        blocks = default_blocks(k, DEFAULT_ROWS)
    layout = Layout(k, (blocks,) if inner_blocks is None else (blocks, inner_blocks))

    # every name is checked before the table is changed. Index names share one namespace
    # per schema with the tables, so those declared in this MetaData are taken.
    prefix_names = [object_name(col.name, f"_p{t}") for t in range(layout.tables)]
    index_names = [object_name(name or f"{table.name}_{col.name}", f"_p{t}_idx") for t in range(layout.tables)]
    taken: dict[str, str] = {str(other.name): "a table" for other in table.metadata.tables.values()
                             if other.schema == table.schema}
    taken.update({str(index.name): f"an index of {other.name}" for other in table.metadata.tables.values()
                  if other.schema == table.schema for index in other.indexes if index.name})
    for prefix_name, index_name in zip(prefix_names, index_names, strict=True):
        if prefix_name in table.c:
            raise SimpgError(f"table {table.name} already has a column {prefix_name}")
        if index_name in taken:
            raise SimpgError(f"index name {index_name} of {table.name}.{col.name} is taken by {taken[index_name]}; "
                             "pass simhash_index(..., name=...) to name its B-trees")
    prefix_columns = []
    indexes = []
    for t, (prefix_name, index_name) in enumerate(zip(prefix_names, index_names, strict=True)):
        prefix = Column(
            prefix_name,
            BigInteger,
            Computed(prefix_expression(col.name, layout, t), persisted=True),
            info={"simpg_prefix_of": col.name},
        )
        table.append_column(prefix)
        prefix_columns.append(prefix)
        indexes.append(Index(index_name, prefix, postgresql_with={"fillfactor": PREFIX_INDEX_FILLFACTOR}))
    spec = SimHashIndex(
        table, col, layout, tuple(prefix_columns), tuple(indexes), fingerprint_config
    )
    col.info[_INFO_KEY] = spec
    if table not in _TABLE_SPECS:
        _TABLE_SPECS[table] = {}
        event.listen(table, "after_create", _after_create)
    _TABLE_SPECS[table][col.name] = spec
    return spec


def table_indexes(table: Table) -> dict[str, SimHashIndex]:
    """Fingerprint column name -> SimHashIndex declared on ``table`` (empty if none)."""
    return dict(_TABLE_SPECS.get(table, {}))


def index_for(column: Any) -> SimHashIndex:
    """The SimHashIndex of a fingerprint column (also through aliases and ORM attributes)."""
    expr = column.__clause_element__() if hasattr(column, "__clause_element__") else column
    for candidate in getattr(expr, "proxy_set", (expr,)):
        spec = getattr(candidate, "info", {}).get(_INFO_KEY) if hasattr(candidate, "info") else None
        if isinstance(spec, SimHashIndex):  # only simhash_index stores one under this key
            return spec
    name = getattr(expr, "key", None) or repr(expr)
    table = getattr(getattr(expr, "table", None), "name", None)
    raise SimpgError(
        f"column {table + '.' if table else ''}{name} has no simhash index; "
        "declare one with simpg.sqlalchemy.simhash_index(column, k=..., blocks=...)"
    )


def _regclass(connection: Connection, table: Table) -> str:
    """The quoted, schema-qualified name, as regclass input (a bound value).

    Not the dialect's ``format_table``: for psycopg's pyformat it doubles ``%``, which is
    right in a statement and names another table in a value.
    """
    return quoted_name(*(part for part in (table.schema, table.name) if part))


def register_statement(
    rel: str,
    column: str,
    layout: Layout,
    prefix_columns: list[str],
    index_names: list[str],
    fingerprint_config: str | None,
) -> TextClause:
    """``SELECT simpg.register_index(...)`` with typed bound values (renders offline too)."""
    return text(
        "SELECT simpg.register_index(CAST(:rel AS regclass), :col, :k, CAST(:levels AS integer[]), "
        "CAST(:columns AS name[]), CAST(:indexes AS name[]), :config)"
    ).bindparams(
        bindparam("rel", rel, Text()),
        bindparam("col", column, Text()),
        bindparam("k", layout.k, Integer()),
        bindparam("levels", list(layout.levels), ARRAY(Integer())),
        bindparam("columns", list(prefix_columns), ARRAY(Text())),
        bindparam("indexes", list(index_names), ARRAY(Text())),
        bindparam("config", fingerprint_config, Text()),
    )


def register(connection: Connection, spec: SimHashIndex) -> None:
    """Check an index whose columns and B-trees exist, and store its fingerprint config (register_index)."""
    connection.execute(
        register_statement(
            _regclass(connection, spec.table),
            spec.column.name,
            spec.layout,
            spec.prefix_names,
            spec.index_names,
            spec.config_identity(),
        )
    )


def _after_create(table: Table, connection: Connection, **kw: Any) -> None:
    for spec in table_indexes(table).values():
        register(connection, spec)
        logger.info("registered simhash index on %s.%s", table.name, spec.column.name)
    for guard in _TABLE_GUARDS.get(table, {}).values():  # after the indexes they use
        connection.execute(guard.create_statement(connection))
        logger.info("created simpg guard on %s.%s (k=%s, sketch column %s)", table.name, guard.column.name, guard.k,
                    guard.sketch_column)


@dataclass(frozen=True, eq=False)
class SimHashGuard:
    """A near-unique guard declared on an indexed fingerprint column (docs/guard.md).

    With ``sketch_column``, confirmed by sketches within ``max_sketch_distance`` bits (and,
    with ``bands``, also refusing rows that share a band key); ``max_sketch_distance`` is
    None without a sketch column.
    """

    table: Table
    column: Column[Any]
    k: int
    key_column: str | None = None
    sketch_column: str | None = None
    max_sketch_distance: int | None = None
    bands: bool = False

    @property
    def name(self) -> str:
        """The trigger's name, as simpg.create_guard makes it."""
        return object_name(self.column.name, "_simpg_guard")

    def create_statement(self, connection: Connection) -> TextClause:
        """``SELECT simpg.create_guard(...)`` for this guard."""
        return text("SELECT simpg.create_guard(CAST(:rel AS regclass), :col, :k, :key, :sketch, :max_sketch, "
                    ":bands)").bindparams(
            bindparam("rel", _regclass(connection, self.table), Text()),
            bindparam("col", self.column.name, Text()),
            bindparam("k", self.k, Integer()),
            bindparam("key", self.key_column, Text()),
            bindparam("sketch", self.sketch_column, Text()),
            bindparam("max_sketch", self.max_sketch_distance, Integer()),
            bindparam("bands", self.bands, Boolean()),
        )


_TABLE_GUARDS: weakref.WeakKeyDictionary[Table, dict[str, SimHashGuard]] = weakref.WeakKeyDictionary()


def simhash_guard(column: Any, *, k: int | None = None, key_column: str | None = None, sketch_column: Any = None,
                  max_sketch_distance: int | None = None, bands: bool | None = None) -> SimHashGuard:
    """Declare a near-unique guard next to :func:`simhash_index`: ``create_all`` makes it.

    From then on the database refuses any write that leaves two rows within ``k`` bits
    (default: the index's k), race-free; a refused flush raises ``IntegrityError``, which
    :func:`near_duplicate` turns into :class:`~simpg.exc.NearDuplicate` (the stored row's
    key and distance). Call it after :func:`simhash_index` on the same column. With
    ``sketch_column`` (a ``bit(256)`` column of the table, or its name), only rows whose
    sketches also lie within ``max_sketch_distance`` bits (default
    :data:`~simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`) count; with ``bands`` (the
    default with a sketch column, as ``simpg dedup`` decides; False leaves them out), rows
    sharing a band key (columns ``<sketch_column>_b0`` .. ``_b3``) so confirmed count too.
    """
    col = _resolve_column(column)
    spec = index_for(col)
    radius = spec.layout.k if k is None else k
    where = f"a guard on {col.table.name}.{col.name}"
    check_radius(radius, spec.layout.k, what=f"the simhash index on {col.table.name}.{col.name}")
    sketch = _sketch_column_name(col.table, sketch_column, where)
    if sketch is None and (max_sketch_distance is not None or bands):
        name, value = ("bands", bands) if bands else ("max_sketch_distance", max_sketch_distance)
        raise SimpgError(f"{where} takes {name}, got {value!r}, only with a sketch_column to confirm by")
    limit = None
    if sketch is not None:
        try:
            limit = checked_max_sketch_distance(max_sketch_distance)
        except InvalidConfig as err:
            raise SimpgError(f"{where}: {err}") from None
    guards = _TABLE_GUARDS.setdefault(col.table, {})
    if col.name in guards:
        raise SimpgError(f"column {col.table.name}.{col.name} already has a guard")
    banded = sketch is not None if bands is None else bool(bands)  # simpg.with_bands
    guards[col.name] = guard = SimHashGuard(col.table, col, radius, key_column, sketch, limit, banded)
    return guard


def _sketch_column_name(table: Table, column: Any, where: str) -> str | None:
    """The name of a guard's sketch column, given as a column of ``table`` or its name."""
    if column is None:
        return None
    if isinstance(column, str):
        name = column
    else:
        resolved = _resolve_column(column)
        if resolved.table is not table:
            raise SimpgError(f"{where} confirms by a sketch column of its own table, got {resolved.table.name}."
                             f"{resolved.name}")
        name = resolved.name
    if name not in table.c:
        raise SimpgError(f"{where}: table {table.name} has no sketch column {name!r}")
    return name


def table_guards(table: Table) -> dict[str, SimHashGuard]:
    """Fingerprint column name -> SimHashGuard declared on ``table`` (empty if none)."""
    return dict(_TABLE_GUARDS.get(table, {}))


class NearDuplicate(IntegrityError, exc.NearDuplicate):
    """The ``IntegrityError`` of a guard's refusal, carrying ``key``, ``distance`` and ``guard``.

    Raised instead of a plain ``IntegrityError`` on engines passed to
    :func:`raise_near_duplicates`: ``except simpg.exc.NearDuplicate`` catches it as it
    catches psycopg's, and ``except IntegrityError`` still does (the type differs only
    because SQLAlchemy's error must stay an ``IntegrityError``).
    """


def raise_near_duplicates(engine: Any) -> None:
    """Make ``engine`` raise :class:`NearDuplicate` for a simpg guard's refusals.

    A ``handle_error`` listener: other errors are left as SQLAlchemy raises them.
    Works for sync engines and for an ``AsyncEngine``'s ``sync_engine``.
    """
    target = getattr(engine, "sync_engine", engine)

    @event.listens_for(target, "handle_error")
    def _near_duplicate(context: Any) -> BaseException | None:
        found = near_duplicate(context.original_exception)
        wrapped = context.sqlalchemy_exception
        if found is None or wrapped is None:
            return None
        error = NearDuplicate(wrapped.statement, wrapped.params, wrapped.orig,
                              hide_parameters=wrapped.hide_parameters)
        error.key, error.distance, error.guard = found.key, found.distance, found.guard
        return error


def near_duplicate(err: BaseException) -> exc.NearDuplicate | None:
    """The :class:`~simpg.exc.NearDuplicate` a guard's refusal means, else None.

    ``err``: SQLAlchemy's ``IntegrityError`` (from a flush or commit) or psycopg's
    ``ExclusionViolation``.
    """
    orig = getattr(err, "orig", err)
    return _psycopg_near_duplicate(orig) if isinstance(orig, psycopg.Error) else None


def layout_guard(spec: SimHashIndex) -> ColumnElement[bool]:
    """``simpg.layout_is(table, column, k, levels)`` for the layout the model declares.

    A query whose ranges come from the model fails (SQLSTATE ``SPG01``, "no longer the
    ... layout") when the database's index has another layout, instead of reading other
    permutations under the same column names and missing rows. All its arguments are
    constants, so PostgreSQL checks it once, when it plans the statement.
    """
    table = spec.table
    rel = quoted_name(*(part for part in (table.schema, table.name) if part))
    return layout_is(rel, spec.column.name, spec.layout.k, spec.layout.levels)
