"""``simpg explain A B``: why two documents are, or are not, near-duplicates (:mod:`simpg.review.explain`).

``A`` and ``B`` are ids or sources of documents of the reference table ``simpg_documents``
(``--collection`` narrows the lookup), or ad-hoc texts (``--text``, ``--file``): exactly two
documents in all. Prints the fingerprint distance and the permuted tables of the index's
layout in which one is found from the other, the sketch distance and estimated Jaccard,
the shared band keys, the decision ``simpg dedup`` makes with its defaults and why, a
reviewer's decision if any, and the shared and differing passages (``--json``: all of it).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from simpg.commands._common import add_dsn_argument, database_dsn
from simpg.exc import SimpgError

#: Characters of a passage shown in the text output (--json has them whole).
SHOWN = 70


def register(subparsers: Any) -> None:
    """Add the explain command."""
    p = subparsers.add_parser(
        "explain", help="say why two documents are (not) near-duplicates",
        description="Explain the decision on two documents: stored ones (ids or sources) or texts.")
    p.add_argument("documents", nargs="*", metavar="DOCUMENT", help="a document id or source in simpg_documents")
    p.add_argument("--collection", help="look the documents up in this collection only")
    p.add_argument("--text", action="append", default=[], help="an ad-hoc text")
    p.add_argument("--file", action="append", default=[], help="a UTF-8 file, as an ad-hoc text")
    p.add_argument("--lang", choices=("auto", "en", "zh"), default="auto",
                   help="word splitting of --text/--file, as in simpg dedup (default: auto)")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    add_dsn_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Explain, print."""
    from simpg.corpus import Document, read_text
    from simpg.fingerprint import FingerprintConfig
    from simpg.review.explain import explain

    refs: list[Any] = list(args.documents)
    refs += [Document(f"text {t[:40]!r}", t) for t in args.text]
    refs += [Document(f, read_text(f)) for f in args.file]
    if len(refs) != 2:
        raise SimpgError(f"explain needs two documents (ids, sources, --text or --file), got {len(refs)}")
    config = FingerprintConfig(lang=args.lang)
    if args.documents:
        import psycopg

        with psycopg.connect(database_dsn(args), autocommit=True) as conn:
            found = explain(refs[0], refs[1], conn=conn, collection=args.collection, config=config)
    else:
        found = explain(refs[0], refs[1], config=config)
    if args.json:
        print(json.dumps(found.to_json(), ensure_ascii=False))
    else:
        print(render(found))
    return 0


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= SHOWN else flat[:SHOWN - 3] + "...")


def render(e: Any) -> str:
    """An :class:`~simpg.review.explain.Explanation` as text for people."""
    def side(name: str, s: Any) -> str:
        where = f"document {s.id} {s.label!r} (collection {s.collection!r})" if s.id is not None else s.label
        return f"{name}: {where}"

    tables = ", ".join(map(str, e.tables)) or "none"
    lines = [
        side("a", e.a), side("b", e.b),
        f"fingerprints: {e.distance} bits apart; they share the prefix of the index's tables {tables} "
        f"(layout {e.layout}), where a lookup within {e.layout_k} bits finds one from the other"
        + ("" if e.distance <= e.layout_k else f" only if they are within {e.layout_k} bits: they are not"),
    ]
    if e.sketch_distance is None:
        lines.append("sketches: none to compare (a text without words)")
    else:
        bands = ", ".join(map(str, e.shared_bands)) or "none"
        lines.append(f"sketches: {e.sketch_distance} bits apart, estimated Jaccard {e.similarity:.3f}; "
                     f"shared band keys: {bands}")
    verdict = "duplicate" if e.decision.duplicate else "not duplicate"
    lines.append(f"decision (simpg dedup's defaults): {verdict}: {'; '.join(e.decision.reasons)}")
    if e.reviewer_decision:
        r = e.reviewer_decision
        lines.append(f"reviewer: {r['verdict'].replace('_', ' ')} by {r['reviewer'] or r['who']} "
                     f"at {r['decided_at']}")
    lines.append(f"shared passages, longest first ({e.shared_fraction:.0%} of the longer text's tokens):")
    lines += [f"  a[{p.a_start}:{p.a_end}] b[{p.b_start}:{p.b_end}] {_cut(p.text_a)}" for p in e.shared] or ["  none"]
    lines.append("differing passages:")
    lines += [f"  a[{p.a_start}:{p.a_end}] {_cut(p.text_a)}  |  b[{p.b_start}:{p.b_end}] {_cut(p.text_b)}"
              for p in e.differing] or ["  none"]
    return "\n".join(lines)
