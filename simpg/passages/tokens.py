"""Tokens of a text for passage hashes, with their character offsets in the original text.

After NFKC and lowercasing (and folding the final sigma ``ς`` to ``σ``, which lowercasing
chooses by the letter that follows: a word's token must not depend on its neighbour), a
token is a run of word characters of a spaced script (Latin, Cyrillic, Greek, Hangul,
Arabic words, numbers) or a single letter of a spaceless script (Han, kana, Bopomofo,
Thai, Lao, Khmer, Myanmar, Tibetan: :data:`SPACELESS`). Punctuation
and whitespace are not tokens, so reflowed lines and full- or half-width punctuation do not
change them; a Chinese text is tokenised by characters and needs no dictionary.

NFKC and lowercasing can change the length of a text (``"ﬁ"`` becomes ``"fi"``, ``"e"`` and
a combining accent become ``"é"``, ``"İ"`` becomes two characters), so every normalised
character keeps the span of original characters it came from, and a token's ``starts`` and
``ends`` index the text as given.

Example:
    >>> t = tokens("Ｔｈｅ ﬁrst Café, 中文")
    >>> t.words
    ('the', 'first', 'café', '中', '文')
    >>> [t.text[s:e] for s, e in zip(t.starts.tolist(), t.ends.tolist())]
    ['Ｔｈｅ', 'ﬁrst', 'Café', '中', '文']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.errors import InvalidDocument
from simpg.fingerprint.hashes import hash_spans

__all__ = ["SPACELESS", "TOKEN", "Tokens", "normalize_with_offsets", "spaceless_tokens", "token_hashes",
           "token_hashes_and_kinds", "tokens"]

#: Scripts written without spaces: each letter (or digit) of them is a token of its own.
SPACELESS: Final = (
    "\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
    "\u3100-\u312f\u31a0-\u31bf\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
    "\u0e00-\u0e7f\u0e80-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff"
)
#: A token of normalised text: one word character of a spaceless script, or a run of other ones.
TOKEN: Final = re.compile(rf"(?:(?=[{SPACELESS}])[^\W_])|[^\W{SPACELESS}]+")
#: :data:`TOKEN` captured: ``split`` returns the tokens between the gaps.
_TOKEN_SPLIT: Final = re.compile(f"({TOKEN.pattern})")

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]


@dataclass(frozen=True, eq=False)
class Tokens:
    """The tokens of one text.

    Attributes:
        text: the text as given.
        words: each token, normalised (NFKC, lowercase).
        hashes: each token's 64-bit FNV-1a hash over its UTF-8 bytes (``uint64``).
        starts: each token's first character in ``text`` (``int64``).
        ends: each token's end (exclusive) in ``text``: ``text[starts[i]:ends[i]]`` is the
            original spelling of token ``i``.
    """

    text: str
    words: tuple[str, ...]
    hashes: U64Array
    starts: IntArray
    ends: IntArray
    #: Arrays derived from these tokens once, by the modules that need them again on every
    #: comparison (simpg.passages.comparison): a query compared with many candidates derives
    #: them once. Not an init field, so dataclasses.replace() starts with an empty cache.
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.words)


@lru_cache(maxsize=65536)
def _char(c: str) -> str:
    return _whole(c)


def _whole(text: str) -> str:
    # the final sigma is folded: str.lower() spells a Σ by what follows it, a pasted word must not
    return unicodedata.normalize("NFKC", text).lower().replace("ς", "σ")


def _aligned(text: str, norm: str) -> bool:
    """Whether ``norm`` (the whole text normalised) is ``text`` normalised character by character, 1:1."""
    if len(norm) != len(text):
        return False
    if text == norm:
        return True
    a = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    b = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32)
    differ = np.flatnonzero(a != b)
    ascii_upper = (a[differ] >= 0x41) & (a[differ] <= 0x5A) & (b[differ] == a[differ] + 32)
    return all(_char(text[i]) == norm[i] for i in differ[~ascii_upper].tolist())


def _clusters(text: str) -> list[tuple[int, int]]:
    """Spans of a character and the combining characters (and conjoining jamo) that follow it."""
    spans: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text):
            spans.append((start, i))
        elif not unicodedata.combining(text[i]) and not "\u1160" <= text[i] <= "\u11ff":
            spans.append((start, i))
            start = i
    return spans


def _spans_map(text: str, spans: list[tuple[int, int]]) -> tuple[str, IntArray, IntArray] | None:
    """Normalise each span alone; None unless that equals normalising the whole text."""
    parts = [_whole(text[s:e]) for s, e in spans]
    norm = "".join(parts)
    if norm != _whole(text):
        return None
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
    return norm, np.repeat(bounds[:, 0], lengths), np.repeat(bounds[:, 1], lengths)


def normalize_with_offsets(text: str) -> tuple[str, IntArray, IntArray]:
    """NFKC and lowercase ``text`` as a whole, with the original span of each normalised character.

    Returns:
        ``(norm, start, end)``: ``norm`` is ``unicodedata.normalize("NFKC", text).lower()`` with
        ``ς`` spelled ``σ``,
        and normalised character ``i`` came from ``text[start[i]:end[i]]`` (a character with the
        combining characters after it, or, where normalising one alone would differ from the
        whole, its whitespace-separated chunk).
    """
    norm = _whole(text)
    if _aligned(text, norm):
        at = np.arange(len(text), dtype=np.int64)
        return norm, at, at + 1
    found = _spans_map(text, _clusters(text))
    if found is not None:
        return found
    chunks = [m.span() for m in re.finditer(r"\s+|\S+", text)]
    fine = []  # each chunk's characters where they normalise alone as in the chunk, else the chunk
    for s, e in chunks:
        inner = _spans_map(text[s:e], _clusters(text[s:e]))
        if inner is None:
            fine.append((s, e))
        else:
            fine.extend((s + a, s + b) for a, b in _clusters(text[s:e]))
    found = _spans_map(text, fine) or _spans_map(text, chunks)
    if found is not None:
        return found
    return norm, np.zeros(len(norm), dtype=np.int64), np.full(len(norm), len(text), dtype=np.int64)


def _utf8_offsets(norm: str) -> IntArray:
    """Byte offset in ``norm.encode()`` of each character, and of the end."""
    if norm.isascii():
        return np.arange(len(norm) + 1, dtype=np.int64)
    cp = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32)
    width = 1 + (cp >= 0x80).astype(np.int64) + (cp >= 0x800) + (cp >= 0x10000)
    return np.concatenate([[0], np.cumsum(width)])


def tokens(text: str) -> Tokens:
    """The tokens of ``text``: normalised words, FNV-1a hashes and original character offsets.

    Raises:
        InvalidDocument: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise InvalidDocument(f"expected str, got {text!r:.60}")
    norm, start_of, end_of = normalize_with_offsets(text)
    words, s, e = _split(norm)
    byte = _utf8_offsets(norm)
    hashes = hash_spans("fnv1a", norm.encode("utf-8"), byte[s], byte[e])
    return Tokens(text, tuple(words), hashes, start_of[s], end_of[e - 1])


