"""All pairs and clusters of billions of fingerprints on Apache Spark (``pip install 'simpg[spark]'``).

The same answers as :mod:`simpg.allpairs` (``simpg find-all`` / ``find-clusters``), computed
by Spark tasks: see :mod:`simpg.spark.engine` for the algorithm and its skew handling,
:mod:`simpg.spark.io` for the inputs and outputs, and docs/spark.md.

Example:
    >>> from simpg import spark as sp                                    # doctest: +SKIP
    >>> session = sp.session("local[2]")                                 # doctest: +SKIP
    >>> df = session.createDataFrame([(1, 11), (2, 9), (3, 11)], "id long, fp long")  # doctest: +SKIP
    >>> prepared = sp.prepare(df)                                        # doctest: +SKIP
    >>> sorted(sp.pairs(prepared, 1).collect())                          # doctest: +SKIP
    [Row(id_a=1, id_b=2, distance=1), Row(id_a=1, id_b=3, distance=0), Row(id_a=2, id_b=3, distance=1)]
"""

from __future__ import annotations

from simpg.spark.engine import (
    BLOCK_SIZE,
    CLUSTER_METHODS,
    Prepared,
    cluster_table,
    clusters,
    connected_components,
    fingerprint_pairs,
    pairs,
    prepare,
    spark_layout,
)
from simpg.spark.passages import PassageReport, passage_clusters, passage_pairs
from simpg.spark.session import session

__all__ = [
    "BLOCK_SIZE",
    "CLUSTER_METHODS",
    "PassageReport",
    "Prepared",
    "cluster_table",
    "clusters",
    "connected_components",
    "fingerprint_pairs",
    "pairs",
    "passage_clusters",
    "passage_pairs",
    "prepare",
    "session",
    "spark_layout",
]
