"""The ``simpg`` command line.

Each subcommand lives in a module of :mod:`simpg.commands` that defines
``register(subparsers)``; this module collects them, runs the chosen one, and turns
every :class:`simpg.SimpgError` (and database error) into one lowercase line on
stderr with exit status 1, never a traceback. Output into a pipe whose reader has gone
(``simpg fingerprint *.txt | head -1``) ends the command quietly with status 0.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
from collections.abc import Sequence

import simpg.commands
from simpg import __version__
from simpg.exc import SimpgError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of simpg.commands registered."""
    parser = argparse.ArgumentParser(
        prog="simpg", description="Exact near-duplicate search with SimHash in PostgreSQL."
    )
    parser.add_argument("--version", action="version", version=f"simpg {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what simpg does")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(simpg.commands.__path__), key=lambda m: m.name):
        if module.name.startswith("_"):  # shared helpers, not commands
            continue
        importlib.import_module(f"simpg.commands.{module.name}").register(subparsers)
    return parser


def _message(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text[:1].lower() + text[1:]


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the last flush into a closed pipe does not fail again.

    The recipe of Python's signal module docs ("Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor underneath (tests, embedding)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    import psycopg

    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="simpg: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        _silence_stdout()  # the reader has all it wanted: not an error
        return 0
    except SimpgError as err:
        print(f"simpg: {_message(err)}", file=sys.stderr)
    except psycopg.Error as err:
        print(f"simpg: database error: {_message(err)}", file=sys.stderr)
    except OSError as err:
        print(f"simpg: {_message(err)}", file=sys.stderr)
    except KeyboardInterrupt:
        print("simpg: interrupted", file=sys.stderr)
        return 130
    return 1
