"""Every fenced code block of README.md and docs/*.md runs, against a real server.

The convention (stated in README.md and at the top of each document with blocks):

* Each document gets one fresh database with simpg installed; its blocks run in
  order against it, so a later block may use what an earlier one made.
* ``SIMPG_DSN`` names that database (the variable the ``simpg`` commands read when
  there is no ``--dsn``): Python blocks connect with ``os.environ["SIMPG_DSN"]``,
  shell blocks pass ``--dsn "$SIMPG_DSN"`` or rely on it. The libpq variables
  (``PGHOST``, ``PGPORT``, ``PGUSER``, ``PGDATABASE``) point at it too, so ``psql``
  with no arguments reaches it.
* ```` ```sql ````: run by ``psql -v ON_ERROR_STOP=1``.
* ```` ```python ````: executed as a script; all Python blocks of a document share one
  namespace, in order (a block may use names an earlier block defined).
* ```` ```sh ```` / ```` ```bash ````: run by ``bash -e -o pipefail``; must exit 0.
* ```` ```console ````: ``$ command`` lines, each followed by the output it prints
  (stdout and stderr); the output is compared line by line, a line ``...`` stands for
  any number of lines.
* Shell blocks run in a scratch folder that links the repository's top-level files and
  folders (``README.md``, ``examples/``, ``migrations/``, ...), so relative paths work
  and files the commands write are thrown away.
* A block that cannot run here (a deployment, a package download, an output sample, a
  synopsis) is marked on the line before its fence with ``<!-- not run: REASON -->``.
  Any other block, in any language, must run: an unmarked block that fails, or one in a
  language this file does not know, fails the test.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"sql", "python", "sh", "bash", "console"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
TIMEOUT = 180  # seconds per command: a hang fails; a Spark start on a busy 2-core machine took over 60


@dataclass
class Block:
    """One fenced code block: where it starts, its language, its text, and its not-run reason."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, with the marker on the line before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening["fence"]
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and not lines[i].strip().strip(fence[0])):
            # a fence indented inside a list item: its lines lose that indentation
            indent = len(opening["indent"])
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
            i += 1
        i += 1  # the closing fence
        marker = NOT_RUN.match(lines[start - 1]) if start > 0 else None
        lang = opening["info"].strip().split(" ")[0].lower() if opening["info"].strip() else ""
        found.append(Block(path, start + 1, lang, "\n".join(body) + "\n",
                           marker["reason"] if marker else None))
    return found


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


# -- checks without a server -------------------------------------------------------


@pytest.mark.parametrize("path", DOCUMENTS, ids=_id)
def test_every_block_runs_or_says_why_not(path: Path) -> None:
    problems = []
    for block in blocks(path):
        if block.not_run is not None:
            if not block.not_run:
                problems.append(f"{block.where}: <!-- not run: --> needs a reason")
        elif block.lang not in RUNNABLE:
            problems.append(f"{block.where}: a ```{block.lang} block that is neither run "
                            f"({', '.join(sorted(RUNNABLE))}) nor marked <!-- not run: REASON -->")
    assert not problems, "\n".join(problems)


def test_the_parser_sees_markers_and_languages(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("text\n```sql\nSELECT 1;\n```\n\n<!-- not run: needs docker -->\n```sh\ndocker ps\n```\n"
                   "````python\n```\nx = 1\n````\n```\noutput\n```\n"
                   "* item\n\n  ```python\n  if x:\n      y = 2\n  ```\n")
    got = [(b.line, b.lang, b.code, b.not_run) for b in blocks(doc)]
    assert got == [(2, "sql", "SELECT 1;\n", None), (7, "sh", "docker ps\n", "needs docker"),
                   (10, "python", "```\nx = 1\n", None), (14, "", "output\n", None),
                   (19, "python", "if x:\n    y = 2\n", None)]


def test_the_reference_schema_shown_is_the_one_built() -> None:
    # docs/python.md shows simpg_documents' DDL but cannot run it (simpg dedup made the table before).
    from simpg import reference

    shown = [b.code for b in blocks(ROOT / "docs" / "python.md") if "CREATE TABLE simpg_documents" in b.code]
    assert shown == [reference.script()]


# -- running the blocks ------------------------------------------------------------


def _psql() -> str:
    for candidate in (shutil.which("psql"), "/usr/lib/postgresql/15/bin/psql"):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("no psql client; on Debian: apt-get install postgresql-client-15")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A scratch folder that links the repository's top-level entries."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git",):
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def _environment(db: object, workdir: Path) -> dict[str, str]:
    server = db.pg.server  # type: ignore[attr-defined]
    bindir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "SIMPG_DSN": db.dsn,  # type: ignore[attr-defined]
        "PGHOST": server.host, "PGPORT": str(server.port), "PGUSER": server.user,
        "PGDATABASE": db.name,  # type: ignore[attr-defined]
        "SIMPG_HOME": str(workdir / ".simpg-home"),  # never the user's embedded server
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
    }


