"""Online lookups with a second candidate source: MinHash LSH band keys (measured prototype, not product).

Issue 14's open part: an online lookup (one document against an indexed table) finds its
candidates within k = 4 bits of the fingerprint and confirms them with the 256-bit sketch;
at k = 4 too few near duplicates are candidates. This module scores a second, index-backed
candidate source: **band keys**. Each row stores ``b`` bigint keys; band ``i`` is a 64-bit
hash of ``r`` consecutive bin minima of the sketch's own one-permutation MinHash (bins
``i*r .. i*r + r - 1`` of the 256, after densification: the same shingles and hashes as
:func:`simpg.fingerprint.sketch`, so one definition serves both). Two documents share band
``i`` with probability about ``J**r``, so a pair is a candidate with probability
``1 - (1 - J**r)**b``. A lookup is ``b`` B-tree equality probes, like the prefix tables.

A pair is called when it is a candidate (fingerprints within ``k`` bits, or a shared band
key) and its sketches differ in at most ``T`` bits (36, ``MAX_SKETCH_DISTANCE``), as online
lookups confirm today. The evaluation is all pairs of a part: each document is a lookup
against all the others.

Detectors (``--plugin bench.quality.bands``):

* ``bands``: a few designs and their baselines;
* ``bands-grid``: every ``k`` in (none, 3, 4) with every (b, r) of the tuning grid;
* ``bands-online``: the design chosen on the tuning part (k = 4 and 4 bands of r = 4) with
  confirmed lookups at k = 4 and 5 (what the held-out figures report); no short-text guard;
* ``bands-product``: the same three lookups with the product's constants read from simpg
  (``BANDS``, ``BAND_ROWS``, ``MAX_SKETCH_DISTANCE`` and the guard ``MIN_BAND_SHINGLES``:
  documents with fewer distinct sketch shingles get no band keys), what the fresh part reports.

Commands::

    python3 -m bench.quality.bands sweep --part tune              # the grid: F1 / P / R, candidates
    python3 -m bench.quality.bands candidates --settings 4:0:0,4:4:4   # candidates per lookup and their J
    python3 -m bench.quality.evaluate --part heldout --plugin bench.quality.bands --detectors bands-online
    python3 -m bench.quality.bands short --part tune              # band-only calls of short documents
    python3 -m bench.quality.bands per-document                   # CPU time of the band keys

Figures and the design's discussion: docs/fingerprinting.md, "Online lookups: a second
candidate source".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import numpy as np

from bench.quality.detectors import Call, SimpgDetector, _simpg_code_digest, _workers, cached, register
from bench.quality.product import sketches

T_DEFAULT = 36


def _count_doc(text: str) -> int:
    from simpg.fingerprint.minhash import _shingles

    return len(np.unique(_shingles(text)))


def shingle_counts(docs: Sequence[dict]) -> np.ndarray:
    """Distinct sketch shingles per document (cached)."""

    def compute() -> dict[str, np.ndarray]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(_workers()) as pool:
            return {"c": np.array(pool.map(_count_doc, [d["text"] for d in docs], chunksize=64), dtype=np.int64)}

    return cached("sketchshingles", _simpg_code_digest(), docs, compute)["c"]


def _minima_doc(text: str) -> tuple[bytes, bool]:
    from simpg.fingerprint.minhash import SKETCH_BITS, _minima, _shingles

    hashes = np.sort(_shingles(text))
    if not len(hashes):
        return bytes(8 * SKETCH_BITS), False
    return _minima(hashes).astype("<u8").tobytes(), True


def minima(docs: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The sketch's 256 bin minima per document, ``(n, 256)`` uint64, and which have any (cached)."""

    def compute() -> dict[str, np.ndarray]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(_workers()) as pool:
            rows = pool.map(_minima_doc, [d["text"] for d in docs], chunksize=64)
        raw = np.frombuffer(b"".join(r[0] for r in rows), dtype="<u8").reshape(len(rows), -1)
        return {"m": raw.astype(np.uint64), "ok": np.array([r[1] for r in rows], dtype=bool)}

    z = cached("sketchminima", _simpg_code_digest(), docs, compute)
    return z["m"], z["ok"]


