"""simpg.passages.pairs (issue 30): candidate pairs, verified pairs with a direction, "copied from" clusters.

Compared with tests/oracles.py's plain loops over all pairs: the hashes two documents share
(sets), what they share as token lists (maximal common runs, shingle containment, on the
study's tokens, not simpg's), which is the source, and connected groups. Random texts with
planted passages and adversarial ones (repeated passages, a document holding another twice,
empty and one-word documents, CJK and Latin mixed, a boilerplate passage in many documents).
"""

from __future__ import annotations

import doctest
import random
from typing import Any

import numpy as np
import pytest

import simpg.passages.pairs as pairs_module
from simpg.fingerprint import InvalidConfig, InvalidDocument
from simpg.passages import (
    CommonHash,
    Comparison,
    PassageConfig,
    PassagePair,
    candidate_pairs,
    passage_clusters,
    passage_hashes,
    passage_pairs,
)
from tests.oracles import brute_copy_clusters, brute_passage_pair, brute_shared_hashes
from tests.passage_texts import BOILERPLATE, planted_corpus, random_text, study_tokens


def check_pairs(texts: list[str], *, window: int, min_tokens: int | None = None,
                min_containment: float | None = None, max_common: int | None = None,
                rank: list[Any] | None = None) -> list[PassagePair]:
    """passage_pairs equals the oracle: kept = sharing a usable hash and meeting the threshold, all counts."""
    config = PassageConfig(window, window)
    hashes = [passage_hashes(t, config) for t in texts]
    report = passage_pairs(texts, config, min_tokens=min_tokens, min_containment=min_containment,
                           max_common=max_common, rank=rank, workers=1)
    shared, common = brute_shared_hashes(hashes, max_common)
    assert report.common == tuple(CommonHash(h, n) for h, n in sorted(common.items()))
    assert report.candidates == len(shared)
    words = [study_tokens(t) for t in texts]
    if min_tokens is None and min_containment is None:
        min_tokens = window + 4
    expected = {}
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            truth = brute_passage_pair(words[i], words[j], i, j, rank)
            contained = max(truth.shared_shingles / truth.a_shingles if truth.a_shingles else 0.0,
                            truth.shared_shingles / truth.b_shingles if truth.b_shingles else 0.0)
            meets = ((min_tokens is not None and truth.longest >= min_tokens)
                     or (min_containment is not None and contained >= min_containment))
            if meets and (i, j) in shared:
                expected[(i, j)] = truth
            if max_common is None and min_tokens is not None and truth.longest >= max(min_tokens, window + 4):
                assert (i, j) in shared  # the guarantee: a run of window + K - 1 tokens shares a hash
    got = {(p.a, p.b): p for p in report.pairs}
    assert list(got) == sorted(expected)
    for key, p in got.items():
        truth = expected[key]
        c = p.comparison
        assert (c.longest, c.a_shingles, c.b_shingles, c.shared_shingles) == truth[:4]
        assert (p.source, p.rule) == (truth.source, truth.rule)
        assert p.copy == (p.b if p.source == p.a else p.a)
    clusters = passage_clusters(report.pairs)
    assert [(list(c.members), list(c.sources)) for c in clusters] == brute_copy_clusters(
        (p.a, p.b, p.source) for p in report.pairs)
    return list(report.pairs)


# -- candidate pairs ------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 3, 64, pairs_module.PAIR_CHUNK])
def test_candidate_pairs_equal_the_oracle_on_random_hashes(chunk: int) -> None:
    rng = random.Random(chunk)
    for _ in range(40):
        alphabet = rng.choice([3, 20, 200, 0])  # 0: the whole int64 range
        values = ([rng.getrandbits(64) - 2**63 for _ in range(100)] + [-(2**63), 2**63 - 1] if alphabet == 0
                  else range(-alphabet, alphabet))
        hashes = [sorted(rng.sample(values, rng.randrange(0, min(30, len(values)))))
                  for _ in range(rng.randrange(0, 25))]
        for max_common in (None, 1, 2, 5):
            found = candidate_pairs([np.array(h, dtype=np.int64) for h in hashes], max_common=max_common,
                                    chunk=chunk)
            shared, common = brute_shared_hashes(hashes, max_common)
            assert list(zip(found.a.tolist(), found.b.tolist(), found.shared.tolist(), strict=True)) == [
                (i, j, n) for (i, j), n in sorted(shared.items())]
            assert found.common == tuple(CommonHash(h, n) for h, n in sorted(common.items()))
            assert len(found) == len(shared)


