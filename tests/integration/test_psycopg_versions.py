"""The lookups on the oldest psycopg that pyproject.toml allows, in a virtualenv of its own (issue 15, code item 2).

simpg.psycopg._internals uses psycopg's private API on the versions it was tested
with: the newest is what this suite runs on (tests/unit/test_psycopg_internals.py
fails on a newer one), the oldest is installed here, into a virtualenv that shares
every other package with this one, and the lookup tests run there with both paths,
on a server of their own (the child session drops and makes its template database,
which this session's server uses).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simpg.psycopg import _internals

ROOT = Path(__file__).resolve().parents[2]
OLDEST = ".".join(map(str, _internals.OLDEST_TESTED))


@pytest.mark.slow
def test_lookups_on_the_oldest_psycopg(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    # Share this interpreter's packages, whether it is the system's or a virtualenv's
    # (--system-site-packages would see only the base interpreter's): a .pth file is read
    # after the venv's own site-packages, so the psycopg installed there wins.
    child_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                capture_output=True, text=True, check=True).stdout.strip()
    shared = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    Path(child_site, "simpg-parent.pth").write_text("\n".join(shared) + "\n")
    pip = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps",
                          f"psycopg=={OLDEST}", f"psycopg-binary=={OLDEST}"], capture_output=True, text=True)
    assert pip.returncode == 0, f"cannot install psycopg {OLDEST}: {pip.stderr[-2000:]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SIMPG_TEST_DSN", None)
    version = subprocess.run([python, "-c", "import psycopg; print(psycopg.__version__)"], env=env,
                             capture_output=True, text=True, check=True)
    assert version.stdout.strip() == OLDEST
    tests = ["tests/unit/test_psycopg_internals.py", "tests/integration/test_psycopg_lookup_paths.py",
             "tests/integration/test_psycopg_index.py", "tests/integration/test_psycopg_async.py"]
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pg", "pg15", *tests,
                          "-k", "lookup or near or busy or thread or brute or tested or internals or queries"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " skipped" not in run.stdout.splitlines()[-1], run.stdout[-2000:]
