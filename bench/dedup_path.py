"""``simpg dedup`` on a directory of real files, one commit against another, side by side in one run.

The whole command as a user runs it (``python -m simpg dedup DIR``: read, fingerprint and
sketch, store, pair, cluster, report), once with the source of a base commit (``git
archive`` into a temporary folder, first on ``PYTHONPATH``) and once with this tree, on
the same embedded PostgreSQL, rounds interleaved so the machine's noise hits both alike;
medians and their ratio. The directory: Debian's copyright files (licences copied between
packages: many exact and near copies) and manual pages of section 1 (roff source), as
``.txt`` files, the first ``--files`` of them in name order.

Usage:
    python3 bench/dedup_path.py --base 36f34ec                   # 2,000 files, 3 rounds, table output
    python3 bench/dedup_path.py --base 36f34ec --json --files 4000

Beside the whole command, ``simpg.dedup.deduplicate`` alone (what follows fingerprinting:
store, pair, cluster, report) is timed in a child process of each tree, on per-document
values computed once.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def make_corpus(folder: Path, files: int) -> int:
    """Copyright files, then man pages, as .txt files in ``folder``; returns how many."""
    made = 0
    for path in sorted(Path("/usr/share/doc").glob("*/copyright")):
        if made == files:
            return made
        (folder / f"copyright-{path.parent.name}.txt").write_bytes(path.read_bytes())
        made += 1
    for path in sorted(Path("/usr/share/man/man1").glob("*.gz")):
        if made == files:
            break
        (folder / f"man1-{path.name[:-3]}.txt").write_bytes(gzip.decompress(path.read_bytes()))
        made += 1
    return made


def without_ids(output: str, as_json: bool) -> str:
    """The report with the row ids left out: each run stores the rows anew, under new ids."""
    if not as_json:
        # ids, and the width of the id column they set
        return re.sub(r" +", " ", re.sub(r"^ +\d+ ", "#", output, flags=re.MULTILINE))

    def drop(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k not in ("id", "a", "b")}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    return json.dumps(drop(json.loads(output)), sort_keys=True)


def time_deduplicate(made: str, dsn: str, with_pairs: bool) -> None:
    """Child process: ``simpg.dedup.deduplicate`` (store, pair, cluster, report) of the pickled values, timed."""
    import psycopg

    from simpg import dedup

    with open(made, "rb") as f:
        docs, fps, sketches, band_keys = pickle.load(f)
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        dedup.deduplicate(conn, "bench", docs, fps, sketches, band_keys=band_keys, with_pairs=with_pairs)
        print(time.perf_counter() - started)


def main() -> None:
    if sys.argv[1:2] == ["--time-deduplicate"]:
        time_deduplicate(sys.argv[2], sys.argv[3], sys.argv[4] == "pairs")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. the one before a change)")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="run dedup with --json (every pair listed)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="simpg-dedup-path-") as tmp:
        base_src, folder, home = Path(tmp) / "base", Path(tmp) / "corpus", Path(tmp) / "home"
        base_src.mkdir()
        folder.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base, "simpg", "sql"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive, check=True)
        files = make_corpus(folder, args.files)
        env = dict(os.environ, SIMPG_HOME=str(home))
        sys.path.insert(0, str(ROOT))
        os.environ["SIMPG_HOME"] = str(home)
        from simpg import dedup
        from simpg.corpus import read_documents
        from simpg.embedded import embedded_dsn
        from simpg.fingerprint import FingerprintConfig

        dsn = embedded_dsn()
        # the per-document values, once, for the timing of deduplicate() alone
        docs = list(read_documents(str(folder)))
        made = Path(tmp) / "made.pickle"
        with made.open("wb") as f:
            pickle.dump((docs, *dedup.fingerprint_sketch_and_band_documents(docs, FingerprintConfig())), f)
        trees = {f"base {args.base}": base_src, "this tree": ROOT}
        whole: dict[str, list[float]] = {name: [] for name in trees}
        after: dict[str, list[float]] = {name: [] for name in trees}
        outputs: dict[str, str] = {}
        for r in range(args.rounds):
            for name in (list(trees) if r % 2 == 0 else list(reversed(trees))):
                tree_env = dict(env, PYTHONPATH=str(trees[name]))
                cmd = [sys.executable, "-m", "simpg", "dedup", str(folder), "--dsn", dsn, "--collection", "bench",
                       *(["--json"] if args.json else [])]
                started = time.perf_counter()
                done = subprocess.run(cmd, env=tree_env, cwd=tmp, capture_output=True, text=True, check=True)
                whole[name].append(time.perf_counter() - started)
                outputs[name] = without_ids(done.stdout, args.json)
                timed = subprocess.run([sys.executable, __file__, "--time-deduplicate", str(made), dsn,
                                        "pairs" if args.json else "clusters"],
                                       env=tree_env, cwd=tmp, capture_output=True, text=True, check=True)
                after[name].append(float(timed.stdout))
                print(f"round {r + 1}: {name}: command {whole[name][-1]:.2f} s, deduplicate() {after[name][-1]:.3f} s",
                      file=sys.stderr)
        base = next(iter(trees))
        same = len(set(outputs.values())) == 1
        print(f"{files:,} files ({len(docs):,} documents), {args.rounds} rounds interleaved, medians; "
              f"same report: {same}\n")
        option = " --json" if args.json else ""
        print(f"| tree | `simpg dedup DIR{option}` s | vs base | `deduplicate()` after fingerprinting s | vs base |")
        print("|---|---:|---:|---:|---:|")
        for name in trees:
            w, a = statistics.median(whole[name]), statistics.median(after[name])
            print(f"| {name} | {w:.2f} | {w / statistics.median(whole[base]):.2f}x | {a:.3f} | "
                  f"{a / statistics.median(after[base]):.2f}x |")


if __name__ == "__main__":
    main()
