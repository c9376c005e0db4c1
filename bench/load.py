"""Concurrent load on a simpg-indexed table, then an exact audit of what it left.

N clients (threads, one psycopg connection each) insert, update, delete and query a
table indexed by simpg.create_index for a fixed time. Each client remembers every row
it inserted and deleted; the audit then requires:

* the table holds exactly the seeded rows plus the inserted minus the deleted ones
  (no lost and no duplicated rows: ids and per-insert tokens are compared as sets);
* no deadlock and no other database error happened;
* every sampled simpg.near answer equals brute force over the same snapshot: the
  sample runs inside a REPEATABLE READ transaction, which reads the whole table's
  (id, fingerprint) in the same transaction and compares with a Python popcount;
* the prefix columns still match their fingerprints (PostgreSQL computes them; a
  broken generated column would corrupt answers silently).

Usage:
    python bench/load.py --dsn "host=... dbname=..." --clients 8 --seconds 180
    python bench/load.py --seconds 10 --json        # embedded server, machine-readable

Without --dsn (or $SIMPG_DSN) it uses simpg's embedded server. It creates and drops
its own table (--table, default simpg_load). Exit status 1 when the audit fails.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run from a checkout: python bench/load.py
    sys.path.insert(0, ROOT)

from simpg import bits  # noqa: E402

logger = logging.getLogger(__name__)

KINDS = ("insert", "update", "delete", "near", "verified_near", "report")
# share of each operation in a client's loop; verified samples come on top (--verify-every)
MIX = {"insert": 0.30, "update": 0.20, "delete": 0.10, "near": 0.39, "report": 0.01}


@dataclass
class ClientLog:
    """What one client did: its ids, its latencies, its failures."""

    inserted: dict[int, str] = field(default_factory=dict)  # id -> token
    deleted: set[int] = field(default_factory=set)
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: list[str] = field(default_factory=list)
    deadlocks: int = 0
    mismatches: list[str] = field(default_factory=list)
    verified: int = 0


def flip_bits(fp: int, rng: random.Random, most: int) -> int:
    """fp with 0..most random bits flipped: a near-duplicate."""
    for p in rng.sample(range(64), rng.randint(0, most)):
        fp ^= 1 << p
    return fp


def setup(dsn: str, table: str, rows: int, k: int, seed: int) -> tuple[dict[int, str], list[int]]:
    """Create and seed the table; returns {id: token} and the seeded fingerprints."""
    rng = random.Random(seed)
    ident = sql.Identifier(table)
    seeded: dict[int, str] = {}
    fps: list[int] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ident))
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, token uuid "
                "NOT NULL UNIQUE, "
                "simhash bigint NOT NULL, body text NOT NULL, updated integer NOT NULL DEFAULT 0)"
            ).format(ident)
        )
        with conn.cursor().copy(
            sql.SQL("COPY {} (token, simhash, body) FROM STDIN").format(ident)
        ) as copy:
            for i in range(rows):
                # one row in four is a near copy of an earlier one, so near() finds company
                fp = (
                    flip_bits(fps[rng.randrange(len(fps))], rng, k + 1)
                    if fps and i % 4 == 0
                    else rng.getrandbits(64)
                )
                fps.append(fp)
                copy.write_row((uuid.UUID(int=rng.getrandbits(128)), bits.to_db(fp), f"seed {i}"))
        for key, token in conn.execute(sql.SQL("SELECT id, token::text FROM {}").format(ident)):
            seeded[key] = token
        conn.execute("SELECT simpg.create_index(%s, 'simhash', %s)", [table, k])
        conn.execute(sql.SQL("ANALYZE {}").format(ident))
    return seeded, fps


def client(
    dsn: str,
    table: str,
    k: int,
    seed: int,
    stop_at: float,
    pool: list[int],
    max_id: list[int],
    verify_every: int,
    log: ClientLog,
) -> None:
    """One client's loop until stop_at."""
    rng = random.Random(seed)
    ident = sql.Identifier(table)
    insert = sql.SQL(
        "INSERT INTO {} (token, simhash, body) VALUES (%s, %s, %s) RETURNING id"
    ).format(ident)
    update = sql.SQL("UPDATE {} SET simhash = %s, updated = updated + 1 WHERE id = %s").format(
        ident
    )
    delete = sql.SQL("DELETE FROM {} WHERE id = %s RETURNING id").format(ident)
    near = sql.SQL("SELECT id FROM simpg.near(NULL::{}, %s, %s)").format(ident)
    everything = sql.SQL("SELECT id, simhash FROM {}").format(ident)
    kinds, weights = list(MIX), list(MIX.values())
    n = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < stop_at:
            n += 1
            kind = (
                "verified_near"
                if verify_every and n % verify_every == 0
                else rng.choices(kinds, weights)[0]
            )
            probe = (
                flip_bits(pool[rng.randrange(len(pool))], rng, k + 1)
                if pool
                else rng.getrandbits(64)
            )
            start = time.perf_counter()
            try:
                if kind == "insert":
                    token = str(uuid.UUID(int=rng.getrandbits(128)))
                    row = conn.execute(
                        insert, [token, bits.to_db(probe), f"client {seed}"]
                    ).fetchone()
                    assert row is not None
                    log.inserted[row[0]] = token
                    pool.append(probe)  # list.append is atomic under the GIL
                elif kind == "update":
                    conn.execute(update, [bits.to_db(probe), rng.randint(1, max_id[0])])
                elif kind == "delete":
                    gone = conn.execute(delete, [rng.randint(1, max_id[0])]).fetchone()
                    if gone is not None:
                        log.deleted.add(gone[0])
                elif kind == "near":
                    conn.execute(near, [bits.to_db(probe), k]).fetchall()
                elif kind == "report":
                    conn.execute(
                        "SELECT * FROM simpg.duplicate_stats(%s, %s)", [table, k]
                    ).fetchall()
                else:
                    with conn.transaction():
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        got = sorted(r[0] for r in conn.execute(near, [bits.to_db(probe), k]))
                        rows = conn.execute(everything).fetchall()
                    want = sorted(i for i, fp in rows if bits.hamming(fp, bits.to_db(probe)) <= k)
                    log.verified += 1
                    if got != want:
                        log.mismatches.append(
                            f"near({probe:#x}, {k}): got {len(got)} rows, brute force {len(want)}"
                        )
            except psycopg.errors.DeadlockDetected as err:
                log.deadlocks += 1
                log.errors.append(f"{kind}: {err}")
            except psycopg.Error as err:
                log.errors.append(f"{kind}: {type(err).__name__}: {err}")
            log.latencies[kind].append(time.perf_counter() - start)


