"""simpg.backfill, the library under ``simpg backfill``: any name works, composed by psycopg.sql (issue 15, item 5)."""

from __future__ import annotations

import json

import psycopg
import pytest

from simpg import backfill
from simpg.cli import main
from simpg.exc import SimpgError
from simpg.fingerprint import FingerprintConfig, fingerprint, minhash, sketch_and_bands
from simpg.layout import Layout
from simpg.psycopg import SimHashColumn

QUALIFIED = '"Odd ""Schema"""."My Table.x"'
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()


def make_table(conn: psycopg.Connection, key_type: str) -> list[str]:
    conn.execute('CREATE SCHEMA "Odd ""Schema"""')
    conn.execute(f'CREATE TABLE {QUALIFIED} ("Key Col" {key_type} PRIMARY KEY, "Body; Text" text)')
    bodies = [" ".join(WORDS[(i + j) % 10] for j in range(12)) + f" {i}" for i in range(120)]
    with conn.cursor() as cur:
        cur.executemany(f'INSERT INTO {QUALIFIED} VALUES (%s, %s)',
                        [(i if key_type == "bigint" else f"key {i:03}", b) for i, b in enumerate(bodies)])
    conn.execute(f"ANALYZE {QUALIFIED}")
    return bodies


@pytest.mark.parametrize("key_type", ["bigint", "character varying(20)"])
def test_library_with_names_that_need_quoting(db: object, key_type: str) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    bodies = make_table(conn, key_type)
    fp_column, sketch_column = 'Sim"Hash', "sk etch"
    config = FingerprintConfig()
    layout = backfill.layout_to_build(conn, QUALIFIED, "Body; Text", fp_column, config=config, k=3, blocks=5,
                                      sketch_column=sketch_column)
    assert layout == Layout(3, (5,))
    assert backfill.add_fingerprint_column(conn, QUALIFIED, fp_column) is True
    assert backfill.add_fingerprint_column(conn, QUALIFIED, fp_column) is False
    filled = backfill.backfill_fingerprints(conn, QUALIFIED, "Body; Text", fp_column, batch_size=50)
    assert (filled.rows, filled.batches) == (120, 3)
    assert backfill.add_sketch_column(conn, QUALIFIED, sketch_column) is True
    assert backfill.backfill_sketches(conn, QUALIFIED, "Body; Text", sketch_column, batch_size=50).rows == 120
    built = backfill.build_index(conn, QUALIFIED, fp_column, k=3, blocks=5, fingerprint_config=config.identity)
    assert (built.layout, built.indexes_built, built.resumed) == ("k3:5", 10, False)
    assert conn.execute("SELECT count(*) FROM simpg.check(%s::regclass, %s, true)",
                        [QUALIFIED, fp_column]).fetchone() == (0,)
    # the index answers, and its B-trees have simpg.create_index's names and fill factor
    index = SimHashColumn(conn, QUALIFIED, fp_column)
    assert index.layout == Layout(3, (5,))
    first = 0 if key_type == "bigint" else "key 000"
    assert index.near(fingerprint(bodies[0]), 0)[0].id == first
    options = conn.execute(
        "SELECT DISTINCT c.reloptions FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = %s::regclass AND NOT i.indisprimary", [QUALIFIED]).fetchall()
    assert options == [(["fillfactor=100"],)]
    # a second run resumes: nothing to build
    again = backfill.build_index(conn, QUALIFIED, fp_column, k=3, blocks=5, fingerprint_config=config.identity)
    assert (again.resumed, again.indexes_built, again.alter_seconds >= 0) == (True, 0, True)


