"""Partial duplicates (issue 30): a part of real documents sharing passages, exact containment truth, detectors.

    python3 -m bench.quality.partial build --part tune --limit 300     # develop: a few hundred bases
    python3 -m bench.quality.partial build --part tune                 # the part (cached in partial/)
    python3 -m bench.quality.partial score --part tune                 # every detector at every setting
    python3 -m bench.quality.partial score --part heldout --detectors lshe,winnow:k=5:w=46   # once, the design
    python3 -m bench.quality.partial score --part tune --detectors lshe,simhash:win=50:k=3 --limit 300
    python3 -m bench.quality.partial score --part heldout --detectors lshe,product:w=26,product:w=46  # the product
    python3 -m bench.quality.partial score --part tune --detectors product:w=26:ws=46  # two windows, by script
    python3 -m bench.quality.partial check --part tune --limit 300   # recount sampled pairs (sets, difflib)
    python3 -m bench.quality.partial cost --part tune          # CPU per 1,000 tokens to make the stored hashes
    python3 -m bench.quality.partial rowsize                   # bytes per row in PostgreSQL (embedded server)
    python3 -m bench.quality.partial build --part heldout-large --hosts 1500   # more planted passages (tune-large too)
    python3 -m bench.quality.partial planted --part heldout-large --detectors product:w=22:ws=46   # recall only

The part (``bench/data/quality14/partial/<part>[-<limit>].jsonl.gz`` and ``.npz``), per language
(en, zh, mixed) of the main corpus (``corpus/<lang>.jsonl``, its ``tune``/``heldout`` split):

* base documents: up to ``BASES`` real documents (SHA-256 order of the id), and in English every
  document of the ``copyright`` collection (Debian copyright files that share licence texts:
  templated boilerplate as it really is; the LibreOffice and GNOME help pages of every language
  share their navigation and templates too);
* planted hosts: ``HOSTS`` bases receive 1 to 3 passages of other bases (log-uniform length, 50
  to 1,000 words of spaced text, 100 to 2,000 characters of a spaceless script), each with a
  light edit (0, 2, 5 or 10% of its word tokens substituted, whitespace and punctuation changed),
  inserted at a random token boundary (half of them at a line end); the result is a new
  document ``<host>~partial`` beside its host.

``tune-large`` and ``heldout-large`` (:data:`LARGE_PARTS`): the bases of ``tune`` or ``heldout`` and ``--hosts`` planted
documents a language (default :data:`LARGE_HOSTS`), hosts drawn with replacement (each
planted document ``<host>~partial<n>``), planted as above with a seed of its own: a larger
sample of planted passages (the short edited ones are few in ``heldout``) on the same pinned
documents. Written to ``bench/data/partial-large/`` of the working tree (the corpus folder is
shared and not written); ``tune`` and ``heldout`` are built as before.

Truth, exact over all pairs of a language (:func:`compute_truth`): tokens are words of spaced
scripts and single characters of spaceless ones (Han, kana, Thai...; ``truth.py``'s
script-aware rule), shingles token 3-grams, ``S(A)`` a document's set. For every pair with a
shared shingle (sparse matrix product, as ``truth.py``): ``|S(A) ∩ S(B)|``, so containment
both ways, ``C(B in A) = |S(A) ∩ S(B)| / |S(B)|``; and the longest shared run of tokens, exact
(diagonals of equal shingle positions) for every pair whose upper bound (the longest run of
A's shingle positions whose shingles are in ``S(B)``, from a sparse product of positions)
reaches ``MIN_RUN_EXACT`` tokens (below it only "shorter" is known, which the questions need).

Questions, scored with precision / recall / F1 (:func:`score`):

* ``contain X``: ordered pairs (A, B), ``A`` contains at least ``X`` of ``B``'s shingles,
  ``X`` in 0.3, 0.5, 0.8, over documents ``B`` of at least ``MIN_SHINGLES`` shingles (a passage
  of 50 tokens); ``far`` counts called pairs whose true containment is below ``X / 2``;
* ``run N``: unordered pairs sharing a run of at least ``N`` tokens, ``N`` in 50, 100;
  ``far``: called pairs whose longest shared run is below ``N / 2``;
* ``planted``: recall over the planted (host variant, donor) pairs by passage length, found
  when the detector reports the pair at all.

``planted`` (:func:`planted_recall`): recall of the planted passages alone, for the product
detector, without the truth over all pairs (a large part's is costly): a planted (host
variant, donor) pair is found when the product reports it, that is when the two documents'
passage hashes share one (a candidate) and ``compare`` finds a shared passage of at least K
tokens, exactly what ``score`` counts for the pair in its ``reported`` rows.

Detectors: ``lshe`` (datasketch's LSH Ensemble over the truth's shingles, 128 permutations,
one index per threshold; containment only), ``winnow:k=K:w=W`` (winnowing of token K-gram
hashes, window W; every match verified and extended on the tokens, so every estimate is a
lower bound of the truth and any shared run of ``W + K - 1`` tokens is found) and
``simhash:win=T:k=B`` (sentence-aware windows of about T tokens, each with
``simpg.fingerprint``; windows within B bits match, unverified), and ``product:w=W[:ws=WS]``: what
users get, ``simpg.passages.passage_pairs`` (the product's tokens, passage hashes with window W,
or WS for a document whose tokens are mostly letters of a spaceless script (default WS = W),
candidate pairs, ``compare``; :func:`product_detector`). Costs per detector: stored
hashes per 1,000 tokens, bytes per row in a PostgreSQL table with a B-tree on the hash, CPU
time per 1,000 tokens and postings a query touches.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import random
import re
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

if __package__ in (None, ""):  # run as a script: make `bench.quality` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality import build_corpus, truth  # noqa: E402
from bench.quality.sources import DATA, log  # noqa: E402

OUT = DATA / "partial"
#: Parts with more planted passages: their name -> the split their bases come from.
LARGE_PARTS = {"tune-large": "tune", "heldout-large": "heldout"}
#: Planted documents a language of a large part (hosts drawn with replacement), unless --hosts.
LARGE_HOSTS = {"en": 1500, "zh": 1500, "mixed": 1500}
#: Where large parts are written: the working tree, not the shared corpus folder.
LARGE_OUT = Path(__file__).resolve().parents[1] / "data" / "partial-large"
#: Where ``score`` writes its reports.
RESULTS = Path(__file__).resolve().parents[1] / "results"
LANGS = ("en", "zh", "mixed")
BASES = {"en": 900, "zh": 1200, "mixed": 900}  # besides every English copyright file of the part
HOSTS = {"en": 300, "zh": 300, "mixed": 200}
SEED = 30
N = 3  # shingle length, tokens
MIN_SHINGLES = 48  # a passage of 50 tokens
MIN_RUN_EXACT = 25  # longest runs are computed exactly from this length up (half the shortest question)
CONTAIN = (0.3, 0.5, 0.8)
RUNS = (50, 100)
EDIT_RATES = (0.0, 0.02, 0.05, 0.10)

#: Words of spaced scripts, single letters of spaceless ones (truth.py's script-aware rule).
TOKEN = re.compile(truth._SCRIPT_TOKEN["script"].pattern)
_SPACELESS = re.compile(f"[{truth.SPACELESS}]")


def norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def tokens(text: str) -> list[str]:
    return TOKEN.findall(norm(text))


# -- the part -----------------------------------------------------------------------------


def _rank(doc_id: str) -> bytes:
    return hashlib.sha256(f"partial30:{doc_id}".encode()).digest()


def _edit(passage: str, rate: float, vocab: Sequence[str], rng: random.Random) -> str:
    """A light edit: ``rate`` of the word tokens substituted, whitespace and punctuation changed."""
    spans = [m.span() for m in TOKEN.finditer(passage)]
    chosen = set(rng.sample(range(len(spans)), round(rate * len(spans)))) if spans else set()
    out, last = [], 0
    for n, (s, e) in enumerate(spans):
        out.append(passage[last:s])
        out.append(rng.choice(vocab) if n in chosen else passage[s:e])
        last = e
    out.append(passage[last:])
    text = "".join(out)
    if rng.random() < 0.5:  # reflowed lines
        text = re.sub(r"\n(?=\S)", lambda _: " " if rng.random() < 0.5 else "\n", text)
    if rng.random() < 0.5:  # punctuation
        table = {",": "，", ".": "。", ";": "；", "，": ",", "。": ".", "(": "（", ")": "）"}
        text = "".join(table[c] if c in table and rng.random() < 0.3 else c for c in text)
    if rng.random() < 0.5:
        text = re.sub(r" ", lambda _: "  " if rng.random() < 0.1 else " ", text)
    return text


def _passage(text: str, length: int, rng: random.Random) -> str | None:
    """``length`` consecutive tokens of ``text`` (its original characters), from a random start."""
    spans = [m.span() for m in TOKEN.finditer(text)]
    if len(spans) < length:
        return None
    s = rng.randrange(len(spans) - length + 1)
    return text[spans[s][0] : spans[s + length - 1][1]]


def _spaceless(text: str) -> bool:
    letters = sum(c.isalnum() for c in text[:4000])
    return letters > 0 and len(_SPACELESS.findall(text[:4000])) >= 0.3 * letters


def build_part(part: str, limit: int | None = None, hosts: int | None = None) -> list[dict[str, Any]]:
    """Bases of ``part`` and planted hosts, every language (see the module docstring).

    ``hosts``: planted documents a language of a large part (None: :data:`LARGE_HOSTS`).
    """
    docs: list[dict[str, Any]] = []
    large = part in LARGE_PARTS
    for lang in LANGS:
        rng = random.Random(f"{SEED}:{lang}:{part}")
        every = [d for d in build_corpus.load_part(lang, LARGE_PARTS.get(part, part)) if d["base"] is None]
        every.sort(key=lambda d: _rank(d["id"]))
        n_bases = limit if limit is not None else BASES[lang]
        copyright_docs = [d for d in every if d["collection"] == "copyright"]
        others = [d for d in every if d["collection"] != "copyright"]
        if limit is not None:  # develop: a few copyright files, the rest other documents
            bases = copyright_docs[: limit // 3] + others[: limit - limit // 3]
        else:
            bases = copyright_docs + others[:n_bases]
        bases = [{k: d[k] for k in ("id", "lang", "collection", "text")} for d in bases]
        vocab_of = {True: [], False: []}  # replacement tokens: characters / words
        for d in bases[:300]:
            for t in TOKEN.findall(d["text"][:3000]):
                vocab_of[bool(_SPACELESS.match(t))].append(t)
        n_hosts = HOSTS[lang] if limit is None else max(10, limit // 4)
        if large:  # with replacement: more planted passages than bases
            chosen = [rng.choice(bases) for _ in range(hosts or LARGE_HOSTS[lang])]
        else:
            chosen = rng.sample(bases, min(n_hosts, len(bases)))
        planted = []
        for n_host, host in enumerate(chosen):
            text = host["text"]
            sources = []
            for _ in range(rng.choices((1, 2, 3), weights=(0.5, 0.3, 0.2))[0]):
                for _try in range(20):
                    donor = rng.choice(bases)
                    if donor["id"] == host["id"] or donor["id"] in (s["donor"] for s in sources):
                        continue
                    cjk = _spaceless(donor["text"])
                    lo, hi = (100, 2000) if cjk else (50, 1000)
                    length = round(math.exp(rng.uniform(math.log(lo), math.log(hi))))
                    passage = _passage(donor["text"], length, rng)
                    if passage is None:
                        continue
                    rate = rng.choice(EDIT_RATES)
                    vocab = vocab_of[cjk] or vocab_of[not cjk]
                    passage = _edit(passage, rate, vocab, rng)
                    spans = [m.start() for m in TOKEN.finditer(text)] + [len(text)]
                    at = rng.choice(spans)
                    if rng.random() < 0.5:  # at a line end
                        nl = text.find("\n", at)
                        at = len(text) if nl < 0 else nl
                    sep = "\n" if rng.random() < 0.5 else " "
                    text = text[:at] + sep + passage + sep + text[at:]
                    sources.append({"donor": donor["id"], "tokens": length, "rate": rate, "cjk": cjk})
                    break
            if sources:
                suffix = f"~partial{n_host}" if large else "~partial"
                planted.append({"id": host["id"] + suffix, "lang": lang, "collection": host["collection"],
                                "host": host["id"], "sources": sources, "text": text})
        docs.extend(bases)
        docs.extend(planted)
        log(f"{lang}/{part}: {len(bases)} bases ({sum(d['collection'] == 'copyright' for d in bases)} copyright "
            f"files), {len(planted)} planted hosts, {sum(len(p['sources']) for p in planted)} passages")
    return docs


# -- tokens and shingles ------------------------------------------------------------------


@dataclass
class Tokenized:
    """Every document's token ids and shingle ids by position, and the binary document x shingle matrix."""

    tokens: list[np.ndarray]  # int64 token ids per document
    shingles: list[np.ndarray]  # int64 shingle ids per position (len(tokens) - 2; one for 1-2 tokens)
    matrix: sp.csr_matrix
    sizes: np.ndarray  # |S(d)|
    vocab: dict[str, int]
    spaceless: np.ndarray  # per document: the share of its tokens that are letters of a spaceless script


