"""Feature hashes against published vectors and plain reference implementations."""

from __future__ import annotations

import random
import struct

import mmh3
import numpy as np
import pytest

from simpg.fingerprint import InvalidConfig
from simpg.fingerprint.hashes import fnv1_64, fnv1a64, hash_function, hash_spans, hash_windows, murmur3_64

# Official FNV test vectors (Landon Curt Noll's FNV reference test suite, 64-bit).
FNV1_64 = {
    "": 0xCBF29CE484222325,
    "a": 0xAF63BD4C8601B7BE,
    "b": 0xAF63BD4C8601B7BD,
    "c": 0xAF63BD4C8601B7BC,
    "fo": 0x08326207B4EB2F34,
    "foo": 0xD8CBC7186BA13533,
    "foob": 0x0378817EE2ED65CB,
    "fooba": 0xD329D59B9963F790,
    "foobar": 0x340D8765A4DDA9C2,
}
FNV1A_64 = {
    "": 0xCBF29CE484222325,
    "a": 0xAF63DC4C8601EC8C,
    "b": 0xAF63DF4C8601F1A5,
    "c": 0xAF63DE4C8601EFF2,
    "d": 0xAF63D94C8601E773,
    "fo": 0x08985907B541D342,
    "foo": 0xDCB27518FED9D577,
    "foob": 0xDD120E790C2512AF,
    "fooba": 0xCAC165AFA2FEF40A,
    "foobar": 0x85944171F73967E8,
}


@pytest.mark.parametrize(("text", "expected"), sorted(FNV1A_64.items()))
def test_fnv1a64_official_vectors(text: str, expected: int) -> None:
    assert fnv1a64(text) == expected
    assert fnv1a64(text.encode()) == expected


@pytest.mark.parametrize(("text", "expected"), sorted(FNV1_64.items()))
def test_fnv1_64_official_vectors(text: str, expected: int) -> None:
    assert fnv1_64(text) == expected


def java_fnv1_64(s: str) -> int:
    """Seed 002's Java ``fnv1_64_hash``: BigInteger multiply, then XOR ``charAt(i)``."""
    h = 14695981039346656037
    for ch in s:
        h = h * 1099511628211
        h = h ^ ord(ch)  # a UTF-16 code unit for BMP characters
    return h & (2**64 - 1)


@pytest.mark.parametrize("text", ["", "a", "foobar", "simhash near duplicate", "x" * 300])
def test_fnv1_matches_seed_002_java_for_ascii(text: str) -> None:
    assert fnv1_64(text) == java_fnv1_64(text)


def test_fnv1_differs_from_java_for_non_ascii() -> None:
    # Documented difference: we hash UTF-8 bytes, the Java code UTF-16 code units.
    assert fnv1_64("中文") != java_fnv1_64("中文")


def test_murmur3_smhasher_verification_value() -> None:
    # SMHasher's VerificationTest: published value 0x6384BA69 for MurmurHash3_x64_128.
    key = bytes(range(256))
    digests = b"".join(mmh3.hash_bytes(key[:i], 256 - i, x64arch=True) for i in range(256))
    final = mmh3.hash_bytes(digests, 0, x64arch=True)
    assert struct.unpack("<I", final[:4])[0] == 0x6384BA69


def test_murmur3_64_is_low_half_of_x64_128() -> None:
    # Published x64_128 digest of the pangram (seed 0): 6c1b07bc7bbc4be347939ac4a93c437a.
    text = "The quick brown fox jumps over the lazy dog"
    assert murmur3_64(text) == int.from_bytes(bytes.fromhex("6c1b07bc7bbc4be3"), "little")
    assert murmur3_64(text) == mmh3.hash128(text) & (2**64 - 1)
    # mmh3's documented example: hash64("foo") == (-2129773440516405919, ...).
    assert murmur3_64("foo") == -2129773440516405919 % 2**64
    assert murmur3_64("") == 0


def test_hash_function_by_name() -> None:
    assert hash_function("fnv1a") is fnv1a64
    assert hash_function("fnv1") is fnv1_64
    assert hash_function("murmur3") is murmur3_64
    with pytest.raises(InvalidConfig, match="unknown hash 'md5'"):
        hash_function("md5")


def test_scalar_hash_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="expected str or bytes, got None"):
        fnv1a64(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["fnv1a", "fnv1", "murmur3"])
@pytest.mark.parametrize("prefix", [b"", b"title:"])
def test_hash_spans_equals_scalar_hash(name: str, prefix: bytes) -> None:
    rng = random.Random(7)
    words = ["a", "bb", "ccc", "délta", "中文", "x" * 700]  # one long token: the Python tail
    buf = " ".join(rng.choice(words) for _ in range(400)).encode()
    starts = np.array(sorted(rng.randrange(len(buf)) for _ in range(300)), dtype=np.intp)
    ends = np.minimum(starts + np.array([rng.randrange(0, 900) for _ in range(300)]), len(buf))
    fn = hash_function(name)
    got = hash_spans(name, buf, starts, ends.astype(np.intp), prefix)
    assert got.dtype == np.uint64
    assert [int(v) for v in got] == [fn(prefix + buf[s:e]) for s, e in zip(starts, ends, strict=True)]


def test_hash_spans_equal_lengths_and_empty() -> None:
    buf = b"abcdefgh"
    starts = np.arange(5, dtype=np.intp)
    got = hash_spans("fnv1a", buf, starts, starts + 3)
    assert [int(v) for v in got] == [fnv1a64(buf[i : i + 3]) for i in range(5)]
    assert len(hash_spans("fnv1a", buf, starts[:0], starts[:0])) == 0


@pytest.mark.parametrize("name", ["fnv1a", "fnv1", "murmur3"])
@pytest.mark.parametrize("prefix", [b"", b"title:"])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_hash_windows_equals_scalar_hash(name: str, prefix: bytes, n: int) -> None:
    buf = bytes(random.Random(n).randrange(256) for _ in range(300))
    fn = hash_function(name)
    for size in (0, n - 1, n, n + 1, 300):
        got = hash_windows(name, buf[:size], n, prefix)
        assert got.dtype == np.uint64
        assert [int(v) for v in got] == [fn(prefix + buf[i : i + n]) for i in range(size - n + 1)]

