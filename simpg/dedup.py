"""Deduplicating a collection of documents in PostgreSQL: the job behind ``simpg dedup``.

The documents go into the reference table ``simpg_documents`` (:mod:`simpg.reference`)
as one *collection*, replacing what an earlier run loaded into it unless ``append``.
Two documents are near-duplicates when their fingerprints differ in at most k bits or
(with ``bands``) they share a band key, *and*, with ``confirm``, their sketches agree
(:mod:`simpg.fingerprint.minhash`): :class:`Decision`, the decision of every path that a
sketch confirms (docs/fingerprinting.md, "One decision on every path"). The path is
straight: the values computed per document are stored (for later lookups and ``--append``)
and paired as they are, in memory, by :func:`simpg.allpairs.decide`, which also makes the
clusters (around representatives, or connected components); only ``--append`` reads rows
back, those stored by earlier runs.

The command line (:mod:`simpg.commands.dedup`) reads the documents, shows progress and
prints; everything else is here, usable from Python::

    docs = list(simpg.corpus.read_documents("corpus/"))
    fps, sketches, band_keys = dedup.fingerprint_sketch_and_band_documents(docs, FingerprintConfig())
    with psycopg.connect(dsn, autocommit=True) as conn:
        report = dedup.deduplicate(conn, "corpus", docs, fps, sketches, band_keys=band_keys,
                                   decision=dedup.Decision())
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql

from simpg import allpairs, bits, passage_report
from simpg.corpus import Document, file_title
from simpg.exc import SimpgError
from simpg.fingerprint import (
    DEDUP_K,
    MAX_SKETCH_DISTANCE,
    FingerprintConfig,
    FingerprintError,
    fingerprint_many,
    fingerprint_sketch_and_bands_many,
    get_fingerprinter,
    similarity,
    sketch_and_bands_many,
)
from simpg.fingerprint import batch as fingerprint_batch
from simpg.fingerprint.batch import PARALLEL_FROM
from simpg.fingerprint.minhash import from_sql, sketch_and_bands, sketch_distance, to_sql
from simpg.passage_report import PartialOptions
from simpg.passages import passage_hashes_array, passage_hashes_many
from simpg.psycopg import SimHashColumn
from simpg.reference import (
    BAND_COLUMNS,
    PASSAGE_COLUMN,
    PASSAGE_CONFIG,
    TABLE,
    TEXT_COLUMN,
    ensure_reference_schema,
    passage_keys_follow_rows,
)
from simpg.review import decisions as review_decisions

__all__ = [
    "Decision",
    "Progress",
    "deduplicate",
    "decide_stored",
    "featureless_reason",
    "fill_passages",
    "fingerprint_documents",
    "fingerprint_sketch_band_and_passage_documents",
    "fingerprint_sketch_and_band_documents",
    "passage_hash_documents",
    "sketch_and_band_documents",
]

T = TypeVar("T")

#: ``progress(items, total, description, weight)``: the items, passed through (the CLI shows a bar).
Progress = Callable[[Iterable[Any], "int | None", str, "Callable[[Any], int] | None"], Iterable[Any]]

#: Rows per COPY while loading, so progress moves.
LOAD_CHUNK = 5000


def _quiet(items: Iterable[T], total: int | None, desc: str, weight: Callable[[T], int] | None = None) -> Iterable[T]:
    return items


def _inputs(docs: Sequence[Document]) -> Iterable[Any]:
    return ({"title": d.title, "body": d.body} if d.title else d.body for d in docs)


def _workers(docs: Sequence[Document], workers: int | None) -> int | None:
    return workers or (None if len(docs) >= PARALLEL_FROM else 1)


def fingerprint_documents(docs: Sequence[Document], config: FingerprintConfig, workers: int | None = None,
                          progress: Progress = _quiet) -> list[int | None]:
    """Each document's fingerprint (None: no usable features), in worker processes from 1,000 documents."""
    return list(progress(fingerprint_many(_inputs(docs), config, workers=_workers(docs, workers), on_error="none"),
                         len(docs), "fingerprinting", None))


def sketch_and_band_documents(docs: Sequence[Document], workers: int | None = None, progress: Progress = _quiet,
                              ) -> tuple[list[bytes | None], list[tuple[int, ...] | None]]:
    """Each document's sketch and band keys (:func:`~simpg.fingerprint.sketch_and_bands`), in one pass.

    None where there are no words to sketch; band keys None for texts too short to have any.
    """
    made = list(progress(sketch_and_bands_many(_inputs(docs), workers=_workers(docs, workers)), len(docs),
                         "sketching", None))
    return [m and m[0] for m in made], [m and m[1] for m in made]


