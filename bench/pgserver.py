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
    # Shared buffers in 2 MB pages when the kernel has them reserved (as root:
    # `sysctl -w vm.nr_hugepages=3300` for 6GB), else 4 KB pages. Index lookups are
    # TLB and cache misses on index pages: at 10M rows huge pages made a lookup 0.242
    # instead of 0.278 ms. The reports say which it was (huge_pages_in_use).
    "huge_pages": "try",
    "max_connections": "20",
}


def start(major: int = 15, settings: dict[str, str] | None = None) -> servers.Server:
    """initdb and start Debian's PostgreSQL ``major`` with :data:`SETTINGS` (or ``settings``)."""
    return servers.start_debian(major, settings=settings or SETTINGS)


def huge_pages_in_use() -> int:
    """Huge pages taken (reserved or used) on this machine now, from /proc/meminfo; 0 if none."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    except OSError:
        return 0
    def pages(key: str) -> int:
        return int(info.get(key, "0").split()[0])
    return pages("HugePages_Total") - pages("HugePages_Free") + pages("HugePages_Rsvd")
