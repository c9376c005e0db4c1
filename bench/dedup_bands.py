"""What band keys as a second candidate source cost ``simpg dedup`` (issue 28), side by side in one run.

``simpg dedup`` decides a pair when its fingerprints are within k bits or it shares a band
key, and its sketches confirm it (``simpg.dedup.Decision()``: k = 4, bands on). Before
issue 28 it decided at k = 7 without band keys. The per-document work is the same for
both (fingerprint, sketch and band keys in one pass, stored either way), so this compares
what differs: the decision (``simpg.allpairs.decide``, in memory, as dedup calls it) and the whole command
after fingerprinting (``simpg.dedup.deduplicate``: load, index, decide, cluster, report
with every pair), rounds interleaved so the machine's noise hits both alike.

Usage:
    python3 bench/dedup_bands.py                                   # bench/quality's corpus (all parts)
    python3 bench/dedup_bands.py --path examples/corpus --rounds 5
    python3 bench/dedup_bands.py --dsn "host=... dbname=..."       # else a private embedded server
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from simpg import allpairs, dedup  # noqa: E402
from simpg.corpus import Document, read_documents  # noqa: E402
from simpg.fingerprint import FingerprintConfig  # noqa: E402

QUALITY = HERE / "data" / "quality14" / "corpus"
VARIANTS = {
    "0.2.0: k=7, no bands": dedup.Decision(k=7, bands=False),
    "k=4, no bands": dedup.Decision(k=4, bands=False),
    "now: k=4 + bands (Decision())": dedup.Decision(),
    "k=7 + bands": dedup.Decision(k=7),
}
BASELINE, NOW = "0.2.0: k=7, no bands", "now: k=4 + bands (Decision())"


def documents(path: Path | None) -> list[Document]:
    if path is not None:
        return list(read_documents(str(path)))
    docs = []
    for f in sorted(QUALITY.glob("*.jsonl")):
        with f.open(encoding="utf-8") as lines:
            docs += [Document(source=r["id"], title=None, body=r["text"]) for r in map(json.loads, lines)]
    if not docs:
        raise SystemExit(f"no corpus in {QUALITY}: python3 -m bench.quality.build_corpus, or pass --path")
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, help="folder, .jsonl or .csv (default: bench/quality's corpus)")
    parser.add_argument("--dsn", help="a database with simpg installed (default: a private embedded server)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import numpy as np
    import psycopg

    docs = documents(args.path)
    started = time.perf_counter()
    fps, sketches, band_keys = dedup.fingerprint_sketch_and_band_documents(docs, FingerprintConfig())
    per_document = time.perf_counter() - started
    print(f"{len(docs):,} documents; fingerprint + sketch + band keys: {per_document:.1f} s (the same for every "
          "variant)", file=sys.stderr)
    kept = [i for i, fp in enumerate(fps) if fp is not None]
    kept_fps = np.array([fps[i] for i in kept], dtype=np.uint64)
    kept_sketches = [sketches[i] for i in kept]
    kept_band_keys = [band_keys[i] for i in kept]
    with_sketch = [i for i, sk in enumerate(kept_sketches) if sk is not None]  # the rows dedup pairs

    if args.dsn:
        dsn = args.dsn
    else:
        os.environ.setdefault("SIMPG_HOME", tempfile.mkdtemp(prefix="simpg-bench-"))
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    decide: dict[str, list[float]] = {name: [] for name in VARIANTS}
    whole: dict[str, list[float]] = {name: [] for name in VARIANTS}
    pairs: dict[str, int] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for r in range(args.rounds):
            names = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))
            for name in names:
                d = VARIANTS[name]
                t0 = time.perf_counter()
                found = allpairs.decide(kept_fps[with_sketch], d.k, sketches=[kept_sketches[i] for i in with_sketch],
                                        max_sketch_distance=d.max_sketch_distance,
                                        band_keys=[kept_band_keys[i] for i in with_sketch] if d.bands else None)
                list(found.pair_chunks())
                decide[name].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                report = dedup.deduplicate(conn, "bench-dedup-bands", docs, fps, sketches, band_keys=band_keys,
                                           decision=d, with_pairs=True)
                whole[name].append(time.perf_counter() - t0)
                pairs[name] = len(report["pairs"])
                print(f"round {r + 1}: {name}: decide {decide[name][-1]:.3f} s, dedup {whole[name][-1]:.2f} s, "
                      f"{pairs[name]:,} pairs", file=sys.stderr)
        conn.execute("DELETE FROM simpg_documents WHERE collection = 'bench-dedup-bands'")
    base_d, base_w = statistics.median(decide[BASELINE]), statistics.median(whole[BASELINE])
    print(f"{len(docs):,} documents, {args.rounds} rounds interleaved, medians; per-document work "
          f"{per_document:.1f} s for every variant\n")
    print("| decision | pairs decided | decide (in memory) s | vs 0.2.0 | dedup after fingerprinting s | vs 0.2.0 |"
          " whole command incl. per-document work vs 0.2.0 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in VARIANTS:
        d, w = statistics.median(decide[name]), statistics.median(whole[name])
        print(f"| {name} | {pairs[name]:,} | {d:.3f} | {d / base_d:.2f}x | {w:.2f} | {w / base_w:.2f}x | "
              f"{(w + per_document) / (base_w + per_document):.2f}x |")


if __name__ == "__main__":
    main()