def band_keys(m: np.ndarray, b: int, r: int) -> np.ndarray:
    """``(n, b)`` uint64 band keys: band i hashes bins ``i*r .. i*r + r - 1`` (the product's definition)."""
    from simpg.fingerprint.minhash import _band_keys

    return _band_keys(m, b, r)


def _encode(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return lo.astype(np.int64) * n + hi.astype(np.int64)


def shared_band_codes(keys: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Pairs of ``rows`` (documents) sharing at least one band key, as sorted unique codes ``i*n+j``."""
    out = []
    for col in range(keys.shape[1]):
        k = keys[rows, col]
        order = np.argsort(k, kind="stable")
        ks, rs = k[order], rows[order]
        starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        sizes = np.diff(np.r_[starts, len(ks)])
        for s, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
            g = rs[s : s + size]
            a, c = np.triu_indices(size, 1)
            out.append(_encode(g[a], g[c], n))
    if not out:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(out))


def _hamming_pairs(fps: np.ndarray, rows: np.ndarray, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    from bench.quality.detectors import pairs_within

    valid = np.zeros(len(fps), dtype=bool)
    valid[rows] = True
    p, d = pairs_within(fps, valid, kmax)
    return p, d


def _sketch_bits(sk: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    x = np.bitwise_xor(sk[i], sk[j])
    return np.unpackbits(x, axis=1).sum(axis=1)


class Bands:
    """Candidates: fingerprint within k (k None: no fingerprint source) or a shared band key; sketch <= T."""

    name = "bands"

    def __init__(self, settings: Sequence[tuple[int | None, int, int]], ts: Sequence[int] = (T_DEFAULT,),
                 label: str = "lookup", min_shingles: int = 0) -> None:
        self.settings = list(settings)  # (k, b, r); b = 0: fingerprint candidates only
        # A document with fewer distinct sketch shingles gets no band keys (NULL in a table):
        # it is found, and finds, through its fingerprint only.
        self.min_shingles = min_shingles
        self.ts = list(ts)
        self.label = label
        self.stats: dict[str, dict] = {}

    def candidates(self, docs: Sequence[dict]) -> list[tuple[tuple[int | None, int, int], np.ndarray, int]]:
        """Per setting: the candidate pairs as sorted codes ``i*n+j``, and the number of indexed rows."""
        n = len(docs)
        fps, valid = SimpgDetector().fingerprints(docs)
        _, has_sketch = sketches(docs)
        m, has_min = minima(docs)
        if not np.array_equal(has_min, has_sketch):
            raise SystemExit("sketch and minima disagree on which documents have shingles")
        rows = np.flatnonzero(valid & has_sketch)  # the product stores a row only with both
        ks = sorted({k for k, _, _ in self.settings if k is not None})
        hp, hd = _hamming_pairs(fps, rows, max(ks)) if ks else (np.zeros((0, 2), np.int64), np.zeros(0))
        hcode = _encode(hp[:, 0], hp[:, 1], n)
        band_cache: dict[tuple[int, int], np.ndarray] = {}
        out = []
        for k, b, r in self.settings:
            parts = []
            if k is not None:
                parts.append(hcode[hd <= k])
            if b:
                if (b, r) not in band_cache:
                    banded = rows[shingle_counts(docs)[rows] >= self.min_shingles] if self.min_shingles else rows
                    band_cache[(b, r)] = shared_band_codes(band_keys(m, b, r), banded, n)
                parts.append(band_cache[(b, r)])
            out.append(((k, b, r), np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64), len(rows)))
        return out

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        started = time.perf_counter()
        n = len(docs)
        sk, has_sketch = sketches(docs)
        calls = []
        for (k, b, r), codes, n_rows in self.candidates(docs):
            i, j = codes // n, codes % n
            bits = _sketch_bits(sk, i, j)
            # candidates per lookup: each candidate pair is a candidate of both its documents' lookups
            cand_per_lookup = 2 * len(codes) / max(1, n_rows)
            for t in self.ts:
                keep = bits <= t
                tag = f"k={k if k is not None else '-'} b={b} r={r}" if b else f"k={k}"
                if b and self.min_shingles:
                    tag += f" m={self.min_shingles}"
                calls.append(Call(
                    label=f"{self.label} {tag} T={t}", detector=self.name,
                    pairs=np.stack([i[keep], j[keep]], axis=1),
                    params={"k": k, "b": b, "r": r, "T": t, "m": self.min_shingles if b else 0,
                            "candidates": int(len(codes)),
                            "candidates_per_lookup": cand_per_lookup, "docs": n},
                    not_indexed=n - n_rows, seconds=time.perf_counter() - started))
        return calls


GRID_BR = [(b, r) for r in (2, 3, 4, 5, 6) for b in (2, 4, 6, 8, 10, 12, 16, 20)]


@register("bands")
def _bands() -> Bands:
    return Bands([(4, 0, 0), (5, 0, 0)] + [(k, b, r) for k in (None, 3, 4) for b, r in ((4, 4), (6, 4), (8, 4))])


#: The design carried to the held-out part: today's k = 4 index plus 4 bands of r = 4 bins.
BEST = (4, 4, 4)


@register("bands-online")
def _bands_online() -> Bands:
    """The chosen design and the confirmed lookups of today (k = 4) and at k = 5, side by side."""
    return Bands([(4, 0, 0), (5, 0, 0), BEST])


@register("bands-product")
def _bands_product() -> Bands:
    """The product's lookup as simpg defines it (k = 4 index + bands, 16-shingle guard), and k = 4 / 5 alone."""
    from simpg.fingerprint.minhash import BAND_ROWS, BANDS, MAX_SKETCH_DISTANCE, MIN_BAND_SHINGLES

    return Bands(
        [(4, 0, 0), (5, 0, 0), (4, BANDS, BAND_ROWS)], (MAX_SKETCH_DISTANCE,), min_shingles=MIN_BAND_SHINGLES
    )


@register("bands-grid")
def _bands_grid() -> Bands:
    return Bands([(k, 0, 0) for k in (3, 4, 5)] + [(k, b, r) for k in (None, 3, 4) for b, r in GRID_BR])


def sweep(part: str, langs: Sequence[str], dets: Sequence[Bands]) -> list[dict]:
    """F1, P, R, unrelated pairs called and candidates per lookup for every setting."""
    from bench.quality.evaluate import evaluate

    r = evaluate(list(langs), part, list(dets), clusterings=())
    rows = []
    for lang, block in r["langs"].items():
        for row in block["calls"]:
            p = row["pairs"]
            rows.append({"lang": lang, **row["params"], "precision": p["precision"], "recall": p["recall"],
                         "f1": p["f1"], "unrelated": p["unrelated_called"]})
    return rows


def table(rows: list[dict], langs: Sequence[str]) -> str:
    head = "| k | b | r | m | T | " + " | ".join(f"{x} F1 / P / R (unrel.) | {x} cand." for x in langs) + " |"
    lines = [head, "|" + "---|" * (5 + 2 * len(langs))]
    keys = []
    for x in rows:
        key = (x["k"], x["b"], x["r"], x["m"], x["T"])
        if key not in keys:
            keys.append(key)
    for key in keys:
        cells = []
        for lang in langs:
            x = next(y for y in rows if y["lang"] == lang and (y["k"], y["b"], y["r"], y["m"], y["T"]) == key)
            cells.append(f"{x['f1']:.3f} / {x['precision']:.3f} / {x['recall']:.3f} ({x['unrelated']})")
            cells.append(f"{x['candidates_per_lookup']:.2f}")
        k, b, r, m, t = key
        lines.append(f"| {'-' if k is None else k} | {b} | {r} | {m} | {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def candidate_stats(part: str, langs: Sequence[str], det: Bands) -> list[dict]:
    """What each setting makes a lookup read: candidates per lookup (mean, percentiles) and their truth.

    A lookup's candidates are the rows the index hands to the sketch check. Each candidate
    pair is counted in both its documents' lookups. ``floor``: the part's pairs with J >= 0.5
    per lookup (grey and duplicate pairs, which any exact method must read to call the
    duplicates among them).
    """
    from bench.quality import build_corpus
    from bench.quality.build_corpus import TRUTH
    from bench.quality.metrics import TruthIndex
    from bench.quality.truth import Truth

    rows = []
    for lang in langs:
        docs = build_corpus.load_part(lang, part)
        n = len(docs)
        ti = TruthIndex(Truth.load(str(TRUTH / f"{lang}-{part}.npz")))
        for (k, b, r), codes, n_rows in det.candidates(docs):
            i, j = codes // n, codes % n
            deg = np.bincount(np.concatenate([i, j]), minlength=n)
            listed, pos = ti.lookup(i, j)
            dup = listed & ti.dup[pos]
            deg_rows = deg[deg > 0] if n_rows == 0 else np.sort(deg)[-n_rows:]  # indexed rows only
            rows.append({
                "lang": lang, "k": k, "b": b, "r": r, "docs": n, "rows": n_rows, "pairs": int(len(codes)),
                "mean": 2 * len(codes) / max(1, n_rows), "p50": float(np.percentile(deg_rows, 50)),
                "p90": float(np.percentile(deg_rows, 90)), "p99": float(np.percentile(deg_rows, 99)),
                "max": int(deg.max()) if len(deg) else 0,
                "dup": int(dup.sum()), "grey": int((listed & ~ti.dup[pos]).sum()), "unrelated": int((~listed).sum()),
                "floor": 2 * len(ti.keys) / max(1, n_rows),
            })
    return rows


def candidate_table(rows: list[dict]) -> str:
    lines = ["| lang | k | b | r | candidates / lookup: mean | p50 | p90 | p99 | max | of them J >= 0.8 | 0.5-0.8 "
             "| < 0.5 | J >= 0.5 pairs / lookup |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in rows:
        tot = max(1, x["pairs"])
        lines.append(f"| {x['lang']} | {'-' if x['k'] is None else x['k']} | {x['b']} | {x['r']} | {x['mean']:.2f} | "
                     f"{x['p50']:.0f} | {x['p90']:.0f} | {x['p99']:.0f} | {x['max']} | {x['dup'] / tot:.0%} | "
                     f"{x['grey'] / tot:.0%} | {x['unrelated'] / tot:.0%} | {x['floor']:.2f} |")
    return "\n".join(lines)


def short_calls(part: str, langs: Sequence[str], setting: tuple[int | None, int, int], m: int) -> list[str]:
    """Pairs a design calls only through its bands where a document has fewer than m sketch shingles, by J class."""
    from bench.quality import build_corpus
    from bench.quality.build_corpus import TRUTH
    from bench.quality.metrics import TruthIndex
    from bench.quality.truth import Truth

    out = []
    for lang in langs:
        docs = build_corpus.load_part(lang, part)
        n = len(docs)
        ti = TruthIndex(Truth.load(str(TRUTH / f"{lang}-{part}.npz")))
        base, banded = Bands([(setting[0], 0, 0), setting]).run(docs, lang)
        known = set((base.pairs[:, 0] * n + base.pairs[:, 1]).tolist())
        p = banded.pairs
        only = np.array([c not in known for c in (p[:, 0] * n + p[:, 1]).tolist()], dtype=bool)
        counts = shingle_counts(docs)
        short = only & (np.minimum(counts[p[:, 0]], counts[p[:, 1]]) < m)
        listed, pos = ti.lookup(p[short, 0], p[short, 1])
        dup = listed & ti.dup[pos]
        out.append(f"{lang}: {int(only.sum())} pairs called through bands only; {int(short.sum())} with a document of "
                   f"< {m} shingles: {int(dup.sum())} J >= 0.8, {int((listed & ~dup).sum())} grey, "
                   f"{int((~listed).sum())} J < 0.5")
    return out


def per_document(part: str = "tune", count: int = 1000, b: int = 4, r: int = 4) -> list[str]:
    """CPU time per document: the sketch alone, and the sketch with b band keys from the same minima."""
    from bench.quality import build_corpus
    from simpg.fingerprint.minhash import sketch, sketch_and_bands

    def both(text: str) -> tuple[bytes, tuple[int, ...] | None]:
        return sketch_and_bands(text)

    out = []
    for lang in ("en", "zh"):
        texts = [d["text"] for d in build_corpus.load_part(lang, part)][:count]
        for t in texts[:50]:
            if both(t)[0] != sketch(t):
                raise SystemExit("the one-pass sketch differs from simpg.fingerprint.sketch")
        best: dict[str, float] = {}
        for _ in range(3):
            for name, f in (("sketch", sketch), (f"sketch + {b} band keys", both)):
                started = time.process_time()
                for t in texts:
                    f(t)
                best[name] = min(best.get(name, float("inf")), time.process_time() - started)
        out.append(f"{lang}: " + ", ".join(f"{k} {1e3 * v / len(texts):.3f} ms" for k, v in best.items())
                   + f" per document ({len(texts)} documents, CPU time, best of 3)")
    return out


def _parse_settings(text: str) -> list[tuple[int | None, int, int]]:
    """``"4:0:0,-:8:4,3:6:4"`` -> [(4, 0, 0), (None, 8, 4), (3, 6, 4)]."""
    out = []
    for item in text.split(","):
        k, b, r = item.split(":")
        out.append((None if k == "-" else int(k), int(b), int(r)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--part", default="tune")
    s.add_argument("--lang", default="en,zh,mixed")
    s.add_argument("--settings", help="k:b:r,... (k '-' = no fingerprint source; b 0 = fingerprint only); "
                                      "default: the bands-grid detector's")
    s.add_argument("--t", default=str(T_DEFAULT))
    s.add_argument("--min-shingles", default="0",
                   help="comma-separated: documents with fewer distinct sketch shingles get no band keys (0: none)")
    s.add_argument("--json", help="also write the rows here")
    c = sub.add_parser("candidates")
    c.add_argument("--part", default="tune")
    c.add_argument("--lang", default="en,zh,mixed")
    c.add_argument("--settings", required=True, help="k:b:r,... as for sweep")
    c.add_argument("--min-shingles", type=int, default=0)
    sc = sub.add_parser("short", help="band-only calls involving short documents, by J class")
    sc.add_argument("--part", default="tune")
    sc.add_argument("--lang", default="en,zh,mixed")
    sc.add_argument("--setting", default="4:4:4")
    sc.add_argument("--min-shingles", type=int, default=16)
    sub.add_parser("per-document", help="CPU time of the sketch with and without 4 band keys")
    args = parser.parse_args()
    if args.cmd == "short":
        print("\n".join(short_calls(args.part, args.lang.split(","), _parse_settings(args.setting)[0],
                                    args.min_shingles)))
        return
    if args.cmd == "per-document":
        print("\n".join(per_document()))
        return
    if args.cmd == "candidates":
        det = Bands(_parse_settings(args.settings), min_shingles=args.min_shingles)
        print(candidate_table(candidate_stats(args.part, args.lang.split(","), det)))
        return
    if args.part != "tune" and not args.settings:
        raise SystemExit("the grid is for the tuning part; give --settings for the held-out part")
    langs = args.lang.split(",")
    ts = [int(x) for x in args.t.split(",")]
    settings = _parse_settings(args.settings) if args.settings else _bands_grid().settings
    dets = [Bands(settings, ts, label=f"lookup m={m}", min_shingles=m) for m in map(int, args.min_shingles.split(","))]
    rows = sweep(args.part, langs, dets)
    print(table(rows, langs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"{len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
