"""The PostgreSQL server the benchmarks run on, with the settings they state.

Debian's PostgreSQL 15 (as the test suite uses), started in a fresh temporary folder
as the test suite's unprivileged OS user, listening on a Unix socket only. Unlike the
test servers it keeps PostgreSQL's durability defaults (fsync, synchronous_commit,
full_page_writes on), so load and build figures are not flattered, and it has the
memory a dedicated 24 GB machine would give it. ``--dsn`` on the bench scripts
points them at a server of your own instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# tests/servers.py knows how to run PostgreSQL as a non-root OS user; reuse it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests import servers  # noqa: E402

#: The server settings of every figure in docs/benchmarks.md "## Index and query".
SETTINGS: dict[str, str] = {
    "shared_buffers": "6GB",
    "effective_cache_size": "16GB",
    "maintenance_work_mem": "1GB",
    "work_mem": "64MB",
    "max_parallel_maintenance_workers": "2",
    "max_parallel_workers_per_gather": "2",
    "max_wal_size": "16GB",
    "checkpoint_timeout": "30min",
    "jit": "off",
    "max_connections": "20",
}


def start(major: int = 15, settings: dict[str, str] | None = None) -> servers.Server:
    """initdb and start Debian's PostgreSQL ``major`` with :data:`SETTINGS` (or ``settings``)."""
    bindir = servers.debian_bindir(major)
    os_user = servers._ensure_os_user(servers.TEST_OS_USER) if servers._is_root() else None
    base = Path(tempfile.mkdtemp(prefix=f"simpg-bench-pg{major}-"))
    datadir, sockdir = base / "data", base / "sock"
    sockdir.mkdir()
    if os_user is not None:
        os.chmod(base, 0o755)
        for path in (base, sockdir):
            os.chown(path, os_user.pw_uid, os_user.pw_gid)
    subprocess.run(
        servers._as_user(
            [
                str(bindir / "initdb"),
                "-D",
                str(datadir),
                "-U",
                servers.SUPERUSER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            os_user,
        ),
        check=True,
        capture_output=True,
    )
    options = f"-c listen_addresses='' -c unix_socket_directories='{sockdir}' -p 5432 " + " ".join(
        f"-c {name}={value}" for name, value in (settings or SETTINGS).items()
    )
    subprocess.run(
        servers._as_user(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(datadir),
                "-o",
                options,
                "-l",
                str(base / "log"),
                "-w",
                "-t",
                "120",
                "start",
            ],
            os_user,
        ),
        check=True,
        capture_output=True,
    )

    def stop() -> None:
        subprocess.run(
            servers._as_user(
                [str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "fast", "-w", "stop"], os_user
            ),
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)

    atexit.register(stop)
    sharedir = Path(
        subprocess.run(
            [str(bindir / "pg_config"), "--sharedir"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    server = servers.Server(
        f"pg{major}", str(sockdir), 5432, servers.SUPERUSER, bindir, sharedir, _stop=[stop]
    )
    server.version = servers._server_version(server)
    return server
