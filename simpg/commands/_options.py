"""Options that several commands share, spelled the same everywhere.

The radius is ``-k`` in every command, as in SQL (``k``) and Python (``k=``).
``--distance`` stays its long name, and ``-d`` stays on ``find-all`` and
``find-clusters`` (and their Spark twins), the flags of seed 004's tool. Errors name
the flag as the user typed it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from simpg.exc import SimpgError


class _Radius(argparse.Action):
    """Stores the value as ``k`` and the flag typed as ``k_flag``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.k_flag = option_string or "-k"


def add_radius(p: argparse.ArgumentParser, *, default: int | None = None, required: bool = False,
               seed004: bool = False, help: str = "largest number of differing bits") -> None:
    """Add ``-k``/``--distance`` (and ``-d`` where ``seed004``), stored as ``args.k``."""
    flags = ("-k", "-d", "--distance") if seed004 else ("-k", "--distance")
    p.add_argument(*flags, dest="k", type=int, default=default, required=required, metavar="K",
                   action=_Radius, help=help)
    p.set_defaults(k_flag="-k")


def check_radius(args: argparse.Namespace, limit: int, what: str = "") -> int:
    """``args.k``, refused outside ``0..limit``; the error names the flag as typed."""
    k: int = args.k
    if not 0 <= k <= limit:
        raise SimpgError(f"{args.k_flag} must be from 0 to {limit}{what}, got {k}")
    return k
