"""The PostgreSQL server the benchmarks run on, with the settings they state.

Debian's PostgreSQL 15 (as the test suite uses), started in a fresh temporary folder
as the test suite's unprivileged OS user, listening on a Unix socket only. Unlike the
test servers it keeps PostgreSQL's durability defaults (fsync, synchronous_commit,
full_page_writes on), so load and build figures are not flattered, and it has the
memory a dedicated 24 GB machine would give it. ``--dsn`` on the bench scripts
points them at a server of your own instead.
"""

from __future__ import annotations

import sys
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
    return servers.start_debian(major, settings=settings or SETTINGS)
