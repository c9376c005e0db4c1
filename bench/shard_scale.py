"""One server against a coordinator over 2 and 4 shard servers, in one run (issue 18, item 5).

Starts Debian PostgreSQL 15 servers with bench/pgserver.py's settings and ``--shared-buffers``
each (default 2 GB: a coordinator and 4 shards fit a 24 GB machine): the coordinator also
holds the one-server table. Loads the same N fingerprints (uniform random, ``--planted`` of
them copies of another row with 0 to 3 bits flipped, so that there are pairs) into:

* ``single``: one table on the coordinator, COPY then ``simpg.create_index`` (k=3, the layout
  ``simpg.default_levels`` picks for N);
* ``sharded<S>`` for each S of ``--shards``: a hash-partitioned table on the coordinator over
  S shard servers started for it (and stopped once it is measured), built by ``--load``:

  - ``copy`` (default): each shard's rows COPYed straight into its table. The rows are
    routed by PostgreSQL's own hash partitioning: COPY into an unlogged table on the
    coordinator partitioned like the sharded table (``PARTITION BY HASH (id)``, modulus S),
    then each partition COPYed to its shard (one thread per shard). Each shard's table is
    made by the first statement of ``simpg.shard_ddl`` (table and primary key), loaded,
    then indexed by its second (``simpg.create_index``, the coordinator's layout), all
    shards at once; then ``simpg.attach_shard`` checks and attaches it. A sample of keys
    is looked up by key through the coordinator (partition pruning) to prove the routing.
  - ``insert`` (also, into a second table, if asked): ``simpg.shards.create_shards``
    (the shards' B-trees exist first), then ``INSERT ... SELECT`` of 100,000 rows a
    statement through the coordinator (postgres_fdw batches of 1,000). Slow: ~70 s per
    million rows here; use it at small N.
  - ``coordcopy`` (also, if asked): COPY of ``--coordcopy-rows`` rows into the
    coordinator's partitioned table (PostgreSQL 15 sends them one row per round trip).

  ``--no-single`` skips the one-server table (for the largest runs): the answers are then
  checked against numpy, the shards' own answers and the planted pairs only.

Then, on each, the same lookups (queries: a row's fingerprint with two bits flipped): single
lookups from one client on a lookup connection (``configure_lookups``: generic plans), p50,
p99, lookups/s; lookups/s of ``--clients`` clients (threads, a connection each); batches of
100 (``near_many``); all pairs within 3 (``pairs``, which reads every row once); bytes per row
(table, primary key, prefix B-trees; summed over the shards); and, for the model of
docs/scaling.md, lookups straight on one shard server (its part of the answer) and
``--write-rows`` rows INSERTed into the loaded table. Every lookup answer and every pair
list is compared with the one-server answers; the CPU of every server (and of the client)
during the several-clients figure is read from /proc and given per lookup; the first ``--check`` lookups also with a
numpy popcount over all rows, and with the union of the shards' direct answers. The
one-server lookups are timed again at the end, to show how the machine's load moved.
Prints progress and tables; writes JSON with ``--json``. Usage:

    python bench/shard_scale.py --rows 10000000 --shards 2,4 --json /tmp/shard_scale.json
    python bench/shard_scale.py --rows 1000000 --shards 2,4 --load copy,insert,coordcopy
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import pgserver  # noqa: E402
from bench.shard_bench import percentile, throughput  # noqa: E402
from simpg import bits, schema  # noqa: E402
from simpg.psycopg import SimHashColumn, configure_lookups  # noqa: E402
from simpg.shards import Shard, ShardedColumn, attach_shard, create_server, create_shards, shard_ddl  # noqa: E402

T0 = time.perf_counter()


def say(message: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {message}", flush=True)


# -- data

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)
ROW = np.dtype([("n", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"), ("fp", ">i8")])


def copy_rows(conn: psycopg.Connection[Any], table: str, ids: np.ndarray, fps: np.ndarray,
              step: int = 1_000_000) -> None:
    """COPY (id, simhash) rows into ``table`` in binary, built by numpy (no Python loop per row)."""
    with conn.cursor().copy(f"COPY {table} (id, simhash) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(COPY_HEADER)
        for lo in range(0, len(ids), step):
            block = np.empty(min(step, len(ids) - lo), dtype=ROW)
            block["n"], block["l1"], block["l2"] = 2, 8, 8
            block["id"] = ids[lo:lo + step]
            block["fp"] = fps[lo:lo + step].view(np.int64)
            copy.write(block.tobytes())
        copy.write(COPY_TRAILER)


def make_data(n: int, planted: float, queries: int, seed: int = 18) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    copies = rng.choice(n, size=int(n * planted), replace=False)
    sources = rng.integers(0, n, size=len(copies))
    flips = np.zeros(len(copies), dtype=np.uint64)
    for _ in range(3):  # up to 3 bits flipped (a bit may be flipped twice: 0 to 3 in all)
        flips ^= np.uint64(1) << rng.integers(0, 64, size=len(copies)).astype(np.uint64)
    fps[copies] = fps[sources] ^ flips
    picks = rng.integers(0, n, size=queries)
    two = rng.integers(0, 64, size=(queries, 2))
    qs = [int(fps[i]) ^ (1 << int(a)) ^ (1 << int(b)) for i, (a, b) in zip(picks, two, strict=True)]
    ids = np.arange(1, n + 1, dtype=np.int64)
    # a copy whose source was itself overwritten by a copy may be far from it: not counted
    kept = ~np.isin(sources, copies)
    planted = {(int(min(a, b)), int(max(a, b)))
               for a, b in zip(ids[copies[kept]], ids[sources[kept]], strict=True) if a != b}
    return {"ids": ids, "fps": fps, "queries": qs, "planted": planted}


def brute_force(ids: np.ndarray, fps: np.ndarray, q: int, k: int = 3) -> list[tuple[int, int]]:
    d = np.bitwise_count(fps ^ np.uint64(q))
    return sorted((int(ids[i]), int(d[i])) for i in np.nonzero(d <= k)[0])


# -- measurements

CLOCK = os.sysconf("SC_CLK_TCK")


def server_cpu_s(server: Any) -> float:
    """CPU seconds of a server so far: its postmaster, its live processes, and the ones it has reaped.

    The postmaster's ``cutime``/``cstime`` (/proc/PID/stat) hold its exited children's time,
    so backends that came and went are counted too.
    """
    pid = int((Path(server.host).parent / "data" / "postmaster.pid").read_text().split()[0])

    def times(p: int, children: bool) -> float:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        # fields[0] is the state (stat field 3): utime, stime, cutime, cstime are fields 14-17
        return sum(int(x) for x in fields[11:15 if children else 13]) / CLOCK

    total = times(pid, True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    total += times(int(entry.name), True)
            except (OSError, ValueError):
                pass
    return total


def cpu_per_lookup(servers: dict[str, Any], run: Callable[[], float], seconds: float) -> tuple[float, dict[str, float]]:
    """``run()`` (a throughput figure, lookups/s over ``seconds``) and each server's CPU ms per lookup."""
    before = {name: server_cpu_s(s) for name, s in servers.items()}
    client = os.times()
    rate = run()
    client_after = os.times()
    lookups = rate * seconds
    cpu = {name: (server_cpu_s(s) - before[name]) / lookups * 1e3 for name, s in servers.items()}
    cpu["client"] = ((client_after.user + client_after.system) - (client.user + client.system)) / lookups * 1e3
    return rate, cpu

