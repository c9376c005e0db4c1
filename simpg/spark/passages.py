"""Every pair of documents sharing passages, on Spark: :func:`simpg.passages.passage_pairs` for more documents.

The same answer as the in-memory report (docs/partial.md), computed by Spark tasks that run
simpg's own Python core: no second implementation of the hashes or of the verification.

1. **Hashes** (``mapInArrow``): each document's passage hashes,
   :func:`simpg.passages.passage_hashes_array` in the task, as ``(hash, id)`` postings; or the
   given hash arrays exploded (repeats and order do not matter).
2. **Common hashes**: each hash's document count (a window over the hash); hashes held by more
   than ``max_common`` documents make no pair and are returned in :attr:`PassageReport.common`.
3. **Candidate pairs**: every pair of the documents posted under a hash, cut into units of at
   most ``2 * block_size`` postings as :mod:`simpg.spark.engine` cuts an oversized group (the
   hash's postings in blocks by a hash of the id, one unit per pair of blocks), enumerated by
   :func:`simpg.spark.kernels.equal_pairs`; then counted per pair (``shared_hashes``).
4. **Verification**: candidates go in batches of about :data:`~simpg.passages.pairs.VERIFY_BATCH`
   pairs, a document's pairs together (a document with more pairs than a batch is split by its
   partner), each batch cogrouped with its documents' texts, so a text is shipped and
   tokenised once per batch, as the in-memory report does. Each pair goes through the exact
   pre-filter (:func:`~simpg.passages.pairs.verify_candidates`: a pair that surely misses the
   thresholds is not compared), is compared (:func:`~simpg.passages.compare`), kept by
   :func:`~simpg.passages.pairs.pair_kept` and given
   its source by :func:`~simpg.passages.pairs.pair_direction` (rank: the id, or a rank column).
5. **Clusters**: :func:`passage_clusters`, connected components of the kept pairs
   (:func:`simpg.spark.connected_components`) with each cluster's sources.

Example:
    >>> from simpg.spark import passage_pairs, session                     # doctest: +SKIP
    >>> spark = session("local[2]")                                          # doctest: +SKIP
    >>> words = [f"w{i}" for i in range(200)]                                # doctest: +SKIP
    >>> df = spark.createDataFrame([(1, " ".join(words)), (2, "Intro. " + " ".join(words[20:90]))],
    ...                            "id long, text string")                   # doctest: +SKIP
    >>> report = passage_pairs(df)                                           # doctest: +SKIP
    >>> [(r.a, r.b, r.source, r.rule, r.longest) for r in report.pairs.collect()]  # doctest: +SKIP
    [(1, 2, 1, 'rank', 70)]
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from simpg.exc import SimpgError
from simpg.passages.checks import checked_max_common, max_common_rows
from simpg.passages.config import PassageConfig, config_or_default
from simpg.passages.pairs import (
    VERIFY_BATCH,
    check_thresholds,
    pair_direction,
    pair_kept,
    verify_candidates,
)
from simpg.passages.winnow import passage_hashes_array
from simpg.spark import kernels
from simpg.spark.engine import BLOCK_SIZE, _arrays, _partitions, _units, connected_components

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

logger = logging.getLogger(__name__)

__all__ = ["PAIRS_SCHEMA", "PASSAGE_FIELDS", "PassageReport", "passage_clusters", "passage_pairs"]

#: The fields of one shared passage (:class:`simpg.passages.SharedPassage`), int each.
PASSAGE_FIELDS = ("a_start", "a_end", "b_start", "b_end", "a_char_start", "a_char_end", "b_char_start",
                  "b_char_end")
#: The pairs' columns: the comparison of texts ``a`` and ``b`` (``a < b``, ids) and its direction.
PAIRS_SCHEMA = ("a long, b long, source long, rule string, shared_hashes long, shared_tokens long, longest long, "
                "a_in_b double, b_in_a double, a_shingles long, b_shingles long, shared_shingles long, "
                f"passages array<struct<{', '.join(f'{f}: int' for f in PASSAGE_FIELDS)}>>")


@dataclass
class PassageReport:
    """What :func:`passage_pairs` found.

    Attributes:
        pairs: the kept pairs (:data:`PAIRS_SCHEMA`), lazy: each action verifies again, so
            write it or persist it once.
        common: ``hash, documents``: the hashes left out as held by more than ``max_common``
            documents (empty without ``max_common``), lazy.
        candidates: ``a, b, shared_hashes``: every candidate pair (persisted).
        documents: the number of documents.
        candidate_count: the number of candidate pairs.
    """

    pairs: DataFrame
    common: DataFrame
    candidates: DataFrame
    documents: int
    candidate_count: int
    _cached: tuple[DataFrame, ...] = ()

    def unpersist(self) -> None:
        """Release the cached DataFrames (the documents, postings and candidates)."""
        for df in self._cached:
            df.unpersist()


def _named(df: DataFrame, name: str, what: str) -> str:
    """The positional name (``_3``) of the user's column ``name``: Spark would read dots in it."""
    if name not in df.columns:
        raise SimpgError(f"no {what} column {name!r} (columns: {', '.join(df.columns)})")
    return f"_{df.columns.index(name)}"


