"""CPU cost of simpg.passages on 5 KB texts, and compare() beside its string-based predecessor.

For each language (real documents of the quality corpus, bench/data/quality14/corpus/<lang>.jsonl,
cut to 5,000 UTF-8 bytes at a character boundary): a text A, and a text B made of another
document with a third of A pasted into its middle (so that the two share a long passage).
Two more rows: ``en copyright``, pairs of two different Debian copyright files (licence
boilerplate: GPL and BSD paragraphs shared by many, the report's hard case), and
``repeated phrase``, a text repeating one 11-token phrase to 5 KB against another
(matching k-gram pairs quadratic in the repeats). Timed, best of --repeat rounds in which
the steps alternate, CPU time of this process, per text or pair:

  * ``fingerprint``: simpg.fingerprint.fingerprint(A) (the document-level hash, for scale);
  * ``tokens``: simpg.passages.tokens(A);
  * ``passage_hashes``: the stored hashes of A;
  * ``compare``: compare(A, B) from the two texts;
  * ``compare_tokens``: compare(tokens_of_A, B): a lookup's verification of one candidate,
    the query tokenised once (and, new, its arrays derived once);
  * ``both tokenised``: compare(tokens_of_A, tokens_of_B), both derived before: the all-pairs
    engine comparing a document with many (pure comparison, no tokenising).

The tokens and compare steps run twice: ``old`` is tokens() and compare() as of --baseline
(the string-based compare, loaded from git into temporary modules), ``new`` this tree's;
every pair's two answers (and every text's two tokens) are checked equal. Cells read
``old → new (old / new)``. A last table (--report N) times the in-memory report,
passage_pairs over the first N English documents (whole, their passage hashes given), in
one process with the old and then the new tokens() and compare(), and checks the two
reports equal.

``--hashes REV`` times passage_hashes alone instead, old (simpg/passages/winnow.py, config.py
and tokens.py as of REV, loaded from git) against this tree's, on the same 5 KB texts (rows:
languages of the corpus and ``en copyright``), CPU ms per text,
and the hashes per 1,000 tokens a row stores and a lookup of the text searches (old: the
smaller window; new: the same hashes as stored).

Usage:
  python3 bench/passages_core.py                 # every row, markdown table
  python3 bench/passages_core.py --repeat 3 --langs en --report 0
  python3 bench/passages_core.py --hashes c73c357 --langs en,zh,mixed,"en copyright" --pairs 200
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import simpg.passages.pairs as pairs_module  # noqa: E402
from simpg.fingerprint import fingerprint  # noqa: E402
from simpg.passages import compare, passage_hashes, passage_pairs, tokens  # noqa: E402
from simpg.passages.tokens import Tokens  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "data" / "quality14" / "corpus"
SIZE = 5000  # bytes of UTF-8
#: The last commit with the string-based compare() (before issue 30's hash matching).
BASELINE = "78dec94"
PHRASE = "The software is provided as is, without warranty of any kind. "


def cut(text: str, size: int = SIZE) -> str:
    return text.encode("utf-8")[:size].decode("utf-8", errors="ignore")


def documents(lang: str, count: int, kind: str | None = None) -> list[str]:
    """The first ``count`` original documents of at least 5 KB (of one kind if given), cut to 5 KB."""
    docs = []
    with open(CORPUS / f"{lang}.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["base"] is None and len(d["text"].encode("utf-8")) >= SIZE and kind in (None, d["kind"]):
                docs.append(cut(d["text"]))
            if len(docs) == count:
                break
    return docs


def texts(row: str, pairs: int) -> list[tuple[str, str]]:
    """``pairs`` (A, B) of 5 KB texts for one table row."""
    if row == "repeated phrase":
        repeated = PHRASE * (SIZE // len(PHRASE))
        return [(cut(repeated), cut(f"Preface {i}. " + repeated)) for i in range(pairs)]
    if row == "en copyright":
        docs = documents("en", 2 * pairs, "copyright")
        return list(zip(docs[::2], docs[1::2], strict=True))
    docs = documents(row, 2 * pairs)
    out = []
    for a, other in zip(docs[::2], docs[1::2], strict=True):
        third = len(a) // 3
        half = len(other) // 2
        out.append((a, cut(other[:half] + "\n" + a[third : 2 * third] + "\n" + other[half:])))
    return out


def _module_at(rev: str, path: str, name: str) -> types.ModuleType:
    """The module of ``path`` as of git revision ``rev``, loaded as ``name``."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def baseline(rev: str) -> tuple[Callable[..., Any], Callable[[str], Any]]:
    """compare() and tokens() as of git revision ``rev`` (the old compare() tokenising with the old tokens())."""
    old_module = _module_at(rev, "simpg/passages/tokens.py", "baseline_tokens")
    comparison = _module_at(rev, "simpg/passages/comparison.py", "baseline_comparison")
    # it tokenises with the old tokens() and accepts the Tokens of both (its isinstance check)
    comparison.__dict__.update(tokens=old_module.tokens, Tokens=(Tokens, old_module.Tokens))
    return comparison.compare, old_module.tokens


