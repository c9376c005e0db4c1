"""PassageColumn / AsyncPassageColumn (partial duplicates, issue 30) against brute force.

Every stored text is compared with the query by tests/oracles.py's plain loops, on the study's
tokens (tests/unit/test_passages.py): the handle must return exactly the rows that share a
run of at least the guarantee (``max(window, spaceless_window) + 4``) tokens with the query
(none missed, none extra), each with the oracle's shared runs and containment both ways. Random
and adversarial texts (the query twice in one row, CJK and Latin mixed, empty and one-word texts, full-width letters and
ligatures), a boilerplate paragraph in many rows with common hashes skipped and not, uuid and
text keys, a partitioned table, the sync and the async handle, and the index re-created
with another window under a handle that had prepared its lookup.
"""

from __future__ import annotations

import random
import uuid

import psycopg
import pytest

from simpg.exc import SimpgError
from simpg.passages import K, PassageConfig, passage_hashes
from simpg.psycopg import AsyncPassageColumn, PassageColumn, PassageMatches
from tests.integration.passage_corpus import VOCAB, check, make_table, quoting_corpus
from tests.passage_texts import random_text


@pytest.mark.parametrize(("window", "spaceless_window"), [(8, 8), (46, 46), (8, 20), (20, 8)])
def test_near_is_exactly_the_rows_sharing_a_run_of_the_guarantee(conn, window: int, spaceless_window: int) -> None:
    config = PassageConfig(window, spaceless_window)
    guarantee = max(window, spaceless_window) + 4
    rows, queries = quoting_corpus(window + spaceless_window)
    # a row mostly of CJK letters (winnowed with spaceless_window) quoting a Latin query, and a
    # query mostly of CJK letters (every query is winnowed with the smaller window)
    rows[1000] = " ".join(["文"] * 80 + queries[0].split(" ")[:guarantee] + ["字"] * 80)
    queries.append(" ".join(list("文字漢語日本かなカナ") * 15) + " " + queries[1])
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    info = docs.create(window, spaceless_window)
    assert (info.table, info.column, info.window, info.spaceless_window, info.key_column, info.text_column) == (
        "docs", "passages", window, spaceless_window, "id", "body")
    assert info.index_name == "docs_passages_keys_idx" and info.guarantee == guarantee and info.config == config
    assert docs.add(list(rows.values()), list(rows)) == len(rows)
    stored = dict(conn.execute("SELECT id, passages FROM docs").fetchall())
    assert stored == {key: passage_hashes(text, config) for key, text in rows.items()}
    assert docs.hashes(rows[1]) == stored[1]
    for query in [*queries, rows[3], rows[1000], "", "w1", "。"]:
        got = docs.near(query, max_common=None)
        assert isinstance(got, PassageMatches) and got.skipped == ()
        check(got, query, rows, guarantee)
        # a longer least run and a least containment keep exactly the matches meeting them
        longer = docs.near(query, min_tokens=guarantee + 16, max_common=None)
        assert longer == [m for m in got if m.longest >= guarantee + 16]
        contained = docs.near(query, min_containment=0.3, max_common=None)
        assert contained == [m for m in got if max(m.row_in_text, m.text_in_row) >= 0.3]
        assert docs.near(query, max_common=None, limit=2) == got[:2]


def test_a_row_holding_the_query_twice_shares_it_twice(conn) -> None:
    rng = random.Random(5)
    query = random_text(rng, 80, VOCAB)
    rows = {1: query + " and again: " + query, 2: "nothing of it", 3: random_text(rng, 60, VOCAB)}
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    docs.add(list(rows.values()), list(rows))
    got = docs.near(query)
    check(got, query, rows, 12)
    assert [m.key for m in got] == [1] and got[0].passage_count == 2
    assert got[0].row_in_text < 1.0 and got[0].text_in_row == 1.0


@pytest.mark.parametrize("key_type", ["uuid", "text"])
def test_uuid_and_text_keys(conn, key_type: str) -> None:
    rows_by_int, queries = quoting_corpus(11, n=30)
    keys = [uuid.UUID(int=random.Random(i).getrandbits(128)) if key_type == "uuid" else f"doc {i:03d}"
            for i in rows_by_int]
    rows = dict(zip(keys, rows_by_int.values(), strict=True))
    make_table(conn, key_type)
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    docs.add(list(rows.values()), keys)
    for query in queries:
        check(docs.near(query, max_common=None), query, rows, 12)


def test_a_partitioned_table(conn) -> None:
    rows, queries = quoting_corpus(17, n=40)
    make_table(conn, partitioned=True)
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    docs.add(list(rows.values()), list(rows), columns=None)
    assert conn.execute("SELECT count(*) FROM docs_1").fetchone()[0] > 0
    for query in queries:
        check(docs.near(query, max_common=None), query, rows, 12)


