"""Word tokens and word n-gram shingles for space-delimited languages.

These are the readable reference helpers: the fingerprinter computes the same shingles
as byte ranges of the normalised text and hashes them vectorised, but the feature set is
exactly ``shingles(words(text), n)`` (or :func:`anchored_shingles`).

A document with fewer than ``n`` words yields one shingle made of all its words, so short
texts still get a fingerprint.

Stopword-anchored shingles (seed 001) keep only shingles that contain at least one
stopword: advertising and boilerplate ("Free shipping! Click here") contain few
stopwords, running prose many. If no shingle of a document is anchored, all are kept.

Example:
    >>> words("The quick, brown fox!")
    ['the', 'quick', 'brown', 'fox']
    >>> shingles(["the", "quick", "brown", "fox"], 3)
    ['the quick brown', 'quick brown fox']
    >>> anchored_shingles(["buy", "cheap", "and", "save", "big"], 2)
    ['cheap and', 'and save']
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from simpg.fingerprint.normalize import normalize, word_text

__all__ = ["ENGLISH_STOPWORDS", "anchored_shingles", "char_ngrams", "shingles", "words"]

# Frequent English function words (written for simpg). Used only as shingle anchors.
ENGLISH_STOPWORDS: Final = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
    """.split()
)


def words(text: str) -> list[str]:
    """Normalised word tokens of ``text`` (NFKC, casefold, punctuation as separator)."""
    canonical = word_text(normalize(text))
    return canonical.split(" ") if canonical else []


def shingles(tokens: Sequence[str], n: int) -> list[str]:
    """Word n-grams of ``tokens`` joined by single spaces (one shingle if fewer than n)."""
    if n < 1:
        raise ValueError(f"expected n >= 1, got {n}")
    if not tokens:
        return []
    if len(tokens) < n:
        return [" ".join(tokens)]
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def char_ngrams(canonical: str, n: int) -> list[str]:
    """Character n-grams of normalised word text (``word_text`` output, spaces included).

    Example:
        >>> char_ngrams("to be", 3)
        ['to ', 'o b', ' be']
    """
    if n < 1:
        raise ValueError(f"expected n >= 1, got {n}")
    if not canonical:
        return []
    if len(canonical) < n:
        return [canonical]
    return [canonical[i : i + n] for i in range(len(canonical) - n + 1)]


def anchored_shingles(tokens: Sequence[str], n: int, stopwords: Collection[str] = ENGLISH_STOPWORDS) -> list[str]:
    """Shingles containing at least one stopword (all shingles if none does)."""
    if not tokens:
        return []
    if len(tokens) < n:
        return shingles(tokens, n)
    flags = [t in stopwords for t in tokens]
    kept = [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1) if any(flags[i : i + n])]
    return kept or shingles(tokens, n)
