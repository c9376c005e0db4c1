"""All pairs within k on Spark (local[2]) vs ``simpg find-all`` vs the numpy engine, side by side in one run.

For each size: uniform random fingerprints with planted neighbours at distances 0 to
k+1 (bench/generate.py), written once as Parquet (for Spark) and as decimal text (for
``simpg find-all``). Then, each in its own process, one after the other:

  numpy reference   simpg.allpairs.pair_chunks on the array in memory (no parsing, no output)
  simpg find-all    the CLI: reads the text, writes JSON lines (--lines)
  spark local[2]    simpg.spark: Parquet in, Parquet of (id_a, id_b, distance) out

and reports wall seconds, peak memory of the process tree (sampled from /proc every
0.5 s: for Spark the JVM and its Python workers), pairs found (all three must agree
exactly: the pair sets are compared), and for Spark its shuffle bytes and per-stage,
per-task figures from Spark's REST API, the measured basis of docs/scaling.md.
Progress (elapsed time and memory of the running variant, and Spark's stage progress
bar) is printed to stderr while it runs.

Usage:
    python bench/spark_bench.py --rows 1000000                      # about 2 minutes
    python bench/spark_bench.py --rows 10000000 --rows 30000000      # the docs/benchmarks.md run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"


# -- memory of a process tree -----------------------------------------------------------------


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def measured(name: str, cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd``, sampling its tree's memory; its last stdout line is a JSON result."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        last = 0.0
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            now = time.perf_counter() - started
            if now - last >= 15:
                print(f"\n[{name}] {now:.0f} s, {peak / 2**30:.2f} GiB peak", file=sys.stderr, flush=True)
                last = now
            done.wait(0.5)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    done.set()
    thread.join()
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{name} failed with status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result.update(variant=name, seconds=seconds, peak_rss=peak)
    print(f"[{name}] done: {seconds:.1f} s, {peak / 2**30:.2f} GiB peak", file=sys.stderr, flush=True)
    return result


# -- the variants (run as: spark_bench.py --worker NAME ...) -------------------------------------


def _pair_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairs of 1-based ids as one sortable key (ids < 2**31)."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return np.sort(lo.astype(np.int64) << 31 | hi.astype(np.int64))


def worker_numpy(rows: int, k: int, out: Path) -> dict[str, Any]:
    from bench import generate
    from simpg import allpairs

    fps = generate.load(rows, k=k).fps
    started = time.perf_counter()
    chunks = list(allpairs.pair_chunks(fps, k))
    seconds = time.perf_counter() - started
    i = np.concatenate([c[0] for c in chunks]) + 1
    j = np.concatenate([c[1] for c in chunks]) + 1
    np.save(out, _pair_keys(i, j))
    return {"pairs": int(len(i)), "engine_seconds": seconds}


def worker_findall(rows: int, k: int, text: Path, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "simpg", "find-all", "-d", str(k), "-i", str(text), "-o",
                    str(out), "--lines"], check=True)
    seconds = time.perf_counter() - started
    with open(out, "rb") as f:
        data = f.read().replace(b"[", b" ").replace(b"]", b" ").replace(b",", b" ")
    ids = np.array(data.split(), dtype=np.int64).reshape(-1, 2)
    np.save(out.with_suffix(".npy"), _pair_keys(ids[:, 0], ids[:, 1]))
    return {"pairs": int(len(ids)), "engine_seconds": seconds}


def _rest(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def worker_spark(rows: int, k: int, parquet: Path, out: Path, memory: str, partitions: int | None,
                 ) -> dict[str, Any]:
    import shutil

    import pyarrow.parquet as pq

    from simpg.spark import engine, io, session

    spark = session("local[2]", {"spark.driver.memory": memory, "spark.ui.enabled": "true",
                                 "spark.ui.showConsoleProgress": "true"})
    spark.sparkContext.setLogLevel("ERROR")
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    prepared = engine.prepare(io.read_file(spark, str(parquet)))
    t1 = time.perf_counter()
    layout = engine.spark_layout(k, prepared.distinct_count)
    result = engine.pairs(prepared, k, layout, partitions=partitions)
    io.write_file(result, str(out), "parquet")
    t2 = time.perf_counter()
    table = pq.read_table(out)
    keys = _pair_keys(table.column("id_a").to_numpy(), table.column("id_b").to_numpy())
    np.save(out.with_suffix(".npy"), keys)
    sc = spark.sparkContext
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    stages = []
    for st in _rest(f"{base}/stages"):
        if st["status"] != "COMPLETE":
            continue
        summary = _rest(f"{base}/stages/{st['stageId']}/{st['attemptId']}/taskSummary?quantiles=0.5,1.0")
        stages.append({
            "stage": st["stageId"], "name": st["name"][:60], "tasks": st["numTasks"],
            "executor_seconds": st["executorRunTime"] / 1000, "input_records": st["inputRecords"],
            "shuffle_read_bytes": st["shuffleReadBytes"], "shuffle_read_records": st["shuffleReadRecords"],
            "shuffle_write_bytes": st["shuffleWriteBytes"], "shuffle_write_records": st["shuffleWriteRecords"],
            "output_records": st["outputRecords"], "spill_disk_bytes": st["diskBytesSpilled"],
            "task_seconds_median": summary["executorRunTime"][0] / 1000,
            "task_seconds_max": summary["executorRunTime"][1] / 1000,
        })
    spark.stop()
    return {"pairs": int(len(keys)), "engine_seconds": t2 - t0, "prepare_seconds": t1 - t0,
            "layout": layout.name, "tables": layout.tables, "distinct": prepared.distinct_count,
            "shuffle_write_bytes": sum(s["shuffle_write_bytes"] for s in stages), "stages": stages}


# -- the run ----------------------------------------------------------------------------------


def prepare_files(rows: int, k: int) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench import generate

    parquet = DATA / f"spark-{rows}-k{k}.parquet"
    text = DATA / f"spark-{rows}-k{k}.txt"
    if parquet.exists() and text.exists():
        return parquet, text
    fps = generate.load(rows, k=k).fps
    ids = np.arange(1, rows + 1, dtype=np.int64)
    pq.write_table(pa.table({"id": ids, "fp": fps}), parquet, row_group_size=1 << 20)
    tmp = text.with_suffix(".tmp")
    with open(tmp, "w") as f:
        step = 1 << 20
        for start in range(0, rows, step):
            f.write("\n".join(map(str, fps[start:start + step].view(np.uint64).tolist())) + "\n")
    tmp.rename(text)
    return parquet, text


def gib(n: float) -> str:
    return f"{n / 2**30:.2f}"


def report(rows: int, k: int, results: list[dict[str, Any]]) -> str:
    base = next(r for r in results if r["variant"] == "numpy reference")
    lines = [f"### all pairs within k={k}, {rows:,} fingerprints\n",
             "| variant | seconds | / numpy | peak memory GiB | shuffle GiB | pairs | same pairs as numpy |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        shuffle = gib(r["shuffle_write_bytes"]) if "shuffle_write_bytes" in r else ""
        lines.append(f"| {r['variant']} | {r['seconds']:.1f} | {r['seconds'] / base['seconds']:.2f}x | "
                     f"{gib(r['peak_rss'])} | {shuffle} | {r['pairs']:,} | {r['same']} |")
    spark = next((r for r in results if r["variant"] == "spark local[2]"), None)
    if spark:
        lines += ["", f"Spark: layout {spark['layout']} ({spark['tables']} tables), {spark['distinct']:,} distinct "
                      f"fingerprints, reading and caching {spark['prepare_seconds']:.1f} s.", "",
                  "| stage | tasks | executor s | median task s | max task s | input rows | shuffle read rows "
                  "| shuffle read MiB | shuffle write MiB | spill MiB |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in sorted(spark["stages"], key=lambda s: s["stage"]):
            if s["executor_seconds"] < 0.5:
                continue
            lines.append(f"| {s['stage']} {s['name']} | {s['tasks']} | {s['executor_seconds']:.1f} | "
                         f"{s['task_seconds_median']:.2f} | {s['task_seconds_max']:.2f} | {s['input_records']:,} | "
                         f"{s['shuffle_read_records']:,} | {s['shuffle_read_bytes'] / 2**20:.0f} | "
                         f"{s['shuffle_write_bytes'] / 2**20:.0f} | {s['spill_disk_bytes'] / 2**20:.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="fingerprints (repeatable; default 1,000,000)")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--memory", default="8g", help="Spark driver memory (local mode: the executors too)")
    parser.add_argument("--partitions", type=int, help="shuffle partitions of the pair search (default: engine's)")
    parser.add_argument("--skip", action="append", default=[], choices=["numpy", "find-all", "spark"])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        rows = args.rows[0]
        parquet, text = prepare_files(rows, args.k)
        out = Path(args.out)
        if args.worker == "numpy":
            result = worker_numpy(rows, args.k, out)
        elif args.worker == "find-all":
            result = worker_findall(rows, args.k, text, out)
        else:
            result = worker_spark(rows, args.k, parquet, out, args.memory, args.partitions)
        print(json.dumps(result))
        return
    DATA.mkdir(exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for rows in args.rows or [1_000_000]:
        started = time.perf_counter()
        prepare_files(rows, args.k)
        print(f"data for {rows:,} rows ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        scratch = DATA / f"spark-bench-{rows}"
        scratch.mkdir(exist_ok=True)
        results = []
        common = [sys.executable, str(Path(__file__).resolve()), "--rows", str(rows), "--k", str(args.k),
                  "--memory", args.memory, *(["--partitions", str(args.partitions)] if args.partitions else [])]
        plan = [("numpy reference", "numpy", scratch / "numpy.npy"),
                ("simpg find-all", "find-all", scratch / "find-all.txt"),
                ("spark local[2]", "spark", scratch / "spark.parquet")]
        for name, worker, out in plan:
            if worker in args.skip:
                continue
            result = measured(name, [*common, "--worker", worker, "--out", str(out)])
            result["keys"] = str(out if worker == "numpy" else out.with_suffix(".npy"))
            results.append(result)
        reference = np.load(results[0]["keys"]) if results else None
        for r in results:
            r["same"] = "yes" if reference is not None and np.array_equal(np.load(r["keys"]), reference) else "NO"
        text = report(rows, args.k, results) if any(r["variant"] == "numpy reference" for r in results) else ""
        print(text)
        with open(RESULTS / f"spark-{rows}-{stamp}.json", "w") as f:
            json.dump({"rows": rows, "k": args.k, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
