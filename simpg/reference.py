"""The reference schema: the ``simpg_documents`` table that ``simpg dedup`` loads.

The DDL below is the one definition for raw SQL; :mod:`simpg.sqlalchemy.documents`
and ``migrations/`` mirror it and the test suite compares them. The table is indexed
for ``k <= 4`` with 6 blocks (15 tables): prefixes of 20-22 bits keep a lookup to a few
candidates a table up to a few million rows (``simpg plan --k 4`` for bigger tables).

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

__all__ = ["DDL", "INDEX_SQL", "TABLE", "ensure_reference_schema"]

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
    sketch bit(256)                  -- confirms candidates (simpg.fingerprint.sketch); NULL in rows of simpg < 0.2
);
CREATE INDEX simpg_documents_collection_idx ON simpg_documents (collection);
"""

INDEX_SQL = "SELECT simpg.create_index('simpg_documents', 'simhash', k => 4, blocks => 6);  -- 15 tables\n"


def ensure_reference_schema(conn: psycopg.Connection) -> bool:
    """Create ``simpg_documents`` and its simpg index unless the table exists.

    A table made by simpg 0.1 gets its ``sketch`` column.

    The connection's database must have simpg installed (ExtensionNotInstalled
    otherwise). The table is looked up on the connection's search_path.

    Returns:
        True if the table was created now, False if it was there already.
    """
    schema.require_installed(conn)
    row = conn.execute("SELECT pg_catalog.to_regclass(%s)", [TABLE]).fetchone()
    if row and row[0] is not None:
        # A table made by simpg 0.1 has no sketches yet (migrations/versions/0003 adds them
        # too). Looked up first: ALTER TABLE would lock the table, and needs its owner.
        has = conn.execute("SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass "
                           "AND attname = 'sketch' AND NOT attisdropped", [TABLE]).fetchone()
        if not has:
            conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN sketch bit(256)")
            logger.info("added the sketch column to %s", TABLE)
        return False
    with conn.transaction():
        conn.execute(DDL.encode())  # bytes: several statements, no placeholders
        conn.execute(INDEX_SQL.encode())
    logger.info("created the reference table %s", TABLE)
    return True
