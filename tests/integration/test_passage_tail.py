"""The boilerplate tail of the passage lookup (issue 30): the early stop at ``limit`` and a relative max_common.

A paragraph in many rows (whole, cut short, with its halves swapped so that the hashes overstate
what is shared, with a word changed), ties: the lookup with a limit must give exactly the first
``limit`` matches of the lookup without one, which the brute-force oracle checks
(tests/integration/passage_corpus.py). ``max_common`` as a share of the rows must skip what its
count (``greatest(1000, share * rows)``) skips, in SQL and in Python, and bad values are refused
naming them in both.
"""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import errors

from simpg.exc import SimpgError
from simpg.passages import PassageConfig
from simpg.passages.lookup import Verification, prepared_query
from simpg.psycopg import AsyncPassageColumn, PassageColumn
from tests.integration.passage_corpus import VOCAB, check, make_table
from tests.passage_texts import random_text, study_tokens


def boilerplate_rows(rng: random.Random, paragraph: str, n: int) -> dict[int, str]:
    words = paragraph.split(" ")
    rows = {}
    for key in range(1, n + 1):
        own = random_text(rng, rng.randint(5, 60), VOCAB)
        kind = key % 6
        if kind in (0, 1):  # the whole paragraph: ties
            body = own + " " + paragraph
        elif kind == 2:  # cut short
            body = " ".join(words[: rng.randint(len(words) // 3, len(words))]) + " " + own
        elif kind == 3:  # halves swapped: shares many hashes, shorter runs
            body = " ".join(words[len(words) // 2:]) + " " + own + " " + " ".join(words[: len(words) // 2])
        elif kind == 4:  # one word changed
            changed = list(words)
            changed[rng.randrange(len(changed))] = "changed"
            body = own + " " + " ".join(changed)
        else:  # a piece of it shorter than any guarantee: shares hashes, is no match
            start = rng.randrange(len(words) - 10)
            body = own + " " + " ".join(words[start:start + 10]) + " " + own
        rows[key] = body
    return rows


@pytest.mark.parametrize(("window", "spaceless_window"), [(8, 8), (8, 20)])
def test_the_early_stop_gives_the_first_matches_of_the_whole_answer(conn, window: int,
                                                                    spaceless_window: int) -> None:
    rng = random.Random(window + spaceless_window)
    paragraph = random_text(rng, 90, VOCAB)
    rows = boilerplate_rows(rng, paragraph, 240)
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    info = docs.create(window, spaceless_window)
    docs.add(list(rows.values()), list(rows))
    conn.execute("ANALYZE docs")
    query = random_text(rng, 30, VOCAB) + " " + paragraph + " " + random_text(rng, 30, VOCAB)
    whole = docs.near(query, max_common=None)
    check(whole, query, rows, info.guarantee)
    assert len(whole) > 150 and len({m.longest for m in whole}) > 5
    # the statement's order: most shared hashes, then key; ties: the rows holding the whole paragraph
    assert [(-m.shared_hashes, m.key) for m in whole] == sorted((-m.shared_hashes, m.key) for m in whole)
    tied = [m for m in whole if m.shared_hashes == whole[0].shared_hashes]
    assert len(tied) > 50
    for limit in [1, 2, 5, 10, len(tied) - 1, len(tied), len(tied) + 1, 100, len(whole), len(whole) + 10]:
        assert docs.near(query, max_common=None, limit=limit) == whole[:limit], limit
        assert docs.near(query, max_common=None, limit=limit, min_tokens=info.guarantee + 30) == [
            m for m in whole if m.longest >= info.guarantee + 30][:limit]
        assert docs.near(query, max_common=None, limit=limit, min_containment=0.5) == [
            m for m in whole if max(m.row_in_text, m.text_in_row) >= 0.5][:limit]
    # the texts read: the probe statement's candidates, verified until the first 10 are sure
    probe, texts = conn.execute("SELECT simpg.passage_probe_statement('docs', 'passages'), "
                                "simpg.passage_texts_statement('docs', 'body')").fetchone()
    prepared = prepared_query(query, info.config)
    with psycopg.RawCursor(conn) as cur:
        candidates = cur.execute(probe, [prepared.hashes.tolist(), None]).fetchall()
        verification = Verification(prepared, info.config, candidates, limit=10)
        while keys := verification.pending():
            verification.check(dict(cur.execute(texts, [keys]).fetchall()))
        everything = Verification(prepared, info.config, candidates)
        while keys := everything.pending():
            everything.check(dict(cur.execute(texts, [keys]).fetchall()))
    assert verification.matches() == whole[:10]
    assert verification.read <= 12 < len(whole) < len(candidates)
    assert everything.matches() == whole and len(whole) < everything.read <= len(candidates)


async def test_the_async_handle_stops_alike(db) -> None:
    rng = random.Random(7)
    paragraph = random_text(rng, 90, VOCAB)
    rows = boilerplate_rows(rng, paragraph, 120)
    query = paragraph + " " + random_text(rng, 30, VOCAB)
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        make_table(conn)
        sync = PassageColumn(conn, "docs", text_column="body")
        sync.create(8, 20)
        sync.add(list(rows.values()), list(rows))
        whole = sync.near(query, max_common=None)
    assert len(whole) > 60
    async with await AsyncPassageColumn.connect(db.dsn, "docs", text_column="body") as docs:
        for limit in [1, 7, 40, None]:
            assert await docs.near(query, max_common=None, limit=limit) == whole[:limit]


def counts_table(conn: psycopg.Connection) -> None:
    """2,500 rows; hash 1 in 2,400 of them, 2 in 1,600, 3 in 1,300, 4 in 1,200, 5 in 1,100, 6 in 600."""
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[])")
    conn.execute("""INSERT INTO docs SELECT i, 'text', ARRAY(SELECT h FROM (VALUES (1, 2400), (2, 1600), (3, 1300),
                        (4, 1200), (5, 1100), (6, 600)) AS c(h, n) WHERE i <= n) || (1000 + i)::bigint
                    FROM generate_series(1, 2500) AS i""")
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    conn.execute("ANALYZE docs")


def test_a_share_of_the_rows_skips_what_its_count_skips(conn) -> None:
    counts_table(conn)

    def common(max_common: object) -> list[int]:
        return conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', %s)", [max_common]).fetchone()[0]

    assert common(1250) == [1, 2, 3]  # the statistics count every row of a table ANALYZE read whole
    assert common(0.5) == common(1250) == common(1250.0)  # greatest(1000, 0.5 * 2,500)
    assert common(0.6) == common(1500) == [1, 2]
    assert common(0.2) == common(1000) == [1, 2, 3, 4, 5]  # 500 rows: below the floor of 1,000
    assert common(0.9) == common(2250) == [1]
    assert common(None) == [] and common(0)[:6] == [1, 2, 3, 4, 5, 6]  # 0: every hash listed
    assert conn.execute("SELECT simpg.max_common_rows(0.5, 2500), simpg.max_common_rows(0.0001, 2500), "
                        "simpg.max_common_rows(7, 2500), simpg.max_common_rows(NULL, 2500)").fetchone() == (
        1250, 1000, 7, None)
    # the candidates skip alike (the bigint form, with its default of 1,000 rows, and the share)
    for share, count in [(0.5, 1250), (0.2, 1000), (0.9, 2250)]:
        got = {(c[0], c[1]) for c in conn.execute(
            "SELECT (c.hit).id, c.shared FROM simpg.passage_candidates(NULL::docs, 'passages', '{1,2,3,4,5,6}', %s) "
            "AS c", [share]).fetchall()}
        assert got == {(c[0], c[1]) for c in conn.execute(
            "SELECT (c.hit).id, c.shared FROM simpg.passage_candidates(NULL::docs, 'passages', '{1,2,3,4,5,6}', "
            "%s::bigint) AS c", [count]).fetchall()}
        assert got  # hash 6 (600 rows) is never skipped
    default = conn.execute("SELECT count(*) FROM simpg.passage_candidates(NULL::docs, 'passages', '{1,2,3,4,5,6}')"
                           ).fetchone()
    assert default == (600,)  # 1,000 rows: only hash 6 (600 rows) is searched
    # and the Python handle: the share and its count skip the same hashes
    docs = PassageColumn(conn, "docs", text_column="body")
    assert docs.common_hashes(0.5) == docs.common_hashes(1250) == frozenset({1, 2, 3})
    assert docs.common_hashes() == docs.common_hashes(1000) == frozenset({1, 2, 3, 4, 5})  # the default, 0.001


@pytest.mark.parametrize("value", ["-1", "1.5", "2.25", "'NaN'::float8", "'Infinity'::float8", "-0.5",
                                   "'-Infinity'::float8", "-1::bigint"])
def test_bad_max_common_is_refused_in_sql_naming_it(conn, value: str) -> None:
    counts_table(conn)
    shown = {"'NaN'::float8": "NaN", "'Infinity'::float8": "Infinity", "'-Infinity'::float8": "-Infinity",
             "-1::bigint": "-1"}.get(value, value)
    message = f"max_common must be an integer of at least 0, a fraction between 0 and 1, or null, got {shown}"
    for call in (f"SELECT simpg.common_passage_hashes('docs', 'passages', {value})",
                 f"SELECT * FROM simpg.passage_candidates(NULL::docs, 'passages', '{{1}}', {value})"):
        with pytest.raises(errors.InvalidParameterValue) as err:
            conn.execute(call)
        assert err.value.diag.message_primary == message


@pytest.mark.parametrize("value", [-1, 1.5, float("nan"), float("inf"), -0.5, True, "0.1"])
def test_bad_max_common_is_refused_in_python_naming_it(conn, value: object) -> None:
    counts_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    message = f"max_common must be an integer of at least 0, a fraction between 0 and 1, or None, got {value!r}"
    for call in (lambda: docs.near("some text", max_common=value), lambda: docs.common_hashes(value)):
        with pytest.raises(SimpgError) as err:
            call()
        assert str(err.value) == message


def test_a_lookup_with_a_share_reports_what_it_skipped(conn) -> None:
    rng = random.Random(11)
    paragraph = random_text(rng, 90, VOCAB)
    rows = {key: random_text(rng, 20, VOCAB) + " " + (paragraph if key <= 1500 else "") for key in range(1, 2001)}
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    docs.add(list(rows.values()), list(rows), workers=1)
    conn.execute("ANALYZE docs")
    query = paragraph
    config = PassageConfig(8, 8)
    share = docs.near(query, max_common=0.6, limit=3)   # greatest(1000, 1200): the paragraph's 1,500 rows skipped
    count = docs.near(query, max_common=1200, limit=3)
    assert share == count and share.skipped == count.skipped and share.skipped
    assert set(share.skipped) <= set(prepared_query(query, config).hashes.tolist())
    every = docs.near(query, max_common=None, limit=3)
    assert every.skipped == () and len(every) == 3 and every[0].longest >= len(study_tokens(paragraph))


def test_the_probe_and_the_texts_are_read_in_one_snapshot(db, monkeypatch) -> None:
    """Rows deleted and rewritten by another session between the probe and the texts it reads are seen as they
    were: the answer is the one of the lookup's snapshot, not a mix (an autocommit connection gets a
    REPEATABLE READ transaction of its own; inside the caller's transaction nothing is committed)."""
    rng = random.Random(19)
    paragraph = random_text(rng, 90, VOCAB)
    rows = boilerplate_rows(rng, paragraph, 60)
    query = paragraph + " " + random_text(rng, 30, VOCAB)
    with psycopg.connect(db.dsn, autocommit=True) as conn, psycopg.connect(db.dsn, autocommit=True) as other:
        make_table(conn)
        docs = PassageColumn(conn, "docs", text_column="body")
        docs.create(8, 20)
        docs.add(list(rows.values()), list(rows))
        before = docs.near(query, max_common=None)
        assert len(before) > 20
        pending = Verification.pending

        def meanwhile(self: Verification) -> list:  # another session writes once the probe has run
            other.execute("DELETE FROM docs WHERE id % 2 = 0")
            other.execute("UPDATE docs SET body = 'rewritten' WHERE id % 3 = 0")
            monkeypatch.setattr(Verification, "pending", pending)
            return pending(self)

        monkeypatch.setattr(Verification, "pending", meanwhile)
        assert docs.near(query, max_common=None) == before
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        after = docs.near(query, max_common=None)
        assert after and all(m.key % 2 and m.key % 3 for m in after) and len(after) < len(before)
        with conn.transaction():
            assert docs.near(query, max_common=None) == after
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
