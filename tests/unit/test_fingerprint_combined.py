"""The one-pass fingerprint, sketch and band keys (simpg dedup's) equal the separate functions, bit for bit."""

from __future__ import annotations

import importlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simpg.fingerprint import (
    EmptyDocument,
    FingerprintConfig,
    Fingerprinter,
    FingerprintError,
    InvalidDocument,
    NoFeatures,
    fingerprint_sketch_and_bands,
    fingerprint_sketch_and_bands_many,
    minhash,
    sketch_and_bands,
)

QUALITY = Path(__file__).resolve().parents[2] / "bench" / "data" / "quality"
PIECES = ["The", "quick", "ＦＵＬＬ", "ﬁne", "Straße", "ΑΣ", "İstanbul", "カタカナ", "ひらがな", "中文", "文本",
          "ภาษาไทย", "ລາວ", "ខ្មែរ", "မြန်မာ", "བོད", "한국어", "e\u0301", "\u0301", "___", "-----",
          "zzzzzzz", "1000000", "2.0",
          "c++", "www.debian.org", "\n", "  ", "\t", "。", "，", "!", "𠀀𠀁", "〇", "々", "ー", "ㄅㄆ", "\u3000", "Ⅻ",
          "①", "ǅ", "ﬀ", "x" * 40, "\u00a0", "\x85", "\u2028", "é", "ß", "word", "words", "of", "a", "text"]
#: Prose of other languages: sketched by its letters (issue 28).
FOREIGN_PROSE = ["Le fichier de configuration est lu au démarrage, et les options données sur la ligne de commande "
                 "sont prises en compte avant celles du fichier. " * 3,
                 "Die Datei wird beim Start gelesen und ist für alle Benutzer gültig, wenn sie nicht geändert wird."]
CONFIGS = [FingerprintConfig(), FingerprintConfig(unit="word"), FingerprintConfig(lang="zh"),
           FingerprintConfig(lang="en", unit="word", anchored=True)]


def corpus() -> list[Any]:
    rng = random.Random(14)
    texts = [("" if rng.random() < 0.5 else " ").join(rng.choice(PIECES) for _ in range(rng.randint(0, 80)))
             for _ in range(150)]
    texts += FOREIGN_PROSE  # whole or cut into fields below
    for name in ("en", "zh"):
        path = QUALITY / f"{name}.jsonl"
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            texts += [json.loads(line)["text"] for line in lines[:30]]
    docs: list[Any] = []
    for i, text in enumerate(texts):
        cut = rng.randint(0, len(text))
        docs += [text, {"title": text[:cut], "body": text[cut:]}]
        if i % 5 == 0:
            docs += [text.encode(), {"title": text[:3], "headings": [text[3:cut], text[cut:cut + 9]], "body": None}]
    return docs + ["", " \n", "...", "a", "a b", "中", "_", "\u0301", b"\xff", {"title": "t"}, {"title": ""},
                   {"nope": "x"}, {"body": 3}, {"body": b"bytes"}, None, 7, memoryview(b"some words here")]


def outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except FingerprintError as exc:
        return type(exc), str(exc)


def as_outcome(made: Any) -> Any:
    return (type(made), str(made)) if isinstance(made, FingerprintError) else made


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.identity)
def test_one_pass_equals_the_separate_functions(config: FingerprintConfig) -> None:
    fp = Fingerprinter(config)
    for doc in corpus():
        made_fp, made = fp._fingerprint_and_sketch(doc)
        assert as_outcome(made_fp) == outcome(fp.fingerprint, doc), repr(doc)[:80]
        assert as_outcome(made) == outcome(sketch_and_bands, doc), repr(doc)[:80]


def test_long_documents_take_the_chunked_path() -> None:
    """A text longer than a chunk is fingerprinted in chunks: the one pass leaves it to the two functions."""
    fp = Fingerprinter()
    fp._chunk_chars = 64
    text = "Chunked text, cut after punctuation; 中文的文本也在这里。 " * 10
    for doc in (text, {"title": "short", "body": text}):
        assert fp.fingerprint_sketch_and_bands(doc) == (fp.fingerprint(doc), *sketch_and_bands(doc))


def test_public_forms() -> None:
    text = "The quick brown fox jumps over the lazy dog while the farmer watches from the old red barn door"
    assert fingerprint_sketch_and_bands(text) == (Fingerprinter().fingerprint(text), *sketch_and_bands(text))
    assert fingerprint_sketch_and_bands(text, unit="word")[0] == Fingerprinter(unit="word").fingerprint(text)
    with pytest.raises(EmptyDocument, match="^empty document$"):
        fingerprint_sketch_and_bands("   ")
    with pytest.raises(NoFeatures):
        fingerprint_sketch_and_bands("... !!!")
    with pytest.raises(InvalidDocument, match="expected str, bytes or mapping, got None"):
        fingerprint_sketch_and_bands(None)  # type: ignore[arg-type]
    with pytest.raises(EmptyDocument, match="no words to sketch"):  # a fingerprint, nothing to sketch
        fingerprint_sketch_and_bands("\u0301")


