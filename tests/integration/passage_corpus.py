"""Texts with copied passages for the passage surfaces' tests, and the brute-force answers.

Every text is tokens separated by single spaces (Latin words and single CJK letters), so
``text.split()`` is its tokenisation: the oracle needs no simpg code. Passages of other
texts are pasted in at lengths just below, at and above a window's guarantee, a text
contains itself twice, and there are empty, one-word and CJK/Latin mixed texts.
:func:`quoting_corpus` writes rows that quote a few queries, in texts of any separators and
spellings (tokenised by the study's rule); :func:`check` compares a lookup's matches with the
brute-force answer.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any

import psycopg

from simpg.passages import K
from simpg.results import PassageMatch
from tests.oracles import brute_common_runs, brute_containment
from tests.passage_texts import LETTERS, random_text, study_tokens

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


def brute_matches(query: str, rows: Mapping[Any, str], min_tokens: int, min_containment: float = 0.0,
                  split: Callable[[str], list[str]] = str.split,
                  ) -> dict[Any, tuple[list[tuple[int, int, int, int]], float, float]]:
    """key -> (every shared run of >= K tokens, text_in_row, row_in_text) for the rows a lookup must return.

    ``split`` tokenises (default: on spaces, as :func:`corpus` writes its texts).
    """
    q = split(query)
    found = {}
    for key, body in rows.items():
        b = split(body)
        runs = brute_common_runs(q, b, K)
        if not runs or max(r[1] - r[0] for r in runs) < min_tokens:
            continue
        sq, sb, shared = brute_containment(q, b)
        text_in_row, row_in_text = (shared / sq if sq else 0.0), (shared / sb if sb else 0.0)
        if max(text_in_row, row_in_text) < min_containment:
            continue
        found[key] = (runs, text_in_row, row_in_text)
    return found


VOCAB = [f"w{i}" for i in range(400)] + ["Straße", "ＴＨＥ", "ﬁle", "café"]


def expected_matches(query: str, rows: Mapping[Any, str], guarantee: int) -> dict[Any, tuple[Any, ...]]:
    """{key: (runs of >= K tokens, text_in_row, row_in_text)} of the rows sharing a run of >= guarantee.

    :func:`brute_matches` on the study's tokens (texts of any separators and spellings).
    """
    return brute_matches(query, rows, guarantee, split=study_tokens)


def check(got: list[PassageMatch], query: str, rows: Mapping[Any, str], guarantee: int) -> None:
    expected = expected_matches(query, rows, guarantee)
    assert {m.key for m in got} == set(expected)
    assert len(got) == len(expected)
    # the answer's order: most shared hashes first (then key)
    assert [m.shared_hashes for m in got] == sorted((m.shared_hashes for m in got), reverse=True)
    for m in got:
        runs, text_in_row, row_in_text = expected[m.key]
        assert [(p.a_start, p.a_end, p.b_start, p.b_end) for p in m.passages] == runs
        assert math.isclose(m.text_in_row, text_in_row) and math.isclose(m.row_in_text, row_in_text)
        assert m.passage_count == len(runs) and m.shared_tokens == sum(b - a for a, b, _, _ in runs)
        assert m.longest >= guarantee and m.shared_hashes >= 1
        for p in m.passages:  # the offsets quote the passage in the query and in the row
            assert study_tokens(query[p.a_char_start:p.a_char_end]) == study_tokens(
                rows[m.key][p.b_char_start:p.b_char_end])


def quoting_corpus(seed: int, n: int = 60) -> tuple[dict[int, str], list[str]]:
    """Rows and queries: rows copy passages of the queries (short and long), one holds a query twice,
    others mix CJK letters and Latin words, a few are empty or one word."""
    rng = random.Random(seed)
    queries = [random_text(rng, rng.randint(40, 160), VOCAB) for _ in range(4)]
    rows: dict[int, str] = {}
    for key in range(1, n + 1):
        kind = rng.random()
        own = random_text(rng, rng.randint(10, 120), VOCAB)
        q = rng.choice(queries)
        words = q.split(" ")
        if kind < 0.5:  # a passage of the query, of 5 to 60 words, inside text of its own
            length = rng.randint(5, 60)
            start = rng.randint(0, max(0, len(words) - length))
            cut = len(own) // 2
            rows[key] = own[:cut] + " " + " ".join(words[start:start + length]) + " " + own[cut:]
        elif kind < 0.55:
            rows[key] = q + " " + own + " " + q
        elif kind < 0.7:
            rows[key] = "".join(rng.choice(LETTERS) for _ in range(30)) + " " + q[: len(q) // 2]
        elif kind < 0.75:
            rows[key] = rng.choice(["", "w1", "。", "w1 w2 w3"])
        else:
            rows[key] = own
    return rows, queries


def make_table(conn: psycopg.Connection, key_type: str = "bigint", table: str = "docs",
               partitioned: bool = False) -> None:
    conn.execute(f"CREATE TABLE {table} (id {key_type} PRIMARY KEY, body text, passages bigint[])"
                 + (" PARTITION BY HASH (id)" if partitioned else ""))
    if partitioned:
        for i in range(3):
            conn.execute(f"CREATE TABLE {table}_{i} PARTITION OF {table} "
                         f"FOR VALUES WITH (MODULUS 3, REMAINDER {i})")
