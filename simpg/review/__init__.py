"""Reviewing near-duplicates: the report people look at, and the decisions they make.

:mod:`simpg.review.data` gathers a report's data (from a ``simpg dedup`` run or a stored
collection); :mod:`simpg.review.html` writes it as one self-contained HTML page, in
which a reviewer marks pairs "not a duplicate" or "duplicate" and exports the decisions
as a ``simpg-decisions`` JSON file for ``simpg review apply``.
"""

from __future__ import annotations

from simpg.review import data, html

__all__ = ["data", "html"]
