"""Texts with copied passages for the passage surfaces' tests, and the brute-force answers.

Every text is tokens separated by single spaces (Latin words and single CJK letters), so
``text.split()`` is its tokenisation: the oracle needs no simpg code. Passages of other
texts are pasted in at lengths just below, at and above a window's guarantee, a text
contains itself twice, and there are empty, one-word and CJK/Latin mixed texts.
"""

from __future__ import annotations

import random

from simpg.passages import K
from tests.oracles import brute_common_runs, brute_containment

VOCABULARY = [f"w{i}" for i in range(40)] + list("文字漢語日本かなカナ")


def words(rng: random.Random, n: int) -> list[str]:
    """``n`` random tokens of a small vocabulary (repeats are frequent: k-grams are not)."""
    return [rng.choice(VOCABULARY) for _ in range(n)]


def corpus(seed: int, n: int, guarantee: int) -> list[str]:
    """``n`` texts: random ones, and ones with passages of earlier texts pasted in."""
    rng = random.Random(seed)
    texts: list[list[str]] = [[], ["one"], ["文", "字"]]
    lengths = [K, guarantee - 1, guarantee, guarantee + 1, 3 * guarantee]
    while len(texts) < n:
        body = words(rng, rng.randint(20, 120))
        kind = rng.random()
        sources = [t for t in texts if len(t) >= 2 * guarantee]
        if kind < 0.5 and sources:
            src = rng.choice(sources)
            length = min(rng.choice(lengths), len(src))
            start = rng.randint(0, len(src) - length)
            at = rng.randint(0, len(body))
            body[at:at] = src[start:start + length]
        elif kind < 0.55 and sources:
            body = rng.choice(sources) * 2  # contains itself twice
        texts.append(body)
    return [" ".join(t) for t in texts]


def brute_matches(query: str, rows: dict[int, str], min_tokens: int,
                  min_containment: float = 0.0) -> dict[int, tuple[list[tuple[int, int, int, int]], float, float]]:
    """key -> (every shared run of >= K tokens, text_in_row, row_in_text) for the rows a lookup must return."""
    q = query.split()
    found = {}
    for key, body in rows.items():
        b = body.split()
        runs = brute_common_runs(q, b, K)
        if not runs or max(r[1] - r[0] for r in runs) < min_tokens:
            continue
        sq, sb, shared = brute_containment(q, b)
        text_in_row, row_in_text = (shared / sq if sq else 0.0), (shared / sb if sb else 0.0)
        if max(text_in_row, row_in_text) < min_containment:
            continue
        found[key] = (runs, text_in_row, row_in_text)
    return found
