"""Fingerprinter: documents, fields, Chinese, streams, bad input, determinism."""

from __future__ import annotations

import io
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import simpg.fingerprint.fingerprinter as fpmod
from simpg.bits import hamming
from simpg.fingerprint import (
    DecodeError,
    EmptyDocument,
    FingerprintConfig,
    Fingerprinter,
    InvalidDocument,
    NoFeatures,
    combine,
    features,
    fingerprint,
    fingerprint_features,
    fnv1a64,
    murmur3_64,
    shingles,
    words,
)
from simpg.fingerprint.tokenize import char_ngrams

EN = (
    "Simhashes are a clever means of rapidly finding near-identical documents within a large "
    "corpus, without having to compare every document to every other document. A simhash is a "
    "single sequence of bits generated from a set of features in such a way that changing a "
    "small fraction of those features changes only a small fraction of its bits. "
) * 3
ZH = (
    "给定一篇文章内容，利用simhash算法可以计算出一个哈希值。判别两篇文章是相似的方法，"
    "就是两个simhash值的距离小于等于三。首先需要将文章作分词，得到若干个词组和权重。"
    "权重一般用TF/IDF算法，TF表示词组在本文章内的频次比例，出现越多则对这篇文章来说越重要。"
)

CONFIGS = [
    FingerprintConfig(),
    FingerprintConfig(unit="word"),
    FingerprintConfig(unit="word", ngram=2, weighting="binary"),
    FingerprintConfig(unit="word", anchored=True),
    FingerprintConfig(unit="char", ngram=4, weighting="binary", hash="murmur3"),
    FingerprintConfig(lang="zh", top_n=5, hash="fnv1"),
    FingerprintConfig(lang="en", fields={"body": 1.0, "title": 0.3}),
]
DOCS = [
    EN,
    ZH,
    "short",
    "two words",
    {"title": "A Title, here", "headings": ["First heading", "Second one"], "body": EN},
    {"title": "标题：结巴分词", "body": ZH, "headings": None},
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.identity)
@pytest.mark.parametrize("doc", DOCS, ids=range(len(DOCS)))
def test_fast_path_equals_readable_features(cfg: FingerprintConfig, doc: object) -> None:
    fp = Fingerprinter(cfg)
    if isinstance(doc, dict) and "headings" in doc and "headings" not in cfg.field_weights:
        doc = {k: v for k, v in doc.items() if k in cfg.field_weights}
    feats = fp.features(doc)  # type: ignore[arg-type]
    assert feats, "document has features"
    assert fp.fingerprint(doc) == fp.fingerprint_features(feats)  # type: ignore[arg-type]


def test_features_are_normalised_char_ngrams_by_default() -> None:
    feats = features("The  Quick, brown")
    canonical = " ".join(words("The  Quick, brown"))
    assert [f for f, _ in feats] == list(dict.fromkeys(char_ngrams(canonical, 5)))
    assert canonical == "the quick brown"


def test_word_features_and_tf_weights() -> None:
    feats = dict(features("a b a b a b", unit="word", ngram=2))
    assert feats == {"a b": 3.0, "b a": 2.0}
    assert dict(features("a b a b a b", unit="word", ngram=2, weighting="binary")) == {
        "a b": 1.0,
        "b a": 1.0,
    }


def test_fingerprint_equals_combination_of_fnv1a_hashes() -> None:
    # Independent of the vectorised code: scalar FNV-1a of each shingle + reference combine.
    text = "one two three four five six seven"
    feats = shingles(words(text), 3)
    expected = combine([(fnv1a64(f), 1.0) for f in feats])
    assert fingerprint(text, unit="word", ngram=3) == expected
    assert fingerprint(text, unit="word", ngram=3, hash="murmur3") == combine([(murmur3_64(f), 1.0) for f in feats])


def test_single_short_word_is_its_hash() -> None:
    assert fingerprint("Hello!") == fnv1a64("hello")


def test_whitespace_and_punctuation_do_not_matter() -> None:
    a = fingerprint(EN)
    b = fingerprint(EN.replace(",", " ").replace(". ", "!\n\n").upper())
    assert a == b


def test_near_duplicates_are_close_and_unrelated_far() -> None:
    edited = EN.replace("clever", "smart", 1).replace("rapidly", "quickly", 1)
    assert hamming(fingerprint(EN), fingerprint(edited)) <= 6
    other = "PostgreSQL stores fingerprints as bigint; the index finds neighbours by prefix." * 4
    assert hamming(fingerprint(EN), fingerprint(other)) >= 16


