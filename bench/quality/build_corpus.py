"""Build the issue-14 quality corpus and its exact truth, by one command.

    python3 -m bench.quality.build_corpus              # download (cached), extract, plant, split, truth
    python3 -m bench.quality.build_corpus --force      # rebuild the corpus from the cached downloads
    python3 -m bench.quality.build_corpus --refresh-manifest   # maintainers: re-pin versions (see README)
    python3 -m bench.quality.build_corpus --part fresh # the fresh held-out part (sources_fresh.json), alone

Output in bench/data/quality14/ (git-ignored):
    corpus/<lang>.jsonl        one document per line: id, lang, part, collection, kind, package,
                               base (the base document's id for a variant, else null), edit
                               (variant kind or null), text
    truth/<lang>-<part>.npz    every pair with J >= 0.5 (indices into that part's documents in
                               file order, |A∩B|, |A∪B|)
    truth/<lang>-<part>.tsv.gz the same pairs by document id, with J, for people
    stats.json                 corpus statistics, package versions actually used
    corpus/<lang>-fresh.jsonl, truth/<lang>-fresh.*, stats-fresh.json
                               the same for the fresh part, built from sources_fresh.json alone
    cache/                     the downloaded packages and index files
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import io
import json
import lzma
import random
import re
import sys
import time
import zipfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench.quality` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality import extract, sources, truth, variants  # noqa: E402
from bench.quality.sources import CACHE, DATA, FRESH_MANIFEST, HERE, ISSUE28_MANIFEST, MANIFEST, log  # noqa: E402

CORPUS = DATA / "corpus"
TRUTH = DATA / "truth"
STATS = DATA / "stats.json"
LANGS = ("en", "zh", "mixed")
PARTS = ("tune", "heldout")
SHORT = 300
FORMAT_VERSION = 1  # bump when the corpus changes for the same manifest


@dataclass(frozen=True)
class CorpusSet:
    """One manifest and the parts built from it, with their own corpus files and stats.

    ``main`` (sources.json) holds tune and heldout; ``fresh`` (sources_fresh.json) holds the
    fresh held-out part, from packages and files ``main`` does not use, built on its own so that
    building or rebuilding one never touches the other.
    """

    name: str
    manifest: Path
    parts: tuple[str, ...]
    suffix: str  # of corpus/<lang><suffix>.jsonl and stats<suffix>.json
    langs: tuple[str, ...] = ("en", "zh", "mixed")
    stats_suffix: str | None = None  # stats<stats_suffix>.json when not ``suffix``
    code: tuple[str, ...] = ("build_corpus.py", "extract.py", "variants.py", "truth.py")  # in the digest

    @property
    def stats(self) -> Path:
        return DATA / f"stats{self.suffix if self.stats_suffix is None else self.stats_suffix}.json"

    def corpus_file(self, lang: str) -> Path:
        return CORPUS / f"{lang}{self.suffix}.jsonl"

    def part_of(self, base_id: str) -> str:
        return part_of(base_id) if self.name == "main" else self.parts[0]


MAIN = CorpusSet("main", MANIFEST, PARTS, "")
FRESH = CorpusSet("fresh", FRESH_MANIFEST, ("fresh",), "-fresh")
#: Issue 28: mixed scripts as real text mixes them, and revisions across Debian releases; its own
#: languages, each split into tune, heldout and fresh (bench/quality/issue28.py).
ISSUE28 = CorpusSet(
    "issue28", ISSUE28_MANIFEST, ("tune", "heldout", "fresh"), "", langs=("mixreal", "revisions"),
    stats_suffix="-issue28", code=(*MAIN.code, "mixing.py", "issue28.py"),
)
ALL_PARTS = (*PARTS, "fresh")


def set_of(part: str, lang: str | None = None) -> CorpusSet:
    """The corpus set a part (of a language) is built in."""
    if lang in ISSUE28.langs:
        if part not in ISSUE28.parts:
            raise SystemExit(f"unknown part {part!r} of {lang} (one of {', '.join(ISSUE28.parts)})")
        return ISSUE28
    if part in FRESH.parts:
        return FRESH
    if part in MAIN.parts:
        return MAIN
    raise SystemExit(f"unknown part {part!r} (one of {', '.join(ALL_PARTS)})")


def part_of(base_id: str) -> str:
    """tune / heldout by a hash of the base document's id (variants go with their base)."""
    return "heldout" if hashlib.sha256(f"quality14-part:{base_id}".encode()).digest()[0] & 1 else "tune"


