"""``simpg backfill --k`` killed while it builds the index, then run again (issue 13 item 6).

The index step adds every prefix column in one ALTER TABLE, then builds one B-tree per
column with CREATE INDEX CONCURRENTLY. A run killed there leaves the prefix columns,
some valid B-trees, perhaps one INVALID index, and no fingerprint config; running the
same command again must finish the job (before 0.2.0 it failed on "column already
exists"), and refuse leftovers of another layout before changing anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psycopg
import pytest

from simpg import bits
from simpg.cli import main
from simpg.fingerprint import FingerprintConfig
from tests.integration.psycopg_tables import make_items_table

CONFIG = FingerprintConfig(ngram=2)


def backfill_args(db: object, *extra: str, as_json: bool = True) -> list[str]:
    return ["backfill", "--dsn", db.dsn, "--table", "items", "--text-column", "body",  # type: ignore[attr-defined]
            "--column", "fp", "--config", CONFIG.to_json(), *(["--json"] if as_json else []), *extra]


def backfill(capsys: pytest.CaptureFixture[str], db: object, *extra: str) -> tuple[int, dict | None, str]:
    code = main(backfill_args(db, *extra))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def problems(conn: psycopg.Connection) -> list[tuple[str, str]]:
    return conn.execute("SELECT problem, detail FROM simpg.check('items')").fetchall()


def assert_complete_and_exact(conn: psycopg.Connection, layout: tuple[int, list[int]] = (3, [5])) -> None:
    """check is clean, the catalog has the config, and near equals brute force."""
    assert problems(conn) == []
    assert conn.execute("SELECT k, levels, fingerprint_config FROM simpg.indexes").fetchall() == [
        (*layout, CONFIG.identity)]
    stored = {i: bits.from_db(fp) for i, fp in conn.execute("SELECT id, fp FROM items WHERE fp IS NOT NULL")}
    assert conn.execute("SELECT count(*) FROM items WHERE fp IS NULL AND coalesce(body, '') <> ''").fetchone() == (0,)
    fps = list(stored.values())
    k = layout[0]
    for q in fps[:25] + [fps[0] ^ 0b111, fps[1] ^ (1 << 63), fps[2] ^ (1 << 0) ^ (1 << 40)]:
        got = conn.execute("SELECT id FROM simpg.near(NULL::items, %s, %s)", (bits.to_db(q), k)).fetchall()
        assert sorted(r[0] for r in got) == sorted(i for i, v in stored.items() if bits.hamming(v, q) <= k)


def index_state(conn: psycopg.Connection) -> list[tuple[str, bool]]:
    return conn.execute(
        "SELECT c.relname::text, x.indisvalid FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'items'::regclass AND NOT x.indisprimary ORDER BY 1").fetchall()


def interrupted(conn: psycopg.Connection, capsys: pytest.CaptureFixture[str], db: object) -> None:
    """What a run killed during its fourth CREATE INDEX CONCURRENTLY leaves (k3:5): all ten prefix
    columns, valid B-trees on fp_p0..fp_p2, an INVALID items_fp_p3_idx, nothing on fp_p4..fp_p9,
    no ANALYZE and no fingerprint config."""
    code, _, err = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 0, err
    for t in range(3, 10):
        conn.execute(f"DROP INDEX items_fp_p{t}_idx")
    conn.execute("COMMENT ON COLUMN items.fp_p0 IS NULL")  # register_index never ran
    with pytest.raises(psycopg.errors.UniqueViolation):  # rows 13 and 14 have equal texts
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY items_fp_p3_idx ON items (fp_p3)")
    assert index_state(conn) == [(f"items_fp_p{t}_idx", t < 3) for t in range(4)]
    conn.execute("UPDATE items SET fp = NULL WHERE id % 5 = 0")  # and rows the re-run must fill


def test_killed_during_create_index_concurrently_then_run_again(db, capsys):
    """The real thing: the CLI in its own process, killed while its first CREATE INDEX
    CONCURRENTLY waits, and its server process terminated (as a restart or a DBA would)."""
    conn = db.conn
    make_items_table(conn, 600)
    conn.execute("CREATE TABLE elsewhere (x int)")
    # an old snapshot (of another table: it blocks no lock on items): CREATE INDEX
    # CONCURRENTLY waits for it before it marks the index valid
    with psycopg.connect(db.dsn, autocommit=True) as holder:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM elsewhere").fetchone()
        proc = subprocess.Popen([sys.executable, "-m", "simpg", *backfill_args(db, "-k", "3", "--blocks", "5")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            pid = None
            deadline = time.monotonic() + 120
            while pid is None and time.monotonic() < deadline and proc.poll() is None:
                row = conn.execute(
                    "SELECT a.pid FROM pg_stat_activity AS a JOIN pg_stat_progress_create_index AS p USING (pid) "
                    "WHERE a.datname = current_database() AND a.query LIKE 'CREATE INDEX CONCURRENTLY%%' "
                    "AND p.phase = 'waiting for old snapshots'").fetchone()
                pid = row[0] if row else None
                time.sleep(0.05)
            assert pid is not None, proc.communicate(timeout=5)
        finally:
            proc.kill()
            proc.communicate()
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])
        holder.execute("ROLLBACK")
    for _ in range(100):  # the terminated backend is gone
        if not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()[0]:
            break
        time.sleep(0.05)
    assert index_state(conn) == [("items_fp_p0_idx", False)]
    assert ("invalid index", "index items_fp_p0_idx on column fp_p0 is invalid (an interrupted CREATE INDEX "
            "CONCURRENTLY?)") in problems(conn)
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (1,)  # complete: no B-trees yet

    code, result, err = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 0, err
    assert result["column_added"] is False and result["rows"] == 0  # the fill had finished
    index = result["index"]
    assert (index["layout"], index["resumed"], index["invalid_dropped"], index["indexes_built"]) == (
        "k3:5", True, ["items_fp_p0_idx"], 10)
    assert index_state(conn) == [(f"items_fp_p{t}_idx", True) for t in range(10)]
    assert_complete_and_exact(conn)


def test_run_again_after_a_kill_half_way(db, capsys):
    conn = db.conn
    make_items_table(conn, 600)
    interrupted(conn, capsys, db)
    code, result, err = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 0, err
    assert result["rows"] == 120  # the ids divisible by 5
    assert (result["index"]["resumed"], result["index"]["invalid_dropped"], result["index"]["indexes_built"]) == (
        True, ["items_fp_p3_idx"], 7)
    assert index_state(conn) == [(f"items_fp_p{t}_idx", True) for t in range(10)]
    assert_complete_and_exact(conn)
    # and a third run changes nothing in the index
    code, result, _ = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 0 and result["rows"] == 0
    assert (result["index"]["resumed"], result["index"]["invalid_dropped"], result["index"]["indexes_built"]) == (
        True, [], 0)
    assert_complete_and_exact(conn)


def test_text_report_of_a_resumed_run(db, capsys):
    conn = db.conn
    make_items_table(conn, 300)
    interrupted(conn, capsys, db)
    code = main(backfill_args(db, "-k", "3", "--blocks", "5", as_json=False))
    out, err = capsys.readouterr()
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("index resumed"))
    assert line.split(None, 2)[2] == "prefix columns existed; 1 invalid index dropped, 7 built"
    assert_complete_and_exact(conn)


def test_run_again_without_blocks_keeps_the_layout_found(db, capsys):
    conn = db.conn
    make_items_table(conn, 300)
    code, result, err = backfill(capsys, db, "-k", "3", "--blocks", "6")
    assert code == 0 and result["index"]["layout"] == "k3:6", err
    conn.execute("DROP INDEX items_fp_p4_idx")
    code, result, err = backfill(capsys, db, "-k", "3")  # the default for 300 rows would be another layout
    assert code == 0, err
    assert (result["index"]["layout"], result["index"]["resumed"], result["index"]["indexes_built"]) == (
        "k3:6", True, 1)
    assert_complete_and_exact(conn, (3, [6]))


@pytest.mark.parametrize("extra, message", [
    (["-k", "3", "--blocks", "6"],
     "simpg: column items.fp already has the prefix columns of simpg layout k3:5, not of k3:6; ask for k3:5, "
     "or remove them with simpg repair --table items --column fp (a damaged index) or "
     "SELECT simpg.drop_index('items', 'fp'), then run backfill again\n"),
    (["-k", "2"],
     "simpg: column items.fp already has the prefix columns of simpg layout k3:5, not of radius k=2; "
     "ask for k3:5, or remove them with simpg repair"),
])
def test_leftovers_of_another_layout_are_refused_before_any_change(db, capsys, extra, message):
    conn = db.conn
    make_items_table(conn, 300)
    interrupted(conn, capsys, db)
    before = (index_state(conn), conn.execute("SELECT count(*) FROM items WHERE fp IS NULL").fetchone())
    code, _, err = backfill(capsys, db, *extra)
    assert code == 1 and err.startswith(message) and err.count("\n") == 1, err
    assert (index_state(conn), conn.execute("SELECT count(*) FROM items WHERE fp IS NULL").fetchone()) == before
    # the way out the message names
    conn.execute("SELECT simpg.drop_index('items', 'fp')")
    code, result, err = backfill(capsys, db, *extra)
    assert code == 0 and result["index"]["resumed"] is False, err
    k = int(extra[1])
    levels = [int(extra[3])] if len(extra) > 2 else list(
        conn.execute("SELECT levels FROM simpg.indexes").fetchone()[0])
    assert_complete_and_exact(conn, (k, levels))


def test_a_damaged_leftover_is_refused_then_repaired(db, capsys):
    conn = db.conn
    make_items_table(conn, 300)
    interrupted(conn, capsys, db)
    conn.execute("ALTER TABLE items DROP COLUMN fp_p7")
    code, _, err = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("simpg: column items.fp has leftover simpg prefix columns: missing prefix column "
                          "(table 7 of k=3 blocks=5: no column simpg.permute(fp, 3, '{5}'::integer[], 7)); "
                          "remove them with simpg repair --table items --column fp"), err
    assert main(["repair", "--dsn", db.dsn, "--table", "items", "--column", "fp"]) == 0
    capsys.readouterr()
    code, result, err = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 0 and result["index"]["resumed"] is False, err
    assert_complete_and_exact(conn)


def test_columns_with_the_prefix_names_are_refused_before_any_change(db, capsys):
    conn = db.conn
    make_items_table(conn, 100)
    conn.execute("ALTER TABLE items ADD COLUMN fp bigint, ADD COLUMN fp_p2 text")
    code, _, err = backfill(capsys, db, "-k", "3", "--blocks", "5")
    assert code == 1 and err == (
        "simpg: table public.items already has columns named fp_p2 that are not simpg prefix columns of fp; "
        "see simpg check --table items, then drop or rename them\n")
    assert conn.execute("SELECT count(*) FROM items WHERE fp IS NOT NULL").fetchone() == (0,)


def test_sketches_are_added_to_an_existing_table_and_confirm_lookups(db, capsys):
    """How a table of simpg 0.1 moves to confirmed lookups (issue 14 item 6): backfill
    --sketch-column adds and fills the sketches in batches, resumes after a kill, and
    SimHashColumn.duplicates then answers exactly."""
    from simpg.fingerprint import MAX_SKETCH_DISTANCE, fingerprint, sketch, sketch_distance
    from simpg.psycopg import SimHashColumn

    conn = db.conn
    texts = make_items_table(conn, 60)
    code, _, err = backfill(capsys, db, "-k", "3", "--blocks", "5")  # the 0.1 table: fingerprints only
    assert code == 0, err
    code, result, err = backfill(capsys, db, "--sketch-column", "sketch", "--batch-size", "7")
    assert code == 0, err
    sketched = sum(1 for t in texts.values() if t and t.strip())
    assert result["sketches"]["column_added"] is True and result["sketches"]["rows"] == sketched
    conn.execute("UPDATE items SET sketch = NULL WHERE id % 3 = 0")  # as a run killed half way leaves it
    code, result, err = backfill(capsys, db, "--sketch-column", "sketch")
    assert code == 0, err
    assert result["sketches"]["column_added"] is False and 0 < result["sketches"]["rows"] < sketched
    stored = {i: int(s, 2).to_bytes(32, "big") for i, s in conn.execute(
        "SELECT id, sketch::text FROM items WHERE sketch IS NOT NULL")}
    assert stored == {i: sketch(t) for i, t in texts.items() if t and t.strip()}
    index = SimHashColumn(conn, "items", "fp")
    for i in list(stored)[:20]:
        text = texts[i]
        fp = fingerprint(text, CONFIG)
        want = sorted(j for j, s in stored.items() if bits.hamming(fingerprint(texts[j] or "", CONFIG), fp) <= 3
                      and sketch_distance(s, sketch(text)) <= MAX_SKETCH_DISTANCE)
        assert sorted(d.id for d in index.duplicates(fp, sketch(text))) == want
    conn.execute("ALTER TABLE items ADD COLUMN other text")
    code, _, err = backfill(capsys, db, "--sketch-column", "other")
    assert (code, err) == (1, "simpg: column items.other is text, expected bit(256)\n")


def test_backfill_adds_the_guard(db, capsys):
    """--guard: after the index, simpg.create_guard; refused while near-duplicates are stored."""
    conn = db.conn
    make_items_table(conn, 60)  # rows 13 and 14 hold the same text
    code, _, err = backfill(capsys, db, "-k", "3", "--blocks", "5", "--guard")
    assert code == 1 and "already holds" in err and "pair(s) of rows within 3 bits" in err
    pairs = conn.execute("SELECT key_a, key_b FROM simpg.pairs('items', 3)").fetchall()
    conn.execute("DELETE FROM items WHERE id = ANY(%s)", [[b for _, b in pairs]])
    code, result, err = backfill(capsys, db, "-k", "3", "--blocks", "5", "--guard")
    assert code == 0, err
    assert result["guard"] == "fp_simpg_guard"
    stored = conn.execute("SELECT fp FROM items WHERE fp IS NOT NULL LIMIT 1").fetchone()[0]
    with pytest.raises(psycopg.errors.ExclusionViolation):
        conn.execute("INSERT INTO items (body, fp) VALUES ('copy', %s)", [stored ^ 1])
