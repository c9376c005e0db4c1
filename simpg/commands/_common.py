"""What several commands share: options spelled the same everywhere, progress, the database.

The radius is ``-k`` in every command, as in SQL (``k``) and Python (``k=``);
``-d`` also stays on ``find-all`` and ``find-clusters`` (and their Spark twins), the
flag of seed 004's tool. Errors name the flag as the user typed it.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from simpg import layout
from simpg.exc import InvalidLayout, SimpgError
from simpg.fingerprint import SKETCH_BITS

logger = logging.getLogger(__name__)

T = TypeVar("T")


def add_dsn_argument(parser: argparse.ArgumentParser) -> None:
    """--dsn, defaulting to $SIMPG_DSN (no default: installing needs an explicit target)."""
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"),
                        help="PostgreSQL connection string (default: $SIMPG_DSN)")


_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9, "t": 10**12}


def parse_rows(text: str) -> int:
    """``10000000``, ``10_000_000``, ``10,000,000``, ``10M`` or ``1.5G`` as an integer.

    Raises:
        SimpgError: the text is not a non-negative row count.
    """
    match = re.fullmatch(
        r"(\d+(?:\.\d+)?)([kmgbt]?)", text.strip().replace("_", "").replace(",", "").lower()
    )
    if match is None:
        raise SimpgError(
            f"rows must be a non-negative integer such as 10000000 or 10M, got {text!r}"
        )
    return (
        round(float(match.group(1)) * _SUFFIXES[match.group(2)])
        if "." in match.group(1)
        else int(match.group(1)) * _SUFFIXES[match.group(2)]
    )


class _Radius(argparse.Action):
    """Stores the value as ``k`` and the flag typed as ``k_flag``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.k_flag = option_string or "-k"


def add_radius(p: argparse.ArgumentParser, *, default: int | None = None, required: bool = False,
               seed004: bool = False, help: str = "largest number of differing bits") -> None:
    """Add ``-k`` (and ``-d`` where ``seed004``), stored as ``args.k``."""
    flags = ("-k", "-d") if seed004 else ("-k",)
    p.add_argument(*flags, dest="k", type=int, default=default, required=required, metavar="K",
                   action=_Radius, help=help)
    p.set_defaults(k_flag="-k")


def check_radius(args: argparse.Namespace, limit: int, what: str = "") -> int:
    """``args.k``, refused outside ``0..limit`` (:func:`simpg.layout.check_radius`).

    The error names the flag as typed and the allowed range: whoever runs the command may
    not manage the index.
    """
    try:
        return layout.check_radius(args.k, limit)
    except InvalidLayout:
        raise SimpgError(f"{args.k_flag} must be from 0 to {limit}{what}, got {args.k}") from None


def add_common_arguments(p: argparse.ArgumentParser, k_default: int | None, k_help: str) -> None:
    """-k, --json and --progress, shared with ``simpg near``."""
    add_radius(p, default=k_default, help=f"largest number of differing bits {k_help}")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.add_argument("--progress", action="store_true", help="show progress bars even when stderr is not a terminal")


def check_k(args: argparse.Namespace, info: Any, what: str) -> int:
    """-k (default: the index's radius), refused outside what the index on ``what`` answers.

    The message gives the allowed range: whoever runs the command may not manage the index.
    """
    limit = int(info.layout.k)
    if args.k is None:
        return limit
    return check_radius(args, limit, f" for {what}")


def stage(args: argparse.Namespace, text: str) -> None:
    """A line on stderr naming the step that starts, when progress is shown."""
    if bool(getattr(args, "progress", False)) or sys.stderr.isatty():
        print(f"simpg: {text}", file=sys.stderr, flush=True)


def announce_database(args: argparse.Namespace) -> None:
    """Without --dsn: one line on stderr saying where the embedded default's data lives (once)."""
    if args.dsn or getattr(args, "announced", False):
        return
    from simpg.embedded import data_dir, running, session_file

    args.announced = True
    pgdata = data_dir()
    how = ("kept running by simpg server start" if running(pgdata) is not None and session_file(pgdata).exists()
           else "started for this command; simpg server start keeps it running")
    print(f"simpg: using the embedded PostgreSQL in {pgdata} ({how}; simpg collections list shows what it holds)",
          file=sys.stderr, flush=True)


def database_dsn(args: argparse.Namespace) -> str:
    """--dsn / $SIMPG_DSN, else the embedded default server (started on demand, or a session's)."""
    if args.dsn:
        return str(args.dsn)
    from simpg.embedded import embedded_dsn

    announce_database(args)
    return embedded_dsn()


def progress(items: Iterable[T], args: argparse.Namespace, total: int | None, desc: str,
             unit: str = "doc", weight: Any = None) -> Iterator[T]:
    """``items`` with a tqdm bar on stderr when it is a terminal or --progress was given.

    ``weight(item)``: how much each item advances the bar (default 1).
    """
    show = bool(getattr(args, "progress", False)) or sys.stderr.isatty()
    if not show:
        yield from items
        return
    from tqdm import tqdm  # type: ignore[import-untyped]

    with tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False) as bar:
        for item in items:
            yield item
            bar.update(1 if weight is None else weight(item))


def check_max_sketch_distance(value: int | None) -> None:
    """--max-sketch-distance (None: the default), refused outside 0 .. SKETCH_BITS; shared with ``simpg near``."""
    if value is not None and not 0 <= value <= SKETCH_BITS:
        raise SimpgError(f"--max-sketch-distance must be from 0 to {SKETCH_BITS}, got {value}")


def plural(n: int, word: str) -> str:
    """``1 document``, ``2 documents``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def shown(items: list[str]) -> str:
    """The first five of ``items``, and how many more."""
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