def fingerprint_sketch_and_band_documents(
        docs: Sequence[Document], config: FingerprintConfig, workers: int | None = None, progress: Progress = _quiet,
) -> tuple[list[int | None], list[bytes | None], list[tuple[int, ...] | None]]:
    """Each document's fingerprint, sketch and band keys, the text normalised and split once for all three.

    The values of :func:`fingerprint_documents` and :func:`sketch_and_band_documents`
    (what ``simpg dedup`` computes per document), in worker processes from 1,000 documents.
    """
    made = list(progress(fingerprint_sketch_and_bands_many(_inputs(docs), config, workers=_workers(docs, workers)),
                         len(docs), "fingerprinting and sketching", None))
    return [m[0] for m in made], [m[1] for m in made], [m[2] for m in made]


def passage_hash_documents(docs: Sequence[Document], workers: int | None = None, progress: Progress = _quiet,
                           ) -> list[list[int]]:
    """Each document's passage hashes: what ``simpg_documents.passages`` holds.

    :func:`simpg.passages.passage_hashes` of the body, at the reference table's window, in
    worker processes from 1,000 documents.

    ``simpg dedup`` makes them in its fingerprint pass instead
    (:func:`fingerprint_sketch_band_and_passage_documents`).
    """
    return list(progress(passage_hashes_many((d.body for d in docs), PASSAGE_CONFIG,
                                             workers=_workers(docs, workers)),
                         len(docs), "hashing passages", None))


def fill_passages(conn: psycopg.Connection[Any], collection: str, *, batch_size: int = LOAD_CHUNK,
                  workers: int | None = None, progress: Progress = _quiet,
                  stage: Callable[[str], None] = lambda text: None) -> int:
    """Write the passage hashes of ``collection``'s rows that have none; return how many rows were written.

    Rows stored by a simpg before passage hashes (or whose column was emptied) are never
    found by ``simpg near --passages`` and are refused by ``simpg report --passages``;
    ``append`` fills them. In batches of ``batch_size`` rows by id, each written in its own
    transaction (``conn`` in autocommit mode), so a stopped fill resumes where it was; a
    NULL text gets no hashes (``'{}'``), as an empty one.
    """
    missing = passage_report.unfilled_rows(conn, collection)
    select = sql.SQL("SELECT id, {text} FROM {table} WHERE collection = %s AND {column} IS NULL AND id > %s "
                     "ORDER BY id LIMIT %s")
    update = sql.SQL("UPDATE {table} AS d SET {column} = v.hashes::bigint[] "
                     "FROM unnest(%s::bigint[], %s::text[]) AS v(id, hashes) WHERE d.id = v.id AND d.{column} IS NULL")
    names = {"table": sql.Identifier(TABLE), "column": sql.Identifier(PASSAGE_COLUMN),
             "text": sql.Identifier(TEXT_COLUMN)}

    def batches() -> Iterable[int]:
        last = 0  # ids are a serial's: positive
        while True:
            rows = conn.execute(select.format(**names), [collection, last, batch_size]).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            made = passage_hashes_many([body or "" for _, body in rows], PASSAGE_CONFIG,
                                       workers=1 if len(rows) < 1000 else workers)
            conn.execute(update.format(**names), [[id_ for id_, _ in rows],
                                                  ["{" + ",".join(map(str, h)) + "}" for h in made]])
            yield len(rows)

    if not missing:
        return 0
    stage(f"hashing passages of {missing} earlier rows that have none")
    return sum(progress(batches(), missing, "hashing passages of earlier rows", lambda n: n))


def _with_passages(made: list[Any], batch: list[Any]) -> list[tuple[Any, Any, Any, Any]]:
    """Each document's values with its passage hashes (of its body: an input is a body or a title and body)."""
    config = PASSAGE_CONFIG
    return [(*m, passage_hashes_array(doc if isinstance(doc, str) else doc["body"], config))
            for m, doc in zip(made, batch, strict=True)]


def _work_all(batch: list[Any]) -> list[tuple[Any, Any, Any, Any]]:
    """A worker's batch: fingerprint, sketch and band keys (the worker's fingerprinter), and passage hashes."""
    return _with_passages(fingerprint_batch._work_both(batch), batch)


