"""Partial duplicates: passage hashes for an index, and the exact comparison of two texts.

A document's passage hashes (:func:`passage_hashes`) are its winnowed k-gram hashes: two
documents sharing a run of at least the config's guarantee (``max(window, spaceless_window)
+ K - 1`` tokens; windows are weighted by the script of their tokens) share a hash, so a GIN
index on the stored hashes finds every document that copied a passage of a text. Each
candidate is then verified on the texts with :func:`compare`, which gives the shared passages
with their character offsets in both texts and the containment both ways, exactly.
See docs/partial.md.

Example:
    >>> from simpg.passages import compare, passage_hashes
    >>> words = [f"word{i}" for i in range(120)]
    >>> source = " ".join(words)
    >>> copy = "An introduction of a few words. " + " ".join(words[:60]) + ". And a comment."
    >>> bool(set(passage_hashes(source)) & set(passage_hashes(copy)))
    True
    >>> c = compare(copy, source)
    >>> len(c.passages), c.passages[0].length
    (1, 60)
"""

from __future__ import annotations

from simpg.passages.comparison import MATCH_CHUNK, SHINGLE, Comparison, SharedPassage, compare
from simpg.passages.config import COMMENT_PREFIX, DEFAULT_SPACELESS_WINDOW, DEFAULT_WINDOW, FORMAT, K, PassageConfig
from simpg.passages.pairs import (
    PAIR_CHUNK,
    CandidatePairs,
    CommonHash,
    PassageCluster,
    PassagePair,
    PassagePairs,
    candidate_pairs,
    passage_clusters,
    passage_pairs,
    verified_pairs,
)
from simpg.passages.tokens import SPACELESS, Tokens, normalize_with_offsets, spaceless_tokens, tokens
from simpg.passages.winnow import (
    kgram_hashes,
    passage_hashes,
    passage_hashes_array,
    passage_hashes_many,
    winnow,
    winnow_weighted,
)

__all__ = [
    "COMMENT_PREFIX",
    "DEFAULT_SPACELESS_WINDOW",
    "DEFAULT_WINDOW",
    "FORMAT",
    "K",
    "MATCH_CHUNK",
    "PAIR_CHUNK",
    "SHINGLE",
    "SPACELESS",
    "CandidatePairs",
    "CommonHash",
    "Comparison",
    "PassageCluster",
    "PassageConfig",
    "PassagePair",
    "PassagePairs",
    "SharedPassage",
    "Tokens",
    "candidate_pairs",
    "compare",
    "kgram_hashes",
    "normalize_with_offsets",
    "passage_clusters",
    "passage_hashes",
    "passage_hashes_array",
    "passage_hashes_many",
    "passage_pairs",
    "spaceless_tokens",
    "tokens",
    "verified_pairs",
    "winnow",
    "winnow_weighted",
]
