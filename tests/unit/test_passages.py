"""simpg.passages (issue 30): tokens with original offsets, winnowed passage hashes, exact compare.

Compared with tests/oracles.py's plain loops on seeded random and adversarial texts: what two
token lists share (maximal common runs, shingle containment) and what winnowing selects.
Tokens are compared with the study's rule (bench/quality/partial.py: NFKC + lowercase of the
whole text, then the script-aware token pattern).
"""

from __future__ import annotations

import doctest
import importlib
import random
import re
import unicodedata

import numpy as np
import pytest

import simpg.passages.comparison as comparison_module
from simpg.fingerprint import InvalidConfig, InvalidDocument, fnv1a64
from simpg.passages import (
    COMMENT_PREFIX,
    DEFAULT_WINDOW,
    K,
    PassageConfig,
    SharedPassage,
    compare,
    kgram_hashes,
    normalize_with_offsets,
    passage_hashes,
    passage_hashes_array,
    passage_hashes_many,
    spaceless_tokens,
    tokens,
    winnow,
    winnow_weighted,
)
from tests.oracles import brute_common_runs, brute_containment, brute_weighted_winnow, brute_winnow
from tests.passage_texts import WORDS, random_text, study_tokens


def spans(text: str) -> list[str]:
    t = tokens(text)
    return [text[s:e] for s, e in zip(t.starts.tolist(), t.ends.tolist(), strict=True)]


# -- config ---------------------------------------------------------------------------------

def test_config_round_trips_through_its_comment() -> None:
    for window, spaceless in ((1, 1), (2, 46), (46, 26), (1000, 7)):
        config = PassageConfig(window, spaceless)
        assert config.to_comment() == (f'simpg passages: {{"format": 1, "k": 5, "window": {window}, '
                                       f'"spaceless_window": {spaceless}}}')
        assert PassageConfig.from_comment(config.to_comment()) == config
        assert config.guarantee == max(window, spaceless) + K - 1
    assert PassageConfig() == PassageConfig(window=22, spaceless_window=46)
    assert PassageConfig().guarantee == 50 and K == 5 and COMMENT_PREFIX == "simpg passages: "


def test_a_one_window_comment_means_both_windows_equal() -> None:
    # what simpg wrote before the second window
    assert PassageConfig.from_comment('simpg passages: {"format": 1, "k": 5, "window": 46}') == PassageConfig(46, 46)


@pytest.mark.parametrize("window", [0, -1, True, 1.5, "46", None])
def test_config_rejects_a_bad_window_naming_it(window: object) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(f"expected window >= 1, got {window!r}")):
        PassageConfig(window, 46)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfig, match=re.escape(f"expected spaceless_window >= 1, got {window!r}")):
        PassageConfig(26, window)  # type: ignore[arg-type]


@pytest.mark.parametrize("comment, message", [
    ("simpg fingerprint_config: x", "expected a comment starting with 'simpg passages:'"),
    ("simpg passages: {", "expected {\"format\", \"k\", \"window\", \"spaceless_window\"} in the comment"),
    ('simpg passages: {"format": 2, "k": 5, "window": 46}', "unsupported passage format 2"),
    ('simpg passages: {"format": 1, "k": 4, "window": 46}', "unsupported k 4"),
    ('simpg passages: {"format": 1, "k": 5, "window": 0}', "expected window >= 1, got 0"),
    ('simpg passages: {"format": 1, "k": 5, "window": 26, "spaceless_window": 0}',
     "expected spaceless_window >= 1, got 0"),
    ('simpg passages: {"format": 1, "k": 5, "window": 26, "spaceless_window": 46, "x": 1}',
     "expected {\"format\", \"k\", \"window\", \"spaceless_window\"} in the comment"),
    ('simpg passages: {"format": 1, "k": 5}',
     "expected {\"format\", \"k\", \"window\", \"spaceless_window\"} in the comment"),
])
def test_config_rejects_a_bad_comment(comment: str, message: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(message)):
        PassageConfig.from_comment(comment)


# -- tokens ---------------------------------------------------------------------------------

