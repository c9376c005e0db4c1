"""simpg.passages.compare under forced hash collisions: the answer is the string-based one.

compare() matches tokens, shingles and k-grams by 64-bit hashes and checks every match. Here
the hashes are made to collide (a Tokens whose token hashes collide, or the window hashes
patched to collide) within a text, across the two texts only, or everywhere, and the answer
must equal the oracle on the words (tests/oracles.py) and compare() of the true hashes.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import numpy as np
import pytest

import simpg.passages.comparison as comparison_module
from simpg.passages import Comparison, K, compare, tokens
from simpg.passages.tokens import Tokens
from tests.oracles import brute_common_runs, brute_containment

U64 = np.uint64

VOCAB = [f"w{i}" for i in range(40)]


def random_pair(rng: random.Random) -> tuple[str, str]:
    """Two texts of a small vocabulary sharing a planted passage (repeats within each text too)."""
    a = [rng.choice(VOCAB) for _ in range(rng.randrange(3, 90))]
    b = [rng.choice(VOCAB) for _ in range(rng.randrange(3, 90))]
    s = rng.randrange(len(a))
    at = rng.randrange(len(b) + 1)
    b[at:at] = a[s : s + rng.randrange(0, 30)]
    return " ".join(a), " ".join(b)


def rehashed(t: Tokens, hash_of: Callable[[str], int]) -> Tokens:
    """``t`` with each token's hash replaced by ``hash_of(word)`` (still a function of the word)."""
    return dataclasses.replace(t, hashes=np.array([hash_of(w) for w in t.words], dtype=U64))


def assert_is_the_truth(c: Comparison, a: str, b: str) -> None:
    ta, tb = tokens(a), tokens(b)
    runs = brute_common_runs(ta.words, tb.words, K)
    assert [(p.a_start, p.a_end, p.b_start, p.b_end) for p in c.passages] == runs
    assert (c.a_shingles, c.b_shingles, c.shared_shingles) == brute_containment(ta.words, tb.words)
    assert c == compare(ta, tb) == comparison_module._compare_words(ta, tb)


@pytest.fixture
def fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the pairs compare() hands to the string-based comparison."""
    calls: list[int] = []
    by_words = comparison_module._compare_words

    def counted(ta: Tokens, tb: Tokens) -> Comparison:
        calls.append(1)
        return by_words(ta, tb)

    monkeypatch.setattr(comparison_module, "_compare_words", counted)
    return calls


@pytest.mark.parametrize("buckets", [1, 2, 3, 7])
def test_token_hashes_colliding_everywhere(buckets: int) -> None:
    rng = random.Random(buckets)
    for _ in range(40):
        a, b = random_pair(rng)
        collide = lambda w: int(w[1:]) % buckets  # noqa: E731
        c = compare(rehashed(tokens(a), collide), rehashed(tokens(b), collide))
        assert_is_the_truth(c, a, b)


def test_a_token_hash_collision_across_the_texts_only(fallbacks: list[int]) -> None:
    # "apple" is only in a, "pear" only in b: with one hash, a by-hash answer would share passages
    shared = " ".join(f"s{i}" for i in range(12))
    a = f"{shared} apple {shared} one two three four five six"
    b = f"{shared} pear {shared} one two three four five six"
    real = tokens("apple").hashes[0]
    same = lambda w: int(real) if w in ("apple", "pear") else int(tokens(w).hashes[0])  # noqa: E731
    c = compare(rehashed(tokens(a), same), rehashed(tokens(b), same))
    assert fallbacks, "the collision went unnoticed"
    assert_is_the_truth(c, a, b)
    assert [p.length for p in c.passages] == [12, 12, 12, 18]


def test_a_token_hash_collision_within_one_text(fallbacks: list[int]) -> None:
    a = "red green blue cyan magenta yellow black white red green blue cyan magenta yellow"
    b = "red green blue cyan magenta yellow black black white"
    real = tokens("black").hashes[0]
    same = lambda w: int(real) if w in ("black", "white") else int(tokens(w).hashes[0])  # noqa: E731
    c = compare(rehashed(tokens(a), same), rehashed(tokens(b), same))
    assert fallbacks
    assert_is_the_truth(c, a, b)


def patch_window_keys(monkeypatch: pytest.MonkeyPatch, change: Callable[[np.ndarray], np.ndarray]) -> None:
    """Window hashes (shingles and k-grams) replaced by ``change`` of the true ones (a function of the window)."""
    real = comparison_module._window_keys
    monkeypatch.setattr(comparison_module, "_window_keys", lambda h: tuple(change(k) for k in real(h)))


@pytest.mark.parametrize("buckets", [1, 2, 5])
def test_window_hashes_colliding_everywhere(monkeypatch: pytest.MonkeyPatch, buckets: int) -> None:
    patch_window_keys(monkeypatch, lambda k: k % U64(buckets))
    rng = random.Random(100 + buckets)
    for _ in range(40):
        a, b = random_pair(rng)
        assert_is_the_truth(compare(tokens(a), tokens(b)), a, b)


@pytest.mark.parametrize("kind", ["shingle", "k-gram"])
def test_a_window_hash_collision_across_the_texts_only(
    monkeypatch: pytest.MonkeyPatch, fallbacks: list[int], kind: str
) -> None:
    # the windows "q1 q2 ..." (only in a) and "r1 r2 ..." (only in b) are given one hash
    a = "q1 q2 q3 q4 q5 shared words go on here " * 2
    b = "r1 r2 r3 r4 r5 shared words go on here"
    key_a, key_b = (comparison_module._window_keys(tokens(t).hashes)[kind == "k-gram"][0] for t in (a, b))

    def change(k: np.ndarray) -> np.ndarray:
        return np.where(k == key_b, key_a, k).astype(U64)

    patch_window_keys(monkeypatch, change)
    c = compare(tokens(a), tokens(b))
    assert fallbacks, "the collision went unnoticed"
    assert_is_the_truth(c, a, b)
    assert c.shared_shingles == 3 and [p.length for p in c.passages] == [5, 5]


def test_the_query_is_derived_once(monkeypatch: pytest.MonkeyPatch) -> None:
    query = tokens("it was the best of times it was the worst of times " * 5)
    rows = ["it was the best of times indeed", "the worst of times it was the age", "nothing shared at all here"]
    made: list[int] = []
    real = comparison_module._window_keys

    def counted(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        made.append(len(h))
        return real(h)

    monkeypatch.setattr(comparison_module, "_window_keys", counted)
    found = [compare(query, row) for row in rows]
    assert made == [len(query)] + [len(tokens(row)) for row in rows]  # the query once, each row once
    for c, row in zip(found, rows, strict=True):
        assert_is_the_truth(c, query.text, row)
