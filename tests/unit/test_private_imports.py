"""No simpg module imports another package's private module (issue 29, finding 5).

A module whose name starts with ``_`` (``simpg.psycopg._common``) belongs to its package:
``simpg.psycopg.index`` may import it, ``simpg.shards`` or ``simpg.commands.near`` may
not; what they need lives in a public module (``simpg.results``, ``simpg.exc``,
``simpg.allpairs``, ...). Every import statement counts, function-local ones too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
PACKAGE = SOURCE / "simpg"


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of a source file, and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imported(tree: ast.AST, package: str) -> set[str]:
    """Every dotted name an import statement names: ``from X import Y`` gives X and X.Y."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from the importer's package up
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _private_owner(name: str) -> str | None:
    """The package a private module of ``name`` belongs to (``simpg.a._x.y`` -> ``simpg.a``), else None."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def foreign_private_imports(root: Path, modules: set[str] | None = None) -> list[str]:
    """``importer -> private module`` for each import of a private module of another package."""
    files = sorted(root.rglob("*.py"))
    known = modules if modules is not None else {_module_name(p, root.parent)[0] for p in files}
    found = []
    for path in files:
        name, is_package = _module_name(path, root.parent)
        package = name if is_package else name.rpartition(".")[0]
        for imported in sorted(_imported(ast.parse(path.read_text(encoding="utf-8")), package)):
            owner = _private_owner(imported)
            if owner is None or imported not in known:
                continue  # public, or a private name inside a module rather than a module
            if package != owner and not package.startswith(owner + "."):
                found.append(f"{name} -> {imported}")
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    assert foreign_private_imports(PACKAGE) == []


def test_the_finder_finds_one(tmp_path: Path) -> None:
    root = tmp_path / "simpg"
    for folder in (root, root / "a", root / "c"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (root / "a" / "_x.py").write_text("")
    (root / "a" / "b.py").write_text("from simpg.a import _x\nfrom simpg.a._x import thing\n")  # same package
    (root / "a" / "__init__.py").write_text("from . import _x\n")
    (root / "c" / "d.py").write_text("def f():\n    from simpg.a._x import thing\n")  # inside a function
    (root / "e.py").write_text("from .a import _x\nimport simpg.a._x\n")
    assert foreign_private_imports(root) == [
        "simpg.c.d -> simpg.a._x", "simpg.e -> simpg.a._x"]