def test_tokens_are_the_study_tokens_and_map_back_to_the_original_text() -> None:
    rng = random.Random(30)
    for _ in range(300):
        text = random_text(rng, rng.randrange(0, 40))
        t = tokens(text)
        assert list(t.words) == study_tokens(text)
        assert t.hashes.tolist() == [fnv1a64(w) for w in t.words]
        for word, original in zip(t.words, spans(text), strict=True):
            assert study_tokens(original) == [word], (text, original)
        assert np.all(np.diff(t.starts) > 0) if len(t) > 1 else True


def test_normalisation_keeps_where_each_character_came_from() -> None:
    text = "ﬁ Ａ e\u0301 İ ΟΔΟΣ ½ ㍱"
    norm, start, end = normalize_with_offsets(text)
    assert norm == unicodedata.normalize("NFKC", text).lower().replace("ς", "σ")
    assert len(start) == len(end) == len(norm)
    assert [text[s:e] for s, e in zip(start.tolist(), end.tolist(), strict=True)][:4] == ["ﬁ", "ﬁ", " ", "Ａ"]
    assert spans("Café e\u0301tude") == ["Café", "e\u0301tude"]
    assert spans("ΟΔΟΣ.ΣΟΦΟΣ") == ["ΟΔΟΣ", "ΣΟΦΟΣ"]
    assert tokens("ΟΔΟΣ.ΣΟΦΟΣ").words == tokens("οδος σοφος").words == ("οδοσ", "σοφοσ")  # final sigma folded


def test_a_character_that_normalises_to_several_tokens_gives_each_its_span() -> None:
    t = tokens("a½b")  # NFKC: "a1⁄2b": tokens "a1" and "2b", both touching the one character ½
    assert t.words == ("a1", "2b")
    assert spans("a½b") == ["a½", "½b"]


def test_empty_and_tokenless_texts() -> None:
    for text in ("", "  \n", "...，。!"):
        assert len(tokens(text)) == 0
        assert passage_hashes(text) == []
        assert passage_hashes_array(text).dtype == np.int64


@pytest.mark.parametrize("bad", [None, b"bytes", 42, ["a"]])
def test_bad_input_is_an_error_naming_it(bad: object) -> None:
    with pytest.raises(InvalidDocument, match=re.escape(f"expected str, got {bad!r:.60}")):
        tokens(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidDocument, match="expected str"):
        passage_hashes(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidDocument, match=re.escape(f"expected str or Tokens for b, got {bad!r:.60}")):
        compare("a", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfig, match="expected a PassageConfig, got 46"):
        passage_hashes("a", 46)  # type: ignore[arg-type]


# -- winnowing and passage hashes ------------------------------------------------------------

def test_winnow_is_the_rightmost_minimum_of_every_window() -> None:
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randrange(0, 60)
        values = [rng.randrange(0, rng.choice([3, 10, 2**64])) for _ in range(n)]  # ties too
        window = rng.randrange(1, 12)
        assert set(winnow(np.array(values, dtype=np.uint64), window).tolist()) == brute_winnow(values, window)


def test_a_smaller_window_selects_everything_a_larger_one_does() -> None:
    # docs/partial.md: the minimum of a w2-window is the minimum of every w1-window inside it
    # that contains it (rightmost of ties alike), so a lookup may winnow with any w1 <= w2
    rng = random.Random(12)
    for _ in range(300):
        values = np.array([rng.randrange(0, rng.choice([4, 2**64])) for _ in range(rng.randrange(0, 80))],
                          dtype=np.uint64)
        w1 = rng.randrange(1, 20)
        w2 = rng.randrange(w1, 40)
        assert set(winnow(values, w2).tolist()) <= set(winnow(values, w1).tolist())


def test_passage_hashes_are_sorted_distinct_signed_and_depend_on_tokens_only() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20 + "中文字の本"
    hashes = passage_hashes(text)
    assert hashes == sorted(set(hashes)) and all(-2**63 <= h < 2**63 for h in hashes)
    assert passage_hashes_array(text).tolist() == hashes
    respelled = text.upper().replace(". ", "。\n").replace(" ", "  ")
    assert passage_hashes(respelled) == hashes
    assert hashes == expected_hashes(text, PassageConfig())
    grams = kgram_hashes(tokens(text).hashes)
    assert passage_hashes(text, PassageConfig(1, 1)) == sorted(set(grams.view(np.int64).tolist()))


