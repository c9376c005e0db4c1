"""docker/: the images' steps replayed without a docker engine, against the test servers.

tests/integration/test_container.py builds and runs docker/debian.Dockerfile and the
compose services with podman; this file checks the rest without a container engine. The
database image's one real step, docker/install-extension.sh run on the files its COPY
lines put in place, is replayed in a scratch folder with the
test server's pg_config; the files it writes must then make a working extension on that
server. The app image's install (``pip install .`` of exactly what it copies) is built
too, and the compose file's migrate command runs against a test server. Linting the
Dockerfiles (hadolint) and the script (shellcheck) is .ci/run's job, beside ruff and mypy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml

from simpg import schema

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
SCRIPT = DOCKER / "install-extension.sh"
DOCKERFILES = [DOCKER / "Dockerfile", DOCKER / "debian.Dockerfile", DOCKER / "app.Dockerfile"]
#: the official-image and the plain-Debian database images
DATABASE_DOCKERFILES = [DOCKER / "Dockerfile", DOCKER / "debian.Dockerfile"]


def run_script(*args: str, script: Path = SCRIPT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    found = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def replay_copies(dockerfile: Path, image: Path, workdir: str = "/") -> None:
    """Put what the Dockerfile's COPY lines copy (from the repository, the build context) under ``image``."""
    for word, rest in instructions(dockerfile):
        if word == "WORKDIR":
            workdir = rest
        if word != "COPY":
            continue
        *sources, dest = rest.split()
        target = image / Path(workdir, dest).relative_to("/")
        for source in sources:
            path = ROOT / source
            assert path.exists(), f"{dockerfile.name} copies {source}, which is missing"
            if path.is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            else:
                (target if dest.endswith("/") else target.parent).mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target / path.name if dest.endswith("/") else target)


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


def test_database_image_steps_install_a_working_extension(pg, bare_db, tmp_path):
    """docker/Dockerfile's COPY and RUN replayed in a scratch folder, then used by the server."""
    if not pg.extension_files:
        pytest.skip(f"the server's share folder {pg.server.sharedir} is not writable here")
    image, staged = tmp_path / "image", tmp_path / "staged"
    replay_copies(DOCKER / "Dockerfile", image)
    (run,) = [rest for word, rest in instructions(DOCKER / "Dockerfile") if word == "RUN"]
    step = re.fullmatch(r"sh (/\S+) (/\S+)\s+&&\s+rm -rf /tmp/simpg", run)
    assert step, f"the image's RUN step changed: {run}"
    script, sql_dir = (image / Path(p).relative_to("/") for p in step.groups())
    done = run_script(str(sql_dir), script=script, PG_CONFIG=str(pg.server.pg_config), DESTDIR=str(staged))
    assert done.returncode == 0, done.stderr
    sharedir = subprocess.run(
        [str(pg.server.pg_config), "--sharedir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    written = staged / Path(sharedir).relative_to("/") / "extension"
    assert {p.name: p.read_text(encoding="utf-8") for p in written.iterdir()} == schema.extension_files()

    # The server reads exactly the staged files: the suite's own copies are removed first.
    extension_dir = Path(sharedir) / "extension"
    try:
        for name in schema.extension_files():
            (extension_dir / name).unlink()
        for path in written.iterdir():
            shutil.copy(path, extension_dir / path.name)
        _create_and_update(pg, bare_db)
    finally:
        schema.install_extension_files(sharedir=pg.server.sharedir)


def _psql_file(pg, dsn: str, path: Path) -> None:
    done = subprocess.run([str(pg.server.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(path), dsn],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _create_and_update(pg, bare_db) -> None:
    conn = bare_db.conn
    _psql_file(pg, bare_db.dsn, DOCKER / "initdb" / "10-simpg.sql")  # the image's first start
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
    _psql_file(pg, bare_db.dsn, DOCKER / "initdb" / "10-simpg.sql")
    targets = [
        name.split("--")[2][:-4] for name in schema.extension_files() if name.count("--") == 2
    ]
    for version in targets:
        conn.execute(f"ALTER EXTENSION simpg UPDATE TO '{version}'")
        assert conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'simpg'"
        ).fetchone() == (version,)


def test_app_image_installs_simpg_from_what_it_copies(tmp_path):
    """docker/app.Dockerfile's ``pip install .`` builds from exactly the files copied before it."""
    image = tmp_path / "image"
    dockerfile = DOCKER / "app.Dockerfile"
    lines = dockerfile.read_text(encoding="utf-8").split("\nRUN pip install", 1)
    assert len(lines) == 2, "app.Dockerfile no longer installs with 'RUN pip install'"
    partial = tmp_path / "app.Dockerfile"
    partial.write_text(lines[0] + "\n", encoding="utf-8")
    replay_copies(partial, image)
    workdir = [rest for word, rest in instructions(partial) if word == "WORKDIR"][-1]
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(image / Path(workdir).relative_to("/"))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list((tmp_path / "dist").glob("simpg-*.whl"))) == 1
    replay_copies(dockerfile, tmp_path / "whole")  # the COPY lines after the install name files that exist too


def simpg_steps(dockerfile: Path) -> list[tuple[str, str]]:
    """The instructions that install simpg: the COPY of sql/, the script and the initdb SQL, its RUN."""
    sources = ("sql/", "docker/install-extension.sh", "docker/initdb/10-simpg.sql")
    return [(word, rest) for word, rest in instructions(dockerfile)
            if (word == "COPY" and rest.split()[0] in sources) or (word == "RUN" and "install-extension.sh" in rest)]


def test_database_images_share_the_install_steps():
    """docker/Dockerfile (official image) and docker/debian.Dockerfile install simpg alike."""
    official, debian = (simpg_steps(path) for path in DATABASE_DOCKERFILES)
    assert len(official) == 4
    assert debian == official


def test_compose_file_builds_and_runs_files_that_exist():
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
    # the Debian variant only switches the database image (merged over the main file)
    debian = yaml.safe_load((DOCKER / "docker-compose.debian.yml").read_text())
    assert set(debian["services"]) == {"db"}
    assert (ROOT / debian["services"]["db"]["build"]["dockerfile"]).resolve() == DOCKER / "debian.Dockerfile"
    for name, service in compose["services"].items():
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == ROOT, name
            assert (context / build["dockerfile"]).resolve() in DOCKERFILES, name
        env = service.get("environment", {})
        if "SIMPG_DSN" in env:
            psycopg.conninfo.conninfo_to_dict(env["SIMPG_DSN"])  # parses as a libpq DSN
    migrate = compose["services"]["migrate"]["command"]
    assert (ROOT / migrate[migrate.index("-c") + 1]).is_file()


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
