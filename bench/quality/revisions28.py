"""Issue 28, the ``revisions`` part: why simpg dedup misses its duplicates, and what would recover them.

Study, not product. Tune part only (the held-out part is for the lead's one final run).

``misses``: the tune duplicates (J >= 0.8, the mixed-script truth: character 3-grams of all
alphanumerics) that ``simpg dedup`` (``Decision()``) does not call, per collection, with their
truth J, the J of word 3-shingles (the English truth's definition), the exact J of the product's
sketch elements (``minhash.shingle_hashes``), fingerprint and sketch distances; and a sample
side by side (the lines only one text holds)::

    python3 -m bench.quality.revisions28 misses --part tune --sample 6

``table``: candidates (a) on every tune part, scored by ``bench.quality.evaluate`` (P, R, F1,
unrelated pairs called, unrelated co-clustered pairs under representative clustering, MinHash
LSH 0.8 F1 beside it)::

    python3 -m bench.quality.revisions28 table --part tune --variants product,T40,T44,two48k4

Variants (``Variant``): ``product`` (``simpg dedup``'s defaults, the ``simpg-dedup`` detector);
``T<t>``: the sketch threshold t; ``two<t>k<k>``: also confirm a pair whose fingerprints are
within k bits when its sketches are within t bits; ``rule:<name>``: another shingling of the
sketch (and its band keys), :data:`SHINGLINGS`, with today's decision.

(b), the script-aware truth, is ``SIMPG_TRUTH=script`` (:mod:`bench.quality.truth`)::

    SIMPG_TRUTH=script python3 -m bench.quality.revisions28 truth --part tune    # builds truth/<lang>-tune.script.npz
    SIMPG_TRUTH=script python3 -m bench.quality.revisions28 table --part tune --variants product,T40,rule:wc3
    SIMPG_TRUTH=script-hangul python3 -m bench.quality.revisions28 truth --part tune   # Hangul by characters
    SIMPG_TRUTH=script-hangul python3 -m bench.quality.revisions28 table --part tune --variants product,rule:wc3

Commands behind the figures of the report (default truth)::

    python3 -m bench.quality.revisions28 misses --part tune --sample 8
    python3 -m bench.quality.revisions28 table --part tune \
        --variants product,T40,T44,T48,two44k4,two48k4,two56k4,two48k2
    python3 -m bench.quality.revisions28 table --part tune --variants rule:na1,rule:na05,rule:wc3,rule:c3

Shinglings (``rule:``): ``product`` (reproduces ``simpg-dedup`` exactly), ``wc3`` (the product's
elements plus the character 3-grams inside every spaced-script word), ``c3`` (character 3-grams
of all letters and digits, every document: the mixed truth's rule), ``na1`` / ``na05``
(``c3`` when non-ASCII letters make at least 1% / 0.5% of the letters, else the product's);
``lang<X>``: ``c3`` when function words of spaced non-English languages (:data:`FOREIGN_LATIN`,
:data:`FOREIGN_OTHER`) make at least X% of the sketch's words and outnumber the English ones
(:data:`ENGLISH`), else the product's; ``latin<X>``: the same with the Latin-script languages
only; ``langw<X>``: the spaced-script words' letters as a character stream of their own;
``langna<X>``: ``lang<X>`` for texts with a character other than ASCII only (SKETCH_VERSION 3
is ``langna05``)::

    python3 -m bench.quality.revisions28 table --part tune \
        --variants product,rule:lang05,rule:lang10,rule:lang15,rule:lang20,rule:latin05,rule:latin10,rule:langw05
    python3 -m bench.quality.revisions28 table --part tune --variants rule:lang03,rule:latin03
    python3 -m bench.quality.revisions28 table --part tune --variants product,rule:lang05,rule:langna05,rule:langna03
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench.quality import build_corpus, truth
from bench.quality.bands import _encode, _sketch_bits, band_keys, shared_band_codes
from bench.quality.detectors import Call, SimpgDetector, _simpg_code_digest, _workers, cached, pairs_within, register
from bench.quality.product import band_keys as product_band_keys
from bench.quality.product import sketches as product_sketches
from simpg.fingerprint import DEDUP_K, minhash

LANGS = ("en", "zh", "mixed", "mixreal", "revisions", "revisions-en")


# -- shingling variants (a) -----------------------------------------------------------------


def _product(text: str) -> np.ndarray:
    return minhash._shingles(text)


def _word_chars(text: str) -> np.ndarray:
    """The product's elements plus character 3-grams inside each spaced-script word (own domain)."""
    folded = minhash._fold(minhash._text(text))
    base = minhash._token_shingles(*minhash._tokens(folded))
    words = [w for w in minhash._WORDS.findall(folded)]
    grams = [w[i:i + 3] for w in words for i in range(max(1, len(w) - 2))]
    if not grams:
        return base
    return np.concatenate([base, minhash._mix(minhash._word_hashes(grams) ^ np.uint64(0x5743480000000000))])


