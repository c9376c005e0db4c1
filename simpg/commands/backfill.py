r"""``simpg backfill``: add fingerprints and a simhash index to an existing, big table.

The command line over :mod:`simpg.backfill`, which does the work and says how (three
steps, the first two safe while the application reads and writes; resumable).

Example:
    simpg backfill --dsn "dbname=app" --table articles --text-column body \\
        --column simhash -k 3 --blocks 5 --progress
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

import psycopg  # loaded anyway: simpg.cli.main catches its errors

from simpg.commands._common import add_dsn_argument
from simpg.exc import SimpgError
from simpg.fingerprint import FingerprintConfig  # loaded anyway: simpg dedup's module imports it
from simpg.passages.config import DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW

__all__ = ["register", "run"]

#: 0.1.1 exported the library from here; those names still import from this module.
_LIBRARY = ("BackfillResult", "IndexResult", "add_fingerprint_column", "add_sketch_column",
            "backfill_fingerprints", "backfill_sketches", "build_index", "existing_layout",
            "register_prefixes")


def __getattr__(name: str) -> Any:
    """0.1.1's library names (:data:`_LIBRARY`), from :mod:`simpg.backfill` where they live now."""
    if name in _LIBRARY:
        # Measured reason for a local import: every command module is imported to build
        # the parser, and simpg.backfill costs 5-10 ms at each `simpg` start-up.
        import simpg.backfill

        return getattr(simpg.backfill, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(subparsers: Any) -> None:
    """Add ``simpg backfill``."""
    p = subparsers.add_parser(
        "backfill",
        help="add fingerprints (and optionally the index) to an existing big table, in batches",
    )
    add_dsn_argument(p)
    p.add_argument("--table", required=True, help="table (may be schema-qualified)")
    p.add_argument("--text-column", required=True, help="column holding the text")
    p.add_argument(
        "--column", help="bigint fingerprint column (added if missing); with --passages the bigint[] passage "
                         "column (default passages)"
    )
    p.add_argument("--passages", action="store_true",
                   help="fill a bigint[] column with the text's passage hashes (partial duplicates, "
                        "docs/partial.md), then build its passage index (GIN, concurrently)")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                   help=f"with --passages: the winnowing window of texts of spaced scripts (default {DEFAULT_WINDOW})")
    p.add_argument("--spaceless-window", type=int, default=DEFAULT_SPACELESS_WINDOW,
                   help="with --passages: the winnowing window of texts mostly of a spaceless script (Chinese, "
                        f"Japanese, Thai...; default {DEFAULT_SPACELESS_WINDOW}); every shared run of the larger "
                        "window + 4 tokens is found")
    p.add_argument(
        "--batch-size", type=int, default=2000, help="rows per batch and transaction (default 2000)"
    )
    p.add_argument("--workers", type=int, default=1, help="fingerprinting processes (default 1)")
    p.add_argument("--sketch-column", help="also sketch the text into this bit(256) column (added if missing), "
                                           "to confirm near-duplicates (simpg.fingerprint.sketch)")
    p.add_argument("--bands", action="store_true",
                   help="with --sketch-column: also write the text's band keys into <sketch column>_b0 .. _b3 "
                        "(bigint, added with their B-trees if missing), a second candidate source for "
                        "SimHashColumn.duplicates (docs/python.md, band keys)")
    p.add_argument(
        "--config", help="fingerprint config as JSON, or @FILE (default: FingerprintConfig())"
    )
    p.add_argument("--refingerprint", action="store_true",
                   help="fingerprint every row again with --config (not only empty ones), with --sketch-column "
                        "sketch it again too (and its band keys with --bands), and record that config on the "
                        "column's simpg index: how a table moves to a new config or format; with --passages, "
                        "make every row's passage hashes again with --window and --spaceless-window (the passage "
                        "index of other windows is dropped first, lookups refuse the table until it is built again)")
    p.add_argument("-k", type=int, help="also build the simhash index for this radius")
    p.add_argument(
        "--blocks", type=int, help="level-1 blocks of the index (default: sized for the table)"
    )
    p.add_argument("--inner-blocks", type=int, help="level-2 blocks, optional")
    p.add_argument("--guard", action="store_true",
                   help="then refuse near-duplicates on write: simpg.create_guard with the index's k "
                        "(docs/guard.md); fails, naming how many, if the table already holds some")
    p.add_argument(
        "--lock-timeout",
        default="5s",
        help="longest wait for a table lock before giving up (default 5s)",
    )
    p.add_argument(
        "--progress", action="store_true", help="show progress on stderr (default: when a TTY)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _config(value: str | None) -> FingerprintConfig:
    if value is None:
        return FingerprintConfig()
    text = value
    if value.startswith("@"):
        with open(value[1:], encoding="utf-8") as f:
            text = f.read()
    try:
        return FingerprintConfig.from_json(text)
    except (ValueError, TypeError) as err:
        raise SimpgError(f"invalid --config {value!r}: {err}") from err


def run(args: argparse.Namespace) -> int:
    """Run ``simpg backfill``."""
    # Measured reason for a local import: see __getattr__ (simpg --help should not pay for it).
    from simpg import backfill
    from simpg.fingerprint import minhash

    if not args.dsn:
        raise SimpgError("no database given; pass --dsn or set SIMPG_DSN")
    if args.passages:
        return _run_passages(args)
    if not args.column:
        raise SimpgError("--column is required (the bigint fingerprint column), or pass --passages")
    if args.bands and not args.sketch_column:
        raise SimpgError("--bands needs --sketch-column: the band keys come from the same minima as the sketch")
    config = _config(args.config)
    progress = _Progress(args)

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        # everything that can be refused is refused before the first change
        layout = backfill.layout_to_build(conn, args.table, args.text_column, args.column, config=config,
                                          k=args.k, blocks=args.blocks, inner_blocks=args.inner_blocks,
                                          sketch_column=args.sketch_column, refingerprint=args.refingerprint)
        added = backfill.add_fingerprint_column(conn, args.table, args.column, lock_timeout=args.lock_timeout)
        sketches = None
        sketch_added = False
        if args.sketch_column:
            # Sketches first: a move (--refingerprint) records the new config only after the
            # fingerprints, so an interrupted one leaves the old config recorded and is redone.
            sketch_added = backfill.add_sketch_column(conn, args.table, args.sketch_column,
                                                      lock_timeout=args.lock_timeout)
            # the names SimHashColumn.duplicates looks for by default
            band_columns = minhash.band_columns(args.sketch_column, None) if args.bands else None
            if band_columns:
                backfill.add_band_columns(conn, args.table, band_columns, lock_timeout=args.lock_timeout)
            sketches = backfill.backfill_sketches(conn, args.table, args.text_column, args.sketch_column,
                                                  band_columns=band_columns, batch_size=args.batch_size,
                                                  progress=progress.report,
                                                  resketch=args.refingerprint)
            progress.close()
        filled = backfill.backfill_fingerprints(
            conn, args.table, args.text_column, args.column, config=config, batch_size=args.batch_size,
            workers=args.workers, progress=progress.report, refingerprint=args.refingerprint)
        progress.close()
        index = None
        if layout is not None:
            index = backfill.build_index(
                conn, args.table, args.column, k=layout.k, blocks=layout.levels[0],
                inner_blocks=layout.levels[1] if len(layout.levels) > 1 else None,
                fingerprint_config=config.identity, lock_timeout=args.lock_timeout)
        guard = backfill.create_guard(conn, args.table, args.column) if args.guard else None
    result = {"column_added": added, **asdict(filled), "index": asdict(index) if index else None, "guard": guard,
              "sketches": None if sketches is None else {"column_added": sketch_added, **asdict(sketches)}}
    if args.json:
        print(json.dumps(result))
    else:
        rows = [
            ("column added", "yes" if added else "no (existed)"),
            ("fingerprints changed" if args.refingerprint else "fingerprints written", f"{filled.rows:,}"),
            ("rows skipped (no text)", f"{filled.skipped:,}"),
            ("batches", f"{filled.batches:,}"),
            ("fill time", f"{filled.seconds:.1f} s"),
        ]
        if guard is not None:
            rows.append(("guard", f"{guard} (no two rows within the index's k)"))
        if sketches is not None:
            rows += [
                ("sketch column added", "yes" if sketch_added else "no (existed)"),
                ("sketches changed" if args.refingerprint else "sketches written", f"{sketches.rows:,}"),
                ("sketch time", f"{sketches.seconds:.1f} s"),
            ]
        if index:
            if index.resumed:
                dropped = len(index.invalid_dropped)
                rows.append(("index resumed", f"prefix columns existed; {dropped} invalid "
                             f"index{'es' if dropped != 1 else ''} dropped, {index.indexes_built} built"))
            rows += [
                ("index layout", index.layout),
                ("ALTER (ACCESS EXCLUSIVE)", f"{index.alter_seconds:.2f} s"),
                ("CREATE INDEX CONCURRENTLY", f"{index.index_seconds:.1f} s"),
                ("ANALYZE + register", f"{index.analyze_seconds:.1f} s"),
            ]
        _print_rows(rows)
    return 0


class _Progress:
    """The progress bar of a fill on stderr, shown with --progress or on a terminal: ``report`` is the callback."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.bar: Any = None
        self.report = self._update if args.progress or sys.stderr.isatty() else None

    def _update(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = _bar(total)
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        """End the bar shown, if any: the next fill starts its own."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _print_rows(rows: list[tuple[str, str]]) -> None:
    """The result as a table of two columns, the names aligned."""
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def _bar(total: int) -> Any:
    """The progress bar on stderr."""
    # the progress library of every command; imported when a bar is shown (50 ms)
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=total, unit="row", file=sys.stderr, leave=True,
                bar_format="simpg backfill: {n:,}/{total:,} rows ({percentage:.0f}%) {bar} "
                           "[{elapsed}<{remaining}, {rate_fmt}]")


