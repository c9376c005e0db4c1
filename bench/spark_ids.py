"""What simpg.spark.engine.prepare's id check costs: a repeated id stops a run, at one shuffle of the ids.

Times prepare() (which includes the check) and the check's own query alone, on 1M
random rows on local[2], two rounds:

    python bench/spark_ids.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from simpg.spark import engine  # noqa: E402
from simpg.spark.session import session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    spark = session(master="local[2]")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": np.arange(args.rows, dtype=np.int64),
                          "fp": rng.integers(-2**63, 2**63 - 1, args.rows, dtype=np.int64)})
    df = spark.createDataFrame(frame).repartition(8).cache()
    df.count()
    for round_ in range(2):
        start = time.perf_counter()
        prepared = engine.prepare(df)
        whole = time.perf_counter() - start
        start = time.perf_counter()
        prepared.rows.groupBy("id").count().where(F.col("count") > 1).orderBy("id").limit(1).collect()
        check = time.perf_counter() - start
        print(f"round {round_ + 1}: prepare {whole:.2f} s, of which the id check about {check:.2f} s")
        prepared.unpersist()


if __name__ == "__main__":
    main()