def _letters_c3(text: str) -> np.ndarray:
    """Character 3-grams of every letter and digit (the mixed-script truth's rule), every document."""
    folded = minhash._fold(minhash._text(text))
    codes = minhash._alnum_codes(folded)
    return minhash._ngrams(minhash._mix_in_place(codes + minhash._GOLD), 3, minhash._TAG_CHAR)


def _gate_nonascii(share: float) -> Callable[[str], np.ndarray]:
    """Character 3-grams of all letters when non-ASCII Latin letters make >= ``share`` of the letters."""

    def rule(text: str) -> np.ndarray:
        folded = minhash._fold(minhash._text(text))
        letters = [c for c in folded if c.isalpha()]
        extra = sum(1 for c in letters if not c.isascii())
        if letters and extra >= share * len(letters):
            return _letters_c3(text)
        return minhash._token_shingles(*minhash._tokens(folded))

    return rule


# -- language gate (issue 28): non-English prose of a spaced script by character 3-grams ----------

#: Frequent function words of the spaced non-English languages of the parts (folded), none of them an
#: English word or a frequent token of English technical text (de, die, in, is, per, non, con... left out).
FOREIGN_LATIN: str = """
le la les des du un une et est sont pour dans que qui pas sur avec par au aux ce cette ces il elle ils sa son
ses leur mais où plus peut être été fait comme tous très sans entre aussi vous nous
der das und ist nicht mit für dem ein eine einen einer von auf sich werden wird sind auch oder wenn kann bei
aus nach wie noch nur durch über zum zur im vom diese dieser wurde zu
el los las del y una es para su lo más pero sus este esta ser son también entre puede
il di della dei delle che è sono questo questa anche più nel nella alla gli degli può essere
os das dos em não com uma são foi também ao pelo pela
het een en van dat zijn voor met niet aan ook bij door naar wordt worden deze kan
els amb és per però són
și în este sunt care pentru să din
się nie że jest jak dla przez lub oraz czy jego może przy na
je jsou nebo které který při také jako že
sa ako alebo sú pre
ki pa ili kao što su
och att det som på är av för med till inte ett
og ikke til skal vil jeg af
ir yra kad iš į tai kaip arba buvo nuo apie
és hogy nem egy vagy csak már mint van az
"""
FOREIGN_OTHER: str = """
и в не на что с по как это для он из от к за то же или у бы а но так все вы его если при о до может быть
і що з та як це від або й
је да се су од са као
και το της την του η να ο με για τα που δεν από σε είναι οι στο στην
של את על הוא לא זה עם כי גם אם או
في من على إلى أن عن هذا هذه التي الذي مع لا ما هو كان أو
و در به از که این را با است برای آن یا
"""
ENGLISH: str = """
the of and to a in is it that for on with as this be are by or not from at an was which can will if you your
has have these when all its
"""


def _hash_table(words: str) -> np.ndarray:
    import unicodedata

    folded = {unicodedata.normalize("NFKC", w).casefold() for w in words.split()}
    return np.array(sorted(minhash._word_hash(w) for w in folded), dtype=np.uint64)


_FOREIGN_LATIN = _hash_table(FOREIGN_LATIN)
_FOREIGN_ALL = _hash_table(FOREIGN_LATIN + FOREIGN_OTHER)
_ENGLISH = _hash_table(ENGLISH)


def _foreign_prose(words: np.ndarray, share: float, foreign: np.ndarray) -> bool:
    """Whether function words of ``foreign`` make >= ``share`` of the word tokens and outnumber English's."""
    if not len(words):
        return False
    theirs = int(np.isin(words, foreign).sum())
    return theirs >= share * len(words) and theirs > int(np.isin(words, _ENGLISH).sum())


