"""Exactness at scale through raw SQL, as a database owner without superuser.

Starts Debian's PostgreSQL 15 (as an unprivileged OS user when run as root), creates a
role that owns a database but is not a superuser, and as that role: CREATE EXTENSION
simpg, loads N random fingerprints with planted neighbours, runs simpg.create_index
with the default layout, then checks simpg.near against a numpy brute force for
queries that were never loaded, and that every plan uses the prefix indexes.

    python3 bench/exactness_sql.py --rows 1000000 --queries 200

Prints one JSON object (timings, layout, mismatches: must be 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simpg import bits, schema  # noqa: E402
from tests import servers  # noqa: E402

ROLE = "simpg_owner"


def popcount64(x: np.ndarray) -> np.ndarray:
    """Bit count of uint64 values (numpy >= 2 has bitwise_count)."""
    return np.bitwise_count(x).astype(np.int64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    corpus = rng.integers(0, 2**64, size=args.rows, dtype=np.uint64)
    queries = rng.integers(0, 2**64, size=args.queries, dtype=np.uint64)
    # plant neighbours of each query at distances 0..k+1 (k+1 must not match)
    planted = []
    for q in queries:
        for d in range(args.k + 2):
            flips = rng.choice(64, size=d, replace=False)
            mask = np.uint64(0)
            for f in flips:
                mask |= np.uint64(1) << np.uint64(int(f))
            planted.append(q ^ mask)
    corpus[rng.choice(args.rows, size=len(planted), replace=False)] = np.array(planted, dtype=np.uint64)

    server = servers.start_debian(15)
    schema.install_extension_files(sharedir=server.sharedir)
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        admin.execute(f"CREATE DATABASE {ROLE} OWNER {ROLE}")
    report: dict[str, object] = {"rows": args.rows, "queries": args.queries, "k": args.k, "server": "PostgreSQL 15"}
    with psycopg.connect(server.dsn(ROLE, user=ROLE), autocommit=True) as conn:
        report["superuser"] = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
        conn.execute("CREATE EXTENSION simpg")
        conn.execute("CREATE TABLE articles (id bigint PRIMARY KEY, simhash bigint NOT NULL)")
        t0 = time.perf_counter()
        signed = corpus.view(np.int64)
        with conn.cursor().copy("COPY articles (id, simhash) FROM STDIN") as copy:
            for i, fp in enumerate(signed.tolist()):
                copy.write_row((i, fp))
        report["load_s"] = round(time.perf_counter() - t0, 2)
        conn.execute("ANALYZE articles")
        t0 = time.perf_counter()
        row = conn.execute(
            "SELECT levels, cardinality(prefix_columns) FROM simpg.create_index('articles', 'simhash', %s)", [args.k]
        ).fetchone()
        report["create_index_s"] = round(time.perf_counter() - t0, 2)
        report["levels"], report["tables"] = row
        mismatches, seq_scans, found, latencies = 0, 0, 0, []
        for q in queries:
            qs = bits.to_db(int(q))
            expected = sorted(np.nonzero(popcount64(corpus ^ q) <= args.k)[0].tolist())
            t0 = time.perf_counter()
            got = sorted(r[0] for r in conn.execute("SELECT id FROM simpg.near(NULL::articles, %s, %s)",
                                                    [qs, args.k]).fetchall())
            latencies.append(time.perf_counter() - t0)
            mismatches += got != expected
            found += len(got)
            query = conn.execute("SELECT simpg.near_query('articles', %s, %s)", [qs, args.k]).fetchone()[0]
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query).fetchall())
            seq_scans += "Seq Scan" in plan
        report.update(mismatches=mismatches, plans_with_seq_scan=seq_scans, rows_found=found,
                      near_ms_p50=round(float(np.percentile(latencies, 50)) * 1000, 3),
                      near_ms_p99=round(float(np.percentile(latencies, 99)) * 1000, 3))
    print(json.dumps(report, indent=2))
    return 0 if mismatches == 0 and seq_scans == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
