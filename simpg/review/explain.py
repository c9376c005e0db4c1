"""Why two documents are, or are not, near-duplicates: ``simpg explain A B``.

:func:`explain` takes two documents (ids or sources of the reference table
``simpg_documents``, or ad-hoc texts as :class:`simpg.corpus.Document`) and returns an
:class:`Explanation`: the fingerprint distance and the permuted tables of the reference
index's layout whose prefix the two share (the tables in which the index finds one from
the other: "why the index found them"), the sketch distance and the Jaccard similarity it
estimates, the band keys they share, the decision :class:`simpg.dedup.Decision` makes with
its defaults and why ("within k", "shared band key 2", "sketch too far"), a reviewer's
decision on the pair if one is recorded, and the longest shared and the differing
passages with their character offsets.

The passages come from :class:`difflib.SequenceMatcher` (Python's standard library: the
diff library every Python has, well kept, and exact) on tokens: words for spaced
scripts, one character each for Chinese, Japanese and Korean, so a Chinese sentence
differs by its characters, not as one long "word". Stored documents are explained with
the values stored (what ``simpg dedup`` decided with); ad-hoc texts are fingerprinted and
sketched as ``simpg dedup`` does. Example::

    from simpg.corpus import Document
    with psycopg.connect(dsn) as conn:
        e = explain(12, 40, conn=conn, collection="corpus")
        e.decision.duplicate, e.decision.reasons, e.tables
    explain(Document("a", "the cat sat on the mat"), Document("b", "the cat sat on a mat")).to_json()
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any

from simpg import bits
from simpg.corpus import Document
from simpg.dedup import Decision
from simpg.exc import SimpgError
from simpg.fingerprint import FingerprintConfig, get_fingerprinter
from simpg.fingerprint.minhash import from_sql, similarity, sketch_distance
from simpg.layout import Layout
from simpg.passages import tokens as passage_tokens

__all__ = ["Explanation", "Outcome", "Passage", "Side", "explain", "explain_values", "passages", "reference_layout",
           "shared_tables"]

#: The decision explained by default: ``simpg dedup``'s.
DEFAULTS = Decision()

#: Passages listed at most, of each kind (the longest shared ones, the differing ones in text order).
MAX_PASSAGES = 20

@dataclass(frozen=True)
class Side:
    """One of the two documents: what it is, and the values it was decided with."""

    label: str  # its source, or the text's label
    id: int | None  # its id in simpg_documents, None for an ad-hoc text
    collection: str | None
    fingerprint: int  # unsigned
    sketch: str | None  # hex, None when there are no words to sketch
    bands: list[int] | None  # signed band keys, None for texts too short to have any


@dataclass(frozen=True)
class Outcome:
    """What :class:`simpg.dedup.Decision` decides for the pair, and why."""

    duplicate: bool
    reasons: list[str]
    k: int
    max_sketch_distance: int


@dataclass(frozen=True)
class Passage:
    """A run of tokens: its character offsets in each text (``[start, end)``) and the texts."""

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    text_a: str
    text_b: str


@dataclass(frozen=True)
class Explanation:
    """Why two documents are (not) near-duplicates; :meth:`to_json` for machines."""

    a: Side
    b: Side
    distance: int  # fingerprint bits that differ
    layout: str  # the reference index's layout (simpg.layout.Layout.name)
    layout_k: int
    tables: list[int]  # the layout's tables (numbered from 0) whose prefix the two share
    sketch_distance: int | None
    similarity: float | None  # Jaccard estimated from the sketches
    shared_bands: list[int]  # band numbers whose keys are equal
    decision: Outcome
    reviewer_decision: dict[str, Any] | None
    shared: list[Passage] = field(default_factory=list)  # longest first
    differing: list[Passage] = field(default_factory=list)  # in text order
    shared_fraction: float = 0.0  # tokens in shared passages / tokens of the longer text

    def to_json(self) -> dict[str, Any]:
        """The explanation as JSON values."""
        return asdict(self)


def reference_layout() -> Layout:
    """The layout of the reference table's simhash index (the model's declaration: k = 4, 6 blocks)."""
    from simpg.sqlalchemy.documents import Document as Model
    from simpg.sqlalchemy.index import table_indexes

    (spec,) = table_indexes(Model.__table__).values()  # type: ignore[arg-type]
    return spec.layout


def shared_tables(a: int, b: int, layout: Layout) -> list[int]:
    """The tables of ``layout`` whose prefix the unsigned fingerprints ``a`` and ``b`` share.

    A lookup of ``a`` scans, in table ``t``, the rows whose permuted value has ``a``'s
    prefix: it finds ``b`` there exactly when ``(a ^ b)`` has no bit in the table's
    prefix (:attr:`simpg.layout.Permutation.source_mask`).
    """
    return [t for t, table in enumerate(layout.permutations) if (a ^ b) & table.source_mask == 0]


def _tokens(text: str) -> list[tuple[str, int, int]]:
    # the passages' tokens (simpg.passages.tokens): words, CJK characters, offsets in the original text
    t = passage_tokens(text)
    return list(zip(t.words, t.starts.tolist(), t.ends.tolist(), strict=True))


def _span(tokens: list[tuple[str, int, int]], i: int, j: int, length: int) -> tuple[int, int]:
    if i == j:  # an empty run: where it would be
        at = tokens[i][1] if i < len(tokens) else length
        return at, at
    return tokens[i][1], tokens[j - 1][2]


def passages(text_a: str, text_b: str, limit: int = MAX_PASSAGES) -> tuple[list[Passage], list[Passage], float]:
    """The longest shared passages, the differing ones, and the share of tokens in shared passages.

    Tokens are those of :func:`simpg.passages.tokens` (words, CJK characters; case and
    punctuation set aside, as the fingerprints do); passages are runs of tokens that
    :class:`difflib.SequenceMatcher` matches (shared) or not (differing), with their
    character offsets in each text.
    """
    ta, tb = _tokens(text_a), _tokens(text_b)
    matcher = difflib.SequenceMatcher(None, [t[0] for t in ta], [t[0] for t in tb], autojunk=False)

    def passage(i1: int, i2: int, j1: int, j2: int) -> Passage:
        a0, a1 = _span(ta, i1, i2, len(text_a))
        b0, b1 = _span(tb, j1, j2, len(text_b))
        return Passage(a0, a1, b0, b1, text_a[a0:a1], text_b[b0:b1])

    blocks = [m for m in matcher.get_matching_blocks() if m.size]
    shared = [passage(m.a, m.a + m.size, m.b, m.b + m.size)
              for m in sorted(blocks, key=lambda m: (-m.size, m.a))[:limit]]
    differing = [passage(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"][:limit]
    longer = max(len(ta), len(tb))
    return shared, differing, (sum(m.size for m in blocks) / longer if longer else 1.0)


def explain_values(a: Side, b: Side, text_a: str, text_b: str, *, layout: Layout | None = None,
                   decision: Decision = DEFAULTS, reviewer_decision: dict[str, Any] | None = None,
                   ) -> Explanation:
    """The explanation of two documents given their values (``a``, ``b``) and texts.

    ``layout``: the index's (default: the reference table's, :func:`reference_layout`).
    """
    layout = layout or reference_layout()
    distance = bits.hamming(a.fingerprint, b.fingerprint)
    ska = bytes.fromhex(a.sketch) if a.sketch else None
    skb = bytes.fromhex(b.sketch) if b.sketch else None
    sd = sketch_distance(ska, skb) if ska and skb else None
    shared_bands = ([n for n, (x, y) in enumerate(zip(a.bands, b.bands, strict=True)) if x == y]
                    if a.bands and b.bands else [])
    reasons: list[str] = []
    within = distance <= decision.k
    banded = decision.confirm and decision.bands and bool(shared_bands)
    if within:
        reasons.append(f"within k: {distance} bits apart, at most {decision.k}")
    else:
        reasons.append(f"not within k: {distance} bits apart, more than {decision.k}")
    if decision.confirm and decision.bands:
        reasons += [f"shared band key {n}" for n in shared_bands] or ["no shared band key"]
    candidate = within or banded
    confirmed = True
    if decision.confirm:
        if sd is None:
            confirmed = False
            reasons.append("no sketch: a text without words to sketch is nobody's duplicate")
        elif sd <= decision.max_sketch_distance:
            reasons.append(f"sketch confirms: {sd} bits apart, at most {decision.max_sketch_distance}")
        else:
            confirmed = False
            reasons.append(f"sketch too far: {sd} bits apart, more than {decision.max_sketch_distance}")
    if not candidate:
        reasons.append("not a candidate: neither within k nor sharing a band key")
    duplicate = candidate and confirmed
    if reviewer_decision:  # the decision above is the defaults'; dedup --append and the reports follow the reviewer
        reasons.append(f"a reviewer decided {reviewer_decision['verdict'].replace('_', ' ')}, which "
                       "simpg dedup --append and the reports follow")
    shared, differing, fraction = passages(text_a, text_b)
    return Explanation(
        a=a, b=b, distance=distance, layout=layout.name, layout_k=layout.k,
        tables=shared_tables(a.fingerprint, b.fingerprint, layout),
        sketch_distance=sd, similarity=None if sd is None else round(similarity(sd), 3),
        shared_bands=shared_bands,
        decision=Outcome(duplicate, reasons, decision.k, decision.max_sketch_distance),
        reviewer_decision=reviewer_decision, shared=shared, differing=differing,
        shared_fraction=round(fraction, 3))


def _text(doc: Document) -> Any:
    return {"title": doc.title, "body": doc.body} if doc.title else doc.body


def _ad_hoc(doc: Document, config: FingerprintConfig) -> tuple[Side, str]:
    fingerprinter = get_fingerprinter(config)
    try:  # one pass over the text, as simpg dedup makes them
        fp, made, band_keys = fingerprinter.fingerprint_sketch_and_bands(_text(doc))
    except ValueError:  # the fingerprint's error is raised again here; else nothing to sketch
        fp, made, band_keys = fingerprinter.fingerprint(_text(doc)), None, None
    return Side(doc.source, None, None, fp, made.hex() if made else None,
                list(band_keys) if band_keys else None), doc.body


def _stored(conn: Any, ref: int | str, collection: str | None) -> tuple[Side, str, str]:
    """The stored document ``ref`` (id or source), its text and its fingerprint config."""
    from psycopg import sql

    by_id = isinstance(ref, int) and not isinstance(ref, bool) or (
        isinstance(ref, str) and ref.isascii() and ref.isdigit())
    conditions = [sql.SQL("id = %s") if by_id else sql.SQL("source = %s")]
    params: list[Any] = [int(ref) if by_id else ref]
    if collection is not None:
        conditions.append(sql.SQL("collection = %s"))
        params.append(collection)
    rows = conn.execute(sql.SQL(
        "SELECT id, collection, source, body, simhash, sketch::text, fingerprint_config, "
        "sketch_b0, sketch_b1, sketch_b2, sketch_b3 FROM simpg_documents WHERE {} ORDER BY id").format(
            sql.SQL(" AND ").join(conditions)), params).fetchall()
    scope = f" in collection {collection!r}" if collection is not None else ""
    if not rows:
        raise SimpgError(f"no document {ref}{scope}" if by_id else f"no document with source {ref!r}{scope}")
    if len(rows) > 1:
        raise SimpgError(f"source {ref!r} names {len(rows)} documents{scope} (ids "
                         f"{', '.join(str(r[0]) for r in rows[:5])}): give an id or --collection")
    id_, coll, source, body, simhash, sketch_text, config, *keys = rows[0]
    made = from_sql(sketch_text)
    side = Side(source, id_, coll, bits.from_db(simhash), made.hex() if made else None,
                None if None in keys else list(keys))
    return side, body, config


def explain(a: int | str | Document, b: int | str | Document, *, conn: Any = None, collection: str | None = None,
            decision: Decision = DEFAULTS, config: FingerprintConfig | None = None) -> Explanation:
    """Why ``a`` and ``b`` are (not) near-duplicates.

    Args:
        a: a stored document of ``simpg_documents`` (an id, or its source) or an
            ad-hoc text (:class:`simpg.corpus.Document`).
        b: the other document, likewise.
        conn: a psycopg connection, needed for stored documents (and to find a reviewer's
            decision on them).
        collection: look stored documents up in this collection only.
        decision: the decision to explain (default: ``simpg dedup``'s defaults).
        config: the fingerprint settings of ad-hoc texts (default: ``simpg dedup``'s);
            a stored document made with other settings is refused, as their
            fingerprints do not compare.

    Raises:
        SimpgError: a document that is not there, or fingerprints that do not compare.
    """
    config = config or FingerprintConfig()
    sides = []
    for ref in (a, b):
        if isinstance(ref, Document):
            side, text = _ad_hoc(ref, config)
            sides.append((side, text, config.identity))
        else:
            if conn is None:
                raise SimpgError(f"document {ref!r} is looked up in simpg_documents: pass conn")
            sides.append(_stored(conn, ref, collection))
    (side_a, text_a, config_a), (side_b, text_b, config_b) = sides
    if config_a != config_b:
        raise SimpgError(f"{side_a.label!r} was fingerprinted with config {config_a} and {side_b.label!r} with "
                         f"{config_b}: their fingerprints do not compare")
    reviewer = None
    if side_a.id is not None and side_b.id is not None and side_a.collection == side_b.collection:
        from simpg.review.decisions import load

        assert side_a.collection is not None
        found = next(iter(load(conn, side_a.collection, (side_a.id, side_b.id))), None)
        reviewer = found.to_json() if found else None
    return explain_values(side_a, side_b, text_a, text_b, decision=decision, reviewer_decision=reviewer)
