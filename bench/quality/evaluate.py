"""Evaluate near-duplicate detectors on the issue-14 corpus: one command, exact over all pairs.

    python3 -m bench.quality.evaluate                       # builds the corpus first if needed
    python3 -m bench.quality.evaluate --part tune --lang zh --detectors simpg --k 3,4,5,6
    python3 -m bench.quality.evaluate --simpg-config '{"weighting": "binary"}' --detectors simpg
    python3 -m bench.quality.evaluate --plugin my_detectors --detectors simpg,two-stage
    python3 -m bench.quality.evaluate --part fresh          # the fresh held-out part (sources_fresh.json)

Prints a Markdown report on stdout (progress on stderr) and writes it, with every number and
the worst false positives, to bench/results/quality14-<timestamp>.{md,json}.

From Python (e.g. a tuning loop)::

    from bench.quality.evaluate import evaluate
    from bench.quality.detectors import SimpgDetector
    result = evaluate(["en", "zh"], "tune", [SimpgDetector(config={"weighting": "binary"}, ks=[3, 4, 5])])
    result["langs"]["en"]["calls"][0]["pairs"]["f1"]
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench.quality` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality import build_corpus, detectors, metrics  # noqa: E402
from bench.quality.sources import REPO, log  # noqa: E402
from bench.quality.truth import ShingleMatrix, Truth, truth_path  # noqa: E402

RESULTS = REPO / "bench" / "results"
LANG_NAMES = {
    "en": "English",
    "zh": "Chinese",
    "mixed": "Mixed script",
    "mixreal": "Mixed scripts as real text mixes them (issue 28)",
    "revisions": "Revisions across Debian 11, 12 and 13: German, French, Japanese, Korean, Chinese (issue 28)",
    "revisions-en": "Revisions across Debian 11, 12 and 13: English (issue 28)",
}
#: The mixed-script part's languages, per part (fresh adds Greek, Hebrew, Thai and Georgian).
MIXED_LANGS = {"tune": "ja, ko, ru, uk, fa, ar", "heldout": "ja, ko, ru, uk, fa, ar",
               "fresh": "ja, ko, ru, uk, fa, ar, el, he, th, ka"}


def evaluate(
    langs: Sequence[str],
    part: str,
    dets: Sequence[detectors.Detector],
    *,
    clusterings: Sequence[str] = ("components",),
    worst: int = 20,
) -> dict:
    """Run every detector on every language of one part; all metrics, as a dict."""
    out: dict = {"part": part, "langs": {}}
    for lang in langs:
        t0 = time.perf_counter()
        docs = build_corpus.load_part(lang, part)
        t = Truth.load(str(truth_path(lang, part)))
        if t.n_docs != len(docs):
            raise SystemExit(f"truth of {lang}/{part} does not match the corpus: rebuild (--rebuild)")
        sm = ShingleMatrix.build([d["text"] for d in docs], lang)  # truth.DEFINITION maps issue 28's parts
        ti = metrics.TruthIndex(t)
        planted = metrics.planted_pairs(docs)
        n_bases = sum(d["base"] is None for d in docs)
        info = {
            "docs": len(docs),
            "bases": n_bases,
            "variants": len(docs) - n_bases,
            "short_bases": sum(d["base"] is None and len(d["text"]) < build_corpus.SHORT for d in docs),
            "pairs": t.pairs_total,
            "duplicate_pairs": ti.n_dup,
            "grey_pairs": int(len(t.i) - ti.n_dup),
            "pairs_j_ge_0.5": int(len(t.i)),
        }
        log(
            f"{lang}/{part}: {len(docs)} docs, {t.pairs_total:,} pairs, {ti.n_dup:,} duplicates "
            f"(loaded in {time.perf_counter() - t0:.1f}s)"
        )
        calls_out = []
        for det in dets:
            started = time.perf_counter()
            log(f"{lang}/{part}: running {det.name}")
            calls = det.run(docs, lang)
            log(f"{lang}/{part}: {det.name} done in {time.perf_counter() - started:.1f}s")
            for call in calls:
                row = {
                    "label": call.label,
                    "detector": call.detector,
                    "params": call.params,
                    "not_indexed": call.not_indexed,
                    "seconds": round(call.seconds, 2),
                    "pairs": metrics.score_pairs(call.pairs, ti, sm, docs, worst=worst),
                    "edits": metrics.score_edits(call.pairs, ti, planted),
                    "clusters": {},
                }
                if call.clusters is not None:
                    row["clusters"]["own"] = metrics.score_clusters(call.clusters, ti)
                for name in clusterings:
                    clusters = metrics.CLUSTERINGS[name](len(docs), call.pairs)
                    row["clusters"][name] = metrics.score_clusters(clusters, ti)
                calls_out.append(row)
        out["langs"][lang] = {"corpus": info, "calls": calls_out}
    return out


# -- report -------------------------------------------------------------------------------


def _num(x: int) -> str:
    return f"{x:,}"


def _r(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def markdown(result: dict, meta: dict) -> str:
    lines = [f"# simpg detection quality (issue 14) — part `{result['part']}`", ""]
    lines.append(f"Command: `{meta['command']}`  ")
    lines.append(
        f"Corpus built {meta['corpus_built']}; run {meta['started']} on {meta['machine']}; {meta['seconds']:.0f}s."
    )
    lines.append("")
    lines.append(
        "Truth: exact Jaccard over all pairs of the part; duplicate J ≥ 0.8, unrelated J < 0.5, "
        "grey in between (excluded from precision). *Unrelated called* = pairs with J < 0.5 the "
        "detector calls near duplicates."
    )
    lines.append("")
    for lang, block in result["langs"].items():
        c = block["corpus"]
        langs = f" ({MIXED_LANGS[result['part']]})" if lang == "mixed" and result.get("part") in MIXED_LANGS else ""
        lines.append(f"## {LANG_NAMES.get(lang, lang)}{langs} — `{lang}`")
        lines.append("")
        lines.append(
            f"{_num(c['docs'])} documents ({_num(c['bases'])} bases, {_num(c['variants'])} planted variants; "
            f"{_num(c['short_bases'])} bases < 300 characters), {_num(c['pairs'])} pairs, "
            f"{_num(c['duplicate_pairs'])} duplicates (J ≥ 0.8), {_num(c['grey_pairs'])} grey."
        )
        lines.append("")
        lines.append(
            "| detector | precision | recall | F1 | unrelated called (J<0.5) | grey called | called "
            "| not indexed | seconds |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in block["calls"]:
            p = row["pairs"]
            lines.append(
                f"| {row['label']} | {_r(p['precision'])} | {_r(p['recall'])} | {_r(p['f1'])} | "
                f"**{_num(p['unrelated_called'])}** | {_num(p['called_grey'])} | {_num(p['called'])} | "
                f"{_num(row['not_indexed'])} | {row['seconds']:.1f} |"
            )
        lines.append("")
        first = block["calls"][0]["edits"] if block["calls"] else {}
        kinds = [k for k in first if first[k].get("planted")] or list(metrics.EDIT_KINDS)
        head = []
        for k in kinds:
            e = first.get(k, {})
            if k == "rewrite":
                head.append(f"rewrite called (of {e.get('planted', 0)}; {e.get('unrelated_by_truth', 0)} J<0.5)")
            else:
                head.append(f"{k} (n={e.get('duplicate_by_truth', 0)} of {e.get('planted', 0)})")
        lines.append(
            "Recall per planted edit kind (over the (base, variant) pairs that are duplicates by truth; "
            "`revision`: pairs of one document in two releases):"
        )
        lines.append("")
        lines.append("| detector | " + " | ".join(head) + " |")
        lines.append("|---|" + "---:|" * len(kinds))
        for row in block["calls"]:
            cells = []
            for k in kinds:
                e = row["edits"].get(k, {})
                if k == "rewrite":
                    cells.append(f"{e.get('called', 0)} ({e.get('called_unrelated', 0)} J<0.5)")
                else:
                    cells.append(_r(e.get("recall")))
            lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append("Clusters (pairwise, over co-clustered pairs):")
        lines.append("")
        lines.append(
            "| detector | clustering | precision | recall | F1 | unrelated share | largest cluster "
            "| clusters | co-clustered pairs |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for row in block["calls"]:
            for name, cl in row["clusters"].items():
                lines.append(
                    f"| {row['label']} | {name} | {_r(cl['precision'])} | {_r(cl['recall'])} | {_r(cl['f1'])} | "
                    f"{cl['unrelated_share']:.3f} | {_num(cl['largest'])} | {_num(cl['clusters'])} | "
                    f"{_num(cl['co_clustered_pairs'])} |"
                )
        lines.append("")
        lines.append("Where the unrelated calls are (collections of the two documents; J histogram of those pairs):")
        lines.append("")
        for row in block["calls"]:
            p = row["pairs"]
            if not p["unrelated_called"]:
                continue
            top = ", ".join(f"{k}: {v}" for k, v in list(p["unrelated_by_collection"].items())[:4])
            hist = ", ".join(f"{k} {v}" for k, v in p["unrelated_jaccard_histogram"].items())
            lines.append(f"- **{row['label']}**: {top}. J: {hist}")
        lines.append("")
        for row in block["calls"]:
            w = row["pairs"]["worst_unrelated"]
            if not w:
                continue
            lines.append(f"<details><summary>{row['label']}: the {len(w)} unrelated calls with the lowest J</summary>")
            lines.append("")
            lines.append("| J | a | b | a text | b text |")
            lines.append("|---:|---|---|---|---|")
            for x in w:

                def esc(s: str) -> str:
                    return s.replace("|", "\\|")

                lines.append(
                    f"| {x['jaccard']:.3f} | `{x['a']}` | `{x['b']}` | {esc(x['a_text'])} | {esc(x['b_text'])} |"
                )
            lines.append("")
            lines.append("</details>")
            lines.append("")
    return "\n".join(lines) + "\n"


# -- command ------------------------------------------------------------------------------


def _ints(s: str | None) -> list[int] | None:
    return [int(x) for x in s.split(",")] if s else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=build_corpus.ALL_PARTS, default="heldout")
    ap.add_argument(
        "--lang",
        default="en,zh,mixed",
        help="comma-separated: en, zh, mixed; issue 28: mixreal, revisions, revisions-en",
    )
    ap.add_argument("--detectors", default="simpg,simhash,minhash", help="comma-separated registered names")
    ap.add_argument("--k", help="simpg radii, comma-separated (default: DEFAULT_K)")
    ap.add_argument("--simhash-k", help="simhash package radii (default: 3 and DEFAULT_K)")
    ap.add_argument("--simpg-config", help="FingerprintConfig settings as JSON (default: FingerprintConfig())")
    ap.add_argument("--minhash-verify", action="store_true", help="also require estimated J >= threshold")
    ap.add_argument("--clustering", default="components", help=f"comma-separated: {', '.join(metrics.CLUSTERINGS)}")
    ap.add_argument("--plugin", action="append", default=[], help="module to import (registers detectors)")
    ap.add_argument("--worst", type=int, default=20, help="unrelated calls listed per detector")
    ap.add_argument("--build", action="store_true", help="only build the corpus (if needed) and stop")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the corpus from the cached downloads first")
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder for the .md and .json results")
    args = ap.parse_args(argv)

    started = time.time()
    langs = [x.strip() for x in args.lang.split(",") if x.strip()]
    # tune/heldout: sources.json; fresh: sources_fresh.json; mixreal, revisions: sources_issue28.json
    sets = list(dict.fromkeys(build_corpus.set_of(args.part, lang) for lang in langs))
    for cs in sets:
        build_corpus.build(force=args.rebuild, cs=cs)
    if args.build:
        return
    for mod in args.plugin:
        importlib.import_module(mod)
    dets: list[detectors.Detector] = []
    for name in [n.strip() for n in args.detectors.split(",") if n.strip()]:
        if name == "simpg":
            cfg = json.loads(args.simpg_config) if args.simpg_config else None
            dets.append(detectors.make("simpg", config=cfg, ks=_ints(args.k)))
        elif name == "simhash":
            dets.append(detectors.make("simhash", ks=_ints(args.simhash_k)))
        elif name == "minhash":
            dets.append(detectors.make("minhash", verify=args.minhash_verify))
        else:
            dets.append(detectors.make(name))
    clusterings = [x.strip() for x in args.clustering.split(",") if x.strip()]
    result = evaluate(langs, args.part, dets, clusterings=clusterings, worst=args.worst)
    stats: dict = {}
    for cs in sets:
        built = json.loads(cs.stats.read_text())
        stats["built"] = ", ".join(filter(None, [stats.get("built"), built.get("built")]))
        stats.setdefault("versions", {}).update(built.get("versions", {}))
    meta = {
        "command": "python3 -m bench.quality.evaluate " + " ".join(sys.argv[1:] if argv is None else argv),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "corpus_built": stats.get("built"),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}",
        "seconds": time.time() - started,
    }
    result["meta"] = meta
    result["corpus_versions"] = stats.get("versions")
    report = markdown(result, meta)
    sys.stdout.write(report)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    (args.out / f"quality14-{stamp}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"quality14-{stamp}.md").write_text(report)
    log(f"wrote {args.out / f'quality14-{stamp}.json'} and .md ({meta['seconds']:.0f}s)")


if __name__ == "__main__":
    main()