def _split(norm: str) -> tuple[list[str], IntArray, IntArray]:
    """The tokens of normalised text by the regex, with each one's start and end (characters of ``norm``)."""
    # one pass of the regex, in C: [gap, token, gap, token, ..., gap]; token i ends where the
    # lengths up to it add up (a loop over finditer's matches costs twice as much)
    parts = _TOKEN_SPLIT.split(norm)
    bounds = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
    return parts[1::2], bounds[0:-1:2], bounds[1::2]


def _spaceless_bounds(ranges: str) -> npt.NDArray[np.uint32]:
    """The code point ranges of :data:`SPACELESS` as sorted bounds ``[lo0, hi0 + 1, lo1, hi1 + 1, ...]``."""
    pairs = [(ord(ranges[i]), ord(ranges[i + 2]) + 1) for i in range(0, len(ranges), 3)]
    assert all(ranges[i + 1] == "-" for i in range(0, len(ranges), 3)), "SPACELESS is a list of ranges"
    return np.array([b for pair in sorted(pairs) for b in pair], dtype=np.uint32)


_SPACELESS_BOUNDS: Final = _spaceless_bounds(SPACELESS)


def spaceless_tokens(toks: Tokens | Sequence[str]) -> npt.NDArray[np.bool_]:
    """Which tokens (of a Tokens, or its words) are letters of a spaceless script: they set the k-grams' weights.

    Example:
        >>> spaceless_tokens(tokens("中文 text 的")).tolist(), spaceless_tokens(tokens("")).tolist()
        ([True, True, False, True], [])
    """
    words = toks.words if isinstance(toks, Tokens) else toks
    joined = "".join(words)
    if joined.isascii():
        return np.zeros(len(words), dtype=np.bool_)
    # a spaceless token is one letter; a token of another script has none (TOKEN): its first character decides
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    firsts = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)[np.cumsum(lengths) - lengths]
    inside: npt.NDArray[np.bool_] = (np.searchsorted(_SPACELESS_BOUNDS, firsts, side="right") & 1).astype(np.bool_)
    return inside