def timed_lookups(lookup: Callable[[int], Any], queries: list[int]) -> tuple[dict[str, float], list[Any]]:
    for q in queries[:200]:  # warm the caches and the prepared statements
        lookup(q)
    times, answers = [], []
    start = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        answers.append(sorted((int(a), int(b)) for a, b in lookup(q)))
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    return ({"p50_ms": percentile(times, 50) * 1e3, "p99_ms": percentile(times, 99) * 1e3,
             "mean_ms": float(np.mean(times)) * 1e3, "lookups_per_s": len(queries) / total}, answers)


def relation_bytes(conn: psycopg.Connection[Any], table: str) -> dict[str, int]:
    """Bytes of ``table``: heap (with TOAST and maps), primary key, the other (prefix) B-trees."""
    row = conn.execute(
        "SELECT pg_table_size(c.oid), "
        "coalesce(sum(pg_relation_size(i.indexrelid)) FILTER (WHERE i.indisprimary), 0), "
        "coalesce(sum(pg_relation_size(i.indexrelid)) FILTER (WHERE NOT i.indisprimary), 0) "
        "FROM pg_class AS c LEFT JOIN pg_index AS i ON i.indrelid = c.oid "
        "WHERE c.oid = %s::regclass GROUP BY c.oid", [table]).fetchall()[0]
    return {"heap": int(row[0]), "primary_key": int(row[1]), "prefix_btrees": int(row[2])}


