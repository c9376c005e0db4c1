"""Write the sync handles from the async ones, the source of both (:data:`PAIRS`).

``index.py`` (``SimHashColumn``) is written from ``aio.py``, ``passage_index.py``
(``PassageColumn``) from ``passage_aio.py``. Run ``python -m simpg.psycopg._async_to_sync``
after changing a source (``--check``: only say whether every target is current;
tests/unit/test_async_to_sync.py fails when one is not). The rules are few, and enough
for these sources:

* ``await x`` -> ``x``; ``async def``, ``async with``, ``async for`` lose ``async``;
* ``asyncio.to_thread(f, *args)`` -> ``f(*args)``; ``Awaitable[T]`` -> ``T``;
* an ``if True:  # ASYNC`` block is replaced by its ``else:`` branch (or by nothing);
* the names of :data:`RENAMES` become their sync twins, as whole words anywhere
  (code, strings, comments), and ``await`` / ``async`` go from docstrings too;
* an import line whose names changed (or that imports ``Awaitable``) drops the names no
  longer used and is sorted again.

The edits are made in the text at the places the syntax tree gives, not by
re-printing the tree, so comments and layout stay as written.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
from pathlib import Path

__all__ = ["PAIRS", "RENAMES", "SOURCE", "TARGET", "convert", "header", "main"]

SOURCE = Path(__file__).with_name("aio.py")
TARGET = Path(__file__).with_name("index.py")
#: Every (async source, sync target) pair the tool writes, in order.
PAIRS: list[tuple[Path, Path]] = [
    (SOURCE, TARGET),
    (Path(__file__).with_name("passage_aio.py"), Path(__file__).with_name("passage_index.py")),
]

#: Async names and their sync twins.
RENAMES = {
    "AsyncSimHashColumn": "SimHashColumn",
    "AsyncPassageColumn": "PassageColumn",
    "AsyncOwnedConnection": "OwnedConnection",
    "simpg.psycopg.aio": "simpg.psycopg.index",  # passage_aio's import of the shared base class
    "AsyncConnection": "Connection",
    "AsyncNearLookup": "NearLookup",
    "AsyncRawCursor": "RawCursor",
    "AsyncIterator": "Iterator",
    "configure_lookups_async": "configure_lookups",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
}



def header(source_name: str) -> str:
    """The first lines of a target written from the source file ``source_name``."""
    return (f"# Generated from {source_name} by simpg/psycopg/_async_to_sync.py: do not edit.\n"
            f"# Change {source_name}, then run python -m simpg.psycopg._async_to_sync\n")


HEADER = header("aio.py")

_Edit = tuple[int, int, str]  # replace text[start:end] with this


def convert(source: str, source_name: str = "aio.py") -> str:
    """The sync module for the async module ``source`` (the text of the file ``source_name``)."""
    text = _apply(source, _async_blocks(source))
    text = _apply(text, _async_syntax(text))
    text = re.sub(r"\b(" + "|".join(map(re.escape, RENAMES)) + r")\b", lambda m: RENAMES[m.group(1)], text)
    text = re.sub(r"\bawait\s+|\basync\s+(?=(?:def|with|for)\b)", "", text)  # docstrings' examples
    text = _apply(text, _imports(text))
    text = re.sub(r"\n{4,}", "\n\n\n", text)  # a dropped block leaves its blank lines
    tree = ast.parse(text)
    left = [node for node in ast.walk(tree) if isinstance(node, (ast.Await, ast.AsyncFunctionDef, ast.AsyncWith,
                                                                   ast.AsyncFor))]
    if left:
        raise ValueError(f"async code left on line {getattr(left[0], 'lineno', '?')}")
    return header(source_name) + text


def _lines(text: str) -> list[str]:
    """The lines as the syntax tree numbers them (str.splitlines also splits at form feeds and more)."""
    return io.StringIO(text).readlines()


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in _lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def _at(text: str, starts: list[int], line: int, col: int) -> int:
    """The text offset of an AST position (``col`` counts UTF-8 bytes)."""
    row = text[starts[line - 1]:starts[line]]
    return starts[line - 1] + len(row.encode()[:col].decode())


def _apply(text: str, edits: list[_Edit]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _async_blocks(text: str) -> list[_Edit]:
    """``if True:  # ASYNC`` blocks, each replaced by its ``else:`` branch, one level less indented."""
    lines = _lines(text)
    starts = _offsets(text)
    edits = []
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.If) and lines[node.lineno - 1].strip() == "if True:  # ASYNC"):
            continue
        indent = lines[node.lineno - 1].index("if")
        kept: list[str] = []
        if node.orelse:
            otherwise = next(i for i in range(node.body[-1].end_lineno or 0, len(lines))
                             if lines[i].strip() == "else:" and lines[i].index("else") == indent)
            for line in lines[otherwise + 1:node.end_lineno]:
                if line.strip() and not line.startswith(" " * (indent + 4)):
                    raise ValueError(f"line {lines.index(line) + 1}: an ASYNC block's else: must be indented")
                kept.append(line[4:] if line.strip() else line)
        end = node.end_lineno or 0
        if not kept and not lines[node.lineno - 2].strip() and end < len(lines) and not lines[end].strip():
            end += 1  # one blank line around a block that goes
        edits.append((starts[node.lineno - 1], starts[end], "".join(kept)))
    return edits


