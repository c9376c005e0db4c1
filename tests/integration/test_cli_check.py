"""``simpg check`` and ``simpg repair`` on indexes damaged by hand, on real servers."""

from __future__ import annotations

import json

import psycopg
import pytest

from simpg.cli import main
from simpg.layout import Layout
from simpg.passages import DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW
from simpg.psycopg import SimHashColumn
from tests.integration.psycopg_tables import make_table
from tests.oracles import brute_near_numbered, planted_corpus

LAYOUT = Layout(3, (5,))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def docs(conn: psycopg.Connection, seed: int) -> tuple[SimHashColumn, list[int], list[int]]:
    rows, queries = planted_corpus(seed, LAYOUT.k, n=200)
    return make_table(conn, LAYOUT, rows), rows, queries


def assert_exact(index: SimHashColumn, rows: list[int], queries: list[int]) -> None:
    expected = [brute_near_numbered(rows, q, LAYOUT.k) for q in queries]
    assert [index.near(q) for q in queries] == expected
    assert index.near_many(queries) == expected


def test_a_healthy_table(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    docs(db.conn, 41)  # type: ignore[attr-defined]
    code, out, err = run(capsys, "check", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert (code, err) == (0, "")
    assert out == ("docs.simhash: ok (k3:5, 10 prefix columns with their B-trees)\n"
                   "docs: no problems (stored prefix values not read; --verify-rows compares them with "
                   "simpg.permute)\n")
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "public.docs", "--column", "simhash",  # type: ignore[attr-defined]
                       "--verify-rows")
    assert code == 0 and out.endswith("docs: no problems (stored prefix values verified)\n")
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--json")  # type: ignore[attr-defined]
    report = json.loads(out)
    assert code == 0 and report["problems"] == [] and report["verify_rows"] is False
    assert report["indexes"] == [{
        "column": "simhash", "layout": "k3:5", "k": 3, "levels": [5],
        "prefix_columns": [f"simhash_p{t}" for t in range(10)],
        "index_names": [f"docs_simhash_p{t}_idx" for t in range(10)]}]
    code, out, _ = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert (code, out) == (0, "-- docs: nothing to repair; no problems left\n")


def test_an_interrupted_concurrent_build(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    index, rows, queries = docs(conn, 42)
    conn.execute("DROP INDEX docs_simhash_p2_idx")
    with pytest.raises(psycopg.errors.UniqueViolation):  # fails half way: an INVALID index is left
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY docs_simhash_p2_idx ON docs (simhash_p2)")
    code, out, err = run(capsys, "check", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "docs.simhash: missing b-tree: no valid B-tree on column simhash_p2 (answers stay exact, but read "
        "the whole table)",
        "docs.simhash: invalid index: index docs_simhash_p2_idx on column simhash_p2 is invalid (an "
        "interrupted CREATE INDEX CONCURRENTLY?)",
        "docs: 2 problems; run simpg repair --table docs",
    ]
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--json")  # type: ignore[attr-defined]
    assert code == 1
    assert [(p["column"], p["problem"]) for p in json.loads(out)["problems"]] == [
        ("simhash", "missing b-tree"), ("simhash", "invalid index")]
    code, out, err = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "DROP INDEX public.docs_simhash_p2_idx;",
        "CREATE INDEX docs_simhash_p2_idx ON public.docs (simhash_p2) WITH (fillfactor = 100);",
        "-- docs: 2 statements run; no problems left",
    ]
    assert run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--verify-rows")[0] == 0  # type: ignore[attr-defined]
    assert_exact(index, rows, queries)


def test_a_dropped_prefix_column(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    index, rows, queries = docs(conn, 43)
    conn.execute("ALTER TABLE docs DROP COLUMN simhash_p6")
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--column", "simhash")  # type: ignore[attr-defined]
    assert code == 1
    assert out.splitlines() == [
        "docs.simhash: missing prefix column: table 6 of k=3 blocks=5: no column simpg.permute(simhash, 3, "
        "'{5}'::integer[], 6)",
        "docs: 1 problem; run simpg repair --table docs --column simhash (it drops the damaged index's "
        "prefix columns: create the index again afterwards)",
    ]
    code, out, _ = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs", "--column", "simhash",  # type: ignore[attr-defined]
                       "--json")
    report = json.loads(out)
    assert code == 0 and report["removed"] == ["simhash"] and report["problems"] == []
    assert report["statements"] == ["ALTER TABLE public.docs " + ", ".join(
        f"DROP COLUMN simhash_p{t}" for t in range(10) if t != 6)]
    code, _, err = run(capsys, "check", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert (code, err) == (1, "simpg: no simpg index on docs\n")
    index.create(LAYOUT.k, *LAYOUT.levels)
    assert run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--verify-rows")[0] == 0  # type: ignore[attr-defined]
    assert_exact(index, rows, queries)


def test_repair_says_what_it_removed_in_text(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    docs(conn, 44)
    conn.execute("ALTER TABLE docs DROP COLUMN simhash_p0")
    code, out, _ = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert code == 0
    assert out.splitlines()[1:] == [
        "-- docs.simhash: a prefix column was missing, so the others were dropped; create the index again "
        "(simpg.create_index, or simpg backfill --k)",
        "-- docs: 1 statement run; no problems left",
    ]


def test_stale_prefix_values_need_verify_rows(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    docs(conn, 45)
    conn.execute("CREATE OR REPLACE FUNCTION simpg.apply_segments(fp bigint, segs bigint[]) RETURNS bigint "
                 "LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN fp")  # an "upgrade" that changed permute()
    assert run(capsys, "check", "--dsn", db.dsn, "--table", "docs")[0] == 0  # type: ignore[attr-defined]
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--verify-rows")  # type: ignore[attr-defined]
    lines = out.splitlines()
    assert code == 1 and lines[0].startswith("docs.simhash: stale prefix values: ")
    assert all(": stale prefix values: " in line for line in lines[:-1])
    assert lines[-1] == (f"docs: {len(lines) - 1} problems; for several layouts or stale prefix values, "
                         "simpg.drop_index(table, column) and create the index again")


def test_several_layouts_are_left_to_the_owner(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    docs(conn, 46)
    conn.execute("ALTER TABLE docs " + ", ".join(  # a second, complete layout (k2:4, 6 tables) without B-trees
        f"ADD COLUMN extra_{t} bigint GENERATED ALWAYS AS (simpg.permute(simhash, 2, '{{4}}'::integer[], {t})) STORED"
        for t in range(6)))
    code, out, _ = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    lines = out.splitlines()
    assert code == 1
    assert lines[:6] == [f"CREATE INDEX docs_extra_{t}_idx ON public.docs (extra_{t}) WITH (fillfactor = 100);"
                         for t in range(6)]
    assert lines[6:] == [
        "-- docs.simhash: several layouts: k=2 blocks=4 is one of several layouts on this column; keep one",
        "-- docs.simhash: several layouts: k=3 blocks=5 is one of several layouts on this column; keep one",
        "-- docs: 2 problems left; for several layouts or stale prefix values, simpg.drop_index(table, column) "
        "and create the index again",
    ]


def test_two_indexed_columns_and_column_filter(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    docs(conn, 47)
    conn.execute("ALTER TABLE docs ADD COLUMN other bigint")
    conn.execute("SELECT simpg.create_index('docs', 'other', 2, 4)")
    conn.execute("DROP INDEX docs_other_p1_idx")
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert code == 1 and out.splitlines()[0].startswith("docs.other: missing b-tree: ")
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs", "--column", "simhash")  # type: ignore[attr-defined]
    assert code == 0 and out.startswith("docs.simhash: ok (k3:5, ")
    code, out, _ = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs", "--column", "simhash")  # type: ignore[attr-defined]
    assert (code, out) == (0, "-- docs: nothing to repair; no problems left\n")
    code, out, _ = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert code == 0 and out.splitlines()[0] == (
        "CREATE INDEX docs_other_p1_idx ON public.docs (other_p1) WITH (fillfactor = 100);")
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", "docs")  # type: ignore[attr-defined]
    assert code == 0 and out.splitlines()[:2] == [
        "docs.other: ok (k2:4, 6 prefix columns with their B-trees)",
        "docs.simhash: ok (k3:5, 10 prefix columns with their B-trees)"]


def test_repair_gives_up_on_a_busy_table(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    docs(conn, 48)
    conn.execute("DROP INDEX docs_simhash_p0_idx")
    with psycopg.connect(db.dsn) as other:  # type: ignore[attr-defined]
        other.execute("UPDATE docs SET note = 'x' WHERE id = 1")  # holds ROW EXCLUSIVE until rollback
        code, _, err = run(capsys, "repair", "--dsn", db.dsn, "--table", "docs",  # type: ignore[attr-defined]
                           "--lock-timeout", "200ms")
    assert code == 1 and err.startswith("simpg: database error: canceling statement due to lock timeout")
    assert err.count("\n") == 1
    assert run(capsys, "repair", "--dsn", db.dsn, "--table", "docs")[0] == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["check", "repair"])
@pytest.mark.parametrize("argv, message", [
    (["--table", "nope"], 'simpg: relation "nope" does not exist'),
    (["--table", "plain"], "simpg: no simpg index on plain"),
    (["--table", "docs", "--column", "id"], "simpg: no simpg index on docs.id"),
])
def test_errors_are_one_line(db: object, capsys: pytest.CaptureFixture[str], command: str, argv: list[str],
                             message: str) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    docs(conn, 49)
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, fp bigint)")
    code, out, err = run(capsys, command, "--dsn", db.dsn, *argv)  # type: ignore[attr-defined]
    assert (code, out) == (1, "") and err.startswith(message) and err.count("\n") == 1, err


@pytest.mark.parametrize("command", ["check", "repair"])
def test_a_database_is_required(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                command: str) -> None:
    monkeypatch.delenv("SIMPG_DSN", raising=False)
    assert run(capsys, command, "--table", "docs") == (1, "", "simpg: no database given; pass --dsn or set SIMPG_DSN\n")


def test_a_passage_column_too_coarse_or_without_its_index(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    dsn = db.dsn  # type: ignore[attr-defined]
    conn.execute("CREATE TABLE notes (id bigint PRIMARY KEY, body text, passages bigint[])")
    conn.execute("INSERT INTO notes SELECT g, 'b', ARRAY[g] FROM generate_series(1, 70000) AS g")
    conn.execute("ANALYZE notes")  # 70,000 rows want 20 key bits
    conn.execute("SELECT simpg.create_passage_index('notes', 'passages', key_bits => 20)")
    code, out, err = run(capsys, "check", "--dsn", dsn, "--table", "notes")
    assert (code, err) == (0, "")
    assert out == "notes.passages: ok (passage index on its keys)\nnotes: no problems (stored prefix values not " \
                  "read; --verify-rows compares them with simpg.permute)\n"
    conn.execute("SELECT simpg.create_passage_index('notes', 'passages', key_bits => 16)")
    code, out, _ = run(capsys, "check", "--dsn", dsn, "--table", "notes", "--column", "passages")
    assert code == 1
    assert out.splitlines() == [
        "notes.passages: passage keys too coarse: index notes_passages_keys_idx1 on passage column passages has 16 "
        "key bits, 70000 rows want 20 (over 4 times the rows per key: lookups read that many more candidates): "
        f"SELECT simpg.create_passage_index('public.notes', 'passages', {DEFAULT_WINDOW}, "
        f"{DEFAULT_SPACELESS_WINDOW}, 20)",
        "notes: 1 problem; for a passage index, run the simpg.create_passage_index statement its line names"]
    conn.execute("DROP INDEX notes_passages_keys_idx1")
    code, out, _ = run(capsys, "check", "--dsn", dsn, "--table", "notes", "--json")
    assert code == 1 and [p["problem"] for p in json.loads(out)["problems"]] == ["missing passage index"]
