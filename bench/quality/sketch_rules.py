"""Sketch shingle rules for mixed Han + Latin text (a candidate ``SKETCH_VERSION``; study, not product).

The sketch (``simpg.fingerprint.minhash``) shingles words as word 3-shingles and the
characters of spaceless scripts (Han, kana, Thai...) as character 4-grams. The truth of the
Chinese and mixed-script parts counts character 3-grams of *all* alphanumeric characters, so
in mixed Han + Latin text a Latin word weighs one character 3-gram per letter in the truth and
a share of three word shingles in the sketch. Both unrelated pairs the product's lookup still
calls (heldout's fortune + ``locale``, fresh's LilyPond page + its list of language names,
docs/fingerprinting.md) are that disagreement. These rules change only the shingle set; the
hashing of characters and words, the minima, the sketch's bits and the band keys are the
product's own (``minhash._ngrams``, ``_minima``, ``_sketch_bits``, ``_band_keys``).

Rules (``RULES``), all after the product's ``_fold`` (NFKC + casefold). A document without a
spaceless character is shingled exactly as today under every rule (English is unchanged):

* ``v1``: today's shingles (``minhash._shingles``); reproduces the ``bands-product`` detector.
* ``<gate>-c<n>``: character ``n``-grams of the alphanumeric characters (``str.isalnum``), every
  script, in document order (the zh/mixed truth's rule with n = 3).
* ``<gate>-w3``: spaceless characters as today (4-grams of their stream); each word (a run of
  non-spaceless word characters, the product's ``_WORDS``) gives one shingle per character
  3-gram of its alphanumeric characters (a word of 1-2 such characters: one shingle, itself),
  in a domain of its own. A Latin word then weighs its length, as in the truth.
* ``<gate>-s3``: spaceless characters as today; the non-spaceless alphanumeric characters as one
  stream (across words, as the truth does), character 3-grams of it.

Gates: ``any`` (the document has a spaceless character) or ``p<NN>`` (spaceless characters are at
least NN% of its alphanumeric characters); a document not passing the gate is shingled as today.

Commands::

    python3 -m bench.quality.sketch_rules sweep --part tune        # every rule, banded design, per language
    python3 -m bench.quality.sketch_rules sweep --part tune --t 32,36,40 --min-shingles 0,16,32
    python3 -m bench.quality.evaluate --part heldout --plugin bench.quality.bands \\
        --plugin bench.quality.sketch_rules --detectors bands-product,sketch-rules-best
    python3 -m bench.quality.sketch_rules pairs                    # the two known bad pairs, every rule
    python3 -m bench.quality.sketch_rules cost --part tune         # shingles and CPU time per document

Issue 28 (each script by its own rule; ``RUN_RULES``, ``PRODUCT_RULE``), tune only, then once on heldout::

    python3 -m bench.quality.sketch_rules mixing --rules v1,run2,run2x5,run0w128p15x4   # real-like mixing set
    python3 -m bench.quality.sketch_rules sweep --dedup --part tune --lang zh,mixed,en --rules v1,run0w128p15x4
    python3 -m bench.quality.evaluate --part heldout --lang en,zh,mixed,mixreal,revisions \
        --plugin bench.quality.sketch_rules --detectors sketch-rules-28,minhash
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from bench.quality.bands import _encode, _hamming_pairs, _sketch_bits, band_keys, shared_band_codes
from bench.quality.detectors import Call, SimpgDetector, _simpg_code_digest, _workers, cached, register
from simpg.fingerprint import minhash

#: every rule the tuning sweep compares
RULES = ("v1", "any-c3", "any-c4", "any-w3", "any-s3", "p30-c3", "p50-c3", "p30-w3", "p50-w3")
#: issue 28: each run of one script by its own rule (``minhash._script_runs``): ``run<d>`` spells
#: runs of at most d words between spaceless characters (or one and the text's edge) into the
#: character stream, ``runin<d>`` only runs between two spaceless characters; ``v1`` = ``runinf``
#: (every word spelled: SKETCH_VERSION 1); ``product``: what minhash does now.
RUN_RULES = ("v1", "run0", "run2", "run4", "run8", "run16", "run32", "runin4", "runin8", "runin16")
#: Their general form, ``[g<G>]run[in]<d>[near<N>][w<W>p<P>][x<r>]`` (:func:`study_runs`): ``near<N>``
#: also spells words within N tokens of a spaceless character, ``w<W>p<P>`` words where spaceless
#: characters make P% of the letters within W tokens, ``g<G>`` every word of a text whose letters
#: are G% spaceless; ``x<r>``: each word shingle and r - 1 salted copies (a word weighs r);
#: ``xl<r>``: as many elements as its words' mean length, 1 to r; a final ``k``: Hangul by characters.
#: The rule chosen on tune (issue 28), SKETCH_VERSION 2: what ``minhash`` computes.
PRODUCT_RULE = "run0w128p15xl6k"
#: the rules carried to heldout and fresh, once (chosen on tune; see bench/quality/README.md)
BEST_RULES: tuple[str, ...] = ("any-c3", "any-c4")

# Latin-word character 3-grams get a domain of their own (never equal to a spaceless 4-gram).
_TAG_WCHAR = np.uint64(0x5743480000000000)  # "WCH"
_TAG_NCHAR = np.uint64(0x4E43480000000000)  # "NCH": the non-spaceless alphanumeric stream
_U32 = np.dtype("<u4")


@lru_cache(maxsize=1)
def _alnum_table() -> np.ndarray:
    """For every code point, ``chr(c).isalnum()`` (what the truth keeps)."""
    table = np.fromiter((chr(c).isalnum() for c in range(0x110000)), dtype=bool, count=0x110000)
    table.setflags(write=False)
    return table


def _char_hashes(codes: np.ndarray) -> np.ndarray:
    """The product's per-character hash (``_mix(code + GOLD)``), as ``_token_shingles`` does it."""
    return minhash._mix_in_place(codes.astype(np.uint64) + minhash._GOLD)


