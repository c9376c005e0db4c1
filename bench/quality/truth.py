"""Exact truth: shingle sets and the Jaccard similarity of every pair of documents of a part.

Shingles (after NFKC and lowercasing):

* English (``en``): word 3-shingles of the ``\\w+`` tokens.
* Chinese (``zh``) and the mixed-script part (``mixed``): character 3-grams of the alphanumeric
  characters (``str.isalnum``; everything else, spaces and punctuation included, is removed).
* A document with fewer tokens (characters) than 3 has one shingle: its whole token sequence.
* The issue-28 parts (:data:`DEFINITION`): ``mixreal`` and ``revisions`` (several scripts each)
  the mixed-script one, ``revisions-en`` (English) the English one.
* Opt-in, ``SIMPG_TRUTH=script`` (a study of issue 28, not the default): one script-aware rule
  for every part. Tokens: each letter or digit of a script written without spaces (Han, kana,
  Bopomofo, Thai, Lao, Khmer, Myanmar, Tibetan; ``SPACELESS``) alone, and each run of other
  word characters (``\\w``: Latin, Cyrillic, Hangul, Arabic... words); shingles: token
  3-shingles. Text without a spaceless character gets the English rule's shingles, text of
  spaceless characters only the character 3-grams of the Chinese rule. Its truth files are
  ``truth/<lang>-<part>.script.npz`` beside the default ones (:func:`truth_path`).
  ``SIMPG_TRUTH=script-hangul``: the same with Hangul spelled by characters, as the sketch does.

Pairs: ``J = |A ∩ B| / |A ∪ B|``; duplicate ``J >= 0.8``, unrelated ``J < 0.5``, grey between.
All pairs with ``J >= 0.5`` are found exactly with a sparse binary matrix product (rows in chunks,
upper triangle only): every intersection size is counted, none sampled or estimated, and the
thresholds are compared in integers (``5·|A∩B| >= 4·|A∪B|``, ``2·|A∩B| >= |A∪B|``).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from simpg.passages.tokens import SPACELESS, TOKEN

N = 3
_WORD = re.compile(r"\w+")
#: The definition a part's language uses, where it is not its own name.
DEFINITION = {"mixreal": "mixed", "revisions": "mixed", "revisions-en": "en"}


# SPACELESS: scripts written without spaces (the script-aware truth spells them character by
# character), the table simpg.passages tokenises with; "script" is its token pattern.
#: Hangul: ``script-hangul`` spells it by characters too (as the product's sketch does; Korean words carry particles).
HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
_SCRIPT_TOKEN = {
    "script": TOKEN,
    "script-hangul": re.compile(rf"(?:(?=[{SPACELESS}{HANGUL}])[^\W_])|[^\W{SPACELESS}{HANGUL}]+"),
}
DEFINITIONS = ("default", "script", "script-hangul")


def definition_name() -> str:
    """The truth definition in force: ``SIMPG_TRUTH`` (``default`` when unset)."""
    name = os.environ.get("SIMPG_TRUTH", "default") or "default"
    if name not in DEFINITIONS:
        raise ValueError(f"unknown truth definition {name!r}; known: {', '.join(DEFINITIONS)}")
    return name


def truth_path(lang: str, part: str) -> Path:
    """Where a part's truth is stored under the definition in force."""
    from bench.quality.build_corpus import TRUTH

    suffix = "" if definition_name() == "default" else f".{definition_name()}"
    return TRUTH / f"{lang}-{part}{suffix}.npz"


def words(lang: str) -> bool:
    """Whether a language's truth shingles words (else characters)."""
    return DEFINITION.get(lang, lang) == "en"


def tokens(text: str, lang: str) -> list[str]:
    t = unicodedata.normalize("NFKC", text).lower()
    if definition_name() != "default":
        return _SCRIPT_TOKEN[definition_name()].findall(t)
    if words(lang):
        return _WORD.findall(t)
    return [c for c in t if c.isalnum()]


def shingles(text: str, lang: str) -> set[str]:
    """The shingle set of the truth definition (see the module docstring)."""
    toks = tokens(text, lang)
    sep = " " if words(lang) or definition_name() != "default" else ""
    if not toks:
        return set()
    if len(toks) < N:
        return {sep.join(toks)}
    return {sep.join(toks[i : i + N]) for i in range(len(toks) - N + 1)}


