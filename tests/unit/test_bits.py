import random

import pytest

from simpg import bits
from simpg.exc import InvalidFingerprint


@pytest.mark.parametrize("unsigned, signed", [
    (0, 0), (1, 1), (2**63 - 1, 2**63 - 1), (2**63, -(2**63)), (2**64 - 1, -1), (2**63 + 5, -(2**63) + 5),
])
def test_round_trip_at_the_boundaries(unsigned, signed):
    assert bits.to_db(unsigned) == signed
    assert bits.from_db(signed) == unsigned


def test_round_trip_random():
    rng = random.Random(7)
    for _ in range(10_000):
        u = rng.getrandbits(64)
        s = bits.to_db(u)
        assert -(2**63) <= s < 2**63
        assert s % 2**64 == u  # same 64 bits, two's complement
        assert bits.from_db(s) == u


@pytest.mark.parametrize("value", [-1, 2**64, None, "12", 1.0, True])
def test_check_rejects_naming_the_value(value):
    with pytest.raises(InvalidFingerprint) as err:
        bits.to_db(value)
    assert repr(value) in str(err.value) or str(value) in str(err.value)
    assert str(err.value)[0].islower()


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, None])
def test_from_db_rejects_out_of_range(value):
    with pytest.raises(InvalidFingerprint):
        bits.from_db(value)


def test_hamming_matches_bit_counting():
    rng = random.Random(3)
    for _ in range(2_000):
        a, b = rng.getrandbits(64), rng.getrandbits(64)
        expected = sum(((a >> i) & 1) != ((b >> i) & 1) for i in range(64))
        assert bits.hamming(a, b) == expected
        assert bits.hamming(bits.to_db(a), bits.to_db(b)) == expected
