"""Reviewing what ``simpg dedup`` decided: the report people look at, their decisions, and why two documents matched.

:mod:`simpg.review.data` gathers a report's data (from a ``simpg dedup`` run or a stored
collection); :mod:`simpg.review.html` writes it as one self-contained HTML page, in which a
reviewer marks pairs "not a duplicate" or "duplicate" and exports the decisions as a
``simpg-decisions`` JSON file; :mod:`simpg.review.decisions` keeps reviewers' decisions in
PostgreSQL (``simpg review apply``, ``mark``, ``list``, ``undo``); :mod:`simpg.review.explain`
says why two documents are, or are not, near-duplicates (``simpg explain``).
"""

from __future__ import annotations

from simpg.review import data, html

__all__ = ["data", "html"]