def _documents(df: DataFrame, id_column: str, text_column: str, hashes_column: str | None,
               rank_column: str | None) -> DataFrame:
    """``id, text[, hashes][, rank]`` from the user's columns, types checked."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = {"id": _named(df, id_column, "id"), "text": _named(df, text_column, "text")}
    if hashes_column is not None:
        names["hashes"] = _named(df, hashes_column, "hashes")
    if rank_column is not None:
        names["rank"] = _named(df, rank_column, "rank")
    df = df.toDF(*(f"_{i}" for i in range(len(df.columns))))
    kinds = {key: df.schema[col].dataType for key, col in names.items()}
    ident = F.col(names["id"]).cast("long")
    if isinstance(kinds["id"], T.StringType):  # CSV: integers as text
        ident = F.col(names["id"]).try_cast("long")
        bad = df.where(F.col(names["id"]).isNotNull() & ident.isNull()).select(names["id"]).limit(1).collect()
        if bad:
            raise SimpgError(f"id column {id_column!r}: expected an integer, got {bad[0][0][:40]!r}")
    elif not isinstance(kinds["id"], T.LongType | T.IntegerType | T.ShortType | T.ByteType):
        raise SimpgError(f"id column {id_column!r} must hold integers, got {kinds['id'].simpleString()}")
    if not isinstance(kinds["text"], T.StringType):
        raise SimpgError(f"text column {text_column!r} must hold strings, got {kinds['text'].simpleString()}")
    columns = [ident.alias("id"), F.col(names["text"]).alias("text")]
    if hashes_column is not None:
        kind = kinds["hashes"]
        if not (isinstance(kind, T.ArrayType) and isinstance(kind.elementType, T.LongType | T.IntegerType)):
            raise SimpgError(f"hashes column {hashes_column!r} must hold arrays of bigint, got {kind.simpleString()}")
        columns.append(F.col(names["hashes"]).cast("array<long>").alias("hashes"))
    if rank_column is not None:
        columns.append(F.col(names["rank"]).alias("rank"))
    return df.select(*columns)


def _check_documents(docs: DataFrame) -> None:
    """Raise naming the first document with no id or no text, or an id given twice."""
    from pyspark.sql import functions as F

    bad = docs.where(F.col("id").isNull() | F.col("text").isNull()).select("id").limit(1).collect()
    if bad:
        raise SimpgError("a document has no id" if bad[0]["id"] is None else f"document {bad[0]['id']} has no text")
    repeated = docs.groupBy("id").count().where(F.col("count") > 1).orderBy("id").limit(1).collect()
    if repeated:
        raise SimpgError(f"id {repeated[0]['id']} is given to {repeated[0]['count']} documents: ids must be unique")


def _hash_task(batches: Iterator[pa.RecordBatch], config: PassageConfig) -> Iterator[pa.RecordBatch]:
    """The ``(hash, id)`` postings of the task's documents: passage_hashes_array of each text."""
    import pyarrow as pa

    for batch in batches:
        arrays = [passage_hashes_array(text, config) for text in batch.column("text").to_pylist()]
        if not arrays:
            continue
        ids = np.repeat(batch.column("id").to_numpy(), [len(h) for h in arrays])
        yield pa.RecordBatch.from_arrays([pa.array(np.concatenate(arrays)), pa.array(ids)], names=["hash", "id"])


