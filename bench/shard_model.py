"""Project 1B and 10B rows on N shard machines from a bench/shard_scale.py run (issue 18, item 5).

Nothing here is measured: it reads the per-row and per-shard figures a ``shard_scale.py --json``
run measured and multiplies them out, with the formulas printed beside each column
(docs/scaling.md "PostgreSQL shards: measured and projected" explains them). The layout for
R rows is the planner's (``simpg.planner.recommend(3, R)``, what ``simpg shard create --rows R``
picks); the bytes of its B-trees and heap are the measured bytes per prefix table times its
tables. Usage:

    python bench/shard_model.py /tmp/shard_scale.json
    python bench/shard_model.py /tmp/shard_scale.json --json /tmp/shard_model.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from simpg import planner
from simpg.layout import Layout

GB = 1e9
#: network round trip between coordinator and shards assumed by the latency bound (not measured here)
RTT_MS = 0.2
#: cores per shard machine in the lookups/s example
SHARD_CORES = 8


def measured(run: dict[str, Any]) -> dict[str, Any]:
    """The per-row and per-shard constants of one shard_scale.py run."""
    n = run["rows"]
    res = run["results"]
    k, levels = run["layout"].removeprefix("k").split(":")  # "k3:5" or "k3:4x4"
    tables = Layout(int(k), tuple(int(x) for x in levels.split("x"))).tables
    shard_names = sorted((k for k in res if k.startswith("sharded")), key=lambda k: int(k.removeprefix("sharded")))
    largest = res[shard_names[-1]]
    b = largest["bytes"]
    clients = run["clients"]
    m: dict[str, Any] = {
        "rows": n, "layout": run["layout"], "tables": tables,
        "btree_bytes_per_row_per_table": b["prefix_btrees"] / n / tables,
        "heap_bytes_per_row": b["heap"] / n, "pk_bytes_per_row": b["primary_key"] / n,
        "shard_p50_ms": {int(k.removeprefix("sharded")): res[k]["near"]["p50_ms"] for k in shard_names},
        "shard_p99_ms": {int(k.removeprefix("sharded")): res[k]["near"]["p99_ms"] for k in shard_names},
        "coordinator_lookups_per_s": {int(k.removeprefix("sharded")): res[k][f"lookups_per_s_{clients}_clients"]
                                      for k in shard_names},
        "one_shard_p50_ms": largest["one_shard_direct"]["p50_ms"],
        "one_shard_lookups_per_s": largest["one_shard_direct"][f"lookups_per_s_{clients}_clients"],
        "one_shard_rows": largest["rows_per_shard"][0],
        # aggregate rates of all shards of this run, on this machine's 2 cores
        "route_rows_per_s": n / largest["build_s"]["route"],
        "copy_rows_per_s": n / largest["build_s"]["copy_to_shards"],
        "index_rows_per_s": n / largest["build_s"]["index_shards"],
        "pairs_rows_per_s": n / largest["pairs"]["s"],
        "clients": clients,
    }
    if "single" in res:
        m["single_p50_ms"] = res["single"]["near"]["p50_ms"]
    # CPU per lookup (the several-clients figure): the coordinator's, and each shard's
    m["coordinator_cpu_ms"] = {int(k.removeprefix("sharded")): res[k]["cpu_ms_per_lookup"]["coordinator"]
                               for k in shard_names}
    m["shard_cpu_ms_each"] = {
        int(k.removeprefix("sharded")): float(np.mean([v for c, v in res[k]["cpu_ms_per_lookup"].items()
                                                       if c not in ("coordinator", "client")]))
        for k in shard_names}
    m["one_shard_direct_cpu_ms"] = largest["one_shard_direct"]["cpu_ms_per_lookup"]["shard"]
    if "single" in res:
        m["single_cpu_ms"] = res["single"]["cpu_ms_per_lookup"]["coordinator"]
    counts = sorted(m["shard_p50_ms"])
    if len(counts) >= 2:
        m["latency_fit_ms"] = fit(m["shard_p50_ms"])
        m["coordinator_cpu_fit_ms"] = fit(m["coordinator_cpu_ms"])
    return m


def fit(by_shards: dict[int, float]) -> dict[str, float]:
    """``fixed + per_shard * N`` through the fewest and the most shards measured."""
    lo, hi = min(by_shards), max(by_shards)
    slope = (by_shards[hi] - by_shards[lo]) / (hi - lo)
    return {"fixed": by_shards[lo] - slope * lo, "per_shard": slope}


def project(m: dict[str, Any], rows: int, machines: int) -> dict[str, Any]:
    layout = planner.recommend(3, rows)
    t = layout.tables
    per_shard = rows / machines
    btree = m["btree_bytes_per_row_per_table"] * t
    heap = m["heap_bytes_per_row"] + 8 * (t - m["tables"])  # 8 bytes per stored prefix column
    design = next(d for d in planner.plan(3, rows) if d.layout == layout)
    out = {
        "rows": rows, "machines": machines, "layout": layout.name, "tables": t,
        "rows_per_shard": per_shard,
        "bytes_per_row": btree + heap + m["pk_bytes_per_row"],
        "disk_per_shard_gb": per_shard * (btree + heap + m["pk_bytes_per_row"]) / GB,
        "btrees_per_shard_gb": per_shard * btree / GB,
        "heap_per_shard_gb": per_shard * heap / GB,
        "candidates_per_lookup": design.expected_candidates,
        "candidates_per_shard": design.expected_candidates / machines,
        "remote_queries_per_lookup": machines,
        # every lookup reaches every shard, so a shard serves every lookup of the cluster:
        # lookups/s of the cluster = cores of one shard / its CPU per lookup (measured at the
        # largest N here; its work is its part of the probes, about the same at any N)
        "lookups_per_s_per_shard_core": 1e3 / m["shard_cpu_ms_each"][max(m["shard_cpu_ms_each"])],
        "index_build_s": per_shard * t / m["tables"] / m["index_rows_per_s"],
        "copy_s": per_shard / m["copy_rows_per_s"],
        "route_through_one_coordinator_s": rows / m["route_rows_per_s"],
        "pairs_through_coordinator_s": rows / m["pairs_rows_per_s"],
        "pairs_client_memory_gb": rows * 16 / GB,
    }
    if "latency_fit_ms" in m:
        cpu = m["coordinator_cpu_fit_ms"]
        out["coordinator_cpu_ms_per_lookup"] = cpu["fixed"] + cpu["per_shard"] * machines
        out["lookups_per_s_per_coordinator_core"] = 1e3 / out["coordinator_cpu_ms_per_lookup"]
        # postgres_fdw opens each shard's transaction and cursor one shard after another:
        # at least 2 round trips per shard in series, plus the coordinator's and a shard's CPU
        out["lookup_ms_lower_bound"] = (2 * machines * RTT_MS + out["coordinator_cpu_ms_per_lookup"]
                                        + m["shard_cpu_ms_each"][max(m["shard_cpu_ms_each"])])
        out[f"lookups_per_s_{SHARD_CORES}_core_shards"] = SHARD_CORES * out["lookups_per_s_per_shard_core"]
        out["coordinator_cores_for_that"] = (out[f"lookups_per_s_{SHARD_CORES}_core_shards"]
                                             * out["coordinator_cpu_ms_per_lookup"] / 1e3)
    return out


def label(rows: int) -> str:
    return f"{rows // 10**9}B" if rows % 10**9 == 0 else f"{rows:,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="JSON written by bench/shard_scale.py --json")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    run = json.loads(args.run.read_text())
    m = measured(run)
    print(f"measured ({run['rows']:,} rows, {run['layout']}, {run['started']}):")
    for key, value in m.items():
        print(f"  {key}: {value if not isinstance(value, float) else round(value, 3)}")
    cases = [(10**9, 4), (10**9, 8), (10**9, 16), (10**10, 16), (10**10, 32), (10**10, 64)]
    projections = [project(m, r, n) for r, n in cases]
    print()
    print("| rows | machines N | layout | rows per shard | bytes per row | disk per shard (GB) "
          "| prefix B-trees per shard (GB) | heap per shard (GB) | candidates per lookup (per shard) "
          "| remote queries per lookup | index build per shard (s) | COPY per shard (s) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in projections:
        print(f"| {label(p['rows'])} | {p['machines']} | {p['layout']} | {p['rows_per_shard'] / 1e6:,.0f}M "
              f"| {p['bytes_per_row']:.0f} | {p['disk_per_shard_gb']:,.0f} | {p['btrees_per_shard_gb']:,.0f} "
              f"| {p['heap_per_shard_gb']:,.0f} | {p['candidates_per_lookup']:.1f} ({p['candidates_per_shard']:.2f}) "
              f"| {p['remote_queries_per_lookup']} | {p['index_build_s']:,.0f} | {p['copy_s']:,.0f} |")
    print()
    print(f"| rows | machines N | lookup ≥ 2·N·RTT + c(N) + s, RTT {RTT_MS} ms (ms) | coordinator CPU c(N) (ms) "
          f"| lookups/s per shard core, 1/s (the cluster's, whatever N) | lookups/s with {SHARD_CORES}-core shards "
          "| coordinator cores for that | routing through one coordinator (s) | pairs through the coordinator (s) "
          "| pairs client memory (GB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    nan = float("nan")
    for p in projections:
        print(f"| {label(p['rows'])} | {p['machines']} | {p.get('lookup_ms_lower_bound', nan):.1f} "
              f"| {p.get('coordinator_cpu_ms_per_lookup', nan):.2f} "
              f"| {p['lookups_per_s_per_shard_core']:,.0f} "
              f"| {p.get(f'lookups_per_s_{SHARD_CORES}_core_shards', nan):,.0f} "
              f"| {p.get('coordinator_cores_for_that', nan):.0f} | {p['route_through_one_coordinator_s']:,.0f} "
              f"| {p['pairs_through_coordinator_s']:,.0f} | {p['pairs_client_memory_gb']:,.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"measured": m, "projections": projections}, indent=1))


if __name__ == "__main__":
    main()