def tokenize(texts: Sequence[str]) -> Tokenized:
    vocab: dict[str, int] = {}
    toks = [np.array([vocab.setdefault(t, len(vocab)) for t in tokens(x)], dtype=np.int64) for x in texts]
    v = max(1, len(vocab))
    keys = []
    for t in toks:
        if len(t) >= N:
            keys.append((t[:-2] * v + t[1:-1]) * v + t[2:])
        elif len(t):
            keys.append(np.array([-1 - (int(t[0]) * v + (int(t[1]) if len(t) > 1 else v))], dtype=np.int64))
        else:
            keys.append(np.zeros(0, dtype=np.int64))
    allkeys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    _, inverse = np.unique(allkeys, return_inverse=True)
    sh, at = [], 0
    for k in keys:
        sh.append(inverse[at : at + len(k)].astype(np.int64))
        at += len(k)
    rows = [np.unique(s) for s in sh]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    ind = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, dtype=np.int32)
    m = sp.csr_matrix((np.ones(len(ind), dtype=np.int32), ind, indptr),
                      shape=(len(texts), max(1, int(inverse.max()) + 1 if len(inverse) else 1)))
    is_char = np.zeros(max(1, len(vocab)), dtype=bool)
    for t, n in vocab.items():
        is_char[n] = bool(_SPACELESS.match(t))
    share = np.array([is_char[t].mean() if len(t) else 0.0 for t in toks])
    return Tokenized(toks, sh, m, np.diff(indptr), vocab, share)


def longest_run(a: np.ndarray, b: np.ndarray) -> int:
    """Longest run of tokens two documents share, exactly, from their shingle ids by position (0 if < N)."""
    common = np.intersect1d(a, b)
    if len(common) == 0:
        return 0
    pa = np.flatnonzero(np.isin(a, common))
    pb = np.flatnonzero(np.isin(b, common))
    order = np.argsort(b[pb], kind="stable")
    pb, vb = pb[order], b[pb][order]
    lo = np.searchsorted(vb, a[pa], "left")
    hi = np.searchsorted(vb, a[pa], "right")
    cnt = hi - lo
    ia = np.repeat(pa, cnt)
    start = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt) + np.arange(cnt.sum())
    ib = pb[start]
    diag = ib - ia
    order = np.lexsort((ia, diag))
    ia, diag = ia[order], diag[order]
    new = np.ones(len(ia), dtype=bool)
    new[1:] = (diag[1:] != diag[:-1]) | (ia[1:] != ia[:-1] + 1)
    starts = np.flatnonzero(new)
    runs = np.diff(np.append(starts, len(ia)))
    return int(runs.max()) + N - 1


