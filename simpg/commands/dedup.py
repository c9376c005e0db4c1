"""``simpg dedup PATH``: fingerprint documents, load them into PostgreSQL, report the clusters.

PATH is a folder of text files (``**/*.txt`` unless ``--glob``), a JSONL file or a
CSV file with a text column (:mod:`simpg.corpus`). The documents go into the reference
table ``simpg_documents`` (:mod:`simpg.reference`) as one *collection* (default: the
path), replacing what an earlier run loaded into that collection unless ``--append``.
Two documents are near-duplicates when their fingerprints differ in at most k bits
(default :data:`~simpg.fingerprint.DEDUP_K`) or they share a band key (``--no-bands``
leaves those out), *and* their sketches confirm it (:mod:`simpg.fingerprint.minhash`:
estimated Jaccard similarity of their shingle sets at least 0.72): the decision every
path that a sketch confirms makes. ``--confirm none`` uses the fingerprints alone. The
clusters are found in memory from the values just computed (and, with ``--append``, the
collection's earlier rows): by default around representatives (in load order, each document joins
the earliest cluster leader it is a near-duplicate of, else leads one), or with
``--clusters components`` as connected components (seed 004), which chain neighbours.

Without ``--dsn`` or ``SIMPG_DSN`` this runs on the embedded default: a private
PostgreSQL that simpg starts in a per-user folder and stops when it is done.

Every row stored gets its passage hashes (``simpg_documents.passages``: what
``simpg near --passages`` searches). With ``--passages`` the report goes on with the
partial duplicates of the collection (:mod:`simpg.passage_report`): pairs of documents
sharing a passage of ``--min-tokens`` tokens (default 50) or more, verified on the texts,
the earlier document (smaller id) the source, in clusters of "copied from".

Output is a table per cluster for people, or one JSON object with ``--json``, which
also lists every pair decided (the decisions the clusters are made from). Long
work shows progress bars on stderr when it is a terminal (or with ``--progress``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import Any

from simpg.commands._common import (
    add_common_arguments,
    add_dsn_argument,
    announce_database,
    check_max_sketch_distance,
    check_radius,
    database_dsn,
    plural,
    progress,
    shown,
    stage,
)
from simpg.corpus import (
    DEFAULT_GLOB,
    ERRORS,
    Document,
    UnreadableText,
    cannot_write,
    count_inputs,
    file_title,
    folder_files,
    kind_of,
    read_documents,
)
from simpg.exc import SimpgError
from simpg.fingerprint import DEDUP_K, DEFAULT_K, MAX_SKETCH_DISTANCE, SKETCH_BITS
from simpg.fingerprint.batch import PARALLEL_FROM
from simpg.layout import MAX_K


def register(subparsers: Any) -> None:
    """Add the dedup command."""
    p = subparsers.add_parser(
        "dedup", help="find near-duplicate documents in a folder, JSONL or CSV file",
        description="Fingerprint the documents of PATH, load them into PostgreSQL "
                    "(table simpg_documents) and print the clusters of near-duplicates.")
    p.add_argument("path", metavar="PATH", help="folder of text files, .jsonl file, or .csv file")
    add_dsn_argument(p)
    add_common_arguments(p, None, f"(default: {DEDUP_K} with --confirm sketch, {DEFAULT_K} with --confirm none)")
    p.add_argument("--confirm", choices=("sketch", "none"), default="sketch",
                   help="sketch (default): a pair within k bits is a near-duplicate only if the documents' "
                        "sketches agree (estimated word overlap); none: the fingerprints alone decide")
    p.add_argument("--max-sketch-distance", type=int, default=MAX_SKETCH_DISTANCE, metavar="BITS",
                   help=f"largest number of differing sketch bits that confirms a pair, 0 to {SKETCH_BITS} "
                        f"(default: {MAX_SKETCH_DISTANCE}: estimated Jaccard similarity >= "
                        f"{1 - 2 * MAX_SKETCH_DISTANCE / SKETCH_BITS:.2f})")
    p.add_argument("--bands", action=argparse.BooleanOptionalAction, default=True,
                   help="with --confirm sketch, documents sharing a band key (simpg.fingerprint.sketch_and_bands) "
                        "are candidates too, however far apart their fingerprints (default: --bands)")
    p.add_argument("--collection", help="name of this set of documents (default: PATH)")
    p.add_argument("--append", action="store_true",
                   help="keep the collection's earlier documents (default: replace them); those stored without "
                        "passage hashes get them")
    p.add_argument("--glob", default=DEFAULT_GLOB, help=f"files of a folder to read (default: {DEFAULT_GLOB})")
    p.add_argument("--text-column", help="JSONL key / CSV column of the text (default: text, body or content)")
    p.add_argument("--title-column", help="JSONL key / CSV column of the title (default: title, if any)")
    p.add_argument("--lang", choices=("auto", "en", "zh"), default="auto",
                   help="how to split words: auto (Chinese runs through jieba), en, zh (default: auto)")
    p.add_argument("--workers", type=int, help="fingerprinting processes, 1 or more (default: one per "
                                                f"CPU for {PARALLEL_FROM}+ documents)")
    p.add_argument("--errors", choices=ERRORS, default="strict",
                   help="a document that is not valid UTF-8: stop naming the file and byte (strict, the "
                        "default), read it with U+FFFD for the bad bytes (replace, as simpg fingerprint "
                        "--errors replace), or leave it out and list it in the report (skip)")
    p.add_argument("--clusters", dest="method", choices=("representative", "components"),
                   default="representative",
                   help="representative (default): in load order, each document joins the earliest "
                        "one it is a near-duplicate of that leads a cluster, so every member is within "
                        "k of its cluster's first document; components: connected components, which "
                        "chain neighbours of neighbours")
    p.add_argument("--html", metavar="FILE",
                   help="also write the review report: one self-contained HTML page (simpg.review)")
    add_passage_arguments(p)
    p.set_defaults(func=run)


def add_passage_arguments(p: argparse.ArgumentParser) -> None:
    """``--passages`` and its thresholds (simpg dedup and simpg report)."""
    from simpg.commands._near_passages import max_common_argument
    from simpg.passage_report import DEFAULT_MAX_COMMON

    p.add_argument("--passages", action="store_true",
                   help="also report the partial duplicates: pairs of documents sharing copied passages, "
                        "verified on the texts, in clusters of \"copied from\" (docs/partial.md)")
    p.add_argument("--min-tokens", type=int, metavar="N",
                   help="with --passages: keep pairs sharing a passage of at least N tokens (default and "
                        "least: 50, the window 46 + 4 from which every shared run is found)")
    p.add_argument("--min-containment", type=float, metavar="X",
                   help="with --passages: keep pairs where one document holds at least this share of the "
                        "other (0 <= X <= 1, token 3-shingles); with --min-tokens, either keeps a pair")
    p.add_argument("--max-common", type=max_common_argument, default=DEFAULT_MAX_COMMON, metavar="DOCS",
                   help=f"with --passages: passage hashes held by more documents than this (boilerplate) make "
                        f"no pairs and are reported: a count, or a share of the documents (0 < X < 1, at least "
                        f"1,000 documents) (default {DEFAULT_MAX_COMMON}; none: use every hash)")


def partial_options(args: argparse.Namespace) -> Any:
    """The :class:`~simpg.passage_report.PartialOptions` of ``--passages`` (None without it), checked."""
    from simpg.passage_report import DEFAULT_MAX_COMMON, check_options

    if not args.passages:
        given = [name for name, value in (("--min-tokens", args.min_tokens),
                                          ("--min-containment", args.min_containment)) if value is not None]
        if given or args.max_common != DEFAULT_MAX_COMMON:
            raise SimpgError(f"{(given or ['--max-common'])[0]} applies with --passages")
        return None
    return check_options(args.min_tokens, args.min_containment, args.max_common, getattr(args, "workers", None))


def _say_skipped_files(args: argparse.Namespace) -> None:
    """One line on stderr when --glob leaves files of the folder out: how many, of which kinds."""
    if kind_of(args.path) != "folder":
        return
    taken, others = folder_files(args.path, args.glob)
    if not others:
        return
    kinds: dict[str, int] = {}
    for path in others:
        kind = path.suffix.lower() or "no extension"
        kinds[kind] = kinds.get(kind, 0) + 1
    common = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"{n} {kind}" for kind, n in common[:4]) + (", ..." if len(common) > 4 else "")
    print(f"simpg: read {plural(len(taken), 'file')} matching {args.glob}; skipped "
          f"{plural(len(others), 'other file')} ({listed}; use --glob '**/*' to read them, .gz decompressed)",
          file=sys.stderr)


def _read(args: argparse.Namespace) -> tuple[list[Document], list[dict[str, str]]]:
    """The documents, and those --errors skip left out (source and reason)."""
    _say_skipped_files(args)
    total = count_inputs(args.path, args.glob)
    unreadable: list[dict[str, str]] = []
    docs = read_documents(args.path, pattern=args.glob, text_column=args.text_column,
                          title_column=args.title_column, errors=args.errors,
                          on_skip=lambda source, reason: unreadable.append({"source": source, "reason": reason}))
    try:
        return list(progress(docs, args, total, "reading")), unreadable
    except UnreadableText as err:
        raise SimpgError(f"{err}; to go on, use --errors replace (U+FFFD for bad bytes) "
                         "or --errors skip (leave such documents out)") from None


def check_dedup_args(args: argparse.Namespace) -> int:
    """-k (default by --confirm) and --max-sketch-distance, refused before any work."""
    if args.workers is not None and args.workers < 1:
        raise SimpgError(f"--workers must be 1 or more, got {args.workers}")
    check_max_sketch_distance(args.max_sketch_distance)
    if args.k is None:
        return DEDUP_K if args.confirm == "sketch" else DEFAULT_K
    return check_radius(args, MAX_K)


def run(args: argparse.Namespace) -> int:
    """Read, fingerprint and sketch, load, pair, cluster, report (:func:`simpg.dedup.deduplicate`)."""
    import psycopg

    from simpg import dedup  # psycopg and the all-pairs engine: loaded when a dedup runs, not for every command
    from simpg.fingerprint import FingerprintConfig

    k = check_dedup_args(args)
    partial = partial_options(args)
    if args.html and not Path(args.html).absolute().parent.is_dir():  # refused before the work, not after
        raise cannot_write(args.html, "no such folder")
    collection = args.collection or os.fspath(Path(args.path))
    announce_database(args)  # where the data lives, first (the server starts after the reading)
    docs, unreadable = _read(args)
    if unreadable:
        print(f"simpg: skipped {plural(len(unreadable), 'document')} that are not valid utf-8 "
              f"(--errors skip): {shown([u['source'] for u in unreadable])}", file=sys.stderr)

    def bar(items: Any, total: int | None, desc: str, weight: Any = None) -> Any:
        return progress(items, args, total, desc, weight=weight)

    config = FingerprintConfig(lang=args.lang)
    # the passage hashes are always stored (simpg near --passages finds every row), made in the same pass
    fps, sketches, band_keys, passages = dedup.fingerprint_sketch_band_and_passage_documents(
        docs, config, args.workers, bar)
    # no text left once separators and punctuation are left out: never a fingerprint that
    # unrelated documents share, so such documents are left out and listed with the reason
    featureless = [{"source": d.source, "reason": dedup.featureless_reason(d, config)}
                   for d, fp in zip(docs, fps, strict=True) if fp is None]
    empty = [f["source"] for f in featureless]
    if empty:
        print(f"simpg: skipped {plural(len(empty), 'document')} without usable text: {shown(empty)}",
              file=sys.stderr)
    decision = dedup.Decision(k=k, confirm=args.confirm == "sketch", max_sketch_distance=args.max_sketch_distance,
                              method=args.method, bands=args.bands and args.confirm == "sketch")
    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        report = dedup.deduplicate(conn, collection, docs, fps, sketches, band_keys=band_keys, decision=decision,
                                   config=config, append=args.append, with_pairs=args.json or bool(args.html),
                                   skipped=sorted([u["source"] for u in unreadable] + empty), progress=bar,
                                   stage=lambda text: stage(args, text), passages=passages, partial=partial)
        if args.html:  # the review report: texts, fingerprints and sketches as stored, ids as in the table
            from simpg.review import data, html

            page = html.write(data.from_dedup_report(report, data.read_documents(conn, data.report_ids(report)),
                                                     data.recorded_decisions(conn, report["collection"])),
                              args.html)
    report["unreadable"] = unreadable  # left out by --errors skip, with the reason
    report["featureless"] = featureless  # left out always: no text to fingerprint, with the reason
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(report))
        if "passages" in report:
            from simpg.commands._passage_report import render as render_passages

            sys.stdout.write(render_passages(report["passages"]))
    if args.html:
        print(f"simpg: review report written to {page}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _width(text: str) -> int:
    """Terminal columns of ``text``: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns (with an ellipsis), padded to exactly that."""
    if _width(text) > width:
        out, used = [], 0
        for c in text:
            w = _width(c)
            if used + w > width - 1:
                break
            out.append(c)
            used += w
        text = "".join(out) + "\u2026"
    return text + " " * (width - _width(text))


def render(report: dict[str, Any]) -> str:
    """The report as text: a summary line, then one small table per cluster."""
    clusters = report["clusters"]
    how = ("each member within {k} bits of its cluster's first document"
           if report.get("method", "representative") == "representative"
           else "chains of documents within {k} bits of each other")
    if report.get("confirm") == "sketch":
        how = (how + " or sharing a band key" if report.get("bands") else how) + ", confirmed by sketches"
    lines = [
        f"{plural(report['documents'], 'document')} in collection {report['collection']!r}: "
        f"{plural(len(clusters), 'cluster')} of near-duplicates ({how.format(k=report['k'])}), "
        f"{plural(report['clustered_documents'], 'document')} in them",
    ]
    if report["skipped"]:
        lines.append(f"skipped {plural(len(report['skipped']), 'document')}: {shown(report['skipped'])}")
    decided = report.get("decisions") or []
    if decided:
        apart = sum(d["verdict"] == "not_duplicate" for d in decided)
        listing = f"simpg review list --collection {shlex.quote(report['collection'])}"
        lines.append(f"applied {plural(len(decided), 'reviewer decision')} ({apart} not duplicate, "
                     f"{len(decided) - apart} duplicate; {listing})")
    if not clusters:
        lines.append("no near-duplicates found")
    else:
        lines.append("bits: how many bits a document differs from its cluster's first document; "
                     "sim: their estimated share of word sequences (Jaccard, from the sketches)")
    width = shutil.get_terminal_size((100, 24)).columns
    for number, cluster in enumerate(clusters, start=1):
        docs = cluster["documents"]
        id_w = max(2, *(len(str(d["id"])) for d in docs))
        src_w = min(max(6, *(_width(d["source"]) for d in docs)), 48)
        text_w = max(width - id_w - src_w - 20, 20)
        lines += ["", f"cluster {number} ({plural(cluster['size'], 'document')})",
                  f"  {'id':>{id_w}}  {'bits':>4}  {'sim':>4}  {'source':<{src_w}}  text"]
        for d in docs:
            # a title that only repeats the file's name (shown under source) is left out
            named = d["title"] and d["title"] != file_title(Path(d["source"]))
            text = d["title"] + ": " + d["preview"] if named else d["preview"]
            sim = "" if d.get("similarity") is None else f"{d['similarity']:.2f}"
            lines.append(f"  {d['id']:>{id_w}}  {d['distance']:>4}  {sim:>4}  {_fit(d['source'], src_w)}  "
                         f"{_fit(text, text_w)}".rstrip())
    return "\n".join(lines) + "\n"