def _rank(seed: int, doc_id: str) -> bytes:
    return hashlib.sha256(f"{seed}:{doc_id}".encode()).digest()


def _decode(raw: bytes, name: str) -> str | None:
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    elif name.endswith(".bz2"):
        raw = bz2.decompress(raw)
    elif name.endswith(".xz"):
        raw = lzma.decompress(raw)
    for enc in ("utf-8", "euc-jp", "latin-1"):
        try:
            return raw.decode(enc)
        except UnicodeDecodeError:
            continue
    return None


MIN_SCRIPT_SHARE = 0.2


def script_ok(text: str, lang: str) -> bool:
    """Chinese documents have >= 20% Han among their alphanumerics; mixed ones >= 20% non-Latin.

    Keeps untranslated pages (a zh_CN help page still all in English) out of the Chinese and
    mixed-script parts; Chinese text mixed with English commands and code stays.
    """
    if lang == "en":
        return True
    alnum = [c for c in text if c.isalnum()]
    if not alnum:
        return False
    if lang == "zh":
        own = sum("\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff" for c in alnum)
    else:
        own = sum(ord(c) > 0x24F for c in alnum)
    return own >= MIN_SCRIPT_SHARE * len(alnum)


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + "\n"


# -- sources -> base documents ------------------------------------------------------------


def _deb_docs(coll: dict, deb: sources.Deb) -> list[tuple[str, str]]:
    """(document id, text) from one package for one collection."""
    include = re.compile(coll["include"])
    fmt = coll["format"]
    out: list[tuple[str, str]] = []
    for path, content, link in sources.deb_data_members(deb.path):
        if link is not None or content is None or not include.search(path):
            continue
        base_id = f"{coll['name']}/{deb.name}/{path}"
        if fmt == "ftl":  # a language pack: one document per Fluent file
            with zipfile.ZipFile(io.BytesIO(content)) as z:
                for member in sorted(z.namelist()):
                    if member.endswith(".ftl"):
                        out.append((f"{base_id}!{member}", z.read(member).decode("utf-8", "replace")))
            continue
        if fmt == "mo":  # a gettext catalogue: its translated strings
            try:
                out.append((base_id, extract.mo_strings(content)))
            except Exception as exc:
                log(f"skip {base_id}: {exc!r}")
            continue
        text = _decode(content, path)
        if text is None:
            continue
        if fmt == "man":
            try:
                conv = extract.roff_to_text(text)
            except Exception as exc:  # a page this converter cannot read: skip it, say so
                log(f"skip {base_id}: {exc!r}")
                continue
            if conv is not None:
                out.append((base_id, conv))
        elif fmt == "html":
            out.append((base_id, extract.html_to_text(text, drop_classes=("debug",))))
        elif fmt == "html-sections":
            secs = extract.html_sections(
                text, tuple(coll.get("split", ["h2"])), drop_classes=("navheader", "navfooter", "debug")
            )
            out.extend((f"{base_id}#{k}", s) for k, s in enumerate(secs))
        elif fmt == "mallard":
            try:
                out.append((base_id, extract.mallard_to_text(text)))
            except Exception as exc:
                log(f"skip {base_id}: {exc!r}")
        elif fmt == "fortune":
            out.extend((f"{base_id}#{k}", s) for k, s in enumerate(extract.fortunes(text)))
        elif fmt in ("raw", "copyright"):
            out.append((base_id, text))
        else:
            raise SystemExit(f"unknown format {fmt!r} in collection {coll['name']}")
    return out