def _gate_language(share: float, foreign: np.ndarray, separate: bool = False,
                   ascii_too: bool = True) -> Callable[[str], np.ndarray]:
    """``c3`` for a document whose (sketch) words are mostly non-English prose, else the product's elements.

    ``separate``: the spaced-script words' letters as a stream of their own, beside the product's
    character stream (spaceless scripts), instead of all letters in one stream. ``ascii_too``
    False: a text of ASCII characters only keeps the product's elements (no cost for English).
    """

    def rule(text: str) -> np.ndarray:
        folded = minhash._fold(minhash._text(text))
        tokens = minhash._tokens(folded)
        if (not ascii_too and folded.isascii()) or not _foreign_prose(tokens[0], share, foreign):
            return minhash._token_shingles(*tokens)
        if not separate or not len(tokens[2]):
            return _letters_c3(text)
        words, _, chars = minhash._script_runs(folded)
        spelled = minhash._alnum_codes("".join(words))
        return np.concatenate([minhash._ngrams(minhash._mix_in_place(c + minhash._GOLD), 3, minhash._TAG_CHAR)
                               for c in (chars, spelled) if len(c)])

    return rule


SHINGLINGS: dict[str, Callable[[str], np.ndarray]] = {
    "product": _product,
    "wc3": _word_chars,
    "c3": _letters_c3,
    "na1": _gate_nonascii(0.01),
    "na05": _gate_nonascii(0.005),
    **{f"lang{x:02d}": _gate_language(x / 100, _FOREIGN_ALL) for x in (3, 5, 10, 15, 20)},
    **{f"latin{x:02d}": _gate_language(x / 100, _FOREIGN_LATIN) for x in (3, 5, 10, 15, 20)},
    **{f"langw{x:02d}": _gate_language(x / 100, _FOREIGN_ALL, separate=True) for x in (5, 10)},
    **{f"langna{x:02d}": _gate_language(x / 100, _FOREIGN_ALL, ascii_too=False) for x in (3, 5)},
}


def _doc(args: tuple[str, str]) -> tuple[bytes, bytes, int]:
    text, name = args
    try:
        hashes = np.unique(SHINGLINGS[name](text))
    except ValueError:
        hashes = np.zeros(0, dtype=np.uint64)
    if not len(hashes):
        return bytes(minhash.SKETCH_BYTES), bytes(8 * minhash.SKETCH_BITS), 0
    m = minhash._minima(hashes)
    return minhash._sketch_bits(m), m.astype("<u8").tobytes(), len(hashes)


def shingling_arrays(docs: Sequence[dict], name: str) -> dict[str, np.ndarray]:
    """Sketches ``s``, minima ``m``, distinct elements ``c`` under one shingling (cached)."""

    def compute() -> dict[str, np.ndarray]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(_workers()) as pool:
            rows = pool.map(_doc, [(d["text"], name) for d in docs], chunksize=32)
        return {
            "s": np.frombuffer(b"".join(r[0] for r in rows), dtype=np.uint8).reshape(len(rows), -1),
            "m": np.frombuffer(b"".join(r[1] for r in rows), dtype="<u8").reshape(len(rows), -1).astype(np.uint64),
            "c": np.array([r[2] for r in rows], dtype=np.int64),
        }

    digest = hashlib.sha256(_simpg_code_digest().encode() + Path(__file__).read_bytes()).hexdigest()[:16]
    return cached(f"rev28-{name}", digest, docs, compute)


# -- decisions ------------------------------------------------------------------------------


