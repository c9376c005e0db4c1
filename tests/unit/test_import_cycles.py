"""simpg.sqlalchemy's modules import each other in one direction (issue 15, code item 7).

``index.py`` and ``types.py`` used to import each other from inside functions
(``within_clause`` / ``_operand``). The graph here counts every import statement,
function-local ones too, so a cycle cannot come back hidden in a function body.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "simpg"


def _modules(prefix: str) -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.parent.joinpath(*prefix.split(".")).rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """simpg modules that ``path`` imports anywhere in its body (``from X import Y``: X, and X.Y if a module)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name in known}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_sqlalchemy_modules_have_no_import_cycle():
    modules = _modules("simpg.sqlalchemy")
    graph = {name: _imports(path, modules) - {name, "simpg.sqlalchemy"} for name, path in modules.items()}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])
    assert "simpg.sqlalchemy.types" not in graph["simpg.sqlalchemy.index"]


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", ["simpg.sqlalchemy.index", "simpg.sqlalchemy.types"])
def test_each_module_imports_first_in_a_fresh_interpreter(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
