"""Inputs and outputs of the Spark engine: Parquet, CSV, text files, and PostgreSQL tables.

Every reader returns a DataFrame of ``id`` (bigint) and ``fp`` (bigint: the 64 bits of
the fingerprint, two's complement, as PostgreSQL stores it), read in parallel:

* **text**: one fingerprint per line in decimal, unsigned (``[0, 2**64)``, what
  ``simpg find-all`` reads) or the signed bigint form; or ``ID FINGERPRINT`` on every
  line. Without ids a row's id is its 1-based line number (``find-all --lines``).
* **CSV** (with a header) and **Parquet**: a fingerprint column (bigint, or decimal
  text as above) and optionally an integer id column; without one, the 1-based row
  number.
* **PostgreSQL**: one ``COPY`` per range of the table's pages (``ctid`` ranges, a TID
  range scan each), every task in the same snapshot, exported by the driver
  (``pg_export_snapshot``), so the parallel reads see one consistent table.

Outputs are Parquet or CSV folders, or a PostgreSQL table written by one ``COPY`` per
task, created with a primary key (``(id_a, id_b)`` for pairs, ``id`` for clusters), so
an ORM can map it and a repeated row could never pass unnoticed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simpg.exc import InvalidFingerprint, SimpgError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "FORMATS",
    "PAIRS_COLUMNS",
    "CLUSTERS_COLUMNS",
    "DOCUMENT_FORMATS",
    "file_format",
    "read_documents",
    "read_file",
    "read_table",
    "write_file",
    "write_table",
]

#: File formats read and written.
FORMATS = ("parquet", "csv", "text")
#: Document files read (``simpg spark find-passages``): ``text`` is one document per line.
DOCUMENT_FORMATS = ("parquet", "csv", "json", "text")
#: Columns of a PostgreSQL output table, by kind of result.
PAIRS_COLUMNS = (("id_a", "bigint"), ("id_b", "bigint"), ("distance", "integer"))
CLUSTERS_COLUMNS = (("cluster_id", "bigint"), ("id", "bigint"), ("size", "bigint"))
#: Fingerprint columns tried in order when none is named.
FP_COLUMNS = ("fp", "fingerprint", "simhash")
_TWO64 = "18446744073709551616"
_ROW_INDEX_BITS = 33  # monotonically_increasing_id: partition << 33 | row within it


def file_format(path: str, given: str | None) -> str:
    """The format of ``path``: ``given``, else from its extension (text if none fits)."""
    if given:
        if given not in FORMATS:
            raise SimpgError(f"format must be one of {', '.join(FORMATS)}, got {given!r}")
        return given
    name = path.rstrip("/").lower()
    if name.endswith(".parquet") or name.endswith(".pq"):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    if os.path.isdir(path) and any(f.endswith(".parquet") for f in os.listdir(path)):
        return "parquet"
    return "text"


def _row_numbers(df: DataFrame) -> DataFrame:
    """``df`` with ``row``: its 1-based position in the input, computed in parallel.

    ``monotonically_increasing_id`` holds the partition and the position inside it; a
    count per partition gives each partition's offset (what ``RDD.zipWithIndex`` does).
    """
    from pyspark.sql import functions as F

    tagged = df.withColumn("_mid", F.monotonically_increasing_id())
    part = F.shiftright(F.col("_mid"), _ROW_INDEX_BITS)
    counts = {int(r["p"]): int(r["n"]) for r in
              tagged.groupBy(part.alias("p")).agg(F.count("*").alias("n")).collect()}
    offsets, total = {}, 0
    for p in sorted(counts):
        offsets[p] = total
        total += counts[p]
    offset = F.lit(0).cast("long")
    for p, start in offsets.items():
        offset = F.when(part == p, F.lit(start)).otherwise(offset)
    within = F.col("_mid").bitwiseAND(F.lit((1 << _ROW_INDEX_BITS) - 1))
    return tagged.withColumn("row", offset + within + 1).drop("_mid")


def _decimal_fp(text: Column) -> Column:
    """A decimal string as a signed bigint fingerprint, or NULL when it is not one.

    ``[0, 2**64)`` (unsigned) and ``[-2**63, 0)`` (PostgreSQL's bigint form) are taken;
    digits 0-9 only.
    """
    from pyspark.sql import functions as F

    number = F.expr("try_cast(NULL AS decimal(38,0))")
    number = F.when(text.rlike("^-?[0-9]{1,38}$"), text.cast("decimal(38,0)")).otherwise(number)
    two64 = F.lit(_TWO64).cast("decimal(38,0)")
    low = F.lit(str(-(2**63))).cast("decimal(38,0)")
    high = F.lit(str(2**63)).cast("decimal(38,0)")
    return (F.when(number.isNull(), F.lit(None).cast("long"))
            .when((number >= low) & (number < high), number.cast("long"))
            .when((number >= high) & (number < two64), (number - two64).cast("long"))
            .otherwise(F.lit(None).cast("long")))


def _fail_first(df: DataFrame, bad: Column, order: Column, where: Column, what: Column) -> None:
    """Raise InvalidFingerprint naming the first row where ``bad`` holds (one small job)."""
    first = df.where(bad).select(order.alias("o"), where.alias("w"), what.alias("v")).orderBy("o").limit(1).collect()
    if first:
        text = "" if first[0]["v"] is None else str(first[0]["v"])
        raise InvalidFingerprint(f"{first[0]['w']}: expected a decimal 64-bit fingerprint, got {text[:40]!r}")


def read_text(spark: SparkSession, path: str) -> DataFrame:
    """Fingerprints of a text file (or folder of them): ``FP`` or ``ID FP`` per line."""
    from pyspark.sql import functions as F

    raw = _row_numbers(spark.read.text(path))
    fields = F.split(F.trim(F.col("value")), r"[\s,]+")
    parsed = (raw.where(F.trim(F.col("value")) != "")
              .select("row", "value", F.size(fields).alias("nf"),
                      F.element_at(fields, -1).alias("fp_text"), F.element_at(fields, 1).alias("id_text")))
    parsed = parsed.withColumn("fp", _decimal_fp(F.col("fp_text"))).withColumn(
        "id", F.when(F.col("nf") == 2, F.expr("try_cast(id_text AS long)")).otherwise(F.col("row")))
    forms = parsed.agg(F.min("nf").alias("lo"), F.max("nf").alias("hi")).collect()[0]
    if forms["hi"] is not None and (forms["lo"] != forms["hi"] or forms["hi"] > 2):
        form = parsed.orderBy("row").select("nf").limit(1).collect()[0]["nf"]
        odd = parsed.where((F.col("nf") != form) | (F.col("nf") > 2))
        first = odd.orderBy("row").select("row", "value").limit(1).collect()[0]
        raise InvalidFingerprint(f"line {first['row']}: expected 'FINGERPRINT' or 'ID FINGERPRINT', the same "
                                 f"on every line, got {first['value'][:40]!r}")
    _fail_first(parsed, F.col("fp").isNull() | F.col("id").isNull(), F.col("row"),
                F.concat(F.lit("line "), F.col("row").cast("string")), F.col("value"))
    return parsed.select("id", "fp")


def _column_fp(df: DataFrame, name: str, label: str) -> Column:
    """Column ``name`` of ``df`` as fingerprints; ``label``: its name in the input, for errors."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    kind = df.schema[name].dataType
    if isinstance(kind, T.LongType | T.IntegerType | T.ShortType | T.ByteType):
        return F.col(name).cast("long")
    if isinstance(kind, T.StringType | T.DecimalType):
        return _decimal_fp(F.trim(F.col(name).cast("string")))
    raise SimpgError(f"fingerprint column {label!r} must hold integers or decimal text, got {kind.simpleString()}")


def read_file(spark: SparkSession, path: str, fmt: str | None = None, fp_column: str | None = None,
              key_column: str | None = None) -> DataFrame:
    """Read fingerprints (see the module docstring): a DataFrame of ``id``, ``fp``.

    Raises:
        SimpgError: a missing file or column, a column of the wrong type.
        InvalidFingerprint: a value that is not a 64-bit fingerprint, naming it.
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fmt = file_format(path, fmt)
    if not os.path.exists(path) and "://" not in path:
        raise SimpgError(f"cannot read {path!r}: No such file or directory")
    try:
        if fmt == "text":
            if fp_column or key_column:
                raise SimpgError("text input has no columns: --column and --key are for csv and parquet")
            return read_text(spark, path)
        reader = spark.read.option("header", True) if fmt == "csv" else spark.read
        df = reader.csv(path) if fmt == "csv" else reader.parquet(path)
    except AnalysisException as err:
        raise SimpgError(f"cannot read {path!r}: {str(err).splitlines()[0][:200]}") from None
    columns = df.columns
    if fp_column is None:
        fp_column = next((c for c in FP_COLUMNS if c in columns), columns[0] if len(columns) == 1 else None)
        if fp_column is None:
            raise SimpgError(f"no fingerprint column among {', '.join(columns)}; name it with --column")
    if fp_column not in columns:
        raise SimpgError(f"no column {fp_column!r} in {path!r} (columns: {', '.join(columns)})")
    if key_column is None and "id" in columns and fp_column != "id":
        key_column = "id"
    if key_column is not None and key_column not in columns:
        raise SimpgError(f"no column {key_column!r} in {path!r} (columns: {', '.join(columns)})")
    # The columns by position (_0, _1, ...): Spark reads dots and backticks in a column
    # name it is given (``a.b`` is field b of a), so a user's name is never handed to it.
    position = {c: f"_{i}" for i, c in reversed(list(enumerate(columns)))}  # the first of equal names
    df = df.toDF(*(f"_{i}" for i in range(len(columns))))
    fp = _column_fp(df, position[fp_column], fp_column)
    if key_column is None:
        df = _row_numbers(df)
        ident, where = F.col("row"), F.concat(F.lit("row "), F.col("row").cast("string"))
    else:
        kind = df.schema[position[key_column]].dataType
        if isinstance(kind, T.LongType | T.IntegerType | T.ShortType | T.ByteType):
            ident = F.col(position[key_column]).cast("long")
        elif isinstance(kind, T.StringType):
            ident = F.col(position[key_column]).try_cast("long")
        else:
            raise SimpgError(f"key column {key_column!r} must hold integers, got {kind.simpleString()}")
        where = F.concat(F.lit(f"{key_column} "), F.col(position[key_column]).cast("string"))
    parsed = df.select(ident.alias("id"), fp.alias("fp"), where.alias("_where"),
                       F.col(position[fp_column]).cast("string").alias("_value"))
    _fail_first(parsed, F.col("fp").isNull(), F.col("id"), F.col("_where"), F.col("_value"))
    if key_column is not None:
        first = parsed.where(F.col("id").isNull()).select("_where").limit(1).collect()
        if first:
            raise SimpgError(f"{first[0]['_where']}: expected an integer id")
    return parsed.select("id", "fp")


def read_documents(spark: SparkSession, path: str, fmt: str | None = None, text_column: str = "text",
                   key_column: str | None = None) -> tuple[DataFrame, str, str]:
    """Documents of a Parquet, CSV (with a header, quoted fields may span lines), JSON lines or text file.

    A text file holds one document per line. Returns the DataFrame and the names of its id
    and text columns: ``key_column``, else ``id`` if there is one, else ``row`` (the 1-based
    row number, added here); the text column is checked to exist.

    Raises:
        SimpgError: a missing file or column, a format that is not one of :data:`DOCUMENT_FORMATS`.
    """
    from pyspark.errors import AnalysisException

    if fmt is None:
        name = path.rstrip("/").lower()
        fmt = "json" if name.endswith((".json", ".jsonl")) else file_format(path, None)
    if fmt not in DOCUMENT_FORMATS:
        raise SimpgError(f"format must be one of {', '.join(DOCUMENT_FORMATS)}, got {fmt!r}")
    if not os.path.exists(path) and "://" not in path:
        raise SimpgError(f"cannot read {path!r}: No such file or directory")
    try:
        if fmt == "text":
            df = spark.read.text(path).withColumnRenamed("value", text_column)
        elif fmt == "csv":
            df = spark.read.option("header", True).option("multiLine", True).option("escape", '"').csv(path)
        elif fmt == "json":
            df = spark.read.json(path)
        else:
            df = spark.read.parquet(path)
    except AnalysisException as err:
        raise SimpgError(f"cannot read {path!r}: {str(err).splitlines()[0][:200]}") from None
    columns = df.columns
    for column in (text_column, key_column):
        if column is not None and column not in columns:
            raise SimpgError(f"no column {column!r} in {path!r} (columns: {', '.join(columns)})")
    if key_column is None:
        if "id" in columns and text_column != "id":
            return df, "id", text_column
        if "row" in columns:
            raise SimpgError(f"{path!r} has a column 'row' and no 'id': name the id column with --key")
        return _row_numbers(df), "row", text_column
    return df, key_column, text_column


# -- PostgreSQL ---------------------------------------------------------------------


def _connect(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


def _resolve(conn: Any, table: str, fp_column: str, key_column: str) -> tuple[int, str, str]:
    """The table's oid, schema and name as the catalog has them; its two columns checked."""
    row = conn.execute("SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class AS c "
                       "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
                       "WHERE c.oid = pg_catalog.to_regclass(%s)", [table]).fetchone()
    if row is None:
        raise SimpgError(f"no table {table!r}")
    oid, schema, name = row
    for column, what in ((fp_column, "fingerprint"), (key_column, "id")):
        found = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                             "WHERE attrelid = %s AND attname = %s AND attnum > 0 AND NOT attisdropped",
                             [oid, column]).fetchone()
        if found is None:
            raise SimpgError(f"no column {column!r} in table {table!r}")
        if found[0] not in ("bigint", "integer", "smallint"):
            raise SimpgError(f"{what} column {column!r} of {table!r} must be bigint, got {found[0]}")
    return oid, schema, name


