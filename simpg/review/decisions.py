"""Reviewers' decisions on pairs of stored documents, kept in PostgreSQL next to them.

A decision says two documents of a collection of the reference table are ``not_duplicate``
(never paired, never in one cluster, not even through a third document) or ``duplicate``
(paired, and their clusters merged: "merge two clusters" is a ``duplicate`` decision
between their representatives). It lives in ``simpg_decisions`` (the model
:class:`simpg.sqlalchemy.documents.Decision`) with the database role that made it
(``who``), an optional reviewer's name and the time; one decision per pair, a later one
replaces it. ``simpg dedup --append`` and the reports on a stored collection apply them
(:func:`load`, :func:`apply`, ``Decided.clusters(cannot_link=, must_link=)``).

Decisions are recorded from Python (:func:`record`, :func:`forget`), from the command line
(``simpg review mark|undo|list``), or from the file the HTML report exports
(:func:`apply_file`, ``simpg review apply FILE``): the report is a static file that opens
offline, so it cannot write to the database itself; the exported file is checked whole
(format, collection, every id and its source) and written in one transaction, or not at
all. Example::

    with psycopg.connect(dsn, autocommit=True) as conn:
        record(conn, "corpus", 12, 40, "not_duplicate", who="ana")
        decisions = load(conn, "corpus")
        pairs = apply([(12, 40, 3), (12, 41, 2)], decisions)   # [(12, 41, 2)]
        forget(conn, "corpus", 12, 40)

Decisions do not apply to the write guard (docs/guard.md): a decision is about two stored
documents, and the guard judges a row that is not stored yet, so no decision can name it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from simpg.exc import SimpgError
from simpg.reference import DECISIONS_TABLE, TABLE, VERDICTS

__all__ = [
    "FORMAT",
    "VERSION",
    "Decisions",
    "Recorded",
    "apply",
    "apply_file",
    "forget",
    "load",
    "record",
    "resolve",
]

#: The ``format`` and ``version`` of an exported decisions file.
FORMAT = "simpg-decisions"
VERSION = 1

P = TypeVar("P")


@dataclass(frozen=True)
class Recorded:
    """One stored decision: the pair (``a < b``), its sources, the verdict, who and when."""

    a: int
    b: int
    verdict: str
    source_a: str
    source_b: str
    who: str | None = None
    reviewer: str | None = None
    decided_at: datetime | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The decision as JSON values (the time in ISO 8601)."""
        out = asdict(self)
        out["decided_at"] = self.decided_at.isoformat() if self.decided_at else None
        return out


@dataclass
class Decisions:
    """A collection's decisions (:func:`load`): what :func:`apply` and the clustering take."""

    collection: str
    items: list[Recorded] = field(default_factory=list)

    def __iter__(self) -> Iterator[Recorded]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def verdict(self, a: int, b: int) -> str | None:
        """The verdict on documents ``a`` and ``b`` (either order), or None."""
        a, b = min(a, b), max(a, b)
        return next((d.verdict for d in self.items if (d.a, d.b) == (a, b)), None)

    @property
    def cannot_link(self) -> list[tuple[int, int]]:
        """The ``not_duplicate`` pairs of document ids."""
        return [(d.a, d.b) for d in self.items if d.verdict == "not_duplicate"]

    @property
    def must_link(self) -> list[tuple[int, int]]:
        """The ``duplicate`` pairs of document ids."""
        return [(d.a, d.b) for d in self.items if d.verdict == "duplicate"]

    def to_json(self) -> list[dict[str, Any]]:
        """Every decision as JSON values."""
        return [d.to_json() for d in self.items]


def _table_exists(conn: psycopg.Connection[Any], name: str) -> bool:
    row = conn.execute("SELECT pg_catalog.to_regclass(%s)", [name]).fetchone()
    return bool(row and row[0] is not None)


def load(conn: psycopg.Connection[Any], collection: str, pair: tuple[int, int] | None = None) -> Decisions:
    """The decisions of ``collection``, oldest first (none when the database has no decisions table).

    With ``pair`` (two document ids, either order) only the decision on that pair, if any.
    """
    if not _table_exists(conn, DECISIONS_TABLE):
        return Decisions(collection)
    a, b = (min(pair), max(pair)) if pair is not None else (None, None)
    rows = conn.execute(
        "SELECT d.doc_a, d.doc_b, d.verdict, a.source, b.source, d.who, d.reviewer, d.decided_at, d.note "
        "FROM simpg_decisions AS d JOIN simpg_documents AS a ON a.id = d.doc_a "
        "JOIN simpg_documents AS b ON b.id = d.doc_b WHERE d.collection = %s "
        "AND (%s::bigint IS NULL OR (d.doc_a = %s AND d.doc_b = %s)) ORDER BY d.decided_at, d.id",
        [collection, a, a, b]).fetchall()
    return Decisions(collection, [Recorded(*row) for row in rows])


