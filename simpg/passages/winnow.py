"""Passage hashes: the winnowed k-gram hashes of a text (Schleimer, Wilkerson, Aiken 2003), windows weighted by script.

Every k consecutive tokens (:data:`~simpg.passages.config.K`) get a 64-bit hash. Plain
winnowing keeps the minimum of every window of ``w`` consecutive k-gram hashes (the
rightmost of ties), so two texts sharing a run of ``w + K - 1`` equal tokens share a hash.

simpg weighs the windows by script (:func:`winnow_weighted`): a token is a word in spaced
scripts and a letter in spaceless ones (Chinese, Japanese, Thai...), so a k-gram whose
first token is a spaceless letter weighs the config's ``window`` (22) and any other k-gram
its ``spaceless_window`` (46). The window starting at k-gram ``i`` is the k-grams
``i .. e(i) - 1``, ``e(i)`` the smallest end at which their weights add up to the budget
``W = window * spaceless_window``: ``window`` k-grams of a spaced stretch, ``spaceless_window``
of a spaceless one, in between for a mix. The minimum of every such full window is kept; a
text whose whole weight is below ``W`` is one window. A text shorter than K tokens has one
hash of all its tokens; an empty text none.

The guarantee (proof sketch): a window's extent depends only on the weights of the k-grams
inside it, and a k-gram's weight only on its own first token. Two texts sharing a run of
``max(window, spaceless_window) + K - 1`` tokens share that many k-grams minus K - 1, each
weighing at least ``min(window, spaceless_window)``, so at least ``W`` in all: the window
starting at the run's first k-gram ends inside the run in both texts, holds the same hashes
in both, and both select its minimum. A spaced run inside a spaceless text is winnowed as
densely as in a spaced text (every run of ``window + K - 1`` spaced tokens is found), and a
looked-up text is winnowed the same way as a stored one. With equal windows this is plain
winnowing with that window.

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
from simpg.passages.tokens import Tokens, spaceless_tokens, token_hashes_and_kinds

__all__ = ["kgram_hashes", "kgram_weights", "passage_hashes", "passage_hashes_array", "passage_hashes_many", "winnow",
           "window_minima", "winnow_weighted", "winnowed"]

U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

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
    return np.unique(_plain_minima(hashes, window)).astype(np.intp)


def _plain_minima(hashes: U64Array, window: int) -> npt.NDArray[np.intp]:
    """The position of the minimum (rightmost of ties) of each window of ``window`` hashes, in order of their starts."""
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if n <= window:
        return _rightmost_min(hashes)
    view = np.lib.stride_tricks.sliding_window_view(hashes, window)
    picked = []
    for first in range(0, len(view), _CHUNK):
        block = view[first : first + _CHUNK]
        picked.append(first + np.arange(len(block)) + (window - 1 - np.argmin(block[:, ::-1], axis=1)))
    return np.concatenate(picked).astype(np.intp)


def _rightmost_min(hashes: U64Array) -> npt.NDArray[np.intp]:
    """The position of the minimum of all ``hashes`` (rightmost of ties): a text that is one window."""
    return np.array([len(hashes) - 1 - int(np.argmin(hashes[::-1]))], dtype=np.intp)


def winnow_weighted(hashes: U64Array, weights: I64Array, budget: int) -> npt.NDArray[np.intp]:
    """The positions weighted winnowing selects: the minimum (rightmost of ties) of every window of weight ``budget``.

    The window starting at position ``i`` is ``i .. e(i) - 1`` with ``e(i)`` the smallest end
    whose cumulative weight from ``i`` reaches ``budget``; only full windows count (those
    with ``e(i) <= len(hashes)``), and hashes whose whole weight is below ``budget`` are one
    window. Positions are sorted and distinct. With every weight equal to ``u`` this is
    :func:`winnow` with ``ceil(budget / u)`` (the same positions).

    Args:
        hashes: the k-gram hashes (``uint64``).
        weights: each one's weight, positive integers, as many as ``hashes``.
        budget: the weight of a window, a positive integer.
    """
    return np.unique(_weighted_minima(hashes, weights, budget)).astype(np.intp)


def _weighted_minima(hashes: U64Array, weights: I64Array, budget: int) -> npt.NDArray[np.intp]:
    """The position of the minimum of each window of :func:`winnow_weighted`, in order of their starts."""
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    weights = np.asarray(weights, dtype=np.int64)
    if (weights == weights[0]).all():
        return _plain_minima(hashes, -(-budget // int(weights[0])))
    ends_of = np.concatenate(([0], np.cumsum(weights)))  # weight before position i: ends_of[i]
    total = int(ends_of[-1])
    if total < budget:
        return _rightmost_min(hashes)
    full = int(np.searchsorted(ends_of, total - budget, side="right"))  # windows i < full end inside the text
    # e(i): monotone in i, so windows and their ends are both sorted
    ends = np.searchsorted(ends_of, ends_of[:full] + budget, side="left")
    return np.concatenate([_range_minima(hashes, first, ends[first : first + _CHUNK])
                           for first in range(0, full, _CHUNK)]).astype(np.intp)


def _range_minima(hashes: U64Array, first: int, ends: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """The rightmost minimum of ``hashes[i:ends[i - first]]`` for each window ``i`` from ``first``: a sparse table.

    Level ``j`` holds the rightmost minimum of every ``2**j`` consecutive hashes; a window of
    length ``L`` is covered by the two blocks of level ``floor(log2 L)`` at its two ends, and
    on a tie the right block's (its rightmost minimum is the window's rightmost). Memory: the
    chunk's hashes times the levels (log2 of the longest window).
    """
    block = hashes[first : int(ends[-1])]
    starts = np.arange(len(ends), dtype=np.intp)
    stops = ends.astype(np.intp) - first
    lengths = stops - starts
    level = np.floor(np.log2(lengths)).astype(np.intp)
    level += (np.left_shift(1, level + 1) <= lengths).astype(np.intp)  # float log2: exact for these sizes,
    level -= (np.left_shift(1, level) > lengths).astype(np.intp)  # and checked
    table = [np.arange(len(block), dtype=np.intp)]
    for j in range(int(level.max())):
        prev, step = table[-1], 1 << j
        left, right = prev[:-step], prev[step:]
        table.append(np.where(block[right] <= block[left], right, left))
    chosen = np.empty(len(ends), dtype=np.intp)
    for j in np.unique(level).tolist():
        at = np.flatnonzero(level == j)
        left, right = table[j][starts[at]], table[j][stops[at] - (1 << j)]
        chosen[at] = np.where(block[right] <= block[left], right, left)
    return first + chosen


def kgram_weights(spaceless: BoolArray, config: PassageConfig | None = None) -> I64Array:
    """The weight of each k-gram of tokens whose spaceless letters are ``spaceless`` (:func:`spaceless_tokens`).

    A k-gram whose first token is a spaceless letter weighs ``window``, any other
    ``spaceless_window``; the window budget is their product (:func:`winnowed`). A text
    shorter than K tokens has one k-gram, weighed by its first token.
    """
    cfg = config_or_default(config)
    count = max(len(spaceless) - K + 1, min(len(spaceless), 1))
    return np.where(np.asarray(spaceless[:count], dtype=np.bool_), cfg.window, cfg.spaceless_window).astype(np.int64)


def winnowed(grams: U64Array, words: Tokens | Sequence[str], config: PassageConfig | None = None) -> I64Array:
    """A text's passage hashes from its k-gram hashes (:func:`kgram_hashes`) and tokens: sorted, distinct ``int64``.

    Winnowed with windows weighted by script (the module's docstring); with the config's
    two windows equal, or a text of one kind of token, plain :func:`winnow`.
    """
    return _winnowed(grams, spaceless_tokens(words), config_or_default(config))


def window_minima(grams: U64Array, spaceless: BoolArray, config: PassageConfig | None = None) -> npt.NDArray[np.intp]:
    """The position of the minimum of each of a text's windows, in order of their starts (duplicates kept).

    The windows :func:`winnowed` takes its hashes from (weighted by script, ``spaceless``
    from :func:`spaceless_tokens`); each is at most ``max(window, spaceless_window)``
    k-grams long, and one that lies inside a run two texts share is the same window in
    both, so both store its minimum (the lookup's bounds rely on it: simpg.passages.lookup).
    """
    cfg = config_or_default(config)
    if len(grams) == 0:
        return np.zeros(0, dtype=np.intp)
    if cfg.window == cfg.spaceless_window:
        return _plain_minima(grams, cfg.window)
    return _weighted_minima(grams, kgram_weights(spaceless, cfg), cfg.window * cfg.spaceless_window)


def _winnowed(grams: U64Array, spaceless: BoolArray, cfg: PassageConfig) -> I64Array:
    if len(grams) == 0:
        return np.zeros(0, dtype=np.int64)
    if cfg.window == cfg.spaceless_window:
        return np.unique(grams[winnow(grams, cfg.window)].view(np.int64))
    weights = kgram_weights(spaceless, cfg)
    return np.unique(grams[winnow_weighted(grams, weights, cfg.window * cfg.spaceless_window)].view(np.int64))


def passage_hashes_array(text: str | Tokens, config: PassageConfig | None = None) -> I64Array:
    """:func:`passage_hashes` as a sorted ``int64`` array (no Python ints: for batches and COPY)."""
    cfg = config_or_default(config)
    if isinstance(text, Tokens):
        return _winnowed(kgram_hashes(text.hashes), spaceless_tokens(text), cfg)
    hashes, spaceless = token_hashes_and_kinds(text)  # no words, no offsets: several times faster
    return _winnowed(kgram_hashes(hashes), spaceless, cfg)


def passage_hashes(text: str | Tokens, config: PassageConfig | None = None) -> list[int]:
    """The passage hashes of ``text``: its winnowed k-gram hashes, sorted, distinct, as signed int64.

    This is what the passage column (a ``bigint[]``) stores, and what a lookup of the text
    searches: its k-grams winnowed with windows weighted by script (the module's
    docstring), ``window`` k-grams long over spaced words, ``spaceless_window`` over letters
    of a spaceless script.

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