def test_cli_with_names_that_need_quoting(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    make_table(conn, "bigint")
    code = main(["backfill", "--dsn", db.dsn, "--table", QUALIFIED,  # type: ignore[attr-defined]
                 "--text-column", "Body; Text", "--column", "fp", "-k", "3", "--blocks", "4", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert (result["rows"], result["index"]["layout"], result["index"]["indexes_built"]) == (120, "k3:4", 4)


def test_old_import_path_still_works() -> None:
    from simpg.commands import backfill as command

    assert command.build_index is backfill.build_index
    assert command.BackfillResult is backfill.BackfillResult
    with pytest.raises(AttributeError):
        command.no_such_name  # noqa: B018


def test_band_keys_backfilled_then_found_by_duplicates(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    """``simpg backfill --sketch-column --bands``: an existing table gets sketches and band keys (issue 14)."""
    conn = db.conn  # type: ignore[attr-defined]
    bodies = make_table(conn, "bigint")
    short = "two words"  # too few shingles for band keys: they stay NULL, the sketch is written
    long = [" ".join(f"{WORDS[i % 10]}{i % 37}" for i in range(n, n + 200)) for n in (0, 3)]  # near each other
    long.append(" ".join(f"other{i}" for i in range(200)))  # unrelated
    texts = {**dict(enumerate(bodies)), 500: short, 600: long[0], 601: long[1], 602: long[2]}
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {QUALIFIED} VALUES (%s, %s)", [(k, t) for k, t in texts.items() if k >= 500])
    args = ["backfill", "--dsn", db.dsn, "--table", QUALIFIED, "--text-column", "Body; Text",  # type: ignore[attr-defined]
            "--column", "fp", "-k", "3", "--blocks", "4", "--sketch-column", "sk", "--bands", "--json"]
    assert main(args) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert (result["sketches"]["rows"], result["sketches"]["skipped"]) == (124, 0)
    bands = ["sk_b0", "sk_b1", "sk_b2", "sk_b3"]
    stored = {row[0]: row[1:] for row in conn.execute(
        f'SELECT "Key Col", sk::text, sk_b0, sk_b1, sk_b2, sk_b3 FROM {QUALIFIED}')}
    for key, body in texts.items():
        made, keys = sketch_and_bands(body)
        assert (minhash.from_sql(stored[key][0]), *stored[key][1:]) == (made, *(keys or (None,) * 4)), key
    assert stored[500][1:] == (None,) * 4
    valid = conn.execute("SELECT count(*) FROM pg_index WHERE indrelid = %s::regclass AND indisvalid "
                         "AND indkey::text = ANY(SELECT attnum::text FROM pg_attribute WHERE attrelid = "
                         "%s::regclass AND attname = ANY(%s))", [QUALIFIED, QUALIFIED, bands]).fetchone()
    assert valid == (4,)
    # a second run changes nothing (the short text is read again: its keys stay NULL)
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["sketches"]["rows"], again["sketches"]["column_added"]) == (0, False)
    # duplicates(band_keys=) over the backfilled rows equals a brute force: within k or sharing a
    # band, and confirmed by the sketch
    index = SimHashColumn(conn, QUALIFIED, "fp")
    made, keys = sketch_and_bands(long[0])
    assert keys is not None
    found = {d.id for d in index.duplicates(fingerprint(long[0]), made, k=0, sketch_column="sk",
                                            band_keys=keys, band_columns=bands)}
    expected = set()
    for key, text in texts.items():
        other, other_keys = sketch_and_bands(text)
        near = fingerprint(text) == fingerprint(long[0]) or any(
            a == b for a, b in zip(other_keys or (), keys, strict=False))
        if near and minhash.sketch_distance(other, made) <= minhash.MAX_SKETCH_DISTANCE:
            expected.add(key)
    assert found == expected and {600, 601} <= found and 602 not in found


def test_bands_need_a_sketch_column(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["backfill", "--dsn", db.dsn, "--table", "t", "--text-column", "b",  # type: ignore[attr-defined]
                 "--column", "fp", "--bands"])
    assert (code, capsys.readouterr().err) == (
        1, "simpg: --bands needs --sketch-column: the band keys come from the same minima as the sketch\n")


def test_column_type_names_the_type_or_none(db: object) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    make_table(conn, "bigint")
    conn.execute(f'ALTER TABLE {QUALIFIED} ADD COLUMN "sk etch" bit(256), ADD COLUMN gone bigint')
    conn.execute(f"ALTER TABLE {QUALIFIED} DROP COLUMN gone")
    assert backfill.column_type(conn, QUALIFIED, "sk etch") == "bit(256)"
    assert backfill.column_type(conn, QUALIFIED, "Key Col") == "bigint"
    assert backfill.column_type(conn, QUALIFIED, "gone") is None  # dropped columns are not there
    assert backfill.column_type(conn, QUALIFIED, "ctid") is None  # nor system columns
    with pytest.raises(SimpgError, match="^table no_such_table does not exist$"):
        backfill.column_type(conn, "no_such_table", "x")
