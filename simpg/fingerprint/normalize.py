r"""Text normalisation and script detection (offline, no models).

Normalisation of any text, in this order:

1. Unicode NFKC (full-width letters and digits become ASCII, ligatures are split);
2. ``str.casefold`` (then NFKC again where casefolding left text un-normalised);
3. for word features, every run of characters that are neither letters, digits, ``_``
   nor combining marks (punctuation, symbols, whitespace) becomes one space;
4. a word that is one character repeated more than four times goes, and any other run
   of more than four identical characters is cut to four (:func:`cut_runs`).

Steps 3 and 4 keep separator lines (``_____``, ``-----``, ``=====``) and runs such as
``xxxxxxxx`` from deciding a fingerprint: a line of 79 underscores used to be 75
occurrences of one feature, more weight than all the words of a short page.

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
    >>> word_text("name\n" + "_" * 79 + "\nsnake_case zzzzzzzz 1000000")
    'name snake_case 10000'
    >>> split_scripts(normalize("simhash 算法\n很快, fast"))
    ('算法很快', 'simhash  , fast')
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "HAN_CLASS",
    "RUN_LIMIT",
    "cut_runs",
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

#: Longest run of one repeated character kept (a word of a longer run goes). Shorter than
#: the default 5-gram, so no n-gram is one character repeated, and 1000 and 10000 stay apart.
RUN_LIMIT: Final = 4
_RUN: Final = re.compile(f"(.)\\1{{{RUN_LIMIT},}}", re.DOTALL)
_ASCII_SPACE: Final = np.array([chr(c).isspace() for c in range(256)], dtype=bool)
_RUN_WORD: Final = re.compile(f"(?<!\\S)(\\S)\\1{{{RUN_LIMIT},}}(?!\\S)\\s*")

# ASCII bytes that are not letters, digits or "_" become spaces (bytes.translate and split
# are faster than str's).
_ASCII_SEPARATOR_BYTES: Final = bytes(c if c < 128 and (chr(c).isalnum() or c == 0x5F) else 0x20 for c in range(256))


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


def cut_runs(text: str) -> str:
    """Drop words made of one character repeated, cut other runs to :data:`RUN_LIMIT`.

    A word (between whitespace) that is one character more than RUN_LIMIT times is a
    separator line or filler (``xxxxxxxx``, ``00000000``, ``ーーーーーー``) and goes with
    the whitespace after it; in other words a longer run is cut to RUN_LIMIT characters.

    Example:
        >>> cut_runs("aaaaaaa b 100000000 ─────")
        'b 10000'
        >>> cut_runs("ahhhhhhh, zzzz")
        'ahhhh, zzzz'
    """
    if not text.isascii():
        return _RUN.sub(r"\1" * RUN_LIMIT, _RUN_WORD.sub("", text)).rstrip()
    # ASCII (most text) in numpy: the regular expressions would add a fifth to the time
    # of a whole English fingerprint.
    raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    n = len(raw)
    if n <= RUN_LIMIT:
        return text
    same = raw[1:] == raw[:-1]
    run = same[: n - RUN_LIMIT]  # run[j]: raw[j .. j + RUN_LIMIT] are one character
    for i in range(1, RUN_LIMIT):
        run = run & same[i : n - RUN_LIMIT + i]
    at = np.flatnonzero(run)
    if not len(at):
        return text
    keep = np.ones(n, dtype=bool)
    keep[at + RUN_LIMIT] = False
    gaps = np.flatnonzero(np.diff(at) > 1)
    space = _ASCII_SPACE[raw]
    words = False
    for start, last in zip(at[np.r_[0, gaps + 1]].tolist(), at[np.r_[gaps, len(at) - 1]].tolist(), strict=True):
        end = last + RUN_LIMIT + 1
        if (start == 0 or space[start - 1]) and (end == n or space[end]) and not space[start]:
            keep[start : end + 1] = False  # a whole word: goes, with the whitespace after it
            words = True
    out = raw[keep].tobytes().decode("ascii")
    # what is left around a word that went may make a new run, or end in whitespace
    return cut_runs(out.rstrip()) if words else out


def word_text(normalized: str) -> str:
    """Return normalised text as word tokens separated by single spaces, runs cut.

    Args:
        normalized: output of :func:`normalize`.

    Returns:
        ``"tok tok tok"`` with no leading or trailing space (``""`` when there are no
        words), runs of one character cut or dropped as :func:`cut_runs` does.
    """
    if normalized.isascii():
        return ascii_word_text(ascii_words(normalized))
    marks = frozenset(c for c in set(normalized) if ord(c) > 127 and unicodedata.category(c)[0] == "M")
    return cut_runs(" ".join(_separator_pattern(marks).sub(" ", normalized).split()))


def ascii_words(normalized: str) -> list[bytes]:
    """The words of ASCII normalised text (runs of letters, digits and ``_``), as bytes."""
    return normalized.encode("ascii").translate(_ASCII_SEPARATOR_BYTES).split()


def ascii_word_text(words: list[bytes]) -> str:
    """:func:`word_text` of ASCII text from its :func:`ascii_words`."""
    return cut_runs(b" ".join(words).decode("ascii"))


def joined_words(separated: bytes, word: npt.NDArray[np.bool_]) -> str:
    """``b" ".join(separated.split())`` as str, given which bytes are not spaces (``word``)."""
    keep = word.copy()
    keep[1:] |= word[:-1]  # a word's bytes and the space after it
    text: str = np.frombuffer(separated, dtype=np.uint8)[keep].tobytes().decode("ascii")
    return text.rstrip(" ")


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
