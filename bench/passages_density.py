"""Passage hashes a document stores, per 1,000 tokens and per KB of text, by language and windows.

    python3 bench/passages_density.py --part heldout --windows 22/46,26/46
    python3 bench/passages_density.py --part tune --windows 22/46,26/46,20/46

Every document of a part of ``bench.quality.partial`` (``tune`` or ``heldout``, the real
documents with their planted copies), ``simpg.passages.passage_hashes`` with each config
(``W/WS``: the window over words and over letters of spaceless scripts): the hashes summed
over the language's documents, divided by its tokens (``simpg.passages.tokens``) and by the
UTF-8 bytes of its texts. The ratio of two windows is the ratio of the rows' hash counts,
which is what the array column and its GIN index store (their bytes: ``passages_storage.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.quality.partial import LANGS, load_or_build  # noqa: E402
from simpg.passages import PassageConfig, passage_hashes_array  # noqa: E402
from simpg.passages.tokens import token_hashes  # noqa: E402


def parse_windows(spec: str) -> list[PassageConfig]:
    """``"22/46,26/46"`` -> the two configs."""
    return [PassageConfig(*(int(w) for w in item.split("/"))) for item in spec.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="heldout", choices=("tune", "heldout"))
    ap.add_argument("--windows", default="22/46,26/46", help="configs W/WS, comma-separated")
    args = ap.parse_args()
    configs = parse_windows(args.windows)
    docs = load_or_build(args.part, None)
    print("| part | lang | documents | tokens / doc | text KB / doc | "
          + " | ".join(f"{c.window}/{c.spaceless_window} hashes / 1k tokens, / KB" for c in configs) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(configs))
    for lang in LANGS:
        texts = [d["text"] for d in docs if d["lang"] == lang]
        tokens = sum(len(token_hashes(t)) for t in texts)
        kb = sum(len(t.encode()) for t in texts) / 1000
        cells = []
        for config in configs:
            hashes = sum(len(passage_hashes_array(t, config)) for t in texts)
            cells.append(f"{1000 * hashes / tokens:.1f}, {hashes / kb:.1f}")
        print(f"| {args.part} | {lang} | {len(texts):,} | {tokens / len(texts):,.0f} | {kb / len(texts):.2f} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