def test_a_key_column_and_other_columns(conn) -> None:
    conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, ref text UNIQUE NOT NULL, lang text, "
                 "content varchar, hashes bigint[])")
    rows, queries = quoting_corpus(23, n=20)
    docs = PassageColumn(conn, "docs", "hashes", text_column="content", key_column="ref")
    docs.create(8, 8)
    refs = [f"r{key}" for key in rows]
    assert docs.add(list(rows.values()), refs, columns={"lang": ["en"] * len(rows)}) == len(rows)
    assert conn.execute("SELECT count(*) FROM docs WHERE lang = 'en'").fetchone() == (len(rows),)
    by_ref = dict(zip(refs, rows.values(), strict=True))
    for query in queries:
        check(docs.near(query, max_common=None), query, by_ref, 12)
    # all or nothing: a duplicate key fails the whole COPY
    with pytest.raises(psycopg.errors.UniqueViolation):
        docs.add(["a new text", "another"], ["new", "r1"])
    assert conn.execute("SELECT count(*) FROM docs").fetchone() == (len(rows),)
    # keys made by the column's default
    plain = PassageColumn(conn, "docs", "hashes", text_column="content")
    with pytest.raises(psycopg.errors.NotNullViolation):
        plain.add(["no ref given"])
    assert plain.info.key_column == "id"


def test_boilerplate_skipped_as_common_after_analyze(conn) -> None:
    rng = random.Random(3)
    licence = random_text(rng, 120, VOCAB)
    rows = {key: random_text(rng, 80, VOCAB) + " " + licence if key <= 40 else random_text(rng, 80, VOCAB)
            for key in range(1, 61)}
    query_own = random_text(rng, 60, VOCAB)
    rows[61] = "prefix " + query_own  # shares the query's own part only
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    docs.add(list(rows.values()), list(rows))
    conn.execute("ANALYZE docs")
    query = query_own + " " + licence
    every = docs.near(query, max_common=None)
    check(every, query, rows, 12)
    assert {m.key for m in every} == {*range(1, 41), 61} and every.skipped == ()
    common = docs.common_hashes(10)
    licence_hashes = set(passage_hashes(licence, PassageConfig(8, 8)))
    assert common and common <= licence_hashes | set().union(*(passage_hashes(t, PassageConfig(8, 8))
                                                              for t in rows.values()))
    skipping = docs.near(query, max_common=10)
    assert skipping.skipped and set(skipping.skipped) <= common & set(passage_hashes(query, PassageConfig(8, 8)))
    assert skipping.skipped == tuple(sorted(skipping.skipped))
    # what it found is verified and exact for the rows it reached; row 61 shares no common hash
    found = {m.key: m for m in skipping}
    assert 61 in found and all(found[k] == m for m in every if (k := m.key) in found)
    assert len(found) < len(every)  # the boilerplate rows reached through common hashes only are skipped
    # a threshold above every row count skips nothing
    assert docs.near(query, max_common=1000) == every and docs.near(query).skipped == ()


async def test_async_handle_equals_the_sync_one(db) -> None:
    rows, queries = quoting_corpus(31, n=40)
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        make_table(conn)
        sync = PassageColumn(conn, "docs", text_column="body")
        sync.create(8, 8)
        sync.add(list(rows.values()), list(rows))
        expected = [sync.near(q, max_common=None) for q in queries]
        sync_info = sync.info
    async with await AsyncPassageColumn.connect(db.dsn, "docs", text_column="body") as docs:
        assert await docs.info() == sync_info
        got = [await docs.near(q, max_common=None) for q in queries]
        assert got == expected and [g.skipped for g in got] == [e.skipped for e in expected]
        for q, g in zip(queries, got, strict=True):
            check(g, q, rows, 12)
        assert await docs.hashes(rows[2]) == passage_hashes(rows[2], PassageConfig(8, 8))
        await docs.add(["a text added by the async handle"], [1000])
    assert docs.conn.closed


def reindex(conn: psycopg.Connection, rows: dict[int, str], window: int) -> None:
    """The passage index of docs made again with another window, the stored hashes with it."""
    conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    with conn.cursor() as cur:
        for key, text in rows.items():
            cur.execute("UPDATE docs SET passages = %s WHERE id = %s",
                        [passage_hashes(text, PassageConfig(window, window)), key])
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', %s, %s)", [window, window])


