"""In-memory peers, run inside their own virtualenvs (bench/peers_setup.sh) by index_bench.py.

    bench/.peers/seomoz/bin/python bench/peers.py seomoz FPS.npy --k 3 --blocks 6
    bench/.peers/simhash/bin/python bench/peers.py simhash FPS.npy QUERIES.npy --k 3

FPS.npy / QUERIES.npy hold unsigned 64-bit fingerprints. Prints one JSON object.
Only numpy < 2 and the peer itself are importable here, so nothing from simpg.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def seomoz(args: argparse.Namespace) -> dict:
    import simhash  # simhash-pybind: seomoz's C++ library

    fps = [int(x) for x in np.load(args.fps)]
    started = time.perf_counter()
    # find_all takes a set: rows with equal fingerprints collapse into one
    found = simhash.find_all(set(fps), args.blocks, args.k)
    seconds = time.perf_counter() - started
    return {
        "peer": "seomoz find_all",
        "seconds": seconds,
        "pairs": len(found),
        "distinct_fingerprints": len(set(fps)),
    }


def simhash_index(args: argparse.Namespace) -> dict:
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    fps = np.load(args.fps)
    queries = [int(q) for q in np.load(args.queries)]
    started = time.perf_counter()
    index = SimhashIndex([(str(i + 1), Simhash(int(v))) for i, v in enumerate(fps)], k=args.k)
    build = time.perf_counter() - started
    del fps
    lat = []
    results = []
    for q in queries:
        t0 = time.perf_counter()
        ids = index.get_near_dups(Simhash(q))
        lat.append(time.perf_counter() - t0)
        results.append(sorted(int(i) for i in ids))
    lat.sort()
    return {
        "peer": "simhash SimhashIndex",
        "build_seconds": build,
        "p50_ms": lat[len(lat) // 2] * 1e3,
        "p99_ms": lat[int(len(lat) * 0.99)] * 1e3,
        "lookups_per_second": len(lat) / sum(lat),
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="peer", required=True)
    a = sub.add_parser("seomoz")
    a.add_argument("fps")
    a.add_argument("--k", type=int, default=3)
    a.add_argument("--blocks", type=int, default=6)
    a.set_defaults(func=seomoz)
    b = sub.add_parser("simhash")
    b.add_argument("fps")
    b.add_argument("queries")
    b.add_argument("--k", type=int, default=3)
    b.set_defaults(func=simhash_index)
    args = parser.parse_args()
    print(json.dumps(args.func(args)))


if __name__ == "__main__":
    main()