def _async_syntax(text: str) -> list[_Edit]:
    """``await``, ``async``, ``asyncio.to_thread`` and ``Awaitable[...]``, each made sync.

    Lines that continue a statement and line up with text after a removed ``await``
    or ``async`` move left with it (not the lines inside multi-line strings).
    """
    tree = ast.parse(text)
    starts = _offsets(text)
    lines = _lines(text)
    in_strings = {line for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  for line in range(node.lineno + 1, (node.end_lineno or 0) + 1)}
    shifts: dict[int, int] = {}  # line number -> columns to move left

    def at(node: ast.expr | ast.stmt, end: bool = False) -> int:
        if end:
            return _at(text, starts, node.end_lineno or 0, node.end_col_offset or 0)
        return _at(text, starts, node.lineno, node.col_offset)

    def shift(node: ast.stmt | ast.expr, last: int, width: int) -> None:
        for number in range(node.lineno + 1, last + 1):
            line = lines[number - 1]
            if number not in in_strings and line.strip() and len(line) - len(line.lstrip(" ")) > node.col_offset:
                shifts[number] = shifts.get(number, 0) + width

    edits: list[_Edit] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Await):
            edits.append((at(node), at(node.value), ""))
            shift(node, node.end_lineno or 0, at(node.value) - at(node))
        elif isinstance(node, (ast.AsyncFunctionDef, ast.AsyncWith, ast.AsyncFor)):
            start = at(node)
            if not text.startswith("async ", start):
                raise ValueError(f"line {node.lineno}: expected 'async ' here")
            edits.append((start, start + len("async "), ""))
            shift(node, _header_end(node), len("async "))
        elif isinstance(node, ast.comprehension) and node.is_async:
            raise ValueError("async comprehensions are not converted")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "asyncio.to_thread":
            func, *args = node.args
            edits.append((at(node), at(func), ""))
            edits.append((at(func, end=True), at(args[0]), "(") if args else (at(func, end=True), at(node, end=True),
                                                                                "()"))
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Awaitable":
            edits.append((at(node), at(node.slice), ""))
            edits.append((at(node.slice, end=True), at(node, end=True), ""))
    for number, width in shifts.items():
        line = lines[number - 1]
        edits.append((starts[number - 1], starts[number - 1] + min(width, len(line) - len(line.lstrip(" "))), ""))
    return edits


def _header_end(node: ast.AsyncFunctionDef | ast.AsyncWith | ast.AsyncFor) -> int:
    """The last line of a def's signature, a with's items or a for's iterable."""
    if isinstance(node, ast.AsyncFunctionDef):
        parts: list[ast.AST] = [node.args, *([node.returns] if node.returns else [])]
    elif isinstance(node, ast.AsyncWith):
        parts = list(node.items)
    else:
        parts = [node.iter]
    return max(getattr(part, "end_lineno", None) or node.lineno for top in parts for part in ast.walk(top))


def _imports(text: str) -> list[_Edit]:
    """Import lines that name a renamed name: without the names no longer used, sorted as ruff does."""
    tree = ast.parse(text)
    starts = _offsets(text)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    edits = []
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not any(a.name in RENAMES.values() or a.name == "Awaitable"
                                                            for a in node.names):
            continue
        if any(a.asname for a in node.names):
            raise ValueError(f"line {node.lineno}: 'as' in an import that names a renamed name")
        names = sorted({a.name for a in node.names if a.name in used},
                       key=lambda name: (not name.isupper(), not name[:1].isupper(), name))
        line = f"from {node.module} import {', '.join(names)}\n"
        edits.append((starts[node.lineno - 1], starts[node.end_lineno or 0], line))
    return edits


def main(argv: list[str] | None = None) -> int:
    """Write every target of :data:`PAIRS` from its source (``--check``: exit 1 if one differs instead)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that every target is current")
    args = parser.parse_args(argv)
    stale = 0
    for source, target in PAIRS:
        generated = convert(source.read_text(encoding="utf-8"), source.name)
        if not args.check:
            target.write_text(generated, encoding="utf-8")
        elif not target.exists() or target.read_text(encoding="utf-8") != generated:
            print(f"{target} is stale: run python -m simpg.psycopg._async_to_sync", file=sys.stderr)
            stale = 1
    return stale


if __name__ == "__main__":
    sys.exit(main())