def measure(name: str, out: dict[str, Any], near: Callable[[int], Any], make: Callable[[], Any],
            many: Callable[[list[int]], Any], pairs: Callable[[], Any], queries: list[int],
            clients: int, seconds: float, reference: dict[str, Any] | None,
            servers: dict[str, Any]) -> dict[str, Any]:
    """Time one configuration's lookups, batches and pairs; compare the answers with ``reference``."""
    res: dict[str, Any] = {}
    say(f"{name}: {len(queries)} lookups from one client")
    res["near"], answers = timed_lookups(near, queries)
    say(f"{name}: p50 {res['near']['p50_ms']:.3f} ms, p99 {res['near']['p99_ms']:.3f} ms, "
        f"{res['near']['lookups_per_s']:.0f}/s; {clients} clients for {seconds:.0f} s")
    res["lookups_per_s_1_client"] = throughput(make, queries, 1, seconds)
    res[f"lookups_per_s_{clients}_clients"], res["cpu_ms_per_lookup"] = cpu_per_lookup(
        servers, lambda: throughput(make, queries, clients, seconds), seconds)
    say(f"{name}: {res['lookups_per_s_1_client']:.0f}/s from 1 client, "
        f"{res[f'lookups_per_s_{clients}_clients']:.0f}/s from {clients}; CPU ms per lookup "
        + ", ".join(f"{k} {v:.3f}" for k, v in res["cpu_ms_per_lookup"].items()) + "; batches of 100")
    batch = queries[:1000]
    t = time.perf_counter()
    batched = [sorted((int(a), int(b)) for a, b in answer)
               for i in range(0, len(batch), 100) for answer in many(batch[i:i + 100])]
    res["near_many_100_ms_per_lookup"] = (time.perf_counter() - t) / len(batch) * 1e3
    say(f"{name}: {res['near_many_100_ms_per_lookup']:.3f} ms per lookup in batches; all pairs within 3")
    t = time.perf_counter()
    found = sorted((int(p.a), int(p.b)) for p in pairs())
    res["pairs"] = {"s": time.perf_counter() - t, "pairs": len(found)}
    say(f"{name}: {len(found):,} pairs in {res['pairs']['s']:.1f} s")
    assert batched == answers[:len(batch)], f"{name}: near_many differs from near"
    if reference is None:
        out["_answers"], out["_pairs"] = answers, found
    else:
        wrong = sum(a != b for a, b in zip(answers, out["_answers"], strict=True))
        assert wrong == 0, f"{name}: {wrong} lookups differ from the one-server answers"
        assert found == out["_pairs"], f"{name}: pairs differ from the one-server pairs"
        res["checked"] = f"{len(answers)} lookups and {len(found):,} pairs equal to one server's"
    return res


# -- shards

def start_servers(count: int, settings: dict[str, str]) -> list[Any]:
    servers = [pgserver.start(settings=settings) for _ in range(count)]
    for server in servers:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        with psycopg.connect(server.dsn("bench"), autocommit=True) as conn:
            schema.install(conn)
    return servers


def stop_servers(servers: list[Any]) -> None:
    for server in servers:
        for stop in server._stop:
            stop()