def _parse(rule: str) -> tuple[float | None, str]:
    m = re.fullmatch(r"(any|p\d\d)-(c3|c4|w3|s3)", rule)
    if not m:
        raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")
    gate = m.group(1)
    return (None if gate == "any" else int(gate[1:]) / 100), m.group(2)


def study_runs(folded: str, near: int, edges: bool = True, within: int = 0,
               window: int = 0, share: int = 50, gate: int = 200) -> tuple[list[str], str]:
    """The study's general rule: the words shingled as words, and the character stream, of folded text.

    Tokens as in ``minhash._script_runs``. A word goes to the characters when it is in a run
    of at most ``near`` words between two spaceless characters (or one and the text's edge,
    with ``edges``); or within ``within`` tokens of a spaceless character; or when spaceless
    characters make at least ``share`` percent of the letters within ``window`` tokens of it
    (a word counts its length); or, for every word, when spaceless characters make at least
    ``gate`` percent of the document's letters. ``minhash._script_runs`` is ``near=0,
    window=SPACELESS_WINDOW, share=SPACELESS_SHARE`` (checked by the ``cost`` command).
    """
    limit = near
    found = minhash._TOKEN.findall(minhash._join_wrapped(folded))
    n = len(found)
    kinds = np.fromiter((bool(c) for c, _ in found), dtype=bool, count=n)
    at = np.arange(n)
    gap = n + 1 if edges else 2 * n + 2  # an edge is a spaceless neighbour when edges count
    left = np.maximum.accumulate(np.where(kinds, at, -1 if edges else -gap))
    right = np.minimum.accumulate(np.where(kinds, at, n if edges else n + gap)[::-1])[::-1]
    spelled = kinds | (right - left - 1 <= limit)
    if gate <= 100:
        letters = sum(len(w) for c, w in found)
        if 100 * kinds.sum() >= gate * (letters + kinds.sum()):
            spelled[:] = True
    if within:
        lc = np.maximum.accumulate(np.where(kinds, at, -2 * n - 2))
        rc = np.minimum.accumulate(np.where(kinds, at, 3 * n + 3)[::-1])[::-1]
        spelled |= np.minimum(at - lc, rc - at) <= within
    if window:
        # letters in the window: a spaceless character weighs 1, a word its length
        weight = np.fromiter((len(w) or 1 for _, w in found), dtype=np.int64, count=n)
        ends = np.concatenate([[0], np.cumsum(weight)])
        ends_sp = np.concatenate([[0], np.cumsum(np.where(kinds, weight, 0))])
        lo, hi = np.maximum(at - window, 0), np.minimum(at + window + 1, n)
        spelled |= 100 * (ends_sp[hi] - ends_sp[lo]) >= share * (ends[hi] - ends[lo])
    words = [w for (_, w), s in zip(found, spelled.tolist(), strict=True) if not s]
    chars = "".join(c or w for (c, w), s in zip(found, spelled.tolist(), strict=True) if s)
    return words, chars.replace("_", "")


def _run_rule(rule: str) -> tuple[int, bool, int] | None:
    """``run<d>[x<r>]`` / ``runin<d>[x<r>]`` / ``runinf``: (longest run of words spelled, whether edges
    count, copies of each word shingle)."""
    if rule == "v1" or rule == "runinf":
        return 1 << 30, True, 1, 0, 0, 50, 200
    m = re.fullmatch(r"(?:g(\d+))?run(in)?(\d+)(?:near(\d+))?(?:w(\d+)p(\d+))?(?:x(\d+|l\d+))?", rule)
    if not m:
        return None
    r = m.group(7) or "1"
    copies = -int(r[1:]) if r.startswith("l") else int(r)  # negative: letter-weighted, at most -copies
    return (int(m.group(3)), not m.group(2), copies, int(m.group(4) or 0), int(m.group(5) or 0),
            int(m.group(6) or 50), int(m.group(1)) if m.group(1) else 200)


def _letter_copies(word_shingles: np.ndarray, words: list[str], most: int) -> np.ndarray:
    """Each word shingle and copies of it: as many elements as its words' mean length (1 .. ``most``)."""
    if len(words) < minhash._WORD_N or not len(word_shingles):
        return word_shingles
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    count = len(word_shingles)
    mean = (lengths[:count] + lengths[1:count + 1] + lengths[2:count + 2] + 1) // 3
    extra = np.clip(mean, 1, most) - 1
    if most != minhash.WORD_COPIES:
        raise ValueError(f"letter-weighted copies are the product's: xl{minhash.WORD_COPIES}")
    return np.concatenate([word_shingles, minhash._copies(word_shingles, extra)])


