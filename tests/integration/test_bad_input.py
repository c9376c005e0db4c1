"""Every row of docs/bad-input.md, replayed through the SQL functions, the CLI and the API.

Each bad input must give its documented error (lowercase, naming the value) and leave
what is stored untouched: row counts, the catalog and the table's columns are compared
before and after every case. From the CLI: exit status 1 and exactly one line
``simpg: <message>`` on stderr, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from simpg import bits, cli
from simpg.exc import InvalidFingerprint, InvalidLayout
from simpg.layout import Layout

# -- SQL -------------------------------------------------------------------------------------

SQL_CASES = [
    # (id, statement, exact error message)
    (
        "near-null-fingerprint",
        "SELECT * FROM simpg.near(NULL::docs, NULL, 3)",
        "fingerprint must not be null",
    ),
    (
        "near-null-k",
        "SELECT * FROM simpg.near(NULL::docs, 1, NULL)",
        "k must be a non-negative integer, got null",
    ),
    (
        "near-negative-k",
        "SELECT * FROM simpg.near(NULL::docs, 1, -1)",
        "k must be a non-negative integer, got -1",
    ),
    (
        "near-k-above-index",
        "SELECT * FROM simpg.near(NULL::docs, 1, 4)",
        "k=4 is above the radius k=3 that the simpg index on public.docs.simhash guarantees",
    ),
    (
        "near-no-index",
        "SELECT * FROM simpg.near(NULL::plain, 1, 3)",
        "no simpg index on public.plain",
    ),
    (
        "near-not-a-row-type",
        "SELECT * FROM simpg.near(NULL::integer, 1, 3)",
        "first argument must be a table row type such as NULL::articles, got integer",
    ),
    (
        "near-fingerprint-out-of-range",
        "SELECT * FROM simpg.near(NULL::docs, '18446744073709551615', 3)",
        'value "18446744073709551615" is out of range for type bigint',
    ),
    (
        "hamming-wrong-type",
        "SELECT simpg.hamming('abc', 1)",
        'invalid input syntax for type bigint: "abc"',
    ),
    (
        "create-index-k-out-of-range",
        "SELECT simpg.create_index('plain', 'simhash', 17)",
        "k must be an integer from 0 to 16, got 17",
    ),
    (
        "create-index-negative-k",
        "SELECT simpg.create_index('plain', 'simhash', -1)",
        "k must be an integer from 0 to 16, got -1",
    ),
    (
        "create-index-null",
        "SELECT simpg.create_index('plain', NULL, 3)",
        "table, column and k must not be null",
    ),
    (
        "create-index-blocks-not-above-k",
        "SELECT simpg.create_index('plain', 'simhash', 3, 3)",
        "blocks must be greater than k (blocks=3, k=3)",
    ),
    (
        "create-index-wrong-column-type",
        "SELECT simpg.create_index('plain', 'title', 3)",
        "column public.plain.title is text, expected bigint",
    ),
    (
        "create-index-missing-column",
        "SELECT simpg.create_index('plain', 'nope', 3)",
        "column nope of table public.plain does not exist",
    ),
    (
        "create-index-missing-table",
        "SELECT simpg.create_index('nope', 'simhash', 3)",
        'relation "nope" does not exist',
    ),
    (
        "create-index-twice",
        "SELECT simpg.create_index('docs', 'simhash', 3)",
        "column public.docs.simhash already has a simpg index",
    ),
    (
        "drop-index-none",
        "SELECT simpg.drop_index('plain', 'simhash')",
        "no simpg index on public.plain.simhash",
    ),
    ("pairs-null-table", "SELECT * FROM simpg.pairs(NULL, 3)", "table must not be null"),
    (
        "pairs-null-k",
        "SELECT * FROM simpg.pairs('docs', NULL)",
        "k must be a non-negative integer, got null",
    ),
    (
        "pairs-k-above-index",
        "SELECT * FROM simpg.pairs('docs', 5)",
        "k=5 is above the radius k=3 that the simpg index on public.docs.simhash guarantees",
    ),
    ("pairs-no-index", "SELECT * FROM simpg.pairs('plain', 1)", "no simpg index on public.plain"),
    (
        "pairs-wrong-key-type",
        "SELECT * FROM simpg.pairs(NULL::uuid, 'docs', 3)",
        "key column public.docs.id is bigint, not uuid; pass NULL::bigint as the first argument "
        "to get bigint keys",
    ),
    (
        "pairs-key-not-unique",
        "SELECT * FROM simpg.pairs('docs', 3, key_column => 'title')",
        "key column public.docs.title must be not null and unique (a primary key or a unique "
        "index of its own)",
    ),
    (
        "clusters-negative-k",
        "SELECT * FROM simpg.clusters('docs', -2)",
        "k must be a non-negative integer, got -2",
    ),
    (
        "duplicate-stats-no-index",
        "SELECT * FROM simpg.duplicate_stats('plain', 3)",
        "no simpg index on public.plain",
    ),
    (
        "cluster-sizes-k-above-index",
        "SELECT * FROM simpg.cluster_sizes('docs', 16)",
        "k=16 is above the radius k=3 that the simpg index on public.docs.simhash guarantees",
    ),
]


def snapshot(conn: psycopg.Connection) -> tuple[Any, ...]:
    """What must survive a bad input: rows, catalog, columns and indexes of both tables."""
    return (
        conn.execute("SELECT count(*), sum(simhash) FROM docs").fetchone(),
        conn.execute("SELECT count(*) FROM plain").fetchone(),
        conn.execute(
            "SELECT indexed_table::text, fingerprint_column, k, levels, prefix_columns FROM "
            "simpg.indexes "
            "ORDER BY 1, 2"
        ).fetchall(),
        conn.execute(
            "SELECT attrelid::regclass::text, attname FROM pg_attribute WHERE attrelid IN "
            "('docs'::regclass, 'plain'::regclass) AND attnum > 0 AND NOT attisdropped ORDER BY "
            "1, 2"
        ).fetchall(),
        conn.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid IN "
            "('docs'::regclass, 'plain'::regclass) ORDER BY 1"
        ).fetchall(),
    )


@pytest.fixture
def stored(conn: psycopg.Connection) -> psycopg.Connection:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, title text, body text, simhash bigint)")
    conn.execute(
        "INSERT INTO docs SELECT g, 't' || g, 'body ' || g, g * 7919 FROM generate_series(1, "
        "200) AS g"
    )
    conn.execute(
        "SELECT simpg.create_index('docs', 'simhash', 3, 4, fingerprint_config => 'simpg-fp1:test')"
    )
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, title text, simhash bigint)")
    conn.execute("INSERT INTO plain SELECT g, 't', g FROM generate_series(1, 50) AS g")
    return conn


@pytest.mark.parametrize(
    "statement, message", [c[1:] for c in SQL_CASES], ids=[c[0] for c in SQL_CASES]
)
def test_sql_bad_input(stored, statement, message):
    before = snapshot(stored)
    with pytest.raises(psycopg.Error) as err:
        stored.execute(statement).fetchall()
    assert err.value.diag.message_primary == message
    assert snapshot(stored) == before


def test_null_arguments_to_pure_functions_give_null(conn):
    """hamming and permute: NULL in, NULL out (a NULL fingerprint is no fingerprint)."""
    assert conn.execute(
        "SELECT simpg.hamming(NULL, 1), simpg.permute(NULL, 3, '{4}', 0)"
    ).fetchone() == (None, None)


# -- CLI -------------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run simpg's CLI; require exit 1 and one `simpg: ...` line; return that line."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("simpg: "), lines[0]
    assert lines[0][7].islower() or not lines[0][7].isalpha(), lines[0]
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "latin1": tmp_path / "latin1.txt",
        "empty": tmp_path / "empty.txt",
        "blank": tmp_path / "blank.txt",
        "ok": tmp_path / "ok.txt",
    }
    paths["latin1"].write_bytes("café au lait\n".encode("latin-1"))
    paths["empty"].write_bytes(b"")
    paths["blank"].write_text(" \n\t\n")
    paths["ok"].write_text("a perfectly ordinary document about near duplicates\n")
    return paths


def test_cli_file_not_utf8(capsys, files):
    line = run_cli(capsys, "fingerprint", str(files["latin1"]))
    assert line == f"simpg: invalid utf-8 in '{files['latin1']}' at byte offset 3 (byte 0xe9)"


@pytest.mark.parametrize("name", ["empty", "blank"])
def test_cli_empty_text(capsys, files, name):
    assert (
        run_cli(capsys, "fingerprint", str(files[name]))
        == f"simpg: empty document: '{files[name]}'"
    )


def test_cli_missing_file(capsys, tmp_path):
    missing = tmp_path / "nope.txt"
    assert (
        run_cli(capsys, "fingerprint", str(missing))
        == f"simpg: cannot read '{missing}': No such file or directory"
    )


def test_cli_no_database(capsys, monkeypatch):
    monkeypatch.delenv("SIMPG_DSN", raising=False)
    assert run_cli(capsys, "install") == "simpg: no database given; pass --dsn or set SIMPG_DSN"


@pytest.mark.parametrize(
    "dsn, start",
    [
        (
            "host=/nonexistent-simpg-socket-dir dbname=x connect_timeout=3",
            "simpg: database error: connection",
        ),
        (
            "host=127.0.0.1 port=1 dbname=x connect_timeout=3",
            "simpg: database error: connection failed: "
            'connection to server at "127.0.0.1", port 1 failed',
        ),
        ("not a dsn", 'simpg: database error: missing "=" after "not" in connection info string'),
    ],
)
@pytest.mark.parametrize("command", ["install", "upgrade"])
def test_cli_missing_or_unreachable_server(capsys, command, dsn, start):
    assert run_cli(capsys, command, "--dsn", dsn).startswith(start)


def test_cli_missing_database(capsys, pg):
    line = run_cli(capsys, "install", "--dsn", pg.server.dsn("no_such_database_simpg"))
    assert (
        line == "simpg: database error: connection failed: connection to server on socket "
        f'"{pg.server.host}/.s.PGSQL.{pg.server.port}" failed: '
        'FATAL:  database "no_such_database_simpg" does not exist'
    )


def test_cli_upgrade_without_extension(capsys, bare_db):
    line = run_cli(capsys, "upgrade", "--dsn", bare_db.dsn)
    assert line == "simpg: simpg is not installed here; nothing to upgrade"


def test_cli_upgrade_to_unknown_version_keeps_everything(capsys, db, pg):
    if not pg.extension_files:
        pytest.fail("the suite could not write this server's extension folder")
    db.conn.execute("CREATE TABLE keep (id int)")
    db.conn.execute("INSERT INTO keep SELECT generate_series(1, 10)")
    line = run_cli(capsys, "upgrade", "--dsn", db.dsn, "--to", "9.9.9")
    assert (
        line == 'simpg: database error: extension "simpg" has no update path '
        'from version "0.2.0" to version "9.9.9"'
    )
    assert db.conn.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'simpg'"
    ).fetchone() == ("0.2.0",)
    assert db.conn.execute("SELECT count(*) FROM keep").fetchone() == (10,)


@pytest.mark.parametrize("k", ["17", "-1"])
def test_cli_k_out_of_range(capsys, k):
    assert (
        run_cli(capsys, "plan", "-k", k, "--rows", "1000")
        == f"simpg: k must be an integer from 0 to 16, got {k}"
    )


def test_cli_backfill_missing_table_keeps_everything(capsys, stored, db):
    before = snapshot(stored)
    line = run_cli(
        capsys,
        "backfill",
        "--dsn",
        db.dsn,
        "--table",
        "nope",
        "--text-column",
        "body",
        "--column",
        "simhash",
    )
    assert line.startswith("simpg: ") and "nope" in line
    assert snapshot(stored) == before


def test_cli_backfill_with_a_config_that_does_not_match_the_index(capsys, stored, db, tmp_path):
    """The index records the config of its fingerprints; mixing in another is refused."""
    from simpg.fingerprint import FingerprintConfig

    stored.execute("UPDATE docs SET simhash = NULL WHERE id > 150")  # rows still to fill
    other = tmp_path / "config.json"
    other.write_text(FingerprintConfig(ngram=2).to_json())
    before = snapshot(stored)
    line = run_cli(
        capsys,
        "backfill",
        "--dsn",
        db.dsn,
        "--table",
        "docs",
        "--text-column",
        "body",
        "--column",
        "simhash",
        "--config",
        f"@{other}",
    )
    assert "fingerprint config" in line and "simpg-fp1:test" in line
    assert snapshot(stored) == before


# -- Python API --------------------------------------------------------------------------------

API_CASES = [
    (
        lambda: bits.to_db(-1),
        InvalidFingerprint,
        "expected 64-bit fingerprint in [0, 2**64), got -1",
    ),
    (
        lambda: bits.to_db(2**64),
        InvalidFingerprint,
        "expected 64-bit fingerprint in [0, 2**64), got 18446744073709551616",
    ),
    (lambda: bits.to_db("12"), InvalidFingerprint, "expected 64-bit fingerprint, got '12'"),
    (lambda: bits.to_db(None), InvalidFingerprint, "expected 64-bit fingerprint, got None"),
    (
        lambda: bits.from_db(2**63),
        InvalidFingerprint,
        "expected signed 64-bit integer, got 9223372036854775808",
    ),
    (lambda: Layout(17, (18,)), InvalidLayout, "k must be an integer from 0 to 16, got 17"),
]


@pytest.mark.parametrize("call, error, message", API_CASES, ids=range(len(API_CASES)))
def test_api_bad_input(call, error, message):
    with pytest.raises(error) as err:
        call()
    assert str(err.value) == message


def test_bad_input_doc_lists_every_case():
    """docs/bad-input.md names every SQL case id, so the table and the tests stay in step."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bad-input.md").read_text()
    for case_id, _, message in SQL_CASES:
        assert message.replace("|", "\\|") in doc, case_id
