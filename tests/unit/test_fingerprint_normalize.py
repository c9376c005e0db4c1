"""Normalisation, tokens, shingles and script detection."""

from __future__ import annotations

import pytest

from simpg.fingerprint import (
    anchored_shingles,
    normalize,
    shingles,
    split_scripts,
    word_text,
    words,
)
from simpg.fingerprint.normalize import RUN_LIMIT, cut_runs, has_han, join_han
from simpg.fingerprint.tokenize import char_ngrams


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello,   WORLD!", "hello world"),
        ("  leading\ttabs\nand\r\nnewlines  ", "leading tabs and newlines"),
        ("ＦＵＬＬ－ｗｉｄｔｈ ２０２４", "full width 2024"),  # NFKC
        ("Straße", "strasse"),  # casefold, not lower
        ("ﬁne ligature", "fine ligature"),
        ("snake_case stays, dash-splits", "snake_case stays dash splits"),
        ("name\n" + "_" * 79 + "\n" + "=" * 40, "name"),  # separator lines are no words
        ("zzzzzzzz 1000000 1000 ab_____cd", "10000 1000 ab____cd"),  # runs dropped or cut
        ("don't", "don t"),
        ("…—“quotes”—…", "quotes"),
        ("", ""),
        ("!!! ...", ""),
    ],
)
def test_word_text(text: str, expected: str) -> None:
    assert word_text(normalize(text)) == expected


def test_ascii_fast_path_equals_unicode_path() -> None:
    text = "The Quick, brown FOX -- jumps! over_the (lazy) dog; 42 times."
    # Appending a non-ASCII word forces the general path for the same ASCII prefix.
    assert word_text(normalize(text + " é")) == word_text(normalize(text)) + " é"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("aaaa", "aaaa"),
        ("aaaaa", ""),  # a word of one character repeated is filler or a separator line
        ("x" * 1000, ""),
        ("ahhhhhhh zzzz", "ahhhh zzzz"),  # inside a word a run is cut to four
        ("abababab", "abababab"),  # only one character repeated is a run
        ("ab aaaaaaa cd eeeee", "ab cd"),
        ("a1000000 b", "a10000 b"),
        ("ーーーーーー 好好好好好好 中好好好好好", "中好好好好"),  # the non-ASCII path
        ("ab", "ab"),
    ],
)
def test_cut_runs(text: str, expected: str) -> None:
    assert cut_runs(text) == expected
    # the numpy path for ASCII and the regular expressions give the same text
    assert cut_runs(text + " é") == (expected + " é").lstrip()


def test_runs_never_longer_than_the_limit() -> None:
    import random

    rng = random.Random(14)
    for _ in range(200):
        text = "".join(rng.choice("ab ") * rng.randint(1, 9) for _ in range(30))
        cut = cut_runs(text)
        assert all(c * (RUN_LIMIT + 1) not in cut for c in "ab ")
        assert cut_runs(cut) == cut


def test_ascii_path_of_cut_runs_equals_the_regular_expressions() -> None:
    import random

    rng = random.Random(7)
    for _ in range(500):
        words = ["".join(rng.choice("ab") * rng.randint(1, 7) for _ in range(rng.randint(1, 3)))
                 for _ in range(rng.randint(1, 8))]
        text = " ".join(words)
        assert cut_runs(text + " é") == (cut_runs(text) + " é").lstrip(), text


def test_combining_marks_stay_inside_words() -> None:
    # Devanagari vowel signs are category Mc/Mn, which Python's \\w does not match.
    assert words("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]
    assert words("Cafe\u0301 noir") == ["café", "noir"]  # NFKC composes e + acute


def test_shingles() -> None:
    toks = ["a", "b", "c", "d"]
    assert shingles(toks, 3) == ["a b c", "b c d"]
    assert shingles(toks, 1) == toks
    assert shingles(toks[:2], 3) == ["a b"]  # shorter than n: one shingle
    assert shingles([], 3) == []
    with pytest.raises(ValueError, match="expected n >= 1, got 0"):
        shingles(toks, 0)


def test_char_ngrams() -> None:
    assert char_ngrams("ab cd", 3) == ["ab ", "b c", " cd"]
    assert char_ngrams("ab", 5) == ["ab"]
    assert char_ngrams("", 5) == []


def test_anchored_shingles() -> None:
    toks = "buy cheap pills now free shipping and the best prices".split()
    kept = anchored_shingles(toks, 2)
    assert kept == ["pills now", "now free", "shipping and", "and the", "the best"]
    # No stopword at all: every shingle is kept rather than none.
    assert anchored_shingles(["cheap", "pills", "online"], 2) == ["cheap pills", "pills online"]
    assert anchored_shingles(["x", "y"], 2, stopwords={"y"}) == ["x y"]


def test_split_scripts() -> None:
    han, other = split_scripts(normalize("SimHash 算法\n很快，Fast!"))
    assert han == "算法很快"  # the line break inside the Han run is dropped
    assert word_text(other) == "simhash fast"
    assert split_scripts("plain ascii") == ("", "plain ascii")
    han, _ = split_scripts(normalize("第一段。第二段"))
    assert han == "第一段\n第二段"  # punctuation ends a run


def test_han_helpers() -> None:
    assert has_han("abc 中") and not has_han("abc") and not has_han("café")
    assert join_han("中 文\n字 a b") == "中文字 a b"
