"""The reference schema: the ``simpg_documents`` table that ``simpg dedup`` loads.

The table is defined once, as the SQLAlchemy model :class:`simpg.sqlalchemy.documents.Document`;
this module runs the DDL the model renders (:func:`statements`), so that raw psycopg code,
the model's ``metadata.create_all`` and ``migrations/`` make the same table (the test
suite compares them). SQLAlchemy is imported when the DDL is needed, not with this module.

Example:
    >>> import psycopg
    >>> from simpg.reference import ensure_reference_schema
    >>> with psycopg.connect("dbname=app", autocommit=True) as conn:  # doctest: +SKIP
    ...     ensure_reference_schema(conn)
    True
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from simpg import schema
from simpg.passages.config import PassageConfig

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql
    from sqlalchemy import Column, Table
    from sqlalchemy.sql.elements import CompilerElement

logger = logging.getLogger(__name__)

__all__ = ["BAND_COLUMNS", "DECISIONS_TABLE", "PASSAGE_COLUMN", "PASSAGE_CONFIG", "PASSAGE_SPACELESS_WINDOW",
           "PASSAGE_WINDOW", "TABLE", "TEXT_COLUMN", "VERDICTS",
           "decisions_statements", "ensure_reference_schema", "passage_keys_follow_rows", "script", "statements"]

#: The table's name (the model's ``__tablename__``).
TABLE = "simpg_documents"

#: The column of the documents' texts (the model's ``body``).
TEXT_COLUMN = "body"

#: Reviewers' decisions on pairs of its documents (the model ``Decision``, :mod:`simpg.review.decisions`).
DECISIONS_TABLE = "simpg_decisions"

#: What a decision says about two documents.
VERDICTS = ("not_duplicate", "duplicate")

#: The band key columns, in band order (``SimHashColumn.duplicates(..., band_keys=)``'s default names);
#: the model declares them under these names.
BAND_COLUMNS = ("sketch_b0", "sketch_b1", "sketch_b2", "sketch_b3")

#: The passage column (``bigint[]``) and its windows (spaced, spaceless): the model declares its
#: passage index so. Written out, not the library's defaults: migration 0006 made the table with these.
PASSAGE_COLUMN = "passages"
PASSAGE_WINDOW = 22
PASSAGE_SPACELESS_WINDOW = 46
#: The passage config of the reference table's hashes (``simpg dedup`` makes them with it).
PASSAGE_CONFIG = PassageConfig(PASSAGE_WINDOW, PASSAGE_SPACELESS_WINDOW)


def _table() -> Table:
    from simpg.sqlalchemy.documents import Document

    return Document.__table__  # type: ignore[return-value]


def _decisions_table() -> Table:
    from simpg.sqlalchemy.documents import Decision

    return Decision.__table__  # type: ignore[return-value]


def _compiled(element: CompilerElement) -> str:
    """DDL of a SQLAlchemy schema element, as PostgreSQL runs it (indented by spaces, for people too)."""
    from sqlalchemy.dialects.postgresql.base import PGDialect

    ddl = str(element.compile(dialect=PGDialect()))  # type: ignore[no-untyped-call]
    return "\n".join(line.rstrip() for line in ddl.expandtabs(4).strip().splitlines())


def _is_prefix(column: Column[object]) -> bool:
    # simpg.create_index makes the prefix columns and their B-trees (simhash_index declares them for the model)
    return "simpg_prefix_of" in column.info


def _index_statement() -> sql.Composed:
    """``SELECT simpg.create_index(...)`` for the model's simhash index (its column and layout)."""
    from psycopg import sql

    from simpg.sqlalchemy.index import table_indexes

    (spec,) = table_indexes(_table()).values()
    levels = dict(zip(("blocks", "inner_blocks"), spec.layout.levels, strict=False))  # one or two levels
    arguments = [sql.SQL("{} => {}").format(sql.SQL(name), sql.Literal(value))
                 for name, value in {"k": spec.layout.k, **levels}.items()]
    return sql.SQL("SELECT simpg.create_index({}, {}, {})").format(
        sql.Literal(TABLE), sql.Literal(spec.column.name), sql.SQL(", ").join(arguments))


def _passage_index_statement(key_bits: int | None = None) -> sql.Composed:
    """``SELECT simpg.create_passage_index(...)`` for the model's passage index (its GIN index and comment).

    ``key_bits`` None: the bits of the index there is, else by the table's rows.
    """
    from psycopg import sql

    return sql.SQL("SELECT simpg.create_passage_index({}, {}, {}, {}, {})").format(
        sql.Literal(TABLE), sql.Literal(PASSAGE_COLUMN), sql.Literal(PASSAGE_WINDOW),
        sql.Literal(PASSAGE_SPACELESS_WINDOW), sql.Literal(key_bits))


def _plain_indexes(table: Table, columns: set[str] | None = None) -> list[str]:
    """``CREATE INDEX`` of the model's B-trees other than the prefix ones (only those on ``columns`` if given)."""
    from sqlalchemy.schema import CreateIndex

    return [_compiled(CreateIndex(index)) for index in sorted(table.indexes, key=lambda i: str(i.name))
            if not any(_is_prefix(c) for c in index.columns)
            and (columns is None or any(c.name in columns for c in index.columns))]


def statements() -> list[sql.SQL | sql.Composed]:
    """The statements that create the reference tables in an empty database, in order.

    ``CREATE TABLE`` and ``CREATE INDEX`` as the models render them for PostgreSQL, without
    the simhash index's prefix columns and B-trees (``simpg.create_index`` makes those),
    then the decisions table (:func:`decisions_statements`).
    """
    from psycopg import sql
    from sqlalchemy.schema import CreateTable

    table = _table()
    create = CreateTable(table)
    create.columns = [c for c in create.columns if not _is_prefix(c.element)]
    return [sql.SQL(_compiled(create)), *map(sql.SQL, _plain_indexes(table)), _index_statement(),
            _passage_index_statement(), *decisions_statements()]


