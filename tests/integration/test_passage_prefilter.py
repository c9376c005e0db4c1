"""The all-pairs report's pre-filter (simpg.passages.pairs.could_be_kept) and the collection filter of
simpg.passage_pairs (sql/functions/45_passages.sql).

The pre-filter must drop no pair that comparing every candidate keeps: checked against compare()
on every pair of random planted corpora and against the plain-loop oracle (tests/oracles.py) on
adversarial texts, with thresholds on both sides of the values the texts have. The filter must
pair exactly the rows of one value of a column, and give a stranger nothing a SELECT would not.
"""

from __future__ import annotations

import itertools
import random

import psycopg
import pytest
from psycopg import errors, sql

from simpg.passages import compare, passage_hashes, passage_pairs, tokens, verified_pairs
from simpg.passages.pairs import ANCHOR_WINDOW, could_be_kept, pair_kept, verify_candidates
from tests.integration.scenes import FRESH, Scene
from tests.oracles import brute_common_runs, brute_containment, brute_passage_pairs
from tests.passage_texts import planted_corpus, random_text, study_tokens

THRESHOLDS = [(1, None), (5, None), (6, None), (12, None), (50, None), (ANCHOR_WINDOW + 4, None),
              (ANCHOR_WINDOW + 5, None), (300, None), (None, 0.05), (None, 0.5), (None, 1.0), (20, 0.3)]


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def adversarial_texts() -> list[str]:
    rng = random.Random(11)
    run = words(70, "r")
    base = random_text(rng, 60)
    return [
        "", "one", "two words", "中", "ha " * 200, "ha " * 120 + "end",   # empty, one word, a repeated word
        base + " " + base, base,                                           # a text containing itself twice
        "中文字の" * 30 + " latin words between " + run,                    # CJK and Latin mixed
        "ＴＨＥ ﬁle " + run.upper() + " 中文",                                # NFKC spellings of the same run
        words(49, "r"), words(50, "r"), words(ANCHOR_WINDOW + 4, "r"),      # runs at the bounds
        run + " " + run, "x " + words(69, "r") + " y",
        random_text(rng, 300), random_text(rng, 5), random_text(rng, 4),
    ]


def reference(texts: list[str], threshold: tuple[int | None, float | None]) -> dict[tuple[int, int], object]:
    """Every pair compared and kept by pair_kept: the report's definition, without the pre-filter."""
    made = [tokens(t) for t in texts]
    kept = {}
    for a, b in itertools.combinations(range(len(texts)), 2):
        c = compare(made[a], made[b])
        if pair_kept(c, *threshold):
            kept[(a, b)] = c
    return kept


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_prefilter_keeps_every_pair_comparing_every_pair_keeps(seed: int) -> None:
    texts = planted_corpus(random.Random(seed), 70) + adversarial_texts()
    pairs = list(itertools.combinations(range(len(texts)), 2))
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    dropped = 0
    for threshold in THRESHOLDS:
        want = reference(texts, threshold)
        got = verified_pairs(texts, a, b, min_tokens=threshold[0], min_containment=threshold[1], workers=1)
        assert {(p.a, p.b): p.comparison for p in got} == want, threshold
        checked = verify_candidates(dict(enumerate(texts)), a, b, *threshold)
        dropped += sum(c is None for c in checked)
    assert dropped > len(pairs)  # the filter does drop pairs (each threshold over the same pairs)


def test_the_prefilter_agrees_with_the_oracle_on_adversarial_texts() -> None:
    texts = adversarial_texts()
    made = [tokens(t) for t in texts]
    for a, b in itertools.combinations(range(len(texts)), 2):
        ta, tb = study_tokens(texts[a]), study_tokens(texts[b])
        longest = max((r[1] - r[0] for r in brute_common_runs(ta, tb, 5)), default=0)
        sa, sb, shared = brute_containment(ta, tb)
        most = max(shared / sa if sa else 0.0, shared / sb if sb else 0.0)
        for min_tokens, min_containment in THRESHOLDS:
            truth = (min_tokens is not None and longest >= min_tokens) or (
                min_containment is not None and most >= min_containment)
            if truth:
                assert could_be_kept(made[a], made[b], min_tokens, min_containment), (a, b, min_tokens)


@pytest.mark.parametrize("length", [5, 6, 49, 50, 51, ANCHOR_WINDOW + 4, ANCHOR_WINDOW + 5, 200])
def test_a_run_exactly_at_the_threshold_is_kept_and_one_token_short_is_dropped(length: int) -> None:
    run = words(length, "s")
    a, b = tokens("alpha beta " + run + " gamma"), tokens("delta " + run + " epsilon zeta")
    assert compare(a, b).longest == length
    assert could_be_kept(a, b, length, None)
    assert not could_be_kept(a, b, length + 1, None)


def test_a_reported_pair_may_share_a_single_distinct_hash() -> None:
    # why min_shared stays 1 whatever the threshold: a run of 200 tokens, one distinct k-gram
    a, b = "ha " * 200 + "one", "two " + "ha " * 200
    assert len(set(passage_hashes(a)) & set(passage_hashes(b))) == 1
    report = passage_pairs([a, b], min_tokens=200, workers=1)
    assert [p.comparison.longest for p in report.pairs] == [200]


