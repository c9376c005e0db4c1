"""What ``simpg dedup`` decides, scored: fingerprint and band candidates confirmed by the product's sketch.

The detector ``simpg-dedup`` calls the same library function as ``simpg dedup``
(:func:`simpg.allpairs.confirmed_pair_chunks`) on the product's own fingerprints
(``FingerprintConfig()``), sketches and band keys (:func:`simpg.fingerprint.sketch_and_bands`),
with the product's defaults (``simpg.dedup.Decision()``), so the figures are what users get.
``simpg-dedup-grid`` adds neighbouring (K, T) settings, ``simpg-dedup-nobands`` the decision
without band keys (simpg 0.2's ``dedup`` before issue 28).

Tuning (``--part tune`` only) and the report (``--part heldout``)::

    python3 -m bench.quality.product sweep --part tune --bands both
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


def _band_doc(text: str) -> tuple[int, ...] | None:
    from simpg.fingerprint import sketch_and_bands

    try:
        return sketch_and_bands(text)[1]
    except ValueError:
        return None


def band_keys(docs: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The product's band keys, ``(n, BANDS)`` int64, and which documents have them (cached)."""
    from simpg.fingerprint import BANDS

    def compute() -> dict[str, np.ndarray]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(_workers()) as pool:
            rows = pool.map(_band_doc, [d["text"] for d in docs], chunksize=64)
        keys = np.array([r if r is not None else (0,) * BANDS for r in rows], dtype=np.int64).reshape(-1, BANDS)
        return {"b": keys, "ok": np.array([r is not None for r in rows], dtype=bool)}

    z = cached("bandkeys", _simpg_code_digest(), docs, compute)
    return z["b"], z["ok"]


class Dedup:
    """Pairs within K bits, or (bands) sharing a band key, whose sketches differ in at most T bits."""

    name = "simpg-dedup"

    def __init__(self, settings: Sequence[tuple[int, int, bool]], label: str = "simpg dedup") -> None:
        self.settings = list(settings)
        self.label = label

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        from simpg.allpairs import confirmed_pair_chunks

        started = time.perf_counter()
        fps, valid = SimpgDetector().fingerprints(docs)
        sk, has_sketch = sketches(docs)
        keys, has_keys = band_keys(docs)
        rows = np.flatnonzero(valid & has_sketch)
        calls = []
        for banded in sorted({b for _, _, b in self.settings}):
            chosen = [(k, t) for k, t, b in self.settings if b == banded]
            kmax = max(k for k, _ in chosen)
            tmax = max(t for _, t in chosen)
            # the decision simpg dedup makes (simpg.allpairs.decide), on every row at once
            parts = list(confirmed_pair_chunks(fps[rows], sk[rows], kmax, tmax,
                                               band_keys=(keys[rows], has_keys[rows]) if banded else None))
            i = rows[np.concatenate([p[0] for p in parts])] if parts else np.zeros(0, dtype=np.int64)
            j = rows[np.concatenate([p[1] for p in parts])] if parts else np.zeros(0, dtype=np.int64)
            d = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
            sd = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
            pairs = np.stack([i, j], axis=1)
            # a band pair is any distance apart: at a smaller K it stays if it shares a key;
            # recomputed per K below as the product decides (within K, or sharing a key)
            shared = _shares_band(keys, has_keys, i, j) if banded else np.zeros(len(i), dtype=bool)
            seconds = time.perf_counter() - started
            calls += [
                Call(
                    label=f"{self.label} K={k} T={t}{' +bands' if banded else ''}",
                    detector=self.name,
                    pairs=pairs[((d <= k) | shared) & (sd <= t)],
                    params={"K": k, "T": t, "bands": banded},
                    not_indexed=int((~(valid & has_sketch)).sum()),
                    seconds=seconds,
                )
                for k, t in chosen
            ]
        return calls


def _shares_band(keys: np.ndarray, has: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    return has[i] & has[j] & (keys[i] == keys[j]).any(axis=1)


def default_settings() -> tuple[int, int, bool]:
    """``simpg dedup``'s defaults: ``simpg.dedup.Decision()``."""
    from simpg.dedup import Decision

    d = Decision()
    return d.k, d.max_sketch_distance, d.bands


@register("simpg-dedup")
def _dedup() -> Dedup:
    return Dedup([default_settings()])


@register("simpg-dedup-nobands")
def _dedup_nobands() -> Dedup:
    k, t, _ = default_settings()
    return Dedup([(k, t, False), (7, t, False)] if k != 7 else [(k, t, False)], label="simpg dedup (no bands)")


@register("simpg-dedup-grid")
def _dedup_grid() -> Dedup:
    k, t, b = default_settings()
    return Dedup([(kk, t, bb) for kk in (3, 4, 5, 6, 7, 8) for bb in (False, True)] +
                 [(k, tt, b) for tt in (32, 36, 44, 48)])


def sweep(part: str, langs: Sequence[str], ks: Sequence[int], ts: Sequence[int],
          bands: Sequence[bool] = (True,)) -> None:
    """F1, recall and unrelated pairs called for every (K, T, bands), per part (tune on ``tune``)."""
    from bench.quality.evaluate import evaluate

    det = Dedup([(k, t, b) for k in ks for t in ts for b in bands])
    r = evaluate(list(langs), part, [det])
    rows = []
    for lang, block in r["langs"].items():
        for row in block["calls"]:
            p = row["pairs"]
            rows.append({"lang": lang, **row["params"], "precision": p["precision"], "recall": p["recall"],
                         "f1": p["f1"], "unrelated": p["unrelated_called"]})
    print("| K | T | bands | " + " | ".join(f"{lang} F1 (recall, unrelated)" for lang in langs) + " |")
    print("|---|---|---|" + "---|" * len(langs))
    for k in ks:
        for t in ts:
            for b in bands:
                cells = [next(f"{x['f1']:.3f} ({x['recall']:.3f}, {x['unrelated']})" for x in rows
                              if x["lang"] == lang and x["K"] == k and x["T"] == t and x["bands"] == b)
                         for lang in langs]
                print(f"| {k} | {t} | {'yes' if b else 'no'} | " + " | ".join(cells) + " |")
    json.dump(rows, sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--part", default="tune")
    s.add_argument("--lang", default="en,zh,mixed")
    s.add_argument("--k", default="4,5,6,7,8")
    s.add_argument("--t", default="28,32,36,40,44,48,56")
    s.add_argument("--bands", choices=("yes", "no", "both"), default="yes",
                   help="band keys as a second candidate source (the product's default: yes)")
    args = parser.parse_args()
    bands = {"yes": (True,), "no": (False,), "both": (False, True)}[args.bands]
    sweep(args.part, args.lang.split(","), [int(x) for x in args.k.split(",")], [int(x) for x in args.t.split(",")],
          bands)


if __name__ == "__main__":
    main()
