"""docker/debian.Dockerfile built and run with podman, and used from the host.

The image is built from a plain Debian base (``debootstrap --variant=minbase bookworm``,
``podman import``) with Debian's own postgresql-15, and started with host networking on a
free port. From the host, then: a database owner that is not a superuser runs ``CREATE
EXTENSION simpg``, creates an index and inserts rows; ``simpg.near`` and ``simpg.pairs``
equal brute force; ``simpg dedup --dsn`` (this checkout's package) loads the sample corpus
into the container and finds exactly the brute-force pairs. The container is stopped and
a new one started on the same data volume: the data is still there and lookups still exact.
Then the compose file's three services (database, one-shot migration, example web app)
run with podman-compose, the app's image installed from PyPI.

What it needs it installs as root with apt-get (podman, runc, debootstrap, podman-compose), as
tests/servers.py does for pgTAP. podman's configuration and storage live in a temporary
folder that is removed at the end, so nothing is left behind and two runs do not collide;
only the debootstrap base is kept between runs, as a tarball in ~/.cache/simpg-test/
(``$SIMPG_TEST_CACHE``), and made again when it is missing.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from simpg import bits, schema
from tests.oracles import brute_near_ids, brute_pairs, brute_text_pairs

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
CORPUS = ROOT / "examples" / "corpus"
CACHE = Path(os.environ.get("SIMPG_TEST_CACHE", Path.home() / ".cache" / "simpg-test"))
BASE_TAR = CACHE / "debian-bookworm-minbase.tar"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_IMAGE = "localhost/simpg-test/debian:bookworm"
IMAGE = "localhost/simpg-postgres:15-debian"
SUPERUSER = "simpg"  # POSTGRES_USER, as in docker/docker-compose.yml
#: Debian package of each command (or file) the tests run
PACKAGES = {"podman": "podman", "runc": "runc", "debootstrap": "debootstrap", "podman-compose": "podman-compose",
            # host names of compose services (db) on podman's CNI networks
            "/usr/lib/cni/dnsname": "golang-github-containernetworking-plugin-dnsname"}


def ensure_packages(commands: list[str]) -> None:
    """apt-get install the packages of the missing commands (as root), or say what to install."""
    missing = [PACKAGES[c] for c in commands if not (Path(c).exists() if c.startswith("/") else shutil.which(c))]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(f"missing Debian packages; run: apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
    if subprocess.run(install, env=env, capture_output=True, timeout=600).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, check=True, capture_output=True, timeout=600)
        subprocess.run(install, env=env, check=True, capture_output=True, timeout=600)


class Podman:
    """podman with its configuration, storage and state in one folder of its own.

    runc as the runtime and cgroupfs for cgroups (no systemd here), no default ulimits,
    host networking: what works on a Debian 12 machine or container as root.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        conf, storage, registries = home / "containers.conf", home / "storage.conf", home / "registries.conf"
        conf.write_text(
            "[containers]\n"
            "default_ulimits = []\n"
            'netns = "host"\n'
            "[engine]\n"
            'runtime = "runc"\n'
            'cgroup_manager = "cgroupfs"\n'
            'events_logger = "file"\n'
            f'events_logfile_path = "{home}/events.log"\n'
            f'tmp_dir = "{home}/tmp"\n'
            "[network]\n"
            f'network_config_dir = "{home}/cni"\n',
            encoding="utf-8",
        )
        storage.write_text(
            f'[storage]\ndriver = "overlay"\ngraphroot = "{home}/storage"\nrunroot = "{home}/run"\n',
            encoding="utf-8",
        )
        registries.write_text("", encoding="utf-8")  # no registry: every image is made here
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf), "CONTAINERS_STORAGE_CONF": str(storage),
                    "CONTAINERS_REGISTRIES_CONF": str(registries)}

    def __call__(self, *args: str, timeout: float = 120, check: bool = True,
                 stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
        with open(stdin or os.devnull, "rb") as source:
            done = subprocess.run(["podman", *args], env=self.env, stdin=source, capture_output=True,
                                  text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done


@pytest.fixture(scope="module")
def podman() -> Iterator[Podman]:
    ensure_packages(["podman", "runc"])
    home = Path(tempfile.mkdtemp(prefix="simpg-podman-"))
    tool = Podman(home)
    try:
        yield tool
    finally:
        # unmounts what the storage mounted, then the folder can go
        tool("system", "reset", "--force", timeout=300, check=False)
        shutil.rmtree(home, ignore_errors=True)


def debian_base(podman: Podman) -> str:
    """The minbase Debian image: the cached debootstrap tarball imported, made first if missing."""
    if not BASE_TAR.exists():
        ensure_packages(["debootstrap"])
        CACHE.mkdir(parents=True, exist_ok=True)
        rootfs = Path(tempfile.mkdtemp(prefix="simpg-debootstrap-"))
        try:
            done = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR],
                                  capture_output=True, text=True, timeout=1200)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            # the downloaded packages are not part of an image
            for deb in (rootfs / "var" / "cache" / "apt" / "archives").glob("*.deb"):
                deb.unlink()
            partial = BASE_TAR.with_suffix(f".{os.getpid()}.partial")
            subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True, timeout=600)
            partial.replace(BASE_TAR)  # whole or not at all, for the next run
        finally:
            shutil.rmtree(rootfs, ignore_errors=True)
    podman("import", str(BASE_TAR), BASE_IMAGE, timeout=600)
    return BASE_IMAGE