@dataclass
class ShingleMatrix:
    """Binary document x shingle matrix (CSR, int32 ones) and each row's set size."""

    matrix: sp.csr_matrix
    sizes: np.ndarray

    @classmethod
    def build(cls, texts: Sequence[str], lang: str) -> ShingleMatrix:
        vocab: dict[str, int] = {}
        indptr = [0]
        indices: list[int] = []
        for text in texts:
            row = sorted({vocab.setdefault(s, len(vocab)) for s in shingles(text, lang)})
            indices.extend(row)
            indptr.append(len(indices))
        ind = np.asarray(indices, dtype=np.int32)
        m = sp.csr_matrix(
            (np.ones(len(ind), dtype=np.int32), ind, np.asarray(indptr, dtype=np.int64)),
            shape=(len(texts), max(1, len(vocab))),
        )
        return cls(m, np.diff(m.indptr).astype(np.int64))

    def intersections(self, i: np.ndarray, j: np.ndarray, chunk: int = 20000) -> np.ndarray:
        """|A_i ∩ A_j| for the given pairs, exactly."""
        out = np.empty(len(i), dtype=np.int64)
        for s in range(0, len(i), chunk):
            a = self.matrix[i[s : s + chunk]]
            b = self.matrix[j[s : s + chunk]]
            out[s : s + chunk] = np.asarray(a.multiply(b).sum(axis=1)).ravel()
        return out

    def jaccard(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        inter = self.intersections(i, j)
        union = self.sizes[i] + self.sizes[j] - inter
        return inter / np.maximum(union, 1)


@dataclass
class Truth:
    """Every pair (i < j, indices into the part's document list) with J >= 0.5."""

    i: np.ndarray
    j: np.ndarray
    inter: np.ndarray
    union: np.ndarray
    n_docs: int

    @property
    def jaccard(self) -> np.ndarray:
        return self.inter / self.union

    @property
    def duplicate(self) -> np.ndarray:
        """Mask over the listed pairs: J >= 0.8 (exact, in integers)."""
        return 5 * self.inter >= 4 * self.union

    @property
    def keys(self) -> np.ndarray:
        return pair_keys(self.i, self.j, self.n_docs)

    @property
    def pairs_total(self) -> int:
        return self.n_docs * (self.n_docs - 1) // 2

    def save(self, path: str) -> None:
        np.savez_compressed(path, i=self.i, j=self.j, inter=self.inter, union=self.union, n_docs=self.n_docs)

    @classmethod
    def load(cls, path: str) -> Truth:
        z = np.load(path)
        return cls(z["i"], z["j"], z["inter"], z["union"], int(z["n_docs"]))


def pair_keys(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """One int64 per unordered pair: min * n + max."""
    a = np.minimum(i, j).astype(np.int64)
    b = np.maximum(i, j).astype(np.int64)
    return a * n + b


def all_pairs(sm: ShingleMatrix, *, chunk: int = 256, progress=None) -> Truth:
    """Every pair with J >= 0.5, exactly (upper triangle of A·Aᵀ in row chunks)."""
    a = sm.matrix
    n = a.shape[0]
    at = a.T.tocsc()
    out_i, out_j, out_inter, out_union = [], [], [], []
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        prod = (a[s:e] @ at[:, s:]).tocoo()
        r = prod.row.astype(np.int64) + s
        c = prod.col.astype(np.int64) + s
        inter = prod.data.astype(np.int64)
        keep = c > r
        r, c, inter = r[keep], c[keep], inter[keep]
        union = sm.sizes[r] + sm.sizes[c] - inter
        keep = 2 * inter >= union
        out_i.append(r[keep].astype(np.int32))
        out_j.append(c[keep].astype(np.int32))
        out_inter.append(inter[keep])
        out_union.append(union[keep])
        if progress:
            progress(e, n)
    cat = np.concatenate
    if not out_i:
        z = np.zeros(0, dtype=np.int64)
        return Truth(z.astype(np.int32), z.astype(np.int32), z, z, n)
    return Truth(cat(out_i), cat(out_j), cat(out_inter), cat(out_union), n)
