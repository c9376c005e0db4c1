"""Passages (partial duplicates) on a model: the column, its index, writes and lookups.

``passage_index(Article.passages, window=22, spaceless_window=46)`` declares what
``simpg.create_passage_index`` makes: the GIN index on the ``bigint[]`` column and the comment
that records the windows.
The comment is set on the model's column (Alembic then sees the model as the database
is); an ``after_create`` event runs ``simpg.passage_index_ddl``'s statements, the one
source of the index's DDL. ``passages_on_write(Article.body, Article.passages)`` fills the
column whenever the text is set; ``passages_near(session, Article, text)`` runs the one
lookup statement (``simpg.passage_lookup_statement``) and verifies every candidate on the
texts (:func:`simpg.passages.lookup.verify`), returning the objects with their shared
passages and the containment both ways.

Example:
    >>> from sqlalchemy import BigInteger, Text
    >>> from sqlalchemy.orm import DeclarativeBase, mapped_column
    >>> from simpg.sqlalchemy import Passages, passage_index, passages_on_write
    >>> class Base(DeclarativeBase):
    ...     pass
    >>> class Page(Base):
    ...     __tablename__ = "pages"
    ...     id = mapped_column(BigInteger, primary_key=True)
    ...     body = mapped_column(Text)
    ...     passages = mapped_column(Passages)
    >>> spec = passage_index(Page.passages, window=22, spaceless_window=46)
    >>> _ = passages_on_write(Page.body, Page.passages)
    >>> Page(body="one two three four five six").passages == spec.hashes("one two three four five six")
    True
    >>> Page.__table__.c.passages.comment
    'simpg passages: {"format": 1, "k": 5, "window": 22, "spaceless_window": 46}'
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from sqlalchemy import ARRAY, BigInteger, Column, Table, bindparam, event, inspect, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import TextClause

from simpg.exc import SimpgError, translated
from simpg.passages.checks import checked_key_bits
from simpg.passages.config import (
    COMMENT_PREFIX,
    DEFAULT_SPACELESS_WINDOW,
    DEFAULT_WINDOW,
    PassageConfig,
    config_or_default,
)
from simpg.passages.lookup import (
    DEFAULT_MAX_COMMON,
    Verification,
    checked_limit,
    checked_max_common,
    checked_thresholds,
    prepared_query,
    query_text,
    to_skip,
)
from simpg.passages.winnow import passage_hashes
from simpg.results import PassageMatch, PassageMatches
from simpg.sqlalchemy.index import _resolve_column
from simpg.sqlnames import quoted_name

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession
    from sqlalchemy.orm import Session

__all__ = [
    "PassageIndex",
    "PassagesWriter",
    "passage_index",
    "passage_index_for",
    "passage_index_statement",
    "passages_near",
    "passages_near_async",
    "passages_on_write",
    "table_passage_indexes",
]

_INDEX_KEY = "simpg_passage_index"  # Column.info key of a passage column's PassageIndex
_WRITER_KEY = "simpg_passages"  # Column.info key of its PassagesWriter
# Table -> {passage column name: PassageIndex}; not in Table.info, which Alembic renders
_TABLE_SPECS: weakref.WeakKeyDictionary[Table, dict[str, PassageIndex]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class PassageIndex:
    """A passage index declared on a ``bigint[]`` column (:func:`passage_index`)."""

    table: Table
    column: Column[Any]
    config: PassageConfig
    #: the bits of each hash the GIN index keeps (``simpg.passage_keys``); None: by the table's rows
    key_bits: int | None = None

    @property
    def window(self) -> int:
        """The winnowing window of spaced rows recorded in the column's comment."""
        return self.config.window

    @property
    def spaceless_window(self) -> int:
        """The winnowing window of rows mostly of a spaceless script recorded in the column's comment."""
        return self.config.spaceless_window

    def hashes(self, text: str) -> list[int]:
        """The passage hashes of ``text`` with this index's config (what the column stores)."""
        return passage_hashes(text, self.config)


def _rel(table: Table) -> str:
    """The table as regclass input text (quoted, schema-qualified when it has a schema)."""
    return quoted_name(*(part for part in (table.schema, table.name) if part))


def passage_index_statement(rel: str, column: str, config: PassageConfig, *, key_bits: int | None = None,
                            concurrently: bool = False) -> TextClause:
    """``SELECT statement FROM simpg.passage_index_ddl(...)``: the index's statements, in order, as rows."""
    return text(
        "SELECT s.statement FROM simpg.passage_index_ddl(CAST(:rel AS regclass), :col, :window, :spaceless_window, "
        "CAST(:key_bits AS integer), :concurrently) WITH ORDINALITY AS s(phase, index_name, statement, n) ORDER BY s.n"
    ).bindparams(rel=rel, col=column, window=config.window, spaceless_window=config.spaceless_window,
                 key_bits=key_bits, concurrently=concurrently)


