"""Any bench that prints JSON, run against an older commit and this tree in turn: medians of new/old.

A busy machine's noise comes and goes over minutes, so a single before/after run of each
tree can show a few percent either way. This runs the bench command alternately with the
source of a base commit (``git archive BASE`` into a temporary folder) and with this tree,
``--rounds`` times in A B B A order (old, new, new, old, old, new, ...), each run in its own
tree's folder with that folder first on ``PYTHONPATH``: each tree runs its own copy of the
bench script, its own ``simpg`` and, where the bench installs the extension files, its own
SQL. A run's figures are the numbers in the first JSON object it prints (nested keys joined
by dots); each round pairs an old and a new run made next to each other, and the table gives
per figure the medians, the median of the rounds' ratios new/old and their spread (lowest and
highest ratio).

``--private DIR`` gives each run a private copy of DIR (a bind mount in a mount namespace of
its own, ``unshare``, as root), so a bench that writes there (bench/shard_designs.py writes
the simpg extension files into Debian PostgreSQL's shared extension folder) neither changes
the folder for everyone else nor sees another run's files: the server it starts reads the
SQL of the tree that runs.

Usage:
    python3 bench/interleaved.py --base 36f34ec --rounds 6 \\
        --private /usr/share/postgresql/15/extension --figures '*latency.p50_ms' -- \\
        /path/to/venv/bin/python bench/shard_designs.py --rows 200000 --queries 500
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def figures(value: Any, prefix: str = "") -> dict[str, float]:
    """The numbers in a JSON value, named by their dotted keys (lists' items by index)."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, int | float):
        return {prefix: float(value)}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    found: dict[str, float] = {}
    for key, item in items:
        found.update(figures(item, f"{prefix}.{key}" if prefix else str(key)))
    return found


def first_json(output: str) -> Any:
    """The first JSON object printed in ``output``."""
    decoder = json.JSONDecoder()
    start = output.find("{")
    while start != -1:
        try:
            return decoder.raw_decode(output, start)[0]
        except json.JSONDecodeError:
            start = output.find("{", start + 1)
    raise SystemExit(f"no JSON object in the bench's output: {output[-2000:]!r}")


def run(command: list[str], tree: Path, private: dict[Path, Path]) -> dict[str, float]:
    """One run of ``command`` in ``tree``; its figures."""
    if private:
        # a mount namespace of the run's own: the copies bound over the shared folders
        binds = " && ".join(f"mount --bind {shlex.quote(str(copy))} {shlex.quote(str(folder))}"
                            for folder, copy in private.items())
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   f'{binds} && exec "$@"', "sh", *command]
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the bench failed in {tree} (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return figures(first_json(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the old commit (git archive of this repository)")
    parser.add_argument("--rounds", type=int, default=6, help="runs of each tree (A B B A order)")
    parser.add_argument("--figures", default="*", help="comma-separated patterns of the figures shown (fnmatch)")
    parser.add_argument("--private", type=Path, action="append", default=[],
                        help="a folder each run gets a private copy of (repeatable; needs root)")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the bench command, run in each tree")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no bench command given (after --)")
    if args.rounds < 2:
        parser.error(f"--rounds must be 2 or more, got {args.rounds}")
    patterns = args.figures.split(",")
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="simpg-interleaved-") as scratch:
        old_tree = Path(scratch) / "old"
        old_tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(old_tree)], input=archive.stdout, check=True)
        trees = {"old": old_tree, "new": ROOT}
        copies: dict[str, dict[Path, Path]] = {name: {} for name in trees}
        for name in trees:
            for i, folder in enumerate(args.private):
                copy = Path(scratch) / f"{name}-private-{i}"
                shutil.copytree(folder, copy, symlinks=True)
                copies[name][folder.resolve()] = copy
        for i in range(args.rounds):
            for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                t0 = time.perf_counter()
                runs[name].append(run(command, trees[name], copies[name]))
                print(f"round {i + 1}/{args.rounds} {name}: {time.perf_counter() - t0:.0f} s, "
                      f"load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
                load.append(os.getloadavg())
    names = [k for k in runs["new"][0] if k in runs["old"][0] and any(fnmatch.fnmatch(k, p) for p in patterns)]
    width = max((len(k) for k in names), default=6)
    print(f"{args.rounds} rounds each, A B B A; base {args.base}; command: {shlex.join(command)}")
    print(f"load average (1 min) over the runs: {min(x[0] for x in load):.2f} to {max(x[0] for x in load):.2f}")
    print(f"{'figure':<{width}}  {'old':>10}  {'new':>10}  ratio new/old (median, lowest-highest)")
    table = {}
    for k in names:
        old = [r[k] for r in runs["old"]]
        new = [r[k] for r in runs["new"]]
        ratios = [n / o for n, o in zip(new, old, strict=True) if o]
        row = {"old": statistics.median(old), "new": statistics.median(new),
               "ratio": statistics.median(ratios) if ratios else float("nan"),
               "lowest": min(ratios, default=float("nan")), "highest": max(ratios, default=float("nan"))}
        table[k] = row
        print(f"{k:<{width}}  {row['old']:>10.4g}  {row['new']:>10.4g}  "
              f"{row['ratio']:.3f} ({row['lowest']:.3f}-{row['highest']:.3f})")
    if args.json:
        args.json.write_text(json.dumps({"base": args.base, "command": command, "rounds": args.rounds,
                                         "load_average": load, "table": table, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