def decisions_statements() -> list[sql.SQL | sql.Composed]:
    """``CREATE TABLE simpg_decisions`` and its indexes, as the model ``Decision`` renders them."""
    from psycopg import sql
    from sqlalchemy.schema import CreateTable

    table = _decisions_table()
    return [sql.SQL(_compiled(CreateTable(table))), *map(sql.SQL, _plain_indexes(table))]


def _missing_columns(conn: psycopg.Connection) -> list[Column[object]]:
    """The model's columns (prefix columns aside) that the existing table lacks, in table order."""
    has = {r[0] for r in conn.execute(
        "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass "
        "AND attnum > 0 AND NOT attisdropped", [TABLE])}
    return [c for c in _table().columns if not _is_prefix(c) and c.name not in has]


def ensure_reference_schema(conn: psycopg.Connection) -> bool:
    """Create ``simpg_documents`` and its simpg index unless the table exists.

    A table made by an earlier simpg gets the columns of the model it lacks (``sketch``,
    the band keys, ``passages``), and the model's B-trees on them, the passage index
    when it has none, and the decisions table ``simpg_decisions`` when there is none.

    The connection's database must have simpg installed (ExtensionNotInstalled
    otherwise). The table is looked up on the connection's search_path.

    Returns:
        True if the table was created now, False if it was there already.
    """
    from psycopg import sql
    from sqlalchemy.schema import CreateColumn

    schema.require_installed(conn)
    row = conn.execute("SELECT pg_catalog.to_regclass(%s)", [TABLE]).fetchone()
    if row and row[0] is not None:
        # A table of an earlier simpg (migrations/versions/0003 and 0004 add the same).
        # Looked up first: ALTER TABLE would lock the table, and needs its owner.
        missing = _missing_columns(conn)
        if missing:
            with conn.transaction():
                for column in missing:
                    conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {}").format(
                        sql.Identifier(TABLE), sql.SQL(_compiled(CreateColumn(column)))))
                for index in _plain_indexes(_table(), {c.name for c in missing}):
                    conn.execute(sql.SQL(index))
            logger.info("added %s to %s", ", ".join(c.name for c in missing), TABLE)
        indexed = conn.execute(
            "SELECT index_name IS NOT NULL FROM simpg.passage_indexes "
            "WHERE indexed_table = %s::regclass AND passage_column = %s", [TABLE, PASSAGE_COLUMN]).fetchone()
        if not (indexed and indexed[0]):  # made by simpg < 0.3 (migrations/versions/0006 adds the same)
            conn.execute(_passage_index_statement())
            logger.info("created the passage index of %s", TABLE)
        row = conn.execute("SELECT pg_catalog.to_regclass(%s)", [DECISIONS_TABLE]).fetchone()
        if row and row[0] is None:  # made by simpg < 0.3 (migrations/versions/0005 adds the same)
            with conn.transaction():
                for statement in decisions_statements():
                    conn.execute(statement)
            logger.info("created %s", DECISIONS_TABLE)
        return False
    with conn.transaction():
        for statement in statements():
            conn.execute(statement)
    logger.info("created the reference table %s", TABLE)
    return True


# the passage index's key bits against the rows: (its bits, the bits the rows call for);
# the rows are the statistics' plus those loaded since, which no ANALYZE has counted yet
_KEY_BITS_SQL = ("SELECT p.key_bits, simpg.passage_key_bits(simpg.passage_table_rows(p.indexed_table) + %s) "
                 "FROM simpg.passage_indexes AS p WHERE p.indexed_table = %s::regclass AND p.passage_column = %s")


def passage_keys_follow_rows(conn: psycopg.Connection, loaded: int) -> bool:
    """Build the passage index of ``simpg_documents`` again when the table outgrew its key bits.

    The rule of ``simpg.check``'s ``passage keys too coarse`` (fewer bits than
    ``simpg.passage_key_bits`` of the rows, less 2), so a load rebuilds it only when the rows
    per key passed 4 times the aim: the table is analyzed, then ``simpg.create_passage_index``
    builds the index of the new bits before dropping the old one. ``loaded``: rows written
    since the last ANALYZE. A role that does not own the table leaves it as it is (lookups
    stay exact) and is told so in the log.

    Returns:
        True if the index was built again.
    """
    from psycopg import errors, sql

    row = conn.execute(_KEY_BITS_SQL, [loaded, TABLE, PASSAGE_COLUMN]).fetchone()
    if row is None or (row[0] is not None and row[0] >= row[1] - 2):
        return False
    try:
        with conn.transaction():
            conn.execute(sql.SQL("ANALYZE {} ({})").format(sql.Identifier(TABLE), sql.Identifier(PASSAGE_COLUMN)))
            conn.execute(_passage_index_statement(row[1]))
    except errors.InsufficientPrivilege:
        logger.warning("the passage index of %s has %s key bits, too few for its rows; its owner can build it "
                       "again with SELECT simpg.create_passage_index('%s', '%s')", TABLE, row[0], TABLE,
                       PASSAGE_COLUMN)
        return False
    logger.info("built the passage index of %s again for its rows (%s key bits before)", TABLE, row[0])
    return True


def script() -> str:
    """:func:`statements` as one SQL script (what ``python -m simpg.reference`` prints)."""
    return "".join(statement.as_string() + ";\n" for statement in statements())


if __name__ == "__main__":
    print(script(), end="")
