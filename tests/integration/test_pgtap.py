"""Run the pgTAP files in tests/pgtap/ with psql, on every test server.

pgTAP comes from Debian's ``postgresql-15-pgtap`` (``apt-get install postgresql-15-pgtap``).
It is plain SQL, so for a server whose extension directory has no pgTAP (the embedded
PostgreSQL 18) the suite copies Debian's pgtap.control and install script there, as it
does simpg's own files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

PGTAP_DIR = Path(__file__).resolve().parent.parent / "pgtap"
DEBIAN_PGTAP = Path("/usr/share/postgresql/15/extension")
TAP_FILES = sorted(PGTAP_DIR.glob("*.sql"))


def ensure_pgtap(conn: psycopg.Connection, sharedir: Path) -> None:
    """Make CREATE EXTENSION pgtap possible on the server with this share folder."""
    available = "SELECT 1 FROM pg_available_extensions WHERE name = 'pgtap'"
    if conn.execute(available).fetchone():
        return
    target = sharedir / "extension"
    control = DEBIAN_PGTAP / "pgtap.control"
    if not control.exists():
        raise RuntimeError("pgTAP is not installed; run: apt-get install postgresql-15-pgtap")
    version = re.search(r"default_version\s*=\s*'([^']+)'", control.read_text()).group(1)  # type: ignore[union-attr]
    for name in ("pgtap.control", f"pgtap--{version}.sql"):
        shutil.copy(DEBIAN_PGTAP / name, target / name)


def parse_tap(output: str) -> tuple[int, list[str], list[str]]:
    """(planned, passed, failed) test lines of a TAP stream."""
    plan = re.search(r"^1\.\.(\d+)$", output, re.MULTILINE)
    passed = re.findall(r"^ok \d+.*$", output, re.MULTILINE)
    failed = re.findall(r"^not ok \d+.*$", output, re.MULTILINE)
    return (int(plan.group(1)) if plan else -1), passed, failed


def test_parse_tap_counts_failures():
    assert parse_tap("1..3\nok 1 - a\nnot ok 2 - b\n# Failed test 2\nok 3\n") == (
        3,
        ["ok 1 - a", "ok 3"],
        ["not ok 2 - b"],
    )


@pytest.mark.parametrize("tap_file", TAP_FILES, ids=[f.stem for f in TAP_FILES])
def test_pgtap_file(db, tap_file):
    server = db.pg.server
    ensure_pgtap(db.conn, server.sharedir)
    db.conn.execute("CREATE EXTENSION pgtap")
    psql = server.bindir / "psql"
    run = subprocess.run(
        [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(tap_file), db.dsn],
        capture_output=True,
        text=True,
        timeout=300,
    )
    planned, passed, failed = parse_tap(run.stdout)
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    assert not failed, report
    assert planned > 0 and len(passed) == planned, report


def test_pgtap_catches_a_wrong_answer(db):
    """The harness fails on a failing pgTAP assertion (so a green run means something)."""
    ensure_pgtap(db.conn, db.pg.server.sharedir)
    db.conn.execute("CREATE EXTENSION pgtap")
    rows = db.conn.execute(
        "SELECT * FROM plan(1) UNION ALL SELECT is(simpg.hamming(0, 1), 2)"
    ).fetchall()
    planned, passed, failed = parse_tap("\n".join(r[0] for r in rows))
    assert planned == 1 and not passed and len(failed) == 1
