"""Rebuild en.jsonl and zh.jsonl, the base documents of the quality evaluation.

Sources (see README.md for licences):
  * Python's reference topics, ``pydoc_data.topics`` of the running CPython (PSF-2.0);
  * the Debian FAQ in English and Simplified Chinese, from the Debian packages
    ``debian-faq`` and ``debian-faq-zh-cn`` (fetched with ``apt-get download``).

Run from the repository root:  python3 bench/data/quality/build_dataset.py
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HAN = re.compile(r"[\u3400-\u9fff]")
EN_MIN_WORDS, EN_MAX_WORDS = 120, 1500
ZH_MIN_CHARS, ZH_MAX_CHARS = 150, 1200


def unwrap(paragraph: list[str]) -> str:
    out = ""
    for line in (ln.strip() for ln in paragraph):
        if not line:
            continue
        if not out:
            out = line
        elif HAN.match(line[0]) and (HAN.match(out[-1]) or out[-1] in "，。、；：？！”）"):
            out += line
        else:
            out += " " + line
    return out


def paragraphs(lines: list[str]) -> list[str]:
    paras, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            paras.append(unwrap(cur))
            cur = []
    if cur:
        paras.append(unwrap(cur))
    return [p for p in paras if p]


def size(text: str, zh: bool) -> int:
    return len(HAN.findall(text)) if zh else len(text.split())


def pack(sections: list[tuple[str, str]], zh: bool) -> list[tuple[str, str]]:
    """Merge too-short sections into the next one; split too-long ones at paragraphs."""
    lo, hi = (ZH_MIN_CHARS, ZH_MAX_CHARS) if zh else (EN_MIN_WORDS, EN_MAX_WORDS)
    merged: list[tuple[str, str]] = []
    carry_id, carry = "", ""
    for sid, text in sections:
        text = f"{carry}\n\n{text}" if carry else text
        sid = carry_id or sid
        if size(text, zh) < lo:
            carry_id, carry = sid, text
            continue
        carry_id, carry = "", ""
        parts, cur = [], []
        for para in text.split("\n\n"):
            cur.append(para)
            if size("\n\n".join(cur), zh) >= hi:
                parts.append("\n\n".join(cur))
                cur = []
        if cur:
            if parts and size("\n\n".join(cur), zh) < lo:
                parts[-1] += "\n\n" + "\n\n".join(cur)
            else:
                parts.append("\n\n".join(cur))
        for i, part in enumerate(parts):
            merged.append((sid if len(parts) == 1 else f"{sid}#{i + 1}", part))
    return merged


def python_topics() -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        lines = topics[key].splitlines()
        heads = [
            i
            for i in range(len(lines) - 1)
            if lines[i].strip()
            and re.fullmatch(r"([*=\-~^])\1+", lines[i + 1].strip() or "x")
            and len(lines[i + 1].strip()) == len(lines[i].strip())
        ]
        bounds = heads + [len(lines)]
        if not heads or heads[0] > 0:
            bounds = [0] + bounds
        for n, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
            body = [ln for j, ln in enumerate(lines[a:b]) if not (j == 1 and a in heads)]
            text = "\n\n".join(paragraphs(body))
            if text:
                out.append((f"py:{key}:{n}", text))
    return pack(out, zh=False)


def debian_faq(path: Path, first_chapter: str, zh: bool) -> list[tuple[str, str]]:
    lines = gzip.open(path, "rt", encoding="utf-8").read().splitlines()
    starts = [i for i, ln in enumerate(lines) if re.match(first_chapter, ln)]
    body = lines[starts[0] :]  # skips the title page and the table of contents
    head = re.compile(r"^(\d+(?:\.\d+)*)\.\s\S")
    sections: list[tuple[str, list[str]]] = []
    for line in body:
        m = head.match(line)
        if m:
            sections.append((m.group(1), [line]))
        elif sections:
            sections[-1][1].append(line)
    lang = "zh" if zh else "en"
    out = [(f"debian-faq-{lang}:{sid}", "\n\n".join(paragraphs(ls))) for sid, ls in sections]
    return pack(out, zh=zh)


def grams(text: str, zh: bool) -> set[str]:
    if zh:
        chars = "".join(HAN.findall(text))
        return {chars[i : i + 6] for i in range(len(chars) - 5)}
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i : i + 5]) for i in range(len(words) - 4)}


def distinct(docs: list[tuple[str, str]], zh: bool) -> list[tuple[str, str]]:
    """Drop a document sharing 10% or more of its 5-word (6-character) grams with a kept one.

    The sources repeat some passages (the Python topics quote each other); such pairs
    would be real near-duplicates counted as "unrelated" by the evaluation.
    """
    kept: list[tuple[str, str, set[str]]] = []
    for doc_id, text in docs:
        g = grams(text, zh)
        overlap = max((len(g & h) / max(1, min(len(g), len(h))) for _, _, h in kept), default=0)
        if overlap >= 0.1:
            print(f"dropped {doc_id}: {overlap:.0%} overlap", file=sys.stderr)
            continue
        kept.append((doc_id, text, g))
    return [(i, t) for i, t, _ in kept]


def write(path: Path, docs: list[tuple[str, str]], source: str) -> None:
    with path.open("w", encoding="utf-8") as f:
        for doc_id, text in docs:
            f.write(json.dumps({"id": doc_id, "source": source, "text": text}, ensure_ascii=False))
            f.write("\n")
    print(f"{path.name}: {len(docs)} documents, {path.stat().st_size} bytes", file=sys.stderr)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", "debian-faq", "debian-faq-zh-cn"], cwd=tmp, check=True)
        for deb in Path(tmp).glob("*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        faq = Path(tmp) / "usr/share/doc/debian/FAQ"
        en_faq = debian_faq(faq / "debian-faq.en.txt.gz", r"Chapter\s1\.\s", False)
        zh_faq = debian_faq(faq / "debian-faq.zh-cn.txt.gz", r"第\s1\s章\s", True)
    en = distinct(python_topics() + en_faq, zh=False)
    zh_faq = distinct(zh_faq, zh=True)
    with (HERE / "en.jsonl").open("w", encoding="utf-8") as f:
        for doc_id, text in en:
            source = "python-docs" if doc_id.startswith("py:") else "debian-faq"
            f.write(json.dumps({"id": doc_id, "source": source, "text": text}, ensure_ascii=False))
            f.write("\n")
    print(f"en.jsonl: {len(en)} documents", file=sys.stderr)
    write(HERE / "zh.jsonl", zh_faq, "debian-faq-zh-cn")


if __name__ == "__main__":
    main()
