"""Copied passages of a collection: the report of ``simpg dedup --passages`` and ``simpg report --passages``.

Two ways in, one report out (:func:`build`), so the two commands answer alike:

* :func:`from_texts`: the documents ``simpg dedup`` holds in memory, their passage hashes
  paired by :func:`simpg.passages.candidate_pairs` (hashes in more than ``max_common``
  documents of the collection, counted exactly, make no candidates and are reported);
* :func:`from_collection`: a collection stored in ``simpg_documents``, the candidates from
  the SQL report function ``simpg.passage_pairs`` (hashes the planner's statistics put in
  more than ``max_common`` rows skipped: ``simpg.common_passage_hashes``), the texts read.

Either way every candidate is verified on the two texts
(:func:`simpg.passages.verified_pairs`, which :func:`simpg.passages.passage_pairs` runs
too): a pair is kept when its longest shared passage has ``min_tokens`` tokens or more, or
one document holds ``min_containment`` of the other; its source is the document with the
smaller id (the one loaded earlier, ``rule="rank"``). Pairs whose two documents are in one
whole-document cluster are *marked* ``near_duplicate`` and left out of the "copied from"
clusters and of the printed list: the clusters of near-duplicates already report them
(a near-duplicate shares nearly all its text with the other, which says nothing more).

Example::

    report = simpg.passage_report.from_texts(ids, texts, hashes, sources, whole_clusters, PartialOptions())
    print(json.dumps(report))  # the CLI prints it as text with simpg.commands._passage_report.render
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from simpg.exc import SimpgError
from simpg.passages import PassageConfig, PassagePair, candidate_pairs, passage_clusters, verified_pairs
from simpg.passages.checks import checked_max_common, checked_min_containment, checked_min_tokens, max_common_rows
from simpg.reference import PASSAGE_COLUMN, PASSAGE_CONFIG, TABLE, TEXT_COLUMN

__all__ = ["DEFAULT_MAX_COMMON", "PartialOptions", "build", "check_options", "from_collection", "from_texts",
           "quote"]

#: Hashes held by more documents than this are boilerplate by default (the SQL functions' default too).
DEFAULT_MAX_COMMON = 1000
#: Characters of a passage quoted at each end.
QUOTE_ENDS = 30

#: ``progress(items, total, description, weight)`` as in :mod:`simpg.dedup`.
Progress = Callable[[Iterable[Any], "int | None", str, "Callable[[Any], int] | None"], Iterable[Any]]


def _quiet(items: Iterable[Any], total: int | None, desc: str, weight: Any = None) -> Iterable[Any]:
    return items


@dataclass(frozen=True)
class PartialOptions:
    """Which pairs the report keeps, and which hashes make no candidates.

    ``min_tokens``: tokens of the longest shared passage from which a pair is kept (None
    with ``min_containment`` None: the window's guarantee, 50); ``min_containment``: share
    of a document held by the other from which a pair is kept; ``max_common``: hashes held
    by more documents make no candidates (None: every hash, the exact guarantee).
    """

    min_tokens: int | None = None
    min_containment: float | None = None
    max_common: int | float | None = DEFAULT_MAX_COMMON
    workers: int | None = None

    @property
    def config(self) -> PassageConfig:
        """The reference table's passage config (its window)."""
        return PASSAGE_CONFIG

    @property
    def thresholds(self) -> tuple[int | None, float | None]:
        """``(min_tokens, min_containment)`` with the default applied."""
        if self.min_tokens is None and self.min_containment is None:
            return self.config.guarantee, None
        return self.min_tokens, self.min_containment


def check_options(min_tokens: Any, min_containment: Any, max_common: Any, workers: Any = None) -> PartialOptions:
    """The options, or an error naming the bad value (the checks of :mod:`simpg.passages.checks`).

    ``min_tokens`` below the guarantee (window + 4) is refused: shorter shared runs are
    not all candidates, and the report would be silently incomplete.
    """
    return PartialOptions(checked_min_tokens(min_tokens, PASSAGE_CONFIG), checked_min_containment(min_containment),
                          checked_max_common(max_common), workers)


def quote(text: str, start: int, end: int) -> str:
    """The passage ``text[start:end]`` on one line, its middle cut when long."""
    passage = " ".join(text[start:end].split())
    if len(passage) <= 2 * QUOTE_ENDS + 5:
        return passage
    head, tail = passage[:QUOTE_ENDS], passage[-QUOTE_ENDS:]
    # cut between words where there are spaces (texts in spaceless scripts are cut anywhere)
    if " " in head and passage[QUOTE_ENDS] != " ":
        head = head.rsplit(" ", 1)[0]
    if " " in tail and passage[-QUOTE_ENDS - 1] != " ":
        tail = tail.split(" ", 1)[1]
    return head.rstrip() + " \u2026 " + tail.lstrip()


def _watch(progress: Progress, total: int) -> Callable[[Any], Iterable[Any]]:
    return lambda comparisons: progress(comparisons, total, "verifying copied passages", None)


def from_texts(ids: Sequence[int], texts: Sequence[str], hashes: Sequence[Sequence[int]],
               sources: Sequence[str], whole_clusters: Iterable[Sequence[int]], options: PartialOptions, *,
               progress: Progress = _quiet) -> dict[str, Any]:
    """The report over documents held in memory: ``ids[i]`` names ``texts[i]`` (with ``hashes[i]``, ``sources[i]``).

    ``whole_clusters``: the whole-document clusters (id lists) whose pairs are marked.
    """
    found = candidate_pairs(hashes, max_common=options.max_common)
    min_tokens, min_containment = options.thresholds
    pairs = verified_pairs(texts, found.a.tolist(), found.b.tolist(), min_tokens=min_tokens,
                           min_containment=min_containment, rank=ids, workers=options.workers,
                           watch=_watch(progress, len(found)))
    # by id from here on: the report names documents as simpg_documents does
    named = [PassagePair(ids[p.a], ids[p.b], p.comparison, ids[p.source], p.rule) for p in pairs]
    return build(named, dict(zip(ids, texts, strict=True)), dict(zip(ids, sources, strict=True)), whole_clusters,
                 options, candidates=len(found),
                 common=[{"hash": c.hash, "documents": c.documents} for c in found.common])


def unfilled_rows(conn: Any, collection: str | None) -> int:
    """Rows of ``collection`` (None: of the whole table) whose passage hashes are NULL: never found, never paired."""
    query = sql.SQL("SELECT count(*) FROM {} WHERE {} IS NULL").format(sql.Identifier(TABLE),
                                                                     sql.Identifier(PASSAGE_COLUMN))
    if collection is not None:
        query += sql.SQL(" AND collection = %s")
    return int(conn.execute(query, [] if collection is None else [collection]).fetchone()[0])


def fill_hint(collection: str) -> str:
    """How to fill the passage hashes of the reference table's rows that have none."""
    return (f"fill them with: simpg backfill --passages --table {TABLE} --text-column {TEXT_COLUMN} "
            f"(or run simpg dedup again on collection {collection!r}, or simpg dedup --append to it)")


def from_collection(conn: Any, collection: str, whole_clusters: Iterable[Sequence[int]], options: PartialOptions,
                    *, progress: Progress = _quiet) -> dict[str, Any]:
    """The report of a collection stored in ``simpg_documents``: candidates from SQL, verified on the texts read.

    Refused when rows of the collection have no passage hashes: they would be missed silently.
    """
    missing = unfilled_rows(conn, collection)
    if missing:
        raise SimpgError(f"{missing} rows of collection {collection!r} have no passage hashes (stored by an "
                         f"older simpg) and cannot be paired; {fill_hint(collection)}")
    max_common = options.max_common
    if isinstance(max_common, float):  # a share: of the collection's rows, as in memory
        rows = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE collection = %s").format(sql.Identifier(TABLE)),
                            [collection]).fetchone()[0]
        max_common = int(max_common_rows(max_common, rows) or 0)
    # only the collection's rows are paired (the filter of simpg.passage_pairs)
    candidates = conn.execute(
        "SELECT p.key_a, p.key_b FROM simpg.passage_pairs(%s, %s, 1, %s, NULL, 'collection', %s) AS p "
        "ORDER BY p.key_a, p.key_b",
        [TABLE, PASSAGE_COLUMN, max_common, collection]).fetchall()
    skipped = [] if max_common is None else conn.execute(
        "SELECT simpg.common_passage_hashes(%s, %s, %s::bigint)", [TABLE, PASSAGE_COLUMN, max_common]).fetchone()[0]
    wanted = sorted({i for pair in candidates for i in pair})
    texts, sources = {}, {}
    for id_, body, source in conn.execute(sql.SQL("SELECT id, {}, source FROM {} WHERE id = ANY(%s)").format(
            sql.Identifier(TEXT_COLUMN), sql.Identifier(TABLE)), [wanted]):
        texts[id_], sources[id_] = body or "", source
    min_tokens, min_containment = options.thresholds
    pairs = verified_pairs(texts, [a for a, _ in candidates], [b for _, b in candidates], min_tokens=min_tokens,
                           min_containment=min_containment, rank={i: i for i in wanted}, workers=options.workers,
                           watch=_watch(progress, len(candidates)))
    # statistics give no exact count per hash: documents is None
    return build(pairs, texts, sources, whole_clusters, options, candidates=len(candidates),
                 common=[{"hash": h, "documents": None} for h in sorted(skipped or [])])


