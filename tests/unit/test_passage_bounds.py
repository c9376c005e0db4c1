"""The bound a passage lookup ranks its candidates by, and the early stop it allows (simpg.passages.lookup).

The bound rests on one property of the stored hashes: a window of a text (weighted by script,
at most ``max(window, spaceless_window)`` k-grams) that lies inside a run the text shares with a
row is a window of the row too, so the row stores its minimum. Both are checked on random texts with
repeats (a periodic text has few
distinct hashes and long runs), CJK and Latin mixed, and every pair's bound against the
exact comparison; then the verification with a limit against the answer without one.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from simpg.fingerprint.errors import InvalidConfig
from simpg.passages import PassageConfig, compare, passage_hashes, tokens
from simpg.passages.lookup import (
    Verification,
    bound_window,
    checked_max_common,
    longest_bounds,
    prepared_query,
    verify,
)
from simpg.passages.tokens import spaceless_tokens
from simpg.passages.winnow import kgram_hashes, window_minima
from tests.passage_texts import LETTERS, random_text

CONFIGS = [PassageConfig(8, 8), PassageConfig(8, 20), PassageConfig(20, 8), PassageConfig(26, 46), PassageConfig()]


def texts(seed: int, n: int) -> list[str]:
    """Random texts, texts quoting earlier ones (whole or in pieces, in another order), periodic ones."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(rng.choice([3, 12, 300]))]
    out: list[str] = []
    while len(out) < n:
        kind = rng.random()
        own = random_text(rng, rng.randint(0, 150), vocab)
        if out and kind < 0.4:
            src = rng.choice(out).split(" ")
            a, b = sorted(rng.sample(range(len(src) + 1), 2))
            piece = src[a:b]
            if kind < 0.15:  # two halves swapped: many hashes shared, shorter runs
                piece = piece[len(piece) // 2:] + piece[: len(piece) // 2]
            out.append(own + " " + " ".join(piece) + " " + own)
        elif kind < 0.5:
            period = random_text(rng, rng.randint(1, 12), vocab)
            out.append(" ".join([period] * rng.randint(2, 30)))
        elif kind < 0.6:
            out.append("".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 200))))
        else:
            out.append(own)
    return out


@pytest.mark.parametrize("config", CONFIGS)
def test_a_row_stores_the_minimum_of_each_of_its_windows_and_a_shared_window_is_stored_by_both(
        config: PassageConfig) -> None:
    """What the bound rests on: the windows' minima are the stored hashes, and a window of one text that lies
    inside a run it shares with another (a text quoting it) has its minimum stored by both."""
    pool = texts(1, 120)
    for text in pool:
        toks = tokens(text)
        grams = kgram_hashes(toks.hashes)
        minima = grams[window_minima(grams, spaceless_tokens(toks), config)].view(np.int64)
        assert sorted(set(minima.tolist())) == passage_hashes(text, config), text[:80]
    rng = random.Random(11)
    for _ in range(200):
        source, host = rng.choice(pool), random_text(rng, rng.randint(0, 80))
        quoting = host + " " + source + " " + random_text(rng, rng.randint(0, 80))
        assert set(passage_hashes(source, config)) - set(passage_hashes(quoting, config)) <= _edge_minima(
            source, config), source[:80]


def _edge_minima(text: str, config: PassageConfig) -> set[int]:
    # the minima of the text's windows that are not whole inside it once it is quoted: the last
    # windows (a window of the quoting text may run on past the quote) and a text of one window
    toks = tokens(text)
    grams = kgram_hashes(toks.hashes)
    at = window_minima(grams, spaceless_tokens(toks), config)
    w = bound_window(config)
    return set(grams[at[max(0, len(at) - w):]].view(np.int64).tolist()) if len(at) > 1 else set(
        grams[at].view(np.int64).tolist())


@pytest.mark.parametrize("config", CONFIGS)
def test_the_bound_is_never_below_the_longest_shared_run(config: PassageConfig) -> None:
    pool = texts(2, 70)
    checked = tight = 0
    for query in pool:
        prepared = prepared_query(query, config)
        bounds = longest_bounds(prepared, config, [passage_hashes(row, config) for row in pool])
        for row, bound in zip(pool, bounds.tolist(), strict=True):
            longest = compare(query, row).longest
            assert bound >= longest, (query[:60], row[:60], bound, longest)
            checked += longest >= config.guarantee
            tight += longest >= config.guarantee and bound == longest
    assert checked > 20 and tight > 0  # the data has matches, and the bound meets some of them


def test_verification_with_a_limit_is_the_first_of_the_whole_answer() -> None:
    rng = random.Random(3)
    for config in CONFIGS:
        pool = texts(4 + config.window, 60)
        paragraph = random_text(rng, 3 * config.guarantee, [f"b{i}" for i in range(200)])
        # boilerplate in many rows: whole (ties), cut (shorter), halves swapped (the bound overstates)
        half = paragraph.split(" ")
        rows = {}
        for key in range(1, 121):
            kind = key % 4
            body = (paragraph if kind == 0 else " ".join(half[: len(half) * (2 + key % 3) // 5]) if kind == 1
                    else " ".join(half[len(half) // 2:] + half[: len(half) // 2]) if kind == 2 else pool[key % 60])
            rows[key] = body if key % 8 else "intro " + body
        query = "my own words " + paragraph + " " + pool[7]
        stored = [(key, body, passage_hashes(body, config), key % 5) for key, body in rows.items()]
        whole = verify(query, config, stored)
        assert len(whole) > 40
        order = [[s[0] for s in stored].index(m.key) for m in whole]
        assert order == sorted(order)  # the statement's order
        for limit in [1, 2, 3, 5, 29, 30, 31, len(whole) - 1, len(whole), len(whole) + 3]:
            assert verify(query, config, stored, limit=limit) == whole[:limit]
        # and it stops early: five matches need a batch of texts, all of them every text
        # that may match
        reads = {}
        for limit in (5, None):
            check = Verification(query, config, [(k, h, s) for k, _, h, s in stored], limit=limit)
            bodies = {k: b for k, b, _, _ in stored}
            while check.pending():
                check.check(bodies)
            assert check.matches() == whole[:limit]
            reads[limit] = check.read
        assert reads[5] <= 8 < len(whole) <= reads[None] <= len(stored)


@pytest.mark.parametrize(("value", "expected"), [(None, None), (0, 0), (1, 1), (1000, 1000), (1000.0, 1000),
                                                 (0.5, 0.5), (0.001, 0.001)])
def test_max_common_is_a_count_or_a_share(value: object, expected: object) -> None:
    got = checked_max_common(value)
    assert got == expected and type(got) is type(expected)


def test_the_command_line_default_is_the_library_default() -> None:
    from simpg.commands._near_passages import LOOKUP_MAX_COMMON
    from simpg.passages.lookup import DEFAULT_MAX_COMMON

    assert LOOKUP_MAX_COMMON == DEFAULT_MAX_COMMON


@pytest.mark.parametrize("value", [-1, -0.5, 1.5, 2.25, float("nan"), float("inf"), True, "10", [1]])
def test_bad_max_common_is_refused_naming_it(value: object) -> None:
    with pytest.raises(InvalidConfig, match=r"^max_common must be an integer of at least 0, a fraction between "
                                            r"0 and 1, or None, got "):
        checked_max_common(value)
    with pytest.raises(InvalidConfig, match=repr(value).replace("[", r"\[").replace("]", r"\]")):
        checked_max_common(value)