def _is_bigint_array(type_: Any) -> bool:
    impl = getattr(type_, "impl_instance", type_)
    return isinstance(impl, ARRAY) and isinstance(impl.item_type, BigInteger)


def passage_index(column: Any, window: int = DEFAULT_WINDOW,
                  spaceless_window: int = DEFAULT_SPACELESS_WINDOW, key_bits: int | None = None) -> PassageIndex:
    """Declare a passage index on a ``bigint[]`` column (``Passages``): ``create_all`` makes it.

    Sets the column's comment to the config's (``simpg passages: {...}``, where simpg
    records the windows) and, after the table is created, runs
    ``simpg.passage_index_ddl``'s statements (the GIN index, ANALYZE). Call it once per
    column, after the model is defined.

    Args:
        column: the passage column, e.g. ``Article.passages`` or ``table.c.passages``.
        window: the winnowing window (k-grams) over words of spaced scripts.
        spaceless_window: the winnowing window over letters of a spaceless script; windows
            are weighted by script, so a mix is in between (every shared run of
            ``max(window, spaceless_window) + 4`` tokens is found; docs/partial.md).
        key_bits: the bits of each hash the GIN index keeps (1 to 32; None:
            ``simpg.passage_key_bits`` of the table's rows when the index is made).

    Returns:
        The :class:`PassageIndex` (also :func:`passage_index_for`).
    """
    col = _resolve_column(column)
    table = col.table
    if not _is_bigint_array(col.type):
        raise SimpgError(f"column {table.name}.{col.name} is {col.type!r}, expected Passages (bigint[])")
    config = PassageConfig(window, spaceless_window)
    checked_key_bits(key_bits)
    if _INDEX_KEY in col.info:
        raise SimpgError(f"column {table.name}.{col.name} already has a passage index")
    if col.comment is not None and col.comment != config.to_comment():
        raise SimpgError(f"column {table.name}.{col.name} has the comment {col.comment!r:.60}; simpg records "
                         "the passage index's windows there: remove it")
    writer = col.info.get(_WRITER_KEY)
    if writer is not None and writer.config != config:
        raise SimpgError(f"passages_on_write fills {table.name}.{col.name} with {writer.config}, not {config}")
    col.comment = config.to_comment()
    spec = PassageIndex(table, col, config, key_bits)
    col.info[_INDEX_KEY] = spec
    if table not in _TABLE_SPECS:
        _TABLE_SPECS[table] = {}
        event.listen(table, "after_create", _after_create)
    _TABLE_SPECS[table][col.name] = spec
    return spec


def table_passage_indexes(table: Table) -> dict[str, PassageIndex]:
    """Passage column name -> PassageIndex declared on ``table`` (empty if none)."""
    return dict(_TABLE_SPECS.get(table, {}))


def passage_index_for(column: Any) -> PassageIndex:
    """The PassageIndex of a passage column (also through ORM attributes)."""
    spec = _resolve_column(column).info.get(_INDEX_KEY)
    if not isinstance(spec, PassageIndex):
        raise SimpgError(f"column {column!r} has no passage index; declare one with "
                         "simpg.sqlalchemy.passage_index(column)")
    return spec


def _after_create(table: Table, connection: Connection, **kw: Any) -> None:
    for spec in table_passage_indexes(table).values():
        statements = connection.execute(passage_index_statement(_rel(table), spec.column.name, spec.config,
                                                                key_bits=spec.key_bits))
        for statement in statements.scalars().all():
            # no_parameters: run as the server wrote it (names may hold % or :)
            connection.exec_driver_sql(statement, execution_options={"no_parameters": True})


@dataclass(frozen=True)
class PassagesWriter:
    """Writes the passage hashes of ``source`` into ``target`` whenever ``source`` is set."""

    source: str
    target: str
    config: PassageConfig

    def hashes(self, text: Any) -> list[int]:
        """The passage hashes of one text with this writer's config."""
        return passage_hashes(query_text(text), self.config)