# -- truth --------------------------------------------------------------------------------


@dataclass
class PartialTruth:
    """Every pair (i < j) sharing a shingle: intersection, and the longest run where it is >= MIN_RUN_EXACT."""

    i: np.ndarray
    j: np.ndarray
    inter: np.ndarray
    run: np.ndarray  # exact when >= MIN_RUN_EXACT; else 0 (shorter, not counted)
    sizes: np.ndarray


def run_upper_bounds(tz: Tokenized, chunk_positions: int = 200_000) -> dict[tuple[int, int], int]:
    """(i, j), i < j -> the longest run of i's shingle positions whose shingles are in S(j), where >= 48."""
    at = tz.matrix.T.tocsr()  # shingle -> documents
    n = len(tz.shingles)
    out: dict[tuple[int, int], int] = {}
    need = MIN_RUN_EXACT - N + 1
    d = 0
    while d < n:
        first, total = d, 0
        while d < n and (total == 0 or total + len(tz.shingles[d]) <= chunk_positions):
            total += len(tz.shingles[d])
            d += 1
        sh = np.concatenate(tz.shingles[first:d])
        doc = np.repeat(np.arange(first, d), [len(s) for s in tz.shingles[first:d]])
        pos = np.concatenate([np.arange(len(s)) for s in tz.shingles[first:d]])
        if len(sh) == 0:
            continue
        prod = at[sh].tocoo()  # position row -> documents containing its shingle
        r, c = prod.row, prod.col.astype(np.int64)
        keep = c > doc[r]
        r, c = r[keep], c[keep]
        a, p = doc[r], pos[r]
        order = np.lexsort((p, c, a))
        a, c, p = a[order], c[order], p[order]
        new = np.ones(len(a), dtype=bool)
        new[1:] = (a[1:] != a[:-1]) | (c[1:] != c[:-1]) | (p[1:] != p[:-1] + 1)
        starts = np.flatnonzero(new)
        lengths = np.diff(np.append(starts, len(a)))
        long = lengths >= need
        for x, y, length in zip(a[starts[long]].tolist(), c[starts[long]].tolist(), lengths[long].tolist(),
                                strict=True):
            out[(x, y)] = max(out.get((x, y), 0), length)
    return out


def compute_truth(tz: Tokenized) -> PartialTruth:
    a = tz.matrix
    at = a.T.tocsc()
    n = a.shape[0]
    ii, jj, inter = [], [], []
    for s in range(0, n, 256):
        prod = (a[s : s + 256] @ at[:, s:]).tocoo()
        r = prod.row.astype(np.int64) + s
        c = prod.col.astype(np.int64) + s
        keep = c > r
        ii.append(r[keep])
        jj.append(c[keep])
        inter.append(prod.data[keep].astype(np.int64))
    i, j, x = np.concatenate(ii), np.concatenate(jj), np.concatenate(inter)
    run = np.zeros(len(i), dtype=np.int64)
    bounds = run_upper_bounds(tz)
    if bounds:
        index = {(int(p), int(q)): k for k, (p, q) in enumerate(zip(i.tolist(), j.tolist(), strict=True))}
        for (p, q) in bounds:
            r = longest_run(tz.shingles[p], tz.shingles[q])
            if r >= MIN_RUN_EXACT:
                run[index[(p, q)]] = r
    return PartialTruth(i, j, x, run, tz.sizes)


# -- detectors ----------------------------------------------------------------------------


