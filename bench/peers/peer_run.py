"""Time a peer SimHash implementation; runs inside the peer's own venv (see setup_peers.py).

Reads documents (JSON lines of strings) from --docs, fingerprints them all --repeat times
and prints {"impl", "docs", "bytes", "seconds", "cpu_seconds", "fingerprints"} as JSON
(best wall-clock and best CPU time of the repeats).

  simhash         Simhash(text).value, the package defaults (md5 of character 4-grams)
  simhash-pybind  compute() over MD5 unsigned_hash of lowercased word 3-gram shingles
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("impl", choices=("simhash", "simhash-pybind"))
    ap.add_argument("--docs", required=True)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--all", action="store_true", help="print every fingerprint")
    args = ap.parse_args()
    with open(args.docs, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]

    if args.impl == "simhash":
        from simhash import Simhash

        def one(text: str) -> int:
            return int(Simhash(text).value)

    else:
        import simhash

        def one(text: str) -> int:
            shingles = (" ".join(s) for s in simhash.shingle(text.lower().split(), 3))
            return int(simhash.compute([simhash.unsigned_hash(s.encode("utf-8")) for s in shingles]))

    best = best_cpu = float("inf")
    out: list[int] = []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = [one(d) for d in docs]
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    size = sum(len(d.encode("utf-8")) for d in docs)
    print(
        json.dumps(
            {
                "impl": args.impl,
                "docs": len(docs),
                "bytes": size,
                "seconds": best,
                "cpu_seconds": best_cpu,
                "fingerprints": out if args.all else out[:3],
            }
        )
    )


if __name__ == "__main__":
    main()
