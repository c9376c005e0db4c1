"""The online passage lookup (PassageColumn.near) beside the fingerprint lookup (SimHashColumn.near),
on one table, in one run.

The table holds N rows of real texts (bench/data/quality14/corpus, every jsonl file, shuffled, each
text cut to 5 KB; past the corpus' 44,603 texts, rows are copies of them with a made-up word
every 30 words, so that copies share no run of 50 tokens but do share passage hashes: the
lookup reads and rejects them, as it would near-misses), each with its SimHash fingerprint
(``simhash``, simpg index k = 3) and its passage hashes (``passages``, GIN, window 46).
Queries are 5 KB texts: 1 to 3 passages of 60 to 150 words copied from random rows, the rest
made-up words. Each query is looked up by both handles on one lookup connection, alternately;
the script reports p50/p99 of each and their ratio, and checks every passage lookup found
the rows it copied from (unless the copied run is under 50 tokens, e.g. punctuation-only
"words", or the lookup skipped boilerplate hashes: both counted).

Usage:
    python bench/passages_lookup.py --rows 100000            # embedded server
    python bench/passages_lookup.py --dsn "host=... dbname=..." --rows 100000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bench" / "data" / "quality14" / "corpus"
TEXT_BYTES = 5000


def corpus_texts() -> list[str]:
    texts = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                text = json.loads(line)["text"]
                texts.append(text.encode()[:TEXT_BYTES].decode(errors="ignore"))
    return texts


def table_rows(texts: list[str], n: int, rng: random.Random) -> list[str]:
    rows = texts[:n]
    while len(rows) < n:
        words = texts[len(rows) % len(texts)].split(" ")
        for i in range(rng.randrange(30), len(words), 30):
            words[i] = f"x{rng.getrandbits(40):x}"
        rows.append(" ".join(words))
    return rows


def query_texts(rows: list[str], count: int, rng: random.Random) -> list[tuple[str, list[int]]]:
    """5 KB texts quoting 1 to 3 passages of rows; with the row keys (1-based) they quote."""
    out = []
    for _ in range(count):
        parts, keys = [], []
        for _ in range(rng.randint(1, 3)):
            key = rng.randrange(len(rows))
            words = rows[key].split()
            if len(words) < 200:
                continue
            length = rng.randint(60, 150)
            start = rng.randrange(len(words) - length)
            parts.append(" ".join(words[start:start + length]))
            keys.append(key + 1)
        filler = " ".join(f"q{rng.getrandbits(32):x}" for _ in range(600))
        text = (" ".join(parts) + " " + filler).encode()[:TEXT_BYTES].decode(errors="ignore")
        out.append((text, keys))
    return out


def load(conn: psycopg.Connection, rows: list[str], workers: int | None) -> dict[str, float]:
    from simpg.fingerprint import fingerprint_many
    from simpg.passages import passage_hashes_many
    from simpg.psycopg import PassageColumn, SimHashColumn

    started = time.perf_counter()
    fps = np.fromiter(fingerprint_many(rows, workers=workers), dtype=np.uint64, count=len(rows))
    hashes = list(passage_hashes_many(rows, workers=workers))
    hashed = time.perf_counter() - started
    conn.execute("DROP TABLE IF EXISTS bench_passages")
    conn.execute("CREATE TABLE bench_passages (id bigint PRIMARY KEY, body text, simhash bigint, passages bigint[])")
    started = time.perf_counter()
    with conn.cursor().copy("COPY bench_passages (id, body, simhash, passages) FROM STDIN") as copy:
        for key, (body, fp, stored) in enumerate(zip(rows, fps.view(np.int64).tolist(), hashes, strict=True), 1):
            copy.write_row((key, body, fp, stored))
    copied = time.perf_counter() - started
    started = time.perf_counter()
    SimHashColumn(conn, "bench_passages").create(k=3)
    simhash_build = time.perf_counter() - started
    started = time.perf_counter()
    PassageColumn(conn, "bench_passages", text_column="body").create()
    gin_build = time.perf_counter() - started
    conn.execute("VACUUM ANALYZE bench_passages")
    return {"hash_s": round(hashed, 1), "copy_s": round(copied, 1), "simhash_index_s": round(simhash_build, 1),
            "gin_index_s": round(gin_build, 1)}


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 2), "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2),
            "mean_ms": round(statistics.fmean(ms), 2)}


def run(dsn: str, n: int, queries: int, seed: int, workers: int | None) -> dict[str, Any]:
    from simpg.fingerprint import fingerprint
    from simpg.passages import compare, passage_hashes
    from simpg.psycopg import PassageColumn, SimHashColumn, configure_lookups

    rng = random.Random(seed)
    texts = corpus_texts()
    rng.shuffle(texts)  # every corpus (licences, news, Chinese, revisions) in any prefix of the table
    rows = table_rows(texts, n, rng)
    asked = query_texts(rows, queries, rng)
    with psycopg.connect(dsn, autocommit=True) as conn:
        built = load(conn, rows, workers)
        sizes = conn.execute("SELECT pg_table_size('bench_passages'), "
                             "pg_relation_size('bench_passages_passages_gin_idx')").fetchone()
    with psycopg.connect(dsn, autocommit=True) as conn:
        configure_lookups(conn)
        passages = PassageColumn(conn, "bench_passages", text_column="body")
        simhash = SimHashColumn(conn, "bench_passages")
        for text, _ in asked[:5]:  # warm: caches, prepared statements, the skip list
            passages.near(text)
            simhash.near(fingerprint(text), 3)
        t_passages, t_simhash, t_hash, found, skipped_queries, missed_skipped, short = [], [], [], 0, 0, 0, 0
        for text, keys in asked:
            started = time.perf_counter()
            fp = fingerprint(text)
            simhash.near(fp, 3)
            t_simhash.append(time.perf_counter() - started)
            started = time.perf_counter()
            got = passages.near(text)
            t_passages.append(time.perf_counter() - started)
            started = time.perf_counter()
            passage_hashes(text)
            t_hash.append(time.perf_counter() - started)
            matched = {m.key for m in got}
            found += len(matched)
            skipped_queries += bool(got.skipped)
            for key in set(keys) - matched:  # a quoted row not found: only if its run was cut or skipped
                longest = compare(text, rows[key - 1]).longest
                if longest >= 50 and not got.skipped:
                    raise SystemExit(f"row {key} shares a run of {longest} tokens and was not found")
                if longest >= 50:
                    missed_skipped += 1
                else:
                    short += 1
        skip = len(passages.common_hashes(1000))
    p, s = percentiles(t_passages), percentiles(t_simhash)
    return {
        "rows": n, "queries": queries, "text_bytes": TEXT_BYTES, **built,
        "table_bytes": sizes[0], "gin_bytes": sizes[1], "common_hashes_at_1000": skip,
        "matches_per_query": round(found / queries, 2), "queries_with_skipped_hashes": skipped_queries,
        "quoted_rows_missed_through_skipped_hashes": missed_skipped, "quoted_runs_under_50_tokens": short,
        "passage_near": p, "simhash_near_with_fingerprinting": s, "query_passage_hashes": percentiles(t_hash),
        "ratio_p50_passage_to_simhash": round(p["p50_ms"] / s["p50_ms"], 1),
        "ratio_p99_passage_to_simhash": round(p["p99_ms"] / s["p99_ms"], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=None, help="processes hashing the rows (default: every CPU)")
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    print(json.dumps(run(dsn, args.rows, args.queries, args.seed, args.workers), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