def build_by_copy(conn: psycopg.Connection[Any], table: str, shard_list: list[Shard], data: dict[str, Any],
                  blocks: int, inner: int | None) -> dict[str, float]:
    """Each shard's rows COPYed straight into its table, routed by PostgreSQL's hash partitioning."""
    n_shards = len(shard_list)
    steps: dict[str, float] = {}
    t = time.perf_counter()
    conn.execute(f"CREATE TABLE {table} (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
    conn.execute("SELECT simpg.create_index(%s::regclass, 'simhash', 3, %s, %s)", [table, blocks, inner])
    statements = shard_ddl(conn, table)
    assert len(statements) == 2 and statements[0].startswith("CREATE TABLE"), statements
    for shard in shard_list:
        create_server(conn, shard)
        with psycopg.connect(shard.dsn, autocommit=True) as remote:
            remote.execute(statements[0])  # the table and its primary key; the index after the load
    steps["setup"] = time.perf_counter() - t

    t = time.perf_counter()
    route = f"{table}_route"
    conn.execute(f"CREATE UNLOGGED TABLE {route} (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
    for r in range(n_shards):
        conn.execute(f"CREATE UNLOGGED TABLE {route}_{r} PARTITION OF {route} "
                     f"FOR VALUES WITH (MODULUS {n_shards}, REMAINDER {r})")
    copy_rows(conn, route, data["ids"], data["fps"])
    steps["route"] = time.perf_counter() - t
    say(f"{table}: rows routed in {steps['route']:.1f} s; COPY to the shards")

    def run_all(work: Callable[[int, Shard], None]) -> None:
        errors: list[BaseException] = []

        def guarded(r: int, shard: Shard) -> None:
            try:
                work(r, shard)
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=guarded, args=(r, s)) for r, s in enumerate(shard_list)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]

    def copy_shard(r: int, shard: Shard) -> None:
        with psycopg.connect(conn.info.dsn, autocommit=True) as src, \
                psycopg.connect(shard.dsn, autocommit=True) as dst:
            with src.cursor().copy(f"COPY {route}_{r} (id, simhash) TO STDOUT (FORMAT BINARY)") as out, \
                    dst.cursor().copy(f"COPY {table} (id, simhash) FROM STDIN (FORMAT BINARY)") as into:
                for block in out:
                    into.write(block)

    t = time.perf_counter()
    run_all(copy_shard)
    steps["copy_to_shards"] = time.perf_counter() - t
    say(f"{table}: COPY to the shards {steps['copy_to_shards']:.1f} s; simpg.create_index on each")

    def index_shard(r: int, shard: Shard) -> None:
        with psycopg.connect(shard.dsn, autocommit=True) as remote:
            remote.execute(statements[1])
            remote.execute(f"VACUUM ANALYZE {table}")

    t = time.perf_counter()
    run_all(index_shard)
    steps["index_shards"] = time.perf_counter() - t
    t = time.perf_counter()
    for r, shard in enumerate(shard_list):
        with conn.transaction():
            attach_shard(conn, table, shard.name, n_shards, r)
    steps["attach"] = time.perf_counter() - t
    conn.execute(f"DROP TABLE {route}")
    # every sampled key found by key through the coordinator (pruned to the one shard the
    # coordinator routes it to): the rows sit where PostgreSQL would have put them
    sample = data["ids"][:: max(1, len(data["ids"]) // 2000)].tolist()
    found = conn.execute(f"SELECT count(*) FROM {table} WHERE id = ANY(%s)", [sample]).fetchall()[0][0]
    assert found == len(sample), f"{table}: {found} of {len(sample)} sampled keys found by key"
    plan = "\n".join(r[0] for r in conn.execute(
        f"EXPLAIN (COSTS OFF) SELECT * FROM {table} WHERE id = %s", [sample[0]]).fetchall())
    assert plan.count("Foreign Scan") == 1, plan
    return steps


def build_by_insert(conn: psycopg.Connection[Any], table: str, shard_list: list[Shard], data: dict[str, Any],
                    blocks: int, inner: int | None) -> dict[str, float]:
    """simpg.shards.create_shards, then INSERT ... SELECT through the coordinator."""
    steps: dict[str, float] = {}
    t = time.perf_counter()
    conn.execute(f"CREATE TABLE {table} (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
    problems = create_shards(conn, table, "simhash", shard_list, k=3, blocks=blocks, inner_blocks=inner)
    assert problems == [], problems
    steps["setup"] = time.perf_counter() - t
    t = time.perf_counter()
    step = 100_000
    ids, fps = data["ids"], data["fps"]
    for lo in range(0, len(ids), step):
        conn.execute(f"INSERT INTO {table} (id, simhash) SELECT * FROM unnest(%s::bigint[], %s::bigint[])",
                     [ids[lo:lo + step].tolist(), fps[lo:lo + step].view(np.int64).tolist()])
        if lo and lo % 1_000_000 == 0:
            say(f"{table}: {lo:,} rows inserted ({lo / (time.perf_counter() - t):,.0f} rows/s)")
    steps["insert_through_coordinator"] = time.perf_counter() - t
    t = time.perf_counter()
    for shard in shard_list:
        with psycopg.connect(shard.dsn, autocommit=True) as remote:
            remote.execute(f"VACUUM ANALYZE {table}")
    steps["vacuum_analyze"] = time.perf_counter() - t
    return steps


def coordinator_copy_rate(conn: psycopg.Connection[Any], table: str, shard_list: list[Shard],
                          data: dict[str, Any], blocks: int, inner: int | None, rows: int) -> float:
    """Rows/s of COPY into the coordinator's partitioned table (PostgreSQL routes each row to its shard)."""
    conn.execute(f"CREATE TABLE {table} (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
    problems = create_shards(conn, table, "simhash", shard_list, k=3, blocks=blocks, inner_blocks=inner)
    assert problems == [], problems
    t = time.perf_counter()
    copy_rows(conn, table, data["ids"][:rows], data["fps"][:rows])
    rate = rows / (time.perf_counter() - t)
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == rows
    conn.execute(f"DROP TABLE {table}")
    for s in shard_list:
        with psycopg.connect(s.dsn, autocommit=True) as remote:
            remote.execute(f"DROP TABLE {table}")
    return rate


def write_rate(conn: psycopg.Connection[Any], table: str, n: int, rows: int) -> float:
    """Rows/s of INSERT ... SELECT of ``rows`` new rows (10,000 a statement), then deleted again."""
    rng = np.random.default_rng(99)
    fps = rng.integers(0, 2**64, size=rows, dtype=np.uint64).view(np.int64)
    ids = np.arange(n + 1, n + rows + 1, dtype=np.int64)
    t = time.perf_counter()
    for lo in range(0, rows, 10_000):
        conn.execute(f"INSERT INTO {table} (id, simhash) SELECT * FROM unnest(%s::bigint[], %s::bigint[])",
                     [ids[lo:lo + 10_000].tolist(), fps[lo:lo + 10_000].tolist()])
    rate = rows / (time.perf_counter() - t)
    conn.execute(f"DELETE FROM {table} WHERE id > %s", [n])
    if table == "single":
        conn.execute("VACUUM single")  # the shards' tables go with their servers
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--shards", default="2,4", help="shard counts to compare, e.g. 2,4")
    parser.add_argument("--load", default="copy",
                        help="copy (default); add insert to also build by INSERT through the coordinator, "
                             "coordcopy to time COPY into the coordinator's table on --coordcopy-rows rows")
    parser.add_argument("--coordcopy-rows", type=int, default=5000)
    parser.add_argument("--no-single", action="store_true",
                        help="skip the one-server table (answers then checked against numpy only)")
    parser.add_argument("--planted", type=float, default=0.01, help="share of rows that copy another row")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--check", type=int, default=100, help="lookups also checked against numpy")
    parser.add_argument("--clients", type=int, default=4, help="clients of the several-clients figure")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each throughput figure")
    parser.add_argument("--write-rows", type=int, default=20_000, help="rows INSERTed into the loaded tables")
    parser.add_argument("--shared-buffers", default="2GB", help="of every server")
    parser.add_argument("--max-wal-size", default=pgserver.SETTINGS["max_wal_size"],
                        help="of every server: lower it for the largest runs, where the WAL, not the data, "
                             "fills the disk while the indexes are built")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n = args.rows
    shard_counts = [int(s) for s in args.shards.split(",") if s]
    loads = args.load.split(",")
    assert set(loads) <= {"copy", "insert", "coordcopy"} and "copy" in loads, "--load: copy[,insert][,coordcopy]"
    settings = {**pgserver.SETTINGS, "shared_buffers": args.shared_buffers, "effective_cache_size": "8GB",
                "huge_pages": "off", "max_connections": "40", "max_wal_size": args.max_wal_size}
    out: dict[str, Any] = {
        "rows": n, "shards": shard_counts, "queries": args.queries, "clients": args.clients,
        "planted": args.planted, "settings": settings,
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "load_average_start": os.getloadavg()[0], "cpus": os.cpu_count(),
    }
    say(f"{n:,} rows, shards {shard_counts}, load {loads}; load average {os.getloadavg()[0]:.1f}")
    data = make_data(n, args.planted, args.queries)
    ids, fps, queries = data["ids"], data["fps"], data["queries"]
    say("numpy answers for the check")
    truth = [brute_force(ids, fps, q) for q in queries[:args.check]]

    coord = pgserver.start(settings=settings)
    schema.install_extension_files(sharedir=coord.sharedir)
    with psycopg.connect(coord.dsn(), autocommit=True) as c:
        c.execute("CREATE DATABASE bench")
    conn = psycopg.connect(coord.dsn("bench"), autocommit=True)
    schema.install(conn)
    levels = conn.execute("SELECT simpg.default_levels(3, %s)", [n]).fetchall()[0][0]
    out["layout"] = f"k3:{'x'.join(map(str, levels))}"
    blocks, inner = levels[0], (levels[1] if len(levels) > 1 else None)
    results: dict[str, Any] = {}

    # -- one server
    reference: dict[str, Any] | None = None
    if not args.no_single:
        say(f"single: COPY {n:,} rows")
        conn.execute("CREATE TABLE single (id bigint PRIMARY KEY, simhash bigint)")
        t = time.perf_counter()
        copy_rows(conn, "single", ids, fps)
        steps = {"copy": time.perf_counter() - t}
        say(f"single: COPY {steps['copy']:.1f} s; simpg.create_index ({out['layout']})")
        t = time.perf_counter()
        conn.execute("SELECT simpg.create_index('single', 'simhash', 3, %s, %s)", [blocks, inner])
        conn.execute("VACUUM ANALYZE single")
        steps["index"] = time.perf_counter() - t
        say(f"single: index {steps['index']:.1f} s")
        single = SimHashColumn.connect(coord.dsn("bench"), "single", "simhash")
        for q, hit in zip(queries, truth, strict=False):  # truth: the first --check
            assert sorted(single.near(q)) == hit, q
        res = measure("single", out, single.near,
                      lambda: SimHashColumn.connect(coord.dsn("bench"), "single", "simhash").near,
                      single.near_many, lambda: single.pairs(3), queries, args.clients, args.seconds, None,
                      {"coordinator": coord})
        res["build_s"] = steps
        res["bytes"] = relation_bytes(conn, "single")
        res["write_rows_per_s"] = write_rate(conn, "single", n, args.write_rows)
        results["single"] = res
        reference = out

    # -- coordinator over S shards
    for count in shard_counts:
        name = f"sharded{count}"
        say(f"{name}: starting {count} shard servers")
        servers = start_servers(count, settings)
        shard_list = [Shard(f"s{count}_{i + 1}", s.dsn("bench")) for i, s in enumerate(servers)]
        res = {}
        t = time.perf_counter()
        res["build_s"] = build_by_copy(conn, name, shard_list, data, blocks, inner)
        res["build_total_s"] = time.perf_counter() - t
        say(f"{name}: built by COPY to the shards in {res['build_total_s']:.1f} s: {res['build_s']}")
        if "insert" in loads:
            ins_list = [Shard(f"i{count}_{i + 1}", s.dsn("bench")) for i, s in enumerate(servers)]
            t = time.perf_counter()
            res["insert_build_s"] = build_by_insert(conn, f"{name}_ins", ins_list, data, blocks, inner)
            res["insert_build_total_s"] = time.perf_counter() - t
            total = conn.execute(f"SELECT count(*) FROM {name}_ins").fetchall()[0][0]
            assert total == n, total
            say(f"{name}: built by INSERT through the coordinator in {res['insert_build_total_s']:.1f} s")
            conn.execute(f"DROP TABLE {name}_ins")
            for s in ins_list:
                with psycopg.connect(s.dsn, autocommit=True) as remote:
                    remote.execute(f"DROP TABLE {name}_ins")
        if "coordcopy" in loads:
            cc_list = [Shard(f"c{count}_{i + 1}", s.dsn("bench")) for i, s in enumerate(servers)]
            res["coordinator_copy_rows_per_s"] = coordinator_copy_rate(
                conn, f"{name}_cc", cc_list, data, blocks, inner, args.coordcopy_rows)
            say(f"{name}: COPY into the coordinator's table: {res['coordinator_copy_rows_per_s']:,.0f} rows/s "
                f"({args.coordcopy_rows:,} rows)")
        bytes_: dict[str, int] = {"heap": 0, "primary_key": 0, "prefix_btrees": 0}
        per_shard_rows = []
        for s in shard_list:
            with psycopg.connect(s.dsn) as remote:
                for key, value in relation_bytes(remote, name).items():
                    bytes_[key] += value
                per_shard_rows.append(remote.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0])
        assert sum(per_shard_rows) == n, per_shard_rows
        res["bytes"], res["rows_per_shard"] = bytes_, per_shard_rows

        lookups = psycopg.connect(coord.dsn("bench"), autocommit=True)
        configure_lookups(lookups)
        index = ShardedColumn(lookups, name, "simhash", key_column="id")
        directs = [SimHashColumn.connect(s.dsn, name, "simhash") for s in shard_list]
        for q, hit in zip(queries, truth, strict=False):  # truth: the first --check
            assert sorted(index.near(q)) == hit, q
            assert sorted(x for d in directs for x in d.near(q)) == hit, q

        def make(dsn: str = coord.dsn("bench"), table: str = name) -> Any:
            c = psycopg.connect(dsn, autocommit=True)
            configure_lookups(c)
            return ShardedColumn(c, table, "simhash", key_column="id").near

        res.update(measure(name, out, index.near, make, index.near_many, lambda index=index: index.pairs(3), queries,
                           args.clients, args.seconds, reference,
                           {"coordinator": coord, **{s.name: srv for s, srv in zip(shard_list, servers, strict=True)}}))
        if reference is None:
            reference = out  # the first sharded table's answers stand in for the one server's
            missing = data["planted"] - {(min(a, b), max(a, b)) for a, b in out["_pairs"]}
            assert not missing, f"{name}: {len(missing)} planted pairs missing"
            res["checked"] = (f"no one-server table: {args.check} lookups checked against numpy and the shards' "
                              f"own answers, all {len(data['planted']):,} planted pairs found")
        # one shard's part of a lookup, straight on the shard server (no coordinator)
        direct, _ = timed_lookups(directs[0].near, queries)
        def direct_make(dsn: str = shard_list[0].dsn, table: str = name) -> Any:
            return SimHashColumn.connect(dsn, table, "simhash").near

        direct["lookups_per_s_1_client"] = throughput(direct_make, queries, 1, args.seconds)
        direct[f"lookups_per_s_{args.clients}_clients"], cpu = cpu_per_lookup(
            {"shard": servers[0]}, lambda: throughput(direct_make, queries, args.clients, args.seconds),
            args.seconds)
        direct["cpu_ms_per_lookup"] = cpu
        res["one_shard_direct"] = direct
        say(f"{name}: straight on shard 1: p50 {direct['p50_ms']:.3f} ms, {direct['lookups_per_s']:.0f}/s")
        res["write_rows_per_s"] = write_rate(conn, name, n, args.write_rows)
        say(f"{name}: INSERT through the coordinator: {res['write_rows_per_s']:,.0f} rows/s")
        res["plan"] = [r[0] for r in conn.execute(
            "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) " + conn.execute(
                "SELECT simpg.near_query(%s, %s, 3)", [name, bits.to_db(queries[0])]).fetchall()[0][0])]
        for d in directs:
            d.close()
        lookups.close()
        results[name] = res
        conn.execute(f"DROP TABLE {name}")  # the foreign partitions; the shards go with their servers
        stop_servers(servers)
        say(f"{name}: shard servers stopped")

    if not args.no_single:
        single.close()
        single = SimHashColumn.connect(coord.dsn("bench"), "single", "simhash")
        results["single"]["near_again"], _ = timed_lookups(single.near, queries)
        single.close()
    conn.close()
    stop_servers([coord])
    out.pop("_answers", None)
    out.pop("_pairs", None)
    out["results"] = results
    out["finished"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    out["load_average_end"] = os.getloadavg()[0]
    report(out, args.clients)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
        say(f"wrote {args.json}")


def report(out: dict[str, Any], clients: int) -> None:
    results = out["results"]
    names = list(results)
    n = out["rows"]

    def title(name: str) -> str:
        return "one server" if name == "single" else f"coordinator + {name.removeprefix('sharded')} shards"

    def build(r: dict[str, Any]) -> float:
        return r["build_total_s"] if "build_total_s" in r else sum(r["build_s"].values())

    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("lookup p50 (ms)", lambda r: f"{r['near']['p50_ms']:.3f}"),
        ("lookup p99 (ms)", lambda r: f"{r['near']['p99_ms']:.3f}"),
        ("lookups/s, 1 client", lambda r: f"{r['lookups_per_s_1_client']:,.0f}"),
        (f"lookups/s, {clients} clients", lambda r: f"{r[f'lookups_per_s_{clients}_clients']:,.0f}"),
        (f"CPU ms per lookup ({clients} clients): coordinator",
         lambda r: f"{r['cpu_ms_per_lookup']['coordinator']:.3f}"),
        ("CPU ms per lookup: shards (sum)",
         lambda r: f"{sum(v for k, v in r['cpu_ms_per_lookup'].items() if k not in ('coordinator', 'client')):.3f}"
         if len(r["cpu_ms_per_lookup"]) > 2 else "-"),
        ("CPU ms per lookup: client (Python)", lambda r: f"{r['cpu_ms_per_lookup']['client']:.3f}"),
        ("batches of 100, ms per lookup", lambda r: f"{r['near_many_100_ms_per_lookup']:.3f}"),
        ("build (s)", lambda r: f"{build(r):.1f}"),
        ("build by INSERT through the coordinator (s)",
         lambda r: f"{r['insert_build_total_s']:.1f}" if "insert_build_total_s" in r else "-"),
        ("COPY into the coordinator's table (rows/s)",
         lambda r: f"{r['coordinator_copy_rows_per_s']:,.0f}" if "coordinator_copy_rows_per_s" in r else "-"),
        ("bytes per row (all)", lambda r: f"{sum(r['bytes'].values()) / n:.1f}"),
        ("  of which prefix B-trees", lambda r: f"{r['bytes']['prefix_btrees'] / n:.1f}"),
        ("all pairs within 3 (s)", lambda r: f"{r['pairs']['s']:.2f}"),
        ("INSERT into the loaded table (rows/s)", lambda r: f"{r['write_rows_per_s']:,.0f}"),
        ("one shard alone: p50 (ms)",
         lambda r: f"{r['one_shard_direct']['p50_ms']:.3f}" if "one_shard_direct" in r else "-"),
        ("one shard alone: lookups/s, 1 client",
         lambda r: f"{r['one_shard_direct']['lookups_per_s_1_client']:,.0f}" if "one_shard_direct" in r else "-"),
        (f"one shard alone: lookups/s, {clients} clients",
         lambda r: f"{r['one_shard_direct'][f'lookups_per_s_{clients}_clients']:,.0f}"
         if "one_shard_direct" in r else "-"),
        ("one shard alone: CPU ms per lookup, server",
         lambda r: f"{r['one_shard_direct']['cpu_ms_per_lookup']['shard']:.3f}" if "one_shard_direct" in r else "-"),
    ]
    print()
    print(f"{n:,} rows, layout {out['layout']}, {out['queries']} lookups, {out['started']} to {out['finished']}, "
          f"load average {out['load_average_start']:.1f} at start and {out['load_average_end']:.1f} at end")
    print("| | " + " | ".join(title(x) for x in names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(results[x]) for x in names) + " |")
    first = results[names[0]]
    print(f"pairs: {first['pairs']['pairs']:,}")
    for x in names:
        r = results[x]
        extra = f"; rows per shard {r['rows_per_shard']}" if "rows_per_shard" in r else ""
        print(f"{x} build: " + ", ".join(f"{k} {v:.1f} s" for k, v in r["build_s"].items()) + extra)
        if "checked" in r:
            print(f"{x}: {r['checked']}")
    if "single" in results and "near_again" in results["single"]:
        again = results["single"]["near_again"]
        print(f"one server again at the end: p50 {again['p50_ms']:.3f} ms, p99 {again['p99_ms']:.3f} ms")


if __name__ == "__main__":
    main()
