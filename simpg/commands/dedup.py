"""``simpg dedup PATH``: fingerprint documents, load them into PostgreSQL, report the clusters.

PATH is a folder of text files (``**/*.txt`` unless ``--glob``), a JSONL file or a
CSV file with a text column (:mod:`simpg.corpus`). The documents go into the reference
table ``simpg_documents`` (:mod:`simpg.reference`) as one *collection* (default: the
path), replacing what an earlier run loaded into that collection unless ``--append``.
Two documents are near-duplicates when their fingerprints differ in at most k bits
(default :data:`~simpg.fingerprint.DEDUP_K`) *and* their sketches confirm it
(:mod:`simpg.fingerprint.minhash`: estimated Jaccard similarity of their shingle sets at
least 0.72); ``--confirm none`` uses the fingerprints alone. The clusters are found from the
table in one read: by default around representatives (in load order, each document joins
the earliest cluster leader it is a near-duplicate of, else leads one), or with
``--clusters components`` as connected components (seed 004), which chain neighbours.

Without ``--dsn`` or ``SIMPG_DSN`` this runs on the embedded default: a private
PostgreSQL that simpg starts in a per-user folder and stops when it is done.

Output is a table per cluster for people, or one JSON object with ``--json``, which
also lists every pair of documents within k (the decisions the clusters are made from). Long
work shows progress bars on stderr when it is a terminal (or with ``--progress``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from simpg import bits
from simpg.commands._options import add_radius, check_radius
from simpg.commands.install import add_dsn_argument
from simpg.corpus import DEFAULT_GLOB, ERRORS, Document, UnreadableText, count_inputs, read_documents
from simpg.exc import SimpgError
from simpg.fingerprint import DEDUP_K, DEFAULT_K, MAX_SKETCH_DISTANCE, SKETCH_BITS

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Below this many documents, fingerprinting in worker processes costs more than it saves.
PARALLEL_FROM = 1000
#: Rows per COPY while loading, so the progress bar moves.
LOAD_CHUNK = 5000


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
    p.add_argument("--max-sketch-distance", type=int, default=MAX_SKETCH_DISTANCE, metavar="T",
                   help=f"largest number of differing sketch bits that confirms a pair, 0 to {SKETCH_BITS} "
                        f"(default: {MAX_SKETCH_DISTANCE}: estimated Jaccard similarity >= "
                        f"{1 - 2 * MAX_SKETCH_DISTANCE / SKETCH_BITS:.2f})")
    p.add_argument("--collection", help="name of this set of documents (default: PATH)")
    p.add_argument("--append", action="store_true",
                   help="keep the collection's earlier documents (default: replace them)")
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
    p.set_defaults(func=run)


def add_common_arguments(p: argparse.ArgumentParser, k_default: int | None = DEFAULT_K,
                         k_help: str = f"(default: {DEFAULT_K}, the reference table's limit)") -> None:
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


def database_dsn(args: argparse.Namespace) -> str:
    """--dsn / $SIMPG_DSN, else the embedded default server (started on demand)."""
    if args.dsn:
        return str(args.dsn)
    from simpg.embedded import data_dir, embedded_dsn

    logger.info("no --dsn or SIMPG_DSN: using the embedded PostgreSQL in %s", data_dir())
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


def _fingerprint(docs: list[Document], args: argparse.Namespace, config: Any) -> list[int | None]:
    from simpg.fingerprint import fingerprint_many

    workers = args.workers or (None if len(docs) >= PARALLEL_FROM else 1)
    inputs = ({"title": d.title, "body": d.body} if d.title else d.body for d in docs)
    return list(progress(fingerprint_many(inputs, config, workers=workers, on_error="none"),
                         args, len(docs), "fingerprinting"))


def _no_features(doc: Document, config: Any) -> str:
    """Why ``doc`` has no fingerprint (the fingerprinter's message: empty, or no usable features)."""
    from simpg.fingerprint import FingerprintError, get_fingerprinter

    try:
        get_fingerprinter(config).fingerprint({"title": doc.title, "body": doc.body} if doc.title else doc.body)
    except FingerprintError as err:
        return str(err)
    return "document has no usable features"


def _read(args: argparse.Namespace) -> tuple[list[Document], list[dict[str, str]]]:
    """The documents, and those --errors skip left out (source and reason)."""
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


def _shown(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def plural(n: int, word: str) -> str:
    """``1 document``, ``2 documents``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _sketches(docs: list[Document], args: argparse.Namespace) -> list[bytes | None]:
    """Each document's sketch (None: no words to sketch), in worker processes as fingerprinting."""
    from simpg.fingerprint import sketch_many

    workers = args.workers or (None if len(docs) >= PARALLEL_FROM else 1)
    inputs = ({"title": d.title, "body": d.body} if d.title else d.body for d in docs)
    return list(progress(sketch_many(inputs, workers=workers), args, len(docs), "sketching"))


def check_max_sketch_distance(value: int | None) -> None:
    """--max-sketch-distance (None: the default), refused outside 0 .. SKETCH_BITS; shared with ``simpg near``."""
    if value is not None and not 0 <= value <= SKETCH_BITS:
        raise SimpgError(f"--max-sketch-distance must be from 0 to {SKETCH_BITS}, got {value}")


def check_dedup_args(args: argparse.Namespace) -> int:
    """-k (default by --confirm) and --max-sketch-distance, refused before any work."""
    from simpg.layout import MAX_K

    if args.workers is not None and args.workers < 1:
        raise SimpgError(f"--workers must be 1 or more, got {args.workers}")
    check_max_sketch_distance(args.max_sketch_distance)
    if args.k is None:
        return DEDUP_K if args.confirm == "sketch" else DEFAULT_K
    return check_radius(args, MAX_K)


def _stored_sketches(conn: Any, collection: str, ids: Any) -> list[bytes | None]:
    """The stored sketches of ``ids``, in that order; rows stored before sketches get theirs now."""
    from simpg.fingerprint.minhash import from_sql, sketch, to_sql

    found = {row[0]: from_sql(row[1]) for row in conn.execute(
        "SELECT id, sketch::text FROM simpg_documents WHERE collection = %s AND sketch IS NOT NULL",
        [collection])}
    missing = conn.execute("SELECT id, title, body FROM simpg_documents WHERE collection = %s "
                           "AND sketch IS NULL", [collection]).fetchall()
    updates = []
    for id_, title, body in missing:  # stored by simpg 0.1, or by hand: the text is there
        try:
            made = sketch({"title": title, "body": body} if title else body)
        except ValueError:
            found[id_] = None
            continue
        found[id_] = made
        updates.append((to_sql(made), id_))
    if updates:
        with conn.cursor() as cur:
            cur.executemany("UPDATE simpg_documents SET sketch = %s::bit(256) WHERE id = %s", updates)
    return [found.get(int(i)) for i in ids]


def run(args: argparse.Namespace) -> int:
    """Read, fingerprint and sketch, load, pair, cluster, report."""
    import numpy as np
    import psycopg
    from psycopg import sql

    from simpg.fingerprint import FingerprintConfig
    from simpg.fingerprint.minhash import to_sql
    from simpg.psycopg import SimHashColumn
    from simpg.reference import TABLE, ensure_reference_schema

    k = check_dedup_args(args)
    confirm = args.confirm == "sketch"
    collection = args.collection or os.fspath(Path(args.path))
    docs, unreadable = _read(args)
    if unreadable:
        print(f"simpg: skipped {plural(len(unreadable), 'document')} that are not valid utf-8 "
              f"(--errors skip): {_shown([u['source'] for u in unreadable])}", file=sys.stderr)
    config = FingerprintConfig(lang=args.lang)
    fps = _fingerprint(docs, args, config)
    sketches = _sketches(docs, args)
    kept = [(d, fp, sk) for d, fp, sk in zip(docs, fps, sketches, strict=True) if fp is not None]
    # no text left once separators and punctuation are left out: never a fingerprint that
    # unrelated documents share, so such documents are left out and listed with the reason
    featureless = [{"source": d.source, "reason": _no_features(d, config)}
                   for d, fp in zip(docs, fps, strict=True) if fp is None]
    empty = [f["source"] for f in featureless]
    if empty:
        print(f"simpg: skipped {plural(len(empty), 'document')} without usable text: {_shown(empty)}",
              file=sys.stderr)
    skipped = sorted([u["source"] for u in unreadable] + empty)

    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        ensure_reference_schema(conn)
        index = SimHashColumn(conn, TABLE, "simhash")
        identity = config.identity
        with conn.transaction():
            if args.append:
                others = [r[0] for r in conn.execute(
                    "SELECT DISTINCT fingerprint_config FROM simpg_documents WHERE collection = %s "
                    "AND fingerprint_config <> %s", [collection, identity])]
                if others:
                    raise SimpgError(f"collection {collection!r} holds fingerprints made with config "
                                     f"{others[0]}, not {identity}; drop --append to replace it")
            else:
                conn.execute("DELETE FROM simpg_documents WHERE collection = %s", [collection])
            chunks = [kept[i:i + LOAD_CHUNK] for i in range(0, len(kept), LOAD_CHUNK)]
            # loading is indexing too: the prefix columns and their B-trees fill as rows go in
            for chunk in progress(chunks, args, len(kept), "loading and indexing", weight=len):
                index.add([fp for _, fp, _ in chunk], columns={
                    "collection": [collection] * len(chunk),
                    "source": [d.source for d, _, _ in chunk],
                    "title": [d.title for d, _, _ in chunk],
                    "body": [d.body for d, _, _ in chunk],
                    "fingerprint_config": [identity] * len(chunk),
                    "sketch": [None if sk is None else to_sql(sk) for _, _, sk in chunk],
                })
        where = sql.SQL("t.collection = {}").format(sql.Literal(collection))
        how = "confirmed by sketches" if confirm else "fingerprints only"
        stage(args, f"pairing {plural(len(kept), 'document')} within {k} bits, {how} ({args.method})")
        # one snapshot: the clusters and the listed pairs come from the same rows
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            stored_ids, stored_fps = index.fetch_all(where)
            stored_sketches = _stored_sketches(conn, collection, stored_ids) if confirm else None
        decided = _decide(stored_ids, stored_fps, stored_sketches, k, args.max_sketch_distance)
        clusters = _clusters(stored_ids, decided, args.method)
        total = conn.execute("SELECT count(*) FROM simpg_documents WHERE collection = %s",
                             [collection]).fetchone()
        members = sorted({i for c in clusters for i in c} | ({i for p in decided for i in p[:2]} if args.json
                                                               else set()))
        rows = {r[0]: r for r in conn.execute(
            "SELECT id, source, title, left(body, 300), simhash, sketch::text FROM simpg_documents "
            "WHERE id = ANY(%s)", [np.array(members, dtype=np.int64).tolist()])}
    report = _report(collection, int(total[0]) if total else 0, k, clusters, rows, skipped)
    report["method"] = args.method
    report["confirm"] = args.confirm
    report["max_sketch_distance"] = args.max_sketch_distance if confirm else None
    report["unreadable"] = unreadable  # left out by --errors skip, with the reason
    report["featureless"] = featureless  # left out always: no text to fingerprint, with the reason
    if args.json:
        # every pair the clusters were made from, so an evaluation scores what users get
        report["pairs"] = [_pair_json(a, b, d, sd, rows, confirm) for a, b, d, sd in decided]
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(report))
    return 0


def _decide(ids: Any, fps: Any, sketches: list[bytes | None] | None, k: int,
            max_sketch_distance: int) -> list[tuple[int, int, int, int | None]]:
    """Every near-duplicate pair ``(id a, id b, distance, sketch distance)``, ``a < b``, sorted.

    With sketches, a document without one (no words to sketch) is nobody's duplicate.
    """
    import numpy as np

    from simpg import allpairs

    chunks: list[tuple[Any, Any, Any, Any]]
    if sketches is None:
        chunks = [(i, j, d, None) for i, j, d in allpairs.pair_chunks(fps, k)]
    else:
        has = np.array([sk is not None for sk in sketches], dtype=bool)
        rows = np.flatnonzero(has)
        sk = allpairs.as_sketches([sketches[r] for r in rows.tolist()]) if len(rows) else None
        chunks = [] if sk is None else [
            (rows[i], rows[j], d, sd)
            for i, j, d, sd in allpairs.confirmed_pair_chunks(fps[rows], sk, k, max_sketch_distance)]
    out: list[tuple[int, int, int, int | None]] = []
    for i, j, d, sd in chunks:
        a, b = ids[i].tolist(), ids[j].tolist()
        sds = [None] * len(a) if sd is None else sd.tolist()
        out += [(min(x, y), max(x, y), dd, s) for x, y, dd, s in zip(a, b, d.tolist(), sds, strict=True)]
    out.sort()
    return out


def _clusters(ids: Any, pairs: list[tuple[int, int, int, int | None]], method: str) -> list[list[int]]:
    """Clusters (size >= 2) of the decided pairs, as sorted id lists, largest first.

    Representatives are taken in id order (load order).
    """
    import numpy as np

    from simpg import allpairs

    order = np.sort(np.asarray(ids, dtype=np.int64))
    if not pairs:
        return []
    i = np.searchsorted(order, np.array([p[0] for p in pairs], dtype=np.int64))
    j = np.searchsorted(order, np.array([p[1] for p in pairs], dtype=np.int64))
    if method == "components":
        labels = allpairs.component_labels(len(order), i, j)
    else:
        labels = allpairs.representative_labels(len(order), i, j)
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(int(order[row]))
    out = [g for g in groups.values() if len(g) > 1]
    out.sort(key=lambda g: (-len(g), g[0]))
    return out


def _pair_json(a: int, b: int, d: int, sd: int | None, rows: Mapping[Any, Sequence[Any]],
               confirm: bool) -> dict[str, Any]:
    from simpg.fingerprint import similarity

    out: dict[str, Any] = {"a": a, "b": b, "source_a": rows[a][1], "source_b": rows[b][1], "distance": d}
    if confirm and sd is not None:
        out["sketch_distance"] = sd
        out["similarity"] = round(similarity(sd), 3)
    return out


def _report(collection: str, documents: int, k: int, clusters: list[list[int]],
            rows: Mapping[Any, Sequence[Any]], skipped: list[str]) -> dict[str, Any]:
    from simpg.fingerprint import similarity
    from simpg.fingerprint.minhash import from_sql, sketch_distance

    out = []
    for ids in clusters:
        first = bits.from_db(rows[ids[0]][4])
        first_sketch = from_sql(rows[ids[0]][5])
        docs = []
        for id_ in ids:
            _, source, title, preview, simhash, sketch_text = rows[id_]
            fp = bits.from_db(simhash)
            sk = from_sql(sketch_text)
            sim = (round(similarity(sketch_distance(first_sketch, sk)), 3)
                   if sk is not None and first_sketch is not None else None)
            docs.append({"id": id_, "source": source, "title": title, "simhash": fp,
                         "distance": bits.hamming(first, fp), "similarity": sim,
                         "preview": " ".join(preview.split())})
        out.append({"size": len(ids), "documents": docs})
    return {"collection": collection, "documents": documents, "k": k,
            "clustered_documents": sum(len(c) for c in clusters), "clusters": out, "skipped": skipped}


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
        how += ", confirmed by sketches"
    lines = [
        f"{plural(report['documents'], 'document')} in collection {report['collection']!r}: "
        f"{plural(len(clusters), 'cluster')} of near-duplicates ({how.format(k=report['k'])}), "
        f"{plural(report['clustered_documents'], 'document')} in them",
    ]
    if report["skipped"]:
        lines.append(f"skipped {plural(len(report['skipped']), 'document')}: {_shown(report['skipped'])}")
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
            text = d["title"] + ": " + d["preview"] if d["title"] else d["preview"]
            sim = "" if d.get("similarity") is None else f"{d['similarity']:.2f}"
            lines.append(f"  {d['id']:>{id_w}}  {d['distance']:>4}  {sim:>4}  {_fit(d['source'], src_w)}  "
                         f"{_fit(text, text_w)}".rstrip())
    return "\n".join(lines) + "\n"
