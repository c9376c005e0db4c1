"""Reviewing what ``simpg dedup`` decided: reports, reviewers' decisions and why two documents matched.

:mod:`simpg.review.decisions` keeps reviewers' decisions in PostgreSQL (``simpg review``);
:mod:`simpg.review.explain` says why two documents are, or are not, near-duplicates
(``simpg explain``).
"""
