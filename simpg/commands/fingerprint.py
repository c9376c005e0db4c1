"""``simpg fingerprint FILE... | -``: print one SimHash fingerprint per document.

Each FILE is one document (UTF-8, streamed, so any size works). ``-`` reads standard
input: one document per line by default, or all of it as one document with ``--whole``.
Output is one line per document, in input order: the unsigned 64-bit fingerprint in
decimal, or 16 hex digits with ``--hex``, followed by two spaces and the file name when
more than one FILE is given (like ``sha256sum``; ``-:LINE`` for a line of stdin), or a
JSON object with ``--json``::

    {"source": "a.txt", "fingerprint": 1234, "hex": "00000000000004d2",
     "bigint": 1234, "config": "simpg-fp4:..."}

(``bigint`` is the signed value PostgreSQL stores; ``line`` is added for stdin lines.)

Example:
    $ simpg fingerprint --hex README.md
    $ cut -f2 titles.tsv | simpg fingerprint --json --lang zh -
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from simpg.bits import to_db
from simpg.corpus import cannot_read
from simpg.fingerprint.config import LANGS, UNITS, WEIGHTINGS, FingerprintConfig
from simpg.fingerprint.errors import FingerprintError
from simpg.fingerprint.fingerprinter import Fingerprinter
from simpg.fingerprint.hashes import HASH_NAMES

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``fingerprint`` subcommand."""
    p = subparsers.add_parser(
        "fingerprint",
        help="print the SimHash fingerprint of each document",
        description=(
            "Print one 64-bit SimHash fingerprint per document. Each FILE is one document; "
            "'-' reads stdin, one document per line (or all of it with --whole)."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="UTF-8 text file, or - for stdin")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--hex", action="store_true", help="print 16 hex digits")
    out.add_argument("--json", action="store_true", help="print JSON lines with the config identity")
    p.add_argument("--whole", action="store_true", help="read stdin as one document instead of one per line")
    p.add_argument("--config", metavar="JSON_FILE", help="settings from FingerprintConfig.to_json()")
    p.add_argument("--lang", choices=LANGS, help="auto (default), zh or en")
    p.add_argument("--unit", choices=UNITS, help="n-grams of characters (default) or words")
    p.add_argument("--ngram", type=int, metavar="N", help="characters or words per n-gram")
    p.add_argument("--top-n", type=int, metavar="N", help="Chinese terms kept (0 keeps all)")
    p.add_argument("--hash", choices=HASH_NAMES, help="feature hash (default fnv1a)")
    p.add_argument("--weighting", choices=WEIGHTINGS, help="shingle weighting (default tf)")
    p.add_argument("--anchored", action="store_true", default=None, help="stopword-anchored shingles only")
    p.add_argument(
        "--errors",
        choices=("strict", "replace"),
        default="strict",
        help="invalid UTF-8: fail naming the byte offset (strict, default) or use U+FFFD",
    )
    p.add_argument("--show-config", action="store_true", help="print the config JSON and identity, then exit")
    p.set_defaults(func=run)


def _build_config(args: argparse.Namespace) -> FingerprintConfig:
    if args.config:
        try:
            with open(args.config, "rb") as f:
                config = FingerprintConfig.from_json(f.read())
        except OSError as exc:
            raise FingerprintError(f"cannot read config {args.config!r}: {exc.strerror}") from None
    else:
        config = FingerprintConfig()
    changes: dict[str, Any] = {}
    for option in ("lang", "unit", "ngram", "hash", "weighting", "anchored"):
        value = getattr(args, option, None)
        if value is not None:
            changes[option] = value
    if args.top_n is not None:
        changes["top_n"] = args.top_n or None
    return config.replace(**changes) if changes else config


def _documents(fp: Fingerprinter, args: argparse.Namespace) -> Iterator[tuple[dict[str, Any], int]]:
    for name in args.files:
        if name == "-":
            stdin = sys.stdin.buffer
            if args.whole:
                yield (
                    {"source": "-"},
                    fp.fingerprint_stream(stdin, name="<stdin>", errors=args.errors),
                )
                continue
            for lineno, raw in enumerate(stdin, 1):
                where = f"<stdin> line {lineno}"
                try:
                    text = raw.decode("utf-8", args.errors)
                    yield {"source": "-", "line": lineno}, fp.fingerprint(text)
                except UnicodeDecodeError as exc:
                    raise FingerprintError(f"invalid utf-8 in {where} at byte offset {exc.start}") from None
                except FingerprintError as exc:
                    raise type(exc)(f"{where}: {exc}") from None
        else:
            try:
                value = fp.fingerprint_file(name, errors=args.errors)
            except OSError as exc:
                raise cannot_read(name, exc) from None
            yield {"source": name}, value


def run(args: argparse.Namespace) -> int:
    """Print the fingerprints; errors are raised as SimpgError for simpg.cli to report."""
    config = _build_config(args)
    if args.show_config:
        print(config.to_json())
        print(config.identity)
        return 0
    if not args.files:
        raise FingerprintError("no input; give FILE... or - to read stdin")
    fp = Fingerprinter(config)
    identity = config.identity
    named = len(args.files) > 1  # which line is which file, as sha256sum prints it
    out = sys.stdout
    for where, value in _documents(fp, args):
        if args.json:
            record = dict(where)
            record.update(fingerprint=value, hex=f"{value:016x}", bigint=to_db(value), config=identity)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            continue
        text = f"{value:016x}" if args.hex else f"{value}"
        if named:
            text += f"  {where['source']}" + (f":{where['line']}" if "line" in where else "")
        out.write(text + "\n")
        out.flush()
    return 0
