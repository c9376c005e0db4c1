"""SimHash combination against a straightforward reference implementation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from simpg.fingerprint import BitTally, InvalidDocument, NoFeatures, combine, quantize
from simpg.fingerprint.simhash import bit_counts


def reference_simhash(pairs: list[tuple[int, float]]) -> int:
    """Seeds 000/001 literally: +w for a 1 bit, -w for a 0 bit; bit set when tally > 0."""
    tallies = [0.0] * 64
    for h, w in pairs:
        for i in range(64):
            tallies[i] += w if (h >> i) & 1 else -w
    return sum(1 << i for i in range(64) if tallies[i] > 0)


def test_single_feature_gives_its_own_hash() -> None:
    h = 0x8000_0000_0000_0001
    assert combine([(h, 1.0)]) == h  # bit i of the hash -> bit i of the fingerprint


def test_bit_order_lsb_is_bit_zero() -> None:
    assert combine([(1, 1.0)]) == 1
    assert combine([(1 << 63, 1.0)]) == 1 << 63


def test_tie_gives_zero_bit() -> None:
    # Bit 0: +1 -1 = 0 (tie) -> 0; bit 1: +1 +1 -> 1.
    assert combine([(0b11, 1.0), (0b10, 1.0)]) == 0b10


def test_weights_decide() -> None:
    assert combine([(0b01, 2.0), (0b10, 1.0)]) == 0b01
    assert combine([(0b01, 1.0), (0b10, 2.0)]) == 0b10


@pytest.mark.parametrize("seed", range(5))
def test_matches_reference_on_random_features(seed: int) -> None:
    rng = random.Random(seed)
    # Weights that are exact in fixed point, so the reference's float sums are exact too.
    pairs = [(rng.getrandbits(64), rng.randrange(1, 400) / 8) for _ in range(rng.randrange(1, 300))]
    assert combine(pairs) == reference_simhash(pairs)


def test_bit_counts_matches_unpacked_bits() -> None:
    rng = np.random.default_rng(3)
    hashes = rng.integers(0, 2**63, size=5000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    expected = [sum((int(h) >> i) & 1 for h in hashes) for i in range(64)]
    assert bit_counts(hashes).tolist() == expected


@pytest.mark.parametrize("size", [0, 1, 254, 255, 256, 511, 70_000])
def test_bit_counts_at_block_edges(size: int) -> None:
    # all ones: every byte-wide counter reaches 255 in a full block of 255 hashes
    ones = np.full(size, 2**64 - 1, dtype=np.uint64)
    assert bit_counts(ones).tolist() == [size] * 64
    hashes = np.random.default_rng(size).integers(0, 2**64, size=size, dtype=np.uint64)
    assert bit_counts(hashes).tolist() == [sum((int(h) >> i) & 1 for h in hashes) for i in range(64)]


def test_tally_uniform_equals_weighted() -> None:
    rng = np.random.default_rng(4)
    hashes = rng.integers(0, 2**63, size=1000, dtype=np.uint64)
    a, b = BitTally(), BitTally()
    a.add_uniform(hashes, quantize(1.5))
    b.add_weighted(hashes, np.full(1000, quantize(1.5), dtype=np.int64))
    assert a.tallies == b.tallies
    assert a.value() == b.value() == reference_simhash([(int(h), 1.5) for h in hashes])


def test_large_weights_do_not_overflow() -> None:
    pairs = [(0b01, 2.0**39), (0b10, 2.0**39), (0b01, 1.0)] * 50_000
    assert combine(pairs) == 0b01


def test_quantize() -> None:
    assert quantize(1) == 65536
    assert quantize(0.5) == 32768
    assert quantize(2**-17) == 0  # round half to even
    for bad in (None, "1", True, float("nan"), float("inf"), -1.0, 2.0**40):
        with pytest.raises(InvalidDocument, match="feature weight"):
            quantize(bad)  # type: ignore[arg-type]


def test_no_features_errors() -> None:
    with pytest.raises(NoFeatures, match="no usable features"):
        combine([])
    with pytest.raises(NoFeatures, match="all feature weights are 0"):
        combine([(5, 0.0)])


def test_bad_pairs() -> None:
    with pytest.raises(InvalidDocument, match="expected 64-bit feature hash, got -1"):
        combine([(-1, 1.0)])
    with pytest.raises(InvalidDocument, match=r"expected \(feature hash, weight\) pair, got 3"):
        combine([3])  # type: ignore[list-item]