def audit(
    dsn: str, table: str, k: int, seeded: dict[int, str], logs: list[ClientLog]
) -> dict[str, Any]:
    """Compare the table with what the clients did."""
    ident = sql.Identifier(table)
    inserted: dict[int, str] = {}
    deleted: set[int] = set()
    for log in logs:
        inserted.update(log.inserted)
        deleted |= log.deleted
    expected = {**seeded, **inserted}
    for key in deleted:
        expected.pop(key, None)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(sql.SQL("SELECT id, token::text FROM {}").format(ident)).fetchall()
        # simpg's own verifier: damaged indexes and stored prefixes that differ from permute()
        problems = [f"{problem}: {detail}" for problem, detail in conn.execute(
            "SELECT problem, detail FROM simpg.check(%s)", [table]).fetchall()]
    found = dict(rows)
    return {
        "rows": len(rows),
        "expected_rows": len(expected),
        "seeded": len(seeded),
        "inserted": len(inserted),
        "deleted": len(deleted),
        "duplicate_ids": len(rows) - len(found),
        "duplicate_tokens": len(rows) - len(set(found.values())),
        "lost_rows": len(set(expected) - set(found)),
        "unexpected_rows": len(set(found) - set(expected)),
        "token_mismatches": sum(
            found.get(key) != token for key, token in expected.items() if key in found
        ),
        "index_problems": problems,
        "deadlocks": sum(log.deadlocks for log in logs),
        "errors": [e for log in logs for e in log.errors][:20],
        "error_count": sum(len(log.errors) for log in logs),
        "verified_samples": sum(log.verified for log in logs),
        "mismatches": [m for log in logs for m in log.mismatches][:20],
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_load(
    dsn: str,
    *,
    clients: int = 8,
    seconds: float = 180,
    rows: int = 20_000,
    k: int = 3,
    table: str = "simpg_load",
    seed: int = 1,
    verify_every: int = 25,
    keep: bool = False,
) -> dict[str, Any]:
    """Seed, run the clients, audit; returns the figures and the audit."""
    seeded, fps = setup(dsn, table, rows, k, seed)
    pool = list(fps)
    max_id = [max(seeded) if seeded else 1]
    logs = [ClientLog() for _ in range(clients)]
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=client,
            name=f"client-{i}",
            args=(dsn, table, k, seed * 1000 + i, stop_at, pool, max_id, verify_every, logs[i]),
        )
        for i in range(clients)
    ]

    def grow() -> None:  # let updates and deletes reach newly inserted rows too
        while time.monotonic() < stop_at:
            known = [key for log in logs for key in list(log.inserted)]
            if known:
                max_id[0] = max(max_id[0], max(known))
            time.sleep(0.2)

    started = time.perf_counter()
    watcher = threading.Thread(target=grow, daemon=True)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    result = audit(dsn, table, k, seeded, logs)
    ops: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        lat = [x for log in logs for x in log.latencies[kind]]
        ops[kind] = {
            "count": len(lat),
            "per_second": len(lat) / elapsed,
            "p50_ms": percentile(lat, 50) * 1000,
            "p99_ms": percentile(lat, 99) * 1000,
        }
    total = sum(o["count"] for o in ops.values())
    result.update(
        {
            "clients": clients,
            "seconds": round(elapsed, 1),
            "k": k,
            "seed_rows": rows,
            "ops": ops,
            "total_ops": total,
            "total_per_second": total / elapsed,
        }
    )
    result["ok"] = (
        result["lost_rows"] == 0
        and result["unexpected_rows"] == 0
        and result["duplicate_ids"] == 0
        and result["duplicate_tokens"] == 0
        and result["token_mismatches"] == 0
        and result["deadlocks"] == 0
        and result["error_count"] == 0
        and not result["mismatches"]
        and not result["index_problems"]
        and result["rows"] == result["expected_rows"]
        and result["verified_samples"] > 0
    )
    if not keep:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
    return result


