"""``simpg server start|stop|status``: keep the embedded default server running for a session.

Without ``--dsn`` or ``SIMPG_DSN`` every command starts the embedded PostgreSQL and stops
it when done (about 5 s each time). ``simpg server start`` starts it once and leaves it
running: the commands find it running and use it, and leave it running, until ``simpg
server stop``. The server is reachable only by this OS user: it listens on no TCP
address, only on a Unix socket in its data directory (mode 0700); ``start`` refuses to
keep a server whose socket directory others may enter (:mod:`simpg.embedded`).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from simpg.exc import SimpgError


def register(subparsers: Any) -> None:
    """Add ``server start``, ``server stop`` and ``server status``."""
    top = subparsers.add_parser(
        "server", help="keep the embedded PostgreSQL running for a session (start, stop, status)",
        description="The embedded default PostgreSQL (used without --dsn or SIMPG_DSN), kept running "
                    "between commands.")
    actions = top.add_subparsers(dest="server_command", metavar="ACTION")
    actions.add_parser("start", help="start it and keep it running until simpg server stop").set_defaults(
        func=run_start)
    actions.add_parser("stop", help="stop it (and end the session)").set_defaults(func=run_stop)
    status = actions.add_parser("status", help="whether it runs, where its data and socket are")
    status.add_argument("--json", action="store_true", help="print JSON for machines")
    status.set_defaults(func=run_status)
    top.set_defaults(func=lambda args: _usage(top))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_start(args: argparse.Namespace) -> int:
    """Start the server (or adopt the one running) and mark the session."""
    from simpg import embedded

    pgdata = embedded.data_dir()
    marker = embedded.session_file(pgdata)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch(mode=0o600)  # first: from now on no command stops the server on its way out
    try:
        embedded.embedded_dsn(pgdata)  # started, extension installed, database created
        info = embedded.running(pgdata)
        if info is None:
            raise SimpgError(f"the embedded PostgreSQL in {pgdata} did not stay up (see {pgdata / 'log'})")
        problem = embedded.socket_not_private(info)
        if problem is not None:
            embedded.stop_server(pgdata)
            raise SimpgError(f"not keeping the embedded PostgreSQL running: {problem}")
    except BaseException:
        marker.unlink(missing_ok=True)
        raise
    print(f"embedded PostgreSQL running in {pgdata} (pid {info.pid}, socket in {info.socket_dir}); "
          "simpg commands without --dsn use it until simpg server stop")
    return 0


def run_stop(args: argparse.Namespace) -> int:
    """Stop the server and end the session."""
    from simpg import embedded

    pgdata = embedded.data_dir()
    if embedded.stop_server(pgdata):
        print(f"embedded PostgreSQL in {pgdata} stopped")
    else:
        print(f"embedded PostgreSQL in {pgdata} was not running")
    return 0


def run_status(args: argparse.Namespace) -> int:
    """Whether the server runs (and for a session), its pid, data and socket directories."""
    from simpg import embedded

    pgdata = embedded.data_dir()
    info = embedded.running(pgdata)
    started = getattr(info, "start_time", None)
    status = {
        "running": info is not None,
        "session": info is not None and embedded.session_file(pgdata).exists(),
        "data_directory": str(pgdata),
        "pid": None if info is None else info.pid,
        "socket_directory": None if info is None or info.socket_dir is None else str(info.socket_dir),
        "started": started.isoformat() if isinstance(started, datetime) else None,
    }
    if args.json:
        json.dump(status, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif info is None:
        print(f"embedded PostgreSQL in {pgdata}: not running (simpg server start keeps one running)")
    else:
        kept = "kept running by simpg server start" if status["session"] else "started by a running command"
        print(f"embedded PostgreSQL in {pgdata}: running, {kept} (pid {info.pid}, socket in {info.socket_dir})")
    return 0
