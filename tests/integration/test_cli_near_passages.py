"""``simpg near --passages``: texts looked up through a passage index, against brute force.

On a user table (``--table``, ``--column``, ``--text-column``) and on the reference table
``simpg_documents``, whose ``passages`` column is made here as ``ensure_reference_schema``
makes it (``ALTER TABLE ... ADD COLUMN passages bigint[]`` and ``simpg.create_passage_index``)
and filled with the rows' passage hashes, as ``simpg dedup`` fills it.
"""

from __future__ import annotations

import json
import random

import pytest

from simpg.cli import main
from simpg.passage_report import quote
from simpg.psycopg import PassageColumn
from tests.integration.cli import CORPUS, run
from tests.integration.passage_corpus import VOCAB, expected_matches, make_table, quoting_corpus
from tests.passage_texts import random_text


def test_near_passages_on_a_table(db, capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    rows, queries = quoting_corpus(7, n=40)
    conn = db.conn
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    docs.create(8, 8)
    docs.add(list(rows.values()), list(rows))
    path = tmp_path / "query.txt"
    path.write_text(queries[1], encoding="utf-8")
    code, out, err = run(capsys, "near", "--passages", "--text", queries[0], "--file", str(path), "--table", "docs",
                         "--dsn", db.dsn, "--json", "--max-common", "none")
    assert code == 0, err
    report = json.loads(out)
    assert [r["query"] for r in report] == [f"text {queries[0][:40]!r}", str(path)]
    for item, query in zip(report, queries, strict=False):
        expected = expected_matches(query, rows, 12)
        assert {m["key"] for m in item["matches"]} == set(expected) and item["min_tokens"] == 12
        quotes = [[p.pop("quote") for p in m["passages"]] for m in item["matches"]]
        handle = docs.near(query, max_common=None)
        assert item["matches"] == [m.as_dict() for m in handle]
        assert quotes == [[quote(query, p.a_char_start, p.a_char_end) for p in m.passages] for m in handle]
        for m in item["matches"]:
            runs, text_in_row, row_in_text = expected[m["key"]]
            assert [(p["tokens"]) for p in m["passages"]] == [b - a for a, b, _, _ in runs]
            assert (m["text_in_row"], m["row_in_text"]) == pytest.approx((text_in_row, row_in_text))
    # the human output: each row, containment both ways, each passage quoted with its offsets
    code, out, err = run(capsys, "near", "--passages", "--text", queries[0], "--table", "docs", "--dsn", db.dsn,
                         "--limit", "1", "--min-containment", "0.1")
    assert code == 0, err
    best = docs.near(queries[0], min_containment=0.1, limit=1)
    lines = out.splitlines()
    assert lines[0] == f"text {queries[0][:40]!r}: {len(best)} rows share a passage of 12 tokens or more"
    m = best[0]
    assert lines[1] == f"  {m.key}"
    assert lines[2] == (f"    {m.row_in_text:.0%} of the row is in the text, {m.text_in_row:.0%} of the text is in the "
                        f"row; {m.passage_count} passages, {m.shared_tokens} tokens")
    p = m.passages[0]
    assert lines[3].startswith(f"    text {p.a_char_start}-{p.a_char_end}, row {p.b_char_start}-{p.b_char_end} "
                               f"({p.length} tokens): \"")
    assert len(lines) == 3 + m.passage_count


def test_quotes_are_short_and_on_one_line() -> None:
    assert quote("a  b\nc", 0, 6) == "a b c"
    long = " ".join(f"w{i}" for i in range(100))
    assert quote(long, 0, len(long)) == "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 … w93 w94 w95 w96 w97 w98 w99"
    assert quote(long, 3, 300) == "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 … w70 w71 w72 w73 w74 w75 w76 w7"
    han = "中文字" * 40
    assert quote(han, 0, len(han)) == han[:30] + " … " + han[-30:]


def test_near_passages_errors(db, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, content text, hashes bigint[])")
    code, _, err = run(capsys, "near", "--passages", "--text", "x", "--table", "docs", "--column", "hashes",
                       "--text-column", "content", "--dsn", db.dsn)
    assert code != 0 and "no simpg passage index on public.docs.hashes" in err
    PassageColumn(conn, "docs", "hashes", text_column="content").create(8, 8)
    for argv, message in [(["--min-containment", "2"], "min_containment must be a number from 0 to 1, got 2.0"),
                          (["--min-tokens", "5"], "min_tokens must be an integer of at least 12"),
                          (["--text-column", "nope"], "column nope of table public.docs does not exist"),
                          (["--collection", "c"], "--collection applies to the table simpg_documents, not 'docs'")]:
        code, _, err = run(capsys, "near", "--passages", "--text", "x", "--table", "docs", "--column", "hashes",
                           "--text-column", "content", *argv, "--dsn", db.dsn)
        assert code != 0 and message in err, err
    code, _, err = run(capsys, "near", "--passages", "--dsn", db.dsn, "--table", "docs")
    assert code != 0 and "nothing to look up; give --text or --file" in err
    code, _, err = run(capsys, "near", "--passages", "42", "--text", "x", "--dsn", db.dsn)
    assert code != 0 and "--passages looks up texts (--text, --file), not fingerprints" in err
    code, _, err = run(capsys, "near", "--text", "x", "--min-tokens", "60", "--dsn", db.dsn)
    assert code != 0 and "--min-tokens applies to --passages lookups" in err


def test_near_passages_on_the_reference_table(db, capsys: pytest.CaptureFixture[str]) -> None:
    dsn = db.dsn
    conn = db.conn
    assert main(["dedup", str(CORPUS), "--dsn", dsn, "--collection", "one"]) == 0
    assert main(["dedup", str(CORPUS), "--dsn", dsn, "--collection", "two"]) == 0
    capsys.readouterr()
    # simpg dedup stores every document with its passage hashes; rows of an older simpg have
    # none (NULL): near --passages says so, and simpg backfill --passages fills them
    assert conn.execute("SELECT count(*) FROM simpg_documents WHERE passages IS NULL").fetchone() == (0,)
    conn.execute("UPDATE simpg_documents SET passages = NULL WHERE collection = 'two'")
    code, _, err = run(capsys, "near", "--passages", "--dsn", dsn, "--collection", "two", "--text", "x")
    assert code == 0 and "rows of collection 'two' have no passage hashes" in err and "backfill --passages" in err
    code, _, err = run(capsys, "backfill", "--dsn", dsn, "--table", "simpg_documents", "--text-column", "body",
                       "--passages")
    assert code == 0, err
    assert conn.execute("SELECT count(*) FROM simpg_documents WHERE passages IS NULL").fetchone() == (0,)
    rows = dict(conn.execute("SELECT id, body FROM simpg_documents").fetchall())
    collection = dict(conn.execute("SELECT id, collection FROM simpg_documents").fetchall())
    rng = random.Random(2)
    source = max(rows.values(), key=len)
    words = source.split()
    query = random_text(rng, 30, VOCAB) + " " + " ".join(words[10:90]) + " " + random_text(rng, 30, VOCAB)
    expected = expected_matches(query, rows, 50)
    assert expected  # the text copies a passage of stored documents
    code, out, err = run(capsys, "near", "--passages", "--text", query, "--dsn", dsn, "--json")
    assert code == 0, err
    (item,) = json.loads(out)
    assert {m["key"] for m in item["matches"]} == set(expected)
    assert all(m["source"] and "title" in m for m in item["matches"])
    code, out, err = run(capsys, "near", "--passages", "--text", query, "--dsn", dsn, "--json", "--collection", "two",
                         "--limit", "1")
    assert code == 0, err
    (item,) = json.loads(out)
    assert len(item["matches"]) == 1 and collection[item["matches"][0]["key"]] == "two"
    code, out, err = run(capsys, "near", "--passages", "--text", query, "--dsn", dsn)
    assert code == 0, err
    assert out.startswith(f"text {query[:40]!r}: {len(expected)} rows share a passage of 50 tokens or more\n")
