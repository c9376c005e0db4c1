r"""Text normalisation and script detection (offline, no models).

Normalisation of any text, in this order:

1. Unicode NFKC (full-width letters and digits become ASCII, ligatures are split);
2. ``str.casefold`` (then NFKC again where casefolding left text un-normalised);
3. for word features, every run of characters that are neither letters, digits, ``_``
   nor combining marks (punctuation, symbols, whitespace) becomes one space.

ASCII text takes a fast path (``str.lower`` and a translation table), which gives exactly
the same result as the general path.

Script detection splits normalised text into **Han runs** (CJK ideographs, including runs
broken only by whitespace, as in hard-wrapped Chinese) and **everything else**. Han runs go
to jieba; the rest goes to word tokenisation. Whitespace inside a Han run is dropped,
because Chinese does not separate words with spaces and a line break in the middle of a
word must not split it.

Example:
    >>> word_text(normalize("Hello,   WORLD!  ﬁne ２０２４"))
    'hello world fine 2024'
    >>> split_scripts(normalize("simhash 算法\n很快, fast"))
    ('算法很快', 'simhash  , fast')
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

__all__ = [
    "HAN_CLASS",
    "has_han",
    "join_han",
    "normalize",
    "split_scripts",
    "word_text",
]

# CJK ideographs: 〇, Extension A, the URO, compatibility ideographs, Extensions B-H.
HAN_CLASS: Final = "[\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
_HAN: Final = re.compile(HAN_CLASS)
_HAN_RUN: Final = re.compile(f"{HAN_CLASS}+(?:\\s+{HAN_CLASS}+)*")
_HAN_GAP: Final = re.compile(f"(?<={HAN_CLASS})\\s+(?={HAN_CLASS})")
_WS: Final = re.compile(r"\s+")

_ASCII_SEPARATORS: Final = str.maketrans({chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})


def normalize(text: str) -> str:
    """NFKC and casefold ``text`` (whitespace and punctuation are kept)."""
    if text.isascii():
        # For ASCII, NFKC is the identity and casefold() equals lower().
        return text.lower()
    if not unicodedata.is_normalized("NFKC", text):  # a fast quick-check for most text
        text = unicodedata.normalize("NFKC", text)
    folded = text.casefold()
    if not unicodedata.is_normalized("NFKC", folded):
        folded = unicodedata.normalize("NFKC", folded)
    return folded


@lru_cache(maxsize=256)
def _separator_pattern(marks: frozenset[str]) -> re.Pattern[str]:
    # Python's \w leaves out combining marks (Mn/Mc/Me), which would cut Devanagari, Thai
    # or Arabic words apart; the marks present in the text are added to the word class.
    extra = "".join(re.escape(m) for m in sorted(marks))
    return re.compile(f"[^\\w{extra}]+")


def word_text(normalized: str) -> str:
    """Return normalised text as word tokens separated by single spaces.

    Args:
        normalized: output of :func:`normalize`.

    Returns:
        ``"tok tok tok"`` with no leading or trailing space (``""`` when there are no words).
    """
    if normalized.isascii():
        return " ".join(normalized.translate(_ASCII_SEPARATORS).split())
    marks = frozenset(c for c in set(normalized) if ord(c) > 127 and unicodedata.category(c)[0] == "M")
    return " ".join(_separator_pattern(marks).sub(" ", normalized).split())


def has_han(text: str) -> bool:
    """Whether ``text`` contains a CJK ideograph."""
    return not text.isascii() and _HAN.search(text) is not None


def join_han(text: str) -> str:
    """Drop whitespace between two CJK ideographs (hard-wrapped Chinese lines)."""
    return _HAN_GAP.sub("", text) if has_han(text) else text


def split_scripts(normalized: str) -> tuple[str, str]:
    """Split normalised text into (Han text, other text).

    Han runs are returned joined by newlines with inner whitespace removed; in the other
    text each Han run is replaced by a space.
    """
    if not has_han(normalized):
        return "", normalized
    runs = ["".join(m.group().split()) for m in _HAN_RUN.finditer(normalized)]
    return "\n".join(runs), _HAN_RUN.sub(" ", normalized)