def _copy_statement(names: tuple[str, str, str, str], lo: int, hi: int) -> Any:
    """COPY of the ids and fingerprints in pages ``[lo, hi)``; ``names``: schema, table, id and fingerprint columns.

    Composed by psycopg.sql in the task itself, names and bounds at once: a statement
    text formatted again would read the braces of a name (``t{hi}``).
    """
    from psycopg import sql

    schema, table, key_column, fp_column = names
    return sql.SQL("COPY (SELECT {id}, {fp} FROM {rel} WHERE ctid >= {lo}::tid AND ctid < {hi}::tid "
                   "AND {fp} IS NOT NULL) TO STDOUT").format(
        id=sql.Identifier(key_column), fp=sql.Identifier(fp_column), rel=sql.Identifier(schema, table),
        lo=sql.Literal(f"({int(lo)},0)"), hi=sql.Literal(f"({int(hi)},0)"))


def _copy_task(batches: Iterator[pa.RecordBatch], dsn: str, names: tuple[str, str, str, str],
               snapshot: str | None) -> Iterator[pa.RecordBatch]:
    """Read the page ranges of the task's rows with COPY, in the driver's snapshot."""
    import pyarrow as pa

    with contextlib.closing(_connect(dsn)) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        if snapshot:
            from psycopg import sql

            conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        for batch in batches:
            for lo, hi in zip(batch.column("lo").to_pylist(), batch.column("hi").to_pylist(), strict=True):
                tail = b""
                with conn.cursor().copy(_copy_statement(names, lo, hi)) as copy:
                    for data in copy:
                        chunk = tail + bytes(data)
                        cut = chunk.rfind(b"\n") + 1
                        tail = chunk[cut:]
                        values = np.array(chunk[:cut].split(), dtype=np.int64).reshape(-1, 2)
                        if len(values):
                            yield pa.RecordBatch.from_arrays([pa.array(values[:, 0]), pa.array(values[:, 1])],
                                                             names=["id", "fp"])
        conn.execute("COMMIT")