def test_a_text_shorter_than_k_tokens_has_one_hash_of_all_its_tokens() -> None:
    for n in range(1, K):
        words = [f"w{i}" for i in range(n)]
        assert len(passage_hashes(" ".join(words))) == 1
        assert passage_hashes(" ".join(words)) != passage_hashes(" ".join(words[:-1] + ["other"]))
    assert len(kgram_hashes(tokens("a b c d e").hashes)) == 1


def test_every_shared_run_of_window_plus_k_minus_1_tokens_is_found() -> None:
    rng = random.Random(46)
    vocab = [f"v{i}" for i in range(40)]  # small: k-grams repeat, hashes tie
    for trial in range(200):
        w1 = rng.choice([1, 2, 5, 16, 46])
        w2 = rng.choice([w1, w1 + rng.randrange(0, 30)])  # the two documents' windows may differ
        run = [rng.choice(vocab) for _ in range(w2 + K - 1)]
        a = [rng.choice(vocab) for _ in range(rng.randrange(0, 300))]
        b = [rng.choice(vocab) for _ in range(rng.randrange(0, 300))]
        at, bt = rng.randrange(len(a) + 1), rng.randrange(len(b) + 1)
        a[at:at] = run
        b[bt:bt] = run
        ha = passage_hashes(" ".join(a), PassageConfig(w1, w1))
        hb = passage_hashes(" ".join(b), PassageConfig(w2, w2))
        assert set(ha) & set(hb), (trial, w1, w2)


def han_words(rng: random.Random, n: int) -> list[str]:
    return [chr(0x4E00 + rng.randrange(60)) for _ in range(n)]  # few characters: k-grams repeat, hashes tie


def latin_words(rng: random.Random, n: int, vocab: int = 40) -> list[str]:
    return [f"v{rng.randrange(vocab)}" for _ in range(n)]


def mixed_words(rng: random.Random, n: int) -> list[str]:
    """Stretches of Han characters and Latin words, of random lengths (mixed at every scale)."""
    out: list[str] = []
    while len(out) < n:
        stretch = rng.choice([1, 2, 5, 20, 60])
        out += han_words(rng, stretch) if rng.random() < 0.5 else latin_words(rng, stretch)
    return out[:n]


def expected_hashes(text: str, config: PassageConfig) -> list[int]:
    """The oracle: the text's k-gram hashes winnowed by brute force, windows weighted by script."""
    t = tokens(text)
    grams = kgram_hashes(t.hashes)
    weights = [config.window if len(w) == 1 and 0x4E00 <= ord(w) <= 0x9FFF else config.spaceless_window
               for w in t.words][: len(grams)]
    picked = brute_weighted_winnow(grams.tolist(), weights, config.window * config.spaceless_window)
    return sorted(set(grams[sorted(picked)].view(np.int64).tolist()))


def test_spaceless_tokens_are_the_letters_of_spaceless_scripts() -> None:
    t = tokens("中文 text ひらがな 한국어 ภาษา café ５ 㐀 𠀀 x")
    assert dict(zip(t.words, spaceless_tokens(t).tolist(), strict=True)) == {
        "中": True, "文": True, "text": False, "ひ": True, "ら": True, "が": True, "な": True, "한국어": False,
        "ภ": True, "า": True, "ษ": True, "café": False, "5": False, "㐀": True, "𠀀": True, "x": False}
    assert spaceless_tokens(tokens("")).tolist() == [] and spaceless_tokens(["a", "中"]).tolist() == [False, True]


def test_winnow_weighted_is_the_brute_force_on_random_weights_and_ties() -> None:
    rng = random.Random(2603)
    for trial in range(600):
        n = rng.randrange(0, 120)
        values = [rng.randrange(0, rng.choice([3, 2**64])) for _ in range(n)]  # 3: ties everywhere
        a, b = rng.randrange(1, 50), rng.randrange(1, 50)
        weights = [rng.choice([a, b]) for _ in range(n)]
        budget = rng.choice([a * b, rng.randrange(1, 3000)])
        got = winnow_weighted(np.array(values, dtype=np.uint64), np.array(weights, dtype=np.int64), budget)
        assert got.tolist() == sorted(brute_weighted_winnow(values, weights, budget)), trial


