"""Where a shard's CPU goes per lookup through postgres_fdw (issue 18 item 5, docs/scaling.md).

One coordinator and one shard server (bench/pgserver.py's settings, 1 GB of shared
buffers each), 250,000 rows on the shard (k3:5, loaded as bench/shard_scale.py loads them).
The same 3,000 lookups, each way timed with the shard server's CPU per lookup
(bench/shard_scale.py's /proc accounting): a prepared lookup straight on the shard; the
query the coordinator sends the shard (its Remote SQL, from EXPLAIN VERBOSE), unprepared;
that query wrapped as postgres_fdw wraps it (START TRANSACTION ISOLATION LEVEL REPEATABLE
READ, DECLARE, FETCH, CLOSE, COMMIT: five statements); and the lookup through the
coordinator. Writes JSON with --json. Usage:

    python bench/shard_overhead.py --json /tmp/shard_overhead.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import pgserver  # noqa: E402
from bench.shard_scale import copy_rows, make_data, server_cpu_s  # noqa: E402
from simpg import bits, schema  # noqa: E402
from simpg.psycopg import SimHashColumn, configure_lookups  # noqa: E402
from simpg.shards import Shard, ShardedColumn, attach_shard, create_server, shard_ddl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    settings = {**pgserver.SETTINGS, "shared_buffers": "1GB", "huge_pages": "off", "max_connections": "40"}
    data = make_data(args.rows, 0.01, 3000)
    qs = data["queries"]
    coord, shard = pgserver.start(settings=settings), pgserver.start(settings=settings)
    schema.install_extension_files(sharedir=coord.sharedir)
    for server in (coord, shard):
        with psycopg.connect(server.dsn(), autocommit=True) as c:
            c.execute("CREATE DATABASE bench")
        with psycopg.connect(server.dsn("bench"), autocommit=True) as c:
            schema.install(c)
    conn = psycopg.connect(coord.dsn("bench"), autocommit=True)
    conn.execute("CREATE TABLE t (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
    conn.execute("SELECT simpg.create_index('t'::regclass, 'simhash', 3, 5, NULL)")
    statements = shard_ddl(conn, "t")
    with psycopg.connect(shard.dsn("bench"), autocommit=True) as sh:
        sh.execute(statements[0])
        copy_rows(sh, "t", data["ids"], data["fps"])
        sh.execute(statements[1])
        sh.execute("VACUUM ANALYZE t")
    create_server(conn, Shard("s1", shard.dsn("bench")))
    attach_shard(conn, "t", "s1", 1, 0)
    res: dict[str, Any] = {"rows": args.rows, "lookups": len(qs)}

    def run(name: str, lookup: Callable[[int], Any]) -> None:
        for q in qs[:200]:
            lookup(q)
        before, t = server_cpu_s(shard), time.perf_counter()
        for q in qs:
            lookup(q)
        wall = time.perf_counter() - t
        res[name] = {"shard_cpu_ms": (server_cpu_s(shard) - before) / len(qs) * 1e3, "wall_ms": wall / len(qs) * 1e3}
        print(f"{name}: shard CPU {res[name]['shard_cpu_ms']:.3f} ms, wall {res[name]['wall_ms']:.3f} ms per lookup",
              flush=True)

    direct = SimHashColumn.connect(shard.dsn("bench"), "t", "simhash")
    run("prepared lookup straight on the shard", direct.near)

    def remote_sql(q: int) -> str:
        statement = conn.execute("SELECT simpg.near_query('t', %s, 3)", [bits.to_db(q)]).fetchall()[0][0]
        plan = [r[0] for r in conn.execute("EXPLAIN (VERBOSE, COSTS OFF) " + statement).fetchall()]
        return next(line for line in plan if "Remote SQL" in line).split("Remote SQL: ", 1)[1]

    sqls = {q: remote_sql(q) for q in qs}
    raw = psycopg.connect(shard.dsn("bench"), autocommit=True)
    run("the coordinator's remote query, unprepared", lambda q: raw.execute(sqls[q], prepare=False).fetchall())

    def fdw_like(q: int) -> None:
        raw.execute("START TRANSACTION ISOLATION LEVEL REPEATABLE READ", prepare=False)
        raw.execute("DECLARE c1 CURSOR FOR " + sqls[q], prepare=False)
        raw.execute("FETCH 10000 FROM c1", prepare=False).fetchall()
        raw.execute("CLOSE c1", prepare=False)
        raw.execute("COMMIT", prepare=False)

    run("the same as postgres_fdw sends it (BEGIN, DECLARE, FETCH, CLOSE, COMMIT)", fdw_like)
    lookups = psycopg.connect(coord.dsn("bench"), autocommit=True)
    configure_lookups(lookups)
    index = ShardedColumn(lookups, "t", "simhash", key_column="id")
    run("through the coordinator", index.near)
    before = server_cpu_s(coord)
    for q in qs:
        index.near(q)
    res["coordinator_cpu_ms_through_coordinator"] = (server_cpu_s(coord) - before) / len(qs) * 1e3
    print(f"coordinator CPU per lookup through it: {res['coordinator_cpu_ms_through_coordinator']:.3f} ms")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    for server in (coord, shard):
        for stop in server._stop:
            stop()  # type: ignore[operator]


if __name__ == "__main__":
    main()
