"""``simpg backfill --passages``: the column filled in resumable batches, the passage index built, window moves."""

from __future__ import annotations

import json
import random

import psycopg
import pytest

from simpg import backfill
from simpg.cli import main
from simpg.exc import SimpgError
from simpg.passages import PassageConfig, passage_hashes
from simpg.passages.lookup import verify
from tests.integration.passage_corpus import brute_matches, corpus, words

WINDOW = 8
SPACELESS_WINDOW = 6
CONFIG = PassageConfig(WINDOW, SPACELESS_WINDOW)


def make_table(conn: psycopg.Connection, name: str, texts: list[str | None], partitioned: bool = False) -> None:
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, body text)"
                 + (" PARTITION BY HASH (id)" if partitioned else ""))
    if partitioned:
        for r in range(2):
            conn.execute(f"CREATE TABLE {name}_{r} PARTITION OF {name} FOR VALUES WITH (MODULUS 2, REMAINDER {r})")
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {name} VALUES (%s, %s)", list(enumerate(texts, start=1)))


def texts() -> list[str | None]:
    return [*corpus(6, 150, CONFIG.guarantee), None, ""]


def cli(capsys: pytest.CaptureFixture[str], db: object, table: str, *extra: str) -> tuple[int, dict | None, str]:
    code = main(["backfill", "--dsn", db.dsn, "--table", table, "--text-column", "body",  # type: ignore[attr-defined]
                 "--passages", "--window", str(WINDOW), "--spaceless-window", str(SPACELESS_WINDOW), "--batch-size",
                 "20", "--json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def column(conn: psycopg.Connection, table: str) -> list[tuple[int, list[int] | None]]:
    return conn.execute(f"SELECT id, passages FROM {table} ORDER BY id").fetchall()


def catalog(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT indexed_table::text, passage_column, passage_window, spaceless_window, index_name "
                        "FROM simpg.passage_indexes ORDER BY 1").fetchall()


class Stop(Exception):
    pass


def stop_after(batches: int):
    seen = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if len(seen) == batches:
            raise Stop

    return progress


def test_resumed_after_an_interruption_equals_one_shot(capsys, db):
    data = texts()
    make_table(db.conn, "once", data)
    make_table(db.conn, "twice", data)
    code, once, err = cli(capsys, db, "once")
    assert code == 0, err
    assert once["column_added"] and once["rows"] == len(data) - 1 and once["skipped"] == 1
    assert once["index"]["built"] and once["index"]["concurrently"]

    backfill.add_passage_column(db.conn, "twice")
    with pytest.raises(Stop):
        backfill.backfill_passages(db.conn, "twice", "body", config=CONFIG, batch_size=20, progress=stop_after(3))
    partial = column(db.conn, "twice")
    assert 0 < sum(v is not None for _, v in partial) < len(data) - 1
    code, resumed, err = cli(capsys, db, "twice")
    assert code == 0, err
    assert not resumed["column_added"] and resumed["rows"] == len(data) - 1 - 60  # three batches were written
    assert [v for _, v in column(db.conn, "twice")] == [v for _, v in column(db.conn, "once")]
    expected = [None if t is None else passage_hashes(t, CONFIG) for t in data]
    assert [v for _, v in column(db.conn, "once")] == expected
    assert catalog(db.conn) == [("once", "passages", WINDOW, SPACELESS_WINDOW, "once_passages_keys_idx"),
                                ("twice", "passages", WINDOW, SPACELESS_WINDOW, "twice_passages_keys_idx")]

    # a run again changes nothing; a stopped concurrent build (an INVALID index) is built again
    db.conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'once_passages_keys_idx'::regclass")
    code, again, err = cli(capsys, db, "once")
    assert code == 0, err
    assert again["rows"] == 0 and again["index"]["invalid_dropped"] == ["once_passages_keys_idx"]
    assert catalog(db.conn)[0] == ("once", "passages", WINDOW, SPACELESS_WINDOW, "once_passages_keys_idx")


def test_the_backfilled_table_answers_lookups_exactly(capsys, db):
    data = texts()
    make_table(db.conn, "items", data)
    assert cli(capsys, db, "items")[0] == 0
    (statement,) = db.conn.execute("SELECT simpg.passage_lookup_statement('items', 'passages', 'body')").fetchone()
    rows = {i: t for i, t in enumerate(data, start=1) if t is not None}
    rng = random.Random(2)
    for query in [data[i] for i in rng.sample(range(3, 140), 5)] + [" ".join(words(rng, 30))]:
        candidates = psycopg.RawCursor(db.conn).execute(statement, [passage_hashes(query, CONFIG), None]).fetchall()
        found = verify(query, CONFIG, candidates)
        assert {m.key for m in found} == set(brute_matches(query, rows, CONFIG.guarantee))


def test_a_window_move(capsys, db):
    data = texts()
    make_table(db.conn, "items", data)
    assert cli(capsys, db, "items")[0] == 0
    new = PassageConfig(12, SPACELESS_WINDOW)
    code, _, err = cli(capsys, db, "items", "--window", "12")
    assert code != 0 and "has a simpg passage index with windows 8 and 6, not windows 12 and 6" in err
    assert "--refingerprint" in err
    assert catalog(db.conn) == [("items", "passages", WINDOW, SPACELESS_WINDOW, "items_passages_keys_idx")]

    # a move stopped half-way: the index is gone (lookups refuse), some rows have the new window
    with pytest.raises(Stop):
        backfill.backfill_passages(db.conn, "items", "body", config=new, batch_size=20, refill=True,
                                   progress=stop_after(2))
    assert catalog(db.conn) == []
    with pytest.raises(psycopg.errors.UndefinedObject, match=r"no simpg passage index on (public\.)?items\.passages"):
        db.conn.execute("SELECT simpg.passage_lookup_statement('items', 'passages', 'body')")
    code, _, err = cli(capsys, db, "items", "--window", "12")  # without --refingerprint: refused, rows are mixed
    assert code != 0 and "holds hashes that are not those of windows 12 and 6" in err
    assert catalog(db.conn) == []
    code, moved, err = main_refill(capsys, db)
    assert code == 0, err
    assert moved["rows"] > 0 and (moved["index"]["window"], moved["index"]["spaceless_window"]) == (12, 6)
    assert [v for _, v in column(db.conn, "items")] == [None if t is None else passage_hashes(t, new) for t in data]
    assert catalog(db.conn) == [("items", "passages", 12, SPACELESS_WINDOW, "items_passages_keys_idx")]


def main_refill(capsys, db):
    code = main(["backfill", "--dsn", db.dsn, "--table", "items", "--text-column", "body", "--passages",
                 "--window", "12", "--spaceless-window", str(SPACELESS_WINDOW), "--refingerprint", "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_partitioned_table_and_bad_input(capsys, db):
    make_table(db.conn, "parts", texts()[:40], partitioned=True)
    code, result, err = cli(capsys, db, "parts")
    assert code == 0, err
    assert result["index"]["built"] and not result["index"]["concurrently"]
    assert catalog(db.conn) == [("parts", "passages", WINDOW, SPACELESS_WINDOW, "parts_passages_keys_idx")]

    db.conn.execute("CREATE TABLE wrong (id bigint PRIMARY KEY, body text, passages bigint)")
    code, _, err = cli(capsys, db, "wrong")
    assert code != 0 and "column wrong.passages is bigint, expected bigint[]" in err
    code, _, err = cli(capsys, db, "wrong", "-k", "3")
    assert code != 0 and "-k is for fingerprints, not with --passages" in err
    code, _, err = cli(capsys, db, "wrong", "--window", "0")
    assert code != 0 and "invalid --window or --spaceless-window: expected window >= 1, got 0" in err
    code, _, err = cli(capsys, db, "wrong", "--spaceless-window", "0")
    assert code != 0 and "invalid --window or --spaceless-window: expected spaceless_window >= 1, got 0" in err
    with pytest.raises(SimpgError, match="batch size must be a positive integer, got 0"):
        backfill.backfill_passages(db.conn, "parts", "body", batch_size=0)