def passages_on_write(source: Any, target: Any, config: PassageConfig | None = None) -> PassagesWriter:
    """Opt in: setting ``source`` (``Article.body``) also sets ``target`` (``Article.passages``).

    As :func:`~simpg.sqlalchemy.fingerprint_on_write`: computed when the attribute is set
    (in the constructor too); setting ``source`` to None sets ``target`` to None; bulk
    ``insert()``/``update()`` statements bypass ORM events (use
    :func:`simpg.passages.passage_hashes_many`, or ``simpg backfill --passages``).

    Args:
        source: mapped text attribute.
        target: mapped ``Passages`` attribute.
        config: the windows; None means the column's :func:`passage_index` config, or the default.
    """
    target_column = _resolve_column(target)
    if not _is_bigint_array(target_column.type):
        raise SimpgError(f"column {target_column.table.name}.{target_column.name} is {target_column.type!r}, "
                         "expected Passages (bigint[])")
    spec = target_column.info.get(_INDEX_KEY)
    if config is None and spec is not None:
        config = spec.config
    config = config_or_default(config)
    if spec is not None and spec.config != config:
        raise SimpgError(f"the passage index on {target_column.table.name}.{target_column.name} has "
                         f"{spec.config}, not {config}")
    writer = PassagesWriter(source.key, target.key, config)

    def on_set(obj: Any, value: Any, oldvalue: Any, initiator: Any) -> None:
        setattr(obj, writer.target, None if value is None else writer.hashes(value))

    event.listen(source, "set", on_set, propagate=True)
    target_column.info[_WRITER_KEY] = writer
    return writer


@dataclass(frozen=True)
class _Lookup:
    """One passage lookup, resolved from the model: what to ask the database."""

    entity: Any
    key: Any  # the primary key attribute
    rel: str
    column: str
    text_column: str
    key_column: str


def _lookup(entity: Any, column: Any, text_column: Any) -> _Lookup:
    mapper = inspect(entity).mapper
    table = mapper.local_table
    if column is None:
        found = [c for c in table.columns if _INDEX_KEY in c.info or _WRITER_KEY in c.info]
        if len(found) != 1:
            raise SimpgError(f"{mapper.class_.__name__} has {len(found)} passage columns; pass column=")
        col = found[0]
    else:
        col = _resolve_column(column)
    if text_column is None:
        writer = col.info.get(_WRITER_KEY)
        if writer is None:
            raise SimpgError(f"no text column for {table.name}.{col.name}; pass text_column=, or declare "
                             "passages_on_write(text_attribute, passage_attribute)")
        text_name = mapper.attrs[writer.source].columns[0].name
    else:
        text_name = _resolve_column(text_column).name if not isinstance(text_column, str) else text_column
    if len(mapper.primary_key) != 1:
        raise SimpgError(f"{mapper.class_.__name__} needs a single-column primary key, has "
                         f"{len(mapper.primary_key)}")
    pk = mapper.primary_key[0]
    return _Lookup(entity, getattr(entity, mapper.get_property_by_column(pk).key), _rel(table), col.name,
                   text_name, pk.name)


#: The lookup's statements and config (the windows it was made for) and the hashes to skip,
#: in one round trip; the statements' texts are the server's (simpg.passage_probe_statement,
#: simpg.passage_texts_statement).
_PLAN_SQL = (
    "SELECT simpg.passage_probe_statement(%(rel)s::regclass, %(col)s, %(key)s), "
    "simpg.passage_texts_statement(%(rel)s::regclass, %(text)s, %(key)s), "
    "l.passage_window, l.spaceless_window, "
    "simpg.common_passage_hashes(%(rel)s::regclass, %(col)s, %(max_common)s::float8) "
    "FROM simpg.passage_layout(%(rel)s::regclass, %(col)s) AS l"
)


def _driver(connection: Any, what: str) -> Any:
    driver = getattr(connection, "driver_connection", None)
    if not isinstance(driver, (psycopg.Connection, psycopg.AsyncConnection)):
        raise SimpgError(f"{what} needs the psycopg driver (postgresql+psycopg), got {type(driver).__name__}")
    return driver


def _plan_params(lookup: _Lookup, max_common: int | float | None) -> dict[str, Any]:
    return {"rel": lookup.rel, "col": lookup.column, "text": lookup.text_column, "key": lookup.key_column,
            "max_common": max_common}


def _lookup_params(hashes: Any, skipped: list[int]) -> list[Any]:
    """The lookup statement's $1 (the text's passage hashes) and $2 (those it skips, NULL for none)."""
    return [hashes.tolist(), skipped or None]


def _objects_select(lookup: _Lookup, keys: list[Any]) -> Any:
    return select(lookup.entity).where(lookup.key.in_(bindparam("keys", keys, expanding=True)))


def _paired(objects: Any, matches: list[PassageMatch], skipped: list[int], lookup: _Lookup,
            ) -> PassageMatches[tuple[Any, PassageMatch]]:
    by_key = {getattr(obj, lookup.key.key): obj for obj in objects}
    # a row deleted between the two statements (another transaction) is left out
    return PassageMatches(((by_key[m.key], m) for m in matches if m.key in by_key), skipped)


