"""Band keys (simpg.fingerprint.sketch_and_bands): pinned values, definition, near duplicates, short texts."""

from __future__ import annotations

import random

import numpy as np
import pytest

from simpg.fingerprint import BANDS, EmptyDocument, minhash, sketch, sketch_and_bands, sketch_and_bands_many
from simpg.fingerprint.minhash import BAND_ROWS, MIN_BAND_SHINGLES

M64 = (1 << 64) - 1
WORDS = [f"w{n}" for n in range(5000)]
TEXT = "The quick brown fox jumps over the lazy dog while the farmer watches from the old red barn door"


def mix(x: int) -> int:
    """splitmix64's finaliser on Python ints: the documented hash, written out once more."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def reference_bands(text: str) -> tuple[int, ...]:
    """Band i = mix(... mix(mix(TAG | i) ^ m[4i]) ... ^ m[4i+3]) over the sketch's minima, signed."""
    minima = minhash._minima(np.sort(minhash._shingles(text))).tolist()
    out = []
    for i in range(BANDS):
        h = mix(0x42414E4400000000 | i)
        for j in range(BAND_ROWS):
            h = mix(h ^ minima[i * BAND_ROWS + j])
        out.append(h - (1 << 64) if h >> 63 else h)
    return tuple(out)


def test_pinned_values() -> None:
    """Band keys are stored: the same text must give the same keys in every release of SKETCH_VERSION 2."""
    s, keys = sketch_and_bands(TEXT)
    assert keys == (-6153644138625571290, -8512856801309014269, -2178118550746801770, 2537095643524603553)
    assert s == sketch(TEXT)
    assert sketch("The quick brown fox jumps over the lazy dog").hex() == (
        "60a7fd63d22ae9e454e0abd8812f919f9563f2efd75f5b15c51dc539f1cac4fe")


def test_keys_follow_the_definition() -> None:
    """The keys are the documented hash of the sketch's minima (bench/quality/bands.py measured this function)."""
    rng = random.Random(5)
    texts = [TEXT, "中文文本的字符四元组也进入同一个最小哈希，" * 3, " ".join(rng.choice(WORDS) for _ in range(400))]
    for text in texts:
        s, keys = sketch_and_bands(text)
        assert keys == reference_bands(text)
        assert s == sketch(text)
    assert all(-(1 << 63) <= k < 1 << 63 for k in keys)  # signed, as a bigint column stores them


def test_near_duplicates_share_a_band_unrelated_texts_do_not() -> None:
    """Planted edits of 2% of the words (J about 0.89): a band in common for nearly all; none across texts."""
    rng = random.Random(14)
    shared = 0
    bases = []
    for _ in range(60):
        base = [rng.choice(WORDS) for _ in range(300)]
        edited = list(base)
        for _ in range(6):
            edited[rng.randrange(len(edited))] = rng.choice(WORDS)
        a, b = sketch_and_bands(" ".join(base))[1], sketch_and_bands(" ".join(edited))[1]
        assert a is not None and b is not None
        shared += any(x == y for x, y in zip(a, b, strict=True))
        bases.append(a)
    # J of the shingle sets about 0.89: 1 - (1 - J**4)**4 = 0.98 per pair
    assert shared >= 50
    keys = [set(zip(range(BANDS), k, strict=True)) for k in bases]
    assert not any(keys[i] & keys[j] for i in range(len(keys)) for j in range(i + 1, len(keys)))


def test_short_texts_get_no_band_keys() -> None:
    """Fewer than 16 distinct shingles: None (word 3-shingles of n distinct words: n - 2)."""
    words = [f"word{i}" for i in range(30)]
    assert MIN_BAND_SHINGLES == 16
    assert sketch_and_bands(" ".join(words[:17]))[1] is None  # 15 shingles
    assert sketch_and_bands(" ".join(words[:18]))[1] is not None  # 16
    assert sketch_and_bands(" ".join(words[:5] * 20))[1] is None  # 98 shingles, 5 distinct
    for text in ("hello", "ok then", "你好", "谢谢你们"):
        s, keys = sketch_and_bands(text)
        assert keys is None and s == sketch(text)
    with pytest.raises(EmptyDocument, match="empty document: no words to sketch: '--- ...'"):
        sketch_and_bands("--- ...")


def test_one_pass_over_the_shingles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys come from the sketch's own minima: the text is shingled once for both."""
    calls = []
    real = minhash._token_shingles

    def counted(words: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> np.ndarray:
        calls.append(words)
        return real(words, lengths, codes)

    monkeypatch.setattr(minhash, "_token_shingles", counted)
    sketch_and_bands(TEXT)
    assert len(calls) == 1


def test_many_in_order_with_none() -> None:
    docs = [TEXT, "", "tiny text", {"title": "A title", "body": TEXT}]
    got = list(sketch_and_bands_many(docs, workers=1))
    assert got == [sketch_and_bands(TEXT), None, sketch_and_bands("tiny text"),
                   sketch_and_bands({"title": "A title", "body": TEXT})]
    assert got[2] is not None and got[2][1] is None


def test_one_document_keys_equal_the_array_keys() -> None:
    """sketch_and_bands hashes one document's 16 minima on Python ints; bench/quality's _band_keys, in numpy."""
    rng = np.random.default_rng(11)
    minima = rng.integers(0, 2**64, size=(50, minhash.SKETCH_BITS), dtype=np.uint64, endpoint=False)
    want = minhash._band_keys(minima).view(np.int64).tolist()
    assert [list(minhash._doc_band_keys(m)) for m in minima] == want


def reference_minima(hashes: np.ndarray) -> np.ndarray:
    """Densification as defined: an empty bin takes the minimum of the first filled bin its borrow order names."""
    bins = (hashes >> np.uint64(56)).astype(np.int64).tolist()
    minima: dict[int, int] = {}
    for b, h in zip(bins, hashes.tolist(), strict=True):
        minima.setdefault(b, h)  # sorted: the first is the smallest
    order = minhash._borrow_order()
    out = []
    for b in range(minhash.SKETCH_BITS):
        if b not in minima:
            named = next((int(c) for c in order[b] if int(c) in minima), None)
            out.append(int(hashes[0]) if named is None else minima[named])
        else:
            out.append(minima[b])
    return np.array(out, dtype=np.uint64)


def test_densification_follows_the_definition() -> None:
    """_minima looks borrowed bins up in a 256 x 256 table of first positions; the same bins as the order's walk."""
    rng = np.random.default_rng(9)
    for size in [1, 2, 3, 5, 8, 16, 40, 100, 255, 400, 1500]:
        for shift in (0, 0, 4, 7):
            hashes = np.sort(rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False) >> np.uint64(shift))
            assert np.array_equal(minhash._minima(hashes), reference_minima(hashes)), (size, shift)
