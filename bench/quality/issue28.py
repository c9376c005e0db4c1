"""The issue-28 parts: mixed scripts as real text mixes them (``mixreal``) and revisions (``revisions``).

    python3 -m bench.quality.issue28                     # download (cached), extract, plant, split, truth
    python3 -m bench.quality.issue28 --force --check     # rebuild from the cached downloads, recount J
    python3 -m bench.quality.issue28 distances --part tune   # duplicates by fingerprint / sketch distance
    python3 -m bench.quality.issue28 --refresh-manifest  # maintainers: re-pin every release's packages
    python3 -m bench.quality.evaluate --part tune --lang mixreal,revisions   # score them

Both come from ``sources_issue28.json``: Debian 11, 12 and 13 packages and translated package
descriptions that ``sources.json`` and ``sources_fresh.json`` do not use, pinned per release by
pool file name and SHA-256. Near duplicates arise as they do in reality: the same page or
section in two releases of a package, a catalogue in two versions, sibling descriptions; the
``mixreal`` part also gets planted variants, the five kinds of :mod:`bench.quality.variants` and
the four of :mod:`bench.quality.mixing` (credit, quote, wrap, untranslate).

A *family* is one document across the releases it appears in (same package, file and, for
sections, heading; for descriptions, language and package). Quotas sample families, and parts
split families (tune 40%, heldout 40%, fresh 20% by SHA-256 of the family), so every revision
of a document is in the same part, in both languages (a catalogue in ``mixreal`` tune is in
``revisions`` tune too). Truth (:mod:`bench.quality.truth`): both parts hold several scripts and
use the mixed-script definition (character 3-grams of the alphanumerics, every script). Output beside the other parts:
``corpus/<lang>.jsonl`` (with ``family`` and ``release`` fields), ``truth/<lang>-<part>.*``,
``stats-issue28.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench.quality` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality import build_corpus, extract, mixing, sources, truth, variants  # noqa: E402
from bench.quality.build_corpus import ISSUE28, _cap, _decode, _rank, compute_truth, dedupe  # noqa: E402
from bench.quality.sources import CACHE, log  # noqa: E402

RELEASES = ("bullseye", "bookworm", "trixie")  # oldest first: of two identical texts the oldest is kept
LANGS = ISSUE28.langs
PARTS = ISSUE28.parts


def load_manifest() -> dict[str, Any]:
    return sources.load_manifest(ISSUE28.manifest)


def part_of(family: str, split: dict[str, float]) -> str:
    """tune / heldout / fresh by SHA-256 of the family (every revision of a document together)."""
    x = int.from_bytes(hashlib.sha256(f"issue28-part:{family}".encode()).digest()[:4], "big") / 2**32
    for part in PARTS:
        x -= split[part]
        if x < 0:
            return part
    return PARTS[-1]


# -- downloads ----------------------------------------------------------------------------


def packages_index(release: str) -> dict[str, dict[str, str]]:
    path = sources.download(
        f"{sources.MIRROR}/dists/{release}/main/binary-amd64/Packages.xz",
        CACHE / "index" / f"Packages-{release}-amd64.xz",
    )
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return {p["Package"]: p for p in sources.parse_deb822(f.read()) if "Package" in p}


def get_deb(release: str, name: str, manifest: dict[str, Any]) -> sources.Deb:
    """The pinned package of a release (the current one, with a warning, if the mirror lost it)."""
    spec = manifest["debs"].get(release, {}).get(name)
    if spec is None:
        raise SystemExit(f"{name} ({release}) is not pinned in {ISSUE28.manifest.name}: run --refresh-manifest")
    dest = CACHE / "debs" / Path(spec["filename"]).name
    try:
        sources.download(f"{sources.MIRROR}/{spec['filename']}", dest, spec["sha256"])
        return sources.Deb(name, spec["version"], spec["filename"], dest, True)
    except sources.Missing:
        log(f"WARNING: {name} {spec['version']} ({release}) is no longer on the mirror; using the current version")
    para = packages_index(release).get(name)
    if para is None:
        raise SystemExit(f"package {name!r} is not in {release}/main") from None
    dest = CACHE / "debs" / Path(para["Filename"]).name
    sources.download(f"{sources.MIRROR}/{para['Filename']}", dest, para["SHA256"])
    return sources.Deb(name, para["Version"], para["Filename"], dest, False)


def index_file(release: str, name: str, manifest: dict[str, Any]) -> Path:
    spec = manifest["indexes"][release][name]
    return sources.download(
        f"{sources.MIRROR}/{spec['path']}", CACHE / "index" / f"{release}-{Path(spec['path']).name}", spec["sha256"]
    )


# -- documents ----------------------------------------------------------------------------

_NUMBERING = re.compile(r"^\s*(?:[0-9A-Z]{1,3}\.)*[0-9A-Z]{0,3}\.?\s+")


def section_key(text: str) -> str:
    """A section's heading without its number (numbers move when a release adds a section)."""
    first = text.strip().split("\n", 1)[0]
    return _NUMBERING.sub("", first).strip().lower()[:80]


