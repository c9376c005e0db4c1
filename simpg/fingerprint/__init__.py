"""64-bit SimHash fingerprints of documents.

Example:
    >>> from simpg.fingerprint import FingerprintConfig, fingerprint
    >>> fp = fingerprint("Near-duplicate documents get nearby fingerprints.")
    >>> 0 <= fp < 2**64
    True
    >>> FingerprintConfig().identity.startswith("simpg-fp4:")
    True
"""

from __future__ import annotations

from simpg.fingerprint.api import (
    features,
    fingerprint,
    fingerprint_features,
    fingerprint_sketch_and_bands,
    get_fingerprinter,
)
from simpg.fingerprint.batch import (
    fingerprint_many,
    fingerprint_sketch_and_bands_many,
    sketch_and_bands_many,
    sketch_many,
)
from simpg.fingerprint.chinese import ChineseTerms
from simpg.fingerprint.config import DEDUP_K, DEFAULT_K, FingerprintConfig
from simpg.fingerprint.errors import (
    DecodeError,
    EmptyDocument,
    FingerprintError,
    InvalidConfig,
    InvalidDocument,
    NoFeatures,
)
from simpg.fingerprint.fingerprinter import Document, Fingerprinter
from simpg.fingerprint.hashes import HASH_NAMES, fnv1_64, fnv1a64, hash_function, murmur3_64
from simpg.fingerprint.minhash import (
    BANDS,
    MAX_SKETCH_DISTANCE,
    SKETCH_BITS,
    similarity,
    sketch,
    sketch_and_bands,
    sketch_distance,
)
from simpg.fingerprint.normalize import normalize, split_scripts, word_text
from simpg.fingerprint.simhash import BitTally, combine, quantize
from simpg.fingerprint.tokenize import ENGLISH_STOPWORDS, anchored_shingles, shingles, words

__all__ = [
    "BANDS",
    "DEDUP_K",
    "DEFAULT_K",
    "ENGLISH_STOPWORDS",
    "HASH_NAMES",
    "MAX_SKETCH_DISTANCE",
    "SKETCH_BITS",
    "BitTally",
    "ChineseTerms",
    "DecodeError",
    "Document",
    "EmptyDocument",
    "FingerprintConfig",
    "FingerprintError",
    "Fingerprinter",
    "InvalidConfig",
    "InvalidDocument",
    "NoFeatures",
    "anchored_shingles",
    "combine",
    "features",
    "fingerprint",
    "fingerprint_features",
    "fingerprint_many",
    "fingerprint_sketch_and_bands",
    "fingerprint_sketch_and_bands_many",
    "fnv1_64",
    "fnv1a64",
    "get_fingerprinter",
    "hash_function",
    "murmur3_64",
    "normalize",
    "quantize",
    "shingles",
    "similarity",
    "sketch",
    "sketch_and_bands",
    "sketch_and_bands_many",
    "sketch_distance",
    "sketch_many",
    "split_scripts",
    "word_text",
    "words",
]