#: Options of the fingerprint backfill that mean nothing with --passages.
_FINGERPRINT_ONLY = ("sketch_column", "bands", "config", "k", "blocks", "inner_blocks", "guard")


def _run_passages(args: argparse.Namespace) -> int:
    """``simpg backfill --passages``: add the column, fill it in batches, build the passage index."""
    from simpg import backfill
    from simpg.fingerprint.errors import InvalidConfig
    from simpg.passages import PassageConfig

    for name in _FINGERPRINT_ONLY:
        if getattr(args, name):
            raise SimpgError(f"--{name.replace('_', '-')} is for fingerprints, not with --passages")
    column = args.column or "passages"
    try:
        config = PassageConfig(args.window, args.spaceless_window)
    except InvalidConfig as err:
        raise SimpgError(f"invalid --window or --spaceless-window: {err}") from None
    progress = _Progress(args)

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        # everything that can be refused is refused before the first change
        backfill.check_passages(conn, args.table, args.text_column, column, config=config,
                                refill=args.refingerprint)
        added = backfill.add_passage_column(conn, args.table, column, lock_timeout=args.lock_timeout)
        filled = backfill.backfill_passages(conn, args.table, args.text_column, column, config=config,
                                            batch_size=args.batch_size, workers=args.workers,
                                            progress=progress.report, refill=args.refingerprint)
        progress.close()
        index = backfill.build_passage_index(conn, args.table, column, config=config)
    result = {"column_added": added, **asdict(filled), "index": asdict(index)}
    if args.json:
        print(json.dumps(result))
        return 0
    rows = [
        ("column added", "yes" if added else "no (existed)"),
        ("passage hashes changed" if args.refingerprint else "passage hashes written", f"{filled.rows:,}"),
        ("rows skipped (NULL text)", f"{filled.skipped:,}"),
        ("batches", f"{filled.batches:,}"),
        ("fill time", f"{filled.seconds:.1f} s"),
        ("passage index", f"{index.index_name} (windows {index.window} and {index.spaceless_window}, "
                          f"{'built' if index.built else 'existed'}"
                          f"{', concurrently' if index.built and index.concurrently else ''})"),
        ("index time", f"{index.seconds:.1f} s"),
    ]
    if index.invalid_dropped:
        rows.append(("invalid indexes dropped", ", ".join(index.invalid_dropped)))
    _print_rows(rows)
    return 0