_EMACS_CODINGS = {"cn-gb": "gb2312", "chinese-gb2312": "gb2312", "chinese-big5": "big5", "korean-iso-8bit": "euc-kr",
                  "japanese-iso-8bit": "euc-jp", "thai-tis620": "tis-620", "cyrillic-koi8": "koi8-r"}


def decode_with_cookie(raw: bytes) -> str | None:
    """Text of a file that names its coding in an Emacs cookie (``coding: iso-2022-jp``), else UTF-8."""
    m = re.search(rb"coding:\s*([-\w]+)", raw[:400] + raw[-3000:])
    name = m.group(1).decode("ascii").lower() if m else "utf-8"
    name = re.sub(r"-(unix|dos|mac)$", "", name)
    name = _EMACS_CODINGS.get(name, re.sub(r"^(iso-)?latin-(\d+)$", r"iso8859-\2", name))
    try:
        return raw.decode(name)
    except (LookupError, UnicodeDecodeError):
        return None


def _convert(fmt: str, path: str, content: bytes, coll: dict[str, Any]) -> list[tuple[str, str]]:
    """(suffix of the id, text) of one file: one document, or one per section."""
    if fmt == "mo-bilingual":
        return [("", mixing.mo_bilingual(content))]
    if fmt == "tutorial":
        tut = decode_with_cookie(content)
        return [("", tut)] if tut is not None else []
    text = _decode(content, path)
    if text is None:
        return []
    if fmt == "auto":
        fmt = "html" if re.search(r"\.html?(\.gz)?$", path) else "raw"
    if fmt == "man":
        conv = extract.roff_to_text(text)
        return [("", conv)] if conv is not None else []
    if fmt == "html":
        return [("", extract.html_to_text(text, drop_classes=("debug",)))]
    if fmt == "html-sections":
        secs = extract.html_sections(
            text, tuple(coll.get("split", ["h2"])), drop_classes=("navheader", "navfooter", "debug")
        )
        seen: Counter[str] = Counter()
        out = []
        for s in secs:
            key = section_key(s)
            seen[key] += 1
            out.append((f"#{key}" + (f"~{seen[key]}" if seen[key] > 1 else ""), s))
        return out
    if fmt == "raw":
        return [("", text)]
    raise SystemExit(f"unknown format {fmt!r} in collection {coll['name']}")


def collect(manifest: dict[str, Any], versions: dict[str, str], names: list[str]) -> list[dict[str, Any]]:
    """Base documents of every collection and release; quotas sample families."""
    docs: list[dict[str, Any]] = []
    seed = manifest["seed"]
    for coll in manifest["collections"]:
        started = time.perf_counter()
        found: list[dict[str, Any]] = []
        for release in coll["releases"]:
            if "indexes" in coll:
                for name in coll["indexes"]:
                    path = index_file(release, name, manifest)
                    versions[f"{release}/{name}"] = manifest["indexes"][release][name]["sha256"][:16]
                    lang = name.split("-", 1)[1]
                    for pkg, desc in extract.ddtp_descriptions(_decode(path.read_bytes(), path.name) or "", lang):
                        family = f"ddtp/{lang}/{pkg}"
                        found.append({"family": family, "release": release, "package": pkg, "text": desc,
                                      "id": f"{coll['name']}/{release}/{lang}/{pkg}"})
                continue
            for name in coll["debs"]:
                deb = get_deb(release, name, manifest)
                versions[f"{release}/{name}"] = deb.version + ("" if deb.pinned else " (not the pinned version)")
                include = re.compile(coll["include"])
                for path, content, link in sources.deb_data_members(deb.path):
                    if link is not None or content is None or not include.search(path):
                        continue
                    if coll["format"] == "mo-bilingual":
                        who = mixing.mo_translator(content)
                        if who:
                            names.append(who)
                    stem = re.sub(r"\.(gz|bz2|xz)$", "", path)
                    for pattern, repl in coll.get("family_sub", []):  # paths that carry a version
                        stem = re.sub(pattern, repl, stem)
                    try:
                        converted = _convert(coll["format"], path, content, coll)
                    except Exception as exc:  # a file this converter cannot read: skip it, say so
                        log(f"skip {release}/{name}/{path}: {exc!r}")
                        continue
                    for suffix, text in converted:
                        found.append({"family": f"{name}/{stem}{suffix}", "release": release,
                                      "package": name, "text": text,
                                      "id": f"{coll['name']}/{release}/{name}/{path}{suffix}"})
        found = [f for f in found if f["text"].strip()]
        families = sorted({f["family"] for f in found})
        if coll.get("quota") is not None and len(families) > coll["quota"]:
            families = sorted(families, key=lambda fam: _rank(seed, fam))[: coll["quota"]]
        keep = set(families)
        order = {r: k for k, r in enumerate(RELEASES)}
        found = sorted((f for f in found if f["family"] in keep), key=lambda f: (f["family"], order[f["release"]]))
        for f in found:
            docs.append({**f, "lang": coll["lang"], "collection": coll["name"], "kind": coll["kind"],
                         "base": None, "edit": None, "text": _cap(f["text"], manifest["max_chars"])})
        log(f"{coll['lang']:9s} {coll['name']:14s} {len(found):5d} documents, {len(keep)} families "
            f"({time.perf_counter() - started:.1f}s)")
    return docs