def passages_near(
    session: Session,
    entity: Any,
    text: str,
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    max_common: int | float | None = DEFAULT_MAX_COMMON,
    limit: int | None = None,
    column: Any = None,
    text_column: Any = None,
) -> PassageMatches[tuple[Any, PassageMatch]]:
    """The stored objects that share passages with ``text``, verified, most shared hashes first.

    Runs the lookup statement (``simpg.passage_probe_statement``) on the session's
    connection (flushed first when the session autoflushes), then
    :class:`simpg.passages.lookup.Verification` compares the candidates' texts with ``text``
    in the statement's order, reading them a batch at a time (``simpg.passage_texts_statement``)
    and stopping at the ``limit``-th match.

    Args:
        session: a ``Session`` on a ``postgresql+psycopg`` engine.
        entity: the mapped class.
        text: the query text.
        min_tokens: the longest shared passage must have this many tokens (default and
            lowest: the index's guarantee, max(window, spaceless_window) + 4).
        min_containment: ``max(text_in_row, row_in_text)`` must reach it.
        max_common: skip hashes the statistics put in more than this many rows
            (boilerplate): a count, or a share of the table's rows (above 0, below 1; never
            fewer than 1,000 rows); default 0.001. None skips nothing. The text's hashes
            skipped are the result's ``skipped``.
        limit: at most this many objects: the first of the answer's order (most shared
            hashes, then key).
        column: the passage attribute, when the entity has several.
        text_column: the text attribute (default: the one ``passages_on_write`` reads).

    Returns:
        ``(object, PassageMatch)`` pairs (:class:`~simpg.results.PassageMatches`, with
        ``skipped``); ``PassageMatch.key`` is the primary key.
    """
    lookup = _lookup(entity, column, text_column)
    query = query_text(text)
    checked_max_common(max_common)
    checked_limit(limit)
    if session.autoflush:
        session.flush()
    driver = _driver(session.connection().connection, "passages_near")
    with translated():  # the server's checks of the columns, as SimpgError
        statement, texts, window, spaceless_window, common = driver.execute(
            _PLAN_SQL, _plan_params(lookup, max_common)).fetchone()
    config = PassageConfig(window, spaceless_window)
    checked_thresholds(config, min_tokens, min_containment)  # before the lookup: errors name the value
    prepared = prepared_query(query, config)
    skipped = to_skip(prepared.hashes, common or ())
    cur = psycopg.RawCursor(driver)
    rows = cur.execute(statement, _lookup_params(prepared.hashes, skipped)).fetchall()
    check = Verification(prepared, config, rows, min_tokens=min_tokens, min_containment=min_containment, limit=limit)
    while keys := check.pending():
        check.check(dict(cur.execute(texts, [keys]).fetchall()))
    matches = check.matches()
    objects = session.scalars(_objects_select(lookup, [m.key for m in matches])).all() if matches else []
    return _paired(objects, matches, skipped, lookup)


async def passages_near_async(
    session: AsyncSession,
    entity: Any,
    text: str,
    *,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    max_common: int | float | None = DEFAULT_MAX_COMMON,
    limit: int | None = None,
    column: Any = None,
    text_column: Any = None,
) -> PassageMatches[tuple[Any, PassageMatch]]:
    """:func:`passages_near` for an ``AsyncSession`` (``postgresql+psycopg_async``)."""
    lookup = _lookup(entity, column, text_column)
    query = query_text(text)
    checked_max_common(max_common)
    checked_limit(limit)
    if session.autoflush:
        await session.flush()
    raw = await (await session.connection()).get_raw_connection()
    driver = _driver(raw, "passages_near_async")
    with translated():
        cur = await driver.execute(_PLAN_SQL, _plan_params(lookup, max_common))
        statement, texts, window, spaceless_window, common = await cur.fetchone()
    config = PassageConfig(window, spaceless_window)
    checked_thresholds(config, min_tokens, min_containment)
    prepared = prepared_query(query, config)
    skipped = to_skip(prepared.hashes, common or ())
    acur = psycopg.AsyncRawCursor(driver)
    rows = await (await acur.execute(statement, _lookup_params(prepared.hashes, skipped))).fetchall()
    check = Verification(prepared, config, rows, min_tokens=min_tokens, min_containment=min_containment, limit=limit)
    while keys := check.pending():
        check.check(dict(await (await acur.execute(texts, [keys])).fetchall()))
    matches = check.matches()
    objects = (await session.scalars(_objects_select(lookup, [m.key for m in matches]))).all() if matches else []
    return _paired(objects, matches, skipped, lookup)


def is_passage_comment(comment: Any) -> bool:
    """Whether a column comment is one a passage index writes."""
    return isinstance(comment, str) and comment.startswith(COMMENT_PREFIX)