def measure(row: str, n_pairs: int, repeat: int, old: tuple[Callable[..., Any], Callable[[str], Any]]) -> str:
    """One table row: ms per text (or pair) of each step, the best of ``repeat`` alternating rounds."""
    old_compare, old_tokens = old
    pairs = texts(row, n_pairs)
    toks = [tokens(a) for a, _ in pairs]
    toks_b = [tokens(b) for _, b in pairs]
    both = list(zip(toks, toks_b, strict=True))
    for (a, b), ta, tb in zip(pairs, toks, toks_b, strict=True):  # the same answers, field by field
        new, old = compare(a, b), old_compare(a, b)
        assert repr(new) == repr(old) and compare(ta, tb) == new, f"{row}: compare() differs from {BASELINE}"
        was = old_tokens(a)
        same = [np.array_equal(getattr(ta, f), getattr(was, f)) for f in ("hashes", "starts", "ends")]
        assert ta.words == was.words and all(same), f"{row}: tokens() differs from {BASELINE}"
    steps: dict[str, Callable[[], object]] = {
        "fingerprint": lambda: [fingerprint(a) for a, _ in pairs],
        "tokens old": lambda: [old_tokens(a) for a, _ in pairs],
        "tokens new": lambda: [tokens(a) for a, _ in pairs],
        "passage_hashes": lambda: [passage_hashes(a) for a, _ in pairs],
        "compare old": lambda: [old_compare(a, b) for a, b in pairs],
        "compare new": lambda: [compare(a, b) for a, b in pairs],
        "compare_tokens old": lambda: [old_compare(t, b) for t, (_, b) in zip(toks, pairs, strict=True)],
        "compare_tokens new": lambda: [compare(t, b) for t, (_, b) in zip(toks, pairs, strict=True)],
        "both tokenised old": lambda: [old_compare(ta, tb) for ta, tb in both],
        "both tokenised new": lambda: [compare(ta, tb) for ta, tb in both],
    }
    for step in steps.values():  # warm up (caches, imports; the new compare derives each Tokens' arrays)
        step()
    ms = {name: float("inf") for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            t0 = time.process_time()
            step()
            ms[name] = min(ms[name], (time.process_time() - t0) * 1000 / len(pairs))
    n_tokens = sum(len(t) for t in toks) / len(toks)
    shared = sum(len(compare(a, b).passages) for a, b in pairs) / len(pairs)

    def old_new(step: str) -> str:
        old, new = ms[f"{step} old"], ms[f"{step} new"]
        return f"{old:.3f} → {new:.3f} ms ({old / new:.1f}x)"

    return (f"| {row} | {n_tokens:.0f} | {shared:.1f} | {ms['fingerprint']:.3f} ms | {old_new('tokens')} "
            f"| {ms['passage_hashes']:.3f} ms | {old_new('compare')} | {old_new('compare_tokens')} "
            f"| {old_new('both tokenised')} |")


def report(n_docs: int, repeat: int, old: tuple[Callable[..., Any], Callable[[str], Any]]) -> str:
    """The in-memory report (passage_pairs, one process) over the first ``n_docs`` English
    documents (originals and their edited copies, whole): its seconds with the old and the new
    tokens() and compare(), the passage hashes given (made once), best of ``repeat``."""
    docs = []
    with open(CORPUS / "en.jsonl", encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line)["text"])
            if len(docs) == n_docs:
                break
    hashes = [passage_hashes(d) for d in docs]
    seconds, found = {}, {}
    for name, (compare_with, tokens_with) in (("old", old), ("new", (compare, tokens))):
        names = pairs_module.__dict__  # the names its verification calls
        saved = {"compare": names["compare"], "tokens": names["tokens"]}
        names.update(compare=compare_with, tokens=tokens_with)
        try:
            best = float("inf")
            for _ in range(repeat):
                t0 = time.process_time()
                found[name] = passage_pairs(docs, hashes=hashes, workers=1)
                best = min(best, time.process_time() - t0)
        finally:
            names.update(saved)
        seconds[name] = best
    assert repr(found["old"]) == repr(found["new"]), "passage_pairs differs"
    kept = len(found["new"].pairs)
    return (f"| passage_pairs, {n_docs} en documents ({found['new'].candidates:,} candidates, {kept:,} pairs) "
            f"| {seconds['old']:.2f} → {seconds['new']:.2f} s ({seconds['old'] / seconds['new']:.1f}x) |")