def collect(manifest: dict, versions: dict[str, str]) -> list[dict]:
    """Base documents of every collection, quota-sampled, capped, in a stable order."""
    docs: list[dict] = []
    seed = manifest["seed"]
    limit = manifest["max_chars"]
    for coll in manifest["collections"]:
        started = time.perf_counter()
        found: list[tuple[str, str, str]] = []  # id, text, package
        if "index" in coll:
            spec = manifest["indexes"][coll["index"]]
            path = sources.index_file(coll["index"], spec)
            text = _decode(path.read_bytes(), path.name) or ""
            versions[coll["index"]] = spec.get("sha256", "?")[:16]
            for pkg, desc in extract.ddtp_descriptions(text, coll["ddtp_lang"]):
                found.append((f"{coll['name']}/{pkg}", desc, pkg))
        else:
            if isinstance(coll["debs"], str) and coll["debs"].startswith("@"):  # a package list (.tsv)
                rows = sources.load_copyright_list(HERE / coll["debs"][1:])
                specs = [(r["package"], r) for r in rows]
            else:
                specs = [(name, manifest["debs"].get(name)) for name in coll["debs"]]
            if len(specs) > 8:  # many small packages: download them 8 at a time first
                with ThreadPoolExecutor(8) as pool:
                    list(pool.map(lambda ns: sources.get_deb(*ns), specs))
            for name, spec in specs:
                deb = sources.get_deb(name, spec)
                versions[name] = deb.version + ("" if deb.pinned else " (not the pinned version)")
                found.extend((doc_id, text, name) for doc_id, text in _deb_docs(coll, deb))
        found = [f for f in found if f[1].strip() and script_ok(f[1], coll["lang"])]
        if coll.get("quota") is not None and len(found) > coll["quota"]:
            found.sort(key=lambda f: _rank(seed, f[0]))
            found = found[: coll["quota"]]
        found.sort(key=lambda f: f[0])
        for doc_id, text, pkg in found:
            docs.append(
                {
                    "id": doc_id,
                    "lang": coll["lang"],
                    "collection": coll["name"],
                    "kind": coll["kind"],
                    "package": pkg,
                    "base": None,
                    "edit": None,
                    "text": _cap(text, limit),
                }
            )
        log(f"{coll['lang']:5s} {coll['name']:24s} {len(found):5d} documents ({time.perf_counter() - started:.1f}s)")
    return docs


def dedupe(docs: list[dict]) -> tuple[list[dict], int, int]:
    """Drop exact copies (identical text, same language) and documents with no shingle."""
    seen: set[tuple[str, str]] = set()
    out, copies, empty = [], 0, 0
    for d in docs:
        key = (d["lang"], hashlib.sha256(d["text"].encode()).hexdigest())
        if key in seen:
            copies += 1
            continue
        if not truth.shingles(d["text"], d["lang"]):
            empty += 1
            continue
        seen.add(key)
        out.append(d)
    return out, copies, empty


# -- variants -----------------------------------------------------------------------------


def plant_variants(bases: list[dict], seed: int, share: float) -> list[dict]:
    out: list[dict] = []
    for lang in LANGS:
        mine = [d for d in bases if d["lang"] == lang]
        if not mine:
            continue
        rng = random.Random(f"quality14-variants:{seed}:{lang}")
        tok = variants.Tokenizer(lang)
        groups: dict[str, list[dict]] = defaultdict(list)
        for d in mine:
            groups[variants.script_of(d["text"]) if lang == "mixed" else lang].append(d)
        vocab: dict[str, list[str]] = {}
        donors: dict[str, list[str]] = {}
        for g, docs in groups.items():
            sample = rng.sample(docs, min(400, len(docs)))
            words = [t for d in sample for t in tok.tokens(d["text"][:4000]) if tok.is_word(t) and len(t) < 30]
            vocab[g] = words or ["lorem"]
            donors[g] = [d["text"] for d in sample]
        started = time.perf_counter()
        counts: Counter[str] = Counter()
        for d in mine:
            if rng.random() >= share:
                continue
            n = rng.choices((1, 2, 3), weights=(0.5, 0.35, 0.15))[0]
            kinds = rng.sample(variants.KINDS, len(variants.KINDS))
            g = variants.script_of(d["text"]) if lang == "mixed" else lang
            made = 0
            for kind in kinds:
                if made == n:
                    break
                text = variants.plant(d["text"], kind, lang, rng, tok, vocab[g], donors[g])
                if text is None or not truth.shingles(text, lang):
                    continue
                out.append({**d, "id": f"{d['id']}~{kind}", "base": d["id"], "edit": kind, "text": text})
                counts[kind] += 1
                made += 1
        log(f"{lang:5s} variants: {dict(sorted(counts.items()))} ({time.perf_counter() - started:.1f}s)")
    return out


