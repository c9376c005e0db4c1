"""The review report's data: clusters, their figures, cross-cluster links, texts once per document.

Two ways in, one shape out (:func:`build`):

* after ``simpg dedup`` (:func:`from_dedup_report`): the report
  :func:`simpg.dedup.deduplicate` returns with ``with_pairs=True``, and the documents
  it names (:func:`read_documents`: texts, fingerprints and sketches as stored);
* from a stored collection (:func:`from_collection`): the same library decision on the
  rows of ``simpg_documents`` (:func:`simpg.dedup.decide_stored`).

Each member of a cluster is shown against the cluster's representative (its first
document, in load order): fingerprint distance (bits), sketch distance (bits), sketch
similarity (share of the 256 sketch bits that agree) and estimated Jaccard similarity
of the shingle sets (:func:`simpg.fingerprint.minhash.similarity`). Pairs decided
near-duplicates whose documents sit in different clusters (representative clustering
keeps a document with its earliest representative only) are listed as *links*.

Example::

    with psycopg.connect(dsn, autocommit=True) as conn:
        data = simpg.review.data.from_collection(conn, "corpus")
    simpg.review.html.write(data, "report.html")
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint.minhash import SKETCH_BITS, from_sql, similarity, sketch_distance
from simpg.reference import VERDICTS

__all__ = ["FORMAT", "StoredDocument", "build", "from_collection", "from_dedup_report", "read_documents",
           "recorded_decisions", "report_ids"]

#: The report data's format name and version (embedded in the page).
FORMAT = {"format": "simpg-review", "version": 1}


@dataclass(frozen=True)
class StoredDocument:
    """One row of ``simpg_documents`` as the report shows it."""

    id: int
    source: str
    title: str | None
    body: str
    simhash: int | None  # unsigned 64-bit
    sketch: bytes | None


def read_documents(conn: Any, ids: Iterable[int]) -> dict[int, StoredDocument]:
    """The rows of ``ids`` (texts, fingerprints, sketches), by id."""
    wanted = np.array(sorted(set(ids)), dtype=np.int64).tolist()
    out = {}
    for id_, source, title, body, simhash, sketch_text in conn.execute(
            "SELECT id, source, title, body, simhash, sketch::text FROM simpg_documents WHERE id = ANY(%s)",
            [wanted]):
        out[id_] = StoredDocument(id_, source, title, body, None if simhash is None else bits.from_db(simhash),
                                  from_sql(sketch_text))
    missing = [i for i in wanted if i not in out]
    if missing:
        raise SimpgError(f"document {missing[0]} of the report is no longer in simpg_documents")
    return out


def report_ids(report: Mapping[str, Any]) -> set[int]:
    """Every document id a dedup report names: cluster members and both sides of its pairs."""
    ids = {int(d["id"]) for c in report["clusters"] for d in c["documents"]}
    copied = (report.get("passages") or {}).get("pairs", ())
    return ids | {int(p[s]) for p in [*report.get("pairs", ()), *copied] for s in ("a", "b")}


def from_dedup_report(report: Mapping[str, Any], documents: Mapping[int, StoredDocument],
                      decisions: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The report data of a :func:`simpg.dedup.deduplicate` result made ``with_pairs``.

    ``documents``: at least the documents of :func:`report_ids`, as :func:`read_documents` returns them.
    """
    if "pairs" not in report:
        raise SimpgError("the dedup report has no pairs: make it with with_pairs=True")
    clusters = [[int(d["id"]) for d in c["documents"]] for c in report["clusters"]]
    pairs = [(int(p["a"]), int(p["b"]), int(p["distance"]), p.get("sketch_distance")) for p in report["pairs"]]
    settings = {key: report.get(key) for key in ("method", "k", "confirm", "max_sketch_distance", "bands")}
    return build(str(report["collection"]), int(report["documents"]), clusters, pairs, documents,
                 settings=settings, decisions=decisions, passages=report.get("passages"))