@lru_cache(maxsize=1)
def _bmp_kinds() -> npt.NDArray[np.uint8]:
    """What each code point below 0x10000 is to :data:`TOKEN`: 0 a gap, 1 part of a spaced word, 2 a token alone.

    A table lookup instead of the regex: the same tokens, found several times faster
    (tests/unit/test_passages.py compares the two on every code point).
    """
    # re's \w: a letter, digit or number, or the underscore
    word = np.fromiter((chr(c).isalnum() or c == 0x5F for c in range(0x10000)), dtype=np.bool_, count=0x10000)
    spaceless = (np.searchsorted(_SPACELESS_BOUNDS, np.arange(0x10000), side="right") & 1).astype(np.bool_)
    kinds: npt.NDArray[np.uint8] = np.where(word, np.where(spaceless, 2, 1), 0).astype(np.uint8)
    return kinds


def token_hashes_and_kinds(text: str) -> tuple[U64Array, npt.NDArray[np.bool_]]:
    """The hashes of :func:`tokens` and which tokens are spaceless letters, with no word or offset made.

    What passage hashes need (``tokens(text).hashes`` and ``spaceless_tokens(tokens(text))``
    exactly): the tokens' bounds come from a table of what each character is, not from
    splitting the text into words, which is most of the cost of :func:`tokens`.

    Raises:
        InvalidDocument: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise InvalidDocument(f"expected str, got {text!r:.60}")
    norm = _whole(text)
    code = (np.frombuffer(norm.encode("ascii"), dtype=np.uint8) if norm.isascii()
            else np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32))
    byte = _utf8_offsets(norm)
    if len(code) and int(code.max()) > 0xFFFF:  # beyond the table (rare): the regex
        words, s, e = _split(norm)
        return hash_spans("fnv1a", norm.encode("utf-8"), byte[s], byte[e]), spaceless_tokens(words)
    kind = _bmp_kinds()[code]
    spaced, alone = kind == 1, kind == 2
    # a spaced word starts where a spaced character follows none, and ends where none follows it
    starts = np.flatnonzero(alone | (spaced & ~np.concatenate(([False], spaced[:-1]))))
    ends = np.flatnonzero(alone | (spaced & ~np.concatenate((spaced[1:], [False])))) + 1
    return hash_spans("fnv1a", norm.encode("utf-8"), byte[starts], byte[ends]), alone[starts]


def token_hashes(text: str) -> U64Array:
    """The hashes of :func:`tokens` alone (:func:`token_hashes_and_kinds`)."""
    return token_hashes_and_kinds(text)[0]
