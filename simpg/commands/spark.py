"""``simpg spark find-all``, ``find-clusters`` and ``find-passages``: the same answers, on Apache Spark.

Input: a Parquet, CSV or text file (or folder) of fingerprints (``--input``), or a
PostgreSQL table (``--table``, with ``--dsn`` or SIMPG_DSN). Output: Parquet or CSV
(``--output``), or a new PostgreSQL table (``--output-table``). Pairs are
``id_a, id_b, distance`` (``id_a < id_b``); clusters ``cluster_id, id, size``, as
``simpg.pairs`` and ``simpg.clusters`` report them. Without ids, a row's id is its
1-based line (or row) number, as ``simpg find-all --lines``. See docs/spark.md.

``find-passages INPUT``: every pair of documents (Parquet, CSV, JSON lines or text: one per
line) sharing passages, :func:`simpg.spark.passage_pairs`, to Parquet or JSON lines (a pair's
passages are an array of structs, which CSV cannot hold). See docs/partial.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from simpg.commands._common import add_radius, check_radius
from simpg.exc import SimpgError
from simpg.layout import MAX_K, Layout
from simpg.passages.config import DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW


def register(subparsers: Any) -> None:
    """Add ``spark`` with its find-all and find-clusters subcommands."""
    top = subparsers.add_parser("spark", help="find-all / find-clusters / find-passages on Apache Spark (simpg[spark])",
                                description="All pairs within -k, or clusters, on Apache Spark: "
                                            "files or a PostgreSQL table in, files or a table out.")
    commands = top.add_subparsers(dest="spark_command", metavar="COMMAND")
    for name, text in (("find-all", "write every pair of rows within -k bits"),
                       ("find-clusters", "write the clusters of rows within -k bits")):
        p = commands.add_parser(name, help=text, description=f"{text[0].upper()}{text[1:]}, on Spark.")
        add_radius(p, required=True, seed004=True)
        source = p.add_mutually_exclusive_group(required=True)
        source.add_argument("-i", "--input", metavar="PATH", help="Parquet, CSV (with a header) or text file or folder")
        source.add_argument("--table", help="PostgreSQL table to read (with --dsn or SIMPG_DSN)")
        p.add_argument("--format", choices=("parquet", "csv", "text"),
                       help="input format (default: from the extension; text otherwise)")
        p.add_argument("--column", help="fingerprint column (default: fp, fingerprint or simhash; "
                                        "simhash for --table)")
        p.add_argument("--key", help="integer key column (default: id if there is one; for files without "
                                     "one, the 1-based row number)")
        sink = p.add_mutually_exclusive_group(required=True)
        sink.add_argument("-o", "--output", metavar="PATH", help="Parquet or CSV folder to write")
        sink.add_argument("--output-table", metavar="TABLE", help="PostgreSQL table to create and fill")
        p.add_argument("--output-format", choices=("parquet", "csv"),
                       help="output format (default: from the extension; parquet otherwise)")
        p.add_argument("--overwrite", action="store_true", help="replace an existing output")
        p.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"),
                       help="PostgreSQL connection string for --table / --output-table (default: $SIMPG_DSN)")
        p.add_argument("-b", "--blocks", metavar="LEVELS",
                       help="layout blocks, e.g. 5 or 4x4 (default: the planner's design cheapest on Spark)")
        p.add_argument("--block-size", type=int, default=None, metavar="ROWS",
                       help="rows of one block of an oversized group (default 4096)")
        p.add_argument("--partitions", type=int, metavar="N", help="shuffle partitions of the pair search")
        p.add_argument("--master", help="Spark master, e.g. local[2] or spark://host:7077 "
                                        "(default: spark-submit's, else local[*])")
        p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting, e.g. spark.driver.memory=8g (repeatable)")
        if name == "find-clusters":
            p.add_argument("--method", choices=("representative", "components"), default="representative",
                           help="representative (the default, as find-clusters and simpg dedup): by id, each "
                                "row joins the earliest representative within -k, else becomes one; "
                                "components: connected components")
        p.set_defaults(func=run, spark_kind=name)
    _register_passages(commands)
    top.set_defaults(func=lambda args: _usage(top))


def _register_passages(commands: Any) -> None:
    """``find-passages``: simpg.spark.passage_pairs over a file of documents."""
    from simpg.commands._near_passages import max_common_argument

    p = commands.add_parser("find-passages", help="write every pair of documents sharing passages",
                            description="Every pair of documents sharing passages (partial duplicates), "
                                        "verified on the texts, with its direction, on Spark "
                                        "(simpg.spark.passage_pairs; docs/partial.md).")
    p.add_argument("input", metavar="INPUT", help="Parquet, CSV (with a header), JSON lines or text file or "
                                                  "folder (text: one document per line)")
    p.add_argument("--format", choices=("parquet", "csv", "json", "text"),
                   help="input format (default: from the extension; text otherwise)")
    p.add_argument("--text-column", default="text", help="column holding the text (default text)")
    p.add_argument("--key", help="integer key column (default: id if there is one, else the 1-based row number)")
    p.add_argument("--column", help="bigint[] column of precomputed passage hashes (default: made from the texts)")
    p.add_argument("--rank-column", help="which document came first, smaller is earlier (default: the key)")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW, metavar="W",
                   help=f"winnowing window of texts in spaced scripts (default {DEFAULT_WINDOW})")
    p.add_argument("--spaceless-window", type=int, default=DEFAULT_SPACELESS_WINDOW, metavar="W",
                   help="winnowing window of texts mostly of a spaceless script (Chinese, Japanese, Thai...; "
                        f"default {DEFAULT_SPACELESS_WINDOW}); every shared run of the larger window + 4 tokens "
                        "is a candidate")
    p.add_argument("--min-tokens", type=int, default=None, metavar="N",
                   help="keep pairs sharing a passage of N tokens or more (default: the larger window + 4 unless "
                        "--min-containment is given)")
    p.add_argument("--min-containment", type=float, default=None, metavar="FRACTION",
                   help="keep pairs where one document holds this fraction of the other")
    p.add_argument("--max-common", type=max_common_argument, default=None, metavar="DOCUMENTS",
                   help="hashes held by more documents make no pairs and are counted: a count, or a share of the "
                        "documents (0 < X < 1, at least 1,000) (default none: skip nothing)")
    p.add_argument("-o", "--output", metavar="PATH", required=True, help="Parquet or JSON lines folder to write")
    p.add_argument("--output-format", choices=("parquet", "json"),
                   help="output format (default: json for a path ending in .json or .jsonl, else parquet)")
    p.add_argument("--clusters", metavar="PATH", help="also write the clusters (cluster_id, id, size, source), "
                                                      "in the output's format")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--block-size", type=int, default=None, metavar="POSTINGS",
                   help="postings of one block of a hash many documents hold (default 4096)")
    p.add_argument("--partitions", type=int, metavar="N", help="shuffle partitions of the pair search")
    p.add_argument("--master", help="Spark master, e.g. local[2] or spark://host:7077 "
                                    "(default: spark-submit's, else local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, e.g. spark.driver.memory=8g (repeatable)")
    p.set_defaults(func=run_passages)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _layout(args: argparse.Namespace) -> Layout | None:
    check_radius(args, MAX_K)
    if args.block_size is not None and args.block_size < 1:
        raise SimpgError(f"--block-size must be at least 1, got {args.block_size}")
    if args.partitions is not None and args.partitions < 1:
        raise SimpgError(f"--partitions must be at least 1, got {args.partitions}")
    if args.blocks is None:
        return None
    parts = args.blocks.lower().split("x")
    if not all(p.isdigit() for p in parts) or len(parts) > 2:
        raise SimpgError(f"--blocks must be a block count like 5 or 4x4, got {args.blocks!r}")
    return Layout(args.k, tuple(int(p) for p in parts))


def _conf(items: list[str]) -> dict[str, str]:
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SimpgError(f"--conf must be KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def run(args: argparse.Namespace) -> int:
    """Run find-all or find-clusters on Spark; print one JSON line of what was written."""
    layout = _layout(args)
    conf = _conf(args.conf)
    if (args.table or args.output_table) and not args.dsn:
        raise SimpgError("--table and --output-table need --dsn or SIMPG_DSN")
    if args.input:
        _check_input(args.input)
    return _on_spark(_run, args, layout, conf)


def _check_input(path: str) -> None:
    """A local input file must exist before Spark starts (a URL is Spark's to read)."""
    if "://" not in path and not os.path.exists(path):
        raise SimpgError(f"cannot read {path!r}: No such file or directory")


def _on_spark(job: Callable[..., int], *args: Any) -> int:
    """Run a job that needs pyspark; Spark's and py4j's errors become one line of SimpgError."""
    from simpg.spark.session import require_pyspark

    require_pyspark()
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        return job(*args)
    except (PySparkException, Py4JError) as err:
        text = str(err).strip().splitlines()
        raise SimpgError(f"spark failed: {text[0] if text else type(err).__name__}") from None


def _run(args: argparse.Namespace, layout: Layout | None, conf: dict[str, str]) -> int:
    import contextlib

    from simpg.spark import engine, io
    from simpg.spark.session import session

    spark = session(args.master, conf)
    spark.sparkContext.setLogLevel("ERROR")
    options: dict[str, Any] = {"partitions": args.partitions}
    if args.block_size:
        options["block_size"] = args.block_size
    with contextlib.ExitStack() as stack:
        if args.table:
            df = stack.enter_context(io.read_table(spark, args.dsn, args.table, args.column or "simhash",
                                                   args.key or "id", args.partitions))
        else:
            df = io.read_file(spark, args.input, args.format, args.column, args.key)
        prepared = engine.prepare(df)  # read (and, from a table, in its snapshot) once
    if args.spark_kind == "find-all":
        result = engine.pairs(prepared, args.k, layout, **options)
        columns = io.PAIRS_COLUMNS
    else:
        result = engine.clusters(prepared, args.k, layout, method=args.method, **options)
        columns = io.CLUSTERS_COLUMNS
    summary: dict[str, Any] = {"rows": prepared.row_count, "distinct": prepared.distinct_count}
    if args.output_table:
        summary["table"] = args.output_table
        summary["written"] = io.write_table(result, args.dsn, args.output_table, columns, overwrite=args.overwrite)
    else:
        fmt = args.output_format or ("csv" if args.output.rstrip("/").lower().endswith(".csv") else "parquet")
        io.write_file(result, args.output, fmt, overwrite=args.overwrite)
        summary["output"] = args.output
    print(json.dumps(summary))
    return 0


def run_passages(args: argparse.Namespace) -> int:
    """Run find-passages; print one JSON line of what was found and written."""
    from simpg.passages.config import PassageConfig

    for flag, value in (("--block-size", args.block_size), ("--partitions", args.partitions)):
        if value is not None and value < 1:
            raise SimpgError(f"{flag} must be at least 1, got {value}")
    conf = _conf(args.conf)
    config = PassageConfig(args.window, args.spaceless_window)
    _check_input(args.input)
    return _on_spark(_run_passages, args, config, conf)


def _run_passages(args: argparse.Namespace, config: Any, conf: dict[str, str]) -> int:
    from simpg.spark import io
    from simpg.spark.passages import PAIRS_SCHEMA, passage_clusters, passage_pairs
    from simpg.spark.session import session

    fmt = args.output_format or ("json" if args.output.rstrip("/").lower().endswith((".json", ".jsonl"))
                                 else "parquet")
    for path in (args.output, args.clusters):
        if path and os.path.exists(path) and not args.overwrite:
            raise SimpgError(f"cannot write {path!r}: it exists; choose another path or pass --overwrite")
    spark = session(args.master, conf)
    spark.sparkContext.setLogLevel("ERROR")
    df, key, text = io.read_documents(spark, args.input, args.format, args.text_column, args.key)
    options: dict[str, Any] = {"partitions": args.partitions}
    if args.block_size:
        options["block_size"] = args.block_size
    report = passage_pairs(df, config, id_column=key, text_column=text, hashes_column=args.column,
                           rank_column=args.rank_column, min_tokens=args.min_tokens,
                           min_containment=args.min_containment, max_common=args.max_common, **options)
    try:
        io.write_file(report.pairs, args.output, fmt, overwrite=args.overwrite)
        reader = spark.read.schema(PAIRS_SCHEMA)
        written = reader.json(args.output) if fmt == "json" else reader.parquet(args.output)
        summary: dict[str, Any] = {"documents": report.documents, "candidates": report.candidate_count,
                                   "common_hashes": report.common.count(), "pairs": written.count(),
                                   "output": args.output}
        if args.clusters:
            io.write_file(passage_clusters(written), args.clusters, fmt, overwrite=args.overwrite)
            summary["clusters"] = args.clusters
    finally:
        report.unpersist()
    print(json.dumps(summary))
    return 0
