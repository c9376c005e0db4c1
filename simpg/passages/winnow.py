"""Passage hashes: the winnowed k-gram hashes of a text (Schleimer, Wilkerson, Aiken 2003).

Every k consecutive tokens (:data:`~simpg.passages.config.K`) get a 64-bit hash; winnowing
keeps the minimum of every window of ``w`` consecutive k-gram hashes (the rightmost of
ties). Two texts that share a run of at least ``w + K - 1`` equal tokens therefore share
a hash: the run holds a whole window, whose minimum both select. A text shorter than K
tokens has one hash of all its tokens; an empty text none.

``w`` is the config's ``spaceless_window`` for a text whose tokens are mostly letters of a
spaceless script (:func:`~simpg.passages.tokens.spaceless_share`), its ``window`` otherwise;
a lookup winnows its text with the smaller one (:func:`query_hashes_array`). With windows
w1 <= w2, every run of ``w2 + K - 1`` shared tokens still gives a common hash: the minimum of
a w2-window is the minimum of each w1-window inside it that holds it.

Example:
    >>> a = "the quick brown fox jumps over the lazy dog " * 8
    >>> hashes = passage_hashes(a)
    >>> hashes == sorted(set(hashes)) and all(-2**63 <= h < 2**63 for h in hashes)
    True
    >>> passage_hashes("")
    []
    >>> len(passage_hashes("one"))
    1
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.batch import _each
from simpg.passages.config import K, PassageConfig, config_or_default
from simpg.passages.tokens import Tokens, plain_tokens, spaceless_share

__all__ = ["document_window", "kgram_hashes", "passage_hashes", "passage_hashes_array", "passage_hashes_many",
           "query_hashes_array", "winnow", "winnowed"]

U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]

#: Windows winnowed at a time: bounds the memory of a very long text to a few MB.
_CHUNK = 1 << 15


def _splitmix(x: U64Array) -> U64Array:
    """splitmix64's finaliser: mixes every bit of a 64-bit value into every other."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: U64Array = x ^ (x >> np.uint64(31))
    return mixed


def kgram_hashes(token_hashes: U64Array, k: int = K) -> U64Array:
    """The 64-bit hash of every ``k`` consecutive tokens, from the tokens' hashes (``uint64``).

    A sequence shorter than ``k`` gives one hash of all its tokens; an empty one none.
    """
    h = _splitmix(np.asarray(token_hashes, dtype=np.uint64))
    k = min(k, len(h))
    if k == 0:
        return np.zeros(0, dtype=np.uint64)
    count = len(h) - k + 1
    acc = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for t in range(k):
            acc = acc * np.uint64(0x100000001B3) + h[t : t + count]
    return _splitmix(acc)


def winnow(hashes: U64Array, window: int) -> npt.NDArray[np.intp]:
    """The positions winnowing selects: the minimum of every ``window`` consecutive hashes, rightmost of ties.

    Positions are sorted and distinct. Fewer hashes than ``window`` form one window.
    """
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if n <= window:
        return np.array([n - 1 - int(np.argmin(hashes[::-1]))], dtype=np.intp)
    view = np.lib.stride_tricks.sliding_window_view(hashes, window)
    picked = []
    for first in range(0, len(view), _CHUNK):
        block = view[first : first + _CHUNK]
        picked.append(first + np.arange(len(block)) + (window - 1 - np.argmin(block[:, ::-1], axis=1)))
    return np.unique(np.concatenate(picked)).astype(np.intp)


def winnowed(grams: U64Array, window: int) -> I64Array:
    """The passage hashes of a text from its k-gram hashes (:func:`kgram_hashes`): sorted, distinct ``int64``."""
    return np.unique(grams[winnow(grams, window)].view(np.int64))


def document_window(toks: Tokens | Sequence[str], config: PassageConfig | None = None) -> int:
    """The window a stored document (its Tokens or words) is winnowed with, by its script.

    See :meth:`PassageConfig.window_for`.
    """
    cfg = config_or_default(config)
    if cfg.window == cfg.spaceless_window:
        return cfg.window
    return cfg.window_for(spaceless_share(toks))


def passage_hashes_array(text: str | Tokens, config: PassageConfig | None = None) -> I64Array:
    """:func:`passage_hashes` as a sorted ``int64`` array (no Python ints: for batches and COPY)."""
    cfg = config_or_default(config)
    words, hashes = (text.words, text.hashes) if isinstance(text, Tokens) else plain_tokens(text)  # no offsets
    return winnowed(kgram_hashes(hashes), document_window(words, cfg))


def query_hashes_array(text: str | Tokens, config: PassageConfig | None = None) -> I64Array:
    """The hashes a lookup of ``text`` searches: winnowed with the smaller window, which finds either kind of row.

    A superset of the text's stored :func:`passage_hashes` (what the larger window selects,
    the smaller one selects too); every stored row sharing a run of the config's guarantee
    with the text holds one of them, whichever window the row was winnowed with.
    """
    cfg = config_or_default(config)
    hashes = text.hashes if isinstance(text, Tokens) else plain_tokens(text)[1]
    return winnowed(kgram_hashes(hashes), cfg.query_window)


def passage_hashes(text: str | Tokens, config: PassageConfig | None = None) -> list[int]:
    """The passage hashes of ``text``: its winnowed k-gram hashes, sorted, distinct, as signed int64.

    This is what the passage column (a ``bigint[]``) stores: winnowed with the config's
    ``spaceless_window`` if at least half of the text's tokens are letters of a spaceless
    script, with its ``window`` otherwise.

    Args:
        text: a text, or its :func:`~simpg.passages.tokens.tokens`.
        config: the windows; None means ``PassageConfig()``.

    Raises:
        InvalidDocument: ``text`` is not a ``str``.
        InvalidConfig: ``config`` is not a :class:`PassageConfig`.
    """
    return passage_hashes_array(text, config).tolist()  # type: ignore[no-any-return]  # numpy stubs: Any


def passage_hashes_many(
    texts: Iterable[str],
    config: PassageConfig | None = None,
    *,
    workers: int | None = None,
    chunksize: int = 64,
    mp_context: str | None = "spawn",
) -> Iterator[list[int]]:
    """:func:`passage_hashes` of each text, in input order, lazily.

    ``workers``, ``chunksize`` and ``mp_context`` as in :func:`simpg.fingerprint.fingerprint_many`
    (None uses every CPU, 1 runs in this process).
    """
    work = functools.partial(passage_hashes, config=config_or_default(config))
    return _each(work, texts, workers, chunksize, mp_context)