def test_many_keeps_order_with_none_for_what_a_document_lacks() -> None:
    docs = ["The quick brown fox jumps over the lazy dog " * 3, "", "tiny text", "\u0301",
            {"title": "A title", "body": "body words here and there"}]
    want = []
    for doc in docs:
        fp = outcome(Fingerprinter().fingerprint, doc)
        made = outcome(sketch_and_bands, doc)
        want.append((None if isinstance(fp, tuple) else fp, *((None, None) if made[0] is not bytes and
                                                               isinstance(made[0], type) else made)))
    got = list(fingerprint_sketch_and_bands_many(docs, workers=1))
    assert got == want
    assert got[1] == (None, None, None) and got[2][2] is None and got[3][0] is not None and got[3][1] is None
    assert list(fingerprint_sketch_and_bands_many(docs * 20, workers=2, chunksize=7)) == want * 20
    with pytest.raises(InvalidDocument, match="expected workers >= 1, got 0"):
        fingerprint_sketch_and_bands_many(docs, workers=0)


def test_words_are_those_of_the_word_text() -> None:
    """The one pass hands the sketch the fingerprint's ASCII words: both tables split alike."""
    normalize = importlib.import_module("simpg.fingerprint.normalize")  # the package's name is the function
    assert minhash._ASCII_SPLIT == normalize._ASCII_SEPARATOR_BYTES
    assert np.array_equal(minhash._word_hashes([b"ab", b"cd"]), minhash._word_hashes(["ab", "cd"]))


def test_ascii_words_hashed_in_numpy_equal_mmh3() -> None:
    """ASCII words are hashed together (MurmurHash3's tail and finalisation in numpy); mmh3 is the definition."""
    import mmh3

    rng = random.Random(21)
    alphabet = "abcxyz019_"
    for _ in range(200):
        words = ["".join(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 7, 8, 9, 15, 16, 17, 31, 40])))
                 for _ in range(rng.randint(0, 30))]
        gaps = [" " * rng.randint(1, 3) for _ in words]
        text = (" " * rng.randint(0, 2) + "".join(w + g for w, g in zip(words, gaps, strict=True))).encode()
        hashes, word, lengths = minhash._ascii_word_hashes(text)
        assert hashes.tolist() == [mmh3.hash64(w, signed=False)[0] for w in words], text
        assert lengths.tolist() == [len(w) for w in words]
        normalize = importlib.import_module("simpg.fingerprint.normalize")
        assert normalize.joined_words(text, word) == " ".join(words)


def batch_corpus() -> list[Any]:
    """Chinese, English, mixed, empty, short (fewer than 16 shingles: no band keys) and very long texts."""
    rng = random.Random(6)
    docs: list[Any] = corpus()
    chinese = "".join(chr(0x4E00 + rng.randrange(0x5000)) for _ in range(40))
    docs += [chinese[:n] for n in (1, 2, 3, 4, 5, 18, 19, 20, 40)]  # 1 to 37 character 4-grams
    docs += [" ".join(f"w{i}" for i in range(n)) for n in (1, 2, 3, 17, 18, 19, 40)]  # 1 to 38 word 3-shingles
    docs += ["词 " * n for n in (1, 5, 40)]  # one repeated shingle
    docs += ["".join(rng.choice(PIECES) for _ in range(6_000)), " ".join(rng.choice(PIECES) for _ in range(8_000))]
    docs += FOREIGN_PROSE
    for name in ("en", "zh"):
        path = QUALITY / f"{name}.jsonl"
        if path.exists():
            texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]
            docs += texts[30:50] + ["\n".join(texts[:40])]
    rng.shuffle(docs)
    return docs


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.identity)
def test_batched_sketches_equal_one_document_at_a_time(config: FingerprintConfig,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``_fingerprint_and_sketch_many`` (simpg dedup's path) equals the single-document functions."""
    fpmod = importlib.import_module("simpg.fingerprint.fingerprinter")
    fp = Fingerprinter(config)
    docs = batch_corpus()
    want = [(outcome(fp.fingerprint, doc), outcome(sketch_and_bands, doc)) for doc in docs]
    for size, limit in ((1, None), (7, None), (len(docs), None), (len(docs), 300)):
        if limit is not None:  # a batch of long texts is sketched in parts
            monkeypatch.setattr(fpmod, "_SKETCH_TOKENS", limit)
        got = []
        for lo in range(0, len(docs), size):
            got += [(as_outcome(a), as_outcome(b)) for a, b in fp._fingerprint_and_sketch_many(docs[lo:lo + size])]
        for doc, pair, expected in zip(docs, got, want, strict=True):
            assert pair == expected, repr(doc)[:80]


def test_batched_sketches_of_tokens_equal_the_single_functions() -> None:
    """minhash._batch_sketch_and_bands over token streams of every length, including none."""
    rng = np.random.default_rng(3)
    tokens = []
    for words, chars in [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (0, 3), (0, 4), (2, 3), (17, 0), (18, 0),
                         (0, 19), (5, 9), (400, 0), (0, 900), (300, 700)]:
        tokens.append((rng.integers(0, 2**64, words, dtype=np.uint64), rng.integers(1, 12, words),
                       rng.integers(0x4E00, 0x9FFF, chars).astype(np.uint64)))
    # one shingle each (word lengths 1 to 9: 1 to 6 elements for a word shingle)
    tokens.append((np.full(30, 7, dtype=np.uint64), np.arange(30) % 9 + 1, np.full(30, 0x4E00, dtype=np.uint64)))
    got = minhash._batch_sketch_and_bands(tokens)
    for (words, lengths, chars), made in zip(tokens, got, strict=True):
        hashes = np.sort(minhash._token_shingles(words, lengths, chars))
        assert made == (minhash._sketch_and_bands_of(hashes, (words, lengths, chars)) if len(hashes) else None)
    assert minhash._batch_sketch_and_bands([]) == []
