"""psycopg's private API: used in one module only, on the versions it was tested with (issue 15, code item 2).

Also simpg.psycopg's modules, one job each (code item 5), and the planner settings bind
their values.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from simpg.psycopg import _internals, catalog, ranges, settings, statements, wire

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "simpg"
FENCE = PACKAGE / "psycopg" / "_internals.py"

#: psycopg modules that are not its documented API.
PRIVATE_MODULES = ("psycopg.generators", "psycopg.waiting", "psycopg._")
#: Names imported from documented modules that are not documented themselves.
PRIVATE_NAMES = {("psycopg.abc", "PQGen"), ("psycopg.errors", "error_from_result")}
#: Attributes of psycopg connections that are not documented (Connection.wait, .lock).
PRIVATE_ATTRIBUTES = {"wait", "lock"}
#: (file, line text) still allowed outside the fence, with the reason.
ALLOWED = {
    # BusyWaitConnection overrides Connection.wait (there is no public hook) and hands
    # the work to the fence, or to psycopg's own wait outside the tested versions
    ("simpg/psycopg/busywait.py", "super().wait"),
}


def test_installed_psycopg_is_in_the_tested_range() -> None:
    # When this fails, a psycopg newer than simpg.psycopg._internals was tested with is
    # installed: simpg then uses the public API alone (slower lookups, same answers).
    # Run the whole suite on it (it tests both paths), then raise NEWEST_TESTED.
    assert _internals.tested(psycopg.__version__), (
        f"psycopg {psycopg.__version__} is outside the range simpg.psycopg._internals was tested with "
        f"({'.'.join(map(str, _internals.OLDEST_TESTED))} to {'.'.join(map(str, _internals.NEWEST_TESTED))}.x)")


def test_pyproject_allows_from_the_oldest_tested_psycopg() -> None:
    # the dependency line (tomllib is Python 3.11+; simpg supports 3.10)
    (spec,) = re.findall(r'^\s*"(psycopg\[binary\][^"]*)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
                         re.M)
    assert re.fullmatch(r"psycopg\[binary\]>=(\d+)\.(\d+),<4", spec), spec
    low = tuple(int(x) for x in re.findall(r">=(\d+)\.(\d+)", spec)[0])
    # the lowest version pip may install is the one test_psycopg_versions.py runs the suite on
    assert (*low, 0) == _internals.OLDEST_TESTED


@pytest.mark.parametrize(("version", "expected"), [
    ("3.1.20", False), ("3.2.0", True), ("3.2.13", True), ("3.3.9", True), ("3.3.20", True),
    ("3.4.0", False), ("3.4.0.dev1", False), ("4.0.0", False), ("3.3.10+local", True),
])
def test_tested_range(version: str, expected: bool) -> None:
    assert _internals.tested(version) is expected


def test_the_environment_turns_the_internals_off() -> None:
    code = "from simpg.psycopg import _internals; print(_internals.ENABLED)"
    env = {**os.environ, "SIMPG_PSYCOPG_INTERNALS": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(PRIVATE_MODULES):
                found.append(f"{node.lineno}: from {node.module} import ...")
            found += [f"{node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if (node.module, a.name) in PRIVATE_NAMES]
            if node.module == "psycopg":
                found += [f"{node.lineno}: from psycopg import {a.name}" for a in node.names
                          if a.name in ("generators", "waiting")]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith(PRIVATE_MODULES)]
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            line = lines[node.lineno - 1]
            found.append(f"{node.lineno}: {line.strip()}")
        elif isinstance(node, ast.Attribute) and node.attr in ("generators", "waiting") \
                and isinstance(node.value, ast.Name) and node.value.id == "psycopg":
            found.append(f"{node.lineno}: psycopg.{node.attr}")
    return found


def test_only_the_fence_uses_psycopg_private_api() -> None:
    outside = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == FENCE:
            continue
        rel = str(path.relative_to(ROOT))
        uses = [u for u in _private_uses(path)
                if not any(rel == f and text in u for f, text in ALLOWED)]
        if uses:
            outside[rel] = uses
    assert outside == {}, "psycopg's private API belongs in simpg/psycopg/_internals.py"
    assert _private_uses(FENCE)  # and the fence does use it: this test would notice a rename


# -- simpg.psycopg's modules, one job each ------------------------------------------------


def _simpg_imports(module: object) -> set[str]:
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    return {node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simpg.psycopg")}


def test_the_split_modules_do_one_job_each() -> None:
    # the binary formats, the range arithmetic and the settings know nothing of statements
    assert _simpg_imports(wire) == set()
    assert _simpg_imports(ranges) == {"simpg.psycopg.wire"}
    assert _simpg_imports(settings) == set()
    assert _simpg_imports(catalog) == {"simpg.psycopg.ranges"}
    assert _simpg_imports(statements) == {"simpg.psycopg.catalog", "simpg.psycopg.wire"}


def test_local_settings_bind_names_and_values() -> None:
    local = settings.LocalSettings(enable_seqscan="off", work_mem="64MB")
    text = local.statement.as_string(None)
    assert "off" not in text and "64MB" not in text and "enable_seqscan" not in text
    assert text.count("%s") == len(local.params) == 2 + 2 * 2
    assert local.params == ["enable_seqscan", "work_mem", "enable_seqscan", "off", "work_mem", "64MB"]
    restore = local.restore_statement.as_string(None)
    assert "enable_seqscan" not in restore
    assert local.restore_params(["on", "4MB", "ignored"]) == ["enable_seqscan", "on", "work_mem", "4MB"]
    session = settings.LOOKUP
    assert "force_generic_plan" not in session.statement.as_string(None)
    assert dict(zip(session.params[::2], session.params[1::2], strict=True)) == settings.LOOKUP_SETTINGS