def test_mapping_fields() -> None:
    assert fingerprint({"body": EN}) == fingerprint(EN)
    assert fingerprint({"body": EN, "title": None}) == fingerprint(EN)
    with_title = {"body": EN, "title": "Simhash"}
    assert fingerprint(with_title) != fingerprint(EN)
    feats = dict(features({"body": "x", "title": "Hello"}))
    assert feats == {"x": 1.0, "title:hello": 2.0}
    with pytest.raises(InvalidDocument, match="unknown field 'summary'; configured fields"):
        fingerprint({"summary": "x"})
    with pytest.raises(InvalidDocument, match="expected str or list of str in field 'title', got int 5"):
        fingerprint({"body": "x", "title": 5})
    with pytest.raises(InvalidDocument, match="expected str in field 'headings', got None"):
        fingerprint({"body": "x", "headings": ["a", None]})


def test_chinese_tfidf_with_user_idf_and_median(tmp_path: Path) -> None:
    idf = tmp_path / "idf.txt"
    idf.write_text("结巴 10.0\n分词 6.0\n很快 2.0\n", encoding="utf-8")
    median = sorted([10.0, 6.0, 2.0])[3 // 2]  # jieba's definition: upper median
    feats = dict(features("结巴分词很快。结巴分词，我们", lang="zh", idf_path=str(idf)))
    assert feats == pytest.approx(
        {"结巴": 2 * 10.0 / median, "分词": 2 * 6.0 / median, "很快": 2.0 / median, "我们": 1.0}
    )


def test_chinese_top_n_and_stopwords() -> None:
    all_terms = features(ZH, lang="zh", top_n=None)
    top3 = features(ZH, lang="zh", top_n=3)
    assert top3 == sorted(all_terms, key=lambda tw: (-tw[1], tw[0]))[:3]
    assert all(len(t) >= 2 for t, _ in all_terms)  # one-character terms are dropped
    without = dict(features(ZH, lang="zh", top_n=None, stopwords=["文章"]))
    assert "文章" in dict(all_terms) and "文章" not in without


def test_single_character_chinese_falls_back() -> None:
    # Only one-character terms: they are used rather than reporting no features.
    assert [t for t, _ in features("我。", lang="zh")] == ["我"]
    assert fingerprint("我。", lang="zh") == fnv1a64("我")


def test_mixed_text_uses_both_pipelines() -> None:
    feats = [f for f, _ in features("SimHash 算法很快, really fast", unit="word", ngram=2)]
    assert "simhash really" in feats and "really fast" in feats and "算法" in feats


def test_private_jieba_tokenizer_leaves_jieba_global_state_alone() -> None:
    import jieba  # type: ignore[import-untyped]

    handlers = list(logging.getLogger("jieba").handlers)
    level = logging.getLogger("jieba").level
    fingerprint(ZH)
    assert jieba.dt.initialized is False
    assert logging.getLogger("jieba").handlers == handlers
    assert logging.getLogger("jieba").level == level
    assert not logging.getLogger("simpg.fingerprint").handlers


@pytest.mark.parametrize(
    ("doc", "error", "message"),
    [
        (None, InvalidDocument, "expected str, bytes or mapping, got None"),
        (42, InvalidDocument, "expected str, bytes or mapping, got int 42"),
        (["a"], InvalidDocument, r"got list \['a'\]"),
        ("", EmptyDocument, "empty document"),
        ("  \n\t ", EmptyDocument, "empty document"),
        ({}, EmptyDocument, "empty document"),
        ({"body": None}, EmptyDocument, "empty document"),
        ("!!! --- ...", NoFeatures, "document has no usable features: '!!! --- ...'"),
        (b"ok\xffbad", DecodeError, r"invalid utf-8 in <bytes> at byte offset 2 \(byte 0xff\)"),
    ],
)
def test_bad_documents(doc: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fingerprint(doc)  # type: ignore[arg-type]


def test_errors_are_simpg_errors() -> None:
    from simpg.exc import SimpgError

    for doc in (None, "", "!!!"):
        with pytest.raises(SimpgError):
            fingerprint(doc)  # type: ignore[arg-type]


def test_bytes_documents() -> None:
    assert fingerprint(ZH.encode()) == fingerprint(ZH)
    assert fingerprint(bytearray(EN.encode())) == fingerprint(EN)


def test_fingerprint_features_inputs() -> None:
    h = fnv1a64("a b c")
    assert fingerprint_features([("a b c", 1.0)]) == h
    assert fingerprint_features([(b"a b c", 2)]) == h
    assert fingerprint_features([(h, 0.5)]) == h
    assert fingerprint_features([("a b c", 1.0)], hash="murmur3") == murmur3_64("a b c")
    assert fingerprint_features(iter([("x", 1.0), ("y", 1.0), ("x", 1.0)])) == combine(
        [(fnv1a64("x"), 2.0), (fnv1a64("y"), 1.0)]
    )
    with pytest.raises(InvalidDocument, match="expected 64-bit feature hash, got 18446744073709551616"):
        fingerprint_features([(2**64, 1.0)])
    with pytest.raises(InvalidDocument, match=r"expected str, bytes or int feature, got float 1.5"):
        fingerprint_features([(1.5, 1.0)])  # type: ignore[list-item]
    with pytest.raises(InvalidDocument, match=r"expected \(feature, weight\) pair, got str 'abc'"):
        fingerprint_features(["abc"])  # type: ignore[list-item]
    with pytest.raises(InvalidDocument, match="expected iterable of"):
        fingerprint_features(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidDocument, match="finite feature weight"):
        fingerprint_features([("x", float("nan"))])
    with pytest.raises(NoFeatures):
        fingerprint_features([])


def long_text(seed: int, n: int) -> str:
    rng = random.Random(seed)
    # separator lines and runs too: dropped or cut the same in chunks as in the whole text
    vocab = ["alpha", "beta", "gamma", "délta", "ε", "中文", "分词", "结巴", "x", "the", "of", "_" * 79, "zzzzzzz",
             "1000000", "好好好好好好"]
    punct = [" ", " ", " ", " ", ", ", ". ", "。", "\n", " — "]
    return "".join(rng.choice(vocab) + rng.choice(punct) for _ in range(n))


@pytest.mark.parametrize("cfg", CONFIGS[:5], ids=lambda c: c.identity)
def test_chunked_processing_equals_whole_text(cfg: FingerprintConfig) -> None:
    text = long_text(1, 4000)
    whole = Fingerprinter(cfg)
    chunked = Fingerprinter(cfg)
    chunked._chunk_chars = 97
    assert chunked.fingerprint(text) == whole.fingerprint(text)
    assert whole.fingerprint(text) == whole.fingerprint_features(whole.features(text))


def test_stream_equals_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fpmod, "_READ_BYTES", 7)  # split multi-byte characters across reads
    text = long_text(2, 2000)
    fp = Fingerprinter()
    fp._chunk_chars = 300
    expected = Fingerprinter().fingerprint(text)
    assert fp.fingerprint_stream(io.BytesIO(text.encode())) == expected
    assert fp.fingerprint_stream(io.StringIO(text)) == expected


def test_stream_decode_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(fpmod, "_READ_BYTES", 4)
    data = "aaaa中文bb".encode() + b"\xfe" + b"tail"
    with pytest.raises(DecodeError, match=r"invalid utf-8 in <stream> at byte offset 12 \(byte 0xfe\)"):
        Fingerprinter().fingerprint_stream(io.BytesIO(data))
    truncated = "abc中".encode()[:-1]
    with pytest.raises(DecodeError, match="at byte offset 3"):
        Fingerprinter().fingerprint_stream(io.BytesIO(truncated))
    replaced = Fingerprinter().fingerprint_stream(io.BytesIO(data), errors="replace")
    assert replaced == fingerprint(data.decode("utf-8", "replace"))
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok \xff")
    with pytest.raises(DecodeError, match=f"invalid utf-8 in '{path}' at byte offset 3"):
        Fingerprinter().fingerprint_file(path)
    with pytest.raises(EmptyDocument, match="empty document: <stream>"):
        Fingerprinter().fingerprint_stream(io.BytesIO(b" \n "))


def test_same_fingerprints_in_another_process() -> None:
    docs = [EN, ZH, DOCS[4]]
    code = (
        "import json,sys; from simpg.fingerprint import fingerprint;"
        "docs=json.loads(sys.stdin.read()); print(json.dumps([fingerprint(d) for d in docs]))"
    )
    import json

    expected = [fingerprint(d) for d in docs]  # type: ignore[arg-type]
    for seed in ("0", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(docs),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(out.stdout) == expected


def test_config_override_and_type_errors() -> None:
    fp = Fingerprinter(FingerprintConfig(), ngram=3)
    assert fp.config.ngram == 3 and fp.identity == fp.config.identity
    with pytest.raises(InvalidDocument, match="expected FingerprintConfig, got dict"):
        Fingerprinter({"lang": "en"})  # type: ignore[arg-type]