def test_candidate_pairs_accept_lists_and_empty_input() -> None:
    assert len(candidate_pairs([])) == 0
    assert len(candidate_pairs([[], [], []])) == 0
    found = candidate_pairs([[1, 5], [5], [-(2**63), 1, 2**63 - 1], [2**63 - 1]])
    assert list(zip(found.a.tolist(), found.b.tolist(), found.shared.tolist(), strict=True)) == [
        (0, 1, 1), (0, 2, 1), (2, 3, 1)]


@pytest.mark.parametrize("bad, message", [
    ([[2, 1]], "expected sorted distinct hashes for document 0"),
    ([[1], [1, 1]], "expected sorted distinct hashes for document 1"),
    ([["a"]], "expected a 1-d array of int64 hashes for document 0"),
    ([[1.5]], "expected a 1-d array of int64 hashes for document 0"),
    ([[2**64]], "expected a 1-d array of int64 hashes for document 0"),
    ([[[1, 2]]], "expected a 1-d array of int64 hashes for document 0"),
])
def test_bad_hashes_are_an_error_naming_the_document(bad: list[Any], message: str) -> None:
    with pytest.raises(InvalidDocument, match=message):
        candidate_pairs(bad)


@pytest.mark.parametrize("max_common", [-1, True, 1.5, "3"])
def test_bad_max_common_is_an_error_naming_it(max_common: Any) -> None:
    with pytest.raises(InvalidConfig, match=r"^max_common must be an integer of at least 0, a fraction between 0 "
                                          r"and 1, or None, got"):
        candidate_pairs([[1], [1]], max_common=max_common)


# -- verified pairs against the oracle --------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_passage_pairs_equal_the_oracle_on_random_planted_texts(seed: int) -> None:
    rng = random.Random(seed)
    texts = planted_corpus(rng, 28)
    rank = [rng.randrange(5) for _ in texts]  # ties: the containment rule decides those
    kept = check_pairs(texts, window=4, min_tokens=8, max_common=None, rank=rank)
    assert kept and {p.rule for p in kept} >= {"rank", "containment"}
    check_pairs(texts, window=8, min_containment=0.3)
    check_pairs(texts, window=4, min_tokens=20, min_containment=0.5, max_common=3)
    check_pairs(texts, window=46)


def test_boilerplate_in_many_documents_with_max_common_on_and_off() -> None:
    rng = random.Random(7)
    texts = [random_text(rng, 40, [f"v{i}" for i in range(1000)]) + "\n" + BOILERPLATE for _ in range(12)]
    texts.append(BOILERPLATE)
    every = check_pairs(texts, window=4, min_tokens=20)
    assert len(every) == 13 * 12 // 2  # the boilerplate (36 tokens) is found in every pair
    skipped = check_pairs(texts, window=4, min_tokens=20, max_common=5)
    # what remains: boilerplate hashes the edges of the passage made rare (winnowing picks by context)
    assert len(skipped) < len(every) // 3
    report = passage_pairs(texts, PassageConfig(4, 4), min_tokens=20, max_common=5, workers=1)
    assert report.common and all(6 <= c.documents <= 13 for c in report.common)
    assert sum(c.documents == 13 for c in report.common) >= 5


@pytest.mark.parametrize("texts", [
    ["", "", "one", "one", "one two three four five", "One, two. Three; four: FIVE!"],
    ["a b c d e f " * 10, "a b c d e f " * 3, "f e d c b a " * 5],  # repeated passages, every diagonal
    ["x " * 40, "x " * 9, "x"],
    ["中文字の本です、これは長い文章です。" * 4, "これは中文字の本です、これは長い文章です。Latin words here too",
     "Latin words here too and 中文字の本です、これは"],
])
def test_passage_pairs_equal_the_oracle_on_adversarial_texts(texts: list[str]) -> None:
    for window in (1, 2, 4):
        check_pairs(texts, window=window, min_tokens=5)
        check_pairs(texts, window=window, min_containment=0.2, max_common=2)


