"""Fingerprinting throughput: simpg against peer SimHash packages, on the same documents.

English: man pages of this machine (/usr/share/man/man1/*.gz, the first --en-files in
name order, decompressed troff source as UTF-8). Compared with

  * simhash 2.1.2 (PyPI, ``Simhash(text).value`` with its defaults), in its own venv;
  * simhash-pybind 0.0.3 (``compute`` over word 3-gram shingles), in its own venv;

both driven through subprocesses (bench/peers/peer_run.py) and created on first use by
bench/peers/setup_peers.py under ~/.cache/simpg-bench.

Chinese: bench/data/quality/zh.jsonl (Debian FAQ sections), repeated --zh-repeat times,
against bare ``jieba.lcut`` (the floor: segmentation alone, global tokenizer, HMM on).

Ratios are what to look at (machines are noisy): single-process figures are CPU time of
that process (per core; robust when other jobs share the machine), worker-pool figures
are wall-clock time; every timing is the best of --repeat rounds in which the
implementations alternate, all on the same documents.

``--before REV`` also times the sketch and band keys of git revision REV's
``simpg/fingerprint/minhash.py`` (loaded beside this one), alone and after the fingerprint:
a change to the sketch measured before and after in one run (issue 28).

Usage:
  python3 bench/fingerprint_bench.py                 # full run, markdown table
  python3 bench/fingerprint_bench.py --en-files 300 --repeat 1 --no-peers
  python3 bench/fingerprint_bench.py --before main   # and the sketch of another revision beside it
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "peers"))

from setup_peers import ensure  # noqa: E402

from simpg.fingerprint import (  # noqa: E402
    FingerprintConfig,
    Fingerprinter,
    fingerprint_many,
    fingerprint_sketch_and_bands_many,
    sketch,
    sketch_and_bands,
)


def minhash_of(rev: str) -> Any:
    """``simpg/fingerprint/minhash.py`` of git revision ``rev``, loaded as a module of its own."""
    import importlib.util

    source = subprocess.run(["git", "-C", str(HERE.parent), "show", f"{rev}:simpg/fingerprint/minhash.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "minhash_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("minhash_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def before_runs(args: argparse.Namespace, docs: Sequence[str], default: Fingerprinter,
                suffix: str = "") -> dict[str, Callable[[], float]]:
    """Runs of ``--before``'s sketch: alone, and after the (unchanged) fingerprint."""
    if not args.before:
        return {}
    old = minhash_of(args.before)
    old.sketch_and_bands(docs[0])
    return {
        f"sketch and bands alone, {args.before} (before){suffix}": timed(
            lambda: [old.sketch_and_bands(d) for d in docs]),
        f"sketch and bands alone, this tree (after){suffix}": timed(lambda: [sketch_and_bands(d) for d in docs]),
        f"fingerprint + sketch and bands, separately, {args.before} (before){suffix}": timed(
            lambda: [(default.fingerprint(d), old.sketch_and_bands(d)) for d in docs]),
    }


def man_pages(limit: int) -> list[str]:
    files = sorted(Path("/usr/share/man/man1").glob("*.gz"))[:limit]
    docs = []
    for f in files:
        try:
            text = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        except (OSError, EOFError):
            continue
        if text.strip():
            docs.append(text)
    return docs


def size_of(docs: Sequence[str]) -> int:
    return sum(len(d.encode("utf-8")) for d in docs)