def fingerprint_sketch_band_and_passage_documents(
        docs: Sequence[Document], config: FingerprintConfig, workers: int | None = None, progress: Progress = _quiet,
) -> tuple[list[int | None], list[bytes | None], list[tuple[int, ...] | None], list[Any]]:
    """:func:`fingerprint_sketch_and_band_documents` and :func:`passage_hash_documents` in one worker pass.

    Each batch of documents goes to a worker once, which makes both (the passage hashes as
    ``int64`` arrays): one pool and one transfer of the texts instead of two.
    """
    n = _workers(docs, workers) or os.cpu_count() or 1
    items = _inputs(docs)
    if n == 1:
        fp = get_fingerprinter(config)
        made = itertools.chain.from_iterable(
            _with_passages(fingerprint_batch._both(fp, batch), batch)
            for batch in fingerprint_batch._batches(items, fingerprint_batch.SKETCH_BATCH))
    else:
        made = itertools.chain.from_iterable(fingerprint_batch._imap(
            _work_all, fingerprint_batch._batches(items, 32), n, 1, "spawn", fingerprint_batch._init_worker,
            (config,)))
    out = list(progress(made, len(docs), "fingerprinting and sketching", None))
    return [m[0] for m in out], [m[1] for m in out], [m[2] for m in out], [m[3] for m in out]


def featureless_reason(doc: Document, config: FingerprintConfig) -> str:
    """Why ``doc`` has no fingerprint (the fingerprinter's message: empty, or no usable features)."""
    try:
        get_fingerprinter(config).fingerprint({"title": doc.title, "body": doc.body} if doc.title else doc.body)
    except FingerprintError as err:
        return str(err)
    return "document has no usable features"


@dataclass(frozen=True)
class Decision:
    """How pairs are decided and grouped.

    With ``confirm`` (the default), a pair is a near-duplicate when its fingerprints are
    within ``k`` bits or, with ``bands``, it shares a band key, and its sketches differ in
    at most ``max_sketch_distance`` bits: the decision every path that a sketch confirms
    makes with the same defaults (docs/fingerprinting.md, "One decision"). Without
    ``confirm`` the fingerprints alone decide, within ``k``.
    """

    k: int = DEDUP_K
    confirm: bool = True
    max_sketch_distance: int = MAX_SKETCH_DISTANCE
    method: str = "representative"
    bands: bool = True


