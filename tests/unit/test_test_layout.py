"""The suite's own layout: no test module imports another test module.

Shared oracles live in tests/oracles.py, shared fixtures in conftest.py, shared helpers in
plain modules (tests/layouts.py, tests/integration/scenes.py, ...): importing a test module
runs its module-level code, registers its fixtures twice and ties two files' tests together.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def is_test_module(module: str) -> bool:
    return module.rsplit(".", 1)[-1].startswith("test_")


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(TESTS.parent).with_suffix("").parts[:-1])


def imported_modules(source: str, package: str) -> list[str]:
    """Every module the source imports, absolute (``from tests.integration import test_x`` counts
    as ``tests.integration.test_x``; relative imports are resolved against package)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def test_no_test_module_imports_another() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in imported_modules(path.read_text(encoding="utf-8"), package_of(path))
        if module.startswith("tests.") and is_test_module(module)
    ]
    assert offenders == []


def test_the_scan_sees_every_form_of_import() -> None:
    # the check above is only as good as its scan: each form names the test module it imports
    forms = {
        "from tests.integration." "test_attacks import Scene": "tests.integration.test_attacks",  # split: grep-clean
        "from tests.integration import test_attacks": "tests.integration.test_attacks",
        "import tests.unit.test_bits": "tests.unit.test_bits",
        "from .test_guard import K": "tests.integration.test_guard",
        "from . import test_guard": "tests.integration.test_guard",
        "def f():\n    from tests.unit." "test_bits import x": "tests.unit.test_bits",
    }
    for source, module in forms.items():
        assert module in [m for m in imported_modules(source, "tests.integration") if is_test_module(m)], source
    helpers = "from tests.oracles import brute_pairs\nfrom tests.integration import scenes\nimport tests.layouts\n"
    assert [m for m in imported_modules(helpers, "tests.integration") if is_test_module(m)] == []


#: What the integration layer provides: real servers, Spark, browsers (tests/conftest.py).
SERVER_FIXTURES = {"pg", "db", "bare_db", "conn", "spark", "pg15", "embedded", "scene"}


def test_unit_tests_need_no_server():
    """tests/unit runs without a database, Spark or a browser: those are integration tests."""
    for path in sorted((TESTS / "unit").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                asked = {a.arg for a in node.args.args}
                assert not asked & SERVER_FIXTURES, f"{path.name}::{node.name} asks for {asked & SERVER_FIXTURES}"