@pytest.fixture(scope="module")
def image(podman: Podman) -> str:
    """docker/debian.Dockerfile built as a user builds it, FROM the minbase Debian image."""
    base = debian_base(podman)
    podman("build", "--format", "docker", "--network", "host", "--build-arg", f"BASE={base}",
           "-f", str(DOCKER / "debian.Dockerfile"), "-t", IMAGE, str(ROOT), timeout=1200)
    return IMAGE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Database:
    """One container of the image on a data volume, reached from the host over TCP."""

    def __init__(self, podman: Podman, volume: str, password: str) -> None:
        self.podman, self.volume, self.password = podman, volume, password
        self.port = free_port()
        self.name = ""

    def dsn(self, dbname: str = SUPERUSER, user: str = SUPERUSER, password: str | None = None) -> str:
        return psycopg.conninfo.make_conninfo(host="127.0.0.1", port=self.port, dbname=dbname, user=user,
                                              password=password or self.password, connect_timeout=10)

    def start(self) -> None:
        self.name = f"simpg-db-{secrets.token_hex(4)}"
        self.podman("run", "--detach", "--name", self.name, "--network", "host",
                    "--env", f"PGPORT={self.port}", "--env", f"POSTGRES_USER={SUPERUSER}",
                    "--env", f"POSTGRES_PASSWORD={self.password}", "--env", f"POSTGRES_DB={SUPERUSER}",
                    "--volume", f"{self.volume}:/var/lib/postgresql/data",
                    IMAGE, "postgres", "-c", "listen_addresses=127.0.0.1")
        self.wait_ready(timeout=180)

    def wait_ready(self, timeout: float) -> None:
        """Until the server takes a password login over TCP (after the first start's initdb)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.dsn()).close()
                return
            except psycopg.OperationalError as error:
                last = error
            running = self.podman("inspect", "--format", "{{.State.Running}}", self.name).stdout.strip()
            if running != "true" or time.monotonic() > deadline:
                logs = self.podman("logs", self.name, check=False)
                raise AssertionError(f"{self.name} not ready (running: {running}): {last}\n"
                                     f"{logs.stdout[-4000:]}{logs.stderr[-4000:]}")
            time.sleep(0.5)

    def logs(self) -> str:
        done = self.podman("logs", self.name)
        return done.stdout + done.stderr

    def stop(self) -> None:
        self.podman("stop", "--time", "60", self.name, timeout=120)
        exit_code = self.podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout.strip()
        assert exit_code == "0", self.logs()  # a fast shutdown, not a kill
        self.podman("rm", self.name)
        self.name = ""


def fingerprints(rng: random.Random, count: int) -> list[int]:
    """Groups of near-duplicates (a few bits flipped from a center) among unrelated values."""
    found: list[int] = []
    while len(found) < count:
        center = rng.getrandbits(64)
        found.append(center)
        for _ in range(rng.randrange(6)):
            flipped = center
            for position in rng.sample(range(64), rng.randrange(6)):
                flipped ^= 1 << position
            found.append(flipped)
    return [bits.to_db(fp) for fp in found[:count]]


def check_lookups(conn: psycopg.Connection, rows: dict[int, int], queries: list[int], k: int) -> None:
    for query in queries:
        got = [key for (key,) in conn.execute("SELECT id FROM simpg.near(NULL::docs, %s, %s) ORDER BY id",
                                              [query, k])]
        assert got == sorted(brute_near_ids(rows.items(), query, k)), query
    pairs = conn.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', %s)", [k]).fetchall()
    assert len(pairs) == len(set(pairs))
    assert {(a, b): d for a, b, d in pairs} == brute_pairs(rows, k)


def test_image_serves_simpg_to_a_database_owner_and_keeps_its_data(podman: Podman, image: str) -> None:
    volume = f"simpg-data-{secrets.token_hex(4)}"
    podman("volume", "create", volume)
    db = Database(podman, volume, password=secrets.token_urlsafe(16))
    owner_password = secrets.token_urlsafe(16)
    rng = random.Random(31)
    rows = dict(enumerate(fingerprints(rng, 1500), start=1))
    queries = [*rng.sample(list(rows.values()), 40), *(bits.to_db(rng.getrandbits(64)) for _ in range(10))]
    k = 3
    try:
        db.start()
        assert "docker-entrypoint.sh: initialised" in db.logs()
        assert podman("healthcheck", "run", db.name, check=False).returncode == 0  # the image's pg_isready
        with psycopg.connect(db.dsn(), autocommit=True) as admin:
            # the first start ran docker/initdb/10-simpg.sql in POSTGRES_DB
            assert admin.execute("SELECT extversion FROM pg_extension WHERE extname = 'simpg'").fetchone() == (
                schema.default_version(),)
            # the server process is not root: the image runs it as postgres
            assert admin.execute("SELECT pg_catalog.current_setting('data_directory')").fetchone() == (
                "/var/lib/postgresql/data",)
            admin.execute(sql.SQL("CREATE ROLE app_owner LOGIN PASSWORD {}").format(sql.Literal(owner_password)))
            admin.execute("CREATE DATABASE app OWNER app_owner")
        top = podman("top", db.name, "user", "comm").stdout.split("\n")[1:]
        assert {line.split()[0] for line in top if line.strip()} == {"postgres"}

        app_dsn = db.dsn("app", "app_owner", owner_password)
        with psycopg.connect(app_dsn, autocommit=True) as conn:
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
            conn.execute("CREATE EXTENSION simpg")  # trusted: the database owner may
            assert conn.execute(
                "SELECT extowner::regrole::text, extversion FROM pg_extension WHERE extname = 'simpg'"
            ).fetchone() == ("app_owner", schema.default_version())
            conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint NOT NULL)")
            conn.execute("SELECT simpg.create_index('docs', 'simhash', %s)", [k])
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO docs VALUES (%s, %s)", list(rows.items()))
            check_lookups(conn, rows, queries, k)

        # simpg dedup from this checkout, against the container
        done = subprocess.run([sys.executable, "-m", "simpg", "dedup", str(CORPUS), "--dsn", app_dsn, "--json"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        texts: dict[str, object] = {os.fspath(p): p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.txt"))}
        assert report["documents"] == len(texts)
        assert {frozenset((p["source_a"], p["source_b"])): (p["distance"], p["sketch_distance"])
                for p in report["pairs"]} == brute_text_pairs(texts, report["k"])
        assert report["pairs"]  # the sample corpus has near-duplicates

        db.stop()
        # a new container on the same volume: no second initdb, the data and the extension kept
        db.start()
        assert "initialised" not in db.logs()
        with psycopg.connect(app_dsn, autocommit=True) as conn:
            assert dict(conn.execute("SELECT id, simhash FROM docs").fetchall()) == rows
            assert conn.execute("SELECT count(*) FROM simpg_documents").fetchone() == (len(texts),)
            check_lookups(conn, rows, queries, k)
        db.stop()
    finally:
        if db.name:
            podman("rm", "--force", db.name, check=False)
        podman("volume", "rm", "--force", volume, check=False)


def test_first_start_without_a_password_refuses(podman: Podman, image: str) -> None:
    """As the official image: no superuser without a password (TCP logins need one)."""
    name = f"simpg-nopw-{secrets.token_hex(4)}"
    try:
        done = podman("run", "--name", name, "--network", "host", "--env", f"PGPORT={free_port()}",
                      image, timeout=120, check=False)
        assert done.returncode == 1
        assert "docker-entrypoint.sh: POSTGRES_PASSWORD is empty: set the superuser's password" in done.stderr
    finally:
        podman("rm", "--force", name, check=False)


def http(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """(status, JSON answer) of one request to the example app."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_compose_services_run_with_podman_compose(podman: Podman, image: str) -> None:
    """docker-compose.yml + docker-compose.debian.yml: db, then migrate once, then the app."""
    ensure_packages(["podman-compose", "/usr/lib/cni/dnsname"])
    project = f"simpg-test-{secrets.token_hex(4)}"
    db_port, app_port = free_port(), free_port()
    env = {**podman.env, "SIMPG_DEBIAN_BASE": BASE_IMAGE, "SIMPG_DB_PORT": str(db_port),
           "SIMPG_APP_PORT": str(app_port)}
    files = ["-f", str(DOCKER / "docker-compose.yml"), "-f", str(DOCKER / "docker-compose.debian.yml")]
    build_args = []
    cafile = ssl.get_default_verify_paths().cafile
    if cafile and Path(cafile).is_file():  # pip in the build trusts what this host trusts (a proxy's CA)
        build_args = ["--podman-build-args", f"--volume {cafile}:/run/ca.crt:ro --build-arg PIP_CERT=/run/ca.crt"]

    def compose(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["podman-compose", "-p", project, *build_args, *files, *args], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        return done

    def wait_for_app(timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if http("GET", f"{base}/documents/0") == (404, {"error": "no document 0"}):
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                logs = podman("logs", f"{project}_app_1", check=False)
                raise AssertionError(f"the app did not answer in {timeout} s:\n"
                                     f"{logs.stdout[-3000:]}{logs.stderr[-3000:]}")
            time.sleep(1)

    base = f"http://127.0.0.1:{app_port}"
    body = "A bicycle tyre keeps its pressure for weeks when the valve core is tight. " * 4
    try:
        compose("build", timeout=1200)
        compose("up", "-d")
        wait_for_app()
        migrate = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", f"{project}_migrate_1")
        assert migrate.stdout.split() == ["exited", "0"]
        assert podman("healthcheck", "run", f"{project}_app_1", check=False).returncode == 0
        dsn = psycopg.conninfo.make_conninfo(host="127.0.0.1", port=db_port, user="simpg", password="simpg",
                                             dbname="simpg", connect_timeout=10)
        with psycopg.connect(dsn) as conn:  # through the published port: what migrate and the app made
            assert conn.execute("SELECT indexed_table::text FROM simpg.indexes ORDER BY 1").fetchall() == [
                ("simpg_documents",), ("webapp_documents",)]
        status, stored = http("POST", f"{base}/documents", {"title": "tyres", "body": body})
        assert status == 201, stored
        status, refused = http("POST", f"{base}/documents", {"title": "again", "body": body + "!"})
        assert (status, refused["error"], refused["existing"]["id"]) == (409, "near-duplicate", stored["id"])

        compose("down")  # the containers go, the volume stays
        compose("up", "-d")
        wait_for_app()
        assert http("GET", f"{base}/documents/{stored['id']}") == (200, stored)
    finally:
        subprocess.run(["podman-compose", "-p", project, *files, "down", "--volumes"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