def _pair_json(p: PassagePair, texts: Mapping[int, str], sources: Mapping[int, str],
               near_duplicate: bool) -> dict[str, Any]:
    c = p.comparison
    longest = max(c.passages, key=lambda q: (q.length, -q.a_start))
    copy_is_a = p.copy == p.a
    copy_text = texts[p.copy]
    start, end = ((longest.a_char_start, longest.a_char_end) if copy_is_a
                  else (longest.b_char_start, longest.b_char_end))
    return {
        "a": p.a, "b": p.b, "source": p.source, "copy": p.copy, "rule": p.rule,
        "a_source": sources[p.a], "b_source": sources[p.b], "near_duplicate": near_duplicate,
        # a_in_b: the share of a's token 3-shingles found in b (how much of a is in b)
        "a_in_b": c.a_in_b, "b_in_a": c.b_in_a,
        "copy_in_source": c.a_in_b if copy_is_a else c.b_in_a,
        "source_in_copy": c.b_in_a if copy_is_a else c.a_in_b,
        "shared_tokens": c.shared_tokens, "longest": c.longest, "passage_count": len(c.passages),
        "quote": quote(copy_text, start, end),
        # character offsets into the texts as stored (code points), a's then b's
        "passages": [{"tokens": q.length, "a_start": q.a_char_start, "a_end": q.a_char_end,
                      "b_start": q.b_char_start, "b_end": q.b_char_end} for q in c.passages],
    }


