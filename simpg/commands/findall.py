"""``simpg find-all`` and ``simpg find-clusters``: seomoz/simhash-cpp's binaries, exact.

Both read decimal fingerprints, one per line, and print newline-separated JSON
arrays, like ``simhash-find-all`` and ``simhash-find-clusters`` (seed 004), with the
same options (``--blocks``, ``-d``, ``--input``, ``--output``, ``-`` for
stdin/stdout). Two differences, both on purpose:

* every input line is a row: a fingerprint given twice is a pair ``[x, x]`` at
  distance 0 (seomoz keeps a set of fingerprints and drops those pairs);
* output is sorted (pairs by ``(a, b)``, clusters largest first, members ascending),
  so runs can be compared with ``diff``.

``find-clusters`` groups around representatives by default, as ``simpg dedup``, SQL's
``simpg.clusters`` and ``SimHashColumn.clusters`` do (one default everywhere);
``--method components`` gives seomoz's connected components.

``--lines`` prints 1-based input line numbers instead of fingerprints, which tells
repeated fingerprints apart. No database is involved: this is
:mod:`simpg.allpairs` on the fingerprints given.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from typing import IO, Any

import numpy as np

from simpg.commands._common import add_radius, check_radius
from simpg.corpus import open_output, read_lines
from simpg.exc import InvalidFingerprint, SimpgError
from simpg.layout import MAX_K, Layout

#: seed 004's format: ASCII digits only (no ``_``, ``+`` or other scripts' digits, which int() takes).
_DECIMAL = re.compile("-?[0-9]+")


def register(subparsers: Any) -> None:
    """Add find-all and find-clusters."""
    for name, func, text in (
        ("find-all", run_find_all, "print every pair of fingerprints within -k bits"),
        ("find-clusters", run_find_clusters,
         "print the clusters of fingerprints within -k bits (around representatives, as simpg dedup)"),
    ):
        p = subparsers.add_parser(name, help=text, description=f"{text[0].upper()}{text[1:]}; "
                                  "reads decimal fingerprints, one per line, prints JSON arrays.")
        add_radius(p, required=True, seed004=True)
        p.add_argument("-b", "--blocks", type=int, metavar="BLOCKS",
                       help="blocks of the permuted tables (more than -k; default: "
                            "chosen for the input size)")
        p.add_argument("-i", "--input", default="-", help="file of fingerprints ('-' for stdin, the default)")
        p.add_argument("-o", "--output", default="-", help="output file ('-' for stdout, the default)")
        p.add_argument("--lines", action="store_true",
                       help="print input line numbers (from 1) instead of fingerprints")
        if name == "find-clusters":
            p.add_argument("--method", choices=("representative", "components"), default="representative",
                           help="representative (the default, as simpg dedup and simpg.clusters): in input "
                                "order, each line joins the earliest representative within -k, else becomes "
                                "one; components: connected components, which chain neighbours of neighbours "
                                "(seomoz's simhash-find-clusters)")
        p.set_defaults(func=func)


def read_fingerprints(lines: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints and their 1-based line numbers; blank lines are skipped.

    Raises:
        InvalidFingerprint: a line that is not plain ASCII decimal in ``[0, 2**64)``
            (``1_000``, ``+1000`` and ``١٠٠٠`` are refused), naming it.
    """
    values: list[int] = []
    numbers: list[int] = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        if not _DECIMAL.fullmatch(text):
            raise InvalidFingerprint(
                f"line {number}: expected a decimal 64-bit fingerprint (digits 0-9), got {text!r:.40}")
        value = int(text, 10)
        if text.startswith("-") or value >= 2**64:
            raise InvalidFingerprint(f"line {number}: expected 64-bit fingerprint in [0, 2**64), got {text:.40}")
        values.append(value)
        numbers.append(number)
    return np.array(values, dtype=np.uint64), np.array(numbers, dtype=np.int64)


def _layout(args: argparse.Namespace, n: int) -> Layout | None:
    from simpg import allpairs

    k = check_radius(args, MAX_K)
    if args.blocks is None:
        allpairs.pairs_layout(k, n)
        return None  # allpairs fits its passes to the data
    if args.blocks <= k:
        raise SimpgError(f"--blocks ({args.blocks}) must be more than {args.k_flag} ({k})")
    return Layout(k, (args.blocks,))


def _read_input(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints and their input line numbers, from --input or stdin (UTF-8, strictly)."""
    return read_fingerprints(read_lines(args.input))


def _open_out(path: str) -> IO[str]:
    return sys.stdout if path == "-" else open_output(path)


def run_find_all(args: argparse.Namespace) -> int:
    """Print ``[a, b]`` for every pair of input rows within -k bits."""
    from simpg import allpairs

    fps, numbers = _read_input(args)
    layout = _layout(args, len(fps))
    chunks = list(allpairs.pair_chunks(fps, args.k, layout))
    i = np.concatenate([c[0] for c in chunks]) if chunks else np.empty(0, dtype=np.int64)
    j = np.concatenate([c[1] for c in chunks]) if chunks else np.empty(0, dtype=np.int64)
    labels = numbers if args.lines else fps
    a, b = labels[i], labels[j]
    a, b = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((b, a))
    out = _open_out(args.output)
    try:
        out.writelines(f"[{x}, {y}]\n" for x, y in zip(a[order].tolist(), b[order].tolist(), strict=True))
        out.flush()
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def run_find_clusters(args: argparse.Namespace) -> int:
    """Print each cluster (connected component of two or more rows) as a JSON array."""
    from simpg import allpairs

    fps, numbers = _read_input(args)
    layout = _layout(args, len(fps))
    labels = numbers if args.lines else fps
    groups = [np.sort(labels[rows]).tolist()
              for rows in allpairs.clusters(fps, args.k, layout, method=args.method)]
    groups.sort(key=lambda g: (-len(g), g[0]))
    out = _open_out(args.output)
    try:
        out.writelines("[" + ", ".join(map(str, g)) + "]\n" for g in groups)
        out.flush()
    finally:
        if out is not sys.stdout:
            out.close()
    return 0
