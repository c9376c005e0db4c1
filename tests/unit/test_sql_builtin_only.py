"""A lint over sql/functions: simpg's SQL evaluates only built-in code over user data.

A cast from a user's type is looked up in pg_cast, not through search_path, and
to_jsonb of a row calls any cast to json of its columns' types: either would run code of
the table's owner with the rights of whoever calls simpg (a superuser running a report).
User values reach simpg's SQL only through columns named in dynamic SQL and through a
trigger's NEW and OLD, so this lint looks there (issue 27, class 2; docs/security.md):

- no row-to-JSON or JSON-to-row function anywhere (they touch every column of a row);
- in dynamic SQL, no cast of a column named by a %I placeholder (a user column of
  any type) nor of a trigger's NEW/OLD;
- a cast, comparison or sort of report keys (``key``, ``key_a``, ``key_b``) only in a
  function whose contract says its keys come from simpg.report_key, which refuses key
  types that are not built in (simpg.builtin_type).

A line may say why it is safe with a ``-- built-in:`` comment on it or just above it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARTS = sorted((ROOT / "sql" / "functions").glob("*.sql"))

ROW_JSON = re.compile(r"\b(to_jsonb?|row_to_json|jsonb?_populate_record(set)?|jsonb?_to_record(set)?|hstore)\s*\(",
                      re.I)
COLUMN_CAST = re.compile(r"%(\d+\$)?I\)?\s*::|CAST\s*\(\s*[\w.]*%(\d+\$)?I", re.I)
ROW_CAST = re.compile(r"\b(NEW|OLD)\b(\.\w+)?\)?\s*::", re.I)
KEY_USE = re.compile(r"\bkey(_a|_b)?\b\)?\s*::|\bkey\s*[<>]|ORDER BY\s+[\w.]*\bkey\b|LEAST\(\s*a\.key", re.I)
ALLOWED = "-- built-in:"


def functions(text: str) -> list[tuple[int, str]]:
    """Each CREATE FUNCTION of a part with the comment block above it: (first line, text)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("CREATE FUNCTION")]
    chunks = []
    for n, start in enumerate(starts):
        head = start
        while head > 0 and lines[head - 1].startswith("--"):
            head -= 1
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        chunks.append((head + 1, "\n".join(lines[head:end])))
    return chunks


def code(line: str) -> str:
    """The line without its -- comment (a -- inside a string literal is rare enough here)."""
    if line.lstrip().startswith("--"):
        return ""
    return re.split(r"--(?=[^']*$)", line, maxsplit=1)[0]


def literals(line: str) -> str:
    """The string literals of a line of code, joined (dynamic SQL lives in them)."""
    return " ".join(re.findall(r"'((?:[^']|'')*)'", code(line)))


def problems(text: str, name: str) -> list[str]:
    found = []
    for first, chunk in functions(text):
        uses_report_key = "report_key" in chunk
        lines = chunk.splitlines()
        for i, line in enumerate(lines):
            allowed = ALLOWED in line or (i > 0 and ALLOWED in lines[i - 1])
            where = f"{name}:{first + i}"
            if allowed:
                continue
            if ROW_JSON.search(code(line)):
                found.append(f"{where}: row/JSON conversion calls casts of every column's type: {line.strip()}")
            if COLUMN_CAST.search(literals(line)) or ROW_CAST.search(code(line)):
                found.append(f"{where}: cast of a user column of any type: {line.strip()}")
            if KEY_USE.search(literals(line)) and not uses_report_key:
                found.append(f"{where}: keys cast or compared without simpg.report_key's type check: {line.strip()}")
    return found


@pytest.mark.parametrize("part", PARTS, ids=lambda p: p.name)
def test_sql_evaluates_only_built_in_code_over_user_data(part):
    assert problems(part.read_text(encoding="utf-8"), part.name) == []


def test_the_lint_finds_each_kind_of_occurrence():
    bad = """-- f: a function
CREATE FUNCTION simpg.f(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql
AS $$
DECLARE
    v jsonb := to_jsonb(NEW);
BEGIN
    EXECUTE format('SELECT t.%I::text FROM %s AS t', col, rel);
    EXECUTE format('SELECT CAST(t.%1$I AS text) FROM %2$s AS t', col, rel);
    EXECUTE format('SELECT a.key::text FROM r AS a ORDER BY a.key', rel);
    PERFORM NEW.x::text;
END
$$;
"""
    found = problems(bad, "bad.sql")
    assert len(found) == 5, found
    assert problems(bad.replace("-- f: a function", "-- f: keys from simpg.report_key"), "bad.sql") != found
    fine = bad.replace("    EXECUTE", "    -- built-in: the column is bigint (checked above)\n    EXECUTE")
    assert len(problems(fine, "fine.sql")) == 2  # to_jsonb(NEW) and NEW.x::text remain
