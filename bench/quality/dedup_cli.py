"""The pairs ``simpg dedup --json`` decides with its defaults, scored end to end (issue 28).

:mod:`bench.quality.product` scores the library function ``simpg dedup`` calls; this detector
runs the command itself, as a user does: the part's documents go to a JSONL file (one
``{"text": ...}`` per line, in corpus order), ``python -m simpg dedup FILE --json`` fingerprints
them, loads them into PostgreSQL and decides, and the ``pairs`` of its report (every pair it
calls near duplicates, copies included) are mapped back to documents by line number. Every
option is the command's default, so a change of the product's defaults (k, sketch, bands) is
scored without touching this file.

The server: ``SIMPG_DSN`` if set, else the embedded default in ``bench/data/quality14/simpg-home``
(``SIMPG_HOME``), so the benchmark never shares a data folder with other work. Each run replaces
its own collection (``quality-<lang>-<part digest>``).

    python3 -m bench.quality.evaluate --part tune --lang mixreal,revisions \\
        --plugin bench.quality.dedup_cli --detectors simpg-dedup-cli,minhash
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.quality.detectors import Call, register, texts_digest
from bench.quality.sources import DATA

HOME = DATA / "simpg-home"


class DedupCommand:
    """``simpg dedup FILE --json`` with its defaults; its pairs and its skipped documents."""

    name = "simpg-dedup-cli"

    def __init__(self, extra_args: Sequence[str] = ()) -> None:
        self.extra_args = list(extra_args)

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        started = time.perf_counter()
        env = dict(os.environ)
        if not env.get("SIMPG_DSN"):
            HOME.mkdir(parents=True, exist_ok=True)
            env.setdefault("SIMPG_HOME", str(HOME))
        with tempfile.TemporaryDirectory(prefix="simpg-quality-") as tmp:
            path = Path(tmp) / "docs.jsonl"
            with path.open("w", encoding="utf-8") as f:
                for d in docs:
                    f.write(json.dumps({"text": d["text"]}, ensure_ascii=False) + "\n")
            cmd = [sys.executable, "-m", "simpg", "dedup", str(path), "--json",
                   "--collection", f"quality-{lang}-{texts_digest(docs)[:16]}", *self.extra_args]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
            report = json.loads(done.stdout)
        prefix = f"{path}:"

        def index(source: str) -> int:
            if not source.startswith(prefix):
                raise SystemExit(f"simpg dedup named an unknown source {source!r}")
            return int(source[len(prefix):]) - 1

        pairs = sorted({tuple(sorted((index(p["source_a"]), index(p["source_b"])))) for p in report.get("pairs", [])})
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        params = {"k": report.get("k"), "confirm": report.get("confirm"),
                  "max_sketch_distance": report.get("max_sketch_distance"), "method": report.get("method"),
                  "args": self.extra_args}
        label = "simpg dedup --json (defaults" + (", " + " ".join(self.extra_args) if self.extra_args else "") + ")"
        return [Call(label=label, detector=self.name, pairs=arr, params=params,
                     not_indexed=len(report.get("skipped", [])), seconds=time.perf_counter() - started)]


@register("simpg-dedup-cli")
def _dedup_cli() -> DedupCommand:
    return DedupCommand()
