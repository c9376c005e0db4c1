"""Deduplicating a collection of documents in PostgreSQL: the job behind ``simpg dedup``.

The documents go into the reference table ``simpg_documents`` (:mod:`simpg.reference`)
as one *collection*, replacing what an earlier run loaded into it unless ``append``.
Two documents are near-duplicates when their fingerprints differ in at most k bits or
(with ``bands``) they share a band key, *and*, with ``confirm``, their sketches agree
(:mod:`simpg.fingerprint.minhash`): :class:`Decision`, the decision of every path that a
sketch confirms (docs/fingerprinting.md, "One decision on every path"). The
clusters come from the table in one read (one snapshot, so the clusters and the pairs
listed are of the same rows): around representatives, or connected components.

The command line (:mod:`simpg.commands.dedup`) reads the documents, shows progress and
prints; everything else is here, usable from Python::

    docs = list(simpg.corpus.read_documents("corpus/"))
    fps, sketches, bands = dedup.fingerprint_sketch_and_band_documents(docs, FingerprintConfig())
    with psycopg.connect(dsn, autocommit=True) as conn:
        report = dedup.deduplicate(conn, "corpus", docs, fps, sketches, bands=bands,
                                   decision=dedup.Decision())
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql

from simpg import allpairs, bits
from simpg.corpus import Document
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
from simpg.fingerprint.batch import PARALLEL_FROM
from simpg.fingerprint.minhash import from_sql, sketch_and_bands, sketch_distance, to_sql
from simpg.psycopg import SimHashColumn
from simpg.reference import BAND_COLUMNS, TABLE, ensure_reference_schema

__all__ = [
    "Decision",
    "Progress",
    "deduplicate",
    "decide_stored",
    "featureless_reason",
    "fingerprint_documents",
    "fingerprint_sketch_and_band_documents",
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
                bands: Sequence[tuple[int, ...] | None] | None = None, decision: Decision = Decision(),
                config: FingerprintConfig | None = None, append: bool = False,
                with_pairs: bool = False, skipped: Sequence[str] = (), progress: Progress = _quiet,
                stage: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """Load ``docs`` (those with a fingerprint) as ``collection``, then pair and cluster it.

    ``bands`` (from :func:`sketch_and_band_documents`) are stored for ``simpg near``'s
    lookups and, with ``decision.bands``, are candidates here too; without them the rows
    have none (rows stored earlier keep theirs) and are found through fingerprints only.
    ``conn`` must be in autocommit mode. Returns the report: the collection, its
    document count, the clusters (largest first, each document with its bits from the
    cluster's first document and sketch similarity), and with ``with_pairs`` every pair
    decided (ids, sources, distance, sketch distance and similarity).
    """
    config = config or FingerprintConfig()
    identity = config.identity
    keys = [None] * len(docs) if bands is None else bands
    kept = [(d, fp, sk, b) for d, fp, sk, b in zip(docs, fingerprints, sketches, keys, strict=True)
            if fp is not None]
    ensure_reference_schema(conn)
    index = SimHashColumn(conn, TABLE, "simhash")
    with conn.transaction():
        if append:
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
        for chunk in progress(chunks, len(kept), "loading and indexing", len):
            index.add([fp for _, fp, _, _ in chunk], columns={
                "collection": [collection] * len(chunk),
                "source": [d.source for d, _, _, _ in chunk],
                "title": [d.title for d, _, _, _ in chunk],
                "body": [d.body for d, _, _, _ in chunk],
                "fingerprint_config": [identity] * len(chunk),
                "sketch": [None if sk is None else to_sql(sk) for _, _, sk, _ in chunk],
                **{col: [None if b is None else b[i] for _, _, _, b in chunk] for i, col in enumerate(BAND_COLUMNS)},
            })
    where = sql.SQL("t.collection = {}").format(sql.Literal(collection))
    how = ("or sharing a band key, " if decision.confirm and decision.bands else "") + (
        "confirmed by sketches" if decision.confirm else "fingerprints only")
    documents = f"{len(kept)} document{'' if len(kept) == 1 else 's'}"
    stage(f"pairing {documents} within {decision.k} bits, {how} ({decision.method})")
    # one snapshot: the clusters and the listed pairs come from the same rows
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        stored_ids, stored_fps = index.fetch_all(where)
        stored_sketches, stored_bands = (_stored_sketches(conn, collection, stored_ids) if decision.confirm
                                         else (None, None))
    decided, copies = _decide(stored_ids, stored_fps, stored_sketches, decision.k, decision.max_sketch_distance,
                              stored_bands if decision.bands else None)
    clusters = _clusters(stored_ids, decided, decision.method, copies)
    if with_pairs:  # every pair, copies included: as many as the report asks for
        decided = _all_pairs(decided, copies, decision.confirm)
    total = conn.execute("SELECT count(*) FROM simpg_documents WHERE collection = %s", [collection]).fetchone()
    members = sorted({i for c in clusters for i in c} | ({i for p in decided for i in p[:2]} if with_pairs
                                                           else set()))
    rows = {r[0]: r for r in conn.execute(
        "SELECT id, source, title, left(body, 300), simhash, sketch::text FROM simpg_documents "
        "WHERE id = ANY(%s)", [np.array(members, dtype=np.int64).tolist()])}
    report = _report(collection, int(total[0]) if total else 0, decision.k, clusters, rows, list(skipped))
    report["method"] = decision.method
    report["confirm"] = "sketch" if decision.confirm else "none"
    report["max_sketch_distance"] = decision.max_sketch_distance if decision.confirm else None
    report["bands"] = decision.confirm and decision.bands
    if with_pairs:
        # every pair the clusters were made from, so an evaluation scores what users get
        report["pairs"] = [_pair_json(a, b, d, sd, rows, decision.confirm) for a, b, d, sd in decided]
    return report


def _stored_sketches(conn: Any, collection: str, ids: Any,
                     ) -> tuple[list[bytes | None], list[tuple[int, ...] | None]]:
    """The stored sketches and band keys of ``ids``, in that order.

    Rows stored before sketches get theirs (and band keys) now.
    """
    found: dict[int, tuple[bytes | None, tuple[int, ...] | None]] = {}
    for id_, sketch_text, *keys in conn.execute(
            "SELECT id, sketch::text, sketch_b0, sketch_b1, sketch_b2, sketch_b3 FROM simpg_documents "
            "WHERE collection = %s AND sketch IS NOT NULL", [collection]):
        found[id_] = (from_sql(sketch_text), None if None in keys else tuple(keys))
    missing = conn.execute("SELECT id, title, body FROM simpg_documents WHERE collection = %s "
                           "AND sketch IS NULL", [collection]).fetchall()
    updates = []
    for id_, title, body in missing:  # stored by simpg 0.1, or by hand: the text is there
        try:
            made, band_keys = sketch_and_bands({"title": title, "body": body} if title else body)
        except ValueError:
            found[id_] = (None, None)
            continue
        found[id_] = (made, band_keys)
        updates.append((to_sql(made), *(band_keys or [None] * len(BAND_COLUMNS)), id_))
    if updates:
        with conn.cursor() as cur:
            cur.executemany("UPDATE simpg_documents SET sketch = %s::bit(256), sketch_b0 = %s, sketch_b1 = %s, "
                            "sketch_b2 = %s, sketch_b3 = %s WHERE id = %s", updates)
    made_rows = [found.get(int(i), (None, None)) for i in ids]
    return [m[0] for m in made_rows], [m[1] for m in made_rows]


def _copies(ids: np.ndarray, fps: np.ndarray, sketches: np.ndarray | None,
            bands: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, dict[int, list[int]]]:
    """The rows to pair (positions in ``ids``) and the copies each of them stands for.

    Rows with the same fingerprint (and, with sketches, the same sketch, and with band keys
    the same keys) are near-duplicates of each other and of exactly the same other rows,
    so only the one with the smallest id is paired; ``copies`` maps its id to every id of
    its group, sorted (groups of two or more only). Without this, n copies of one document
    (a licence, a templated page) made n * (n - 1) / 2 pairs: 6,000 copies took 53 s and
    5 GB. ``sketches``: an :func:`allpairs.as_sketches` array of the same rows, or None;
    ``bands``: an :func:`allpairs.as_bands` pair of the same rows, or None.
    """
    key = fps.astype(np.uint64).reshape(-1, 1)
    if sketches is not None:
        key = np.hstack([key, sketches])
    if bands is not None:
        key = np.hstack([key, bands[0].view(np.uint64), bands[1].astype(np.uint64).reshape(-1, 1)])
    by_id = np.argsort(ids, kind="stable")  # np.unique's first index of a group is then its smallest id
    _, first, group = np.unique(key[by_id], axis=0, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    in_groups = np.argsort(group, kind="stable")  # by group, each in id order
    member_ids = ids[by_id][in_groups]
    starts = np.flatnonzero(np.r_[True, np.diff(group[in_groups]) != 0])
    ends = np.r_[starts[1:], len(group)]
    copies = {int(member_ids[a]): member_ids[a:b].tolist()
              for a, b in zip(starts.tolist(), ends.tolist(), strict=True) if b - a > 1}
    return by_id[np.sort(first)], copies


def _decide(ids: Any, fps: Any, sketches: list[bytes | None] | None, k: int, max_sketch_distance: int,
            bands: Sequence[tuple[int, ...] | None] | None = None,
            ) -> tuple[list[tuple[int, int, int, int | None]], dict[int, list[int]]]:
    """Every near-duplicate pair among the rows that stand for their copies, and the copies.

    Pairs are ``(id a, id b, distance, sketch distance)``, ``a < b``, sorted; the copies
    are :func:`_copies`'. With sketches, a document without one (no words to sketch) is
    nobody's duplicate; with ``bands`` (one tuple or None per row, sketches required),
    rows sharing a band key are candidates too (:func:`allpairs.confirmed_pair_chunks`).
    """
    rows = np.arange(len(ids)) if sketches is None else np.flatnonzero([sk is not None for sk in sketches])
    if not len(rows):
        return [], {}
    sk = None if sketches is None else allpairs.as_sketches([sketches[r] for r in rows.tolist()])
    keys = None if bands is None or sk is None else allpairs.as_bands([bands[r] for r in rows.tolist()])
    reps, copies = _copies(np.asarray(ids, dtype=np.int64)[rows], np.asarray(fps)[rows], sk, keys)
    rows = rows[reps]
    chunks: list[tuple[Any, Any, Any, Any]]
    if sk is None:
        chunks = [(rows[i], rows[j], d, None) for i, j, d in allpairs.pair_chunks(fps[rows], k)]
    else:
        rep_bands = None if keys is None else (keys[0][reps], keys[1][reps])
        chunks = [(rows[i], rows[j], d, sd) for i, j, d, sd in
                  allpairs.confirmed_pair_chunks(fps[rows], sk[reps], k, max_sketch_distance, bands=rep_bands)]
    out: list[tuple[int, int, int, int | None]] = []
    for i, j, d, sd in chunks:
        a, b = ids[i].tolist(), ids[j].tolist()
        sds = [None] * len(a) if sd is None else sd.tolist()
        out += [(min(x, y), max(x, y), dd, s) for x, y, dd, s in zip(a, b, d.tolist(), sds, strict=True)]
    out.sort()
    return out, copies


def _all_pairs(decided: list[tuple[int, int, int, int | None]], copies: dict[int, list[int]],
               confirm: bool) -> list[tuple[int, int, int, int | None]]:
    """The pairs of :func:`_decide` for every copy, and the copies' pairs among themselves.

    Copies are 0 bits apart, and 0 sketch bits when sketches confirm.
    """
    out = [(min(x, y), max(x, y), d, sd) for a, b, d, sd in decided
           for x in copies.get(a, [a]) for y in copies.get(b, [b])]
    out += [(x, y, 0, 0 if confirm else None) for members in copies.values()
            for x, y in itertools.combinations(members, 2)]
    out.sort()
    return out


def _clusters(ids: Any, pairs: list[tuple[int, int, int, int | None]], method: str,
              copies: Mapping[int, list[int]] | None = None) -> list[list[int]]:
    """Clusters (size >= 2) of the decided pairs, as sorted id lists, largest first.

    Representatives are taken in id order (load order). A row's copies (:func:`_copies`)
    join its cluster: taken in id order, each would join the representative the row
    joined, or the row itself, as it shares every pair of the row's and has one with it.
    """
    order = np.sort(np.asarray(ids, dtype=np.int64))
    copies = copies or {}
    if not pairs and not copies:
        return []
    i = np.searchsorted(order, np.array([p[0] for p in pairs], dtype=np.int64))
    j = np.searchsorted(order, np.array([p[1] for p in pairs], dtype=np.int64))
    if method == "components":
        labels = allpairs.component_labels(len(order), i, j)
    else:
        labels = allpairs.representative_labels(len(order), i, j)
    for first, members in copies.items():
        labels[np.searchsorted(order, np.array(members, dtype=np.int64))] = labels[np.searchsorted(order, first)]
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(int(order[row]))
    out = [g for g in groups.values() if len(g) > 1]
    out.sort(key=lambda g: (-len(g), g[0]))
    return out


def _pair_json(a: int, b: int, d: int, sd: int | None, rows: Mapping[Any, Sequence[Any]],
               confirm: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"a": a, "b": b, "source_a": rows[a][1], "source_b": rows[b][1], "distance": d}
    if confirm and sd is not None:
        out["sketch_distance"] = sd
        out["similarity"] = round(similarity(sd), 3)
    return out


def _report(collection: str, documents: int, k: int, clusters: list[list[int]],
            rows: Mapping[Any, Sequence[Any]], skipped: list[str]) -> dict[str, Any]:
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


# --- the review report's read of a stored collection (simpg report, issue 32) ---
def decide_stored(conn: psycopg.Connection[Any], collection: str, decision: Decision = Decision(),
                  ) -> tuple[list[list[int]], list[tuple[int, int, int, int | None]]]:
    """The clusters and every decided pair of a collection already in ``simpg_documents``.

    The decision :func:`deduplicate` makes after loading, on the stored rows as they
    are (one snapshot): clusters as sorted id lists, largest first, and the pairs as
    ``(id a, id b, distance, sketch distance)``, ``a < b``, copies included.
    ``conn`` must be in autocommit mode.
    """
    ensure_reference_schema(conn)
    index = SimHashColumn(conn, TABLE, "simhash")
    where = sql.SQL("t.collection = {}").format(sql.Literal(collection))
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        stored_ids, stored_fps = index.fetch_all(where)
        stored_sketches, stored_bands = (_stored_sketches(conn, collection, stored_ids) if decision.confirm
                                         else (None, None))
    decided, copies = _decide(stored_ids, stored_fps, stored_sketches, decision.k, decision.max_sketch_distance,
                              stored_bands if decision.bands else None)
    return _clusters(stored_ids, decided, decision.method, copies), _all_pairs(decided, copies, decision.confirm)