def build(pairs: Iterable[PassagePair], texts: Mapping[int, str], sources: Mapping[int, str],
          whole_clusters: Iterable[Sequence[int]], options: PartialOptions, *, candidates: int,
          common: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's JSON shape: settings, pairs (by a, b), "copied from" clusters, the common hashes skipped."""
    label = {i: n for n, cluster in enumerate(whole_clusters) for i in cluster}
    ordered = sorted(pairs, key=lambda p: (p.a, p.b))
    marked = [label.get(p.a, -1) == label.get(p.b, -2) for p in ordered]
    out_pairs = [_pair_json(p, texts, sources, m) for p, m in zip(ordered, marked, strict=True)]
    partial = [p for p, m in zip(ordered, marked, strict=True) if not m]
    clusters = []
    for cluster in passage_clusters(partial):
        members = set(cluster.members)
        clusters.append({"members": list(cluster.members), "sources": list(cluster.sources),
                         "pairs": [n for n, (p, m) in enumerate(zip(ordered, marked, strict=True))
                                   if not m and p.a in members]})
    min_tokens, min_containment = options.thresholds
    return {
        "window": PASSAGE_CONFIG.window, "spaceless_window": PASSAGE_CONFIG.spaceless_window,
        "min_tokens": min_tokens, "min_containment": min_containment,
        "max_common": options.max_common, "candidates": candidates,
        "near_duplicate_pairs": sum(marked), "pairs": out_pairs, "clusters": clusters,
        "common_hashes": common,
    }
