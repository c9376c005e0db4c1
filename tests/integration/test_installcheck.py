"""``make installcheck``: the Makefile's pg_regress target, run against the suite's servers.

People who install with PGXS (``make install``) check the installed extension with
``make installcheck`` (test/sql, test/expected). This runs that target with a copy of the
Makefile, sql/ and test/ in a scratch folder (so pg_regress's output stays out of the
repository), on each test server, whose share folder already has simpg's files.
PGXS comes with Debian's postgresql-client-NN (the server's own pg_config if it has
PGXS, else Debian's 15); without make or PGXS this fails, saying what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from simpg import schema
from tests import servers

ROOT = Path(__file__).resolve().parents[2]


def pgxs_pg_config(server: servers.Server) -> Path:
    """A pg_config whose PGXS is installed: the server's own, else Debian's PostgreSQL 15."""
    candidates = [server.pg_config, Path("/usr/lib/postgresql/15/bin/pg_config")]
    for pg_config in candidates:
        if not pg_config.exists():
            continue
        done = subprocess.run([str(pg_config), "--pgxs"], capture_output=True, text=True)
        if done.returncode == 0 and Path(done.stdout.strip()).is_file():
            return pg_config
    pytest.fail("no PGXS for `make installcheck` (looked at " + ", ".join(map(str, candidates))
                + "); on Debian: apt-get install postgresql-client-15")


def test_make_installcheck_passes_on_the_test_server(pg, tmp_path):
    if not pg.extension_files:
        pytest.fail(f"simpg's extension files could not be installed into {pg.server.sharedir}: "
                    "make installcheck needs a server whose share folder the suite can write")
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed; on Debian: apt-get install make")
    pg_config = pgxs_pg_config(pg.server)
    work = tmp_path / "simpg"
    work.mkdir()
    shutil.copy(ROOT / "Makefile", work / "Makefile")
    for folder in ("sql", "test"):
        shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("results", "regression.*"))
    env = {**os.environ, "PGHOST": pg.server.host, "PGPORT": str(pg.server.port), "PGUSER": pg.server.user}
    env.pop("PGDATABASE", None)
    done = subprocess.run([make, "-C", str(work), "installcheck", f"PG_CONFIG={pg_config}"],
                          capture_output=True, text=True, timeout=300, env=env)
    diffs = work / "test" / "regression.diffs"
    assert done.returncode == 0, done.stdout + done.stderr + (diffs.read_text() if diffs.exists() else "")
    assert "All 1 tests passed" in done.stdout or "ok 1" in done.stdout, done.stdout


def test_make_builds_the_scripts_the_python_package_installs(tmp_path):
    """`make` (PGXS's `all`) builds the install script and the update scripts that are not
    in the repository; they must be the text `simpg install-extension` and the plain
    install and update run."""
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed; on Debian: apt-get install make")
    work = tmp_path / "simpg"
    work.mkdir()
    shutil.copy(ROOT / "Makefile", work / "Makefile")
    shutil.copytree(ROOT / "sql", work / "sql")
    for built in work.glob("sql/simpg--*0.2.0.sql"):
        built.unlink()  # whatever a make in the checkout left
    pg_config = Path("/usr/lib/postgresql/15/bin/pg_config")
    done = subprocess.run([make, "-C", str(work), "all", f"PG_CONFIG={pg_config}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    files = schema.extension_files()
    built = {p.name for p in (work / "sql").glob("simpg--*.sql")}
    assert built == {name for name in files if name.endswith(".sql")}
    for name in built:
        assert (work / "sql" / name).read_text() == files[name], name
