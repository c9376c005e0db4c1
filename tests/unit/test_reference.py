"""docs/reference.md lists every function of schema simpg, with the arguments it has.

The functions are read from ``sql/functions/*.sql`` (``CREATE FUNCTION simpg.name(...)``),
the reference from the first cell of each table row of docs/reference.md: one or more
```` `name(arg type, ...)` ```` (the section "Functions you call", full signatures) or
```` `name(arg, ...)` ```` (the section "Internals", names only). Each function must be in
exactly one of the two sections, each listed call must name the arguments (in order) of
one of the function's overloads, and nothing may be listed that does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
PUBLIC_HEADING = "## Functions you call"
INTERNAL_HEADING = "## Internals"

CREATE = re.compile(r"^CREATE FUNCTION simpg\.(\w+)\(", re.M)
CALL = re.compile(r"`(\w+)\(([^`]*)\)`")


def split_arguments(text: str) -> list[str]:
    """The comma-separated parts of an argument list, ignoring commas inside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return [part.strip() for part in parts]


def argument_names(text: str) -> tuple[str, ...]:
    """The names of the input arguments of an argument list (``OUT`` arguments left out)."""
    return tuple(part.split()[0] for part in split_arguments(text) if not part.upper().startswith("OUT "))


def sql_functions() -> dict[str, list[tuple[str, ...]]]:
    """Every function of sql/functions: its name and the argument names of each overload."""
    found: dict[str, list[tuple[str, ...]]] = {}
    for path in sorted((ROOT / "sql" / "functions").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        for match in CREATE.finditer(text):
            depth, end = 1, match.end()
            while depth:
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            found.setdefault(match.group(1), []).append(argument_names(text[match.end():end - 1]))
    return found


def documented(section: str) -> list[tuple[str, tuple[str, ...]]]:
    """The calls listed in the first cell of each table row of a section of the reference."""
    calls = []
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split(" | ")[0]
            calls += [(m.group(1), argument_names(m.group(2))) for m in CALL.finditer(first_cell)]
    return calls


def sections() -> tuple[str, str]:
    text = REFERENCE.read_text(encoding="utf-8")
    assert text.count(PUBLIC_HEADING) == 1 and text.count(INTERNAL_HEADING) == 1
    public, internal = text.split(PUBLIC_HEADING)[1].split(INTERNAL_HEADING)
    return public, internal


def test_the_parsers() -> None:
    assert argument_names("a bigint, b bit(256) DEFAULT f(1, 2), OUT lo bigint") == ("a", "b")
    assert argument_names("") == ()
    assert documented("| `f(a int)`, `g()` | x |\n| text `h(b)` | y |\n") == [("f", ("a",)), ("g", ())]


def test_every_function_is_in_the_reference_once() -> None:
    functions = sql_functions()
    public, internal = (documented(section) for section in sections())
    public_names = {name for name, _ in public}
    internal_names = {name for name, _ in internal}
    assert len(functions) > 100  # the parser found them
    assert not (public_names & internal_names), "listed both as called and as internal"
    missing = sorted(set(functions) - public_names - internal_names)
    assert not missing, f"functions of sql/functions missing from docs/reference.md: {missing}"
    stale = sorted((public_names | internal_names) - set(functions))
    assert not stale, f"docs/reference.md lists functions that do not exist: {stale}"


def test_every_listed_call_has_the_functions_arguments() -> None:
    functions = sql_functions()
    wrong = [f"{name}({', '.join(args)}): the function has {functions[name]}"
             for section in sections() for name, args in documented(section)
             if name in functions and args not in functions[name]]
    assert not wrong, "\n".join(wrong)


def test_the_catalog_view_is_described() -> None:
    public, _ = sections()
    assert "`simpg.indexes`" in public
