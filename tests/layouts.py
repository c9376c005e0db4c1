"""The layouts the test suite treats as supported: k from 0 to 7, at most 256 tables."""

from __future__ import annotations

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