def _pair_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every pair of ids posted under one hash, unit by unit (kernels.equal_pairs: id_a < id_b)."""
    import pyarrow as pa

    cols = _arrays(batches, ("hash", "lo", "hi", "blk", "id"))
    if cols is None:
        return
    for a, b in kernels.equal_pairs(cols["hash"], cols["lo"], cols["hi"], cols["blk"], cols["id"]):
        yield pa.RecordBatch.from_arrays([pa.array(a), pa.array(b)], names=["a", "b"])


def _arrow_schema() -> pa.Schema:
    """:data:`PAIRS_SCHEMA` in Arrow."""
    import pyarrow as pa

    passage = pa.struct([(f, pa.int32()) for f in PASSAGE_FIELDS])
    return pa.schema([("a", pa.int64()), ("b", pa.int64()), ("source", pa.int64()), ("rule", pa.string()),
                      *((name, pa.int64()) for name in ("shared_hashes", "shared_tokens", "longest")),
                      ("a_in_b", pa.float64()), ("b_in_a", pa.float64()),
                      *((name, pa.int64()) for name in ("a_shingles", "b_shingles", "shared_shingles")),
                      ("passages", pa.list_(passage))])


def _verifier(min_tokens: int | None, min_containment: float | None,
              ranked: bool) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """The cogroup function: one batch of candidates and its documents in, the kept pairs out."""

    def verify(candidates: pa.Table, docs: pa.Table) -> pa.Table:
        import pyarrow as pa

        ids = docs.column("id").to_pylist()
        texts = dict(zip(ids, docs.column("text").to_pylist(), strict=True))
        ranks = dict(zip(ids, docs.column("rank").to_pylist(), strict=True)) if ranked else {d: d for d in ids}
        a_list, b_list = candidates.column("a").to_pylist(), candidates.column("b").to_pylist()
        shared = candidates.column("shared_hashes").to_pylist()
        rows: dict[str, list[Any]] = {name: [] for name in (
            "a", "b", "source", "rule", "shared_hashes", "shared_tokens", "longest", "a_in_b", "b_in_a",
            "a_shingles", "b_shingles", "shared_shingles", "passages")}
        checked = verify_candidates(texts, a_list, b_list, min_tokens, min_containment)  # pre-filter, then compare
        for a, b, n, c in zip(a_list, b_list, shared, checked, strict=True):
            if c is None or not pair_kept(c, min_tokens, min_containment):
                continue
            source, rule = pair_direction(a, b, c, ranks[a], ranks[b])
            for name, value in (("a", a), ("b", b), ("source", source), ("rule", rule), ("shared_hashes", n),
                                ("shared_tokens", c.shared_tokens), ("longest", c.longest),
                                ("a_in_b", c.a_in_b), ("b_in_a", c.b_in_a), ("a_shingles", c.a_shingles),
                                ("b_shingles", c.b_shingles), ("shared_shingles", c.shared_shingles)):
                rows[name].append(value)
            rows["passages"].append([{f: getattr(p, f) for f in PASSAGE_FIELDS} for p in c.passages])
        return pa.table(rows, schema=_arrow_schema())

    return verify


def passage_pairs(
    df: DataFrame,
    config: PassageConfig | None = None,
    *,
    id_column: str = "id",
    text_column: str = "text",
    hashes_column: str | None = None,
    rank_column: str | None = None,
    min_tokens: int | None = None,
    min_containment: float | None = None,
    max_common: int | float | None = None,
    block_size: int = BLOCK_SIZE,
    partitions: int | None = None,
) -> PassageReport:
    """Every pair of documents sharing passages above a threshold, verified, with its direction.

    What :func:`simpg.passages.passage_pairs` answers for texts in memory, with documents named
    by their ids (``a < b``) and ranked by them unless ``rank_column`` is given: the same
    candidates, the same comparison, thresholds and direction (see its docstring and
    docs/partial.md).

    Args:
        df: one row per document: an integer id (unique) and its text.
        config: the windows of the passage hashes (None: ``PassageConfig()``, windows 22 and 46).
        id_column: the id column.
        text_column: the text column (strings; a NULL text is an error naming its id).
        hashes_column: the documents' passage hashes if already made (``array<bigint>``, any
            window up to the config's; order and repeats do not matter); None: made in the tasks.
        rank_column: which document came first (smaller is earlier; any orderable type); None:
            the id. A NULL rank falls back to the containment rule.
        min_tokens: tokens of the longest shared passage from which a pair is kept.
        min_containment: share of a document (from 0 to 1) held by the other from which a pair is kept.
        max_common: hashes held by more than this many documents make no candidates and are
            reported in :attr:`PassageReport.common`; None skips nothing.
        block_size: postings of one block of a hash held by many documents (its pairs are
            enumerated by units of two blocks).
        partitions: shuffle partitions of the pair search (default: from the postings' count).

    Raises:
        SimpgError: a missing column or one of the wrong type, a document with no id or text,
            an id given twice.
        InvalidConfig: a threshold or ``max_common`` out of range.
    """
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cfg = config_or_default(config)
    min_tokens, min_containment = check_thresholds(cfg, min_tokens, min_containment)
    checked_max_common(max_common)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise SimpgError(f"block_size must be at least 1, got {block_size!r}")
    spark = df.sparkSession
    docs = _documents(df, id_column, text_column, hashes_column, rank_column)
    parallelism = spark.sparkContext.defaultParallelism
    if docs.rdd.getNumPartitions() < 2 * parallelism:  # one Parquet file is one partition: hash on every core
        docs = docs.repartition(2 * parallelism)
    docs = docs.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        _check_documents(docs)
    except SimpgError:
        docs.unpersist()
        raise
    documents = docs.count()
    max_common = max_common_rows(max_common, documents)
    if hashes_column is None:
        from functools import partial

        postings = docs.select("id", "text").mapInArrow(partial(_hash_task, config=cfg), "hash long, id long")
    else:
        postings = (docs.select("id", F.explode(F.array_distinct("hashes")).alias("hash"))
                    .where(F.col("hash").isNotNull()).select("hash", "id"))
    counted = postings.withColumn("n", F.count("*").over(Window.partitionBy("hash")))
    counted = counted.persist(StorageLevel.MEMORY_AND_DISK)
    too_many = F.col("n") > F.lit(max_common) if max_common is not None else F.lit(False)
    common = counted.where(too_many).groupBy("hash").agg(F.first("n").cast("long").alias("documents"))
    usable = counted.where((F.col("n") > 1) & ~too_many)
    blocks = F.greatest(F.lit(1), F.ceil(F.col("n") / F.lit(block_size)))
    units = _units(usable, blocks, "id").select("hash", "lo", "hi", "blk", "id")
    nparts = _partitions(spark, documents * 40, partitions)  # about 40 hashes a document (5 KB at w = 46)
    candidates = (units.repartition(nparts, "hash", "lo", "hi").mapInArrow(_pair_task, "a long, b long")
                  .groupBy("a", "b").agg(F.count("*").alias("shared_hashes")))
    candidates = candidates.persist(StorageLevel.MEMORY_AND_DISK)
    candidate_count = candidates.count()
    # Batches: a document's pairs together (its text once), one split by partner when it has more.
    nb = max(1, math.ceil(candidate_count / VERIFY_BATCH))
    per_a = F.count("*").over(Window.partitionBy("a"))
    batched = (candidates.withColumn("ba", F.pmod(F.xxhash64("a"), F.lit(nb)))
               .withColumn("bb", F.pmod(F.xxhash64("b"), F.ceil(per_a / F.lit(VERIFY_BATCH)))))
    # the texts side under other names: both sides come from ``batched`` (an ambiguous self-join otherwise)
    needed = (batched.select(F.col("ba").alias("tba"), F.col("bb").alias("tbb"),
                             F.explode(F.array("a", "b")).alias("id")).distinct()
              .join(docs.select("id", "text", *(["rank"] if rank_column else [])), "id"))
    pairs = (batched.select("ba", "bb", "a", "b", "shared_hashes").groupBy("ba", "bb")
             .cogroup(needed.groupBy("tba", "tbb"))
             .applyInArrow(_verifier(min_tokens, min_containment, rank_column is not None), PAIRS_SCHEMA))
    logger.info("%d documents, %d candidate pairs in %d batches", documents, candidate_count, nb)
    return PassageReport(pairs, common, candidates, documents, candidate_count, (docs, counted, candidates))


def passage_clusters(pairs: DataFrame) -> DataFrame:
    """Clusters of "copied from": ``cluster_id, id, size, source``, as :func:`simpg.passages.passage_clusters`.

    ``pairs``: :func:`passage_pairs`'s pairs (columns ``a``, ``b``, ``source``). Each document
    of a kept pair, in its connected group (``cluster_id``: the smallest id), with the group's
    size; ``source`` is true for the members that are the copy in no pair (in a cycle the
    containment rule can make, where every member is one: those that are the source of the
    most pairs).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    links = pairs.select("a", "b", "source").localCheckpoint(eager=True)  # verified once, read three times
    comp = connected_components(links.select(F.col("a").alias("u"), F.col("b").alias("v")))
    copy = F.when(F.col("source") == F.col("a"), F.col("b")).otherwise(F.col("a"))
    copies = links.select(copy.alias("node")).distinct().withColumn("is_copy", F.lit(True))
    led = links.groupBy(F.col("source").alias("node")).agg(F.count("*").alias("led"))
    nodes = (comp.join(copies, "node", "left").join(led, "node", "left")
             .select("node", "component", F.coalesce("is_copy", F.lit(False)).alias("is_copy"),
                     F.coalesce("led", F.lit(0)).alias("led")))
    group = Window.partitionBy("component")
    roots = F.sum(F.when(F.col("is_copy"), 0).otherwise(1)).over(group)
    source = F.when(roots > 0, ~F.col("is_copy")).otherwise(F.col("led") == F.max("led").over(group))
    return nodes.select(F.col("component").alias("cluster_id"), F.col("node").alias("id"),
                        F.count("*").over(group).alias("size"), source.alias("source"))