def _run_sql(block: Block, env: dict[str, str], cwd: Path) -> None:
    result = subprocess.run([_psql(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"], input=block.code,
                            env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, f"psql exited {result.returncode}:\n{result.stderr}"


def _run_python(block: Block, namespace: dict[str, object]) -> None:
    # Pad so that a traceback names the Markdown file's own line numbers.
    source = "\n" * block.line + block.code
    # dont_inherit: this module's `from __future__ import annotations` must not leak into the docs' code.
    code = compile(source, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    result = eval(code, namespace)  # noqa: S307 - the documentation's own code
    if asyncio.iscoroutine(result):
        asyncio.run(result)


def _run_sh(block: Block, env: dict[str, str], cwd: Path) -> None:
    result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], env=env, cwd=cwd,
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, (f"exit status {result.returncode}\nstdout:\n{result.stdout}\n"
                                    f"stderr:\n{result.stderr}")


def console_steps(code: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines of a console block, each with the output lines shown after it."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line.rstrip())
        elif line.strip():
            raise AssertionError(f"console block starts with output, not a '$ ' command: {line!r}")
    return steps


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Line-by-line equality, where an expected line ``...`` matches any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(output_matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and output_matches(expected[1:], actual[1:])


def test_console_output_matching() -> None:
    assert console_steps("$ echo a\na\n$ true\n") == [("echo a", ["a"]), ("true", [])]
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "..."], ["a"])
    assert not output_matches(["a"], ["a", "b"])
    assert not output_matches(["a", "...", "d"], ["a", "b"])


def _run_console(block: Block, env: dict[str, str], cwd: Path) -> None:
    for command, expected in console_steps(block.code):
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command], env=env, cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
        actual = [line.rstrip() for line in result.stdout.splitlines()]
        while expected and not expected[-1]:
            expected = expected[:-1]
        assert output_matches(expected, actual), (
            f"$ {command}\n(exit status {result.returncode})\nexpected:\n" + "\n".join(expected)
            + "\ngot:\n" + "\n".join(actual))


def _close(namespace: dict[str, object]) -> None:
    """Close what the document's Python left open, so that its database can be dropped."""
    import psycopg
    import sqlalchemy.orm

    values = list(namespace.values())
    for value in values:  # sessions before their engines
        try:
            if isinstance(value, (psycopg.Connection, sqlalchemy.orm.Session)):
                value.close()
            elif hasattr(value, "close") and type(value).__module__.startswith(("psycopg_pool", "simpg")):
                value.close()
        except Exception:  # noqa: BLE001 - best effort cleanup
            pass
    for value in values:
        if isinstance(value, sqlalchemy.Engine):
            value.dispose()


@pytest.fixture
def doc_env(db: object, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    env = _environment(db, workdir)
    for name in ("SIMPG_DSN", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "SIMPG_HOME"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(workdir)
    yield env


RUNNERS_WITH_DB = [p for p in DOCUMENTS if any(b.not_run is None for b in blocks(p))]


@pytest.mark.parametrize("path", RUNNERS_WITH_DB, ids=_id)
def test_document_runs(path: Path, doc_env: dict[str, str], workdir: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__main__", "__file__": str(path)}
    try:
        for block in blocks(path):
            if block.not_run is not None:
                continue
            try:
                if block.lang == "sql":
                    _run_sql(block, doc_env, workdir)
                elif block.lang == "python":
                    _run_python(block, namespace)
                elif block.lang in ("sh", "bash"):
                    _run_sh(block, doc_env, workdir)
                elif block.lang == "console":
                    _run_console(block, doc_env, workdir)
                else:
                    raise AssertionError(f"a ```{block.lang} block cannot run; mark it <!-- not run: REASON -->")
            except BaseException as err:
                if isinstance(err, (KeyboardInterrupt, pytest.skip.Exception)):
                    raise
                raise AssertionError(f"{block.where}: the ```{block.lang} block fails "
                                     f"(fix it, or mark it <!-- not run: REASON -->):\n{block.code}\n"
                                     f"{type(err).__name__}: {err}") from err
    finally:
        _close(namespace)