def peer(name: str, docs_file: str, repeat: int) -> dict[str, Any]:
    python = ensure(name)
    out = subprocess.run(
        [
            str(python),
            str(HERE / "peers" / "peer_run.py"),
            name,
            "--docs",
            docs_file,
            "--repeat",
            str(repeat),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def row(name: str, docs: int, size: int, seconds: float, base: float | None) -> dict[str, Any]:
    return {
        "name": name,
        "docs_per_s": docs / seconds,
        "mb_per_s": size / seconds / 1e6,
        "seconds": seconds,
        "ratio": (base / seconds) if base else None,
    }


def print_table(title: str, rows: list[dict[str, Any]], ratio_label: str) -> None:
    print(f"\n### {title}\n")
    print(f"| implementation | docs/s | MB/s | seconds | {ratio_label} |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"| {r['name']} | {r['docs_per_s']:.0f} | {r['mb_per_s']:.2f} | {r['seconds']:.2f} | {ratio} |")


def interleaved(runs: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Best time of each run over ``rounds``, the runs alternating within each round.

    Alternating keeps a slow spell of a shared machine from landing on one contender only.
    """
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            best[name] = min(best[name], run())
    return best


def timed(fn: Callable[[], object], wall: bool = False) -> Callable[[], float]:
    """Time ``fn`` in CPU seconds of this process (``wall``: elapsed seconds).

    CPU time is what "per core" means, and it barely moves when other processes share the
    machine; runs using worker processes must be timed by the wall clock.
    """
    clock = time.perf_counter if wall else time.process_time

    def run() -> float:
        t0 = clock()
        fn()
        return clock() - t0

    return run


def english(args: argparse.Namespace) -> list[dict[str, Any]]:
    docs = man_pages(args.en_files)
    size = size_of(docs)
    print(
        f"English: {len(docs)} man pages, {size / 1e6:.1f} MB, best of {args.repeat}",
        file=sys.stderr,
    )
    runs: dict[str, Callable[[], float]] = {}
    docs_file = ""
    if not args.no_peers:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d) + "\n")
            docs_file = f.name
        for name in ("simhash", "simhash-pybind"):
            ensure(name)
            runs[f"{name} (peer venv)"] = lambda n=name: float(peer(n, docs_file, 1)["cpu_seconds"])
    for label, cfg in (
        ("simpg default (char 5-grams), 1 process", FingerprintConfig()),
        ("simpg unit=word ngram=3, 1 process", FingerprintConfig(unit="word")),
    ):
        fp = Fingerprinter(cfg)
        fp.fingerprint(docs[0])
        runs[label] = timed(lambda fp=fp: [fp.fingerprint(d) for d in docs])
    # What simpg dedup computes per document: the fingerprint, the confirming sketch and
    # (since band keys) the keys, from the sketch's minima.
    default = Fingerprinter()
    runs["simpg sketch alone, 1 process"] = timed(lambda: [sketch(d) for d in docs])
    runs["simpg default + sketch, 1 process"] = timed(
        lambda: [(default.fingerprint(d), sketch(d)) for d in docs])
    runs["simpg default + sketch and bands, separately, 1 process"] = timed(
        lambda: [(default.fingerprint(d), sketch_and_bands(d)) for d in docs])
    # One pass (Fingerprinter.fingerprint_sketch_and_bands), a document at a time.
    runs["simpg fingerprint + sketch + band keys in one pass, 1 process"] = timed(
        lambda: [default._fingerprint_and_sketch(d) for d in docs])
    # The same, sketches made SKETCH_BATCH documents at a time: what simpg dedup runs.
    runs["simpg one pass, sketches batched (simpg dedup), 1 process"] = timed(
        lambda: list(fingerprint_sketch_and_bands_many(docs, workers=1)))
    runs.update(before_runs(args, docs, default, ", 1 process"))
    pool_cpu: dict[int, float] = {}
    for workers in args.workers:
        runs[f"simpg default, fingerprint_many workers={workers} (wall clock)"] = timed(
            lambda w=workers: list(fingerprint_many(docs, workers=w)), wall=True
        )
        if workers > 1:
            # Less the CPU time of starting the pool (spawned interpreters, imports).
            pool_cpu[workers] = cpu_of_pool(docs, workers) - cpu_of_pool(["a", "b"], workers)
        if workers > 1:
            # The same call on two tiny documents: what starting the pool costs.
            runs[f"pool start-up only, workers={workers}"] = timed(
                lambda w=workers: list(fingerprint_many(["a", "b"], workers=w)), wall=True
            )
    try:
        best = interleaved(runs, args.repeat)
    finally:
        if docs_file:
            os.unlink(docs_file)
    base = best.get("simhash (peer venv)")
    rows = []
    for name, seconds in best.items():
        if name.startswith("pool start-up"):
            continue
        rows.append(row(name, len(docs), size, seconds, base))
        workers = name.split("workers=")[-1].split(" ")[0] if "workers=" in name else ""
        start = best.get(f"pool start-up only, workers={workers}")
        if start is not None and name.startswith("simpg default, fingerprint_many"):
            rows.append(
                row(
                    f"  same, less {start:.2f} s pool start-up",
                    len(docs),
                    size,
                    seconds - start,
                    base,
                )
            )
    print_table("English (man pages)", rows, "speed vs simhash 2.1.2" if base else "ratio")
    for workers, cpu in pool_cpu.items():
        print(
            f"\nworkers={workers}: {cpu:.2f} CPU seconds in all processes together "
            f"({size / cpu / 1e6:.2f} MB per CPU second; the single process: "
            f"{size / best['simpg default (char 5-grams), 1 process'] / 1e6:.2f})"
        )
    return rows


def cpu_of_pool(docs: Sequence[str], workers: int) -> float:
    """CPU seconds of this process and its (finished) workers for one pooled run.

    With spare cores, wall time would be this divided by the workers; on a busy shared
    machine the wall clock cannot show scaling, but this shows the per-document cost.
    """
    import resource

    def cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    before = cpu()
    list(fingerprint_many(docs, workers=workers))
    return cpu() - before


def chinese(args: argparse.Namespace) -> list[dict[str, Any]]:
    import jieba  # type: ignore[import-untyped]

    data = HERE / "data" / "quality" / "zh.jsonl"
    base_docs = [json.loads(line)["text"] for line in data.open(encoding="utf-8")]
    docs = base_docs * args.zh_repeat
    size = size_of(docs)
    print(
        f"Chinese: {len(docs)} documents, {size / 1e6:.2f} MB, best of {args.repeat}",
        file=sys.stderr,
    )
    jieba.lcut(docs[0])  # build jieba's global dictionary outside the timing
    runs: dict[str, Callable[[], float]] = {"bare jieba.lcut (floor)": timed(lambda: [jieba.lcut(d) for d in docs])}
    for label, cfg in (
        ("simpg default (lang=auto)", FingerprintConfig()),
        ("simpg lang=zh", FingerprintConfig(lang="zh")),
    ):
        fp = Fingerprinter(cfg)
        fp.warm_up()
        fp.fingerprint(docs[0])
        runs[label] = timed(lambda fp=fp: [fp.fingerprint(d) for d in docs])
    default = Fingerprinter()
    runs["simpg sketch alone"] = timed(lambda: [sketch(d) for d in docs])
    runs["simpg default + sketch"] = timed(lambda: [(default.fingerprint(d), sketch(d)) for d in docs])
    runs["simpg default + sketch and bands, separately"] = timed(
        lambda: [(default.fingerprint(d), sketch_and_bands(d)) for d in docs])
    runs["simpg fingerprint + sketch + band keys in one pass"] = timed(
        lambda: [default._fingerprint_and_sketch(d) for d in docs])
    runs["simpg one pass, sketches batched (simpg dedup)"] = timed(
        lambda: list(fingerprint_sketch_and_bands_many(docs, workers=1)))
    runs.update(before_runs(args, docs, default))
    best = interleaved(runs, args.repeat)
    floor = best["bare jieba.lcut (floor)"]
    rows = []
    for name, seconds in best.items():
        r = row(name, len(docs), size, seconds, None)
        r["ratio"] = seconds / floor
        rows.append(r)
    print_table("Chinese (Debian FAQ zh-cn)", rows, "time vs jieba.lcut")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--en-files", type=int, default=1500, help="man pages to use")
    ap.add_argument("--zh-repeat", type=int, default=4, help="copies of the Chinese set")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (best of each kept)")
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--no-peers", action="store_true", help="skip the peer venvs")
    ap.add_argument("--lang", choices=("en", "zh", "all"), default="all")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--before", metavar="REV", help="also time the sketch of this git revision (e.g. main)")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores", file=sys.stderr)
    out: dict[str, Any] = {}
    if args.lang in ("en", "all"):
        out["en"] = english(args)
    if args.lang in ("zh", "all"):
        out["zh"] = chinese(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