def old_winnow(rev: str) -> types.ModuleType:
    """simpg/passages/winnow.py as of ``rev``, with that revision's config and tokens modules."""
    saved = {name: sys.modules[name] for name in ("simpg.passages.config", "simpg.passages.tokens")}
    try:
        sys.modules["simpg.passages.config"] = _module_at(rev, "simpg/passages/config.py", "baseline_config")
        sys.modules["simpg.passages.tokens"] = _module_at(rev, "simpg/passages/tokens.py", "baseline_tokens_w")
        return _module_at(rev, "simpg/passages/winnow.py", "baseline_winnow")
    finally:
        sys.modules.update(saved)


def measure_hashes(row: str, n_texts: int, repeat: int, old: types.ModuleType) -> str:
    """One row of the --hashes table: passage_hashes old and new, ms per 5 KB text, best of ``repeat``."""
    docs = [a for a, _ in texts(row, n_texts)]
    old_config = sys.modules["baseline_config"].PassageConfig()
    steps: dict[str, Callable[[], object]] = {
        "old": lambda: [old.passage_hashes(a, old_config) for a in docs],
        "new": lambda: [passage_hashes(a) for a in docs],
    }
    for step in steps.values():
        step()
    ms = {name: float("inf") for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            t0 = time.process_time()
            step()
            ms[name] = min(ms[name], (time.process_time() - t0) * 1000 / len(docs))
    n_tokens = sum(len(tokens(a)) for a in docs)
    per_k = {"stored old": sum(len(old.passage_hashes(a, old_config)) for a in docs),
             # before weighted windows a lookup winnowed with the smaller window; since, as a row is
             "lookup old": sum(len(old.query_hashes_array(a, old_config) if hasattr(old, "query_hashes_array")
                                   else old.passage_hashes(a, old_config)) for a in docs),
             "new": sum(len(passage_hashes(a)) for a in docs)}
    per_k = {k: 1000 * v / n_tokens for k, v in per_k.items()}
    return (f"| {row} | {len(docs)} | {n_tokens / len(docs):.0f} | {ms['old']:.3f} → {ms['new']:.3f} ms "
            f"({ms['old'] / ms['new']:.2f}x) | {per_k['stored old']:.1f} → {per_k['new']:.1f} "
            f"| {per_k['lookup old']:.1f} → {per_k['new']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", default="en,zh,mixed,en copyright,repeated phrase",
                        help="rows: languages of the corpus, 'en copyright', 'repeated phrase'")
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the old compare()")
    parser.add_argument("--report", type=int, default=400, help="English documents of the report row (0: none)")
    parser.add_argument("--hashes", metavar="REV", help="time passage_hashes alone against its version at REV")
    args = parser.parse_args()
    if args.hashes:
        winnow_then = old_winnow(args.hashes)
        print(f"| text | texts | tokens per text | passage_hashes CPU, {args.hashes} → this tree (old / new) "
              "| stored hashes / 1k tokens | lookup hashes / 1k tokens |")
        print("|---|---:|---:|---|---|---|")
        for row in args.langs.split(","):
            print(measure_hashes(row, args.pairs, args.repeat, winnow_then), flush=True)
        return
    old = baseline(args.baseline)
    print("| text | tokens per text | shared passages | fingerprint | tokens | passage_hashes | compare "
          "| compare_tokens | both tokenised |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in args.langs.split(","):
        print(measure(row, args.pairs, args.repeat, old), flush=True)
    if args.report:
        print()
        print("| all pairs | old → new CPU |")
        print("|---|---|")
        print(report(args.report, min(args.repeat, 2), old))


if __name__ == "__main__":
    main()
