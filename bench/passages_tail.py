"""The boilerplate tail of the online passage lookup: before and after the early stop, side by side.

A table of N rows of real texts (bench/passages_lookup.py's: bench/data/quality14/corpus, 5 KB
each, copies with a made-up word every 30 words past the corpus), where one made-up
paragraph of 120 words (a licence, say) is pasted into 1% of the rows and another into 0.1%.
Queries of 5 KB: one quoting each paragraph, one copying passages of random rows (as in
bench/passages_lookup.py), one of made-up words. Each query is looked up, alternately, by

* ``before``: the lookup as it was (simpg 0.2.0 until this change): ``simpg.passage_lookup_statement``
  reads every candidate with its text, each is verified (``compare``), sorted by shared tokens,
  then cut to ``limit``;
* ``after``: ``PassageColumn.near`` (``simpg.passage_probe_statement``, the candidates verified
  in the statement's order, texts read a batch at a time, stopping at the ``limit``-th match);
* ``after_all``: ``PassageColumn.near`` with no limit (every candidate verified, as before).

All with ``max_common=None`` (nothing skipped: the tail itself) and ``limit=10``. Reports p50/p99
per query kind and the ratios before / after; checks that every answer with a limit is the
first 10 of the answer without one, and that before and after find the same rows.

Usage:
    ln -s /work/main/bench/data/quality14 bench/data/quality14   # once; never git add it
    python bench/passages_tail.py --rows 100000 --queries 40
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

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.passages_lookup import corpus_texts, query_texts, table_rows  # noqa: E402

LIMIT = 10


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 2), "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2)}


def paragraph(rng: random.Random, words: int = 120) -> str:
    return " ".join(f"lic{rng.getrandbits(30):x}" for _ in range(words)) + "."


def load(conn: psycopg.Connection, rows: list[str], workers: int | None) -> float:
    from simpg.psycopg import PassageColumn

    started = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS bench_tail")
    conn.execute("CREATE TABLE bench_tail (id bigint PRIMARY KEY, body text, passages bigint[])")
    docs = PassageColumn(conn, "bench_tail", text_column="body")
    docs.create()
    docs.add(rows, list(range(1, len(rows) + 1)), workers=workers)
    conn.execute("VACUUM ANALYZE bench_tail")
    return time.perf_counter() - started


def before(conn: psycopg.Connection, statement: bytes, config: Any, text: str, limit: int) -> list[Any]:
    """The lookup as it was: every candidate read with its text and verified, then sorted and cut."""
    from simpg.passages import compare, tokens
    from simpg.passages.lookup import _longest_kgram_run, prepared_query  # the same cheap check as before
    from simpg.psycopg import wire
    from simpg.results import PassageMatch

    query = prepared_query(text, config)
    least = config.guarantee
    with psycopg.RawCursor(conn) as cur:
        rows = cur.execute(statement, [wire.Int8Array(query.hashes), None], binary=True).fetchall()
    found = []
    for key, body, _hashes, shared in rows:
        if body is None:
            continue
        row = tokens(body)
        if _longest_kgram_run(query.grams, row) < least:
            continue
        c = compare(query.tokens, row)
        if c.longest < least:
            continue
        found.append(PassageMatch(key, c.passages, c.shared_tokens, c.longest, row_in_text=c.b_in_a,
                                  text_in_row=c.a_in_b, shared_hashes=int(shared)))
    found.sort(key=lambda m: -m.shared_tokens)
    return found[:limit]


def run(dsn: str, n: int, queries: int, seed: int, workers: int | None) -> dict[str, Any]:
    from simpg.passages.lookup import prepared_query
    from simpg.psycopg import PassageColumn, configure_lookups

    rng = random.Random(seed)
    texts = corpus_texts()
    rng.shuffle(texts)
    rows = table_rows(texts, n, rng)
    common, rare = paragraph(rng), paragraph(rng)
    for share, pasted in ((0.01, common), (0.001, rare)):
        for i in rng.sample(range(n), int(n * share)):
            words = rows[i].split(" ")
            at = rng.randrange(len(words) + 1)
            rows[i] = " ".join(words[:at] + [pasted] + words[at:])
    with psycopg.connect(dsn, autocommit=True) as conn:
        load_s = load(conn, rows, workers)
    own = lambda: " ".join(f"q{rng.getrandbits(32):x}" for _ in range(300))  # noqa: E731
    kinds = {
        "boilerplate_1pct": [own() + " " + common + " " + own() for _ in range(queries)],
        "boilerplate_0.1pct": [own() + " " + rare + " " + own() for _ in range(queries)],
        "copy": [t for t, _ in query_texts(rows, queries, rng)],
        "unrelated": [own() + " " + own() for _ in range(queries)],
    }
    out: dict[str, Any] = {"rows": n, "queries_per_kind": queries, "limit": LIMIT, "load_s": round(load_s, 1)}
    with psycopg.connect(dsn, autocommit=True) as conn:
        configure_lookups(conn)
        docs = PassageColumn(conn, "bench_tail", text_column="body")
        config = docs.info.config
        statement = conn.execute("SELECT simpg.passage_lookup_statement('bench_tail', 'passages', 'body')"
                                 ).fetchone()[0].encode()
        for text in kinds["copy"][:3]:  # warm
            docs.near(text, max_common=None, limit=LIMIT)
            before(conn, statement, config, text, LIMIT)
        for kind, texts_ in kinds.items():
            times: dict[str, list[float]] = {"before": [], "after": [], "after_all": []}
            candidates = matches = 0
            for text in texts_:
                started = time.perf_counter()
                old = before(conn, statement, config, text, LIMIT)
                times["before"].append(time.perf_counter() - started)
                started = time.perf_counter()
                new = docs.near(text, max_common=None, limit=LIMIT)
                times["after"].append(time.perf_counter() - started)
                started = time.perf_counter()
                every = docs.near(text, max_common=None)
                times["after_all"].append(time.perf_counter() - started)
                if list(new) != every[:LIMIT]:
                    raise SystemExit(f"{kind}: the answer with a limit is not the first {LIMIT} of the whole")
                if {m.key for m in old} - {m.key for m in every} or len(every) < len(old):
                    raise SystemExit(f"{kind}: before found rows after does not")
                matches += len(every)
                candidates += conn.execute("SELECT count(*) FROM bench_tail WHERE passages && %s::bigint[]",
                                           [prepared_query(text, config).hashes.tolist()]).fetchone()[0]
            p = {k: percentiles(v) for k, v in times.items()}
            out[kind] = {
                **p, "candidates_per_query": round(candidates / len(texts_), 1),
                "matches_per_query": round(matches / len(texts_), 1),
                "ratio_p50_before_to_after": round(p["before"]["p50_ms"] / p["after"]["p50_ms"], 1),
                "ratio_p99_before_to_after": round(p["before"]["p99_ms"] / p["after"]["p99_ms"], 1),
                "ratio_p50_after_all_to_before": round(p["after_all"]["p50_ms"] / p["before"]["p50_ms"], 2),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40, help="queries of each kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=None, help="processes hashing the rows (default: every CPU)")
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:  # a database of its own on the embedded server, with this checkout's SQL
        from psycopg import sql

        from simpg import schema
        from simpg.embedded import start_server

        server = start_server()
        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS simpg_bench_tail")
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("simpg_bench_tail")))
        dsn = server.get_uri("simpg_bench_tail")
        with psycopg.connect(dsn, autocommit=True) as conn:
            schema.install_plain(conn)
    print(json.dumps(run(dsn, args.rows, args.queries, args.seed, args.workers), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
