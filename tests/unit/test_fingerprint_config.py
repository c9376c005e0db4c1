"""FingerprintConfig: validation, canonical JSON and identity."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from simpg.fingerprint import FingerprintConfig, InvalidConfig


def test_defaults() -> None:
    cfg = FingerprintConfig()
    assert (cfg.lang, cfg.unit, cfg.ngram, cfg.weighting, cfg.hash) == (
        "auto",
        "char",
        5,
        "tf",
        "fnv1a",
    )
    assert cfg.top_n == 256 and cfg.anchored is False and cfg.version == 4
    assert cfg.field_weights == {"body": 1.0, "headings": 1.5, "title": 2.0}
    assert FingerprintConfig(unit="word").ngram == 3
    assert FingerprintConfig().replace(unit="word").ngram == 3


def test_identity_is_sha256_of_canonical_json_without_path(tmp_path: Path) -> None:
    cfg = FingerprintConfig(lang="zh", top_n=10, fields={"body": 1, "title": 3})
    settings = json.loads(cfg.to_json())
    del settings["idf_path"]
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    expected = "simpg-fp4:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert cfg.identity == expected
    assert cfg.to_json() == json.dumps(json.loads(cfg.to_json()), sort_keys=True, separators=(",", ":"))


def test_identity_is_stable_and_distinguishes_settings() -> None:
    base = FingerprintConfig()
    assert base.identity == FingerprintConfig().identity
    others = [
        base.replace(ngram=4),
        base.replace(unit="word"),
        base.replace(hash="fnv1"),
        base.replace(top_n=None),
        base.replace(weighting="binary"),
        base.replace(lang="en"),
        base.replace(fields={"body": 1.0}),
        base.replace(stopwords=["的确"]),
    ]
    ids = {c.identity for c in others}
    assert len(ids) == len(others) and base.identity not in ids
    # Field and stopword order do not matter: they are canonicalised.
    a = FingerprintConfig(fields={"title": 2, "body": 1}, stopwords=["b", "a", "b"])
    b = FingerprintConfig(fields=[("body", 1.0), ("title", 2.0)], stopwords=("a", "b"))
    assert a == b and a.identity == b.identity and hash(a) == hash(b)


def test_json_round_trip() -> None:
    cfg = FingerprintConfig(unit="word", ngram=4, anchored=True, anchor_words=["the", "of"], top_n=None)
    again = FingerprintConfig.from_json(cfg.to_json())
    assert again == cfg and again.identity == cfg.identity
    assert FingerprintConfig.from_json(cfg.to_json().encode()) == cfg


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[]", "must be an object"),
        ("{not json", "invalid fingerprint config json"),
        ('{"version": 4, "colour": "red"}', "unknown fingerprint config keys: colour"),
        ('{"lang": "en"}', "has no 'version'"),
        ('{"version": 1}', "unsupported fingerprint format version 1; this simpg writes version 4"),
        ('{"version": 3}', "unsupported fingerprint format version 3; this simpg writes version 4"),
        ('{"version": 5}', "unsupported fingerprint format version 5"),
    ],
)
def test_from_json_errors(data: str, message: str) -> None:
    with pytest.raises(InvalidConfig, match=message):
        FingerprintConfig.from_json(data)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lang": "fr"}, "unknown lang 'fr'"),
        ({"ngram": 0}, r"ngram must be an integer in \[1, 16\], got 0"),
        ({"ngram": True}, "ngram must be an integer"),
        ({"unit": "byte"}, "unknown unit 'byte'"),
        ({"weighting": "idf"}, "unknown weighting 'idf'"),
        ({"top_n": 0}, "top_n must be a positive integer or None, got 0"),
        ({"hash": "md5"}, "unknown hash 'md5'"),
        ({"fields": {"title": 1.0}}, "fields must include 'body'"),
        ({"fields": {"body": 0}}, r"field weight must be in \(0, 1e6\]"),
        ({"fields": {"Body": 1}}, "field name must match"),
        ({"fields": "body"}, "fields must map field names to weights"),
        ({"stopwords": "的"}, "stopwords must be a list of strings"),
        ({"anchored": True}, "anchored shingles need unit 'word'"),
        ({"idf_path": "/nonexistent/idf.txt"}, "cannot read idf dictionary '/nonexistent/idf.txt'"),
        ({"idf_sha256": "0" * 64}, "idf_sha256 given without idf_path"),
    ],
)
def test_invalid_settings(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidConfig, match=message):
        FingerprintConfig(**kwargs)  # type: ignore[arg-type]


def test_idf_digest_enters_identity_not_path(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("结巴 10.0\n分词 5.0\n", encoding="utf-8")
    b.write_bytes(a.read_bytes())
    ca, cb = FingerprintConfig(idf_path=str(a)), FingerprintConfig(idf_path=str(b))
    assert ca.idf_sha256 == hashlib.sha256(a.read_bytes()).hexdigest()
    assert ca.identity == cb.identity != FingerprintConfig().identity
    b.write_text("结巴 1.0\n", encoding="utf-8")
    assert FingerprintConfig(idf_path=str(b)).identity != ca.identity