def from_collection(conn: Any, collection: str, decision: Any = None,
                    decisions: Sequence[Mapping[str, Any]] = (),
                    passages: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report data of a collection stored in ``simpg_documents``, decided as ``simpg dedup`` decides.

    ``decision``: a :class:`simpg.dedup.Decision` (default: dedup's defaults).
    ``passages``: the collection's copied passages (:func:`simpg.passage_report.from_collection`),
    shown in the page's "Copied passages" section.
    ``conn`` must be in autocommit mode.
    """
    from simpg import dedup

    decision = decision or dedup.Decision()
    table = conn.execute("SELECT to_regclass('simpg_documents')").fetchone()[0]
    row = (conn.execute("SELECT count(*) FROM simpg_documents WHERE collection = %s", [collection]).fetchone()
           if table is not None else (0,))
    if not row[0]:  # no such collection, or no table at all
        raise SimpgError(f"collection {collection!r} has no documents in simpg_documents")
    clusters, pairs = dedup.decide_stored(conn, collection, decision)
    decisions = decisions or recorded_decisions(conn, collection)
    ids = {i for c in clusters for i in c} | {i for p in pairs for i in p[:2]}
    ids |= {int(p[s]) for p in (passages or {}).get("pairs", ()) for s in ("a", "b")}
    settings = {"method": decision.method, "k": decision.k, "confirm": "sketch" if decision.confirm else "none",
                "max_sketch_distance": decision.max_sketch_distance if decision.confirm else None,
                "bands": decision.confirm and decision.bands}
    return build(collection, int(row[0]), clusters, pairs, read_documents(conn, ids), settings=settings,
                 decisions=decisions, passages=passages)


def recorded_decisions(conn: Any, collection: str) -> list[dict[str, Any]]:
    """The reviewers' decisions stored for ``collection`` (``simpg review``), as the report shows them."""
    from simpg.review import decisions

    return [{"a": d.a, "b": d.b, "verdict": d.verdict, "who": d.reviewer or d.who,
             "at": d.decided_at.isoformat() if d.decided_at else None}
            for d in decisions.load(conn, collection)]


def _figures(first: StoredDocument, doc: StoredDocument) -> dict[str, Any]:
    """``doc`` against ``first``: fingerprint and sketch distances, sketch similarity, estimated Jaccard."""
    out: dict[str, Any] = {"id": doc.id, "distance": None, "sketch_distance": None, "sketch_similarity": None,
                           "estimated_jaccard": None}
    if first.simhash is not None and doc.simhash is not None:
        out["distance"] = bits.hamming(first.simhash, doc.simhash)
    if first.sketch is not None and doc.sketch is not None:
        sd = sketch_distance(first.sketch, doc.sketch)
        out.update(sketch_distance=sd, sketch_similarity=round(1 - sd / SKETCH_BITS, 3),
                   estimated_jaccard=round(similarity(sd), 3))
    return out


def _checked_decisions(decisions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Recorded decisions ``{a, b, verdict, who, at}``, refused naming the bad value."""
    out = []
    for d in decisions:
        a, b, verdict = d.get("a"), d.get("b"), d.get("verdict")
        if not isinstance(a, int) or not isinstance(b, int) or isinstance(a, bool) or isinstance(b, bool):
            raise SimpgError(f"a decision needs integer document ids a and b, got {dict(d)!r}")
        if verdict not in VERDICTS:
            raise SimpgError(f"a decision's verdict must be not_duplicate or duplicate, got {verdict!r}")
        out.append({"a": min(a, b), "b": max(a, b), "verdict": verdict,
                    "who": None if d.get("who") is None else str(d["who"]),
                    "at": None if d.get("at") is None else str(d["at"])})
    return out


def build(collection: str, documents: int, clusters: Sequence[Sequence[int]],
          pairs: Iterable[tuple[int, int, int, int | None]], docs: Mapping[int, StoredDocument], *,
          settings: Mapping[str, Any] | None = None, decisions: Sequence[Mapping[str, Any]] = (),
          passages: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report data: summary, clusters (largest first) with figures, links, texts once per document.

    ``clusters``: id lists, each led by its representative (its smallest id: the first
    loaded); ``pairs``: every decided pair ``(a, b, distance, sketch distance)``;
    ``docs``: every document either names, and those of ``passages`` (the copied passages,
    :mod:`simpg.passage_report`: their pairs with character offsets, their clusters), which
    the page shows highlighted in both texts.
    """
    ordered = sorted((sorted(c) for c in clusters), key=lambda c: (-len(c), c[0]))
    label = {i: n for n, c in enumerate(ordered) for i in c}
    out_clusters = [{"representative": c[0], "members": [_figures(docs[c[0]], docs[i]) for i in c[1:]]}
                    for c in ordered]
    links = []
    for a, b, _, _ in pairs:
        if label.get(a) != label.get(b):
            link = _figures(docs[a], docs[b])
            del link["id"]
            links.append({"a": a, "b": b, "cluster_a": label.get(a), "cluster_b": label.get(b), **link})
    shown = {i for c in ordered for i in c} | {i for link in links for i in (link["a"], link["b"])}
    shown |= {int(p[s]) for p in (passages or {}).get("pairs", ()) for s in ("a", "b")}
    clustered = sum(len(c) for c in ordered)
    duplicates = clustered - len(ordered)  # every member but the representative
    return {
        **FORMAT,
        "collection": collection,
        "settings": dict(settings or {}),
        "summary": {"documents": documents, "clusters": len(ordered), "clustered_documents": clustered,
                    "duplicates": duplicates, "after_dedup": documents - duplicates, "links": len(links),
                    "sizes": sorted(Counter(len(c) for c in ordered).items())},
        "documents": {str(i): {"source": docs[i].source, "title": docs[i].title, "text": docs[i].body}
                      for i in sorted(shown)},
        "clusters": out_clusters,
        "links": links,
        "decisions": _checked_decisions(decisions),
        "passages": dict(passages) if passages is not None else None,
    }
