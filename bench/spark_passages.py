"""Side-by-side timings of the passage report on Spark and in memory, in one run, on the same documents.

1. ``memory``: :func:`simpg.passages.passage_pairs` (hashes and verification in ``--workers``
   processes, 2 by default: the cores ``local[2]`` gets).
2. ``spark``: :func:`simpg.spark.passage_pairs` on ``--master`` (``local[2]``), the documents
   read from Parquet, the pairs written to Parquet (every pair verified once).

Both must give the same pairs (ids, source, rule, longest run, shared tokens, containment);
the script checks that before it reports. Reported: seconds of each, the ratio spark / memory
and the seconds per 1,000 documents.

Data (synthetic, seeded): documents of 200-600 words drawn from 50,000 words; 20% copy a
passage of 60-200 words of an earlier document at a random place; 2% carry one boilerplate
paragraph of 80 words (a licence), left out of the candidates by ``--max-common`` (100) and
reported as common hashes.

Usage:
    python bench/spark_passages.py --documents 20000
    python bench/spark_passages.py --documents 100000 --master 'local[2]' --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from simpg.passages import PassageConfig, passage_pairs  # noqa: E402


def make_documents(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    boiler = " ".join(vocab[rng.integers(0, len(vocab), 80)])
    docs: list[list[str]] = []
    for i in range(n):
        words = list(vocab[rng.integers(0, len(vocab), int(rng.integers(200, 600)))])
        if i and rng.random() < 0.2:
            donor = docs[int(rng.integers(0, i))]
            start = int(rng.integers(0, max(1, len(donor) - 60)))
            at = int(rng.integers(0, len(words) + 1))
            words[at:at] = donor[start:start + int(rng.integers(60, 200))]
        if rng.random() < 0.02:
            words.append(boiler)
        docs.append(words)
    return [" ".join(w) for w in docs]


def run(documents: int, seed: int, master: str, workers: int, max_common: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simpg.spark import passage_pairs as spark_passage_pairs
    from simpg.spark import session

    texts = make_documents(documents, seed)
    config = PassageConfig()
    ids = list(range(1, documents + 1))
    start = time.perf_counter()
    memory = passage_pairs(texts, config, max_common=max_common, rank=ids, workers=workers)
    t_memory = time.perf_counter() - start
    expected = {(ids[p.a], ids[p.b], ids[p.source], p.rule, p.comparison.longest, p.comparison.shared_tokens,
                 p.comparison.a_in_b, p.comparison.b_in_a) for p in memory.pairs}

    folder = tempfile.mkdtemp(prefix="simpg-spark-passages-")
    try:
        pq.write_table(pa.table({"id": ids, "text": texts}), os.path.join(folder, "docs.parquet"))
        spark = session(master, {"spark.ui.showConsoleProgress": "false", "spark.driver.memory": "4g"})
        spark.sparkContext.setLogLevel("ERROR")
        spark.range(10).count()  # the JVM is up before the clock starts
        start = time.perf_counter()
        report = spark_passage_pairs(spark.read.parquet(os.path.join(folder, "docs.parquet")), config,
                                     max_common=max_common)
        report.pairs.write.parquet(os.path.join(folder, "pairs.parquet"))
        t_spark = time.perf_counter() - start
        got = {(r["a"], r["b"], r["source"], r["rule"], r["longest"], r["shared_tokens"], r["a_in_b"], r["b_in_a"])
               for r in spark.read.parquet(os.path.join(folder, "pairs.parquet")).collect()}
        candidates, common = report.candidate_count, report.common.count()
        report.unpersist()
        spark.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if got != expected or candidates != memory.candidates or common != len(memory.common):
        raise SystemExit(f"spark and memory disagree: {len(got)} / {len(expected)} pairs, "
                         f"{candidates} / {memory.candidates} candidates, {common} / {len(memory.common)} common")
    return {
        "documents": documents, "master": master, "workers": workers, "max_common": max_common,
        "candidates": candidates, "pairs": len(got), "common_hashes": common,
        "memory_s": round(t_memory, 1), "spark_s": round(t_spark, 1),
        "ratio_spark_to_memory": round(t_spark / t_memory, 2),
        "memory_s_per_1000": round(t_memory / documents * 1000, 2),
        "spark_s_per_1000": round(t_spark / documents * 1000, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workers", type=int, default=2, help="processes of the in-memory report")
    parser.add_argument("--max-common", type=int, default=100)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.documents, args.seed, args.master, args.workers, args.max_common), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
