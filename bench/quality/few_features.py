"""Are documents with few features less reliable? Unrelated pairs within k, by feature count.

For each part, every document's distinct features (``Fingerprinter.features``) and default
fingerprint; every pair within k bits (exactly, all pairs) is put in the bucket of its
smaller document's feature count and counted as unrelated (J < 0.5) or duplicate (J >= 0.8)
by the part's truth. The rate is unrelated pairs over all pairs of that bucket. Used to
choose what simpg refuses (docs/fingerprinting.md, "Documents with few features")::

    python3 -m bench.quality.few_features --part tune
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.quality import build_corpus
from bench.quality.build_corpus import TRUTH
from bench.quality.truth import Truth

EDGES = [1, 3, 5, 10, 20, 50, 100, 10**9]


def bucket_name(b: int) -> str:
    return f"{EDGES[b]}+" if EDGES[b + 1] == 10**9 else f"{EDGES[b]}-{EDGES[b + 1] - 1}"


def measure(lang: str, part: str, ks: list[int]) -> None:
    from simpg import allpairs
    from simpg.fingerprint import Fingerprinter

    docs = build_corpus.load_part(lang, part)
    truth = Truth.load(str(TRUTH / f"{lang}-{part}.npz"))
    jaccard = {(int(a), int(b)): float(j) for a, b, j in zip(truth.i, truth.j, truth.jaccard, strict=True)}
    fp = Fingerprinter()
    fps = np.zeros(len(docs), dtype=np.uint64)
    counts = np.zeros(len(docs), dtype=np.int64)
    for n, doc in enumerate(docs):
        try:
            fps[n] = fp.fingerprint(doc["text"])
        except ValueError:
            continue  # no features: refused, in no bucket
        counts[n] = len(fp.features(doc["text"]))
    rows = np.flatnonzero(counts > 0)
    bucket = np.searchsorted(EDGES, counts, side="right") - 1
    sizes = np.bincount(bucket[rows], minlength=len(EDGES) - 1)
    above = np.cumsum(sizes[::-1])[::-1] - sizes  # documents in higher buckets
    pairs = sizes * (sizes - 1) // 2 + sizes * above
    print(f"\n{lang}/{part}: {len(docs)} documents, {len(docs) - len(rows)} without features\n")
    print("| features of the smaller document | documents | pairs | " +
          " | ".join(f"unrelated within {k} (rate) | duplicates within {k}" for k in ks) + " |")
    print("|---|---:|---:|" + "---:|---:|" * len(ks))
    found = {}
    for k in ks:
        unrelated = np.zeros(len(EDGES) - 1, dtype=np.int64)
        duplicate = np.zeros(len(EDGES) - 1, dtype=np.int64)
        for a, b, _ in allpairs.pair_chunks(fps[rows], k):
            for x, y in zip(rows[a].tolist(), rows[b].tolist(), strict=True):
                j = jaccard.get((min(x, y), max(x, y)), 0.0)
                smaller = min(bucket[x], bucket[y])
                unrelated[smaller] += j < 0.5
                duplicate[smaller] += j >= 0.8
        found[k] = (unrelated, duplicate)
    for b in range(len(EDGES) - 1):
        cells = [f"{found[k][0][b]} ({found[k][0][b] / max(pairs[b], 1):.1e}) | {found[k][1][b]}" for k in ks]
        print(f"| {bucket_name(b)} | {sizes[b]:,} | {pairs[b]:,} | " + " | ".join(cells) + " |")


def first_lines(lang: str, part: str, ks: list[int]) -> None:
    """The same for short texts: the first line of each base document (titles, short descriptions).

    Truth as the corpus's for English (word 3-shingles of ``\w+`` tokens after NFKC and
    case folding; a text of fewer words is one shingle), computed for the pairs within k.
    """
    import re
    import unicodedata

    from simpg import allpairs
    from simpg.fingerprint import MAX_SKETCH_DISTANCE, Fingerprinter, sketch, sketch_distance

    docs = build_corpus.load_part(lang, part)
    lines = sorted({line for d in docs if d["base"] is None
                    for line in [d["text"].strip().split("\n")[0].strip()] if line})
    fp = Fingerprinter()
    kept, fps, counts = [], [], []
    for line in lines:
        try:
            fps.append(fp.fingerprint(line))
        except ValueError:
            continue
        kept.append(line)
        counts.append(len(fp.features(line)))

    def shingles(text: str) -> set[tuple[str, ...]]:
        words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
        return {tuple(words[i:i + 3]) for i in range(max(len(words) - 2, 1))}

    sets = [shingles(line) for line in kept]
    n = len(kept)
    print(f"\n{lang}/{part} first lines: {n:,} distinct lines, median {int(np.median(counts))} features "
          f"(min {min(counts)}), {n * (n - 1) // 2:,} pairs")
    for k in ks:
        unrelated, total, confirmed = [], 0, 0
        for a, b, _ in allpairs.pair_chunks(np.array(fps, dtype=np.uint64), k):
            for x, y in zip(a.tolist(), b.tolist(), strict=True):
                total += 1
                j = len(sets[x] & sets[y]) / len(sets[x] | sets[y])
                if j < 0.5:
                    unrelated.append((kept[x], kept[y]))
                    confirmed += sketch_distance(sketch(kept[x]), sketch(kept[y])) <= MAX_SKETCH_DISTANCE
        print(f"- within {k} bits: {total} pairs, {len(unrelated)} unrelated (J < 0.5), "
              f"{confirmed} of them confirmed by sketches"
              + "".join(f"\n  - {a!r} / {b!r}" for a, b in unrelated[:5]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="tune")
    parser.add_argument("--lang", default="en,zh,mixed")
    parser.add_argument("--k", default="4,7")
    args = parser.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    for lang in args.lang.split(","):
        measure(lang, args.part, ks)
    first_lines("en", args.part, ks)


if __name__ == "__main__":
    main()
