"""Chinese features: jieba segmentation and TF-IDF weighted top-N terms (seed 000).

Pipeline for the Han text of a document:

1. segment with a **private** ``jieba.Tokenizer`` (HMM on by default), created lazily
   once per process. Its prefix dictionary is built directly from jieba's bundled
   ``dict.txt``, so jieba's global tokenizer, its logger and its ``/tmp`` cache file are
   never touched;
2. count terms, dropping one-character terms (as jieba's own keyword extraction does),
   stopwords and terms with no letter or digit (``_`` is not one). If that leaves nothing, the
   one-character terms are used instead, so very short texts still have features;
3. weigh each term ``tf * idf / median_idf``. IDF values come from jieba's bundled
   dictionary ``jieba/analyse/idf.txt`` or a user dictionary in the same format
   (``term idf`` per line); a term missing from it gets the dictionary's median IDF
   (``sorted(values)[len // 2]``, as jieba computes it). Dividing by the median makes a
   term of median IDF weigh one per occurrence, the same scale as one word shingle;
4. keep the ``top_n`` heaviest terms (ties broken by the term itself, so the choice never
   depends on dict order).

Example:
    >>> terms = ChineseTerms()
    >>> counts = terms.count("我们使用结巴分词，结巴分词很快。")  # doctest: +SKIP
    >>> terms.weigh(counts)[0][0]  # doctest: +SKIP
    '结巴'
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import re
import threading
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from simpg.fingerprint.errors import InvalidConfig

__all__ = ["ChineseTerms", "IdfTable", "file_sha256", "load_idf", "tokenizer"]

logger = logging.getLogger(__name__)

_JIEBA_MISSING: Final = "simpg[zh] requires the package 'jieba' to be installed"
# A letter or digit: a term of only "_" (a separator line) is no feature.
_HAS_WORD: Final = re.compile(r"[^\W_]")

_lock = threading.Lock()
_tokenizer: Any = None
_idf_tables: dict[tuple[str | None, str | None], IdfTable] = {}


def _import_jieba() -> Any:
    try:
        import jieba  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ImportError(_JIEBA_MISSING) from exc
    return jieba


def tokenizer() -> Any:
    """The process-wide private ``jieba.Tokenizer``, built on first use."""
    global _tokenizer
    if _tokenizer is None:
        with _lock:
            if _tokenizer is None:
                jieba = _import_jieba()
                tk = jieba.Tokenizer()
                # Build the prefix dictionary ourselves: Tokenizer.initialize() would log
                # through jieba's own handler and write a cache file to the temp dir.
                with tk.get_dict_file() as f:
                    tk.FREQ, tk.total = tk.gen_pfdict(f)
                tk.initialized = True
                logger.debug("jieba tokenizer ready (%d prefixes)", len(tk.FREQ))
                _tokenizer = tk
    return _tokenizer


@dataclass(frozen=True)
class IdfTable:
    """An IDF dictionary: values per term, the median used for missing terms, and its digest."""

    values: dict[str, float]
    median: float
    sha256: str


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _parse_idf(data: bytes, name: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for lineno, line in enumerate(data.decode("utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            term, value = parts[0], float(parts[1])
        except (IndexError, ValueError):
            raise InvalidConfig(f"invalid idf dictionary line {lineno} in {name!r}: {line!r}") from None
        values[term] = value
    if not values:
        raise InvalidConfig(f"idf dictionary {name!r} is empty")
    return values


def load_idf(path: str | None = None, sha256: str | None = None) -> IdfTable:
    """Load (once per process) jieba's bundled IDF dictionary or the one at ``path``.

    Args:
        path: a user IDF file (``term idf`` per line, UTF-8), or None for jieba's own.
        sha256: when given, the file's content must have this digest.

    Raises:
        InvalidConfig: unreadable or malformed file, or a digest mismatch.
    """
    key = (path, sha256)
    table = _idf_tables.get(key)
    if table is not None:
        return table
    if path is None:
        _import_jieba()
        data = (resources.files("jieba") / "analyse" / "idf.txt").read_bytes()
        name = "jieba/analyse/idf.txt"
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InvalidConfig(f"cannot read idf dictionary {path!r}: {exc.strerror}") from None
        name = path
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise InvalidConfig(f"idf dictionary {name!r} has sha256 {digest}, config expects {sha256}")
    values = _parse_idf(data, name)
    median = sorted(values.values())[len(values) // 2]
    table = IdfTable(values=values, median=median, sha256=digest)
    with _lock:
        _idf_tables[key] = table
    return table


class ChineseTerms:
    """Segments Han text and weighs its terms by TF-IDF.

    Args:
        idf_path: user IDF dictionary, or None for jieba's bundled one.
        idf_sha256: expected digest of ``idf_path`` (checked when loading).
        stopwords: terms never used as features.
        hmm: use jieba's HMM for unknown words (as ``jieba.lcut`` does by default).
        top_n: how many terms to keep (None keeps all).
    """

    def __init__(
        self,
        *,
        idf_path: str | None = None,
        idf_sha256: str | None = None,
        stopwords: Collection[str] = (),
        hmm: bool = True,
        top_n: int | None = None,
    ) -> None:
        self._idf_path = idf_path
        self._idf_sha256 = idf_sha256
        self._stopwords = frozenset(stopwords)
        self._hmm = hmm
        self._top_n = top_n

    def warm_up(self) -> None:
        """Load the tokenizer and the IDF dictionary now rather than on first use."""
        tokenizer()
        load_idf(self._idf_path, self._idf_sha256)

    def count(self, text: str, counts: Counter[str] | None = None) -> Counter[str]:
        """Add the jieba tokens of ``text`` to ``counts`` (all tokens, unfiltered)."""
        if counts is None:
            counts = Counter()
        if text:
            counts.update(tokenizer().lcut(text, HMM=self._hmm))
        return counts

    def _ranked(self, counts: Counter[str], min_len: int, get: Any, median: float) -> list[tuple[float, str]]:
        stop = self._stopwords
        has_word = _HAS_WORD.search
        # (-weight, term) tuples order heaviest first, ties by term, without a key function.
        # isalnum() is true for nearly every term (Han words included) and much cheaper
        # than the regex, which only decides for terms such as "c++" or "2.0".
        return [
            (-(c * get(t, median) / median), t)
            for t, c in counts.items()
            if len(t) >= min_len and t not in stop and (t.isalnum() or has_word(t) is not None)
        ]

    def ranked(self, counts: Counter[str]) -> list[tuple[float, str]]:
        """The top-N ``(-weight, term)`` pairs of :meth:`weigh` (``ordered=False``), in no order."""
        if not counts:
            return []
        idf = load_idf(self._idf_path, self._idf_sha256)
        get, median = idf.values.get, idf.median
        ranked = self._ranked(counts, 2, get, median) or self._ranked(counts, 1, get, median)
        top_n = self._top_n
        if top_n is not None and len(ranked) > top_n:
            ranked = heapq.nsmallest(top_n, ranked)
        return ranked

    def weigh(self, counts: Counter[str], ordered: bool = True) -> list[tuple[str, float]]:
        """Top-N ``(term, tf * idf / median_idf)`` pairs.

        Args:
            counts: term counts from :meth:`count`.
            ordered: heaviest first (ties by term). With False the order is unspecified
                (the fingerprint does not depend on it) but the kept set is the same.
        """
        ranked = self.ranked(counts)
        if ordered:
            ranked.sort()
        return [(t, -negative) for negative, t in ranked]