# -- truth --------------------------------------------------------------------------------


def compute_truth(docs: list[dict], lang: str, part: str) -> dict:
    started = time.perf_counter()
    texts = [d["text"] for d in docs]
    sm = truth.ShingleMatrix.build(texts, lang)
    built = time.perf_counter() - started

    def progress(done: int, n: int) -> None:
        if done == n or (done // 256) % 8 == 0:
            log(f"  truth {lang}/{part}: {done}/{n} rows")

    t = truth.all_pairs(sm, progress=progress)
    TRUTH.mkdir(parents=True, exist_ok=True)
    t.save(str(TRUTH / f"{lang}-{part}.npz"))
    order = np.argsort(-t.jaccard, kind="stable")
    with gzip.open(TRUTH / f"{lang}-{part}.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("id_a\tid_b\tjaccard\tintersection\tunion\n")
        for k in order:
            a, b = docs[t.i[k]]["id"], docs[t.j[k]]["id"]
            f.write(f"{a}\t{b}\t{t.inter[k] / t.union[k]:.6f}\t{t.inter[k]}\t{t.union[k]}\n")
    seconds = time.perf_counter() - started
    dup = int(t.duplicate.sum())
    log(
        f"{lang:5s} {part:7s} truth: {len(docs)} docs, {t.pairs_total:,} pairs, {dup:,} with J>=0.8, "
        f"{len(t.i):,} with J>=0.5 ({built:.1f}s shingles, {seconds:.1f}s total)"
    )
    return {
        "docs": len(docs),
        "pairs": t.pairs_total,
        "pairs_j_ge_0.8": dup,
        "pairs_j_ge_0.5": int(len(t.i)),
        "shingles_total": int(sm.matrix.nnz),
        "seconds": round(seconds, 1),
    }


# -- the command --------------------------------------------------------------------------


def corpus_ready(cs: CorpusSet = MAIN) -> bool:
    if not cs.stats.exists():
        return False
    try:
        stats = json.loads(cs.stats.read_text())
    except ValueError:
        return False
    return bool(stats.get("format_version") == FORMAT_VERSION and stats.get("manifest_sha256") == _manifest_digest(cs))


def _package_lists(manifest: dict[str, Any]) -> list[Path]:
    """The package lists (``"debs": "@file.tsv"``) a manifest's collections name."""
    return sorted(
        {
            HERE / c["debs"][1:]
            for c in manifest["collections"]
            if isinstance(c.get("debs"), str) and c["debs"].startswith("@")
        }
    )


def _manifest_digest(cs: CorpusSet = MAIN) -> str:
    """Digest of the manifest and of the code that turns it into the corpus and truth."""
    h = hashlib.sha256(cs.manifest.read_bytes())
    for path in _package_lists(sources.load_manifest(cs.manifest)):
        h.update(path.read_bytes())
    for mod in cs.code:
        h.update((Path(__file__).resolve().parent / mod).read_bytes())
    return h.hexdigest()


def build(force: bool = False, cs: CorpusSet = MAIN) -> dict[str, Any]:
    if cs is ISSUE28:
        from bench.quality import issue28

        return issue28.build(force)
    if corpus_ready(cs) and not force:
        log(f"corpus is built ({cs.stats}); --force rebuilds it")
        built: dict[str, Any] = json.loads(cs.stats.read_text())
        return built
    t0 = time.perf_counter()
    manifest = sources.load_manifest(cs.manifest)
    versions: dict[str, str] = {}
    docs = collect(manifest, versions)
    t_collect = time.perf_counter() - t0
    bases, copies, empty = dedupe(docs)
    log(
        f"{len(docs)} documents extracted, {copies} exact copies and {empty} without shingles dropped: "
        f"{len(bases)} bases"
    )
    t1 = time.perf_counter()
    planted = plant_variants(bases, manifest["seed"], manifest["variant_share"])
    t_variants = time.perf_counter() - t1
    all_docs = bases + planted
    for d in all_docs:
        d["part"] = cs.part_of(d["base"] or d["id"])
    CORPUS.mkdir(parents=True, exist_ok=True)
    stats: dict = {
        "format_version": FORMAT_VERSION,
        "set": cs.name,
        "manifest": cs.manifest.name,
        "manifest_sha256": _manifest_digest(cs),
        "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "versions": versions,
        "extracted": len(docs),
        "exact_copies_dropped": copies,
        "no_shingles_dropped": empty,
        "langs": {},
    }
    t2 = time.perf_counter()
    for lang in LANGS:
        mine = sorted(
            (d for d in all_docs if d["lang"] == lang), key=lambda d: (d["part"], d["base"] or d["id"], d["id"])
        )
        with cs.corpus_file(lang).open("w", encoding="utf-8") as f:
            for d in mine:
                f.write(
                    json.dumps(
                        {
                            k: d[k]
                            for k in ("id", "lang", "part", "collection", "kind", "package", "base", "edit", "text")
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        s: dict[str, Any] = {"parts": {}}
        for part in cs.parts:
            pd = [d for d in mine if d["part"] == part]
            b = [d for d in pd if d["base"] is None]
            s["parts"][part] = {
                "bases": len(b),
                "variants": len(pd) - len(b),
                "bases_by_kind": dict(sorted(Counter(d["kind"] for d in b).items())),
                "bases_by_collection": dict(sorted(Counter(d["collection"] for d in b).items())),
                "variants_by_edit": dict(sorted(Counter(d["edit"] for d in pd if d["edit"]).items())),
                "short_bases": sum(len(d["text"]) < SHORT for d in b),
                "short_share": round(sum(len(d["text"]) < SHORT for d in b) / max(1, len(b)), 3),
                "median_chars": int(np.median([len(d["text"]) for d in b])) if b else 0,
                "truth": compute_truth(pd, lang, part),
            }
        stats["langs"][lang] = s
    t_truth = time.perf_counter() - t2
    stats["seconds"] = {
        "collect": round(t_collect, 1),
        "variants": round(t_variants, 1),
        "truth": round(t_truth, 1),
        "total": round(time.perf_counter() - t0, 1),
    }
    cs.stats.write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    log(f"built in {stats['seconds']['total']}s: {cs.stats}")
    return stats


def load_part(lang: str, part: str) -> list[dict]:
    """The documents of one language and part, in the order the truth indices refer to."""
    with set_of(part, lang).corpus_file(lang).open(encoding="utf-8") as f:
        return [d for d in map(json.loads, f) if d["part"] == part]


# -- maintainers: re-pin the manifest -----------------------------------------------------


def _dep5_licences(text: str) -> str:
    names = sorted({m.strip() for m in re.findall(r"^License:[ \t]*(\S[^\n]*)$", text, flags=re.M)})
    if names:
        return "; ".join(names)[:300]
    m = re.search(r"\b(GPL|LGPL|BSD|MIT|Apache|Artistic|MPL|public domain|Expat)[^\n]{0,40}", text, flags=re.I)
    return f"(not DEP-5) {m.group(0).strip()}" if m else "(not DEP-5) see copyright"


def refresh_manifest(n_copyright: int, max_size: int, cs: CorpusSet = MAIN) -> None:
    """Re-pin a set's packages and index files; re-select its copyright packages.

    The fresh set's packages must not be the main set's, and its copyright packages come from
    other source packages than the main set's list and either manifest's packages (another hash
    order), so that nothing in the fresh part comes from a package tune or heldout read.
    """
    manifest = sources.load_manifest(cs.manifest)
    index = sources.packages_index()
    excluded_sources: set[str] = set()
    if cs is not MAIN:
        main = sources.load_manifest(MAIN.manifest)
        shared = sorted(set(manifest["debs"]) & set(main["debs"]))
        if shared:
            raise SystemExit(f"{cs.manifest.name} uses packages of {MAIN.manifest.name}: {', '.join(shared)}")
        for lst in _package_lists(main):
            excluded_sources.update(r["source"] for r in sources.load_copyright_list(lst))
        for name in (*main["debs"], *manifest["debs"]):
            if name in index:
                excluded_sources.add(index[name].get("Source", name).split()[0])
    for name, spec in manifest["debs"].items():
        para = index.get(name)
        if para is None:
            raise SystemExit(f"{name} not in {sources.SUITE}/main")
        spec.update(version=para["Version"], filename=para["Filename"], sha256=para["SHA256"], size=int(para["Size"]))
        if cs is not MAIN:  # also record the DEP-5 License names of the package's own copyright file
            deb = sources.get_deb(name, spec)
            for path, content, _ in sources.deb_data_members(deb.path):
                if content is not None and path == f"usr/share/doc/{name}/copyright":
                    spec["copyright_licences"] = _dep5_licences(content.decode("utf-8", "replace"))
                    break
    release = sources.download(f"{sources.MIRROR}/dists/{sources.SUITE}/Release", CACHE / "index" / "Release")
    sums = {}
    in_sha = False
    for line in release.read_text().splitlines():
        if line.startswith("SHA256:"):
            in_sha = True
            continue
        if in_sha and line.startswith(" "):
            digest, size, path = line.split()
            sums[f"dists/{sources.SUITE}/{path}"] = (digest, int(size))
        elif in_sha:
            in_sha = False
    for spec in manifest["indexes"].values():
        spec["sha256"], spec["size"] = sums[spec["path"]]
    cs.manifest.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    lists = _package_lists(manifest)
    if len(lists) != 1:
        raise SystemExit(f"{cs.manifest.name}: expected one copyright package list, found {len(lists)}")
    salt = "quality14-copyright" if cs is MAIN else f"quality14-{cs.name}-copyright"
    # copyright files: the smallest binary package of each source package, chosen by a hash
    by_source: dict[str, dict[str, str]] = {}
    for name, para in index.items():
        src = para.get("Source", name).split()[0]
        if name in manifest["debs"] or src in excluded_sources or int(para.get("Size", "0")) > max_size:
            continue
        cur = by_source.get(src)
        if cur is None or (int(para["Size"]), name) < (int(cur["Size"]), cur["Package"]):
            by_source[src] = para
    chosen = sorted(by_source.items(), key=lambda kv: hashlib.sha256(f"{salt}:{kv[0]}".encode()).digest())
    rows = []
    for src, para in chosen[:n_copyright]:
        deb = sources.get_deb(
            para["Package"], {"filename": para["Filename"], "sha256": para["SHA256"], "version": para["Version"]}
        )
        lic = "?"
        for path, content, _ in sources.deb_data_members(deb.path):
            if content is not None and re.fullmatch(r"usr/share/doc/[^/]+/copyright", path):
                lic = _dep5_licences(content.decode("utf-8", "replace"))
                break
        rows.append((para["Package"], para["Version"], src, para["Filename"], para["SHA256"], lic))
    rows.sort()
    with lists[0].open("w", encoding="utf-8") as f:
        f.write("package\tversion\tsource\tfilename\tsha256\tlicence\n")
        for r in rows:
            f.write("\t".join(x.replace("\t", " ") for x in r) + "\n")
    log(f"manifest re-pinned: {len(manifest['debs'])} packages, {len(rows)} copyright packages")


def check_truth(
    samples: int = 20000, seed: int = 1, parts: tuple[str, ...] = PARTS, langs: tuple[str, ...] = LANGS
) -> int:
    """Recount J with Python sets for random pairs, listed pairs and planted pairs; mismatches."""
    bad_total = 0
    for lang in langs:
        for part in parts:
            docs = load_part(lang, part)
            t = truth.Truth.load(str(TRUTH / f"{lang}-{part}.npz"))
            keys = {int(k): (int(a), int(b)) for k, a, b in zip(t.keys, t.inter, t.union, strict=True)}
            sets = [truth.shingles(d["text"], lang) for d in docs]
            rng = random.Random(seed)
            n = len(docs)
            pairs = [(rng.randrange(n), rng.randrange(n)) for _ in range(samples)]
            pairs += [(int(a), int(b)) for a, b in zip(t.i[:samples], t.j[:samples], strict=True)]
            where = {d["id"]: k for k, d in enumerate(docs)}
            pairs += [(where[d["base"]], k) for k, d in enumerate(docs) if d["base"]]
            bad = checked = 0
            for a, b in pairs:
                if a == b:
                    continue
                a, b = min(a, b), max(a, b)
                inter = len(sets[a] & sets[b])
                union = len(sets[a] | sets[b])
                listed = keys.get(a * n + b)
                checked += 1
                if (2 * inter >= union) != (listed is not None) or (listed and listed != (inter, union)):
                    bad += 1
            log(f"check {lang}/{part}: {checked} pairs recounted with Python sets, {bad} mismatches")
            bad_total += bad
    return bad_total


def overlap_with_main(cs: CorpusSet = FRESH) -> dict[str, Any]:
    """How many of a set's base documents have a near copy among the main set's bases (exact J).

    For the fresh part: a fresh document with J >= 0.8 (or >= 0.5) to some tune or heldout
    document is text a design choice may have seen in another form. Needs both sets built.
    """
    out: dict[str, Any] = {}
    for lang in LANGS:
        mine = [d for part in cs.parts for d in load_part(lang, part) if d["base"] is None]
        other = [d for part in MAIN.parts for d in load_part(lang, part) if d["base"] is None]
        sm = truth.ShingleMatrix.build([d["text"] for d in mine + other], lang)
        a, b = sm.matrix[: len(mine)], sm.matrix[len(mine) :].T.tocsc()
        best = np.zeros(len(mine))
        for s in range(0, len(mine), 256):
            prod = (a[s : s + 256] @ b).tocoo()
            r = prod.row.astype(np.int64) + s
            inter = prod.data.astype(np.int64)
            union = sm.sizes[r] + sm.sizes[len(mine) + prod.col] - inter
            np.maximum.at(best, r, inter / union)
        dup, grey = best >= 0.8, (best >= 0.5) & (best < 0.8)
        by_coll = Counter(d["collection"] for d, x in zip(mine, dup, strict=True) if x)
        out[lang] = {
            "bases": len(mine),
            "main_bases": len(other),
            "with_j_ge_0.8": int(dup.sum()),
            "with_j_0.5_0.8": int(grey.sum()),
            "j_ge_0.8_by_collection": dict(by_coll.most_common()),
        }
        log(
            f"overlap {lang}: {len(mine)} {cs.name} bases, {int(dup.sum())} with J >= 0.8 and {int(grey.sum())} "
            f"with 0.5 <= J < 0.8 to one of {len(other)} tune/heldout bases; J >= 0.8 by collection: {dict(by_coll)}"
        )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="rebuild even if the corpus is up to date")
    ap.add_argument("--refresh-manifest", action="store_true", help="re-pin package versions (maintainers)")
    ap.add_argument("--check", action="store_true", help="recount sampled pairs' J with Python sets")
    ap.add_argument(
        "--overlap", action="store_true", help="with --part fresh: fresh bases near a tune/heldout base (builds both)"
    )
    ap.add_argument(
        "--part",
        choices=ALL_PARTS,
        help="tune/heldout (the default: both, from sources.json) or fresh (sources_fresh.json, built alone)",
    )
    ap.add_argument("--copyright-packages", type=int, help="default: 1,400 (main), 1,000 (fresh)")
    ap.add_argument("--copyright-max-size", type=int, default=100_000, help="bytes, per .deb")
    args = ap.parse_args(argv)
    cs = set_of(args.part) if args.part else MAIN
    if args.refresh_manifest:
        n = args.copyright_packages or (1400 if cs is MAIN else 1000)
        refresh_manifest(n, args.copyright_max_size, cs)
        return
    build(force=args.force, cs=cs)
    if args.check and check_truth(parts=cs.parts):
        raise SystemExit("truth check failed")
    if args.overlap and cs is not MAIN:
        build(cs=MAIN)
        overlap = overlap_with_main(cs)
        stats = json.loads(cs.stats.read_text())
        stats["overlap_with_main"] = overlap
        cs.stats.write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
