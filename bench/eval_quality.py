"""Near-duplicate detection quality of simpg fingerprints on a labelled set.

Base documents: bench/data/quality/{en,zh}.jsonl (real text, see the README there).
For every base document, variants are generated deterministically from --seed:

  near duplicates (must match)          not near duplicates (must not match)
  format    whitespace/punctuation only  rewrite  35% of words replaced, 10% deleted,
  tok1/2/3  1%, 2%, 3% word edits                  5% inserted, sentences shuffled
  sent_ins  one sentence inserted        + every pair of items from two different
  sent_del  one sentence deleted           base documents (unrelated)
  boiler    header/footer boilerplate

A pair is predicted to match when the Hamming distance of the fingerprints is <= k.
Positives are (original, near-duplicate variant) pairs; negatives are (original,
rewrite) pairs and all pairs across base documents. Reported for k = 0..8: precision,
recall, F1, recall per kind of edit, and unrelated pairs that matched.

Base documents are split by a hash of their id into a tuning part (70%) and a held-out
part (30%); defaults were tuned on "tune" only.

Usage:
  python3 bench/eval_quality.py                          # defaults, held-out split
  python3 bench/eval_quality.py --split tune --lang en --ngram 2 --weighting binary
  python3 bench/eval_quality.py --grid --split tune      # the tuning sweep
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simpg.fingerprint import FingerprintConfig, fingerprint_many  # noqa: E402
from simpg.fingerprint.chinese import tokenizer  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "quality"
KS = range(9)
POSITIVE_KINDS = ("format", "tok1", "tok2", "tok3", "sent_ins", "sent_del", "boiler")
NEGATIVE_KINDS = ("rewrite",)
HAN = re.compile(r"[\u3400-\u9fff]")

EN_BOILER_HEAD = [
    "Home | Products | Docs | Blog | Pricing | Contact | Sign in",
    "Skip to main content. Menu: Home, News, Downloads, Community, Support",
    "You are here: Home > Documentation > Reference",
]
EN_BOILER_FOOT = [
    "Copyright 2024 Example Corp. All rights reserved. Privacy Policy | Terms of Use | Cookie settings",
    "Subscribe to our newsletter! Get 20% off your first order. Free shipping on orders over $50.",
    "Share this page: Facebook Twitter LinkedIn Email. Related posts: Top 10 tips, Getting started guide",
    "Was this page helpful? Yes No. Last updated 3 days ago. Report a problem with this page.",
]
ZH_BOILER_HEAD = [
    "首页 | 产品中心 | 新闻动态 | 技术支持 | 关于我们 | 联系我们 | 登录 注册",
    "当前位置：首页 > 文档中心 > 常见问题",
    "热门推荐：限时优惠 会员专享 新品上市 免费试用",
]
ZH_BOILER_FOOT = [
    "版权所有 © 2024 示例科技有限公司 保留所有权利 京ICP备12345678号 隐私政策 使用条款",
    "扫码关注我们的微信公众号，获取更多精彩内容！新用户注册即送优惠券，全场包邮。",
    "分享到：微信 微博 QQ空间 复制链接。相关阅读：十大技巧 新手入门指南",
    "本文内容由网友自发贡献，版权归原作者所有，如有侵权请联系删除。",
]


@dataclass
class Item:
    group: int
    kind: str
    text: str


def held_out(doc_id: str) -> bool:
    return hashlib.sha256(doc_id.encode()).digest()[0] % 10 < 3


def load(lang: str, split: str) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in (DATA / f"{lang}.jsonl").open(encoding="utf-8")]
    if split == "tune":
        docs = [d for d in docs if not held_out(d["id"])]
    elif split == "heldout":
        docs = [d for d in docs if held_out(d["id"])]
    return docs


# -- edits ---------------------------------------------------------------------------


def zh_words(text: str) -> list[str]:
    return list(tokenizer().cut(text))


def tokens(text: str, lang: str) -> list[str]:
    """Tokens that concatenate back to the text; word tokens are the editable ones."""
    if lang == "zh":
        return zh_words(text)
    return re.findall(r"\s+|\S+", text)


def is_word(tok: str, lang: str) -> bool:
    if lang == "zh":
        # Chinese words and the Latin words and numbers mixed into Chinese text alike.
        return re.search(r"\w", tok) is not None
    return not tok.isspace()


def edit_words(text: str, lang: str, rng: random.Random, vocab: list[str], sub: float, dele: float, ins: float) -> str:
    toks = tokens(text, lang)
    sep = "" if lang == "zh" else " "
    out = []
    for tok in toks:
        if not is_word(tok, lang):
            out.append(tok)
            continue
        r = rng.random()
        if r < sub:
            out.append(rng.choice(vocab))
        elif r < sub + dele:
            continue
        elif r < sub + dele + ins:
            out.append(tok + sep + rng.choice(vocab))
        else:
            out.append(tok)
    return "".join(out)


def sentences(text: str, lang: str) -> list[str]:
    if lang == "zh":
        parts = re.split(r"(?<=[。！？])", text)
    else:
        parts = re.split(r"(?<=[.!?])\s+", text)
    return [p for p in parts if p.strip()]


def join_sentences(sents: list[str], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(sents)


def format_only(text: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        table = {
            "，": ",",
            "。": ". ",
            "：": ":",
            "；": ";",
            "（": "(",
            "）": ")",
            "“": '"',
            "”": '"',
        }
        text = "".join(table.get(c, c) if rng.random() < 0.5 else c for c in text)
        out, col = [], 0
        for c in text:
            out.append(c)
            col += 1
            if col >= rng.randint(28, 40) and HAN.match(c):
                out.append("\n")
                col = 0
        return "".join(out)
    words = text.split()
    out, line = [], 0
    for w in words:
        if rng.random() < 0.3 and w.endswith(","):
            w = w[:-1]
        elif rng.random() < 0.2 and w.endswith("."):
            w = w[:-1] + rng.choice(["!", ";", " ."])
        out.append(w)
        line += len(w) + 1
        if line > rng.randint(55, 80):
            out.append("\n")
            line = 0
        else:
            out.append(rng.choice([" ", " ", " ", "  ", "\t"]))
    return "".join(out)


def variants(text: str, lang: str, rng: random.Random, vocab: list[str], other: str) -> dict[str, str]:
    sents = sentences(text, lang)
    out = {"format": format_only(text, lang, rng)}
    for pct in (1, 2, 3):
        p = pct / 100
        out[f"tok{pct}"] = edit_words(text, lang, rng, vocab, p / 3, p / 3, p / 3)
    extra = rng.choice(sentences(other, lang))
    pos = rng.randint(0, len(sents))
    out["sent_ins"] = join_sentences(sents[:pos] + [extra] + sents[pos:], lang)
    drop = rng.randrange(len(sents))
    out["sent_del"] = join_sentences(sents[:drop] + sents[drop + 1 :], lang)
    if lang == "zh":
        head, foot = rng.choice(ZH_BOILER_HEAD), rng.sample(ZH_BOILER_FOOT, 2)
        out["boiler"] = f"{head}\n\n{text}\n\n{foot[0]}\n{foot[1]}"
    else:
        head, foot = rng.choice(EN_BOILER_HEAD), rng.sample(EN_BOILER_FOOT, 2)
        out["boiler"] = f"{head}\n\n{text}\n\n{foot[0]}\n{foot[1]}"
    rewritten = edit_words(text, lang, rng, vocab, 0.35, 0.10, 0.05)
    shuffled = sentences(rewritten, lang)
    rng.shuffle(shuffled)
    out["rewrite"] = join_sentences(shuffled, lang)
    return out


def build_items(docs: list[dict[str, Any]], lang: str, seed: int) -> list[Item]:
    if lang == "zh":
        vocab = sorted({w for d in docs for w in zh_words(d["text"]) if is_word(w, "zh")})
    else:
        vocab = sorted({w.lower() for d in docs for w in re.findall(r"[A-Za-z]{3,}", d["text"])})
    items: list[Item] = []
    for g, doc in enumerate(docs):
        rng = random.Random(f"{seed}:{doc['id']}")
        other = docs[(g + 1 + rng.randrange(len(docs) - 1)) % len(docs)]["text"]
        items.append(Item(g, "orig", doc["text"]))
        for kind, text in variants(doc["text"], lang, rng, vocab, other).items():
            items.append(Item(g, kind, text))
    return items


# -- scoring -------------------------------------------------------------------------


def popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x).astype(np.int32)


def evaluate(items: list[Item], fps: np.ndarray) -> dict[str, Any]:
    groups = np.array([it.group for it in items])
    kinds = np.array([it.kind for it in items])
    orig_of = {it.group: i for i, it in enumerate(items) if it.kind == "orig"}
    pos_d: dict[str, list[int]] = {k: [] for k in POSITIVE_KINDS}
    neg_same: list[int] = []
    for i, it in enumerate(items):
        if it.kind == "orig":
            continue
        d = int(popcount(np.array([fps[i] ^ fps[orig_of[it.group]]], dtype=np.uint64))[0])
        (pos_d[it.kind] if it.kind in POSITIVE_KINDS else neg_same).append(d)
    # Histogram of distances over all pairs from different base documents.
    cross_hist = np.zeros(65, dtype=np.int64)
    for i in range(len(items)):
        j = np.arange(i + 1, len(items))
        j = j[groups[j] != groups[i]]
        if len(j):
            cross_hist += np.bincount(popcount(fps[j] ^ fps[i]), minlength=65)
    all_pos = np.array([d for k in POSITIVE_KINDS for d in pos_d[k]])
    neg_same_arr = np.array(neg_same)
    rows = []
    for k in KS:
        tp = int((all_pos <= k).sum())
        fn = len(all_pos) - tp
        fp_cross = int(cross_hist[: k + 1].sum())
        fp_rewrite = int((neg_same_arr <= k).sum())
        fp = fp_cross + fp_rewrite
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_kind = {kind: float(np.mean(np.array(v) <= k)) for kind, v in pos_d.items()}
        rows.append(
            dict(
                k=k,
                precision=precision,
                recall=recall,
                f1=f1,
                fp_cross=fp_cross,
                fp_rewrite=fp_rewrite,
                per_kind=per_kind,
            )
        )
    nonzero = np.flatnonzero(cross_hist)
    return {
        "rows": rows,
        "docs": len(orig_of),
        "items": len(items),
        "cross_pairs": int(cross_hist.sum()),
        "min_cross": int(nonzero[0]) if len(nonzero) else None,
        "mean_pos": {k: float(np.mean(v)) for k, v in pos_d.items()},
        "kinds": sorted(set(kinds.tolist())),
    }


def run_peer(items: list[Item], name: str) -> dict[str, Any]:
    """Fingerprints from a peer package (in its own venv, see bench/peers/)."""
    import subprocess
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
    from setup_peers import ensure

    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it.text) + "\n")
        f.flush()
        out = subprocess.run(
            [
                str(ensure(name)),
                str(Path(__file__).resolve().parent / "peers" / "peer_run.py"),
                name,
                "--docs",
                f.name,
                "--all",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    fps = np.array(json.loads(out.stdout)["fingerprints"], dtype=np.uint64)
    return evaluate(items, fps)


def run(items: list[Item], config: FingerprintConfig, workers: int) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    fps = np.array(
        list(fingerprint_many((it.text for it in items), config, workers=workers, chunksize=16)),
        dtype=np.uint64,
    )
    elapsed = time.perf_counter() - t0
    return evaluate(items, fps), elapsed


def print_report(lang: str, split: str, config: FingerprintConfig, res: dict[str, Any], title: str = "") -> None:
    print(
        f"\n## {lang} ({split}): {res['docs']} documents, {res['items']} items, "
        f"{res['cross_pairs']} unrelated pairs, min unrelated distance {res['min_cross']}"
    )
    print(title or f"config {config.identity} {config.to_json()}")
    head = "| k | precision | recall | F1 | unrelated matched | rewrite matched | " + " | ".join(POSITIVE_KINDS) + " |"
    print(head)
    print("|" + "---|" * (6 + len(POSITIVE_KINDS)))
    for r in res["rows"]:
        kinds = " | ".join(f"{r['per_kind'][k]:.2f}" for k in POSITIVE_KINDS)
        print(
            f"| {r['k']} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | "
            f"{r['fp_cross']} | {r['fp_rewrite']} | {kinds} |"
        )
    mean = ", ".join(f"{k} {v:.1f}" for k, v in res["mean_pos"].items())
    print(f"mean distance to the original: {mean}")


def grid(lang: str) -> list[dict[str, Any]]:
    if lang == "zh":
        return [dict(lang="auto", unit="char", ngram=5, top_n=t) for t in (16, 32, 64, 128, 256, None)] + [
            dict(lang="zh", top_n=t) for t in (64, None)
        ]
    return [
        dict(lang="auto", unit="word", ngram=n, weighting=w, anchored=a)
        for n, w, a in itertools.product((1, 2, 3), ("tf", "binary"), (False, True))
    ] + [
        dict(lang="auto", unit="char", ngram=n, weighting=w)
        for n, w in itertools.product((3, 4, 5, 6, 7, 8), ("tf", "binary"))
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", choices=("en", "zh", "all"), default="all")
    ap.add_argument("--split", choices=("tune", "heldout", "all"), default="heldout")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--grid", action="store_true", help="sweep the settings, print one line each")
    ap.add_argument("--unit", choices=("word", "char"))
    ap.add_argument("--config-lang", choices=("auto", "zh", "en"))
    ap.add_argument("--ngram", type=int)
    ap.add_argument("--top-n", type=int, help="0 keeps all terms")
    ap.add_argument("--weighting", choices=("tf", "binary"))
    ap.add_argument("--anchored", action="store_true", default=None)
    ap.add_argument("--hash", choices=("fnv1a", "fnv1", "murmur3"))
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--peer", choices=("simhash", "simhash-pybind"), help="score a peer package instead")
    args = ap.parse_args()
    langs = ("en", "zh") if args.lang == "all" else (args.lang,)
    results = []
    for lang in langs:
        items = build_items(load(lang, args.split), lang, args.seed)
        if args.grid:
            print(f"\n## {lang} ({args.split}) grid: F1 at k=0..8 (best marked *)")
            for overrides in grid(lang):
                cfg = FingerprintConfig(**overrides)
                res, _ = run(items, cfg, args.workers)
                f1s = [r["f1"] for r in res["rows"]]
                best = int(np.argmax(f1s))
                cells = " ".join(f"{f:.3f}{'*' if i == best else ' '}" for i, f in enumerate(f1s))
                print(f"{json.dumps(overrides):70s} {cells} min_unrelated={res['min_cross']}")
                results.append(dict(lang=lang, overrides=overrides, f1=f1s))
            continue
        if args.peer:
            res = run_peer(items, args.peer)
            print_report(lang, args.split, FingerprintConfig(), res, title=f"peer {args.peer}")
            results.append(dict(lang=lang, split=args.split, peer=args.peer, **res))
            continue
        changes: dict[str, Any] = {}
        for key in ("unit", "ngram", "weighting", "anchored", "hash"):
            if getattr(args, key) is not None:
                changes[key] = getattr(args, key)
        if args.top_n is not None:
            changes["top_n"] = args.top_n or None
        if args.config_lang:
            changes["lang"] = args.config_lang
        cfg = FingerprintConfig(**changes)
        res, elapsed = run(items, cfg, args.workers)
        print_report(lang, args.split, cfg, res)
        print(f"fingerprinted {res['items']} items in {elapsed:.1f} s")
        results.append(dict(lang=lang, split=args.split, config=cfg.to_dict(), identity=cfg.identity, **res))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