@dataclass
class Found:
    """What a detector reports: per unordered pair (i < j), the shingles of each it covers, the longest run."""

    i: np.ndarray
    j: np.ndarray
    cover_i: np.ndarray  # shingles of S(i) the detector says are in S(j)
    cover_j: np.ndarray
    run: np.ndarray  # longest shared run of tokens estimated (-1: not estimated)
    cost: dict[str, Any]


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def kgram_hashes(tok: np.ndarray, k: int) -> np.ndarray:
    """64-bit hash of every k consecutive token ids (one of the whole document when shorter than k)."""
    h = _splitmix(tok.astype(np.uint64))
    if len(h) < k:
        k = len(h)
    if k == 0:
        return np.zeros(0, dtype=np.uint64)
    acc = np.zeros(len(h) - k + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for t in range(k):
            acc = acc * np.uint64(0x100000001B3) + h[t : len(h) - k + 1 + t]
    return _splitmix(acc)


def winnow(hashes: np.ndarray, w: int) -> np.ndarray:
    """Positions winnowing selects: the minimum of every window of w hashes (rightmost of ties)."""
    if len(hashes) <= w:
        return np.array([len(hashes) - 1 - int(np.argmin(hashes[::-1]))]) if len(hashes) else np.zeros(0, int)
    win = np.lib.stride_tricks.sliding_window_view(hashes, w)
    right = w - 1 - np.argmin(win[:, ::-1], axis=1)
    return np.unique(np.arange(len(win)) + right)


def _extend(a: np.ndarray, b: np.ndarray, pa: int, pb: int, k: int) -> tuple[int, int, int] | None:
    """The maximal run of equal tokens through a k-gram match, or None (a hash collision)."""
    if not np.array_equal(a[pa : pa + k], b[pb : pb + k]):
        return None
    end = k
    while pa + end < len(a) and pb + end < len(b):
        step = min(256, len(a) - pa - end, len(b) - pb - end)
        ne = np.flatnonzero(a[pa + end : pa + end + step] != b[pb + end : pb + end + step])
        if len(ne):
            end += int(ne[0])
            break
        end += step
    start = 0
    while pa - start > 0 and pb - start > 0:
        step = min(256, pa - start, pb - start)
        ne = np.flatnonzero(a[pa - start - step : pa - start][::-1] != b[pb - start - step : pb - start][::-1])
        if len(ne):
            start += int(ne[0])
            break
        start += step
    return pa - start, pb - start, start + end


def _covered(shingles: np.ndarray, segments: list[tuple[int, int]]) -> int:
    """Distinct shingles wholly inside the given token segments [start, end)."""
    if len(shingles) == 0:
        return 0
    mark = np.zeros(len(shingles) + N, dtype=np.int64)
    for s, e in segments:
        if e - s >= N:
            mark[s] += 1
            mark[e - N + 1] -= 1
    inside = np.cumsum(mark)[: len(shingles)] > 0
    return len(np.unique(shingles[inside]))


def _pairs_of_postings(keys: np.ndarray, doc: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every (doc a, pos a, doc b, pos b), a < b, of postings with the same key."""
    order = np.argsort(keys, kind="stable")
    keys, doc, pos = keys[order], doc[order], pos[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sizes = np.diff(np.append(starts, len(keys)))
    out: list[list[np.ndarray]] = [[], [], [], []]
    for c in np.unique(sizes[sizes > 1]).tolist():
        g = starts[sizes == c]
        ti, tj = np.triu_indices(c, 1)
        x = (g[:, None] + ti[None, :]).ravel()
        y = (g[:, None] + tj[None, :]).ravel()
        da, db = doc[x], doc[y]
        keep = da != db
        x, y, da, db = x[keep], y[keep], da[keep], db[keep]
        swap = da > db
        out[0].append(np.where(swap, db, da))
        out[1].append(np.where(swap, pos[y], pos[x]))
        out[2].append(np.where(swap, da, db))
        out[3].append(np.where(swap, pos[x], pos[y]))
    if not out[0]:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    return tuple(np.concatenate(o) for o in out)


def _postings_touched(keys: np.ndarray, doc: np.ndarray) -> np.ndarray:
    """Per document: the postings (other than its own) a lookup of its stored keys reads."""
    uniq, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    per = np.bincount(doc, weights=counts[inv] - 1, minlength=int(doc.max()) + 1 if len(doc) else 0)
    return per


def winnow_detector(tz: Tokenized, k: int, w: int, w_cjk: int | None = None) -> dict[str, Found]:
    """Winnowing, with three ways to decide what a pair of documents with a shared fingerprint shares.

    ``hashes``: from the matched fingerprints alone (what the stored rows give): matches on one
    diagonal (the same offset between the two documents) at most ``w`` positions apart form one
    passage, from the first match to the last one's end (k tokens later); an estimate.
    ``tokens``: every match checked on the tokens and extended to the maximal run of equal tokens
    (the texts read again): exact runs, so containment and runs are lower bounds of the truth.
    ``exact``: the candidate pairs of ``tokens``, containment counted exactly on both documents'
    shingle sets (the verification a lookup can afford on its few candidates).

    ``w_cjk``: the window of documents whose tokens are mostly (>= 50%) letters of a spaceless
    script (a token is a character there). Winnowing with windows w1 <= w2 in two documents still
    finds every shared run of w2 + k - 1 tokens: the minimum of a w2-window is the minimum of every
    w1-window inside it that contains it, so the document with the smaller window selects it too.
    """
    t0 = time.process_time()
    keys, docs, poss = [], [], []
    for d, tok in enumerate(tz.tokens):
        h = kgram_hashes(tok, k)
        p = winnow(h, w_cjk if w_cjk is not None and tz.spaceless[d] >= 0.5 else w)
        keys.append(h[p])
        docs.append(np.full(len(p), d, dtype=np.int64))
        poss.append(p.astype(np.int64))
    cpu_hash = time.process_time() - t0
    key, doc, pos = np.concatenate(keys), np.concatenate(docs), np.concatenate(poss)
    touched = _postings_touched(key, doc)
    da, pa, db, pb = _pairs_of_postings(key, doc, pos)
    order = np.lexsort((pa, pb - pa, db, da))
    da, pa, db, pb = da[order], pa[order], db[order], pb[order]
    bounds = np.flatnonzero(np.r_[True, (da[1:] != da[:-1]) | (db[1:] != db[:-1])]) if len(da) else np.zeros(0, int)
    ends = np.append(bounds[1:], len(da))
    # hashes: chains of matches on one diagonal, consecutive ones at most w apart
    diag = pb - pa
    chain = np.ones(len(da), dtype=bool)
    gap = max(w, w_cjk or 0)
    chain[1:] = (da[1:] != da[:-1]) | (db[1:] != db[:-1]) | (diag[1:] != diag[:-1]) | (pa[1:] - pa[:-1] > gap)
    c_start = np.flatnonzero(chain)
    c_last = np.append(c_start[1:], len(da)) - 1
    t1 = time.process_time()
    hashes = {"i": [], "j": [], "ci": [], "cj": [], "run": []}
    tokens_ = {"i": [], "j": [], "ci": [], "cj": [], "run": []}
    c_at = 0
    for s, e in zip(bounds.tolist(), ends.tolist(), strict=True):
        a, b = int(da[s]), int(db[s])
        ta, tb = tz.tokens[a], tz.tokens[b]
        kk = min(k, len(ta), len(tb))
        hsegs = []
        while c_at < len(c_start) and c_start[c_at] < e:
            f, last = int(c_start[c_at]), int(c_last[c_at])
            n = int(pa[last] - pa[f]) + kk
            hsegs.append((int(pa[f]), int(pb[f]), n))
            c_at += 1
        hashes["i"].append(a)
        hashes["j"].append(b)
        hashes["ci"].append(_covered(tz.shingles[a], [(x, x + n) for x, _, n in hsegs]))
        hashes["cj"].append(_covered(tz.shingles[b], [(y, y + n) for _, y, n in hsegs]))
        hashes["run"].append(max(n for _, _, n in hsegs))
        segs: list[tuple[int, int, int]] = []
        last_diag, last_end = None, -1
        for x, y in zip(pa[s:e].tolist(), pb[s:e].tolist(), strict=True):
            if y - x == last_diag and x < last_end:
                continue  # inside the segment already verified on this diagonal
            seg = _extend(ta, tb, x, y, kk)
            if seg is None:
                continue
            segs.append(seg)
            last_diag, last_end = y - x, seg[0] + seg[2]
        if not segs:
            continue
        tokens_["i"].append(a)
        tokens_["j"].append(b)
        tokens_["ci"].append(_covered(tz.shingles[a], [(sa, sa + n) for sa, _, n in segs]))
        tokens_["cj"].append(_covered(tz.shingles[b], [(sb, sb + n) for _, sb, n in segs]))
        tokens_["run"].append(max(n for _, _, n in segs))
    cpu_verify = time.process_time() - t1
    n_tokens = sum(len(t) for t in tz.tokens)
    cost = {"rows": len(key), "tokens": n_tokens, "cpu_hash_s": cpu_hash, "cpu_verify_s": cpu_verify,
            "touched": touched, "matches": len(da)}
    out = {}
    for mode, r in (("hashes", hashes), ("tokens", tokens_)):
        out[mode] = Found(np.array(r["i"], dtype=np.int64), np.array(r["j"], dtype=np.int64),
                          np.array(r["ci"], dtype=float), np.array(r["cj"], dtype=float),
                          np.array(r["run"], dtype=np.int64), cost)
    t = out["tokens"]
    inter = (np.asarray(tz.matrix[t.i].multiply(tz.matrix[t.j]).sum(axis=1)).ravel().astype(float)
             if len(t.i) else np.zeros(0))
    out["exact"] = Found(t.i, t.j, inter, inter, t.run, cost)
    return out


def product_detector(texts: Sequence[str], w: int, ws: int | None = None) -> dict[str, Found]:
    """The product's in-memory path: ``simpg.passages.passage_pairs`` (passage hashes with window ``w``,
    ``ws`` for documents mostly of a spaceless script (None: ``w``), candidate pairs from the numpy
    inverted index, every candidate verified by ``compare``).

    ``reported``: every pair it reports with a shared passage of at least K tokens (the lowest
    threshold: each question's threshold then filters exact values, as a call with that
    threshold would); ``default``: the pairs of its default threshold (a shared passage of at
    least the config's guarantee, ``max(w, ws) + K - 1`` tokens). Covers are the exact shared
    shingles, runs the longest passage.
    Costs: the hashing and the whole pass (hashes, candidates, verification), wall time, one process.
    """
    from simpg.passages import K, PassageConfig, candidate_pairs, passage_hashes_array, passage_pairs

    config = PassageConfig(w, w if ws is None else ws)
    t0 = time.process_time()
    hashes = [passage_hashes_array(x, config) for x in texts]
    cpu_hash = time.process_time() - t0
    w0 = time.perf_counter()
    report = passage_pairs(texts, config, min_tokens=K, workers=1)
    wall = time.perf_counter() - w0
    key = np.concatenate(hashes) if hashes else np.zeros(0, np.int64)
    doc = np.repeat(np.arange(len(hashes)), [len(h) for h in hashes])
    cost = {"rows": len(key), "tokens": sum(len(tokens(x)) for x in texts), "cpu_hash_s": cpu_hash,
            "cpu_verify_s": wall, "touched": _postings_touched(key, doc), "btree": False,
            "candidates": len(candidate_pairs(hashes)), "wall_s": wall, "docs": len(texts)}
    out = {}
    for mode, keep in (("reported", lambda p: True), ("default", lambda p: p.comparison.longest >= config.guarantee)):
        ps = [p for p in report.pairs if keep(p)]
        shared = np.array([p.comparison.shared_shingles for p in ps], dtype=float)
        out[mode] = Found(np.array([p.a for p in ps], dtype=np.int64), np.array([p.b for p in ps], dtype=np.int64),
                          shared, shared.copy(), np.array([p.comparison.longest for p in ps], dtype=np.int64), cost)
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?;:。！？；：])\s+|\n+")


def windows(text: str, size: int) -> list[tuple[str, int, int]]:
    """Sentence-aware windows: consecutive sentences (lines) joined up to about ``size`` tokens.

    A sentence longer than ``size`` is cut every ``size`` tokens. Each window: (text, first token,
    end token), token positions as :func:`tokens` counts them.
    """
    t = norm(text)
    out: list[tuple[str, int, int]] = []
    cur: list[str] = []
    cur_n = start = at = 0
    for sentence in _SENTENCE_END.split(t):
        spans = [m.span() for m in TOKEN.finditer(sentence)]
        while len(spans) > size:  # an overlong sentence: its own windows
            if cur:
                out.append((" ".join(cur), start, at))
                cur, cur_n, start = [], 0, at
            piece = sentence[spans[0][0] : spans[size - 1][1]]
            out.append((piece, at, at + size))
            at += size
            start = at
            sentence = sentence[spans[size][0] :]
            spans = [m.span() for m in TOKEN.finditer(sentence)]
        if not spans:
            continue
        cur.append(sentence)
        cur_n += len(spans)
        at += len(spans)
        if cur_n >= size:
            out.append((" ".join(cur), start, at))
            cur, cur_n, start = [], 0, at
    if cur:
        out.append((" ".join(cur), start, at))
    return out


def simhash_detector(tz: Tokenized, texts: Sequence[str], size: int, ks: Sequence[int]) -> dict[int, Found]:
    """Passage SimHash: :func:`windows` of ``size`` tokens, each ``simpg.fingerprint``ed; matches within k bits.

    Candidates come from max(ks) + 1 blocks of the 64 bits (pigeonhole: two fingerprints within k
    bits agree on a block), as the product's permuted-prefix B-trees find them. A pair's estimate
    (unverified): the shingles of each document inside its matched windows, and the longest union
    of matched windows.
    """
    from simpg.fingerprint import fingerprint

    t0 = time.process_time()
    fps, doc, lo, hi = [], [], [], []
    for d, text in enumerate(texts):
        for wtext, s, e in windows(text, size):
            try:
                fps.append(fingerprint(wtext))
            except Exception:  # a window simpg refuses (no features): not stored
                continue
            doc.append(d)
            lo.append(s)
            hi.append(e)
    cpu = time.process_time() - t0
    fp = np.array(fps, dtype=np.uint64)
    wdoc, wlo, whi = np.array(doc), np.array(lo), np.array(hi)
    # candidates within k bits: by pigeonhole, they agree on one of k + 1 blocks of the 64 bits
    found: dict[int, Found] = {}
    uniq, inv = np.unique(fp, return_inverse=True)
    kmax = max(ks)
    blocks = kmax + 1
    width = 64 // blocks
    pairs_u: set[tuple[int, int]] = set()
    touched = np.zeros(len(fp), dtype=np.int64)
    for b in range(blocks):
        shift = np.uint64(b * width)
        mask = np.uint64((1 << (width if b < blocks - 1 else 64 - b * width)) - 1)
        key = (uniq >> shift) & mask
        order = np.argsort(key, kind="stable")
        ks_sorted = key[order]
        starts = np.flatnonzero(np.r_[True, ks_sorted[1:] != ks_sorted[:-1]])
        sizes = np.diff(np.append(starts, len(ks_sorted)))
        # postings a lookup touches: windows sharing this block's key
        wkey = (fp >> shift) & mask
        _, winv, wcount = np.unique(wkey, return_inverse=True, return_counts=True)
        touched += wcount[winv] - 1
        for s, c in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
            grp = order[s : s + c]
            x = uniq[grp]
            for r0 in range(0, c, 512):  # rows in chunks: a large group stays small in memory
                xr = x[r0 : r0 + 512]
                dist = np.unpackbits((xr[:, None] ^ x[None, :]).view(np.uint8), axis=-1).reshape(len(xr), c, 64)
                ii, jj = np.nonzero(dist.sum(-1) <= kmax)
                keep = jj > ii + r0
                pairs_u.update(zip(grp[ii[keep] + r0].tolist(), grp[jj[keep]].tolist(), strict=True))
    members = defaultdict(list)
    for w, u in enumerate(inv.tolist()):
        members[u].append(w)
    dist_of = {}
    for u, v in pairs_u:
        dist_of[(u, v)] = int(uniq[u] ^ uniq[v]).bit_count()
    links = [(u, v, dist_of[(u, v)]) for u, v in pairs_u] + [(u, u, 0) for u in members if len(members[u]) > 1]
    for k in ks:
        matched: dict[tuple[int, int], tuple[list[tuple[int, int]], list[tuple[int, int]]]] = defaultdict(
            lambda: ([], []))
        for u, v, dd in links:
            if dd > k:
                continue
            for wa in members[u]:
                for wb in members[v]:
                    a, b = int(wdoc[wa]), int(wdoc[wb])
                    if a == b:
                        continue
                    if a > b:
                        a, b, wa2, wb2 = b, a, wb, wa
                    else:
                        wa2, wb2 = wa, wb
                    m = matched[(a, b)]
                    m[0].append((int(wlo[wa2]), int(whi[wa2])))
                    m[1].append((int(wlo[wb2]), int(whi[wb2])))
        out_i, out_j, ci, cj, runs = [], [], [], [], []
        for (a, b), (sa, sb) in matched.items():
            out_i.append(a)
            out_j.append(b)
            ci.append(_covered(tz.shingles[a], sa))
            cj.append(_covered(tz.shingles[b], sb))
            runs.append(min(_longest_union(sa), _longest_union(sb)))
        cost = {"rows": len(fp), "tokens": sum(len(t) for t in tz.tokens), "cpu_hash_s": cpu, "cpu_verify_s": 0.0,
                "touched": np.bincount(wdoc, weights=touched, minlength=len(texts)), "blocks": blocks}
        found[k] = Found(np.array(out_i, dtype=np.int64), np.array(out_j, dtype=np.int64), np.array(ci, float),
                         np.array(cj, float), np.array(runs, dtype=np.int64), cost)
    return found


def _longest_union(segments: list[tuple[int, int]]) -> int:
    best = cur_s = cur_e = -1
    for s, e in sorted(set(segments)):
        if s <= cur_e:
            cur_e = max(cur_e, e)
        else:
            cur_s, cur_e = s, e
        best = max(best, cur_e - cur_s)
    return best


def lshe_detector(tz: Tokenized, thresholds: Sequence[float], num_perm: int = 128) -> dict[float, Found]:
    """datasketch's LSH Ensemble: for every document B, the indexed A with |S(A) ∩ S(B)| >= t |S(B)|."""
    from datasketch import MinHash, MinHashLSHEnsemble

    t0 = time.process_time()
    mats = tz.matrix
    mh = []
    for d in range(mats.shape[0]):
        m = MinHash(num_perm=num_perm, seed=1)
        row = mats.indices[mats.indptr[d] : mats.indptr[d + 1]]
        m.update_batch([int(x).to_bytes(4, "little") for x in row])
        mh.append(m)
    cpu = time.process_time() - t0
    found = {}
    for t in thresholds:
        index = MinHashLSHEnsemble(threshold=t, num_perm=num_perm, num_part=16)
        index.index([(d, mh[d], int(tz.sizes[d])) for d in range(len(mh)) if tz.sizes[d] > 0])
        # a call "A contains >= t of B" is recorded as cover t * |S(B)| (exactly the threshold) on B's side
        pair_cover: dict[tuple[int, int], list[float]] = {}
        for b in range(len(mh)):
            if tz.sizes[b] < MIN_SHINGLES:
                continue
            for a in index.query(mh[b], int(tz.sizes[b])):
                if a == b:
                    continue
                key = (min(a, b), max(a, b))
                pair_cover.setdefault(key, [0.0, 0.0])[0 if b == key[0] else 1] = t * float(tz.sizes[b])
        out_i = [a for a, _ in pair_cover]
        out_j = [b for _, b in pair_cover]
        ci = [x for x, _ in pair_cover.values()]
        cj = [y for _, y in pair_cover.values()]
        cost = {"rows": len(mh) * num_perm, "tokens": sum(len(x) for x in tz.tokens), "cpu_hash_s": cpu,
                "cpu_verify_s": 0.0, "touched": None, "btree": False}  # in memory, not a table
        found[t] = Found(np.array(out_i, dtype=np.int64), np.array(out_j, dtype=np.int64), np.array(ci),
                         np.array(cj), np.full(len(out_i), -1), cost)
    return found


# -- scoring ------------------------------------------------------------------------------


def _prf(tp: int, called: int, positive: int) -> tuple[float, float, float]:
    p = tp / called if called else 1.0
    r = tp / positive if positive else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score(tr: PartialTruth, f: Found, planted: list[tuple[int, int, int, float]], contain: bool = True,
          runs: bool = True) -> dict[str, Any]:
    """P/R/F1 of each question, and planted recall (see the module docstring)."""
    n = len(tr.sizes)
    tkey = tr.i * n + tr.j
    order = np.argsort(tkey)
    tkey = tkey[order]
    t_inter, t_run = tr.inter[order], tr.run[order]
    fkey = f.i * n + f.j
    pos = np.searchsorted(tkey, fkey)
    pos = np.minimum(pos, len(tkey) - 1)
    inside = tkey[pos] == fkey if len(tkey) else np.zeros(len(fkey), bool)
    f_inter = np.where(inside, t_inter[pos] if len(tkey) else 0, 0)
    f_run = np.where(inside, t_run[pos] if len(tkey) else 0, 0)
    out: dict[str, Any] = {}
    sizes = tr.sizes
    if contain:
        for x in CONTAIN:
            tp = called = positive = far = 0
            # each direction: "i contains >= x of j" (B = j) and "j contains >= x of i" (B = i)
            for big_b, tb_of in ((tr.j, "j"), (tr.i, "i")):
                sb = sizes[big_b]
                positive += int(((sb >= MIN_SHINGLES) & (tr.inter >= x * sb)).sum())
                fb = f.j if tb_of == "j" else f.i
                cov = f.cover_j if tb_of == "j" else f.cover_i
                sfb = sizes[fb]
                call = (sfb >= MIN_SHINGLES) & (cov >= x * sfb - 1e-9) & (cov > 0)
                true = f_inter >= x * sfb
                tp += int((call & true).sum())
                called += int(call.sum())
                far += int((call & (f_inter < x / 2 * sfb)).sum())
            p, r, f1 = _prf(tp, called, positive)
            out[f"contain {x}"] = {"p": p, "r": r, "f1": f1, "called": called, "positive": positive, "far": far}
    if runs:
        for length in RUNS:
            positive = int((tr.run >= length).sum())
            call = f.run >= length
            tp = int((call & (f_run >= length)).sum())
            far = int((call & (f_run < length / 2)).sum())
            p, r, f1 = _prf(tp, int(call.sum()), positive)
            out[f"run {length}"] = {"p": p, "r": r, "f1": f1, "called": int(call.sum()), "positive": positive,
                                    "far": far}
    fset = set((fkey).tolist())
    bins: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for a, b, length, rate in planted:
        key = min(a, b) * n + max(a, b)
        by_length = "50-99" if length < 100 else "100-299" if length < 300 else "300+"
        for label in (by_length, f"edit {rate:.2f}", f"{by_length} edit {rate:.2f}"):
            bins[label][1] += 1
            bins[label][0] += key in fset
    out["planted"] = {k: v[0] / v[1] for k, v in sorted(bins.items())}
    out["planted_n"] = {k: v[1] for k, v in sorted(bins.items())}
    return out


def cost_row(f: Found) -> dict[str, Any]:
    c = f.cost
    per_k = 1000 * c["rows"] / max(1, c["tokens"])
    # a row (hash bigint, doc bigint, token position int4) and its B-tree on the hash, as measured
    # by `rowsize` (PostgreSQL 18: 52.2 heap + 22.5 B-tree bytes per row)
    heap, btree = ROW_BYTES
    if c.get("btree") is False:
        heap = btree = math.nan
    row = {"hashes_per_1000_tokens": per_k, "bytes_per_1000_tokens": per_k * (heap + btree),
           "cpu_ms_per_1000_tokens": 1000 * c["cpu_hash_s"] / max(1, c["tokens"]) * 1000,
           "verify_all_pairs_s": c["cpu_verify_s"]}
    if "wall_s" in c:
        row["pass_s_per_1000_docs"] = 1000 * c["wall_s"] / max(1, c["docs"])
    if c.get("touched") is not None:
        t = np.asarray(c["touched"])
        row["postings_p50"], row["postings_p99"] = float(np.median(t)), float(np.percentile(t, 99))
    return row


#: Heap and B-tree bytes per row of the chosen shape ``(hash bigint, doc bigint, pos int4)``, from ``rowsize``.
ROW_BYTES = (52.2, 22.5)
#: Table shapes measured by :func:`row_sizes` (one row per stored passage hash).
ROW_SHAPES = {
    "doc, hash, token pos, char start, char end": "doc bigint, hash bigint, pos int4, char_start int4, char_end int4",
    "hash, doc, token pos": "hash bigint, doc bigint, pos int4",
    "hash, doc int4, token pos": "hash bigint, doc int4, pos int4",
}


def row_sizes(dsn: str | None = None, rows: int = 1_000_000) -> list[dict[str, Any]]:
    """Bytes per row of each :data:`ROW_SHAPES` table and its B-tree on the hash, measured in PostgreSQL.

    Random 64-bit hashes (as winnowing makes), ``rows`` rows loaded, then the B-tree built
    (default fillfactor 90), ``pg_relation_size`` of each divided by the rows.
    """
    import psycopg

    if dsn is None:
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for n, (label, columns) in enumerate(ROW_SHAPES.items()):
            table = f"partial_rows_{n}"
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} ({columns})")
            values = {"doc": "g / 40", "pos": "(g % 40) * 23", "char_start": "(g % 40) * 140",
                      "char_end": "(g % 40) * 140 + 300",
                      "hash": "((random() - 0.5) * 1.8e19)::bigint"}  # spread over the whole bigint range
            typed = [c.split() for c in columns.split(", ")]
            exprs = ", ".join(f"({values[name]})::{kind}" for name, kind in typed)
            conn.execute(f"INSERT INTO {table} SELECT {exprs} FROM generate_series(1, {rows}) g")
            conn.execute(f"CREATE INDEX {table}_hash ON {table} (hash)")
            conn.execute(f"VACUUM ANALYZE {table}")
            heap, index = conn.execute(
                f"SELECT pg_relation_size('{table}'), pg_relation_size('{table}_hash')").fetchone()
            out.append({"shape": label, "heap_bytes_per_row": heap / rows, "btree_bytes_per_row": index / rows})
            conn.execute(f"DROP TABLE {table}")
    return out


def hashing_cost(part: str, limit: int | None, specs: Sequence[str], langs: Sequence[str]) -> list[dict[str, Any]]:
    """CPU time per 1,000 tokens to tokenize a document and make its stored hashes (no pairs, no truth)."""
    from simpg.fingerprint import fingerprint

    docs = load_or_build(part, limit)
    out = []
    for lang in langs:
        texts = [d["text"] for d in docs if d["lang"] == lang]
        t0 = time.process_time()
        toks = [tokens(x) for x in texts]
        t_tok = time.process_time() - t0
        n = sum(len(t) for t in toks)
        out.append({"lang": lang, "what": "tokenize (NFKC, lowercase, tokens)", "ms_per_1000_tokens": 1e6 * t_tok / n})
        vocab: dict[str, int] = {}
        ids = [np.array([vocab.setdefault(t, len(vocab)) for t in ts], dtype=np.int64) for ts in toks]
        for spec in specs:
            name, opts = parse_detector(spec)
            t0 = time.process_time()
            rows = 0
            if name == "winnow":
                for tok in ids:
                    rows += len(winnow(kgram_hashes(tok, opts["k"]), opts["w"]))
                label = f"winnow k={opts['k']} w={opts['w']} (hashes, after tokens)"
            elif name == "simhash":
                for text in texts:
                    for wtext, _, _ in windows(text, opts["win"]):
                        try:
                            fingerprint(wtext)
                            rows += 1
                        except Exception:  # no features: not stored
                            continue
                label = f"passage simhash win={opts['win']} (windows and fingerprints)"
            else:
                continue
            dt = time.process_time() - t0
            out.append({"lang": lang, "what": label, "ms_per_1000_tokens": 1e6 * dt / n,
                        "rows_per_1000_tokens": 1000 * rows / n})
    return out


def check_truth(part: str, limit: int | None, langs: Sequence[str], n: int = 300) -> int:
    """Recount sampled pairs of the truth with Python sets and difflib's longest match; the mismatches."""
    import difflib

    docs = load_or_build(part, limit)
    bad = 0
    for lang in langs:
        mine = [d for d in docs if d["lang"] == lang]
        tz = tokenize([d["text"] for d in mine])
        tr = compute_truth(tz)
        rng = random.Random(f"check:{lang}")
        listed = list(range(len(tr.i)))
        sample = rng.sample(listed, min(n, len(listed)))
        with_run = np.flatnonzero(tr.run > 0).tolist()
        sample += rng.sample(with_run, min(n, len(with_run)))
        for k in sample:
            a, b = tz.tokens[tr.i[k]].tolist(), tz.tokens[tr.j[k]].tolist()
            run = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size
            inter = len(set(tz.shingles[tr.i[k]].tolist()) & set(tz.shingles[tr.j[k]].tolist()))
            if (run if run >= MIN_RUN_EXACT else 0) != tr.run[k] or inter != tr.inter[k]:
                bad += 1
                log(f"{lang}: pair {tr.i[k]}, {tr.j[k]}: run {run} / {tr.run[k]}, shared {inter} / {tr.inter[k]}")
        # pairs the truth does not list share no shingle
        pairs = set(zip(tr.i.tolist(), tr.j.tolist(), strict=True))
        for _ in range(n):
            x, y = sorted(rng.sample(range(len(mine)), 2))
            if (x, y) not in pairs and set(tz.shingles[x].tolist()) & set(tz.shingles[y].tolist()):
                bad += 1
                log(f"{lang}: pair {x}, {y} shares shingles and is not listed")
        log(f"{lang}/{part}: {len(sample)} listed and {n} random pairs recounted")
    return bad


# -- main ---------------------------------------------------------------------------------


def planted_recall(part: str, limit: int | None, specs: Sequence[str], langs: Sequence[str]) -> list[dict[str, Any]]:
    """Recall of the planted passages for each ``product:`` detector, per language and bin (see the docstring)."""
    from simpg.passages import K, PassageConfig, compare, passage_hashes_array

    docs = load_or_build(part, limit)
    out = []
    for lang in langs:
        mine = [d for d in docs if d["lang"] == lang]
        planted = planted_pairs(mine)
        for spec in specs:
            name, opts = parse_detector(spec)
            if name != "product":
                raise SystemExit(f"planted: only product detectors, got {spec!r}")
            config = PassageConfig(opts["w"], opts.get("ws", opts["w"]))
            involved = sorted({n for a, b, _, _ in planted for n in (a, b)})
            hashes = {n: passage_hashes_array(mine[n]["text"], config) for n in involved}
            bins: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for a, b, length, rate in planted:
                found = (len(np.intersect1d(hashes[a], hashes[b])) > 0
                         and compare(mine[a]["text"], mine[b]["text"]).longest >= K)
                by_length = "50-99" if length < 100 else "100-299" if length < 300 else "300+"
                for label in (by_length, f"edit {rate:.2f}", f"{by_length} edit {rate:.2f}"):
                    bins[label][1] += 1
                    bins[label][0] += found
            out.append({"lang": lang, "detector": spec, "bins": {k: tuple(v) for k, v in sorted(bins.items())}})
            log(f"{lang}/{part} {spec}: {len(planted)} planted passages")
    return out


def part_path(part: str, limit: int | None) -> Path:
    return (LARGE_OUT if part in LARGE_PARTS else OUT) / (f"{part}-{limit}" if limit else part)


def load_or_build(part: str, limit: int | None, force: bool = False, hosts: int | None = None) -> list[dict[str, Any]]:
    path = part_path(part, limit).with_suffix(".jsonl.gz")
    if path.exists() and not force:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    docs = build_part(part, limit, hosts)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    return docs


def planted_pairs(docs: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    at = {d["id"]: n for n, d in enumerate(docs)}
    return [(n, at[s["donor"]], s["tokens"], s["rate"]) for n, d in enumerate(docs) for s in d.get("sources", [])]


def parse_detector(spec: str) -> tuple[str, dict[str, int]]:
    name, *opts = spec.split(":")
    return name, {k: int(v) for k, v in (o.split("=") for o in opts)}


DEFAULT_DETECTORS = ("lshe", "winnow:k=5:w=8", "winnow:k=5:w=16", "winnow:k=5:w=26", "winnow:k=5:w=46",
                     "winnow:k=8:w=43", "winnow:k=5:w=96", "winnow:k=5:w=46:wcjk=96", "simhash:win=25:k=3",
                     "simhash:win=50:k=3", "simhash:win=100:k=3")


def run(part: str, limit: int | None, detectors: Sequence[str], langs: Sequence[str]) -> dict[str, Any]:
    docs = load_or_build(part, limit)
    report: dict[str, Any] = {"part": part, "limit": limit, "langs": {}}
    for lang in langs:
        mine = [d for d in docs if d["lang"] == lang]
        texts = [d["text"] for d in mine]
        t0 = time.perf_counter()
        tz = tokenize(texts)
        tr = compute_truth(tz)
        planted = planted_pairs(mine)
        log(f"{lang}/{part}: {len(mine)} documents, {sum(len(t) for t in tz.tokens)} tokens, {len(tr.i)} pairs "
            f"sharing a shingle, {int((tr.run >= 50).sum())} sharing a run of 50+ tokens "
            f"({time.perf_counter() - t0:.1f}s)")
        rows = {}
        sim_windows: dict[int, list[int]] = defaultdict(list)
        for spec in detectors:
            name, opts = parse_detector(spec)
            if name == "simhash":
                sim_windows[opts["win"]].append(opts["k"])
        for spec in detectors:
            name, opts = parse_detector(spec)
            t1 = time.perf_counter()
            if name == "lshe":
                for t, f in lshe_detector(tz, CONTAIN).items():
                    s = score(tr, f, planted, runs=False)
                    # one index per threshold: only its own question counts
                    rows[f"lshe t={t}"] = {"scores": {f"contain {t}": s[f"contain {t}"], "planted": s["planted"],
                                                      "planted_n": s["planted_n"]}, "cost": cost_row(f)}
            elif name == "winnow":
                wc = opts.get("wcjk")
                for mode, f in winnow_detector(tz, opts["k"], opts["w"], wc).items():
                    guarantee = f"{opts['w'] + opts['k'] - 1}" + (f" / CJK {wc + opts['k'] - 1}" if wc else "")
                    label = f"winnow k={opts['k']} w={opts['w']}" + (f" wcjk={wc}" if wc else "")
                    label += f" (guarantee {guarantee}), {mode}"
                    rows[label] = {"scores": score(tr, f, planted), "cost": cost_row(f)}
            elif name == "product":
                ws = opts.get("ws")
                for mode, f in product_detector(texts, opts["w"], ws).items():
                    label = (f"product w={opts['w']}" + (f" ws={ws}" if ws is not None else "")
                             + f" (guarantee {max(opts['w'], ws or 0) + 4}), {mode}")
                    rows[label] = {"scores": score(tr, f, planted), "cost": cost_row(f)}
                    c = f.cost
                log(f"  {spec}: {c['candidates']} candidates, {len(f.i)} pairs; whole pass "
                    f"{c['wall_s']:.1f}s for {c['docs']} documents = {1000 * c['wall_s'] / c['docs']:.2f}s "
                    f"per 1,000 documents")
            elif name == "simhash":
                if opts["win"] not in sim_windows:
                    continue
                for k, f in simhash_detector(tz, texts, opts["win"], sim_windows.pop(opts["win"])).items():
                    rows[f"passage simhash win={opts['win']} k={k}"] = {"scores": score(tr, f, planted),
                                                                         "cost": cost_row(f)}
            else:
                raise SystemExit(f"unknown detector {spec!r}")
            log(f"  {spec}: {time.perf_counter() - t1:.1f}s")
        n_tokens = int(sum(len(t) for t in tz.tokens))
        report["langs"][lang] = {"docs": len(mine), "tokens": n_tokens,
                                 "text_bytes_per_1000_tokens": 1000 * sum(len(x.encode()) for x in texts) / n_tokens,
                                 "rows": rows}
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [f"## Partial duplicates, part {report['part']}" + (f" (limit {report['limit']})" if report["limit"]
                                                                else "")]
    questions = [f"contain {x}" for x in CONTAIN] + [f"run {n}" for n in RUNS]
    for q in questions:
        lines += ["", f"### {q}", "", "| lang | detector | P | R | F1 | called | positive | far |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for lang, r in report["langs"].items():
            for label, row in r["rows"].items():
                s = row["scores"].get(q)
                if s is None:
                    continue
                lines.append(f"| {lang} | {label} | {s['p']:.3f} | {s['r']:.3f} | {s['f1']:.3f} | {s['called']} | "
                             f"{s['positive']} | {s['far']} |")
    lines += ["", "### planted passages found (recall by passage length, tokens)", "",
              "| lang | detector | 50-99 | 100-299 | 300+ | edited 0% | 2% | 5% | 10% | 50-99 edited 10% | "
              "100-299 edited 10% |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lang, r in report["langs"].items():
        for label, row in r["rows"].items():
            p = row["scores"]["planted"]
            n = row["scores"]["planted_n"]
            cells = [f"{p[b]:.3f} ({n[b]})" if b in p else "–"
                     for b in ("50-99", "100-299", "300+", *(f"edit {r:.2f}" for r in EDIT_RATES), "50-99 edit 0.10",
                               "100-299 edit 0.10")]
            lines.append(f"| {lang} | {label} | " + " | ".join(cells) + " |")
    lines += ["", "### cost", "", "| lang | detector | hashes / 1k tokens | bytes / 1k tokens (heap + B-tree) | "
              "x text bytes | hashing CPU ms / 1k tokens | all-pairs verification CPU s | "
              "postings touched per document p50 / p99 |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for lang, r in report["langs"].items():
        text = r["text_bytes_per_1000_tokens"]
        for label, row in r["rows"].items():
            c = row["cost"]
            touched = (f"{c['postings_p50']:.0f} / {c['postings_p99']:.0f}" if "postings_p50" in c else "–")
            size = c["bytes_per_1000_tokens"]
            size_cells = "– | –" if math.isnan(size) else f"{size:.0f} | {size / text:.2f}"
            lines.append(f"| {lang} | {label} | {c['hashes_per_1000_tokens']:.1f} | {size_cells} | "
                         f"{c['cpu_ms_per_1000_tokens']:.2f} | {c['verify_all_pairs_s']:.1f} | {touched} |")
    passes = [(lang, label, row["cost"]["pass_s_per_1000_docs"]) for lang, r in report["langs"].items()
              for label, row in r["rows"].items() if "pass_s_per_1000_docs" in row["cost"]]
    if passes:
        lines += ["", "### the product's whole in-memory pass (hashes, candidates, compare; one process)", "",
                  "| lang | detector | documents | wall s / 1,000 documents |", "|---|---|---:|---:|"]
        lines += [f"| {lang} | {label} | {report['langs'][lang]['docs']} | {s:.2f} |" for lang, label, s in passes
                  if label.endswith("reported")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("build", "score", "planted", "rowsize", "cost", "check"))
    ap.add_argument("--part", default="tune", choices=(*build_corpus.PARTS, *LARGE_PARTS))
    ap.add_argument("--hosts", type=int, default=None,
                    help="build: planted documents a language of a large part (default LARGE_HOSTS)")
    ap.add_argument("--limit", type=int, default=None, help="bases per language (develop)")
    ap.add_argument("--lang", default=",".join(LANGS))
    ap.add_argument("--detectors", default=",".join(DEFAULT_DETECTORS))
    ap.add_argument("--force", action="store_true", help="build the part again")
    ap.add_argument("--dsn", default=None, help="rowsize: a server of your own (default: simpg's embedded one)")
    args = ap.parse_args(argv)
    if args.command == "build":
        load_or_build(args.part, args.limit, force=args.force, hosts=args.hosts)
        return
    if args.command == "rowsize":
        print("| table | heap bytes / row | B-tree (hash) bytes / row | total |\n|---|---:|---:|---:|")
        for r in row_sizes(args.dsn):
            print(f"| {r['shape']} | {r['heap_bytes_per_row']:.1f} | {r['btree_bytes_per_row']:.1f} | "
                  f"{r['heap_bytes_per_row'] + r['btree_bytes_per_row']:.1f} |")
        return
    if args.command == "check":
        bad = check_truth(args.part, args.limit, [x for x in args.lang.split(",") if x])
        if bad:
            raise SystemExit(f"truth check failed: {bad} pairs")
        print("truth check passed")
        return
    if args.command == "planted":
        bands = ("50-99", "100-299", "300+", *(f"edit {r:.2f}" for r in EDIT_RATES), "50-99 edit 0.10",
                 "100-299 edit 0.10", "300+ edit 0.10")
        print("| lang | detector | " + " | ".join(bands) + " |\n|---|---|" + "---:|" * len(bands))
        for r in planted_recall(args.part, args.limit, [d for d in args.detectors.split(",") if d],
                                [x for x in args.lang.split(",") if x]):
            cells = [f"{r['bins'][b][0] / r['bins'][b][1]:.3f} ({r['bins'][b][0]}/{r['bins'][b][1]})"
                     if b in r["bins"] else "–" for b in bands]
            print(f"| {r['lang']} | {r['detector']} | " + " | ".join(cells) + " |")
        return
    if args.command == "cost":
        print("| lang | step | CPU ms / 1k tokens | rows / 1k tokens |\n|---|---|---:|---:|")
        for r in hashing_cost(args.part, args.limit, [d for d in args.detectors.split(",") if d],
                              [x for x in args.lang.split(",") if x]):
            rows = f"{r['rows_per_1000_tokens']:.1f}" if "rows_per_1000_tokens" in r else "–"
            print(f"| {r['lang']} | {r['what']} | {r['ms_per_1000_tokens']:.2f} | {rows} |")
        return
    report = run(args.part, args.limit, [d for d in args.detectors.split(",") if d],
                 [x for x in args.lang.split(",") if x])
    text = markdown(report)
    print(text)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # reports go beside the code, not into the corpus (shared, read-only to a scoring run)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"partial-{args.part}-{stamp}.md").write_text(text)
    (RESULTS / f"partial-{args.part}-{stamp}.json").write_text(json.dumps(report, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