@contextlib.contextmanager
def read_table(spark: SparkSession, dsn: str, table: str, fp_column: str = "simhash", key_column: str = "id",
               partitions: int | None = None) -> Iterator[DataFrame]:
    """Read ``table``'s ids and fingerprints in parallel, all tasks in one snapshot.

    A context manager: the driver's transaction, whose snapshot the tasks import, stays
    open inside the ``with`` block, so compute (or persist) the DataFrame there. Rows
    whose fingerprint is NULL are left out.
    """
    with contextlib.closing(_connect(dsn)) as conn:
        oid, schema, name = _resolve(conn, table, fp_column, key_column)
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
        pages = conn.execute("SELECT (pg_relation_size(%s::oid) / current_setting('block_size')::bigint)",
                             [oid]).fetchone()[0]
        count = partitions or max(2 * spark.sparkContext.defaultParallelism, 1)
        step = max(1, -(-int(pages) // count))
        ranges = [(lo, lo + step) for lo in range(0, max(int(pages), 1), step)]
        ranges[-1] = (ranges[-1][0], 2**32 - 1)  # pages added meanwhile are not in the snapshot anyway
        import functools

        spans = spark.sparkContext.parallelize(ranges, len(ranges)).toDF("lo long, hi long")
        task = functools.partial(_copy_task, dsn=dsn, names=(schema, name, key_column, fp_column), snapshot=snapshot)
        yield spans.mapInArrow(task, "id long, fp long")
        conn.execute("COMMIT")


def _write_task(batches: Iterator[pa.RecordBatch], dsn: str, copy_sql: str, columns: Sequence[str],
                ) -> Iterator[pa.RecordBatch]:
    """COPY the task's rows into the table, in one transaction; yield how many."""
    import pyarrow as pa

    written = 0
    with contextlib.closing(_connect(dsn)) as conn:
        conn.execute("BEGIN")
        with conn.cursor().copy(copy_sql) as copy:
            for batch in batches:
                cols = [batch.column(c).to_numpy(zero_copy_only=False).astype(str) for c in columns]
                if not batch.num_rows:
                    continue
                lines = cols[0]
                for col in cols[1:]:
                    lines = np.char.add(np.char.add(lines, "\t"), col)
                copy.write("\n".join(lines.tolist()) + "\n")
                written += batch.num_rows
        conn.execute("COMMIT")
    yield pa.RecordBatch.from_arrays([pa.array([written], type=pa.int64())], names=["written"])


def write_table(df: DataFrame, dsn: str, table: str, columns: Sequence[tuple[str, str]], *,
                overwrite: bool = False) -> int:
    """Create ``table`` and COPY ``df`` into it from every task; returns the rows written.

    ``table`` is read as SQL reads a name (``"My Schema"."pairs.v2"``; unquoted parts
    fold to lower case), as ``read_table``'s is. The primary key (the first two columns
    for pairs, ``id`` for clusters) is added after the load. ``overwrite`` drops an
    existing table of that name first.
    """
    import psycopg
    from psycopg import sql
    from pyspark.sql import functions as F

    names = [c for c, _ in columns]
    key = names[:2] if names[0] == "id_a" else ["id"]
    with contextlib.closing(_connect(dsn)) as conn:
        # the name as SQL reads it ("My Schema"."a.b"): PostgreSQL splits it, not a split on dots
        try:
            parts = conn.execute("SELECT pg_catalog.parse_ident(%s)", [table]).fetchone()[0]
        except psycopg.errors.InvalidParameterValue as err:
            raise SimpgError(f"invalid table name {table!r}: {err.diag.message_primary}") from None
        if len(parts) > 2:
            raise SimpgError(f"expected a table name or schema.table, got {table!r}")
        target = sql.Identifier(*parts)
        exists = conn.execute("SELECT to_regclass(%s)", [target.as_string(conn)]).fetchone()[0]
        if exists is not None and not overwrite:
            raise SimpgError(f"table {table!r} exists; choose another name or pass --overwrite")
        if exists is not None:
            conn.execute(sql.SQL("DROP TABLE {}").format(target))
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(
            target, sql.SQL(", ").join(sql.SQL("{} {} NOT NULL").format(sql.Identifier(c), sql.SQL(t))
                                       for c, t in columns)))
        copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(
            target, sql.SQL(", ").join(map(sql.Identifier, names))).as_string(conn)
        import functools

        task = functools.partial(_write_task, dsn=dsn, copy_sql=copy_sql, columns=names)
        written = df.select(*names).mapInArrow(task, "written long").agg(F.sum("written")).collect()[0][0]
        conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(
            target, sql.SQL(", ").join(map(sql.Identifier, key))))
        conn.execute(sql.SQL("ANALYZE {}").format(target))
    return int(written or 0)


def write_file(df: DataFrame, path: str, fmt: str | None = None, *, overwrite: bool = False) -> None:
    """Write ``df`` as a folder of Parquet, CSV (with a header) or JSON lines (``fmt="json"``) files."""
    from pyspark.errors import AnalysisException

    fmt = fmt if fmt == "json" else file_format(path, fmt)
    if fmt == "text":
        fmt = "csv"
    if os.path.exists(path) and not overwrite:
        raise SimpgError(f"cannot write {path!r}: it exists; choose another path or pass --overwrite")
    writer = df.write.mode("overwrite" if overwrite else "errorifexists")
    try:
        if fmt == "csv":
            writer.option("header", True).csv(path)
        elif fmt == "json":
            writer.json(path)
        else:
            writer.parquet(path)
    except AnalysisException as err:
        raise SimpgError(f"cannot write {path!r}: {str(err).splitlines()[0][:200]}") from None
