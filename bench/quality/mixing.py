"""How real text mixes scripts: gettext catalogues as translators see them, and four edits (issue 28).

Extraction: :func:`mo_bilingual` renders a ``.mo`` catalogue as a ``.po`` file reads, each
English message followed by its translation, so one document holds Latin text beside the
translation's script (and the untranslated names, options and format strings inside it).

Edits planted on the ``mixreal`` part beside the five kinds of :mod:`bench.quality.variants`
(whether a planted pair is a duplicate is still decided by the exact truth):

=============  ===================================================================  ==========
kind           edit                                                                 expected
=============  ===================================================================  ==========
credit         a translator's credit line with a real translator's name, in the    duplicate
               other script where there is one (Han and Hangul names from the
               corpus's own credit lines, :func:`native_names`; Latin ones from
               the catalogues' ``Last-Translator`` headers)
quote          one short line of another script quoted from another document       duplicate
               (a Japanese phrase in a German page, an English command in Korean)
wrap           hard-wrapped at a fixed width counted in display columns (CJK = 2), duplicate
               line breaks falling inside Latin words (``fold -w``); only on text
               with CJK or Hangul characters
untranslate    5-15% of a catalogue's translations dropped (the English message     duplicate
               stays: a partial translation); only on ``mo-bilingual`` documents    mostly
=============  ===================================================================  ==========
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Sequence

from bench.quality.extract import mo_entries

MIXING_KINDS = ("credit", "quote", "wrap", "untranslate")

_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uff60\uffe0-\uffe6]")
_CJK_OR_HANGUL = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def mo_bilingual(raw: bytes) -> str:
    """A catalogue as its translators read it: each message (singular form), then its translation.

    Contexts (``ctx\\x04msgid``) are dropped, plural forms joined by newlines, the header left out.
    Lines: message, translation, blank line.
    """
    blocks = []
    for msgid, msgstr in mo_entries(raw):
        if not msgid:
            continue
        source = msgid.split("\x04", 1)[-1].split("\x00", 1)[0].strip()
        target = "\n".join(f.strip() for f in msgstr.split("\x00") if f.strip())
        if source and target:
            blocks.append(f"{source}\n{target}")
    return "\n\n".join(blocks) + "\n" if blocks else ""


def mo_translator(raw: bytes) -> str | None:
    """The ``Last-Translator`` name of a catalogue's header (without the e-mail address), if any."""
    for msgid, msgstr in mo_entries(raw):
        if msgid:
            continue
        m = re.search(r"^Last-Translator:\s*([^<\n]+?)\s*(<[^>\n]*>)?\s*$", msgstr, flags=re.M)
        if m and m.group(1).strip() and "FULL NAME" not in m.group(1):
            return m.group(1).strip()
    return None


_NATIVE_NAME = re.compile(
    r"(?:[:：]\s*|^|\s)([\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]{2,4}(?: [\u3400-\u9fff\uac00-\ud7af]{1,3})?)"
    r"\s*(?:氏\s*)?<[^<>\s]+@[^<>\s]+>",
    flags=re.M,
)


_PARTICLES = set("을를은는이가에의로와과도")  # Korean particles: the word before them is no name
_NOT_IN_NAMES = set("请請向给給至的和与與或")  # "please", "to", "and": words of a sentence, not of a name


def native_names(text: str) -> list[str]:
    """Names written in Han or Hangul just before an e-mail address (translators' credit lines).

    ``翻译：孙一江 <sunyijiang@gmail.com>`` gives 孙一江; the name must follow a colon, a space
    or the line start, so a phrase run into it (``…为梁昌泰 <…>``) is not taken for a name; words
    that introduce an address (``请向 <…>`` "please write to", Korean nouns ending in a particle,
    ``질문은 <…>``) are not names either.
    """
    out = []
    for m in _NATIVE_NAME.finditer(text):
        name = m.group(1)
        if name[-1] in _PARTICLES or any(c in _NOT_IN_NAMES for c in name):
            continue
        out.append(name)
    return out