def _copies(word_shingles: np.ndarray, r: int) -> np.ndarray:
    """Each word shingle and r - 1 salted copies of it: a word weighs r characters' 3-grams."""
    if r <= 1 or not len(word_shingles):
        return word_shingles
    salts = minhash._mix(np.arange(1, r, dtype=np.uint64) * minhash._GOLD)
    return np.concatenate([word_shingles, minhash._mix((word_shingles[:, None] ^ salts[None, :]).ravel())])


_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
#: The scripts SKETCH_VERSION 1 shingled by characters (the product's less Hangul): the study's default.
_SPACELESS_V1 = minhash._SPACELESS.replace(_HANGUL, "")


@contextmanager
def _spaceless(sp: str):
    """minhash's patterns made for the scripts ``sp`` while the block runs (a rule's set of scripts)."""
    names = ("_SPACELESS_CHARS", "_TOKEN", "_WORDS")
    saved = {name: getattr(minhash, name) for name in names}
    minhash._SPACELESS_CHARS = re.compile(rf"[{sp}]")
    minhash._TOKEN = re.compile(rf"((?=[{sp}])[^\W_])|([^\W{sp}]+)")
    minhash._WORDS = re.compile(rf"[^\W{sp}]+")
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(minhash, name, value)


def shingles(text: str, rule: str) -> np.ndarray:
    """The 64-bit shingle hashes of ``text`` under ``rule`` (in no order, repeats included).

    Scripts by characters: SKETCH_VERSION 1's (Han, kana, Thai...); a rule ending in ``k`` adds
    Hangul (Korean is written with spaces); ``product`` is minhash's own.
    """
    if rule == "product":
        return _shingles_of(text, rule)
    with _spaceless(_SPACELESS_V1 + _HANGUL if rule.endswith("k") else _SPACELESS_V1):
        return _shingles_of(text, rule.removesuffix("k"))


def _word_shingles_v1(folded: str) -> np.ndarray:
    """SKETCH_VERSION 1's shingles of a text without spaceless characters: word 3-shingles, no copies."""
    return minhash._ngrams(minhash._tokens(folded)[0], minhash._WORD_N, minhash._TAG_WORD)


def _shingles_of(text: str, rule: str) -> np.ndarray:
    folded = minhash._fold(minhash._text(text))
    if rule == "product":
        return minhash._token_shingles(*minhash._tokens(folded))
    runs = _run_rule(rule)
    if runs is not None:
        d, edges, r, near, window, share, gate = runs
        if folded.isascii() or minhash._SPACELESS_CHARS.search(folded) is None:
            words_h, _, chars = minhash._tokens(folded)
            words = minhash._WORDS.findall(folded) if r < 0 else []
        else:
            words, letters = study_runs(folded, d, edges, near, window, share, gate)
            words_h, chars = minhash._word_hashes(words), minhash._code_points(letters)
        ws = minhash._ngrams(words_h, minhash._WORD_N, minhash._TAG_WORD)
        ws = _letter_copies(ws, words, -r) if r < 0 else _copies(ws, r)
        cs = minhash._ngrams(minhash._mix_in_place(chars + minhash._GOLD), minhash._CHAR_N, minhash._TAG_CHAR)
        return np.concatenate([ws, cs])
    if folded.isascii():
        return _word_shingles_v1(folded)
    share, kind = _parse(rule)
    codes = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=_U32)
    spaceless = minhash._spaceless_table()[codes]  # Hangul included since issue 28
    alnum = _alnum_table()[codes]
    n_space = int(np.count_nonzero(spaceless & alnum))
    if not spaceless.any() or (share is not None and n_space < share * max(1, int(np.count_nonzero(alnum)))):
        return _word_shingles_v1(folded)
    if kind in ("c3", "c4"):
        return minhash._ngrams(_char_hashes(codes[alnum]), int(kind[1]), minhash._TAG_CHAR)
    # spaceless characters as today: 4-grams of their stream
    parts = [minhash._ngrams(_char_hashes(codes[spaceless]), minhash._CHAR_N, minhash._TAG_CHAR)]
    other = alnum & ~spaceless
    if kind == "s3":
        parts.append(minhash._ngrams(_char_hashes(codes[other]), 3, _TAG_NCHAR))
    else:  # w3: character 3-grams inside each word (the alphanumeric characters of one _WORDS run)
        idx = np.flatnonzero(other)
        if len(idx):
            word_start = np.zeros(len(codes) + 1, dtype=np.int64)
            for w in minhash._WORDS.finditer(folded):
                word_start[w.start()] = 1
            word_id = np.cumsum(word_start[:-1])[idx]  # every alphanumeric non-spaceless char is in a word
            cuts = np.flatnonzero(np.diff(word_id)) + 1
            for seg in np.split(_char_hashes(codes[idx]), cuts):
                parts.append(minhash._ngrams(seg, 3, _TAG_WCHAR))
    return np.concatenate(parts)


