"""The copied-passages report as text: what ``simpg dedup --passages`` and ``simpg report --passages`` print.

The report itself (its data, the JSON of ``--json``) is :mod:`simpg.passage_report`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simpg.commands._common import plural

__all__ = ["render"]


def _pct(x: float) -> str:
    return f"{x:.0%}"


def render(report: Mapping[str, Any]) -> str:
    """The report as text: a summary, then each "copied from" cluster with its sources and copies."""
    pairs = report["pairs"]
    partial = len(pairs) - report["near_duplicate_pairs"]
    rule = (f"a passage of {report['min_tokens']} tokens or more" if report["min_tokens"] is not None else "")
    if report["min_containment"] is not None:
        rule += (" or " if rule else "") + f"{report['min_containment']:.0%} of either document"
    lines = ["", f"copied passages: {plural(partial, 'pair')} of documents share {rule} "
                 f"({plural(report['candidates'], 'candidate')} verified on the texts), "
                 f"in {plural(len(report['clusters']), 'cluster')} of \"copied from\"; "
                 "the source of a pair is the document loaded first (smaller id)"]
    if report["near_duplicate_pairs"]:
        lines.append(f"left out: {plural(report['near_duplicate_pairs'], 'pair')} of whole-document "
                     "near-duplicates (in one cluster above; --json marks them near_duplicate)")
    common = report["common_hashes"]
    if common:
        bound = report["max_common"]
        bound = (f"{bound * 100:g}% of the documents (at least 1,000)" if isinstance(bound, float)
                 else f"{bound} documents")
        lines.append(f"skipped {plural(len(common), 'common hash')} held by more than {bound} "
                     "(boilerplate): passages shared only through them are not reported; "
                     "--max-common none skips none")
    path = {p[side]: p[f"{side}_source"] for p in pairs for side in "ab"}
    for number, cluster in enumerate(report["clusters"], start=1):
        members = len(cluster["members"])
        sources = ", ".join(f"{s} {path[s]}" for s in cluster["sources"])
        lines += ["", f"copied-from cluster {number} ({plural(members, 'document')}; "
                      f"source{'' if len(cluster['sources']) == 1 else 's'}: {sources})"]
        for n in cluster["pairs"]:
            p = pairs[n]
            side = "a" if p["copy"] == p["a"] else "b"
            other = "b" if side == "a" else "a"
            lines.append(f"  {p['copy']} {p[side + '_source']}")
            lines.append(f"    copied from {p['source']} {p[other + '_source']}")
            lines.append(f"    {_pct(p['copy_in_source'])} of the copy is in the source, "
                         f"{_pct(p['source_in_copy'])} of the source is in the copy; "
                         f"{plural(p['passage_count'], 'passage')}, {p['shared_tokens']} tokens shared, "
                         f"longest {p['longest']}: \"{p['quote']}\"")
    if not report["clusters"]:
        lines.append("no copied passages found")
    return "\n".join(lines) + "\n"
