"""What passage hashes and ``--passages`` add to ``simpg dedup``, stage by stage, side by side in one run.

On the same documents, rounds interleaved, medians: the fingerprint pass dedup always
ran (:func:`simpg.dedup.fingerprint_sketch_and_band_documents`), the passage-hash pass it
now runs too (:func:`simpg.dedup.passage_hash_documents`: what fills
``simpg_documents.passages``), and the copied-passages report of ``--passages``
(:func:`simpg.passage_report.from_texts`: candidates, verification on the texts; on the
first ``--report-docs`` documents, as licences copied between packages make it quadratic), with
their ratios to the fingerprint pass. No database: the load is timed end to end by
bench/dedup_path.py (a base commit against this tree).

Folders: examples/corpus (32 small files) and Debian's copyright files and man pages
(bench/dedup_path.py's corpus: licences copied between packages, so boilerplate).

Usage:
    python3 bench/dedup_passages.py                       # examples/corpus and 2,000 files, workers 1 and 2
    python3 bench/dedup_passages.py --files 4000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = work()
    return time.perf_counter() - started, out


def measure(name: str, folder: Path, rounds: int, workers: int, report_docs: int) -> None:
    from simpg import dedup, passage_report
    from simpg.corpus import read_documents
    from simpg.fingerprint import FingerprintConfig

    docs = list(read_documents(str(folder)))
    chars = sum(len(d.body) for d in docs)
    stages: dict[str, list[float]] = {"fingerprints, sketches, bands": [], "passage hashes": [],
                                      "--passages report": []}
    found: Any = None
    for r in range(rounds):
        order = list(stages)[:2] if r % 2 == 0 else list(reversed(list(stages)[:2]))
        for stage in order:
            if stage == "passage hashes":
                seconds, hashes = timed(lambda: dedup.passage_hash_documents(docs, workers))
            else:
                seconds, _ = timed(lambda: dedup.fingerprint_sketch_and_band_documents(docs, FingerprintConfig(),
                                                                                        workers))
            stages[stage].append(seconds)
        some = docs[:report_docs]  # boilerplate makes the report quadratic: timed on the first documents
        started = time.perf_counter()
        found = passage_report.from_texts(list(range(1, len(some) + 1)), [d.body for d in some],
                                          hashes[:report_docs], [d.source for d in some], [],
                                          passage_report.PartialOptions(workers=workers))
        seconds = time.perf_counter() - started
        stages["--passages report"].append(seconds)
    base = statistics.median(stages["fingerprints, sketches, bands"])
    print(f"\n{name}: {len(docs):,} documents, {chars / 1e6:.1f} M characters, workers {workers}, "
          f"{rounds} rounds, medians; report (first {min(report_docs, len(docs)):,} documents): "
          f"{found['candidates']:,} candidates, {len(found['pairs']):,} pairs, "
          f"{len(found['common_hashes'])} common hashes skipped (max_common {found['max_common']})\n")
    print("| stage | s | vs fingerprint pass |")
    print("|---|---:|---:|")
    for stage, values in stages.items():
        m = statistics.median(values)
        print(f"| {stage} | {m:.2f} | {m / base:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--report-docs", type=int, default=300, help="documents the --passages report is timed on")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from dedup_path import make_corpus

    with tempfile.TemporaryDirectory(prefix="simpg-dedup-passages-") as tmp:
        folder = Path(tmp)
        files = make_corpus(folder, args.files)
        for workers in args.workers:
            measure("examples/corpus", ROOT / "examples" / "corpus", args.rounds, workers, args.report_docs)
            measure(f"{files:,} Debian copyright files and man pages", folder, args.rounds, workers,
                    args.report_docs)


if __name__ == "__main__":
    main()