def shingle_set(text: str, rule: str) -> np.ndarray:
    """Unique sorted shingle hashes (``shingle_hashes``'s analogue)."""
    return np.unique(shingles(text, rule))


def _doc(args: tuple[str, str]) -> tuple[bytes, bytes, int]:
    """Sketch bytes, minima bytes and distinct shingle count of one document under one rule."""
    text, rule = args
    hashes = np.sort(shingles(text, rule))
    if not len(hashes):
        return bytes(minhash.SKETCH_BYTES), bytes(8 * minhash.SKETCH_BITS), 0
    m = minhash._minima(hashes)
    distinct = int(np.count_nonzero(hashes[1:] != hashes[:-1])) + 1
    return minhash._sketch_bits(m), m.astype("<u8").tobytes(), distinct


def _code_digest() -> str:
    return hashlib.sha256(_simpg_code_digest().encode() + Path(__file__).read_bytes()).hexdigest()[:16]


def rule_arrays(docs: Sequence[dict], rule: str) -> dict[str, np.ndarray]:
    """Per document under ``rule``: sketches ``s`` (n, 32) uint8, minima ``m`` (n, 256) uint64,
    distinct shingles ``c`` (0: no shingle) (cached)."""

    def compute() -> dict[str, np.ndarray]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(_workers()) as pool:
            rows = pool.map(_doc, [(d["text"], rule) for d in docs], chunksize=64)
        return {
            "s": np.frombuffer(b"".join(r[0] for r in rows), dtype=np.uint8).reshape(len(rows), -1),
            "m": np.frombuffer(b"".join(r[1] for r in rows), dtype="<u8").reshape(len(rows), -1).astype(np.uint64),
            "c": np.array([r[2] for r in rows], dtype=np.int64),
        }

    return cached(f"sketchrule-{rule}", _code_digest(), docs, compute)


