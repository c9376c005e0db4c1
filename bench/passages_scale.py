"""The online passage lookup (PassageColumn.near) beside the fingerprint lookup (SimHashColumn.near)
at 1,000,000 rows of 5 KB texts, in one run; the table is built once and kept for reruns.

Texts are synthetic, made deterministically from the seed (any row can be made again alone),
and fitted to the real English and Chinese documents of bench/data/quality14/corpus (its
``tune`` part; gitignored, made by bench/quality/build_corpus.py), where the figures are decided: bytes per
token (the text's size) and passage hashes per KB (the index's size). An English row is
tokens drawn independently by their frequency in the real English part (its 21,573 distinct
tokens: real words, numbers, identifiers, as simpg.passages tokenises them), each followed by
a separator drawn by its frequency among the real part's separators (the ASCII characters
between two tokens: " ", ", ", "-", ".", "\n", ".\n\n", "(", ...: its 3,886 distinct ones).
A Chinese row (0.3% of the rows) is jieba's dictionary words by frequency, as Han letters,
each followed by a separator of the real Chinese part (mostly none; "，", "。", " ", ...). Rows
are cut at a whole token at 5,000 bytes. Fit (``python bench/passages_scale.py --fit``,
documents of >= 5,000 bytes cut there; hashes by simpg.passages.passage_hashes at the
default windows, 26 / 46 when this was measured; 22 / 46 since, about 1.18x the hashes of
English, not fitted again):

  =============================  ==============  ============  =================
  5 KB texts                     bytes / token   hashes / KB   hashes / 5 KB row
  =============================  ==============  ============  =================
  real English, tune (774)       6.50            10.64         53.2
  real English, heldout (657)    6.61            10.39         52.0
  synthetic English (2,991)      6.49            11.13         55.6
  real Chinese, tune (267)       3.92            10.00         50.0
  real Chinese, heldout (294)    4.00             9.90         49.5
  synthetic Chinese (49)         3.31            12.51         62.5
  =============================  ==============  ============  =================

The synthetic rows have 5-7% more hashes per KB than real English (real text repeats
phrases, drawing tokens independently does not), so the index sizes below are slightly
pessimistic; the Chinese rows have fewer bytes per token (no Latin words in them: rows are
single-script), too few to weigh. The previous generator (30,000 made-up words, the shortest
the most frequent) had 4.72 bytes a token and, at today's windows, 15.45 hashes a KB (997
rows): 45% more than real English. Planted copies: 5% of the rows carry a passage of
50 to 1,000 tokens of another row (one that copies nothing), half of them with up to 10% of
the tokens replaced. Boilerplate: two paragraphs shared by 1% of the rows each, two shared
by 0.1% each. Each row stores its text (``body``), its SimHash fingerprint (``simhash``,
simpg index k = 3) and its passage hashes (``passages``, bigint[], the GIN index of
``simpg.create_passage_index`` with its defaults, made after the load).

Fingerprints are the product's (``simpg.fingerprint``, in 2 worker processes). Passage
hashes are the library's (``simpg.passages.passage_hashes_array`` on the row's tokens, so
the window is the one the library gives the row); every 500th row is checked against
``simpg.passages.passage_hashes`` of its text (the script stops on any difference).

Queries (5 KB English, tokens and separators drawn as the rows', none of them stored):
  copy         quotes one passage of 60 to 150 words of a random stored row;
  none         shares nothing (beyond chance k-grams of frequent words);
  boilerplate  quotes one of the boilerplate paragraphs (1% or 0.1% of the rows).
They are interleaved; each is looked up by both handles on one lookup connection, alternately:
``PassageColumn.near(text)`` (default ``max_common`` 1000) and
``SimHashColumn.near(fingerprint(text), 3)`` (fingerprinting included). Every copy query must
find the row it quoted, unless the lookup reports skipped hashes (the script stops otherwise).
Then ``SELECT count(*) FROM simpg.passage_pairs(table, 'passages')`` (the all-pairs
candidates, default max_common) is timed, unless ``--no-pairs``.

The passage index is the product's: ``simpg.create_passage_index``'s GIN index on the
bucketed keys (``simpg.passage_keys(passages, key_bits)``, key_bits by the table's rows
unless ``--key-bits``); the sizes report its key bits and bytes. ``--reindex`` indexes an
existing table again in place (``simpg.drop_passage_index``, then
``simpg.create_passage_index``; a plain GIN on the column, the layout before the keys, is
dropped too) and times it. ``--compare-plain`` measures side by side, in one run, the
product's index and the plain GIN on the hashes (the layout before the keys): a twin table
``<table>_plain`` (the same rows, the passage comment, ``CREATE INDEX ... USING gin
(passages)``, no keys index: its lookups ask ``passages && probe``) is made once; each query
is asked of both in turn (order alternating) on one lookup connection: the whole
``PassageColumn.near``, then the candidate statement alone (``simpg.passage_probe_statement``
with the query's hashes and the skipped common ones; it finds the candidates' pages just
read by ``near``, so it is the statement's cost with the rows cached); both must find the
same rows. Nothing is skipped there (``near(text, max_common=None, limit=10)``): each table's
common hashes are its own ANALYZE's estimate, which differs between the twins near the limit
(``limit``: else a query quoting a 1% paragraph verifies 10,000 rows).

The table is named by rows and seed (``passages_scale2_<rows>_<seed>``; 2: the fitted text) and
kept: a rerun with the same ``--rows``/``--seed`` only queries (``--rebuild`` makes it again).
Without ``--dsn`` the embedded server keeps its data in ``$SIMPG_HOME`` (default here
/tmp/simpg-passages-scale2: about 10 GB at 1M rows).

``--levers`` stores only the rows' hashes (``(id, passages)``, no text) in one table per
variant and reports the bytes of the column and its GIN index against the rows' text bytes:
the index made after the load (as above), made before it with fastupdate on and off (rows
written into it, then VACUUM), a smaller ``maintenance_work_mem``, the column compressed
(``STORAGE MAIN``, pglz, ``toast_tuple_target`` 128); and whether GIN takes a fillfactor.

Usage:
    python bench/passages_scale.py --rows 1000000                 # build once, then measure
    python bench/passages_scale.py --rows 1000000 --queries 100   # rerun: queries only
    python bench/passages_scale.py --rows 20000 --rebuild --out bench/results/scale.json
    python bench/passages_scale.py --dsn "host=... dbname=..." --rows 1000000
    python bench/passages_scale.py --rows 1000000 --rehash        # hashes made again (a new window)
    python bench/passages_scale.py --fit                          # the fit table above
    python bench/passages_scale.py --levers --rows 100000         # index bytes, the cheap levers
    python bench/passages_scale.py --rows 1000000 --reindex --no-pairs   # the keys index, in place
    python bench/passages_scale.py --rows 100000 --compare-plain --no-pairs  # keys vs plain GIN
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from simpg.passages import DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW

TEXT_BYTES = 5000
CHINESE_EVERY = 333  # 0.3% of rows
COPIER_PERCENT = 5
CHUNK = 4000  # rows a worker makes at a time
CHECK_EVERY = 500  # rows checked against the product's passage_hashes
JIEBA_WORDS = 60_000
SEPARATORS = 5000  # the most frequent separators of the real part kept (the rest renormalised away)
CORPUS = Path(__file__).parent / "data" / "quality14" / "corpus"
FIT_PART = "tune"  # the real part the generator is fitted on; the other ("heldout") is shown beside

# boilerplate paragraphs: (name, share of rows as "every n-th row", offset, words)
BOILERPLATE = (("b1pct_a", 100, 3, 70), ("b1pct_b", 100, 41, 110),
               ("b01pct_a", 1000, 7, 90), ("b01pct_b", 1000, 503, 140))


def _fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


# -- the real parts: what the generator is fitted to --------------------------------------

def real_documents(lang: str, part: str) -> list[str]:
    """The texts of one language and part of the real corpus, each cut to TEXT_BYTES (only those that long)."""
    out = []
    with open(CORPUS / f"{lang}.jsonl", encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            raw = doc["text"].encode()
            if doc.get("part") == part and len(raw) >= TEXT_BYTES:
                out.append(raw[:TEXT_BYTES].decode(errors="ignore"))
    return out


def _han(word: str) -> bool:
    return len(word) == 1 and "\u4e00" <= word <= "\u9fff"


def real_counts(texts: list[str], han: bool) -> tuple[Counter[str], Counter[str]]:
    """Token counts and separator counts (the characters between two tokens) of real texts.

    English: every token that is not a Han letter, the non-empty ASCII separators between two
    such tokens. Chinese (``han``): Han letters, the separators between two of them (empty included).
    """
    from simpg.passages.tokens import tokens

    words: Counter[str] = Counter()
    separators: Counter[str] = Counter()
    for text in texts:
        toks = tokens(text)
        for i, word in enumerate(toks.words):
            if _han(word) != han:
                continue
            words[word] += 1
            if i + 1 < len(toks.words) and _han(toks.words[i + 1]) == han:
                sep = text[toks.ends[i]:toks.starts[i + 1]]
                if han or (sep and sep.isascii()):
                    separators[sep] += 1
    return words, separators


def text_figures(texts: list[str]) -> dict[str, float]:
    """Bytes per token and passage hashes per KB (simpg.passages, the product's windows) of texts."""
    from simpg.passages import passage_hashes
    from simpg.passages.tokens import plain_tokens

    size = sum(len(t.encode()) for t in texts)
    count = sum(len(plain_tokens(t)[0]) for t in texts)
    hashes = sum(len(passage_hashes(t)) for t in texts)
    return {"texts": len(texts), "bytes_per_token": round(size / count, 2),
            "hashes_per_kb": round(hashes / size * 1000, 2), "hashes_per_5kb_text": round(hashes / len(texts), 1)}


# -- vocabulary ----------------------------------------------------------------------------

class Vocabulary:
    """Token ids 0..english-1 are the real English part's words, the rest Han letters; separators apart."""

    def __init__(self, seed: int) -> None:
        en_words, en_seps = real_counts(real_documents("en", FIT_PART), han=False)
        zh_seps = real_counts(real_documents("zh", FIT_PART), han=True)[1]
        english = [w for w, _ in en_words.most_common()]
        counts = np.array([en_words[w] for w in english], dtype=np.float64)
        self.english_count = len(english)
        self.english_cdf = np.cumsum(counts) / counts.sum()

        import jieba

        chinese_words, freqs = [], []
        with open(Path(jieba.__file__).parent / "dict.txt", encoding="utf-8") as lines:
            for line in lines:
                word, freq = line.split()[:2]
                if all("\u4e00" <= c <= "\u9fff" for c in word):
                    chinese_words.append(word)
                    freqs.append(int(freq))
        order = np.argsort(freqs)[::-1][:JIEBA_WORDS]
        chinese_words = [chinese_words[i] for i in order]
        f = np.array([freqs[i] for i in order], dtype=np.float64)
        self.chinese_cdf = np.cumsum(f) / f.sum()
        chars = sorted({c for w in chinese_words for c in w})
        char_id = {c: len(english) + i for i, c in enumerate(chars)}
        lengths = np.array([len(w) for w in chinese_words], dtype=np.int64)
        self.cw_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.cw_len = lengths
        self.cw_chars = np.array([char_id[c] for w in chinese_words for c in w], dtype=np.int32)

        self.words = np.array(english + chars, dtype=object)
        self.word_list = english + chars
        self.word_bytes = np.array([len(w.encode()) for w in self.words], dtype=np.int64)
        self.fnv = np.array([_fnv1a(w.encode()) for w in self.words], dtype=np.uint64)
        # separators: English ids 0.., Chinese after; drawn by their real frequency
        en_sep = en_seps.most_common(SEPARATORS)
        zh_sep = zh_seps.most_common(SEPARATORS)
        self.separators = np.array([s for s, _ in en_sep] + [s for s, _ in zh_sep], dtype=object)
        self.separator_bytes = np.array([len(s.encode()) for s in self.separators], dtype=np.int64)
        en_c = np.array([c for _, c in en_sep], dtype=np.float64)
        zh_c = np.array([c for _, c in zh_sep], dtype=np.float64)
        self.en_sep_cdf, self.zh_sep_cdf, self.zh_sep_first = np.cumsum(en_c) / en_c.sum(), \
            np.cumsum(zh_c) / zh_c.sum(), len(en_sep)
        self.boilerplate = {}
        for name, _, offset, words in BOILERPLATE:
            r = np.random.default_rng([seed, 1, offset])
            self.boilerplate[name] = (self.english(r, words), self.english_separators(r, words))

    def english(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.searchsorted(self.english_cdf, rng.random(n)).clip(0, self.english_count - 1).astype(np.int32)

    def english_separators(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.searchsorted(self.en_sep_cdf, rng.random(n)).clip(0, self.zh_sep_first - 1).astype(np.int32)

    def chinese(self, rng: np.random.Generator, n_chars: int) -> np.ndarray:
        picked = np.searchsorted(self.chinese_cdf, rng.random(n_chars)).clip(0, len(self.cw_len) - 1)
        if n_chars == 0:
            return np.zeros(0, dtype=np.int32)
        parts = [self.cw_chars[s:s + n] for s, n in zip(self.cw_start[picked], self.cw_len[picked], strict=True)]
        return np.concatenate(parts)[:n_chars]

    def chinese_separators(self, rng: np.random.Generator, n: int) -> np.ndarray:
        picked = np.searchsorted(self.zh_sep_cdf, rng.random(n)).clip(0, len(self.separators) - self.zh_sep_first - 1)
        return (self.zh_sep_first + picked).astype(np.int32)

    def text(self, ids: np.ndarray, seps: np.ndarray) -> str:
        return "".join((self.words[ids] + self.separators[seps]).tolist()).rstrip()

    def cut(self, ids: np.ndarray, seps: np.ndarray) -> int:
        """How many leading tokens fit in TEXT_BYTES (with their separators)."""
        used = np.cumsum(self.word_bytes[ids] + self.separator_bytes[seps])
        return int(np.searchsorted(used, TEXT_BYTES + 1, side="left"))

    def passage_hashes(self, ids: np.ndarray) -> np.ndarray:
        """simpg.passages.passage_hashes of a text of these tokens: the library's window and winnowing."""
        from simpg.passages import passage_hashes_array
        from simpg.passages.tokens import Tokens

        offsets = np.zeros(len(ids), dtype=np.int64)
        toks = Tokens(text="", words=tuple(self.word_list[i] for i in ids.tolist()), hashes=self.fnv[ids],
                      starts=offsets, ends=offsets)
        return passage_hashes_array(toks)


# -- rows ----------------------------------------------------------------------------

def _is_copier(row: int, seed: int) -> bool:
    return int(_splitmix(np.array([row * 7919 + seed], dtype=np.uint64))[0] % 100) < COPIER_PERCENT


def _rng(seed: int, row: int, part: int) -> np.random.Generator:
    return np.random.default_rng([seed, 2, row, part])


def own_tokens(vocab: Vocabulary, seed: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Row ``row``'s tokens and separators before any copied passage (its words and boilerplate)."""
    rng = _rng(seed, row, 0)
    if row % CHINESE_EVERY == 5:
        ids = vocab.chinese(rng, 2000)
        seps = vocab.chinese_separators(rng, len(ids))
    else:
        ids = vocab.english(rng, 1200)
        seps = vocab.english_separators(rng, len(ids))
    for name, every, offset, _ in BOILERPLATE:
        if row % every == offset % every:
            b_ids, b_seps = vocab.boilerplate[name]
            at = int(rng.integers(0, 500))
            ids = np.concatenate([ids[:at], b_ids, ids[at:]])
            seps = np.concatenate([seps[:at], b_seps, seps[at:]])
    return ids, seps


def row_tokens(vocab: Vocabulary, seed: int, row: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Row ``row``'s stored tokens and separators (cut to TEXT_BYTES)."""
    ids, seps = own_tokens(vocab, seed, row)
    if _is_copier(row, seed):
        rng = _rng(seed, row, 1)
        source = int(rng.integers(rows))
        while _is_copier(source, seed) or source == row:
            source = int(rng.integers(rows))
        s_ids, s_seps = own_tokens(vocab, seed, source)
        n = vocab.cut(s_ids, s_seps)
        s_ids, s_seps = s_ids[:n], s_seps[:n]
        length = min(int(rng.integers(50, 1001)), len(s_ids) - 1)
        start = int(rng.integers(0, len(s_ids) - length + 1))
        p_ids, p_seps = s_ids[start:start + length].copy(), s_seps[start:start + length]
        if rng.random() < 0.5:  # edited: up to 10% of the tokens replaced, by tokens of the source's script
            where = rng.choice(length, size=int(rng.integers(0, length // 10 + 1)), replace=False)
            chinese = source % CHINESE_EVERY == 5  # (an English word between two unspaced Han letters would merge)
            p_ids[where] = vocab.chinese(rng, len(where)) if chinese else vocab.english(rng, len(where))
        at = int(rng.integers(0, 300))
        ids = np.concatenate([ids[:at], p_ids, ids[at:]])
        seps = np.concatenate([seps[:at], p_seps, seps[at:]])
    n = vocab.cut(ids, seps)
    return ids[:n], seps[:n]


# -- the worker: a chunk of rows with their fingerprints and passage hashes ------------

_VOCAB: Vocabulary | None = None  # made before the pool forks (the workers inherit it)


def make_chunk(args: tuple[int, int, int, int]) -> tuple[list[str], list[int], list[list[int]], int, float]:
    from simpg.fingerprint import fingerprint
    from simpg.passages import passage_hashes

    first, last, rows, seed = args
    assert _VOCAB is not None
    texts, hashes = [], []
    checked = 0
    for row in range(first, last):
        ids, seps = row_tokens(_VOCAB, seed, row, rows)
        texts.append(_VOCAB.text(ids, seps))
        hashes.append(_VOCAB.passage_hashes(ids).tolist())
        if row % CHECK_EVERY == 0:
            if passage_hashes(texts[-1]) != hashes[-1]:
                raise RuntimeError(f"row {row}: the hashes of its tokens differ from passage_hashes of its text")
            checked += 1
    started = time.process_time()
    fps = [fingerprint(t) for t in texts]
    fp_cpu = time.process_time() - started
    signed = np.array(fps, dtype=np.uint64).view(np.int64).tolist()
    return texts, signed, hashes, checked, fp_cpu


# -- building the table ----------------------------------------------------------------

def exists(conn: psycopg.Connection, table: str) -> bool:
    row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", [table]).fetchone()
    return row is not None and row[0] == "complete"


def build(conn: psycopg.Connection, table: str, rows: int, seed: int, workers: int,
          key_bits: int | None = None) -> dict[str, Any]:
    from simpg.psycopg import PassageColumn, SimHashColumn

    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, body text, simhash bigint, passages bigint[])")
    started = time.perf_counter()
    checked, fp_cpu, done = 0, 0.0, 0
    ranges = [(a, min(a + CHUNK, rows), rows, seed) for a in range(0, rows, CHUNK)]
    global _VOCAB
    _VOCAB = Vocabulary(seed)
    with multiprocessing.get_context("fork").Pool(workers) as pool, \
            conn.cursor().copy(f"COPY {table} (id, body, simhash, passages) FROM STDIN") as copy:
        made = pool.imap(make_chunk, ranges)
        for (first, _, _, _), (texts, fps, hashes, n_checked, cpu) in zip(ranges, made, strict=True):
            for i, (text, fp, stored) in enumerate(zip(texts, fps, hashes, strict=True)):
                copy.write_row((first + i + 1, text, fp, stored))
            checked += n_checked
            fp_cpu += cpu
            done += len(texts)
            if done % 100_000 < CHUNK:
                print(f"{done} rows, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    loaded = time.perf_counter() - started
    conn.execute("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    SimHashColumn(conn, table).create(k=3)
    simhash_index = time.perf_counter() - started
    started = time.perf_counter()
    PassageColumn(conn, table, text_column="body").create(key_bits=key_bits)
    gin_index = time.perf_counter() - started
    started = time.perf_counter()
    conn.execute(f"VACUUM ANALYZE {table}")
    analyzed = time.perf_counter() - started
    built = {"make_hash_fingerprint_copy_s": round(loaded, 1), "fingerprint_cpu_s": round(fp_cpu, 1),
             "rows_checked_against_passage_hashes": checked, "simhash_index_s": round(simhash_index, 1),
             "gin_index_s": round(gin_index, 1), "vacuum_analyze_s": round(analyzed, 1), "workers": workers}
    conn.execute(f"COMMENT ON TABLE {table} IS 'complete'")
    return built


# -- making the hashes again (a table built with an earlier config) ----------------------

def rehash_chunk(args: tuple[int, int, int, int]) -> list[tuple[int, list[int], str | None]]:
    """Rows first..last-1: (id, passage hashes with the library's config, the text of every CHECK_EVERY-th)."""
    first, last, rows, seed = args
    assert _VOCAB is not None
    made = []
    for row in range(first, last):
        ids, seps = row_tokens(_VOCAB, seed, row, rows)
        text = _VOCAB.text(ids, seps) if row % CHECK_EVERY == 0 else None
        made.append((row + 1, _VOCAB.passage_hashes(ids).tolist(), text))
    return made


def rehash(conn: psycopg.Connection, table: str, rows: int, seed: int, workers: int) -> dict[str, Any]:
    """Store every row's passage hashes made again with the library's current config, without an index.

    The texts and fingerprints stay: they do not depend on the passage config, and making them is
    most of a build (the fingerprints). Every CHECK_EVERY-th row's text is made again too and must
    equal the stored one, and its hashes ``passage_hashes`` of it. The passage index is dropped
    (its comment records the old windows): make it again before measuring.
    """
    from simpg.passages import passage_hashes

    global _VOCAB
    _VOCAB = Vocabulary(seed)
    started = time.perf_counter()
    conn.execute(f"COMMENT ON TABLE {table} IS 'rehashing'")
    conn.execute("SELECT simpg.drop_passage_index(%s::regclass, 'passages')", [table])
    conn.execute("DROP TABLE IF EXISTS passages_rehash")
    conn.execute("CREATE UNLOGGED TABLE passages_rehash (id bigint, passages bigint[])")
    checked = 0
    ranges = [(a, min(a + CHUNK, rows), rows, seed) for a in range(0, rows, CHUNK)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for chunk in pool.imap(rehash_chunk, ranges):
            with conn.cursor().copy("COPY passages_rehash (id, passages) FROM STDIN") as copy:
                for key, hashes, _ in chunk:
                    copy.write_row((key, hashes))
            for key, hashes, text in chunk:
                if text is None:
                    continue
                stored = conn.execute(f"SELECT body FROM {table} WHERE id = %s", [key]).fetchone()[0]
                if stored != text or passage_hashes(text) != hashes:
                    raise RuntimeError(f"row {key}: the text made again differs from the stored one, or its hashes")
                checked += 1
            if chunk[-1][0] % 100_000 < CHUNK:
                print(f"{chunk[-1][0]} rows hashed, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    hashed = time.perf_counter() - started
    started = time.perf_counter()
    conn.execute(f"UPDATE {table} AS t SET passages = r.passages FROM passages_rehash AS r WHERE t.id = r.id")
    conn.execute("DROP TABLE passages_rehash")
    conn.execute(f"VACUUM {table}")
    updated = time.perf_counter() - started
    conn.execute(f"COMMENT ON TABLE {table} IS 'complete'")
    return {"rehash_s": round(hashed, 1), "update_vacuum_s": round(updated, 1),
            "rows_checked_against_passage_hashes": checked, "workers": workers}


# -- queries ---------------------------------------------------------------------------

def queries(vocab: Vocabulary, rows: int, seed: int, per_kind: int) -> list[tuple[str, str, int | None, str]]:
    """(kind, text, quoted row key or None, boilerplate name or ''), interleaved by kind."""
    rng = np.random.default_rng([seed, 3])
    out = []
    names = [b[0] for b in BOILERPLATE]
    for i in range(per_kind):
        for kind in ("copy", "none", "boilerplate"):
            ids = vocab.english(rng, 1200)
            seps = vocab.english_separators(rng, len(ids))
            key, name = None, ""
            if kind == "copy":
                row = int(rng.integers(rows))
                r_ids, r_seps = row_tokens(vocab, seed, row, rows)
                length = min(int(rng.integers(60, 151)), len(r_ids))
                start = int(rng.integers(0, len(r_ids) - length + 1))
                part, part_seps, key = r_ids[start:start + length], r_seps[start:start + length], row + 1
            elif kind == "boilerplate":
                name = names[i % len(names)]
                part, part_seps = vocab.boilerplate[name]
            if kind != "none":
                at = int(rng.integers(0, 400))
                ids = np.concatenate([ids[:at], part, ids[at:]])
                seps = np.concatenate([seps[:at], part_seps, seps[at:]])
            n = vocab.cut(ids, seps)
            out.append((kind, vocab.text(ids[:n], seps[:n]), key, name))
    return out


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)

    def at(q: float) -> float:
        return round(ms[min(len(ms) - 1, int(len(ms) * q))], 2)

    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p90_ms": at(0.9), "p99_ms": at(0.99),
            "mean_ms": round(statistics.fmean(ms), 2)}


def measure(dsn: str, table: str, asked: list[tuple[str, str, int | None, str]]) -> dict[str, Any]:
    from simpg.fingerprint import fingerprint
    from simpg.passages import compare
    from simpg.psycopg import PassageColumn, SimHashColumn, configure_lookups

    with psycopg.connect(dsn, autocommit=True) as conn:
        configure_lookups(conn)
        passages = PassageColumn(conn, table, text_column="body")
        simhash = SimHashColumn(conn, table)
        for _, text, _, _ in asked[:6]:  # warm: caches, prepared statements, the common hashes
            passages.near(text)
            simhash.near(fingerprint(text), 3)
        times: dict[str, dict[str, list[float]]] = {}
        found: dict[str, list[int]] = {}
        skipped: dict[str, int] = {}
        missed_skipped = 0
        for kind, text, key, _ in asked:
            t = times.setdefault(kind, {"passage": [], "simhash": []})
            started = time.perf_counter()
            simhash.near(fingerprint(text), 3)
            t["simhash"].append(time.perf_counter() - started)
            started = time.perf_counter()
            got = passages.near(text)
            t["passage"].append(time.perf_counter() - started)
            found.setdefault(kind, []).append(len(got))
            skipped[kind] = skipped.get(kind, 0) + bool(got.skipped)
            if key is not None and key not in {m.key for m in got}:
                body = conn.execute(f"SELECT body FROM {table} WHERE id = %s", [key]).fetchone()[0]
                longest = compare(text, body).longest
                if longest >= 50 and not got.skipped:
                    raise SystemExit(f"row {key} shares a run of {longest} tokens and was not found")
                missed_skipped += longest >= 50
        common = len(passages.common_hashes(1000))
    result: dict[str, Any] = {"common_hashes_at_1000": common, "copied_rows_missed_through_skipped_hashes":
                              missed_skipped}
    for kind, t in times.items():
        p, s = percentiles(t["passage"]), percentiles(t["simhash"])
        result[kind] = {"passage_near": p, "simhash_near_with_fingerprinting": s,
                        "ratio_p50": round(p["p50_ms"] / s["p50_ms"], 1),
                        "ratio_p99": round(p["p99_ms"] / s["p99_ms"], 1),
                        "matches_mean": round(statistics.fmean(found[kind]), 2),
                        "matches_max": max(found[kind]), "queries_with_skipped_hashes": skipped[kind]}
    return result


def sizes(conn: psycopg.Connection, table: str) -> dict[str, Any]:
    text_bytes, column_bytes, hashes, rows = conn.execute(
        f"SELECT sum(octet_length(body)), sum(pg_column_size(passages)), sum(cardinality(passages)), count(*) "
        f"FROM {table}").fetchone()
    # the passage index (its keys index), else a plain GIN on the column (the layout before the keys)
    gin, key_bits = conn.execute(
        "SELECT coalesce(p.index_name::text, (SELECT i.indexrelid::regclass::text FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.indrelid = %s::regclass AND a.amname = 'gin' AND i.indexprs IS NULL LIMIT 1)), p.key_bits "
        "FROM simpg.passage_indexes AS p WHERE p.indexed_table = %s::regclass AND p.passage_column = 'passages'",
        [table, table]).fetchone()
    gin_bytes, table_bytes, heap_bytes, toast_bytes, indexes = conn.execute(
        "SELECT pg_relation_size(%s::regclass), pg_table_size(%s::regclass), pg_relation_size(%s::regclass), "
        "coalesce(pg_relation_size(nullif(reltoastrelid, 0)), 0), pg_indexes_size(%s::regclass) "
        "FROM pg_class WHERE oid = %s::regclass", [gin, table, table, table, table]).fetchone()
    text, column = int(text_bytes), int(column_bytes)
    out = {"rows": rows, "hashes_per_row": round(int(hashes) / rows, 1), "text_bytes": text,
           "passage_column_bytes": column, "gin_index": gin, "key_bits": key_bits, "gin_bytes": gin_bytes,
           "gin_bytes_per_hash": round(gin_bytes / int(hashes), 1),
           "heap_bytes": heap_bytes, "toast_bytes": toast_bytes, "table_bytes": table_bytes,
           "all_indexes_bytes": indexes, "ratio_gin_to_text": round(gin_bytes / text, 3),
           "ratio_passage_column_to_text": round(column / text, 3),
           "ratio_passage_column_and_gin_to_text": round((column + gin_bytes) / text, 3)}
    try:  # the pending list (fastupdate), if pgstattuple is there
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        pending_pages, pending_tuples = conn.execute(
            "SELECT pending_pages, pending_tuples FROM pgstatginindex(%s::regclass)", [gin]).fetchone()
        out.update(gin_pending_pages=pending_pages, gin_pending_tuples=pending_tuples)
    except psycopg.Error as error:
        out["gin_pending"] = f"not measured: {error}"
    return out


def reindex(conn: psycopg.Connection, table: str, key_bits: int | None) -> dict[str, Any]:
    """Index the table again in place: simpg.drop_passage_index, then simpg.create_passage_index.

    A plain GIN on the column (what simpg made before the keys index) is dropped as well: the
    planner could otherwise read it for the exact half of the condition.
    """
    conn.execute("SET maintenance_work_mem = '1GB'")
    windows = conn.execute("SELECT passage_window, spaceless_window FROM simpg.passage_indexes "
                           "WHERE indexed_table = %s::regclass AND passage_column = 'passages'", [table]).fetchone()
    window, spaceless_window = windows if windows else (DEFAULT_WINDOW, DEFAULT_SPACELESS_WINDOW)
    started = time.perf_counter()
    if windows:
        conn.execute("SELECT simpg.drop_passage_index(%s::regclass, 'passages')", [table])
    for (name,) in conn.execute("SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c "
                                "ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam JOIN pg_attribute t "
                                "ON t.attrelid = i.indrelid AND t.attnum = i.indkey[0] WHERE i.indrelid = "
                                "%s::regclass AND a.amname = 'gin' AND t.attname = 'passages'", [table]).fetchall():
        conn.execute(f"DROP INDEX {name}")
    dropped = time.perf_counter() - started
    started = time.perf_counter()
    bits = conn.execute("SELECT key_bits FROM simpg.create_passage_index(%s::regclass, 'passages', %s, %s, %s)",
                        [table, window, spaceless_window, key_bits]).fetchone()[0]
    return {"drop_s": round(dropped, 1), "create_passage_index_s": round(time.perf_counter() - started, 1),
            "key_bits": bits}


def plain_twin(conn: psycopg.Connection, table: str) -> str:
    """``<table>_plain``: the same rows with the plain GIN on the hashes and no keys index (made once)."""
    twin = f"{table}_plain"
    if exists(conn, twin):
        return twin
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute(f"DROP TABLE IF EXISTS {twin}")
    conn.execute(f"CREATE TABLE {twin} AS SELECT id, body, passages FROM {table}")
    conn.execute(f"ALTER TABLE {twin} ADD PRIMARY KEY (id)")
    conn.execute(f"ALTER TABLE {twin} ALTER COLUMN passages SET STATISTICS 1000")
    comment = conn.execute("SELECT col_description(%s::regclass, a.attnum) FROM pg_attribute AS a "
                           "WHERE a.attrelid = %s::regclass AND a.attname = 'passages'", [table, table]).fetchone()[0]
    conn.execute(f"COMMENT ON COLUMN {twin}.passages IS " + "'" + comment + "'")  # the table's windows
    conn.execute(f"CREATE INDEX {twin}_passages_gin_idx ON {twin} USING gin (passages)")
    conn.execute(f"VACUUM ANALYZE {twin}")
    conn.execute(f"COMMENT ON TABLE {twin} IS 'complete'")
    return twin


def compare_plain(dsn: str, tables: dict[str, str], asked: list[tuple[str, str, int | None, str]]) -> dict[str, Any]:
    """Each query asked of every variant in turn: PassageColumn.near, then the candidate statement alone."""
    from simpg.psycopg import PassageColumn, configure_lookups

    with psycopg.connect(dsn, autocommit=True) as conn:
        configure_lookups(conn)
        handles = {name: PassageColumn(conn, table, text_column="body") for name, table in tables.items()}
        statements = {name: conn.execute("SELECT simpg.passage_probe_statement(%s::regclass, 'passages')",
                                         [table]).fetchone()[0] for name, table in tables.items()}
        # nothing skipped here (near(max_common=None), the statement's skip list empty): each
        # table's common hashes are its own ANALYZE's estimate, which differs between the
        # twins for the hashes near the limit (the 0.1% paragraphs, ~1,000 rows), and so
        # would their answers; limit=10, or a 1% paragraph's query verifies 10,000 rows. The
        # lookups below (measure) keep the defaults
        skips: dict[str, list[int]] = {name: [] for name in handles}
        plans: dict[str, str] = {}
        for name in tables:
            conn.execute(f"PREPARE plan_{name} (bigint[], bigint[]) AS {statements[name]}")
            plans[name] = " / ".join(r[0].strip() for r in conn.execute(
                f"EXPLAIN EXECUTE plan_{name} ('{{1}}', '{{}}')").fetchall() if "Scan" in r[0])
        for _, text, _, _ in asked[:6]:  # warm
            for h in handles.values():
                h.near(text, max_common=None, limit=10)
        times: dict[str, dict[str, dict[str, list[float]]]] = {}
        candidates: dict[str, dict[str, list[int]]] = {}
        names = list(tables)
        for i, (kind, text, _, _) in enumerate(asked):
            found = {}
            for name in names[i % len(names):] + names[:i % len(names)]:  # the order rotates
                t = times.setdefault(kind, {}).setdefault(name, {"statement": [], "near": []})
                # near first: the statement after it finds the rows' pages cached (near, after the
                # statement, would too, and look cheaper than a lookup is)
                started = time.perf_counter()
                got = handles[name].near(text, max_common=None, limit=10)
                t["near"].append(time.perf_counter() - started)
                hashes = handles[name].hashes(text)
                with psycopg.RawCursor(conn) as cur:
                    started = time.perf_counter()
                    rows = cur.execute(statements[name], [hashes, skips[name]]).fetchall()
                    t["statement"].append(time.perf_counter() - started)
                candidates.setdefault(kind, {}).setdefault(name, []).append(len(rows))
                found[name] = ({r[0] for r in rows}, [(m.key, m.shared_tokens) for m in got])
            if len({repr((sorted(a), b)) for a, b in found.values()}) != 1:
                raise SystemExit(f"the variants disagree on query {i} ({kind})")
    result: dict[str, Any] = {"plans": plans, "skipped_common_hashes": {n: len(s) for n, s in skips.items()}}
    for kind, by_name in times.items():
        result[kind] = {name: {"statement": percentiles(t["statement"]), "near": percentiles(t["near"]),
                               "rows_mean": round(statistics.fmean(candidates[kind][name]), 1)}
                        for name, t in by_name.items()}
    return result


def pairs(conn: psycopg.Connection, table: str) -> dict[str, Any]:
    conn.execute("SET max_parallel_workers_per_gather = 2")
    started = time.perf_counter()
    count = conn.execute("SELECT count(*) FROM simpg.passage_pairs(%s::regclass, 'passages')", [table]).fetchone()[0]
    return {"candidate_pairs": count, "seconds": round(time.perf_counter() - started, 1)}


def fit(seed: int, rows: int = 3000) -> dict[str, Any]:
    """Bytes per token and hashes per KB of the real parts and of the first ``rows`` synthetic rows."""
    vocab = Vocabulary(seed)
    made: dict[str, list[str]] = {"en": [], "zh": []}
    for row in list(range(rows)) + list(range(5 + CHINESE_EVERY * 10, 5 + CHINESE_EVERY * 50, CHINESE_EVERY)):
        ids, seps = row_tokens(vocab, seed, row, 1_000_000)
        made["zh" if row % CHINESE_EVERY == 5 else "en"].append(vocab.text(ids, seps))
    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        for part in ("tune", "heldout"):
            out[f"real {lang} {part}"] = text_figures(real_documents(lang, part))
        out[f"synthetic {lang}"] = text_figures(made[lang])
    return out


def levers(conn: psycopg.Connection, rows: int, seed: int) -> dict[str, Any]:
    """Bytes of the passage column and its GIN index, the cheap levers side by side, on ``rows`` rows.

    The same rows' hashes (this script's rows, no text or fingerprint stored: the index holds
    only the hashes) in tables of ``(id bigint, passages bigint[])``, each with one variant; the
    ratio is to the rows' text bytes (``sum`` of the UTF-8 lengths, as the full table has them).
    """
    global _VOCAB
    _VOCAB = Vocabulary(seed)
    started = time.perf_counter()
    made = [_lever_row(row, rows, seed) for row in range(rows)]
    text_bytes = sum(size for size, _ in made)
    result: dict[str, Any] = {"rows": rows, "text_bytes": text_bytes, "made_s": round(time.perf_counter() - started, 1),
                              "hashes_per_row": round(sum(len(h) for _, h in made) / rows, 1)}
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")

    def load(table: str) -> None:
        with conn.cursor().copy(f"COPY {table} (id, passages) FROM STDIN") as copy:
            for i, (_, stored) in enumerate(made):
                copy.write_row((i + 1, stored))

    variants: dict[str, tuple[str, str, bool]] = {
        # name: (column options, index options, index before the load)
        "create_passage_index after the load (the bench's build)": ("", "", False),
        "index before the load, fastupdate on (rows written into it)": ("", "", True),
        "index before the load, fastupdate off": ("", "WITH (fastupdate = off)", True),
        "after the load, maintenance_work_mem 64MB": ("", "64MB", False),
        "after the load, column STORAGE MAIN COMPRESSION pglz, toast_tuple_target 128": ("pglz", "", False),
    }
    for name, (column, index, before) in variants.items():
        table = "levers_t"
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, passages bigint[])")
        if column == "pglz":
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN passages SET STORAGE MAIN, "
                         f"ALTER COLUMN passages SET COMPRESSION pglz")
            conn.execute(f"ALTER TABLE {table} SET (toast_tuple_target = 128)")
        conn.execute("SET maintenance_work_mem = %s" % ("'64MB'" if index == "64MB" else "'1GB'"))
        if before:
            conn.execute(f"CREATE INDEX {table}_gin ON {table} USING gin (passages) {index}")
            load(table)
            conn.execute(f"VACUUM ANALYZE {table}")  # flushes the pending list
        else:
            load(table)
            conn.execute("SELECT simpg.create_passage_index(%s::regclass, 'passages')", [table])
            conn.execute(f"VACUUM ANALYZE {table}")
        gin = conn.execute("SELECT indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = indexrelid "
                           "JOIN pg_am a ON a.oid = c.relam WHERE indrelid = %s::regclass AND amname = 'gin'",
                           [table]).fetchone()[0]
        gin_bytes, column_bytes, toast = conn.execute(
            f"SELECT pg_relation_size(%s::regclass), (SELECT sum(pg_column_size(passages)) FROM {table}), "
            f"coalesce(pg_relation_size(nullif(reltoastrelid, 0)), 0) FROM pg_class WHERE oid = %s::regclass",
            [gin, table]).fetchone()
        pending = conn.execute("SELECT pending_pages FROM pgstatginindex(%s::regclass)", [gin]).fetchone()[0]
        cleaned = conn.execute("SELECT gin_clean_pending_list(%s::regclass)", [gin]).fetchone()[0]
        hashes = result["hashes_per_row"] * rows
        result[name] = {"gin_bytes": gin_bytes, "gin_bytes_per_hash": round(gin_bytes / hashes, 1),
                        "pending_pages_after_vacuum": pending, "gin_clean_pending_list_pages": cleaned,
                        "column_bytes": int(column_bytes), "toast_bytes": toast,
                        "ratio_gin": round(gin_bytes / text_bytes, 3),
                        "ratio_column": round(int(column_bytes) / text_bytes, 3),
                        "ratio_total": round((gin_bytes + int(column_bytes)) / text_bytes, 3)}
        print(name, result[name], file=sys.stderr, flush=True)
    conn.execute("DROP TABLE IF EXISTS levers_t")
    try:
        conn.execute("CREATE TABLE levers_ff (passages bigint[])")
        conn.execute("CREATE INDEX ON levers_ff USING gin (passages) WITH (fillfactor = 100)")
        result["gin_fillfactor"] = "accepted"
    except psycopg.Error as error:
        result["gin_fillfactor"] = str(error).splitlines()[0]
    conn.execute("DROP TABLE IF EXISTS levers_ff")
    return result


def _lever_row(row: int, rows: int, seed: int) -> tuple[int, list[int]]:
    assert _VOCAB is not None
    ids, seps = row_tokens(_VOCAB, seed, row, rows)
    return len(_VOCAB.text(ids, seps).encode()), _VOCAB.passage_hashes(ids).tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100, help="queries of each kind (copy, none, boilerplate)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="processes making the rows")
    parser.add_argument("--rebuild", action="store_true", help="make the table again even if it is complete")
    parser.add_argument("--rehash", action="store_true",
                        help="make the stored passage hashes again with the library's config (the texts and "
                             "fingerprints stay), drop the passage index, and stop")
    parser.add_argument("--no-pairs", action="store_true", help="skip timing simpg.passage_pairs")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--fit", action="store_true", help="only the synthetic text's fit to the real parts")
    parser.add_argument("--key-bits", type=int, help="the passage index's key bits (default: by the table's rows)")
    parser.add_argument("--reindex", action="store_true",
                        help="index the existing table again in place (drop_passage_index, create_passage_index)")
    parser.add_argument("--compare-plain", action="store_true",
                        help="also measure the plain GIN on the hashes (a twin table) beside the keys index")
    parser.add_argument("--levers", action="store_true",
                        help="only the bytes of the column and GIN index, with the cheap levers side by side")
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        os.environ.setdefault("SIMPG_HOME", "/tmp/simpg-passages-scale2")
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    if args.fit:
        out = fit(args.seed)
        save(out, args.out)
        print(json.dumps(out, indent=2))
        return 0
    if args.levers:
        with psycopg.connect(dsn, autocommit=True) as conn:
            out = levers(conn, args.rows, args.seed)
        save(out, args.out)
        print(json.dumps(out, indent=2))
        return 0
    table = f"passages_scale2_{args.rows}_{args.seed}"  # 2: the text fitted to real text
    result: dict[str, Any] = {"rows": args.rows, "seed": args.seed, "table": table,
                              "load_before": os.getloadavg()}
    with psycopg.connect(dsn, autocommit=True) as conn:
        if args.rehash:
            if not exists(conn, table):
                raise SystemExit(f"no complete table {table} to rehash: build it first")
            result["rehash"] = rehash(conn, table, args.rows, args.seed, args.workers)
            save(result, args.out)
            print(json.dumps(result, indent=2))
            return 0
        if args.rebuild or not exists(conn, table):
            result["build"] = build(conn, table, args.rows, args.seed, args.workers, args.key_bits)
        else:
            result["build"] = "reused"
        if args.reindex:
            result["reindex"] = reindex(conn, table, args.key_bits)
        result["sizes"] = sizes(conn, table)
        if args.compare_plain:
            twin = plain_twin(conn, table)
            result["sizes_plain"] = sizes(conn, twin)
    save(result, args.out)
    asked = queries(Vocabulary(args.seed), args.rows, args.seed, args.queries)
    if args.compare_plain:
        result["keys_vs_plain"] = compare_plain(dsn, {"keys": table, "plain": twin}, asked)
        result["load_after_compare"] = os.getloadavg()
        save(result, args.out)
    result["lookups"] = measure(dsn, table, asked)
    result["load_after_lookups"] = os.getloadavg()
    save(result, args.out)  # the lookups are kept even if the pairs are interrupted
    if not args.no_pairs:
        with psycopg.connect(dsn, autocommit=True) as conn:
            result["passage_pairs"] = pairs(conn, table)
        result["load_after_pairs"] = os.getloadavg()
        save(result, args.out)
    print(json.dumps(result, indent=2))
    return 0


def save(result: dict[str, Any], out: Path | None) -> None:
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
