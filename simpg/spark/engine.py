"""All pairs within k, and clusters, of fingerprints in a Spark DataFrame: exact, distributed.

The input is a DataFrame with columns ``id`` (bigint, unique) and ``fp`` (bigint: the
64 bits of the fingerprint, two's complement, as PostgreSQL stores it). The steps:

1. **Equal fingerprints collapse** (``groupBy(fp)``): each distinct fingerprint once,
   with its row count ``n`` and smallest id. A fingerprint repeated in millions of rows
   is one row from here on.
2. **One shuffle for all tables**: each distinct fingerprint becomes one row per table
   ``t`` of the layout (:func:`spark_layout`, from :func:`simpg.planner.plan`), keyed by
   its prefix in that table, ``fp & Layout.permutation(t).source_mask`` (two
   fingerprints share table ``t``'s prefix exactly when their XOR has no bit of that
   mask). Rows are hash-partitioned by ``(t, prefix)``; each task compares every pair
   of its groups (:func:`simpg.spark.kernels.near_pairs`) and keeps a pair only in the
   first table whose prefix both share, so no global distinct is needed.
3. **Skew**: groups bigger than ``block_size`` (found on a sample of the rows) are cut
   into blocks by a hash of the fingerprint, and each pair of blocks ``(i <= j)`` is a
   unit of its own, so no task gets more than about ``2 * block_size`` rows of one
   group. Every pair of the group lies in exactly one unit. The estimate only decides
   how work is cut, never which pairs are found.
4. **Pairs of rows**: the fingerprint pairs joined back to their rows, plus every pair
   of rows of a repeated fingerprint (distance 0), cut into blocks the same way.
5. **Clusters**: connected components of the fingerprint graph by large-star /
   small-star (Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC
   2014), on DataFrames, or the one-machine engine's ``"representative"`` clustering,
   computed exactly per component (:func:`clusters`).

Every function here returns a lazy DataFrame; nothing is collected to the driver but
the layout's inputs (a row count) and the few oversized groups of the sample.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simpg import bits, planner
from simpg.exc import InvalidLayout, SimpgError
from simpg.layout import Layout, check_radius
from simpg.spark import kernels

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

logger = logging.getLogger(__name__)

__all__ = [
    "BLOCK_SIZE",
    "CLUSTER_METHODS",
    "Prepared",
    "cluster_table",
    "clusters",
    "connected_components",
    "fingerprint_pairs",
    "pairs",
    "prepare",
    "spark_layout",
]

#: Rows of one group that one unit of work holds at most (two blocks: twice this).
BLOCK_SIZE = 4096
#: Clusters: around representatives (as simpg.allpairs), or connected components.
CLUSTER_METHODS = ("components", "representative")
#: Cost model of spark_layout, in executor (core) seconds, from bench/spark_bench.py on
#: local[2] (docs/scaling.md): per fingerprint per table (explode, shuffle, Arrow, sort in
#: the task: 5.9 us at 1M, 0.85 + 5 us at 10M once the candidates are taken out) and per
#: candidate pair compared in numpy (33 ns: the 10M search stage's extra 2.5 us per row
#: over 76 candidates per row).
SECONDS_PER_ROW_TABLE = 6.0e-6
SECONDS_PER_CANDIDATE = 3.3e-8
#: Rows of one exploded table row per shuffle partition, about.
ROWS_PER_PARTITION = 1_000_000
_SEED = 0x5349_4D50  # "SIMP": the hash seed that assigns rows to blocks


def spark_layout(k: int, rows: int) -> Layout:
    """The layout the Spark engine uses for ``rows`` distinct fingerprints and radius ``k``.

    One of :func:`simpg.planner.plan`'s designs (the Pareto front of tables against
    candidates), the one with the lowest Spark cost: every table is a shuffle of every
    fingerprint, every candidate a comparison in a task.
    """
    check_radius(k)
    designs = planner.plan(k, max(rows, 2), everything=True)

    def cost(d: planner.Design) -> float:
        return (d.tables * rows * SECONDS_PER_ROW_TABLE
                + rows * d.expected_candidates / 2 * SECONDS_PER_CANDIDATE)

    return min(designs, key=lambda d: (cost(d), d.tables)).layout


@dataclass
class Prepared:
    """An input made ready: its rows and its distinct fingerprints, both cached.

    Attributes:
        rows: ``id, fp`` (the input, persisted).
        distinct: ``fp, n, minid``: each fingerprint once, its row count and smallest id.
        row_count: number of rows.
        distinct_count: number of distinct fingerprints.
    """

    rows: DataFrame
    distinct: DataFrame
    row_count: int
    distinct_count: int

    def unpersist(self) -> None:
        """Release the cached DataFrames."""
        self.distinct.unpersist()
        self.rows.unpersist()


def prepare(df: DataFrame) -> Prepared:
    """Cache ``df`` (columns ``id``, ``fp``) and its distinct fingerprints, and count both.

    Raises:
        SimpgError: an id given to more than one row, naming the smallest such id (pairs
            and clusters name rows by id, so a repeated id would merge two rows' answers).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    rows = df.select(F.col("id").cast("long").alias("id"), F.col("fp").cast("long").alias("fp"))
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    row_count = rows.count()
    # one shuffle of the ids, small beside the pair search's shuffle of every table's rows
    repeated = (rows.groupBy("id").count().where(F.col("count") > 1)
                .orderBy("id").limit(1).collect())
    if repeated:
        rows.unpersist()
        raise SimpgError(f"id {repeated[0]['id']} is given to {repeated[0]['count']} rows: ids must be unique")
    # as many partitions as the data needs (the session's default, 200, is too many for
    # small inputs and too few for billions)
    nparts = _partitions(rows.sparkSession, row_count, None)
    distinct = (rows.repartition(nparts, "fp").groupBy("fp")
                .agg(F.count("*").alias("n"), F.min("id").alias("minid")))
    distinct = distinct.persist(StorageLevel.MEMORY_AND_DISK)
    distinct_count = distinct.count()
    return Prepared(rows, distinct, row_count, distinct_count)


def _partitions(spark: SparkSession, rows: int, partitions: int | None) -> int:
    if partitions:
        return partitions
    parallelism = spark.sparkContext.defaultParallelism
    return max(2 * parallelism, math.ceil(rows / ROWS_PER_PARTITION))


def _table_rows(fps: DataFrame, masks: Sequence[int]) -> DataFrame:
    """One row ``(t, key, fp)`` per fingerprint and table: its prefix in that table."""
    from pyspark.sql import functions as F

    fp = F.col("fp")
    per_table = [F.struct(F.lit(t).alias("t"), fp.bitwiseAND(F.lit(bits.to_db(m))).alias("key"))
                 for t, m in enumerate(masks)]
    return fps.select(fp, F.explode(F.array(*per_table)).alias("x")).select("x.t", "x.key", "fp")


def _units(df: DataFrame, blocks: Column, by: str) -> DataFrame:
    """Add ``blk`` (a hash of column ``by`` into ``blocks``) and one row per block pair ``lo, hi``."""
    from pyspark.sql import functions as F

    blk = F.pmod(F.xxhash64(F.col(by), F.lit(_SEED)), blocks).cast("int")
    df = df.withColumn("blk", blk).withColumn("j", F.explode(F.sequence(F.lit(0), blocks.cast("int") - 1)))
    return (df.withColumn("lo", F.least("blk", "j")).withColumn("hi", F.greatest("blk", "j")).drop("j"))


def _heavy_groups(fps: DataFrame, masks: Sequence[int], distinct_count: int, block_size: int,
                  ) -> list[tuple[int, int, int]]:
    """``(t, key, blocks)`` of the groups a sample says hold more than ``block_size`` rows."""
    from pyspark.sql import functions as F

    if distinct_count <= block_size:
        return []
    fraction = min(1.0, 64.0 / block_size)
    threshold = max(2, int(block_size * fraction / 2))
    sample = fps.sample(fraction=fraction, seed=_SEED) if fraction < 1 else fps
    found = (_table_rows(sample, masks).groupBy("t", "key").count()
             .where(F.col("count") >= threshold).collect())
    heavy = []
    for row in found:
        estimate = row["count"] / fraction
        heavy.append((int(row["t"]), int(row["key"]), max(2, math.ceil(estimate / block_size))))
    if heavy:
        logger.info("%d oversized groups split into blocks (largest about %d rows)", len(heavy),
                    max(h[2] for h in heavy) * block_size)
    return heavy


def _arrays(batches: Iterator[pa.RecordBatch], names: Sequence[str]) -> dict[str, np.ndarray] | None:
    """A task's whole partition as numpy arrays (None when it is empty)."""
    import pyarrow as pa

    chunks = list(batches)
    if not chunks or not sum(b.num_rows for b in chunks):
        return None
    table = pa.Table.from_batches(chunks)
    return {name: table.column(name).to_numpy() for name in names}


def _near_task(batches: Iterator[pa.RecordBatch], k: int, masks: Sequence[int]) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    cols = _arrays(batches, ("t", "key", "lo", "hi", "blk", "fp"))
    if cols is None:
        return
    for a, b, d in kernels.near_pairs(cols["t"], cols["key"], cols["lo"], cols["hi"], cols["blk"],
                                      cols["fp"], k, masks):
        yield pa.RecordBatch.from_arrays([pa.array(a), pa.array(b), pa.array(d)], names=["a", "b", "distance"])


def _equal_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    cols = _arrays(batches, ("fp", "lo", "hi", "blk", "id"))
    if cols is None:
        return
    for a, b in kernels.equal_pairs(cols["fp"], cols["lo"], cols["hi"], cols["blk"], cols["id"]):
        yield pa.RecordBatch.from_arrays([pa.array(a), pa.array(b), pa.array(np.zeros(len(a), dtype=np.int32))],
                                         names=["id_a", "id_b", "distance"])


def fingerprint_pairs(prepared: Prepared, k: int, layout: Layout | None = None, *,
                      block_size: int = BLOCK_SIZE, partitions: int | None = None) -> DataFrame:
    """Pairs of distinct fingerprints within ``k``: ``a, b, distance`` with ``a < b`` (signed).

    Args:
        prepared: the input (:func:`prepare`).
        k: largest distance.
        layout: the tables (radius at least ``k``); default :func:`spark_layout`.
        block_size: largest block of an oversized group (see the module docstring).
        partitions: shuffle partitions (default: about a million table rows each).
    """
    from pyspark.sql import functions as F

    layout = layout or spark_layout(k, prepared.distinct_count)
    layout.check_radius(k)
    masks = [perm.source_mask for perm in layout.permutations]
    spark = prepared.rows.sparkSession
    fps = prepared.distinct.select("fp")
    exploded = _table_rows(fps, masks)
    heavy = _heavy_groups(fps, masks, prepared.distinct_count, block_size)
    if heavy:
        split = spark.createDataFrame(heavy, "t int, key long, nb int")
        exploded = exploded.join(F.broadcast(split), ["t", "key"], "left")
        blocks = F.coalesce(F.col("nb"), F.lit(1))
    else:
        blocks = F.lit(1)
    units = _units(exploded, blocks, "fp").select("t", "key", "lo", "hi", "blk", "fp")
    nparts = _partitions(spark, prepared.distinct_count * layout.tables, partitions)
    logger.info("layout %s: %d tables, %d partitions", layout.name, layout.tables, nparts)
    return (units.repartition(nparts, "t", "key", "lo", "hi")
            .mapInArrow(functools.partial(_near_task, k=k, masks=masks), "a long, b long, distance int"))


def pairs(prepared: Prepared, k: int, layout: Layout | None = None, *, block_size: int = BLOCK_SIZE,
          partitions: int | None = None, fp_pairs: DataFrame | None = None) -> DataFrame:
    """Every pair of rows within ``k``, once: ``id_a, id_b, distance`` with ``id_a < id_b``.

    Rows with equal fingerprints are pairs at distance 0 (as ``simpg find-all``).
    ``fp_pairs``: :func:`fingerprint_pairs`'s result, when it is at hand already.
    """
    from pyspark.sql import functions as F

    if fp_pairs is None:
        fp_pairs = fingerprint_pairs(prepared, k, layout, block_size=block_size, partitions=partitions)
    rows = prepared.rows
    spark = rows.sparkSession
    # Rows of distinct fingerprints: pairs joined to the rows of each side (rows stream,
    # the pairs of one fingerprint are buffered).
    left = rows.select(F.col("fp").alias("a"), F.col("id").alias("id_a")).join(fp_pairs, "a")
    both = rows.select(F.col("fp").alias("b"), F.col("id").alias("id_b")).join(left, "b")
    near = both.select(F.least("id_a", "id_b").alias("id_a"), F.greatest("id_a", "id_b").alias("id_b"),
                       "distance")
    # Rows of one fingerprint: every pair, by units of blocks of ids.
    repeated = prepared.distinct.where(F.col("n") >= 2).select("fp", "n")
    members = rows.join(repeated, "fp")
    blocks = F.greatest(F.lit(1), F.ceil(F.col("n") / F.lit(block_size)))
    units = _units(members, blocks, "id").select("fp", "lo", "hi", "blk", "id")
    nparts = _partitions(spark, prepared.row_count - prepared.distinct_count, partitions)
    equal = units.repartition(nparts, "fp", "lo", "hi").mapInArrow(_equal_task,
                                                                   "id_a long, id_b long, distance int")
    return near.unionByName(equal)


def connected_components(edges: DataFrame, checkpoint: bool = True) -> DataFrame:
    """Connected components of an undirected graph: ``node, component`` (its smallest node).

    Large-star / small-star (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii, 2014),
    alternated until every edge joins a node to the root of a star; O(log^2 n) rounds.
    Only nodes with an edge appear.

    Args:
        edges: columns ``u``, ``v`` (bigint), ``u != v``; either direction, repeats allowed.
        checkpoint: cut each round's lineage (``localCheckpoint``), so that the plan
            stays small however many rounds there are.
    """
    from pyspark.sql import functions as F

    def settle(df: DataFrame) -> DataFrame:
        return df.localCheckpoint(eager=True) if checkpoint else df.cache()

    # Edges as (u, v) with v < u: a node and one smaller neighbour.
    e = settle(edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
               .where(F.col("u") != F.col("v")).distinct())
    rounds = 0
    while True:
        rounds += 1
        # Large-star: each node's larger neighbours move to the smallest node around it.
        both = e.unionByName(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
        smallest = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
        large = (both.join(smallest, "u").where(F.col("v") > F.col("u"))
                 .select(F.col("v").alias("u"), F.col("m").alias("v")).distinct())
        # Small-star: each node and its smaller neighbours move to the smallest of them.
        m = large.groupBy("u").agg(F.min("v").alias("m"))
        moved = (large.join(m, "u")
                 .select(F.explode(F.array(F.struct(F.col("u").alias("x"), F.col("m").alias("y")),
                                           F.struct(F.col("v").alias("x"), F.col("m").alias("y")))).alias("e"))
                 .select(F.col("e.x").alias("u"), F.col("e.y").alias("v")).where(F.col("u") != F.col("v"))
                 .distinct())
        moved = settle(moved)
        e.unpersist()
        e = moved
        # Done when every edge's smaller end is a root: a forest of stars.
        parents = e.select(F.col("v").alias("p")).distinct()
        children = e.select(F.col("u").alias("p"))
        if parents.join(children, "p", "left_semi").limit(1).count() == 0:
            break
    logger.info("connected components: %d rounds", rounds)
    roots = e.select(F.col("v").alias("node"), F.col("v").alias("component")).distinct()
    return e.select(F.col("u").alias("node"), F.col("v").alias("component")).unionByName(roots)


def _representative_task(table: pa.Table) -> pa.Table:
    """One component's representative labels: simpg.allpairs.representative_labels on its edges."""
    import pyarrow as pa

    from simpg import allpairs

    u = table.column("u").to_numpy()
    v = table.column("v").to_numpy()
    nodes = np.unique(np.concatenate([u, v]))  # node = smallest id of its fingerprint: its rank
    labels = allpairs.representative_labels(len(nodes), np.searchsorted(nodes, u), np.searchsorted(nodes, v))
    return pa.table({"node": pa.array(nodes), "label": pa.array(nodes[labels])})


def cluster_table(prepared: Prepared, fp_pairs: DataFrame, method: str = "components") -> DataFrame:
    """Each row in a cluster of two or more: ``cluster_id, id, size``, as ``simpg.clusters`` in SQL.

    ``"components"``: ``cluster_id`` is the component's smallest id. ``"representative"``:
    rows are taken by id, each fingerprint joins the earliest representative within k
    (its smallest id stands for it), else becomes one: ``simpg.allpairs.clusters(fps,
    k, method="representative", rank=ids)`` exactly; ``cluster_id`` is the
    representative's smallest id. That rule is sequential inside a component, so each
    component's edges go to one task (components of near-duplicates are small; a
    component of millions of fingerprints would need that task's memory).
    """
    from pyspark.sql import functions as F

    if method not in CLUSTER_METHODS:
        raise InvalidLayout(f"cluster method must be one of {', '.join(CLUSTER_METHODS)}, got {method!r}")
    nodes = prepared.distinct
    ends = nodes.select("fp", "minid")
    edges = (fp_pairs.join(ends.withColumnRenamed("fp", "a").withColumnRenamed("minid", "u"), "a")
             .join(ends.withColumnRenamed("fp", "b").withColumnRenamed("minid", "v"), "b")
             .select("u", "v"))
    comp = connected_components(edges)
    if method == "representative":
        grouped = (edges.join(comp.withColumnRenamed("node", "u"), "u")
                   .select("component", "u", "v").groupBy("component"))
        label = grouped.applyInArrow(_representative_task, "node long, label long")
    else:
        label = comp.select("node", F.col("component").alias("label"))
    # Every fingerprint of two or more rows, or with a neighbour: its label (own smallest id if none).
    labelled = (nodes.join(label, nodes["minid"] == label["node"], "left")
                .where((F.col("n") >= 2) | F.col("label").isNotNull())
                .select("fp", "n", F.coalesce("label", "minid").alias("cluster_id")))
    sizes = labelled.groupBy("cluster_id").agg(F.sum("n").alias("size"))
    kept = labelled.join(sizes.where(F.col("size") >= 2), "cluster_id").select("fp", "cluster_id", "size")
    return (prepared.rows.join(kept, "fp")
            .select("cluster_id", "id", F.col("size").cast("long").alias("size")))


def clusters(prepared: Prepared, k: int, layout: Layout | None = None, *, method: str = "components",
             block_size: int = BLOCK_SIZE, partitions: int | None = None) -> DataFrame:
    """Clusters of rows within ``k``: ``cluster_id, id, size`` (see :func:`cluster_table`)."""
    if method not in CLUSTER_METHODS:
        raise InvalidLayout(f"cluster method must be one of {', '.join(CLUSTER_METHODS)}, got {method!r}")
    fp_pairs = fingerprint_pairs(prepared, k, layout, block_size=block_size, partitions=partitions)
    return cluster_table(prepared, fp_pairs, method)