class RuleBands:
    """The product's lookup (k = 4 index + b bands of r bins, guard m, sketch <= T) under a shingle rule."""

    name = "sketch-rules"

    def __init__(
        self, rules: Sequence[str], ts: Sequence[int] | None = None, ms: Sequence[int] | None = None, k: int = 4
    ) -> None:
        self.rules = list(rules)
        self.ts = list(ts) if ts else [minhash.MAX_SKETCH_DISTANCE]
        self.ms = list(ms) if ms is not None else [minhash.MIN_BAND_SHINGLES]
        self.k = k

    def candidates(self, docs: Sequence[dict], rule: str, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Candidate pairs (i, j) of the lookup under ``rule`` with guard ``m``, their sketch distances, rows."""
        n = len(docs)
        fps, valid = SimpgDetector().fingerprints(docs)
        z = rule_arrays(docs, rule)
        counts = z["c"]
        rows = np.flatnonzero(valid & (counts > 0))
        hp, hd = _hamming_pairs(fps, rows, self.k)
        hcode = _encode(hp[:, 0], hp[:, 1], n)[hd <= self.k]
        keys = band_keys(z["m"], minhash.BANDS, minhash.BAND_ROWS)
        banded = rows[counts[rows] >= m] if m else rows
        codes = np.unique(np.concatenate([hcode, shared_band_codes(keys, banded, n)]))
        i, j = codes // n, codes % n
        return i, j, _sketch_bits(z["s"], i, j), len(rows)

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        n = len(docs)
        calls = []
        for rule in self.rules:
            started = time.perf_counter()
            counts = rule_arrays(docs, rule)["c"]
            for m in self.ms:
                i, j, bits, n_rows = self.candidates(docs, rule, m)
                for t in self.ts:
                    keep = bits <= t
                    calls.append(
                        Call(
                            label=f"{rule} k={self.k} b={minhash.BANDS} r={minhash.BAND_ROWS} m={m} T={t}",
                            detector=self.name,
                            pairs=np.stack([i[keep], j[keep]], axis=1),
                            params={
                                "rule": rule,
                                "k": self.k,
                                "b": minhash.BANDS,
                                "r": minhash.BAND_ROWS,
                                "m": m,
                                "T": t,
                                "candidates": int(len(i)),
                                "candidates_per_lookup": 2 * len(i) / max(1, n_rows),
                                "docs": n,
                                "shingles_mean": float(counts.mean()) if n else 0.0,
                            },
                            not_indexed=n - n_rows,
                            seconds=time.perf_counter() - started,
                        )
                    )
        return calls


class RuleDedup(RuleBands):
    """``simpg dedup``'s decision under a shingle rule: pairs within K bits, sketch <= T; and with band keys.

    Labels ``<rule> dedup K=7 T=36`` (today's ``simpg dedup``) and ``<rule> dedup+bands``
    (the same, plus pairs sharing a band key, the candidate source issue 28 adds).
    """

    name = "sketch-rules-dedup"

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        from bench.quality.detectors import pairs_within
        from simpg.fingerprint import DEDUP_K

        n = len(docs)
        fps, valid = SimpgDetector().fingerprints(docs)
        calls = []
        for rule in self.rules:
            started = time.perf_counter()
            z = rule_arrays(docs, rule)
            ok = valid & (z["c"] > 0)
            p, _ = pairs_within(fps, ok, DEDUP_K)
            kcode = _encode(p[:, 0], p[:, 1], n)
            bi, bj, _, _ = self.candidates(docs, rule, self.ms[0])
            both = np.union1d(kcode, _encode(bi, bj, n))
            for label, codes in (("dedup", kcode), ("dedup+bands", both)):
                i, j = codes // n, codes % n
                bits = _sketch_bits(z["s"], i, j)
                for t in self.ts:
                    keep = bits <= t
                    calls.append(Call(label=f"{rule} {label} K={DEDUP_K} T={t}", detector=self.name,
                                      pairs=np.stack([i[keep], j[keep]], axis=1),
                                      params={"rule": rule, "mode": label, "K": DEDUP_K, "T": t},
                                      not_indexed=int(n - ok.sum()), seconds=time.perf_counter() - started))
        return calls


@register("sketch-rules-dedup")
def _dedup_rules() -> RuleDedup:
    return RuleDedup(RUN_RULES)


@register("sketch-rules-28")
def _issue28_rules() -> RuleDedup:
    """Issue 28's before (``v1``, SKETCH_VERSION 1) and after (:data:`PRODUCT_RULE`), on the same fingerprints."""
    return RuleDedup(("v1", PRODUCT_RULE))


@register("sketch-rules")
def _all_rules() -> RuleBands:
    return RuleBands(RULES)


@register("sketch-rules-best")
def _best_rules() -> RuleBands:
    if not BEST_RULES:
        raise SystemExit("BEST_RULES is empty: choose on tune first")
    return RuleBands(BEST_RULES)


# -- commands -----------------------------------------------------------------------------


def sweep(part: str, langs: Sequence[str], det: RuleBands) -> list[dict]:
    """Precision, recall, F1, unrelated and grey pairs called, candidates per lookup, per rule and language."""
    from bench.quality.evaluate import evaluate

    r = evaluate(list(langs), part, [det], clusterings=())
    rows = []
    for lang, block in r["langs"].items():
        for row in block["calls"]:
            p = row["pairs"]
            rows.append(
                {
                    "lang": lang,
                    **row["params"],
                    "precision": p["precision"],
                    "recall": p["recall"],
                    "f1": p["f1"],
                    "unrelated": p["unrelated_called"],
                    "grey": p["called_grey"],
                    "worst": [(w["jaccard"], w["a"], w["b"]) for w in p["worst_unrelated"][:3]],
                }
            )
    return rows


def table(rows: list[dict], langs: Sequence[str]) -> str:
    head = (
        "| rule | m | T | "
        + " | ".join(f"{x} F1 / P / R | {x} unrel. / grey | {x} cand. | {x} shingles" for x in langs)
        + " |"
    )
    lines = [head, "|---|---|---|" + "---:|" * (4 * len(langs))]
    keys: list[tuple] = []
    for x in rows:
        if (x["rule"], x["m"], x["T"]) not in keys:
            keys.append((x["rule"], x["m"], x["T"]))
    for key in keys:
        cells = []
        for lang in langs:
            x = next(y for y in rows if y["lang"] == lang and (y["rule"], y["m"], y["T"]) == key)
            cells += [
                f"{x['f1']:.3f} / {x['precision']:.3f} / {x['recall']:.3f}",
                f"{x['unrelated']} / {x['grey']}",
                f"{x['candidates_per_lookup']:.2f}",
                f"{x['shingles_mean']:.0f}",
            ]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def known_pairs() -> list[tuple[str, dict, dict]]:
    """Find the two known pairs in the corpus: a base containing the text and the unrelated partner called."""
    from bench.quality import build_corpus

    out = []
    fortune = "亏地不结籽，亏人不相交。"
    docs = build_corpus.load_part("zh", "heldout")
    hits = [d for d in docs if fortune[:5] in d["text"]]
    base = next(d for d in hits if d["base"] is None)
    other = next(d for d in hits if d["base"] == base["id"] and d["id"].endswith("~tokens"))  # "...相交locale。"
    out.append(("heldout: fortune / + locale", base, other))
    docs = build_corpus.load_part("zh", "fresh")
    a = next(d for d in docs if d["id"].endswith("web-big-page.zh.html#125"))
    b = next(d for d in docs if d["id"].endswith("web/bug-reports.zh.html#5"))
    out.append(("fresh: LilyPond help / + languages", a, b))
    a2 = next(d for d in docs if d["id"].endswith("web-big-page.zh.html#125~format"))
    out.append(("fresh: LilyPond help (format variant) / + languages", a2, b))
    return out


def pairs_table(rules: Sequence[str]) -> str:
    from bench.quality.truth import shingles as truth_shingles

    lines = [
        "| pair | truth J | rule | shingles a / b | sketch J | sketch distance | band keys a / b | shared bands |",
        "|---|---:|---|---:|---:|---:|---|---:|",
    ]
    for name, a, b in known_pairs():
        sa, sb = set(truth_shingles(a["text"], "zh")), set(truth_shingles(b["text"], "zh"))
        tj = len(sa & sb) / len(sa | sb)
        for rule in rules:
            ha, hb = shingle_set(a["text"], rule), shingle_set(b["text"], rule)
            sj = len(np.intersect1d(ha, hb)) / len(np.union1d(ha, hb))
            ra, rb = _doc((a["text"], rule)), _doc((b["text"], rule))
            dist = minhash.sketch_distance(ra[0], rb[0])
            ma = np.frombuffer(ra[1], dtype="<u8").astype(np.uint64)[None]
            mb = np.frombuffer(rb[1], dtype="<u8").astype(np.uint64)[None]
            ka = band_keys(ma, minhash.BANDS, minhash.BAND_ROWS)[0] if ra[2] >= minhash.MIN_BAND_SHINGLES else None
            kb = band_keys(mb, minhash.BANDS, minhash.BAND_ROWS)[0] if rb[2] >= minhash.MIN_BAND_SHINGLES else None
            shared = int((ka == kb).sum()) if ka is not None and kb is not None else 0
            lines.append(
                f"| {name} | {tj:.3f} | {rule} | {ra[2]} / {rb[2]} | {sj:.3f} | {dist} | "
                f"{'yes' if ka is not None else 'none'} / {'yes' if kb is not None else 'none'} | {shared} |"
            )
    return "\n".join(lines)


def cost(part: str, rules: Sequence[str], count: int = 1000) -> str:
    """Distinct shingles per document and CPU time of the shingle set, relative to ``minhash.shingle_hashes``.

    ``count`` documents evenly spaced over the part (its collections in corpus order), one process.
    """
    from bench.quality import build_corpus

    lines = [
        "| lang | rule | shingles / doc (mean) | CPU ms / doc (best of 3) | x today's `shingle_hashes` |",
        "|---|---|---:|---:|---:|",
    ]
    for lang in ("en", "zh", "mixed"):
        every = [d["text"] for d in build_corpus.load_part(lang, part)]
        texts = every[:: max(1, len(every) // count)][:count]  # evenly spaced over the part's collections
        for t in texts[:50]:
            if not np.array_equal(shingle_set(t, PRODUCT_RULE), minhash.shingle_hashes(t)):
                raise SystemExit(f"rule {PRODUCT_RULE} differs from minhash.shingle_hashes")

        def timed(f, texts: list[str] = texts) -> float:
            best = float("inf")
            for _ in range(3):
                started = time.process_time()
                for t in texts:
                    f(t)
                best = min(best, time.process_time() - started)
            return 1e3 * best / len(texts)

        _alnum_table()
        base = timed(minhash.shingle_hashes)
        lines.append(
            f"| {lang} | `shingle_hashes` (product, {PRODUCT_RULE}) | "
            f"{np.mean([len(minhash.shingle_hashes(t)) for t in texts]):.0f} | {base:.3f} | 1.00 |"
        )
        for rule in rules:
            ms = timed(lambda t, rule=rule: shingle_set(t, rule))
            mean = np.mean([len(shingle_set(t, rule)) for t in texts])
            lines.append(f"| {lang} | {rule} | {mean:.0f} | {ms:.3f} | {ms / base:.2f} |")
    return "\n".join(lines)


def margin(part: str, langs: Sequence[str], rules: Sequence[str], m: int) -> str:
    """How close the lookup's unrelated candidates come to the limit, and how far the sketch's J is from the truth's.

    Over the candidates of the banded lookup: those with J < 0.5 (not in the truth list) within
    40 / 48 / 56 bits and the smallest distance among them; over the candidates with J >= 0.5 (J
    exact from the truth list), the mean and RMS of (sketch estimate - J), the estimate being
    ``1 - 2 * bits / 256``.
    """
    from bench.quality import build_corpus
    from bench.quality.build_corpus import TRUTH
    from bench.quality.metrics import TruthIndex
    from bench.quality.truth import Truth

    lines = [
        "| lang | rule | candidates | J < 0.5 within 40 / 48 / 56 bits | closest J < 0.5 (bits) "
        "| J >= 0.5: estimate - J, mean / RMS |",
        "|---|---|---:|---:|---:|---:|",
    ]
    det = RuleBands(rules)
    for lang in langs:
        docs = build_corpus.load_part(lang, part)
        ti = TruthIndex(Truth.load(str(TRUTH / f"{lang}-{part}.npz")))
        for rule in rules:
            i, j, bits, _ = det.candidates(docs, rule, m)
            listed, pos = ti.lookup(i, j)
            ub = bits[~listed]
            jj = ti.inter[pos[listed]] / ti.union[pos[listed]]
            err = (1 - 2 * bits[listed] / minhash.SKETCH_BITS) - jj
            lines.append(
                f"| {lang} | {rule} | {len(i)} | {int((ub <= 40).sum())} / {int((ub <= 48).sum())} / "
                f"{int((ub <= 56).sum())} | {int(ub.min()) if len(ub) else '-'} | "
                f"{err.mean():+.3f} / {np.sqrt((err**2).mean()):.3f} |"
            )
    return "\n".join(lines)


# -- issue 28: a tuning set of real-like script mixing, from the tuning part only ------------

MIX_KINDS = {
    "en": ("name", "passage", "kana", "credit"),
    "zh": ("quote-en", "hardwrap", "term", "drop-latin"),
}


def _han_pieces(texts: Sequence[str]) -> list[str]:
    return [m.group() for t in texts for m in re.finditer(r"[\u4e00-\u9fff]{2,40}", t)]


def _kana_pieces(texts: Sequence[str]) -> list[str]:
    return [m.group() for t in texts for m in re.finditer(r"[\u3040-\u30ff\u4e00-\u9fff]{6,24}", t)]


def _english_lines(texts: Sequence[str]) -> list[str]:
    return [line.strip() for t in texts for line in t.splitlines() if 5 <= len(line.split()) <= 15]


def _insert_line(text: str, line: str, rng) -> str:
    lines = text.split("\n")
    at = rng.randrange(len(lines) + 1)
    return "\n".join([*lines[:at], line, *lines[at:]])


def _hardwrap(text: str, rng) -> str:
    """Lines with a spaceless character cut every 28-40 characters, wherever (Latin words too), as
    CJK text is wrapped; lines without one wrapped at spaces, as Latin text is."""
    import textwrap

    width = rng.randint(28, 40)
    out = []
    for line in text.split("\n"):
        if minhash._SPACELESS_CHARS.search(line) is None:
            out.extend(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [line])
        else:
            out.extend(line[i:i + width] for i in range(0, max(1, len(line)), width))
    return "\n".join(out)


def mix_variant(text: str, kind: str, rng, donors: dict[str, list[str]]) -> str:
    """One real-like mixing edit of ``text`` (MIX_KINDS)."""
    if kind == "name":
        name = rng.choice([p for p in donors["han"] if len(p) <= 4] or ["张伟"])[:3]
        words = text.split(" ")
        at = rng.randrange(1, max(2, len(words)))
        return " ".join([*words[:at], f"({name})", *words[at:]])
    if kind == "passage":
        return _insert_line(text, rng.choice(donors["han"])[:40], rng)
    if kind == "kana":
        return _insert_line(text, rng.choice(donors["kana"]), rng)
    if kind == "credit":
        name = rng.choice([p for p in donors["han"] if len(p) <= 4] or ["李四"])[:3]
        return text.rstrip() + f"\n翻译：{name} <translator@example.org>\n"
    if kind == "quote-en":
        return _insert_line(text, rng.choice(donors["en"]), rng)
    if kind == "hardwrap":
        return _hardwrap(text, rng)
    latin = list(re.finditer(r"[A-Za-z][A-Za-z0-9_.-]*", text))
    if kind == "drop-latin" and latin:
        m = rng.choice(latin)
        return text[:m.start()] + text[m.end():]
    # "term" (or nothing Latin to drop): a Latin term after a Han character
    han = list(re.finditer(r"[\u4e00-\u9fff]", text))
    if not han:
        return _hardwrap(text, rng)
    m = rng.choice(han)
    term = rng.choice(["systemd", "apt-get", "Debian", "LibreOffice", "GNOME", "sudo", "PostgreSQL", "UTF-8"])
    return text[:m.end()] + term + text[m.end():]


def mixing_docs(lang: str, bases: int = 500, seed: int = 28) -> list[dict]:
    """Tuning documents: ``bases`` base documents of the tuning part and one mixing variant of each.

    ``en``: English bases with a Chinese name, a Chinese line, a Japanese phrase or a translator's
    credit added. ``zh``: Chinese bases (and Japanese ones of the mixed part, one in three) quoting
    an English line, hard-wrapped at 28-40 characters (Latin words cut at line ends), with a Latin
    term added or one removed. Donor text comes from other tuning documents.
    """
    import random

    from bench.quality import build_corpus

    rng = random.Random(seed)
    en = [d for d in build_corpus.load_part("en", "tune") if d["base"] is None]
    zh = [d for d in build_corpus.load_part("zh", "tune") if d["base"] is None]
    ja = [d for d in build_corpus.load_part("mixed", "tune")
          if d["base"] is None and re.search(r"[\u3040-\u30ff]", d["text"])]
    donors = {"han": _han_pieces([d["text"] for d in zh[:400]]), "kana": _kana_pieces([d["text"] for d in ja[:200]]),
              "en": _english_lines([d["text"] for d in en[:400]])}
    if lang == "en":
        pool = [d for d in en[400:] if len(d["text"].split()) >= 20]
    else:
        pool = zh[400:] + ja[200:]
    rng.shuffle(pool)
    if lang != "en":  # one in three Japanese, where there are enough
        jas = [d for d in pool if d["collection"].endswith("ja") or "ja" in d["collection"]]
        zhs = [d for d in pool if d not in jas]
        pool = zhs[: bases - bases // 3] + jas[: bases // 3]
    docs = []
    for n, d in enumerate(pool[:bases]):
        kind = MIX_KINDS[lang][n % len(MIX_KINDS[lang])]
        docs.append({"id": d["id"], "text": d["text"], "base": None, "edit": None, "collection": d["collection"]})
        docs.append({"id": f"{d['id']}~{kind}", "text": mix_variant(d["text"], kind, rng, donors), "base": d["id"],
                     "edit": kind, "collection": d["collection"]})
    return docs


def mixing(langs: Sequence[str], rules: Sequence[str], ts: Sequence[int], bases: int) -> str:
    """Per rule and mode: P, R, F1, unrelated called, recall per mixing kind, on :func:`mixing_docs`."""
    from bench.quality import metrics
    from bench.quality.truth import ShingleMatrix, all_pairs

    lines = ["| set | rule | mode | P | R | F1 | unrelated | grey | recall per kind |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    det = RuleDedup(rules, ts)
    for lang in langs:
        docs = mixing_docs(lang, bases)
        sm = ShingleMatrix.build([d["text"] for d in docs], lang)
        ti = metrics.TruthIndex(all_pairs(sm))
        n = len(docs)
        where = {d["id"]: k for k, d in enumerate(docs)}
        planted = {}
        for k, d in enumerate(docs):
            if d["edit"]:
                planted.setdefault(d["edit"], []).append((where[d["base"]], k))
        for call in [*det.run(docs, lang), *RuleBands(rules, ts).run(docs, lang)]:
            p = metrics.score_pairs(call.pairs, ti, sm, docs, worst=3)
            called = set((_encode(call.pairs[:, 0], call.pairs[:, 1], n)).tolist()) if len(call.pairs) else set()
            per = []
            for kind, pairs in planted.items():
                a = np.array(pairs)
                listed, pos = ti.lookup(a[:, 0], a[:, 1])
                dup = listed & ti.dup[pos]
                found = sum(1 for (x, y), ok in zip(pairs, dup.tolist(), strict=True) if ok and x * n + y in called)
                per.append(f"{kind} {found}/{int(dup.sum())}")
            mode = call.params.get("mode", "bands k=4")
            lines.append(f"| {lang} | {call.params['rule']} | {mode} T={call.params['T']} | {p['precision']:.3f} | "
                         f"{p['recall']:.3f} | {p['f1']:.3f} | {p['unrelated_called']} | {p['called_grey']} | "
                         f"{', '.join(per)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--part", default="tune")
    s.add_argument("--lang", default="en,zh,mixed")
    s.add_argument("--rules", default=",".join(RULES))
    s.add_argument("--t", default=str(minhash.MAX_SKETCH_DISTANCE))
    s.add_argument("--min-shingles", default=str(minhash.MIN_BAND_SHINGLES))
    s.add_argument("--json", help="also write the rows here")
    s.add_argument("--dedup", action="store_true", help="simpg dedup's decision (K = 7, and with band keys) "
                                                        "instead of the k = 4 + band keys lookup")
    g = sub.add_parser("margin")
    g.add_argument("--part", default="tune")
    g.add_argument("--lang", default="en,zh,mixed")
    g.add_argument("--rules", default=",".join(RULES))
    g.add_argument("--min-shingles", type=int, default=minhash.MIN_BAND_SHINGLES)
    p = sub.add_parser("pairs")
    p.add_argument("--rules", default=",".join(RULES))
    c = sub.add_parser("cost")
    c.add_argument("--part", default="tune")
    c.add_argument("--rules", default=",".join(RULES[1:]))
    c.add_argument("--count", type=int, default=1000)
    x = sub.add_parser("mixing", help="issue 28's real-like script mixing, built from the tuning part")
    x.add_argument("--lang", default="en,zh")
    x.add_argument("--rules", default=",".join(RUN_RULES))
    x.add_argument("--t", default=str(minhash.MAX_SKETCH_DISTANCE))
    x.add_argument("--bases", type=int, default=500)
    args = ap.parse_args(argv)
    if args.cmd == "mixing":
        print(mixing(args.lang.split(","), args.rules.split(","), [int(t) for t in args.t.split(",")], args.bases))
        return
    if args.cmd == "margin":
        if args.part != "tune":
            raise SystemExit("margin is a tuning-part diagnostic")
        print(margin(args.part, args.lang.split(","), args.rules.split(","), args.min_shingles))
        return
    if args.cmd == "pairs":
        print(pairs_table(args.rules.split(",")))
        return
    if args.cmd == "cost":
        print(cost(args.part, args.rules.split(","), args.count))
        return
    if args.part != "tune" and args.rules == ",".join(RULES):
        raise SystemExit("every rule is for the tuning part; give --rules for another part")
    langs = args.lang.split(",")
    if args.dedup:
        from bench.quality.evaluate import evaluate

        r = evaluate(langs, args.part, [RuleDedup(args.rules.split(","), [int(x) for x in args.t.split(",")])],
                     clusterings=())
        print("| lang | rule | mode | P | R | F1 | unrelated | grey |\n|---|---|---|---:|---:|---:|---:|---:|")
        for lang, block in r["langs"].items():
            for row in block["calls"]:
                p, q = row["pairs"], row["params"]
                print(f"| {lang} | {q['rule']} | {q['mode']} T={q['T']} | {p['precision']:.3f} | {p['recall']:.3f} | "
                      f"{p['f1']:.3f} | {p['unrelated_called']} | {p['called_grey']} |")
        return
    det = RuleBands(
        args.rules.split(","), [int(x) for x in args.t.split(",")], [int(x) for x in args.min_shingles.split(",")]
    )
    rows = sweep(args.part, langs, det)
    print(table(rows, langs))
    for x in rows:
        if x["worst"]:
            print(f"{x['lang']} {x['rule']} m={x['m']} T={x['T']}: lowest-J unrelated {x['worst']}", file=sys.stderr)
    if args.json:
        import json

        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