def deduplicate(conn: psycopg.Connection[Any], collection: str, docs: Sequence[Document],
                fingerprints: Sequence[int | None], sketches: Sequence[bytes | None], *,
                band_keys: Sequence[tuple[int, ...] | None] | None = None, decision: Decision = Decision(),
                config: FingerprintConfig | None = None, append: bool = False,
                with_pairs: bool = False, skipped: Sequence[str] = (), progress: Progress = _quiet,
                stage: Callable[[str], None] = lambda text: None,
                passages: Sequence[Sequence[int]] | None = None,
                partial: PartialOptions | None = None) -> dict[str, Any]:
    """Load ``docs`` (those with a fingerprint) as ``collection``, then pair and cluster it.

    The rows are stored (for ``simpg near``'s lookups and ``append``) and paired from the
    values given here, in memory (:func:`simpg.allpairs.decide`); only with ``append`` are
    the rows stored earlier read back, as they were not computed here. ``band_keys`` (from
    :func:`sketch_and_band_documents`) are stored and, with ``decision.bands``, are
    candidates too; without them the rows have none (rows stored earlier keep theirs) and
    are found through fingerprints only. ``conn`` must be in autocommit mode. Returns the
    report: the collection, its document count, the clusters (largest first, each
    document with its bits from the cluster's first document and sketch similarity), and
    with ``with_pairs`` every pair decided (ids, sources, distance, sketch distance and
    similarity).

    ``passages``: each document's passage hashes (:func:`passage_hash_documents`), stored
    in ``simpg_documents.passages`` (made here when not given: every row gets them, so
    that ``simpg near --passages`` finds every row). With ``partial``, the report also
    has ``"passages"``: the copied passages of the collection
    (:func:`simpg.passage_report.from_texts`, the texts held here; with ``append``, the
    earlier rows' texts are read).
    """
    config = config or FingerprintConfig()
    if passages is None:
        passages = passage_hash_documents(docs, progress=progress)
    identity = config.identity
    keys = [None] * len(docs) if band_keys is None else band_keys
    kept = [(d, fp, sk, b) for d, fp, sk, b in zip(docs, fingerprints, sketches, keys, strict=True)
            if fp is not None]
    # as Python ints: COPY adapts them to bigint[] (arrays from the worker pass are int64)
    kept_passages = [np.asarray(h, dtype=np.int64).tolist() for h, fp in zip(passages, fingerprints, strict=True)
                     if fp is not None]
    ensure_reference_schema(conn)
    index = SimHashColumn(conn, TABLE, "simhash")
    earlier = _Rows([], [], [], [])
    with conn.transaction():
        if append:
            others = [r[0] for r in conn.execute(
                "SELECT DISTINCT fingerprint_config FROM simpg_documents WHERE collection = %s "
                "AND fingerprint_config <> %s", [collection, identity])]
            if others:
                raise SimpgError(f"collection {collection!r} holds fingerprints made with config "
                                 f"{others[0]}, not {identity}; drop --append to replace it")
            earlier = _earlier_rows(conn, collection, decision.confirm)
        else:
            conn.execute("DELETE FROM simpg_documents WHERE collection = %s", [collection])
        # the ids the rows get, in load order: the report names rows by id without reading them back
        ids = sorted(r[0] for r in conn.execute(
            sql.SQL("SELECT nextval(pg_get_serial_sequence({}, 'id')) FROM generate_series(1, %s)").format(
                sql.Literal(TABLE)), [len(kept)]))
        chunks = [(ids[i:i + LOAD_CHUNK], kept[i:i + LOAD_CHUNK], kept_passages[i:i + LOAD_CHUNK])
                  for i in range(0, len(kept), LOAD_CHUNK)]
        # loading is indexing too: the prefix columns and their B-trees fill as rows go in
        for chunk_ids, chunk, chunk_passages in progress(chunks, len(kept), "loading and indexing",
                                                         lambda c: len(c[1])):
            index.add([fp for _, fp, _, _ in chunk], columns={
                "id": chunk_ids,
                "collection": [collection] * len(chunk),
                "source": [d.source for d, _, _, _ in chunk],
                "title": [d.display_title for d, _, _, _ in chunk],
                "body": [d.body for d, _, _, _ in chunk],
                "fingerprint_config": [identity] * len(chunk),
                "sketch": [None if sk is None else to_sql(sk) for _, _, sk, _ in chunk],
                **{col: [None if b is None else b[i] for _, _, _, b in chunk] for i, col in enumerate(BAND_COLUMNS)},
                PASSAGE_COLUMN: chunk_passages,
            })
    if append:  # earlier rows without passage hashes get them, so that passage reports and lookups are complete
        fill_passages(conn, collection, progress=progress, stage=stage)
    passage_keys_follow_rows(conn, len(kept))  # key bits by the rows (docs/partial.md)
    rows = _Rows(earlier.ids + ids, earlier.fingerprints + [fp for _, fp, _, _ in kept],
                 earlier.sketches + [sk for _, _, sk, _ in kept], earlier.band_keys + [b for _, _, _, b in kept])
    how = ("or sharing a band key, " if decision.confirm and decision.bands else "") + (
        "confirmed by sketches" if decision.confirm else "fingerprints only")
    documents = f"{len(kept)} document{'' if len(kept) == 1 else 's'}"
    stage(f"pairing {documents} within {decision.k} bits, {how} ({decision.method})")
    # reviewers' decisions (simpg review): only rows stored earlier can have any (--append),
    # since a run that replaces the collection deletes its rows and their decisions with them
    decisions = review_decisions.load(conn, collection) if append else review_decisions.Decisions(collection)
    clusters, decided = _decide(rows, decision, with_pairs, decisions)
    members = sorted({i for c in clusters for i in c} | {i for p in decided for i in p[:2]})
    new = {id_: (d.source, d.display_title, d.body[:300], fp, sk)
           for id_, (d, fp, sk, _) in zip(ids, kept, strict=True)}
    shown = {i: new[i] for i in members if i in new}
    shown.update(_earlier_display(conn, [i for i in members if i not in new]))
    report = _report(collection, len(rows.ids), decision.k, clusters, shown, list(skipped))
    report["method"] = decision.method
    report["confirm"] = "sketch" if decision.confirm else "none"
    report["max_sketch_distance"] = decision.max_sketch_distance if decision.confirm else None
    report["bands"] = decision.confirm and decision.bands
    report["decisions"] = decisions.to_json()
    if with_pairs:
        # every pair the clusters were made from, so an evaluation scores what users get
        report["pairs"] = [_pair_json(a, b, d, sd, shown, decision.confirm) for a, b, d, sd in decided]
    if partial is not None:
        texts = [d.body for d, _, _, _ in kept]
        sources = [d.source for d, _, _, _ in kept]
        hashes: list[Any] = list(kept_passages)
        earlier_ids: list[int] = []
        if append:  # the earlier rows' texts and their hashes (filled above where an older simpg left none)
            for id_, body, source, stored in conn.execute(
                    "SELECT id, body, source, passages FROM simpg_documents WHERE collection = %s "
                    "AND id <> ALL(%s) ORDER BY id", [collection, ids]):
                earlier_ids.append(id_)
                texts.append(body or "")
                sources.append(source)
                hashes.append(stored)
        stage(f"pairing copied passages of {len(texts)} documents")
        report["passages"] = passage_report.from_texts(ids + earlier_ids, texts, hashes, sources, clusters, partial,
                                                       progress=progress)
    return report


