"""CPU cost of simpg.passages on 5 KB texts, beside the document fingerprint of the same texts.

For each language (real documents of the quality corpus, bench/data/quality14/corpus/<lang>.jsonl,
cut to 5,000 UTF-8 bytes at a character boundary): a text A, and a text B made of another
document with a third of A pasted into its middle (so that the two share a long passage).
Timed, best of --repeat rounds in which the steps alternate, CPU time of this process:

  * ``fingerprint``: simpg.fingerprint.fingerprint(A) (the document-level hash, for scale);
  * ``tokens``: simpg.passages.tokens(A);
  * ``passage_hashes``: the stored hashes of A;
  * ``compare``: compare(A, B) from the two texts;
  * ``compare_tokens``: compare(tokens_of_A, B): a lookup's verification of one candidate,
    the query tokenised once.

Usage:
  python3 bench/passages_core.py                 # every language, markdown table
  python3 bench/passages_core.py --repeat 3 --langs en
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simpg.fingerprint import fingerprint  # noqa: E402
from simpg.passages import compare, passage_hashes, tokens  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "data" / "quality14" / "corpus"
SIZE = 5000  # bytes of UTF-8


def cut(text: str, size: int = SIZE) -> str:
    return text.encode("utf-8")[:size].decode("utf-8", errors="ignore")


def texts(lang: str, pairs: int) -> list[tuple[str, str]]:
    """``pairs`` (A, B) of 5 KB texts: B another document with a third of A in its middle."""
    docs = []
    with open(CORPUS / f"{lang}.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["base"] is None and len(d["text"].encode("utf-8")) >= SIZE:
                docs.append(cut(d["text"]))
            if len(docs) == 2 * pairs:
                break
    out = []
    for a, other in zip(docs[::2], docs[1::2], strict=True):
        third = len(a) // 3
        half = len(other) // 2
        out.append((a, cut(other[:half] + "\n" + a[third : 2 * third] + "\n" + other[half:])))
    return out


def measure(lang: str, n_pairs: int, repeat: int) -> str:
    """One table row: ms per text (or pair) of each step, the best of ``repeat`` alternating rounds."""
    pairs = texts(lang, n_pairs)
    toks = [tokens(a) for a, _ in pairs]
    steps: dict[str, Callable[[], object]] = {
        "fingerprint": lambda: [fingerprint(a) for a, _ in pairs],
        "tokens": lambda: [tokens(a) for a, _ in pairs],
        "passage_hashes": lambda: [passage_hashes(a) for a, _ in pairs],
        "compare": lambda: [compare(a, b) for a, b in pairs],
        "compare_tokens": lambda: [compare(t, b) for t, (_, b) in zip(toks, pairs, strict=True)],
    }
    for step in steps.values():  # warm up (caches, imports)
        step()
    ms = {name: float("inf") for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            t0 = time.process_time()
            step()
            ms[name] = min(ms[name], (time.process_time() - t0) * 1000 / len(pairs))
    n_tokens = sum(len(t) for t in toks) / len(toks)
    shared = sum(len(compare(a, b).passages) for a, b in pairs) / len(pairs)
    return (f"| {lang} | {n_tokens:.0f} | {shared:.1f} | {ms['fingerprint']:.3f} ms | {ms['tokens']:.3f} ms "
            f"| {ms['passage_hashes']:.3f} ms | {ms['compare']:.3f} ms | {ms['compare_tokens']:.3f} ms "
            f"| {ms['compare'] / ms['fingerprint']:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", default="en,zh,mixed")
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| lang | tokens per text | shared passages | fingerprint | tokens | passage_hashes | compare "
          "| compare_tokens | compare / fingerprint |")
    print("|---|---|---|---|---|---|---|---|---|")
    for lang in args.langs.split(","):
        print(measure(lang, args.pairs, args.repeat))


if __name__ == "__main__":
    main()
