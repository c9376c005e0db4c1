"""fingerprint_many: order, worker processes, error handling."""

from __future__ import annotations

import pytest

from simpg.fingerprint import (
    Document,
    EmptyDocument,
    FingerprintConfig,
    InvalidDocument,
    fingerprint,
    fingerprint_many,
)

DOCS: list[Document] = [f"document number {i} about near duplicate detection, version {i % 7}" for i in range(50)]
DOCS += ["结巴分词的速度很快，适合批量处理中文文档。", {"title": "t", "body": "with fields"}]


def test_in_process_matches_single_calls() -> None:
    assert list(fingerprint_many(DOCS, workers=1)) == [fingerprint(d) for d in DOCS]


def test_workers_keep_order_and_values() -> None:
    cfg = FingerprintConfig(unit="word")
    got = list(fingerprint_many(DOCS, cfg, workers=2, chunksize=5))
    assert got == [fingerprint(d, cfg) for d in DOCS]


def test_zh_workers_warm_up() -> None:
    cfg = FingerprintConfig(lang="zh")
    docs = ["结巴分词很快", "中文文本去重"] * 3
    assert list(fingerprint_many(docs, cfg, workers=2)) == [fingerprint(d, cfg) for d in docs]


def test_errors_name_the_document() -> None:
    docs = ["fine text", "", "more"]
    with pytest.raises(EmptyDocument, match="document 1: empty document"):
        list(fingerprint_many(docs, workers=1))
    with pytest.raises(EmptyDocument, match="document 1: empty document"):
        list(fingerprint_many(docs, workers=2))
    got = list(fingerprint_many([*docs, None], workers=1, on_error="none"))  # type: ignore[list-item]
    assert got == [fingerprint("fine text"), None, fingerprint("more"), None]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 0}, "expected workers >= 1, got 0"),
        ({"chunksize": 0}, "expected chunksize >= 1, got 0"),
        ({"on_error": "skip"}, "expected on_error 'raise' or 'none', got 'skip'"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidDocument, match=message):
        list(fingerprint_many(["x"], **kwargs))  # type: ignore[arg-type]


def test_bad_iterable() -> None:
    with pytest.raises(InvalidDocument, match="expected an iterable of documents, got None"):
        list(fingerprint_many(None))  # type: ignore[arg-type]
    with pytest.raises(InvalidDocument, match="expected an iterable of documents, got 'text'"):
        list(fingerprint_many("text"))
