"""Product-realistic shingles for the two-stage sketch (issue 14): chosen from the document alone.

``bench.quality.twostage`` sketches the truth's own shingles, picked per corpus part (English
word 3-shingles, Chinese and mixed character 3-grams). A product does not know the part; these
rules look only at the text. All start from ``NFKC`` + ``str.casefold``.

"Spaceless" characters (scripts written without spaces between words): Han (CJK unified and
compatibility ideographs, all extension blocks, ``々〆〇``), Hiragana, Katakana (incl. the
phonetic extensions and ``ー``), Bopomofo, Thai, Lao, Khmer, Myanmar, Tibetan; with
``hangul=True`` also Hangul (Korean is written with spaces, so by default it is "words").

Rules (``VARIANTS``):

* ``auto<n>``: word tokens are the maximal runs of ``\\w`` characters that are not spaceless
  (``[^\\W<spaceless>]+``), in document order, as one stream across the whole document: word
  3-shingles of that stream. Spaceless characters, in document order as one stream (punctuation,
  spaces and words between them skipped, like the truth's alphanumeric 3-grams): character
  ``n``-grams of that stream. The set is the union (word shingles and character n-grams hashed
  in separate domains). A document with fewer than 3 words contributes its word sequence as one
  shingle (if any), fewer than n spaceless characters likewise.
* ``autorun<n>``: as ``auto<n>`` but character n-grams only inside each maximal run of spaceless
  characters (a run shorter than n is one shingle).
* ``auto<n>k``: ``auto<n>`` with Hangul counted as spaceless.
* ``char<n>``: character n-grams of the alphanumeric characters (``str.isalnum``), every script
  (the zh/mixed truth's rule applied to everything).
* ``word3``: word 3-shingles of ``\\w+`` everywhere (a spaceless run is one "word").
* ``<rule>/<seed>``: the same shingle set, every hash re-mixed with ``seed`` (another hash function).
"""

from __future__ import annotations

import re
import unicodedata

import mmh3
import numpy as np

from simpg.fingerprint import minhash

M64 = (1 << 64) - 1
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
#: domain tags: word shingles and character n-grams never share a hash by construction
_TAG_WORD = np.uint64(0x5752440000000000)
_TAG_CHAR = np.uint64(0x4348520000000000)

_SPACELESS = minhash._SPACELESS  # the product's definition (simpg.fingerprint.minhash)
_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"


def _compile(hangul: bool) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    sp = _SPACELESS + (_HANGUL if hangul else "")
    return (
        re.compile(rf"[^\W{sp}]+"),  # words
        re.compile(rf"[{sp}]"),  # spaceless characters, one by one
        re.compile(rf"[{sp}]+"),  # spaceless runs
    )


_RX = {False: _compile(False), True: _compile(True)}
_WORDS_ALL = re.compile(r"\w+")

_WORD_HASH: dict[str, int] = {}


def _word_hash(w: str) -> int:
    h = _WORD_HASH.get(w)
    if h is None:
        h = mmh3.hash64(w, signed=False)[0]
        if len(_WORD_HASH) < 2_000_000:
            _WORD_HASH[w] = h
    return h


def _mix(x: np.ndarray) -> np.ndarray:
    return minhash._mix(x)


def _ngrams(t: np.ndarray, n: int, tag: np.ndarray) -> np.ndarray:
    """Hashes of the n-grams of the token-hash sequence t; a sequence shorter than n is one shingle."""
    with np.errstate(over="ignore"):
        if len(t) == 0:
            return np.zeros(0, dtype=np.uint64)
        if len(t) < n:
            h = _mix(np.array([tag ^ (np.uint64(len(t)) * _GOLD)]))
            for x in t:
                h = _mix(h ^ x)
            return h
        h = _mix(t[: len(t) - n + 1] ^ tag)
        for j in range(1, n):
            h = _mix(h ^ t[j : len(t) - n + 1 + j])
    return h


def _word_stream(words: list[str]) -> np.ndarray:
    return np.fromiter((_word_hash(w) for w in words), dtype=np.uint64, count=len(words))


def _char_stream(chars: str | list[str]) -> np.ndarray:
    return _mix(np.fromiter((ord(c) for c in chars), dtype=np.uint64, count=len(chars)) + _GOLD)


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def shingle_hashes(text: str, variant: str) -> np.ndarray:
    """64-bit hashes of the shingle set of ``text`` under ``variant`` (unique, sorted)."""
    variant, _, seed = variant.partition("/")
    if seed:  # "<rule>/<seed>": the same rule under another hash function (robustness of T)
        h = _ngrams(shingle_hashes(text, variant), 1, np.uint64(int(seed)) * _GOLD)
        return np.unique(h)
    t = normalise(text)
    parts: list[np.ndarray] = []
    m = re.fullmatch(r"(auto|autorun)(\d)(k?)", variant)
    if m:
        kind, n, hangul = m.group(1), int(m.group(2)), bool(m.group(3))
        rx_w, rx_c, rx_run = _RX[hangul]
        parts.append(_ngrams(_word_stream(rx_w.findall(t)), 3, _TAG_WORD))
        if kind == "auto":
            parts.append(_ngrams(_char_stream(rx_c.findall(t)), n, _TAG_CHAR))
        else:
            for run in rx_run.findall(t):
                parts.append(_ngrams(_char_stream(run), n, _TAG_CHAR))
    elif variant.startswith("char"):
        n = int(variant[4:])
        parts.append(_ngrams(_char_stream([c for c in t if c.isalnum()]), n, _TAG_CHAR))
    elif variant == "word3":
        parts.append(_ngrams(_word_stream(_WORDS_ALL.findall(t)), 3, _TAG_WORD))
    else:
        raise ValueError(f"unknown shingling {variant!r}")
    if not parts:
        return np.zeros(0, dtype=np.uint64)
    return np.unique(np.concatenate(parts))


VARIANTS = ("auto3", "auto4", "auto5", "autorun3", "auto3k", "char3", "char4", "word3")