def test_winnow_weighted_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    # simpg.passages.winnow, the attribute, is the function: the module by its name; many chunks,
    # windows across their ends
    monkeypatch.setattr(importlib.import_module("simpg.passages.winnow"), "_CHUNK", 7)
    for trial in range(100):
        n = rng.randrange(0, 200)
        values = [rng.randrange(0, rng.choice([4, 2**64])) for _ in range(n)]
        weights = [rng.choice([3, 5]) for _ in range(n)]
        got = winnow_weighted(np.array(values, dtype=np.uint64), np.array(weights, dtype=np.int64), 15)
        assert got.tolist() == sorted(brute_weighted_winnow(values, weights, 15)), trial


def test_a_text_is_winnowed_with_windows_weighted_by_script() -> None:
    rng = random.Random(26)
    config = PassageConfig(3, 8)
    for trial in range(150):
        words = mixed_words(rng, rng.randrange(0, 150))
        text = " ".join(words)
        assert passage_hashes(text, config) == expected_hashes(text, config), trial
    # one kind of token: plain winnowing with that kind's window
    latin, han = " ".join(latin_words(rng, 300)), "".join(han_words(rng, 300))
    for text, window in ((latin, 3), (han, 8)):
        grams = kgram_hashes(tokens(text).hashes)
        assert passage_hashes(text, config) == sorted(set(grams[winnow(grams, window)].view(np.int64).tolist()))


def test_equal_windows_are_plain_winnowing() -> None:
    rng = random.Random(46)
    for trial in range(100):
        w = rng.choice([1, 2, 5, 26, 46])
        text = " ".join(mixed_words(rng, rng.randrange(0, 200)))
        grams = kgram_hashes(tokens(text).hashes)
        plain = sorted(set(grams[sorted(brute_winnow(grams.tolist(), w))].view(np.int64).tolist()))
        assert passage_hashes(text, PassageConfig(w, w)) == plain, trial
        # weights equal to each other reduce to plain winnowing too, whatever the budget
        weights = np.full(len(grams), 7, dtype=np.int64)
        assert winnow_weighted(grams, weights, 7 * w).tolist() == winnow(grams, w).tolist()


def test_short_empty_and_one_token_texts() -> None:
    config = PassageConfig()
    assert passage_hashes("", config) == [] and passage_hashes("中", config) == passage_hashes("中", PassageConfig(1))
    assert len(passage_hashes("one", config)) == 1
    rng = random.Random(5)
    for n in range(1, 40):  # below the budget W = window * spaceless_window: one window, its minimum
        words = mixed_words(rng, n)
        text = " ".join(words)
        grams = kgram_hashes(tokens(text).hashes)
        if len(words) < min(config.window, config.spaceless_window):
            assert passage_hashes(text, config) == [int(grams.min().view(np.int64))] == expected_hashes(text, config)
        assert passage_hashes(text, config) == expected_hashes(text, config)


def test_every_shared_run_of_the_guarantee_is_found_across_scripts() -> None:
    # random mixed texts sharing a random mixed run of max(window, spaceless_window) + K - 1 tokens
    rng = random.Random(30)
    for trial in range(300):
        w, ws = rng.choice([1, 4, 16, DEFAULT_WINDOW, 26]), rng.choice([1, 8, 30, 46])
        config = PassageConfig(w, ws)
        run = rng.choice([mixed_words, han_words, latin_words])(rng, config.guarantee)
        a, b = mixed_words(rng, rng.randrange(0, 300)), mixed_words(rng, rng.randrange(0, 300))
        at, bt = rng.randrange(len(a) + 1), rng.randrange(len(b) + 1)
        a[at:at] = run
        b[bt:bt] = run
        assert set(passage_hashes(" ".join(a), config)) & set(passage_hashes(" ".join(b), config)), (trial, w, ws)


