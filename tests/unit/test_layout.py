"""Properties of the layout math, checked without a database."""

import itertools
import random

import pytest

from simpg import bits
from simpg.exc import InvalidLayout
from simpg.layout import Layout, block_widths, check_radius, default_blocks
from tests.layouts import one_level_layouts, two_level_layouts


def test_block_widths_split_evenly_wider_first():
    assert block_widths(64, 6) == [11, 11, 11, 11, 10, 10]  # seed 001
    assert block_widths(64, 4) == [16, 16, 16, 16]
    assert block_widths(64, 5) == [13, 13, 13, 13, 12]  # seed 000
    for m in range(1, 65):
        widths = block_widths(64, m)
        assert sum(widths) == 64 and max(widths) - min(widths) <= 1
        assert widths == sorted(widths, reverse=True)


def test_seed_designs():
    assert Layout(3, (6,)).tables == 20  # C(6,3), seed 001
    assert sorted({Layout(3, (6,)).prefix_bits(t) for t in range(20)}) == [31, 32, 33]
    assert Layout(3, (4,)).tables == 4 and Layout(3, (4,)).prefix_bits(0) == 16
    two = Layout(3, (4, 4))  # Google's 16 tables with 28-bit prefixes
    assert two.tables == 16 and {two.prefix_bits(t) for t in range(16)} == {28}
    assert Layout(3, (5,)).tables == 10 and Layout(3, (5,)).prefix_bits(0) == 26  # seed 000


def test_table_zero_of_one_level_is_identity():
    layout = Layout(3, (6,))
    rng = random.Random(1)
    for _ in range(100):
        fp = rng.getrandbits(64)
        assert bits.from_db(layout.permute(fp, 0)) == fp


def test_seed_004_example_table():
    # seed 004: m=6, k=3, the table permuted "A C F B D E" matches its example pair
    layout = Layout(3, (6,))
    combos = list(itertools.combinations(range(6), 3))
    t = combos.index((0, 2, 5))
    a = int("0100101110111011001000101111101110111100001010011101100110110101", 2)
    q = int("0100101110111011011000101111101110011100001010011100100110110101", 2)
    assert bits.hamming(a, q) == 3
    lo, hi = layout.prefix_range(q, t)
    assert lo <= layout.permute(a, t) <= hi


@pytest.mark.parametrize("layout", one_level_layouts()[::7] + two_level_layouts()[::31], ids=lambda lay: lay.name)
def test_permutation_is_a_bijection_keeping_bit_order_in_blocks(layout):
    for t in range(layout.tables):
        positions = [bits.from_db(layout.permute(1 << (63 - i), t)).bit_length() - 1 for i in range(64)]
        assert sorted(positions) == list(range(64))  # every bit lands somewhere, once
        segs = layout.segments(t)
        assert sum(bin(s.mask & bits.MASK).count("1") for s in segs) == 64


@pytest.mark.parametrize("layout", one_level_layouts()[::5] + two_level_layouts()[::23], ids=lambda lay: lay.name)
def test_pigeonhole_every_pair_within_k_shares_a_prefix(layout):
    """The guarantee the index rests on, on random pairs at distances 0..k."""
    rng = random.Random(layout.name)
    for _ in range(60):
        a = rng.getrandbits(64)
        b = a
        for i in rng.sample(range(64), rng.randint(0, layout.k)):
            b ^= 1 << i
        assert any(lo <= layout.permute(b, t) <= hi for t, (lo, hi) in enumerate(layout.prefix_ranges(a))
        )


def test_prefix_range_is_one_contiguous_signed_range():
    layout = Layout(3, (6,))
    for fp in (0, 2**63, 2**63 - 1, 2**64 - 1, 0x8000000000000001):
        for t in range(layout.tables):
            lo, hi = layout.prefix_range(fp, t)
            assert lo <= layout.permute(fp, t) <= hi
            assert (lo < 0) == (hi < 0)  # the sign bit is part of every prefix
            assert bits.from_db(hi) - bits.from_db(lo) == 2 ** (64 - layout.prefix_bits(t)) - 1


@pytest.mark.parametrize("k, levels, message", [
    (3, (3,), "blocks must be greater than k (blocks=3, k=3)"),
    (3, (2,), "blocks must be greater than k (blocks=2, k=3)"),
    (-1, (4,), "k must be an integer from 0 to 16, got -1"),
    (17, (20,), "k must be an integer from 0 to 16, got 17"),
    (2, (65,), "blocks=65 is more than the 64 bits left to split"),
    (7, (12,), "layout k=7 blocks=12 needs 792 tables, more than 256"),
    (3, (6, 3), "blocks must be greater than k (blocks=3, k=3)"),
])
def test_invalid_layouts_name_the_values(k, levels, message):
    with pytest.raises(InvalidLayout) as err:
        Layout(k, levels)
    assert str(err.value) == message


def test_table_out_of_range():
    with pytest.raises(InvalidLayout, match="table must be from 0 to 19, got 20"):
        Layout(3, (6,)).permute(0, 20)


@pytest.mark.parametrize("k, rows, blocks", [(3, 1_000_000, 4), (3, 10_000_000, 5), (0, 10, 1), (7, 10**9, 9)])
def test_default_blocks(k, rows, blocks):
    assert default_blocks(k, rows) == blocks


@pytest.mark.parametrize("k, limit, what, message", [
    (17, 16, None, "k must be an integer from 0 to 16, got 17"),
    (-1, 16, None, "k must be an integer from 0 to 16, got -1"),
    (True, 16, None, "k must be an integer from 0 to 16, got True"),
    ("3", 16, None, "k must be an integer from 0 to 16, got '3'"),
    (-1, 3, "the simpg index on docs.fp", "k must be a non-negative integer, got -1"),
    (None, 3, "the simpg index on docs.fp", "k must be a non-negative integer, got None"),
    (4, 3, "the simpg index on docs.fp", "k=4 is above the radius k=3 that the simpg index on docs.fp guarantees"),
])
def test_check_radius_names_the_value(k, limit, what, message):
    with pytest.raises(InvalidLayout) as err:
        check_radius(k, limit, what=what)
    assert str(err.value) == message


def test_check_radius_passes_a_radius_within_the_limit_and_adds_the_hint_above_it():
    assert [check_radius(k, 3, what="x") for k in range(4)] == [0, 1, 2, 3]
    assert check_radius(16) == 16
    with pytest.raises(InvalidLayout, match="^k=4 is above the radius k=3 that x guarantees; make it wider$"):
        check_radius(4, 3, what="x", hint="make it wider")
    with pytest.raises(InvalidLayout, match="^k=4 is above the radius k=3 that layout k3:5 guarantees$"):
        Layout(3, (5,)).check_radius(4)