def test_the_lookup_follows_the_index_re_created_with_another_window(db) -> None:
    rows, queries = quoting_corpus(41, n=40)
    with psycopg.connect(db.dsn, autocommit=True) as conn, psycopg.connect(db.dsn, autocommit=True) as other:
        make_table(conn)
        docs = PassageColumn(conn, "docs", text_column="body", prepare=True)
        docs.create(8, 8)
        docs.add(list(rows.values()), list(rows))
        for q in queries:  # prepared and planned with window 8
            check(docs.near(q, max_common=None), q, rows, 12)
        # elsewhere: the index is made again with window 20, the hashes with it
        reindex(other, rows, 20)
        for q in queries:
            check(docs.near(q, max_common=None), q, rows, 24)
        assert docs.info.window == 20
        # inside a transaction the error aborts it: the handle says so and reads the index at the next call
        reindex(other, rows, 8)
        conn.autocommit = False
        with pytest.raises(SimpgError, match=r"^the passage index on docs\.passages changed since this handle "
                                             r"read it \(windows 20 and 20\); roll back and call again$"):
            docs.near(queries[0])
        conn.rollback()
        check(docs.near(queries[0], max_common=None), queries[0], rows, 12)
        conn.rollback()


def test_passage_comment_is_the_python_config_comment(conn) -> None:
    for window, spaceless_window in ((1, 1), (2, 46), (8, 3), (26, 46), (100, 100), (2**31 - 1, 7)):
        assert conn.execute("SELECT simpg.passage_comment(%s, %s)", [window, spaceless_window]).fetchone() == (
            PassageConfig(window, spaceless_window).to_comment(),)


def test_bad_input_is_an_error_naming_it(conn) -> None:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, n integer, passages bigint[])")
    with pytest.raises(SimpgError, match=r"^no simpg passage index on public\.docs\.passages; create one with "):
        PassageColumn(conn, "docs", text_column="body").near("a text")
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    with pytest.raises(SimpgError, match=r"^column missing of table public\.docs does not exist$"):
        PassageColumn(conn, "docs", text_column="missing").near("a text")
    with pytest.raises(SimpgError, match=r"^column n of table public\.docs is integer, expected text$"):
        PassageColumn(conn, "docs", text_column="n").near("a text")
    with pytest.raises(SimpgError, match=r"^column nokey of table public\.docs does not exist$"):
        PassageColumn(conn, "docs", text_column="body", key_column="nokey").near("a text")
    with pytest.raises(SimpgError, match=r"^column public\.docs\.body is text, expected bigint\[\]$"):
        PassageColumn(conn, "docs", "body").create()
    for bad in (1.5, -0.1, float("nan"), "0.5", True):
        with pytest.raises(SimpgError, match=rf"^min_containment must be a number from 0 to 1, "
                                             rf"got {bad!r}$".replace("(", r"\(").replace(")", r"\)")):
            docs.near("a text", min_containment=bad)
    for bad_tokens in (11, 0, 12.0, "50", True):
        with pytest.raises(SimpgError, match=r"^min_tokens must be an integer of at least 12 \(the passage index's "
                                             r"larger window 8 \+ 4: shorter shared runs are not all found\), got "):
            docs.near("a text", min_tokens=bad_tokens)
    with pytest.raises(SimpgError, match=r"^max_common must be an integer of at least 0, a fraction between 0 "
                                         r"and 1, or None, got -1$"):
        docs.near("a text", max_common=-1)
    with pytest.raises(SimpgError, match=r"^limit must be an integer of at least 1, got 0$"):
        docs.near("a text", limit=0)
    with pytest.raises(SimpgError, match=r"^expected a text \(str\), got 42$"):
        docs.near(42)  # type: ignore[arg-type]
    with pytest.raises(SimpgError, match=r"^expected a text \(str\), got b'x'$"):
        docs.add([b"x"])  # type: ignore[list-item]
    with pytest.raises(SimpgError, match=r"^expected one key per text \(1\), got 2$"):
        docs.add(["x"], [1, 2])
    with pytest.raises(SimpgError, match=r"^window must be an integer of at least 1, got 0$"):
        docs.create(0)
    with pytest.raises(SimpgError, match=r"^spaceless_window must be an integer of at least 1, got True$"):
        docs.create(8, True)
    with pytest.raises(SimpgError, match=r"already has a simpg passage index with windows 8 and 8 "):
        docs.create(46)
    with pytest.raises(SimpgError, match=r"not windows 8 and 46"):
        docs.create(8, 46)
    assert docs.near("") == [] and docs.near("").skipped == ()
    docs.drop()
    with pytest.raises(SimpgError, match=r"^no simpg passage index on public\.docs\.passages"):
        docs.near("a text")


def test_the_cheap_check_never_drops_a_row_the_comparison_keeps() -> None:
    """The k-gram run bound the handle checks before compare() is never below compare()'s longest run."""
    import numpy as np

    from simpg.passages import compare, kgram_hashes, tokens
    from simpg.passages.lookup import _longest_kgram_run

    rows, queries = quoting_corpus(53, n=80)
    for query in [*queries, "", "w1", rows[5]]:
        q = tokens(query)
        grams = np.unique(kgram_hashes(q.hashes)) if len(q) >= K else np.zeros(0, dtype=np.uint64)
        for text in rows.values():
            longest = compare(q, text).longest
            bound = _longest_kgram_run(grams, tokens(text))
            assert bound >= longest and (longest == 0 or bound >= K)