def test_containment_exactly_at_the_threshold() -> None:
    a = tokens(words(40, "c"))                       # 38 shingles
    b = tokens(words(19, "c") + " " + words(30, "d"))  # holds 17 of a's shingles
    c = compare(a, b)
    share = max(c.a_in_b, c.b_in_a)
    assert 0 < share < 1
    assert could_be_kept(a, b, None, share)
    assert pair_kept(c, None, share)
    assert not could_be_kept(a, b, None, min(1.0, share + 0.01)) or pair_kept(c, None, share + 0.01)


# --- the collection filter of simpg.passage_pairs


def collection_table(conn: psycopg.Connection, n: int = 150) -> dict[int, tuple[str, list[int]]]:
    """docs (id, collection, body, passages) of planted texts in collections a, b, c; id -> (collection, hashes)."""
    rng = random.Random(7)
    texts = planted_corpus(rng, n)
    rows = {i + 1: (rng.choice("abc"), passage_hashes(t)) for i, t in enumerate(texts)}
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, collection text NOT NULL, body text, passages bigint[])")
    with conn.cursor().copy("COPY docs (id, collection, body, passages) FROM STDIN") as copy:
        for key, (collection, values) in rows.items():
            copy.write_row((key, collection, texts[key - 1], values))
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    return rows


def filtered(conn: psycopg.Connection, value: str) -> dict[tuple[int, int], int]:
    got = conn.execute("SELECT key_a, key_b, shared FROM simpg.passage_pairs('docs', 'passages', 1, NULL, NULL, "
                       "'collection', %s)", [value]).fetchall()
    return {(a, b): n for a, b, n in got}


def test_the_filter_pairs_exactly_the_rows_of_one_collection(conn: psycopg.Connection) -> None:
    rows = collection_table(conn)
    for value in "abc":
        want = brute_passage_pairs({k: h for k, (c, h) in rows.items() if c == value}, 1)
        assert want
        assert filtered(conn, value) == want
    assert filtered(conn, "nothing") == {}
    assert filtered(conn, "a' OR true --") == {}  # a value, never SQL
    typed = conn.execute("SELECT key_a, key_b, shared FROM simpg.passage_pairs(NULL::text, 'docs', 'passages', 1, "
                         "NULL, NULL, 'collection', 'b')").fetchall()
    assert {(int(a), int(b)): n for a, b, n in typed} == filtered(conn, "b")
    assert filtered(conn, "a") == {(a, b): n for (a, b), n in
                                   brute_passage_pairs({k: h for k, h in ((k, h) for k, (_, h) in rows.items())}, 1)
                                   .items() if rows[a][0] == rows[b][0] == "a"}


def test_the_filter_refuses_what_it_cannot_check(conn: psycopg.Connection) -> None:
    collection_table(conn, 20)
    conn.execute("CREATE TYPE mood AS ENUM ('sad', 'happy')")
    conn.execute("ALTER TABLE docs ADD COLUMN feeling mood")
    conn.commit()
    for args, error, message in (
        ("'collection', NULL", errors.InvalidParameterValue, "filter_column and filter_value go together"),
        ("NULL, 'a'", errors.InvalidParameterValue, "filter_column and filter_value go together"),
        ("'nope', 'a'", errors.UndefinedColumn, r"column nope of table (public\.)?docs does not exist"),
        ("'feeling', 'sad'", errors.FeatureNotSupported, r"has type (public\.)?mood, which is not built in"),
    ):
        with pytest.raises(error, match=message):
            conn.execute(f"SELECT * FROM simpg.passage_pairs('docs', 'passages', 1, NULL, NULL, {args})")
        conn.rollback()


@pytest.mark.parametrize("how", FRESH)
def test_a_filter_reads_no_row_the_caller_cannot(scene: Scene, how: str) -> None:
    scene.install(how)
    bob_id = sql.Identifier(scene.bob)
    call = "SELECT key_a, key_b, shared FROM simpg.passage_pairs('docs', 'passages', 1, NULL, NULL, 'collection', 'a')"
    with scene.connect(scene.alice) as alice:
        rows = collection_table(alice)
    with scene.connect(scene.bob) as bob, pytest.raises(errors.InsufficientPrivilege):
        bob.execute(call)  # no rights on the table
    with scene.connect(scene.alice) as alice:
        alice.execute(sql.SQL("GRANT SELECT (id, passages) ON docs TO {}").format(bob_id))
    with scene.connect(scene.bob) as bob:
        assert bob.execute("SELECT count(*) FROM simpg.passage_pairs('docs', 'passages', 1, NULL)").fetchone()[0] > 0
        with pytest.raises(errors.InsufficientPrivilege):
            bob.execute(call)  # he may pair the rows, not read the collection column
    with scene.connect(scene.alice) as alice:
        alice.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(bob_id))
        alice.execute("ALTER TABLE docs ENABLE ROW LEVEL SECURITY")
        alice.execute(sql.SQL("CREATE POLICY even ON docs FOR SELECT TO {} USING (id % 2 = 0)").format(bob_id))
    visible = {k: h for k, (c, h) in rows.items() if c == "a" and k % 2 == 0}
    with scene.connect(scene.bob) as bob:
        assert {(a, b): n for a, b, n in bob.execute(call).fetchall()} == brute_passage_pairs(visible, 1)