def _collection_exists(conn: psycopg.Connection[Any], collection: str) -> bool:
    if not _table_exists(conn, TABLE):
        return False
    return conn.execute("SELECT EXISTS (SELECT FROM simpg_documents WHERE collection = %s)",
                        [collection]).fetchone() == (True,)


def _require_collection(conn: psycopg.Connection[Any], collection: str) -> None:
    if not _collection_exists(conn, collection):
        raise SimpgError(f"collection {collection!r} has no documents")


def resolve(conn: psycopg.Connection[Any], collection: str, document: int | str) -> tuple[int, str]:
    """``(id, source)`` of a document of ``collection`` named by its id (an int, or digits) or its source.

    Raises:
        SimpgError: no such document in the collection, or a source that names several.
    """
    if isinstance(document, int) and not isinstance(document, bool) or (
            isinstance(document, str) and document.isascii() and document.isdigit()):
        row = conn.execute("SELECT id, source FROM simpg_documents WHERE id = %s AND collection = %s",
                           [int(document), collection]).fetchone()
        if row is None:
            raise SimpgError(f"document {document} is not in collection {collection!r}")
        return int(row[0]), str(row[1])
    if not isinstance(document, str):
        raise SimpgError(f"expected a document id or source, got {document!r}")
    rows = conn.execute("SELECT id FROM simpg_documents WHERE source = %s AND collection = %s ORDER BY id",
                        [document, collection]).fetchall()
    if not rows:
        raise SimpgError(f"no document with source {document!r} in collection {collection!r}")
    if len(rows) > 1:
        raise SimpgError(f"source {document!r} names {len(rows)} documents of collection {collection!r} "
                         f"(ids {', '.join(str(r[0]) for r in rows[:5])}): give an id")
    return int(rows[0][0]), document


def _check_verdict(verdict: object) -> str:
    if verdict not in VERDICTS:
        raise SimpgError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    return str(verdict)


_UPSERT = ("INSERT INTO simpg_decisions AS d (collection, doc_a, doc_b, verdict, reviewer, note) "
           "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (collection, doc_a, doc_b) DO UPDATE "
           "SET verdict = excluded.verdict, reviewer = excluded.reviewer, note = excluded.note, "
           "who = CURRENT_USER, decided_at = now() "
           "RETURNING d.doc_a, d.doc_b, d.verdict, d.who, d.reviewer, d.decided_at, d.note")


def _ensure_table(conn: psycopg.Connection[Any]) -> None:
    if not _table_exists(conn, DECISIONS_TABLE):
        from simpg.reference import ensure_reference_schema

        ensure_reference_schema(conn)  # a reference table of simpg < 0.3: adds the decisions table


def record(conn: psycopg.Connection[Any], collection: str, a: int | str, b: int | str, verdict: str,
           who: str | None = None, note: str | None = None) -> Recorded:
    """Record that documents ``a`` and ``b`` of ``collection`` are (not) duplicates; returns the decision.

    ``a`` and ``b``: ids or sources (:func:`resolve`). ``who``: the reviewer's name (the
    database role is kept anyway). Replaces an earlier decision on the pair.
    """
    verdict = _check_verdict(verdict)
    _require_collection(conn, collection)
    (id_a, source_a), (id_b, source_b) = resolve(conn, collection, a), resolve(conn, collection, b)
    if id_a == id_b:
        raise SimpgError(f"a decision needs two documents, got document {id_a} twice")
    if id_a > id_b:
        (id_a, source_a), (id_b, source_b) = (id_b, source_b), (id_a, source_a)
    _ensure_table(conn)
    with conn.transaction():  # committed at once, or a savepoint in the caller's transaction
        row = conn.execute(_UPSERT, [collection, id_a, id_b, verdict, who, note]).fetchone()
    assert row is not None
    return Recorded(row[0], row[1], row[2], source_a, source_b, *row[3:])


def forget(conn: psycopg.Connection[Any], collection: str, a: int | str, b: int | str) -> bool:
    """Delete the decision on documents ``a`` and ``b`` of ``collection``; False if there was none."""
    _require_collection(conn, collection)
    id_a, id_b = resolve(conn, collection, a)[0], resolve(conn, collection, b)[0]
    if not _table_exists(conn, DECISIONS_TABLE):
        return False
    with conn.transaction():
        cur = conn.execute("DELETE FROM simpg_decisions WHERE collection = %s AND doc_a = %s AND doc_b = %s",
                           [collection, min(id_a, id_b), max(id_a, id_b)])
    return cur.rowcount > 0


