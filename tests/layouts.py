"""The layouts the test suite treats as supported (k from 0 to 7, at most 256 tables), and a
checker of the exactness of any family of pair-report masks."""

from __future__ import annotations

import itertools

from simpg import bits
from simpg.exc import InvalidLayout
from simpg.layout import MAX_TABLES, Layout

MAX_TEST_K = 7


def one_level_layouts(max_k: int = MAX_TEST_K) -> list[Layout]:
    """Every valid single-level layout with k <= max_k."""
    found = []
    for k in range(max_k + 1):
        for m in range(k + 1, 65):
            try:
                layout = Layout(k, (m,))
            except InvalidLayout:
                continue
            if layout.tables <= MAX_TABLES:
                found.append(layout)
    return found


def two_level_layouts(max_k: int = MAX_TEST_K) -> list[Layout]:
    """Every valid two-level layout with k <= max_k."""
    found = []
    for k in range(max_k + 1):
        for m1 in range(k + 1, 65):
            for m2 in range(k + 1, 65):
                try:
                    found.append(Layout(k, (m1, m2)))
                except InvalidLayout:
                    continue
    return found


def mask_family_is_exact(masks: list[int], k: int) -> bool:
    """True when every pattern of at most k differing bits misses some mask entirely.

    Bits that lie in exactly the same masks behave alike, so it is enough to try every
    choice of at most k such groups: a complete check, not a sample.
    """
    unsigned = [m & bits.MASK for m in masks]
    groups: dict[tuple[bool, ...], int] = {}
    for b in range(64):
        key = tuple(bool(m >> b & 1) for m in unsigned)
        groups[key] = groups.get(key, 0) | 1 << b
    group_bits = list(groups.values())
    for size in range(min(k, len(group_bits)) + 1):
        for chosen in itertools.combinations(group_bits, size):
            touched = 0
            for g in chosen:
                touched |= g
            if not any(m & touched == 0 for m in unsigned):
                return False
    return True