def test_every_shared_run_is_found_adversarial() -> None:
    # the run's hashes are the texts' largest around it or all equal (ties), and it sits at an edge
    rng = random.Random(31)
    config = PassageConfig()
    for trial in range(100):
        run = rng.choice([mixed_words, han_words, latin_words])(rng, config.guarantee)
        same = [rng.choice(["中", "x"])] * rng.randrange(0, 200)  # one token repeated: every k-gram ties
        a = rng.choice([same, mixed_words(rng, rng.randrange(0, 200))])
        b = rng.choice([[], mixed_words(rng, rng.randrange(0, 100))])
        a = rng.choice([a + run, run + a, a[: len(a) // 2] + run + a[len(a) // 2:]])
        b = b + run + b
        assert set(passage_hashes(" ".join(a), config)) & set(passage_hashes(" ".join(b), config)), trial


def test_a_latin_run_inside_a_chinese_text_is_found_from_window_plus_k_minus_1_tokens() -> None:
    # the point of weighted windows: 26 words (the default window + K - 1) pasted into Chinese are
    # winnowed as in English
    rng = random.Random(32)
    config = PassageConfig()
    for trial in range(200):
        run = latin_words(rng, config.window + K - 1, vocab=rng.choice([5, 1000]))
        a = han_words(rng, rng.randrange(0, 400))
        b = rng.choice([latin_words(rng, rng.randrange(0, 200)), han_words(rng, rng.randrange(0, 400))])
        at, bt = rng.randrange(len(a) + 1), rng.randrange(len(b) + 1)
        a[at:at] = run
        b[bt:bt] = run
        assert set(passage_hashes(" ".join(a), config)) & set(passage_hashes(" ".join(b), config)), trial


def test_repeated_passages_and_a_text_holding_itself_twice() -> None:
    rng = random.Random(33)
    config = PassageConfig()
    for trial in range(30):
        passage = mixed_words(rng, config.guarantee)
        text = mixed_words(rng, 100)
        twice = text + passage + mixed_words(rng, 10) + passage + text
        doubled = text + text
        for doc in (twice, doubled, passage * 3):
            joined = " ".join(doc)
            assert passage_hashes(joined, config) == expected_hashes(joined, config), trial
            if doc is not doubled:  # the others hold the passage
                assert set(passage_hashes(joined, config)) & set(passage_hashes(" ".join(passage), config))


def test_passage_hashes_many_is_passage_hashes_of_each_in_order() -> None:
    rng = random.Random(3)
    texts = [random_text(rng, rng.randrange(0, 200)) for _ in range(40)]
    config = PassageConfig(8, 8)
    expected = [passage_hashes(t, config) for t in texts]
    assert list(passage_hashes_many(texts, config, workers=1)) == expected
    assert list(passage_hashes_many(texts, config, workers=2, chunksize=7)) == expected


# -- compare --------------------------------------------------------------------------------

def check_against_oracle(a: str, b: str) -> None:
    c = compare(a, b)
    ta, tb = tokens(a), tokens(b)
    runs = brute_common_runs(ta.words, tb.words, K)
    assert [(p.a_start, p.a_end, p.b_start, p.b_end) for p in c.passages] == runs
    assert (c.a_shingles, c.b_shingles, c.shared_shingles) == brute_containment(ta.words, tb.words)
    for p in c.passages:
        assert tokens(a[p.a_char_start:p.a_char_end]).words == ta.words[p.a_start:p.a_end]
        assert tokens(b[p.b_char_start:p.b_char_end]).words == ta.words[p.a_start:p.a_end]
    assert c.shared_tokens == sum(e - s for s, e, _, _ in runs)
    assert c.longest == max((e - s for s, e, _, _ in runs), default=0)
    if c.b_shingles:
        assert c.b_in_a == c.shared_shingles / c.b_shingles


def test_compare_equals_the_oracle_on_random_texts_with_planted_passages() -> None:
    rng = random.Random(30)
    for _ in range(150):
        vocab = rng.choice([WORDS, WORDS[:4], [f"w{i}" for i in range(300)]])
        a = random_text(rng, rng.randrange(0, 120), vocab)
        b = random_text(rng, rng.randrange(0, 120), vocab)
        if rng.random() < 0.7:  # b gets a passage of a, respelled
            ta = tokens(a)
            if len(ta) > 1:
                s = rng.randrange(len(ta))
                e = rng.randrange(s, len(ta))
                passage = a[int(ta.starts[s]):int(ta.ends[e])]
                at = rng.randrange(len(b) + 1)
                b = b[:at] + " " + passage.upper() + " " + b[at:]
        check_against_oracle(a, b)
        check_against_oracle(b, a)


@pytest.mark.parametrize("a, b", [
    ("", ""), ("", "one"), ("one", "one"), ("one two", "one two"), ("a b c d", "a b c d"),
    ("a b c d e", "a b c d e"), ("a b c d e", "A, B; C. D! E?"),
    ("x " * 30, "x " * 7),  # one word repeated: a run on every diagonal
    ("la la la li la la la li " * 10, "la la la li la la la " * 3),
    ("中文字の本です" * 3, "これは中文字の本です。"),  # CJK: a token per letter
    ("ﬁle ＴＨＥ café straße " * 4, "FILE the cafe\u0301 STRASSE file the café straße file"),
])
def test_compare_equals_the_oracle_on_adversarial_texts(a: str, b: str) -> None:
    check_against_oracle(a, b)
    check_against_oracle(b, a)


def test_a_document_containing_itself_twice_shares_it_twice() -> None:
    doc = " ".join(f"word{i}" for i in range(60)) + "."
    c = compare(doc + "\n" + doc, doc)
    assert [(p.a_start, p.a_end, p.b_start, p.b_end) for p in c.passages] == [(0, 60, 0, 60), (60, 120, 0, 60)]
    assert c.b_in_a == 1.0 and c.shared_tokens == 120 and c.longest == 60
    second = c.passages[1]
    assert (doc + "\n" + doc)[second.a_char_start:second.a_char_end] == doc[:-1]


def test_short_texts_have_no_passage_but_their_one_shingle_counts() -> None:
    c = compare("One word", "one WORD")
    assert c.passages == () and (c.a_shingles, c.b_shingles, c.shared_shingles) == (1, 1, 1)
    assert c.a_in_b == c.b_in_a == 1.0
    empty = compare("", "something")
    assert (empty.a_shingles, empty.b_shingles, empty.shared_shingles) == (0, 1, 0)
    assert empty.a_in_b == empty.b_in_a == 0.0


def test_compare_accepts_tokens_once_made() -> None:
    a, b = "the best of times it was " * 3, "it was the best of times"
    assert compare(tokens(a), b) == compare(a, tokens(b)) == compare(a, b)


def test_runs_cut_by_a_chunk_of_matches_are_joined_again(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = "a b " * 40 + "c d e f g " * 5, "a b " * 30 + "c d e f g " * 4
    expected = compare(a, b)
    monkeypatch.setattr(comparison_module, "MATCH_CHUNK", 7)
    assert compare(a, b) == expected
    check_against_oracle(a, b)


def test_shared_passage_length() -> None:
    assert SharedPassage(3, 10, 0, 7, 5, 40, 0, 35).length == 7


@pytest.mark.parametrize("name", ["simpg.passages", "simpg.passages.config", "simpg.passages.tokens",
                                  "simpg.passages.winnow", "simpg.passages.comparison",
                                  "simpg.passages.checks"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_token_hashes_are_the_tokens_hashes() -> None:
    """The offset-free path passage hashes take gives exactly the hashes of tokens(), on adversarial texts."""
    import numpy as np

    from simpg.passages.tokens import token_hashes
    from tests.passage_texts import random_text

    rng = random.Random(3031)
    texts = [random_text(rng, rng.randint(0, 200)) for _ in range(500)]
    texts += ["", " ", "Ａ", "ﬁ ﬁ", "e\u0301" * 5, "ΟΔΟΣ ς", "\u1100\u1161\u11a8", "㍻ ½ Ⅻ", "𠀀𠀁 x"]
    for text in texts:
        assert np.array_equal(token_hashes(text), tokens(text).hashes), text


def test_token_kinds_agree_with_the_regex_on_every_code_point() -> None:
    """The table the offset-free path tokenises by finds the regex's tokens, for every character of the BMP.

    Each character is tried alone between spaces, doubled (a spaced word continues, a
    spaceless letter does not) and beside a Latin letter and a Han letter.
    """
    import numpy as np

    from simpg.passages.tokens import spaceless_tokens, token_hashes_and_kinds

    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    for first in range(0, len(chars), 4096):
        block = chars[first:first + 4096]
        text = " ".join(c + " " + c + c + " a" + c + "中" + c for c in block)
        hashes, spaceless = token_hashes_and_kinds(text)
        expected = tokens(text)
        assert np.array_equal(hashes, expected.hashes), (block[0], block[-1])
        assert np.array_equal(spaceless, spaceless_tokens(expected)), (block[0], block[-1])