def apply(pairs: Iterable[P], decisions: Decisions,
          measure: Callable[[int, int], P] | None = None) -> list[P]:
    """``pairs`` with the decisions applied: ``not_duplicate`` pairs removed, ``duplicate`` ones added.

    A pair is a tuple ``(a, b, ...)`` or a mapping with keys ``"a"`` and ``"b"`` (document
    ids, either order). A ``duplicate`` pair that is not there is appended as
    ``measure(a, b)`` (``a < b``), by default ``(a, b)`` or ``{"a": a, "b": b}`` like the
    pairs given. Clusters are not pairs: give the decisions to
    ``Decided.clusters(cannot_link=, must_link=)``, so that no third document joins a
    ``not_duplicate`` pair.
    """
    cannot = set(decisions.cannot_link)
    must = dict.fromkeys(decisions.must_link)
    out: list[P] = []
    mappings = False
    for pair in pairs:
        if isinstance(pair, Mapping):
            a, b, mappings = int(pair["a"]), int(pair["b"]), True
        else:
            a, b = int(pair[0]), int(pair[1])  # type: ignore[index]
        key = (min(a, b), max(a, b))
        if key in cannot:
            continue
        must.pop(key, None)
        out.append(pair)
    for a, b in must:
        if measure is not None:
            out.append(measure(a, b))
        else:
            out.append({"a": a, "b": b} if mappings else (a, b))  # type: ignore[arg-type]
    return out


def _entry_error(n: int, where: str, text: str) -> SimpgError:
    return SimpgError(f"decision {n} of {where}: {text}")


def apply_file(conn: psycopg.Connection[Any], source: str | Path | Mapping[str, Any],
               reviewer: str | None = None) -> list[Recorded]:
    """Check and record the decisions of an exported file (or its parsed JSON), all or none.

    The file: ``{"format": "simpg-decisions", "version": 1, "collection": NAME, "decisions":
    [{"a": ID, "b": ID, "verdict": "not_duplicate" | "duplicate", "source_a": ..., "source_b":
    ...}]}``. Every entry is checked (the ids are documents of the collection, their sources
    the ones stored) before anything is written; the first bad entry is named (numbered
    from 1) and nothing is written. Then all are written in one transaction.
    """
    where = f"file {source}" if not isinstance(source, Mapping) else "the decisions"
    if isinstance(source, Mapping):
        data: Any = source
    else:
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise SimpgError(f"{where} is not JSON: {err}") from None
        except UnicodeDecodeError:
            raise SimpgError(f"{where} is not UTF-8 text") from None
        except OSError as err:
            raise SimpgError(f"cannot read {where}: {(err.strerror or str(err)).lower()}") from None
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise SimpgError(f"{where} is not a {FORMAT} file (format {got!r})")
    if data.get("version") != VERSION:
        raise SimpgError(f"{where} has {FORMAT} version {data.get('version')!r}; this simpg reads version {VERSION}")
    collection = data.get("collection")
    if not isinstance(collection, str):
        raise SimpgError(f"{where} names no collection (got {collection!r})")
    entries = data.get("decisions")
    if not isinstance(entries, list):
        raise SimpgError(f"{where} has no list of decisions (got {type(entries).__name__})")
    _require_collection(conn, collection)
    checked = _checked_entries(conn, collection, entries, where)
    _ensure_table(conn)
    out = []
    with conn.transaction():
        for a, b, verdict, source_a, source_b, note in checked:
            row = conn.execute(_UPSERT, [collection, a, b, verdict, reviewer, note]).fetchone()
            assert row is not None
            out.append(Recorded(row[0], row[1], row[2], source_a, source_b, *row[3:]))
    return out


def _checked_entries(conn: psycopg.Connection[Any], collection: str, entries: Sequence[Any], where: str,
                     ) -> list[tuple[int, int, str, str, str, str | None]]:
    """The entries as ``(a, b, verdict, source a, source b, note)`` with ``a < b``; the first bad one raises."""
    ids = {v for e in entries if isinstance(e, Mapping) for v in (e.get("a"), e.get("b"))
           if isinstance(v, int) and not isinstance(v, bool)}
    stored = {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT id, collection, source FROM simpg_documents WHERE id = ANY(%s)", [sorted(ids)])}
    out = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, Mapping):
            raise _entry_error(n, where, f"expected an object, got {entry!r}")
        verdict = entry.get("verdict")
        if verdict not in VERDICTS:
            raise _entry_error(n, where, f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
        pair = []
        for end in ("a", "b"):
            id_, source = entry.get(end), entry.get(f"source_{end}")
            if not isinstance(id_, int) or isinstance(id_, bool):
                raise _entry_error(n, where, f"{end} must be a document id, got {id_!r}")
            if id_ not in stored:
                raise _entry_error(n, where, f"document {id_} does not exist")
            if stored[id_][0] != collection:
                raise _entry_error(n, where, f"document {id_} is in collection {stored[id_][0]!r}, "
                                             f"not {collection!r}")
            if source != stored[id_][1]:
                raise _entry_error(n, where, f"document {id_} is {stored[id_][1]!r}, not {source!r}")
            pair.append((id_, source))
        if pair[0][0] == pair[1][0]:
            raise _entry_error(n, where, f"a decision needs two documents, got document {pair[0][0]} twice")
        note = entry.get("note")
        if note is not None and not isinstance(note, str):
            raise _entry_error(n, where, f"note must be text, got {note!r}")
        (a, source_a), (b, source_b) = sorted(pair)
        out.append((a, b, str(verdict), source_a, source_b, note))
    return out