def has_cjk(text: str) -> bool:
    return _CJK_OR_HANGUL.search(text) is not None


def width(ch: str) -> int:
    return 2 if _WIDE.match(ch) or unicodedata.east_asian_width(ch) in "WF" else 1


def hard_wrap(text: str, columns: int) -> str:
    """Every line folded at ``columns`` display columns (CJK and Hangul count 2), words or not.

    What ``fold -w`` and many Japanese and Chinese editors do: a break may fall inside a Latin
    word ("comm" / "and"). Existing line breaks stay; trailing spaces of a folded piece stay.
    """
    if columns < 2:
        raise ValueError(f"columns must be at least 2, not {columns}")
    out = []
    for line in text.split("\n"):
        piece: list[str] = []
        used = 0
        for ch in line:
            w = width(ch)
            if used + w > columns and piece:
                out.append("".join(piece))
                piece, used = [], 0
            piece.append(ch)
            used += w
        out.append("".join(piece))
    return "\n".join(out)


_CREDIT = (
    "Translated by {name}.",
    "Translation: {name}",
    "Translator: {name}",
    "{name} (translation)",
    "Thanks to {name} for the translation.",
)


def add_credit(text: str, name: str, rng: random.Random) -> str:
    """A translator's credit line, at the end (two in three) or after the first line."""
    line = rng.choice(_CREDIT).format(name=name)
    lines = text.rstrip("\n").split("\n")
    if rng.random() < 2 / 3 or len(lines) < 2:
        return "\n".join([*lines, "", line]) + "\n"
    return "\n".join([lines[0], line, *lines[1:]]) + "\n"


def add_quote(text: str, passage: str, rng: random.Random) -> str:
    """``passage`` on a line of its own, between two lines of ``text`` (never first)."""
    lines = text.rstrip("\n").split("\n")
    at = rng.randrange(1, len(lines) + 1)
    return "\n".join([*lines[:at], passage, *lines[at:]]) + "\n"


def quotable_lines(text: str, *, cjk: bool, lo: int = 6, hi: int = 60) -> list[str]:
    """Lines of ``text`` worth quoting: ``lo``-``hi`` characters, with (``cjk``) or without CJK/Hangul."""
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if lo <= len(s) <= hi and has_cjk(s) == cjk and sum(c.isalnum() for c in s) >= lo // 2:
            out.append(s)
    return out


def untranslate(text: str, share: float, rng: random.Random) -> str | None:
    """A ``mo_bilingual`` document with ``share`` of its translations dropped (messages kept)."""
    blocks = text.rstrip("\n").split("\n\n")
    if len(blocks) < 10:
        return None
    drop = set(rng.sample(range(len(blocks)), max(1, round(share * len(blocks)))))
    kept = [b.split("\n", 1)[0] if k in drop else b for k, b in enumerate(blocks)]
    return "\n\n".join(kept) + "\n"


def plant(
    text: str,
    kind: str,
    fmt: str,
    rng: random.Random,
    names: Sequence[str],
    cjk_lines: Sequence[str],
    latin_lines: Sequence[str],
) -> str | None:
    """One edit of ``kind`` (:data:`MIXING_KINDS`), or None where it does not apply to ``text``."""
    cjk = has_cjk(text)
    if kind == "credit":
        other = [n for n in names if has_cjk(n) != cjk] or list(names)
        return add_credit(text, rng.choice(other), rng) if other else None
    if kind == "quote":
        pool = latin_lines if cjk else cjk_lines
        return add_quote(text, rng.choice(pool), rng) if pool else None
    if kind == "wrap":
        if not cjk or not re.search(r"[A-Za-z]{4}", text):
            return None
        return hard_wrap(text, rng.choice((30, 36, 40, 60, 72)))
    if kind == "untranslate":
        return untranslate(text, rng.uniform(0.05, 0.15), rng) if fmt == "mo-bilingual" else None
    raise ValueError(f"unknown edit kind {kind!r}")
