"""The reference schema: the ``simpg_documents`` table that ``simpg dedup`` loads.

The DDL below is the one definition for raw SQL; :mod:`simpg.sqlalchemy.documents`
and ``migrations/`` mirror it and the test suite compares them. The table is indexed
for ``k <= DEDUP_K`` (4) with 6 blocks (15 tables): the radius ``simpg dedup`` decides
at, so every report, lookup and guard on the table answers at it too; prefixes of 20-22
bits keep a lookup to a few candidates a table up to a few million rows (``simpg plan
--k 4`` for bigger tables).

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

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger(__name__)

__all__ = ["BAND_COLUMNS", "DDL", "INDEX_SQL", "TABLE", "ensure_reference_schema"]

TABLE = "simpg_documents"

DDL = """\
CREATE TABLE simpg_documents (
    id bigserial PRIMARY KEY,
    collection text NOT NULL DEFAULT 'default',
    source text NOT NULL,            -- file path, or "file.jsonl:LINE", or "file.csv:ROW"
    title text,
    body text NOT NULL,
    simhash bigint NOT NULL,
    fingerprint_config text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    sketch bit(256),                 -- confirms candidates (simpg.fingerprint.sketch); NULL in rows of simpg < 0.2
    sketch_b0 bigint,                -- band keys (simpg.fingerprint.sketch_and_bands): lookup candidates too;
    sketch_b1 bigint,                -- NULL for texts of fewer than 16 shingles and rows stored before them
    sketch_b2 bigint,
    sketch_b3 bigint
);
CREATE INDEX simpg_documents_collection_idx ON simpg_documents (collection);
CREATE INDEX simpg_documents_sketch_b0_idx ON simpg_documents (sketch_b0);
CREATE INDEX simpg_documents_sketch_b1_idx ON simpg_documents (sketch_b1);
CREATE INDEX simpg_documents_sketch_b2_idx ON simpg_documents (sketch_b2);
CREATE INDEX simpg_documents_sketch_b3_idx ON simpg_documents (sketch_b3);
"""

#: The band key columns, in band order (``SimHashColumn.duplicates(..., bands=)``'s default names).
BAND_COLUMNS = ("sketch_b0", "sketch_b1", "sketch_b2", "sketch_b3")

#: The radius is the decision's (``DEDUP_K``, tests/integration/test_decision_paths.py checks
#: it): reports, lookups and the guard on the table answer at the k ``simpg dedup`` decides at.
INDEX_SQL = "SELECT simpg.create_index('simpg_documents', 'simhash', k => 4, blocks => 6);  -- 15 tables\n"


def ensure_reference_schema(conn: psycopg.Connection) -> bool:
    """Create ``simpg_documents`` and its simpg index unless the table exists.

    A table made by an earlier simpg gets its ``sketch`` and band key columns (and the
    keys' B-trees).

    The connection's database must have simpg installed (ExtensionNotInstalled
    otherwise). The table is looked up on the connection's search_path.

    Returns:
        True if the table was created now, False if it was there already.
    """
    from psycopg import sql

    schema.require_installed(conn)
    row = conn.execute("SELECT pg_catalog.to_regclass(%s)", [TABLE]).fetchone()
    if row and row[0] is not None:
        # A table of an earlier simpg (migrations/versions/0003 and 0004 add them too).
        # Looked up first: ALTER TABLE would lock the table, and needs its owner.
        has = {r[0] for r in conn.execute(
            "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = ANY(%s) AND NOT attisdropped", [TABLE, ["sketch", *BAND_COLUMNS]])}
        missing = [c for c in ("sketch", *BAND_COLUMNS) if c not in has]
        if missing:
            with conn.transaction():
                for column in missing:
                    kind = sql.SQL("bit(256)" if column == "sketch" else "bigint")
                    conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                        sql.Identifier(TABLE), sql.Identifier(column), kind))
                    if column != "sketch":
                        conn.execute(sql.SQL("CREATE INDEX {} ON {} ({})").format(
                            sql.Identifier(f"{TABLE}_{column}_idx"), sql.Identifier(TABLE), sql.Identifier(column)))
            logger.info("added %s to %s", ", ".join(missing), TABLE)
        return False
    with conn.transaction():
        conn.execute(DDL.encode())  # bytes: several statements, no placeholders
        conn.execute(INDEX_SQL.encode())
    logger.info("created the reference table %s", TABLE)
    return True
