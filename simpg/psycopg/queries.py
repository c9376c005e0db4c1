"""0.1.1's one module of SQL, kept so that its names import as before: use the modules by job.

``simpg.psycopg.queries`` used to hold SQL composition, range arithmetic, binary wire
encoding and session settings together (issue 15, code item 5). Each now has a module:

* :mod:`simpg.psycopg.catalog`: :class:`IndexInfo`, the catalog queries, the SQLSTATEs,
  :func:`check_k`;
* :mod:`simpg.psycopg.statements`: the statements the handles run and their parameters;
* :mod:`simpg.psycopg.ranges`: :class:`RangeMaker`, each table's prefix range of a query;
* :mod:`simpg.psycopg.wire`: binary COPY, ``bigint[]`` and bytea with numpy;
* :mod:`simpg.psycopg.settings`: lookup connections' and statements' planner settings.

Every name this module exported is re-exported here unchanged.
"""

from __future__ import annotations

from simpg.psycopg.catalog import (
    CATALOG_SQL,
    CHECK_SQL,
    COLUMN_TYPE_SQL,
    DAMAGED,
    INDEXED_SQL,
    INTEGER_TYPES,
    LAYOUT_CHANGED,
    PRIMARY_KEY_SQL,
    REPAIR_SQL,
    IndexInfo,
    check_k,
    id_column_sql,
    regclass_text,
)
from simpg.psycopg.ranges import RangeMaker
from simpg.psycopg.settings import (
    FETCH_SETTINGS,
    LOOKUP_SETTINGS,
    LOOKUP_SETTINGS_SQL,
    NEAR_MANY_SETTINGS,
    LocalSettings,
)
from simpg.psycopg.statements import (
    FETCH_BLOCKS,
    FETCH_PARTS_SQL,
    copy_in_sql,
    duplicates_sql,
    fetch_ranges,
    fetch_sql,
    layout_guard,
    near_many_params,
    near_many_sql,
    near_params,
    near_sql,
    stats_query,
)
from simpg.psycopg.wire import (
    Int8Array,
    Int8ArrayBinaryDumper,
    RawByteaLoader,
    binary_copy_payload,
    int8_array_header,
    parse_fetch,
    register_dumpers,
)

__all__ = [
    "CATALOG_SQL",
    "CHECK_SQL",
    "COLUMN_TYPE_SQL",
    "DAMAGED",
    "FETCH_BLOCKS",
    "FETCH_PARTS_SQL",
    "FETCH_SETTINGS",
    "INDEXED_SQL",
    "INTEGER_TYPES",
    "LAYOUT_CHANGED",
    "LOOKUP_SETTINGS",
    "LOOKUP_SETTINGS_SQL",
    "NEAR_MANY_SETTINGS",
    "PRIMARY_KEY_SQL",
    "REPAIR_SQL",
    "IndexInfo",
    "Int8Array",
    "Int8ArrayBinaryDumper",
    "LocalSettings",
    "RangeMaker",
    "RawByteaLoader",
    "binary_copy_payload",
    "check_k",
    "copy_in_sql",
    "duplicates_sql",
    "fetch_ranges",
    "fetch_sql",
    "id_column_sql",
    "int8_array_header",
    "layout_guard",
    "near_many_params",
    "near_many_sql",
    "near_params",
    "near_sql",
    "parse_fetch",
    "regclass_text",
    "register_dumpers",
    "stats_query",
]
