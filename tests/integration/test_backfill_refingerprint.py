"""A new default is a new config identity: an existing table moves to it in place (issue 14 item 6).

``simpg backfill --refingerprint`` fingerprints every row again with the new config, writes
the fingerprints that changed (the generated prefix columns follow), and only then records
the new config on the index. Format 1 fingerprints can no longer be computed, so
fingerprints of another config stand in for them; the index records format 1's default
identity, as simpg backfill 0.2 did.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from simpg import backfill, bits
from simpg.cli import main
from simpg.exc import SimpgError
from simpg.fingerprint import BANDS, FingerprintConfig, fingerprint, sketch, sketch_and_bands
from simpg.fingerprint.minhash import from_sql, to_sql
from simpg.psycopg import SimHashColumn

OLD_IDENTITY = "simpg-fp1:87fc02debb4e04b3"  # FingerprintConfig() of format version 1
STAND_IN = FingerprintConfig(ngram=3)  # makes the "old" fingerprints
NEW = FingerprintConfig()
RULE = "_" * 79


def bodies() -> list[str | None]:
    prose = [f"the committee met on day {i} and agreed to repaint fence number {i % 7} near the park"
             for i in range(60)]
    pages = [f"page{i}(n)  Tk Built-In Commands\n{RULE}\nNAME\n page{i} - widget {i}\n{RULE}\n"
             f"DESCRIPTION\n the widget number {i} draws {i * 3} squares in a row" for i in range(30)]
    return [*prose, *pages, RULE, "=" * 40 + "\n" + "-" * 40, None, ""]


def make_items(conn: psycopg.Connection) -> list[str | None]:
    texts = bodies()
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, body text, fp bigint)")
    rows = []
    for i, text in enumerate(texts):
        try:
            old = bits.to_db(fingerprint(text, STAND_IN)) if text else None
        except ValueError:
            old = None
        rows.append((i, text, old))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s)", rows)
    conn.execute("SELECT simpg.create_index('items', 'fp', 3, 5, fingerprint_config => %s)", [OLD_IDENTITY])
    return texts


def expected(text: str | None) -> int | None:
    try:
        return fingerprint(text, NEW) if text else None
    except ValueError:  # nothing but separators: no fingerprint under the new config
        return None


def stored(conn: psycopg.Connection) -> dict[int, int | None]:
    return {i: None if fp is None else bits.from_db(fp) for i, fp in conn.execute("SELECT id, fp FROM items")}


def recorded(conn: psycopg.Connection) -> str:
    row = conn.execute("SELECT fingerprint_config FROM simpg.indexes WHERE indexed_table = 'items'::regclass")
    return str(row.fetchone()[0])  # type: ignore[index]


def run(capsys: pytest.CaptureFixture[str], db: object, *extra: str) -> tuple[int, str, str]:
    code = main(["backfill", "--dsn", db.dsn, "--table", "items", "--text-column", "body",  # type: ignore[attr-defined]
                 "--column", "fp", "--batch-size", "25", "--json", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_refingerprint_moves_a_table_to_the_new_config(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    texts = make_items(conn)
    before = stored(conn)

    # the new config does not mix into the old fingerprints: refused, naming both and the way out
    code, _, err = run(capsys, db)
    assert code != 0
    assert OLD_IDENTITY in err and NEW.identity in err and "--refingerprint" in err
    with pytest.raises(SimpgError, match="older format than this simpg's .*simpg backfill --refingerprint"):
        SimHashColumn(conn, "items", "fp").add(texts=["a new article"], columns={"id": [1000]})
    assert stored(conn) == before and recorded(conn) == OLD_IDENTITY

    # a move interrupted after one batch: the index still records the old config
    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backfill.backfill_fingerprints(conn, "items", "body", "fp", config=NEW, batch_size=25,
                                       refingerprint=True, progress=stop)
    assert recorded(conn) == OLD_IDENTITY
    assert sum(stored(conn)[i] != before[i] for i in before) > 0

    # running it again finishes the move
    code, out, err = run(capsys, db, "--refingerprint")
    assert code == 0, err
    result = json.loads(out)
    after = stored(conn)
    assert after == {i: expected(text) for i, text in enumerate(texts)}
    assert after[90] is None and after[91] is None  # separator lines only: no fingerprint now, not the old one
    assert result["skipped"] == 4 and result["rows"] > 0
    assert recorded(conn) == NEW.identity
    assert conn.execute("SELECT problem FROM simpg.check('items')").fetchall() == []
    # the prefix columns followed the fingerprints: the index answers exactly
    values = {i: v for i, v in after.items() if v is not None}
    for q in list(values.values())[::7]:
        got = conn.execute("SELECT id FROM simpg.near(NULL::items, %s, 3)", [bits.to_db(q)]).fetchall()
        assert sorted(r[0] for r in got) == sorted(i for i, v in values.items() if bits.hamming(v, q) <= 3)
    # the old config is refused now, texts are fingerprinted with the new one
    code, _, err = run(capsys, db, "--config", STAND_IN.to_json())
    assert code != 0 and NEW.identity in err
    index = SimHashColumn(conn, "items", "fp")
    article = "a new article about fences"
    assert index.add(texts=[article], config=NEW, columns={"id": [1000], "body": [article]}) == 1
    assert stored(conn)[1000] == fingerprint(article, NEW)

    # once moved, a second run changes nothing
    code, out, err = run(capsys, db, "--refingerprint")
    assert code == 0, err
    assert json.loads(out)["rows"] == 0 and recorded(conn) == NEW.identity


def test_refingerprint_keeps_a_json_config_as_json(db: object) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, body text, fp bigint)")
    conn.execute("INSERT INTO items VALUES (1, 'one two three four', NULL), (2, 'five six seven eight', NULL)")
    index = SimHashColumn(conn, "items", "fp")
    index.create(3, 4, config=STAND_IN)
    assert recorded(conn) == STAND_IN.to_json()
    backfill.backfill_fingerprints(conn, "items", "body", "fp", config=NEW, refingerprint=True)
    assert recorded(conn) == NEW.to_json()
    assert stored(conn) == {1: fingerprint("one two three four"), 2: fingerprint("five six seven eight")}


def test_refingerprint_without_an_index(db: object) -> None:
    conn = db.conn  # type: ignore[attr-defined]
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, body text, fp bigint)")
    conn.execute("INSERT INTO items VALUES (1, 'one two three four', 42), (2, %s, 43)", [RULE])
    result = backfill.backfill_fingerprints(conn, "items", "body", "fp", refingerprint=True)
    assert (result.rows, result.skipped, result.skipped_keys) == (2, 1, [2])
    assert stored(conn) == {1: fingerprint("one two three four"), 2: None}
    assert backfill.record_config(conn, "items", "fp", NEW) is False


def old_sketch(text: str) -> str:
    """A stand-in for a sketch of the previous format (SKETCH_VERSION 1 sketched this text otherwise)."""
    return to_sql(sketch(text + " of an older format"))


def sketches_and_keys(conn: psycopg.Connection) -> dict[int, tuple[bytes | None, tuple[int | None, ...]]]:
    rows = conn.execute("SELECT id, sk::text, sk_b0, sk_b1, sk_b2, sk_b3 FROM items")
    return {i: (from_sql(s), tuple(keys)) for i, s, *keys in rows}


def expected_sketch(text: str | None) -> tuple[bytes | None, tuple[int | None, ...]]:
    try:
        made, keys = sketch_and_bands(text) if text else (None, None)
    except ValueError:  # nothing to sketch
        made, keys = None, None
    return made, keys if keys is not None else (None,) * BANDS


def test_refingerprint_moves_sketches_and_band_keys_to_the_new_format(
        db: object, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: a new sketch format is a new config identity; --refingerprint --sketch-column --bands
    sketches every row again (and its band keys) before it records the new config."""
    conn = db.conn  # type: ignore[attr-defined]
    texts = make_items(conn)
    conn.execute("ALTER TABLE items ADD COLUMN sk bit(256), ADD COLUMN sk_b0 bigint, ADD COLUMN sk_b1 bigint, "
                 "ADD COLUMN sk_b2 bigint, ADD COLUMN sk_b3 bigint")
    for i, text in enumerate(texts):
        if text and any(c.isalnum() for c in text):
            conn.execute("UPDATE items SET sk = %s::bit(256), sk_b0 = 1, sk_b1 = 2, sk_b2 = 3, sk_b3 = %s "
                         "WHERE id = %s", (old_sketch(text), i, i))
    before = sketches_and_keys(conn)

    # a move interrupted while it sketches: fingerprints untouched, the old config still recorded
    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backfill.backfill_sketches(conn, "items", "body", "sk", band_columns=["sk_b0", "sk_b1", "sk_b2", "sk_b3"],
                                   batch_size=25, progress=stop, resketch=True)
    assert recorded(conn) == OLD_IDENTITY
    assert 0 < sum(sketches_and_keys(conn)[i] != before[i] for i in before) <= 25

    code, out, err = run(capsys, db, "--refingerprint", "--sketch-column", "sk", "--bands")
    assert code == 0, err
    result = json.loads(out)
    assert sketches_and_keys(conn) == {i: expected_sketch(text) for i, text in enumerate(texts)}
    assert result["sketches"]["rows"] > 0 and recorded(conn) == NEW.identity
    assert stored(conn) == {i: expected(text) for i, text in enumerate(texts)}
    # once moved, nothing changes
    code, out, err = run(capsys, db, "--refingerprint", "--sketch-column", "sk", "--bands")
    assert code == 0, err
    assert json.loads(out)["sketches"]["rows"] == 0 and json.loads(out)["rows"] == 0


def test_refingerprint_refuses_to_leave_a_guards_sketches_behind(
        db: object, capsys: pytest.CaptureFixture[str]) -> None:
    """A guard confirming with sketches: moving the fingerprints alone would compare new sketches with old."""
    conn = db.conn  # type: ignore[attr-defined]
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, body text, fp bigint, sk bit(256))")
    rows = [(i, f"note {i} about the garden and the {i * 7} roses in the yard", None, None) for i in range(5)]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s)", rows)
    code, _, err = run(capsys, db, "--sketch-column", "sk", "-k", "3")
    assert code == 0, err
    # no band columns here: the guard confirms by the sketch alone
    conn.execute("SELECT simpg.create_guard('items', 'fp', sketch_column => 'sk', bands => false)")
    code, _, err = run(capsys, db, "--refingerprint")
    assert code != 0 and "confirms with the sketches in column sk" in err and "--sketch-column sk" in err
    code, out, err = run(capsys, db, "--refingerprint", "--sketch-column", "sk")
    assert code == 0, err
    assert json.loads(out)["sketches"]["rows"] == 0  # made by this simpg already: nothing to move
