"""What ``simpg dedup`` decides, scored: fingerprint candidates confirmed by the product's sketch.

The detector ``simpg-dedup`` calls the same library function as ``simpg dedup``
(:func:`simpg.allpairs.confirmed_pair_chunks`) on the product's own fingerprints
(``FingerprintConfig()``) and sketches (:func:`simpg.fingerprint.sketch`), so the
figures are what users get. ``simpg-dedup-grid`` adds neighbouring (K, T) settings.

Tuning (``--part tune`` only) and the report (``--part heldout``)::

    python3 -m bench.quality.product sweep --part tune
    python3 -m bench.quality.evaluate --part heldout --plugin bench.quality.product \\
        --detectors simpg,minhash,simpg-dedup --clustering components,representative
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import numpy as np

from bench.quality.detectors import Call, SimpgDetector, _simpg_code_digest, _workers, cached, register


def _sketch_doc(text: str) -> tuple[bytes, bool]:
    from simpg.fingerprint.minhash import SKETCH_BYTES, sketch

    try:
        return sketch(text), True
    except ValueError:  # nothing to sketch: never confirmed
        return bytes(SKETCH_BYTES), False


def sketches(docs: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The product's sketches, ``(n, 32)`` uint8, and which documents have one (cached)."""

    def compute() -> dict[str, np.ndarray]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(_workers()) as pool:
            rows = pool.map(_sketch_doc, [d["text"] for d in docs], chunksize=64)
        raw = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
        return {"s": raw, "ok": np.array([r[1] for r in rows], dtype=bool)}

    z = cached("sketch", _simpg_code_digest(), docs, compute)
    return z["s"], z["ok"]


class Dedup:
    """Pairs within K bits of the default fingerprint whose sketches differ in at most T bits."""

    name = "simpg-dedup"

    def __init__(self, settings: Sequence[tuple[int, int]], label: str = "simpg dedup") -> None:
        self.settings = list(settings)
        self.label = label

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        from simpg.allpairs import confirmed_pair_chunks

        started = time.perf_counter()
        fps, valid = SimpgDetector().fingerprints(docs)
        sk, has_sketch = sketches(docs)
        rows = np.flatnonzero(valid & has_sketch)
        kmax = max(k for k, _ in self.settings)
        tmax = max(t for _, t in self.settings)
        parts = list(confirmed_pair_chunks(fps[rows], sk[rows], kmax, tmax))
        i = rows[np.concatenate([p[0] for p in parts])] if parts else np.zeros(0, dtype=np.int64)
        j = rows[np.concatenate([p[1] for p in parts])] if parts else np.zeros(0, dtype=np.int64)
        d = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        sd = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        pairs = np.stack([i, j], axis=1)
        seconds = time.perf_counter() - started
        return [
            Call(
                label=f"{self.label} K={k} T={t}",
                detector=self.name,
                pairs=pairs[(d <= k) & (sd <= t)],
                params={"K": k, "T": t},
                not_indexed=int((~(valid & has_sketch)).sum()),
                seconds=seconds,
            )
            for k, t in self.settings
        ]


def default_settings() -> tuple[int, int]:
    from simpg.fingerprint import DEDUP_K
    from simpg.fingerprint.minhash import MAX_SKETCH_DISTANCE

    return DEDUP_K, MAX_SKETCH_DISTANCE


@register("simpg-dedup")
def _dedup() -> Dedup:
    return Dedup([default_settings()])


@register("simpg-dedup-grid")
def _dedup_grid() -> Dedup:
    k, t = default_settings()
    return Dedup([(kk, t) for kk in (4, 5, 6, 7, 8)] + [(k, tt) for tt in (32, 36, 44, 48)])


def sweep(part: str, langs: Sequence[str], ks: Sequence[int], ts: Sequence[int]) -> None:
    """F1, recall and unrelated pairs called for every (K, T), per part (tune on ``tune``)."""
    from bench.quality.evaluate import evaluate

    det = Dedup([(k, t) for k in ks for t in ts])
    r = evaluate(list(langs), part, [det])
    rows = []
    for lang, block in r["langs"].items():
        for row in block["calls"]:
            p = row["pairs"]
            rows.append({"lang": lang, **row["params"], "precision": p["precision"], "recall": p["recall"],
                         "f1": p["f1"], "unrelated": p["unrelated_called"]})
    print("| K | T | " + " | ".join(f"{lang} F1 (unrelated)" for lang in langs) + " |")
    print("|---|---|" + "---|" * len(langs))
    for k in ks:
        for t in ts:
            cells = [next(f"{x['f1']:.3f} ({x['unrelated']})" for x in rows
                          if x["lang"] == lang and x["K"] == k and x["T"] == t) for lang in langs]
            print(f"| {k} | {t} | " + " | ".join(cells) + " |")
    json.dump(rows, sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--part", default="tune")
    s.add_argument("--lang", default="en,zh,mixed")
    s.add_argument("--k", default="4,5,6,7,8")
    s.add_argument("--t", default="28,32,36,40,44,48,56")
    args = parser.parse_args()
    sweep(args.part, args.lang.split(","), [int(x) for x in args.k.split(",")], [int(x) for x in args.t.split(",")])


if __name__ == "__main__":
    main()