def format_report(result: dict[str, Any]) -> str:
    """A table people can scan."""
    lines = [
        f"{result['clients']} clients, {result['seconds']} s, k={result['k']}, "
        f"{result['seed_rows']} seeded rows",
        "",
        "| operation | count | ops/s | p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, o in result["ops"].items():
        lines.append(
            f"| {kind} | {o['count']} | {o['per_second']:.1f} | {o['p50_ms']:.2f} | "
            f"{o['p99_ms']:.2f} |"
        )
    lines.append(f"| all | {result['total_ops']} | {result['total_per_second']:.1f} | | |")
    lines += [
        "",
        f"audit: {result['rows']} rows (expected {result['expected_rows']}: {result['seeded']} "
        "seeded "
        f"+ {result['inserted']} inserted - {result['deleted']} deleted), "
        f"lost {result['lost_rows']}, unexpected {result['unexpected_rows']}, "
        f"duplicate ids {result['duplicate_ids']}, duplicate tokens {result['duplicate_tokens']}, "
        f"index problems {len(result['index_problems'])}",
        f"deadlocks {result['deadlocks']}, errors {result['error_count']}, "
        f"verified near() samples {result['verified_samples']}, mismatches "
        f"{len(result['mismatches'])}",
        "result: " + ("ok" if result["ok"] else "FAILED"),
    ]
    for line in result["errors"] + result["mismatches"]:
        lines.append(f"  {line}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get("SIMPG_DSN"),
        help="database to load (default: $SIMPG_DSN, else the embedded server)",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument(
        "--rows", type=int, default=20_000, help="rows seeded before the clients start"
    )
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--table", default="simpg_load")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--verify-every",
        type=int,
        default=25,
        help="every Nth operation of a client is a near() checked against brute force",
    )
    parser.add_argument("--keep", action="store_true", help="keep the table afterwards")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    result = run_load(
        dsn,
        clients=args.clients,
        seconds=args.seconds,
        rows=args.rows,
        k=args.k,
        table=args.table,
        seed=args.seed,
        verify_every=args.verify_every,
        keep=args.keep,
    )
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