# -- variants -----------------------------------------------------------------------------

ALL_KINDS = (*variants.KINDS, *mixing.MIXING_KINDS)
EXTRA_SHARE = 0.3  # of the bases a wrap / untranslate edit applies to, planted besides the draw above


def plant_variants(bases: list[dict[str, Any]], manifest: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """Planted variants of ``variant_share`` of each language's bases: 1-3 kinds of :data:`ALL_KINDS`."""
    out: list[dict[str, Any]] = []
    fmt_of = {c["name"]: c["format"] for c in manifest["collections"]}
    for lang in LANGS:
        share = manifest["variant_share"].get(lang, 0.0)
        mine = [d for d in bases if d["lang"] == lang]
        if not mine or share <= 0:
            continue
        rng = random.Random(f"issue28-variants:{manifest['seed']}:{lang}")
        tok = variants.Tokenizer("mixed")
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for d in mine:
            groups[variants.script_of(d["text"])].append(d)
        vocab: dict[str, list[str]] = {}
        donors: dict[str, list[str]] = {}
        for g, docs in sorted(groups.items()):
            sample = rng.sample(docs, min(400, len(docs)))
            words = [t for d in sample for t in tok.tokens(d["text"][:4000]) if tok.is_word(t) and len(t) < 30]
            vocab[g] = words or ["lorem"]
            donors[g] = [d["text"] for d in sample]
        sample = rng.sample(mine, min(600, len(mine)))
        cjk_lines = sorted({x for d in sample for x in mixing.quotable_lines(d["text"][:6000], cjk=True)})
        latin_lines = sorted({x for d in sample for x in mixing.quotable_lines(d["text"][:6000], cjk=False)})
        pool = sorted(set(names) | {n for d in mine for n in mixing.native_names(d["text"])})
        started = time.perf_counter()
        counts: Counter[str] = Counter()
        planted_ids: set[str] = set()
        for d in mine:
            if rng.random() >= share:
                continue
            n = rng.choices((1, 2, 3), weights=(0.5, 0.35, 0.15))[0]
            made = 0
            for kind in rng.sample(ALL_KINDS, len(ALL_KINDS)):
                if made == n:
                    break
                if kind in mixing.MIXING_KINDS:
                    text = mixing.plant(d["text"], kind, fmt_of[d["collection"]], rng, pool, cjk_lines, latin_lines)
                else:
                    g = variants.script_of(d["text"])
                    text = variants.plant(d["text"], kind, "mixed", rng, tok, vocab[g], donors[g])
                if text is None or text == d["text"] or not truth.shingles(text, lang):
                    continue
                out.append({**d, "id": f"{d['id']}~{kind}", "base": d["id"], "edit": kind, "text": text})
                planted_ids.add(f"{d['id']}~{kind}")
                counts[kind] += 1
                made += 1
        # item 3 of the issue, and partial translations: more of both than a uniform draw gives
        for d in mine:
            fmt = fmt_of[d["collection"]]
            for kind in ("wrap", "untranslate"):
                if rng.random() >= EXTRA_SHARE or f"{d['id']}~{kind}" in planted_ids:
                    continue
                text = mixing.plant(d["text"], kind, fmt, rng, pool, cjk_lines, latin_lines)
                if text is None or text == d["text"] or not truth.shingles(text, lang):
                    continue
                out.append({**d, "id": f"{d['id']}~{kind}", "base": d["id"], "edit": kind, "text": text})
                planted_ids.add(f"{d['id']}~{kind}")
                counts[kind] += 1
        log(f"{lang:9s} variants: {dict(sorted(counts.items()))} ({time.perf_counter() - started:.1f}s)")
    return out


# -- build --------------------------------------------------------------------------------

FIELDS = ("id", "lang", "part", "collection", "kind", "package", "release", "family", "base", "edit", "text")


def build(force: bool = False) -> dict[str, Any]:
    cs = ISSUE28
    if build_corpus.corpus_ready(cs) and not force:
        log(f"corpus is built ({cs.stats}); --force rebuilds it")
        built: dict[str, Any] = json.loads(cs.stats.read_text())
        return built
    t0 = time.perf_counter()
    manifest = load_manifest()
    if not manifest["debs"]:
        raise SystemExit(f"{cs.manifest.name} pins no package: run --refresh-manifest")
    versions: dict[str, str] = {}
    names: list[str] = []
    docs = collect(manifest, versions, names)
    t_collect = time.perf_counter() - t0
    bases, copies, empty = dedupe(docs)
    log(f"{len(docs)} documents extracted, {copies} exact copies and {empty} without shingles dropped: "
        f"{len(bases)} bases; {len(set(names))} translators' names")
    t1 = time.perf_counter()
    planted = plant_variants(bases, manifest, names)
    t_variants = time.perf_counter() - t1
    all_docs = bases + planted
    for d in all_docs:
        d["part"] = part_of(d["family"], manifest["split"])
    build_corpus.CORPUS.mkdir(parents=True, exist_ok=True)
    stats: dict[str, Any] = {
        "format_version": build_corpus.FORMAT_VERSION,
        "set": cs.name,
        "manifest": cs.manifest.name,
        "manifest_sha256": build_corpus._manifest_digest(cs),
        "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "versions": versions,
        "extracted": len(docs),
        "exact_copies_dropped": copies,
        "no_shingles_dropped": empty,
        "translator_names": len(set(names)),
        "langs": {},
    }
    t2 = time.perf_counter()
    for lang in LANGS:
        mine = sorted((d for d in all_docs if d["lang"] == lang),
                      key=lambda d: (d["part"], d["family"], d["base"] or d["id"], d["id"]))
        with cs.corpus_file(lang).open("w", encoding="utf-8") as f:
            for d in mine:
                f.write(json.dumps({k: d[k] for k in FIELDS}, ensure_ascii=False) + "\n")
        s: dict[str, Any] = {"parts": {}}
        for part in cs.parts:
            pd = [d for d in mine if d["part"] == part]
            b = [d for d in pd if d["base"] is None]
            s["parts"][part] = {
                "bases": len(b),
                "variants": len(pd) - len(b),
                "families": len({d["family"] for d in b}),
                "families_in_2_releases_or_more": sum(
                    c >= 2 for c in Counter(d["family"] for d in b).values()),
                "bases_by_collection": dict(sorted(Counter(d["collection"] for d in b).items())),
                "bases_by_release": dict(sorted(Counter(d["release"] for d in b).items())),
                "variants_by_edit": dict(sorted(Counter(d["edit"] for d in pd if d["edit"]).items())),
                "with_cjk_or_hangul": sum(mixing.has_cjk(d["text"]) for d in b),
                "short_bases": sum(len(d["text"]) < build_corpus.SHORT for d in b),
                "median_chars": int(np.median([len(d["text"]) for d in b])) if b else 0,
                "truth": compute_truth(pd, lang, part),
            }
        stats["langs"][lang] = s
    stats["seconds"] = {
        "collect": round(t_collect, 1),
        "variants": round(t_variants, 1),
        "truth": round(time.perf_counter() - t2, 1),
        "total": round(time.perf_counter() - t0, 1),
    }
    cs.stats.write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    log(f"built in {stats['seconds']['total']}s: {cs.stats}")
    return stats


# -- maintainers: re-pin ------------------------------------------------------------------


def refresh_manifest() -> None:
    """Pin every collection's packages and index files in each of its releases (current versions)."""
    manifest = load_manifest()
    used: set[str] = set()
    for other in (sources.MANIFEST, sources.FRESH_MANIFEST):
        used.update(sources.load_manifest(other)["debs"])
    wanted: dict[str, set[str]] = defaultdict(set)
    indexes: dict[str, set[str]] = defaultdict(set)
    for coll in manifest["collections"]:
        for release in coll["releases"]:
            wanted[release].update(coll.get("debs", []))
            indexes[release].update(coll.get("indexes", []))
    clash = sorted(set().union(*wanted.values()) & used)
    if clash:
        raise SystemExit(f"{ISSUE28.manifest.name} uses packages of the other parts: {', '.join(clash)}")
    manifest["debs"], manifest["indexes"] = {}, {}
    for release in RELEASES:
        if wanted[release]:
            index = packages_index(release)
            manifest["debs"][release] = {}
            for name in sorted(wanted[release]):
                para = index.get(name)
                if para is None:
                    raise SystemExit(f"{name} is not in {release}/main")
                manifest["debs"][release][name] = {
                    "version": para["Version"], "filename": para["Filename"],
                    "sha256": para["SHA256"], "size": int(para["Size"]),
                }
        if indexes[release]:
            rel = sources.download(f"{sources.MIRROR}/dists/{release}/Release", CACHE / "index" / f"Release-{release}")
            sums = {}
            for line in rel.read_text().split("SHA256:", 1)[1].splitlines()[1:]:
                if not line.startswith(" "):
                    break
                digest, size, path = line.split()
                sums[path] = (digest, int(size))
            manifest["indexes"][release] = {}
            for name in sorted(indexes[release]):
                path = f"main/i18n/{name}.bz2"
                digest, size = sums[path]
                manifest["indexes"][release][name] = {"path": f"dists/{release}/{path}", "sha256": digest,
                                                      "size": size}
    ISSUE28.manifest.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    n = sum(len(v) for v in manifest["debs"].values())
    log(f"{ISSUE28.manifest.name} re-pinned: {n} packages, {sum(len(v) for v in manifest['indexes'].values())} "
        f"index files")


# -- diagnostics --------------------------------------------------------------------------


def distances(part: str, langs: list[str]) -> None:
    """Duplicate pairs (truth) by the default fingerprints' and sketches' Hamming distances."""
    from bench.quality.detectors import SimpgDetector
    from bench.quality.product import sketches

    for lang in langs:
        docs = build_corpus.load_part(lang, part)
        t = truth.Truth.load(str(build_corpus.TRUTH / f"{lang}-{part}.npz"))
        fps, valid = SimpgDetector().fingerprints(docs)
        sk, has = sketches(docs)
        dup = t.duplicate
        i, j = t.i[dup].astype(np.int64), t.j[dup].astype(np.int64)
        ok = valid[i] & valid[j] & has[i] & has[j]
        x = fps[i] ^ fps[j]
        d = np.array([int(v).bit_count() for v in x.tolist()])
        sd = np.unpackbits(sk[i] ^ sk[j], axis=1).sum(axis=1)
        rev = np.array([docs[a]["family"] == docs[b]["family"] and docs[a]["base"] is None
                        and docs[b]["base"] is None for a, b in zip(i.tolist(), j.tolist(), strict=True)], dtype=bool)
        print(f"## {lang}/{part}: {int(dup.sum())} duplicate pairs ({int(rev.sum())} revisions of one family), "
              f"{int((~ok).sum())} with a document that has no fingerprint or sketch")
        print()
        print("| fingerprint bits apart | pairs | of them revisions | sketch bits apart: median | max |")
        print("|---|---:|---:|---:|---:|")
        for lo, hi in ((0, 0), (1, 3), (4, 4), (5, 7), (8, 11), (12, 15), (16, 64)):
            m = ok & (d >= lo) & (d <= hi)
            med = f"{int(np.median(sd[m]))}" if m.any() else "–"
            mx = f"{int(sd[m].max())}" if m.any() else "–"
            label = f"{lo}" if lo == hi else f"{lo}–{hi}"
            print(f"| {label} | {int(m.sum())} | {int((m & rev).sum())} | {med} | {mx} |")
        print()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", choices=("build", "distances"), default="build")
    ap.add_argument("--force", action="store_true", help="rebuild from the cached downloads")
    ap.add_argument("--check", action="store_true", help="recount sampled pairs' J with Python sets")
    ap.add_argument("--refresh-manifest", action="store_true", help="re-pin versions (maintainers)")
    ap.add_argument("--part", default="tune", choices=PARTS, help="distances: which part")
    ap.add_argument("--lang", default=",".join(LANGS), help="distances: comma-separated")
    args = ap.parse_args(argv)
    if args.refresh_manifest:
        refresh_manifest()
        return
    build(force=args.force)
    if args.command == "distances":
        distances(args.part, [x for x in args.lang.split(",") if x])
    if args.check and build_corpus.check_truth(parts=PARTS, langs=LANGS):
        raise SystemExit("truth check failed")


if __name__ == "__main__":
    main()