def product_candidates(docs: Sequence[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Today's candidates (fingerprints within DEDUP_K, or a shared band key): i, j, fp distance, sketch distance."""
    from simpg.allpairs import confirmed_pair_chunks

    fps, valid = SimpgDetector().fingerprints(docs)
    sk, has_sketch = product_sketches(docs)
    keys, has_keys = product_band_keys(docs)
    rows = np.flatnonzero(valid & has_sketch)
    parts = list(confirmed_pair_chunks(fps[rows], sk[rows], DEDUP_K, minhash.SKETCH_BITS,
                                       band_keys=(keys[rows], has_keys[rows])))
    cat = np.concatenate
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    return rows[cat([p[0] for p in parts])], rows[cat([p[1] for p in parts])], cat([p[2] for p in parts]), \
        cat([p[3] for p in parts])


def shingling_candidates(docs: Sequence[dict], name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidates under a shingling's own sketch and band keys: i, j, sketch distance."""
    n = len(docs)
    fps, valid = SimpgDetector().fingerprints(docs)
    z = shingling_arrays(docs, name)
    ok = valid & (z["c"] > 0)
    p, _ = pairs_within(fps, ok, DEDUP_K)
    rows = np.flatnonzero(ok)
    keys = band_keys(z["m"], minhash.BANDS, minhash.BAND_ROWS)
    banded = rows[z["c"][rows] >= minhash.MIN_BAND_SHINGLES]
    codes = np.union1d(_encode(p[:, 0], p[:, 1], n), shared_band_codes(keys, banded, n))
    i, j = codes // n, codes % n
    return i, j, _sketch_bits(z["s"], i, j)


class Variant:
    """One candidate change, as a detector for ``bench.quality.evaluate``."""

    name = "rev28"

    def __init__(self, variants: Sequence[str]) -> None:
        self.variants = list(variants)

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        calls = []
        base = None
        for v in self.variants:
            started = time.perf_counter()
            if v.startswith("rule:"):
                i, j, sd = shingling_candidates(docs, v[5:])
                keep = sd <= minhash.MAX_SKETCH_DISTANCE
            else:
                if base is None:
                    base = product_candidates(docs)
                i, j, d, sd = base
                if v == "product":
                    keep = sd <= minhash.MAX_SKETCH_DISTANCE
                elif m := re.fullmatch(r"T(\d+)", v):
                    keep = sd <= int(m.group(1))
                elif m := re.fullmatch(r"two(\d+)k(\d+)", v):
                    keep = (sd <= minhash.MAX_SKETCH_DISTANCE) | ((d <= int(m.group(2))) & (sd <= int(m.group(1))))
                else:
                    raise ValueError(f"unknown variant {v!r}")
            calls.append(Call(label=v, detector=self.name, pairs=np.stack([i[keep], j[keep]], axis=1),
                              params={"variant": v}, not_indexed=0, seconds=time.perf_counter() - started))
        return calls


@register("rev28")
def _variant(variants: str = "product") -> Variant:
    return Variant(variants.split(","))


def table(part: str, langs: Sequence[str], variants: Sequence[str]) -> dict:
    from bench.quality.detectors import make
    from bench.quality.evaluate import evaluate

    r = evaluate(list(langs), part, [Variant(variants), make("minhash")], clusterings=("representative",))
    rows = []
    for lang, block in r["langs"].items():
        mh = next(c for c in block["calls"] if c["detector"] != "rev28")["pairs"]["f1"]
        for c in block["calls"]:
            if c["detector"] != "rev28":
                continue
            p, cl = c["pairs"], c["clusters"]["representative"]
            rows.append({"variant": c["label"], "lang": lang, "P": p["precision"], "R": p["recall"], "F1": p["f1"],
                         "unrelated": p["unrelated_called"], "cluster_unrelated": cl["co_unrelated"],
                         "minhash_f1": mh, "dups": block["corpus"]["duplicate_pairs"]})
    print(f"truth: {truth.definition_name()}; part {part}")
    for v in variants:
        print(f"\n{v}\n\n| part | dups | P | R | F1 | unrelated | rep. cluster unrelated pairs | MinHash F1 | ok |")
        print("|---|---|---|---|---|---|---|---|---|")
        for x in rows:
            if x["variant"] != v:
                continue
            ok = x["F1"] >= 0.92 and x["F1"] > x["minhash_f1"] and x["unrelated"] == 0 and x["cluster_unrelated"] == 0
            print(f"| {x['lang']} | {x['dups']} | {x['P']:.3f} | {x['R']:.3f} | {x['F1']:.3f} | {x['unrelated']} | "
                  f"{x['cluster_unrelated']} | {x['minhash_f1']:.3f} | {'yes' if ok else 'NO'} |")
    return {"rows": rows}


# -- misses -----------------------------------------------------------------------------------


def _j(a: set, b: set) -> float:
    return len(a & b) / max(1, len(a | b))


def misses(part: str, lang: str, sample: int) -> None:
    docs = build_corpus.load_part(lang, part)
    t = truth.Truth.load(str(truth.truth_path(lang, part)))
    dup = t.duplicate
    ti, tj = t.i[dup].astype(np.int64), t.j[dup].astype(np.int64)
    i, j, d, sd = product_candidates(docs)
    n = len(docs)
    called = set(_encode(i[sd <= minhash.MAX_SKETCH_DISTANCE], j[sd <= minhash.MAX_SKETCH_DISTANCE], n).tolist())
    cand = dict(zip(_encode(i, j, n).tolist(), zip(d.tolist(), sd.tolist(), strict=True), strict=True))
    fps, _ = SimpgDetector().fingerprints(docs)
    sk, _ = product_sketches(docs)
    rows = []
    for a, b, inter, union in zip(ti.tolist(), tj.tolist(), t.inter[dup].tolist(), t.union[dup].tolist(), strict=True):
        code = a * n + b
        if code in called:
            continue
        ta, tb = docs[a]["text"], docs[b]["text"]
        w3 = _j(truth.shingles(ta, "en"), truth.shingles(tb, "en"))
        el = _j(set(minhash.shingle_hashes(ta).tolist()), set(minhash.shingle_hashes(tb).tolist()))
        fd = int(bin(int(fps[a]) ^ int(fps[b])).count("1"))
        sdist = int(np.unpackbits(sk[a] ^ sk[b]).sum())
        rows.append({"a": a, "b": b, "collection": docs[a]["collection"], "J": inter / union, "w3": w3, "elem": el,
                     "fp": fd, "sketch": sdist, "candidate": code in cand, "len_a": len(ta), "len_b": len(tb)})
    print(f"{lang}/{part}: {int(dup.sum())} duplicates, {len(rows)} missed")
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["collection"], []).append(r)
    print("\n| collection | missed | median truth J | median word-3 J | median element J | median sketch bits "
          "| no candidate | word-3 J < 0.8 |")
    print("|---|---|---|---|---|---|---|---|")
    for c, rs in sorted(by.items(), key=lambda kv: -len(kv[1])):
        def med(key: str, rs: list[dict] = rs) -> float:
            return float(np.median([r[key] for r in rs]))

        print(f"| {c} | {len(rs)} | {med('J'):.3f} | {med('w3'):.3f} | {med('elem'):.3f} | {med('sketch'):.0f} | "
              f"{sum(not r['candidate'] for r in rs)} | {sum(r['w3'] < 0.8 for r in rs)} |")
    rng = np.random.default_rng(28)
    for k in rng.choice(len(rows), size=min(sample, len(rows)), replace=False).tolist():
        r = rows[k]
        a, b = docs[r["a"]], docs[r["b"]]
        print(f"\n### {a['id']}  vs  {b['id']}\ntruth J {r['J']:.3f}, word-3 J {r['w3']:.3f}, element J "
              f"{r['elem']:.3f}, sketch {r['sketch']} bits, fingerprints {r['fp']} bits, "
              f"lengths {r['len_a']} / {r['len_b']}")
        la, lb = a["text"].splitlines(), b["text"].splitlines()
        diff = [x for x in difflib.unified_diff(la, lb, lineterm="", n=0) if not x.startswith(("---", "+++"))]
        print(f"{len(la)} / {len(lb)} lines; diff {len(diff)} lines, first 12:")
        for x in diff[:12]:
            print("    " + x[:150])
    json.dump(rows, sys.stderr)


def build_truth(part: str, langs: Sequence[str]) -> None:
    """The truth of the current definition (``SIMPG_TRUTH``) for each part: truth/<lang>-<part>[.<def>].npz."""
    for lang in langs:
        path = truth.truth_path(lang, part)
        if path.exists():
            print(f"{path} exists")
            continue
        docs = build_corpus.load_part(lang, part)
        sm = truth.ShingleMatrix.build([d["text"] for d in docs], lang)
        t = truth.all_pairs(sm)
        t.save(str(path))
        print(f"{lang}/{part}: {int(t.duplicate.sum())} duplicates, {len(t.i)} pairs J >= 0.5 -> {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("misses")
    m.add_argument("--part", default="tune")
    m.add_argument("--lang", default="revisions")
    m.add_argument("--sample", type=int, default=6)
    tb = sub.add_parser("table")
    tb.add_argument("--part", default="tune")
    tb.add_argument("--lang", default=",".join(LANGS))
    tb.add_argument("--variants", default="product")
    tr = sub.add_parser("truth")
    tr.add_argument("--part", default="tune")
    tr.add_argument("--lang", default=",".join(LANGS))
    args = parser.parse_args()
    if args.part not in ("tune",):
        raise SystemExit(f"this study runs on the tune part only, not {args.part!r}")
    if args.cmd == "misses":
        misses(args.part, args.lang, args.sample)
    elif args.cmd == "table":
        table(args.part, args.lang.split(","), args.variants.split(","))
    else:
        build_truth(args.part, args.lang.split(","))


if __name__ == "__main__":
    main()