def test_a_document_holding_another_twice() -> None:
    doc = " ".join(f"word{i}" for i in range(80))
    texts = ["intro " + doc + " middle " + doc + " end", doc, "unrelated text entirely"]
    (p,) = check_pairs(texts, window=8, min_tokens=50)
    assert (p.a, p.b, p.source, p.rule) == (0, 1, 0, "containment")  # 0 holds all of 1
    assert [q.length for q in p.comparison.passages] == [80, 80]
    (q,) = check_pairs(texts, window=8, min_tokens=50, rank=[5, 1, 0])
    assert (q.source, q.rule) == (1, "rank")


def test_identical_documents_without_rank_are_decided_by_index() -> None:
    doc = " ".join(f"t{i}" for i in range(60))
    (p,) = check_pairs([doc, doc.upper()], window=8)
    assert (p.source, p.copy, p.rule) == (0, 1, "index")


def test_hashes_given_are_used_and_workers_change_nothing() -> None:
    texts = planted_corpus(random.Random(3), 20)
    config = PassageConfig(8, 8)
    here = passage_pairs(texts, config, min_tokens=10, workers=1)
    given = passage_pairs(texts, config, hashes=[passage_hashes(t, config) for t in texts], min_tokens=10, workers=1)
    pooled = passage_pairs(texts, config, min_tokens=10, workers=2)
    assert here == given == pooled and here.pairs
    # hashes of another text are what the candidates come from: none shared, no pair
    assert passage_pairs(texts, config, hashes=[[n] for n in range(len(texts))], workers=1).pairs == ()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"min_tokens": 0}, InvalidConfig, "min_tokens must be an integer of at least 1, got 0"),
    ({"min_tokens": True}, InvalidConfig, "min_tokens must be an integer of at least 1, got True"),
    ({"min_containment": -0.1}, InvalidConfig, "min_containment must be a number from 0 to 1, got -0.1"),
    ({"min_containment": 1.5}, InvalidConfig, "min_containment must be a number from 0 to 1, got 1.5"),
    ({"max_common": -1}, InvalidConfig,
     "max_common must be an integer of at least 0, a fraction between 0 and 1, or None, got -1"),
    ({"rank": [1]}, InvalidDocument, "expected 2 rank \\(one per text\\), got 1"),
    ({"hashes": [[1], [2], [3]]}, InvalidDocument, "expected 2 hashes \\(one per text\\), got 3"),
    ({"hashes": [[1], [3, 2]]}, InvalidDocument, "expected sorted distinct hashes for document 1"),
    ({"config": 46}, InvalidConfig, "expected a PassageConfig, got 46"),
])
def test_bad_arguments_are_an_error_naming_them(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        passage_pairs(["some text", "other text"], workers=1, **kwargs)


@pytest.mark.parametrize("texts, message", [
    ("a text", "expected a sequence of texts, got 'a text'"),
    (["ok", b"bytes"], "expected str for text 1, got b'bytes'"),
    (["ok", None], "expected str for text 1, got None"),
])
def test_bad_texts_are_an_error_naming_them(texts: Any, message: str) -> None:
    with pytest.raises(InvalidDocument, match=message):
        passage_pairs(texts, workers=1)


# -- clusters ---------------------------------------------------------------------------------

def pair(a: int, b: int, source: int) -> PassagePair:
    return PassagePair(a, b, Comparison((), 1, 1, 1), source, "rank")


def test_clusters_equal_the_oracle_on_random_directed_graphs() -> None:
    rng = random.Random(11)
    for _ in range(200):
        n = rng.randrange(2, 12)
        edges = {(a, b) for a, b in (sorted(rng.sample(range(n), 2)) for _ in range(rng.randrange(0, 15)))}
        pairs = [pair(a, b, rng.choice((a, b))) for a, b in sorted(edges)]
        rng.shuffle(pairs)
        got = [(list(c.members), list(c.sources)) for c in passage_clusters(pairs)]
        assert got == brute_copy_clusters((p.a, p.b, p.source) for p in pairs)


def test_a_cycle_has_the_sources_of_the_most_pairs() -> None:
    cycle = [pair(0, 1, 0), pair(1, 2, 1), pair(0, 2, 2), pair(2, 3, 2)]
    (cluster,) = passage_clusters(cycle)
    assert cluster.members == (0, 1, 2, 3) and cluster.sources == (2,)
    assert passage_clusters([]) == []


def test_docstring_examples() -> None:
    result = doctest.testmod(pairs_module)
    assert result.attempted > 0 and result.failed == 0