@dataclass
class _Rows:
    """The collection's rows to pair: ids, unsigned fingerprints, sketches and band keys (None where absent)."""

    ids: list[int]
    fingerprints: list[int]
    sketches: list[bytes | None]
    band_keys: list[tuple[int, ...] | None]


def _decide(rows: _Rows, decision: Decision, with_pairs: bool,
            decisions: review_decisions.Decisions | None = None,
            ) -> tuple[list[list[int]], list[tuple[int, int, int, int | None]]]:
    """The clusters (sorted id lists, largest first) and, with ``with_pairs``, every pair decided.

    Pairs are ``(id a, id b, distance, sketch distance)``, ``a < b``, sorted. With
    sketches, a document without one (no words to sketch) is nobody's duplicate.
    Reviewers' ``decisions`` are applied: a ``not_duplicate`` pair is no pair and never in
    one cluster, a ``duplicate`` pair is a pair and its clusters are merged.
    """
    by_id = np.argsort(np.array(rows.ids, dtype=np.int64), kind="stable")  # representatives come in id order
    if decision.confirm:
        by_id = by_id[[rows.sketches[r] is not None for r in by_id.tolist()]]
    if not len(by_id):
        return [], []
    picked = by_id.tolist()
    ids = np.array(rows.ids, dtype=np.int64)[by_id]
    decided = allpairs.decide(
        allpairs.as_fingerprints([rows.fingerprints[r] for r in picked]), decision.k,
        sketches=[rows.sketches[r] for r in picked] if decision.confirm else None,
        max_sketch_distance=decision.max_sketch_distance,
        band_keys=(allpairs.as_band_keys([rows.band_keys[r] for r in picked])
                   if decision.confirm and decision.bands else None))
    position = {id_: n for n, id_ in enumerate(ids.tolist())}
    # a decision on a document left out here (no sketch) has nothing to bind
    bound = review_decisions.Decisions(decisions.collection if decisions else "", [
        d for d in decisions or () if d.a in position and d.b in position])

    def rows_of(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return [(position[a], position[b]) for a, b in pairs]

    clusters = [ids[c].tolist() for c in decided.clusters(
        decision.method, cannot_link=rows_of(bound.cannot_link), must_link=rows_of(bound.must_link))]
    pairs: list[tuple[int, int, int, int | None]] = []
    if with_pairs:  # every pair, copies included: as many as the report asks for
        for i, j, d, sd in decided.pair_chunks():
            sds = [None] * len(i) if sd is None else sd.tolist()
            pairs += zip(ids[i].tolist(), ids[j].tolist(), d.tolist(), sds, strict=True)

        def measure(a: int, b: int) -> tuple[int, int, int, int | None]:
            ra, rb = picked[position[a]], picked[position[b]]
            ska, skb = rows.sketches[ra], rows.sketches[rb]
            return (a, b, bits.hamming(rows.fingerprints[ra], rows.fingerprints[rb]),
                    sketch_distance(ska, skb) if decision.confirm and ska and skb else None)

        pairs = review_decisions.apply(pairs, bound, measure)
        pairs.sort()
    return clusters, pairs


def _earlier_rows(conn: Any, collection: str, confirm: bool) -> _Rows:
    """The rows ``collection`` holds already (``append``), in id order.

    With ``confirm``, rows stored before sketches (simpg 0.1, or by hand) get theirs (and
    band keys) now, from their text.
    """
    out = _Rows([], [], [], [])
    for id_, simhash, sketch_text, *keys in conn.execute(
            "SELECT id, simhash, sketch::text, sketch_b0, sketch_b1, sketch_b2, sketch_b3 FROM simpg_documents "
            "WHERE collection = %s ORDER BY id", [collection]):
        out.ids.append(id_)
        out.fingerprints.append(bits.from_db(simhash))
        out.sketches.append(from_sql(sketch_text))
        out.band_keys.append(None if None in keys else tuple(keys))
    missing = conn.execute("SELECT id, source, title, body FROM simpg_documents WHERE collection = %s "
                           "AND sketch IS NULL", [collection]).fetchall() if confirm else []
    position = {id_: n for n, id_ in enumerate(out.ids)}
    updates = []
    for id_, source, title, body in missing:  # the text is there
        if title == file_title(Path(source)):
            title = None  # a file's name, shown as its title, is not part of what it says (Document.name)
        try:
            made, band_keys = sketch_and_bands({"title": title, "body": body} if title else body)
        except ValueError:
            continue
        out.sketches[position[id_]], out.band_keys[position[id_]] = made, band_keys
        updates.append((to_sql(made), *(band_keys or [None] * len(BAND_COLUMNS)), id_))
    if updates:
        with conn.cursor() as cur:
            cur.executemany("UPDATE simpg_documents SET sketch = %s::bit(256), sketch_b0 = %s, sketch_b1 = %s, "
                            "sketch_b2 = %s, sketch_b3 = %s WHERE id = %s", updates)
    return out


def _earlier_display(conn: Any, ids: list[int]) -> dict[int, tuple[str, str | None, str, int, bytes | None]]:
    """Source, title, preview, fingerprint and sketch of rows stored earlier, for the report."""
    if not ids:
        return {}
    return {r[0]: (r[1], r[2], r[3], bits.from_db(r[4]), from_sql(r[5])) for r in conn.execute(
        "SELECT id, source, title, left(body, 300), simhash, sketch::text FROM simpg_documents "
        "WHERE id = ANY(%s)", [ids])}


def _pair_json(a: int, b: int, d: int, sd: int | None, rows: Mapping[Any, Sequence[Any]],
               confirm: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"a": a, "b": b, "source_a": rows[a][0], "source_b": rows[b][0], "distance": d}
    if confirm and sd is not None:
        out["sketch_distance"] = sd
        out["similarity"] = round(similarity(sd), 3)
    return out


def _report(collection: str, documents: int, k: int, clusters: list[list[int]],
            rows: Mapping[Any, Sequence[Any]], skipped: list[str]) -> dict[str, Any]:
    out = []
    for ids in clusters:
        first, first_sketch = rows[ids[0]][3], rows[ids[0]][4]
        docs = []
        for id_ in ids:
            source, title, preview, fp, sk = rows[id_]
            sim = (round(similarity(sketch_distance(first_sketch, sk)), 3)
                   if sk is not None and first_sketch is not None else None)
            docs.append({"id": id_, "source": source, "title": title, "simhash": fp,
                         "distance": bits.hamming(first, fp), "similarity": sim,
                         "preview": " ".join(preview.split())})
        out.append({"size": len(ids), "documents": docs})
    return {"collection": collection, "documents": documents, "k": k,
            "clustered_documents": sum(len(c) for c in clusters), "clusters": out, "skipped": skipped}


def decide_stored(conn: psycopg.Connection[Any], collection: str, decision: Decision = Decision(),
                  ) -> tuple[list[list[int]], list[tuple[int, int, int, int | None]]]:
    """The clusters and every decided pair of a collection already in ``simpg_documents``.

    The decision :func:`deduplicate` makes after loading, reviewers' decisions applied, on
    the stored rows as they are (one snapshot, nothing written: a row stored without a
    sketch stays nobody's duplicate): clusters as sorted id lists, largest first, and the pairs as ``(id a, id
    b, distance, sketch distance)``, ``a < b``, copies included. ``conn`` must be in
    autocommit mode.
    """
    ensure_reference_schema(conn)
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = _earlier_rows(conn, collection, confirm=False)
        decisions = review_decisions.load(conn, collection)
    return _decide(rows, decision, with_pairs=True, decisions=decisions)
