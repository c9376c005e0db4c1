"""simpg backfill: fingerprints and the index added to an existing table, on a real server."""

from __future__ import annotations

import json

import psycopg
import pytest

from simpg import bits
from simpg.cli import main
from simpg.fingerprint import FingerprintConfig, fingerprint
from simpg.sqlalchemy.index import PREFIX_INDEX_FILLFACTOR
from tests.integration.psycopg_tables import make_items_table


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["backfill", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_backfill_then_index(db, capsys):
    bodies = make_items_table(db.conn, 1500)
    config = FingerprintConfig(ngram=2)
    code, out, err = run_cli(
        capsys,
        "--dsn",
        db.dsn,
        "--table",
        "items",
        "--text-column",
        "body",
        "--column",
        "simhash",
        "--batch-size",
        "200",
        "--config",
        config.to_json(),
        "-k",
        "3",
        "--blocks",
        "5",
        "--json",
        "--progress",
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["column_added"] is True
    assert (result["rows"], result["skipped"], result["batches"]) == (1498, 2, 8)
    assert result["skipped_keys"] == [11, 12]
    assert result["index"]["layout"] == "k3:5"
    assert "simpg backfill: 1,500/1,500 rows (100%)" in err

    stored = {i: fp for i, fp in db.conn.execute("SELECT id, simhash FROM items")}
    for i, body in bodies.items():
        want = fingerprint(body, config) if body else None
        assert (bits.from_db(stored[i]) if stored[i] is not None else None) == want, i

    row = db.conn.execute("SELECT k, levels, fingerprint_config FROM simpg.indexes").fetchone()
    assert row == (3, [5], config.identity)
    valid = db.conn.execute(
        "SELECT count(*) FROM pg_index WHERE indrelid = 'items'::regclass "
        "AND indisvalid AND NOT indisprimary"
    ).fetchone()[0]
    assert valid == 10
    options = db.conn.execute(
        "SELECT DISTINCT c.reloptions FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'items'::regclass AND NOT x.indisprimary"
    ).fetchall()
    assert options == [([f"fillfactor={PREFIX_INDEX_FILLFACTOR}"],)]  # as simpg.create_index builds
    fps = [bits.from_db(v) for v in stored.values() if v is not None]
    for q in fps[:20] + [fps[0] ^ 0b111, fps[1] ^ (1 << 63)]:
        got = db.conn.execute(
            "SELECT id FROM simpg.near(NULL::items, %s, 3)", (bits.to_db(q),)
        ).fetchall()
        assert sorted(r[0] for r in got) == sorted(
            i for i, v in stored.items() if v is not None and bits.hamming(bits.from_db(v), q) <= 3
        )


def test_rerun_resumes_only_missing_rows(db, capsys):
    make_items_table(db.conn, 300)
    assert (
        run_cli(
            capsys,
            "--dsn",
            db.dsn,
            "--table",
            "items",
            "--text-column",
            "body",
            "--column",
            "fp",
            "--json",
        )[0]
        == 0
    )
    db.conn.execute("UPDATE items SET fp = NULL WHERE id % 7 = 0")
    db.conn.execute("INSERT INTO items (body) VALUES ('a late row written after the first run')")
    code, out, _ = run_cli(
        capsys,
        "--dsn",
        db.dsn,
        "--table",
        "items",
        "--text-column",
        "body",
        "--column",
        "fp",
        "--json",
    )
    result = json.loads(out)
    assert code == 0 and result["column_added"] is False
    assert result["rows"] == 300 // 7 + 1 and result["index"] is None
    code, out, _ = run_cli(
        capsys, "--dsn", db.dsn, "--table", "items", "--text-column", "body", "--column", "fp"
    )
    assert code == 0 and "fingerprints written" in out


def test_lock_timeout_gives_up_instead_of_queueing(db, capsys):
    make_items_table(db.conn, 20)
    with psycopg.connect(db.dsn) as other:  # a long transaction reading the table
        other.execute("SELECT count(*) FROM items").fetchone()
        code, _, err = run_cli(
            capsys,
            "--dsn",
            db.dsn,
            "--table",
            "items",
            "--text-column",
            "body",
            "--column",
            "simhash",
            "--lock-timeout",
            "200ms",
        )
    assert code == 1
    assert err.startswith("simpg: database error: canceling statement due to lock timeout")
    assert db.conn.execute("SELECT count(*) FROM items").fetchone() == (20,)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--table", "nope", "--text-column", "body", "--column", "fp"],
            "simpg: table nope does not exist",
        ),
        (
            ["--table", "items", "--text-column", "body", "--column", "body"],
            "simpg: column items.body is text, expected bigint",
        ),
        (
            ["--table", "items", "--text-column", "body", "--column", "fp", "--batch-size", "0"],
            "simpg: batch size must be a positive integer, got 0",
        ),
        (
            ["--table", "items", "--text-column", "body", "--column", "fp", "--config", "{bad"],
            "simpg: invalid --config '{bad'",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(db, capsys, argv, message):
    make_items_table(db.conn, 20)
    code, _, err = run_cli(capsys, "--dsn", db.dsn, *argv)
    assert code == 1 and err.startswith(message) and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--text-column", "nosuch"], "simpg: column nosuch of table items does not exist"),
        (["--text-column", "body", "-k", "3", "--blocks", "2"], "simpg: blocks must be greater than k"),
    ],
)
def test_refused_arguments_change_nothing(db, capsys, argv, message):
    """Issue 13 item 8: validate first, change after (no column fp9 left behind)."""
    make_items_table(db.conn, 20)
    code, _, err = run_cli(capsys, "--dsn", db.dsn, "--table", "items", "--column", "fp9", *argv)
    assert code == 1 and err.startswith(message), err
    columns = db.conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'items'::regclass "
                              "AND attname = 'fp9'").fetchone()
    assert columns == (0,)
