"""The review report as one self-contained HTML file: opens offline, from disk, with no server.

The page (:func:`render`) carries everything it needs: the report data as JSON in a
``<script type="application/json">`` (texts once per document), the CSS and the
JavaScript of ``simpg/review/assets`` inlined, among them jsdiff 9.0.0 (the ``diff`` npm
package's ``dist/diff.min.js``, BSD-3-Clause, its licence shipped beside it as
``diff.LICENSE`` and shown in the page) for the differences. A Content-Security-Policy
forbids every network request. The summary and the cluster-size histogram (inline SVG)
are written here; the clusters are drawn by the page's script, one page at a time.

Nothing from the data reaches the page as markup: the JSON is written with ``<``, ``>``
and ``&`` escaped (a text holding ``</script>`` cannot close its element), the page's
script shows texts with ``textContent``, and the few values written here go through
:func:`html.escape`.

Example::

    simpg.review.html.write(simpg.review.data.from_collection(conn, "corpus"), "report.html")
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from simpg.corpus import cannot_write

__all__ = ["render", "write"]

_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")
#: Histogram bars: cluster sizes grouped from these lower bounds up.
_BUCKETS = (2, 3, 4, 5, 6, 11, 21, 51, 101, 1001)


def _asset(name: str) -> str:
    return (resources.files("simpg.review") / "assets" / name).read_text(encoding="utf-8")


def _script(name: str) -> str:
    """An asset inlined in a ``<script>``: refused if it could end its element early."""
    text = _asset(name)
    if re.search(r"</script|<!--", text, re.IGNORECASE):
        raise ValueError(f"asset {name} holds '</script' or '<!--' and cannot be inlined")
    return text


def _json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` left."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _buckets(sizes: Sequence[Sequence[int]]) -> list[tuple[str, int]]:
    """``(label, clusters)`` per histogram bar, from ``(size, clusters)`` counts."""
    if not sizes:
        return []
    largest = max(size for size, _ in sizes)
    out = []
    for low, high in zip(_BUCKETS, (*_BUCKETS[1:], None), strict=True):
        if low > largest:
            break
        count = sum(n for size, n in sizes if size >= low and (high is None or size < high))
        top = None if high is None else high - 1
        out.append((str(low) if top == low else f"{low}+" if top is None else f"{low}\u2013{top}", count))
    return out


def histogram_svg(sizes: Sequence[Sequence[int]]) -> str:
    """An inline SVG bar chart of clusters by size (``sizes``: ``(size, clusters)`` counts)."""
    bars = _buckets(sizes)
    if not bars:
        return ""
    width, height, top, bottom, slot = max(40 * len(bars) + 20, 180), 150, 18, 32, 40  # room for the axis label
    peak = max(count for _, count in bars) or 1
    parts = [f'<svg id="histogram" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="clusters by size">']
    for n, (label, count) in enumerate(bars):
        h = round((height - top - bottom) * count / peak)
        x, y = 10 + n * slot, height - bottom - h
        parts.append(f'<rect x="{x + 6}" y="{y}" width="{slot - 12}" height="{h}">'
                     f'<title>{count} clusters of {html.escape(label)} documents</title></rect>')
        parts.append(f'<text x="{x + slot / 2}" y="{y - 4}" text-anchor="middle">{count}</text>')
        parts.append(f'<text x="{x + slot / 2}" y="{height - bottom + 14}" text-anchor="middle">'
                     f'{html.escape(label)}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 4}" text-anchor="middle">documents per cluster</text></svg>')
    return "".join(parts)


def _summary(data: Mapping[str, Any]) -> str:
    s = data["summary"]
    rows = [("documents", "documents", s["documents"]), ("clusters", "clusters", s["clusters"]),
            ("clustered", "documents in clusters", s["clustered_documents"]),
            ("duplicates", "duplicated documents (members)", s["duplicates"]),
            ("after", "documents after dedup", s["after_dedup"]),
            ("links", "near-duplicate links across clusters", s["links"])]
    items = "".join(f'<dt>{label}</dt><dd id="summary-{key}">{int(value):,}</dd>' for key, label, value in rows)
    chart = histogram_svg(s["sizes"])
    figure = f"<figure>{chart}<figcaption>clusters by size</figcaption></figure>" if chart else ""
    return f"<dl>{items}</dl>{figure}"


def _settings(data: Mapping[str, Any]) -> str:
    s = data.get("settings") or {}
    words = []
    if s.get("k") is not None:
        words.append(f"within {s['k']} bits")
    if s.get("bands"):
        words.append("or sharing a band key")
    if s.get("confirm") == "sketch":
        words.append(f"confirmed by sketches (at most {s.get('max_sketch_distance')} differing bits)")
    elif s.get("confirm") == "none":
        words.append("fingerprints only")
    if s.get("method"):
        words.append(f"clusters: {s['method']}")
    return html.escape(", ".join(words))


def render(data: Mapping[str, Any]) -> str:
    """The report page of ``data`` (:mod:`simpg.review.data`), as one HTML string."""
    collection = str(data["collection"])
    values = {
        "TITLE": html.escape(f"simpg review: {collection}"),
        "COLLECTION": html.escape(collection),
        "SETTINGS": _settings(data),
        "SUMMARY": _summary(data),
        "STYLE": _asset("report.css"),
        "DIFF_LICENSE": html.escape(_asset("diff.LICENSE")),
        "DATA": _json(data),
        "DIFF_JS": _script("diff.min.js"),
        "APP_JS": _script("review.js"),
    }
    # one pass over the template: a value is never searched for placeholders
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], _asset("report.html"))


def write(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Write the report page of ``data`` to ``path``; returns the path written."""
    page = render(data)
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as err:
        raise cannot_write(path, err) from None
    return os.fspath(path)
