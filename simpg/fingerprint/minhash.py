"""The confirming sketch: a 256-bit one-permutation MinHash that estimates Jaccard similarity.

A 64-bit SimHash within a few bits finds *candidates*; on real text (shared templates,
licence texts, separator lines) it also pairs unrelated documents. The sketch confirms a
candidate: it is a b-bit MinHash (b = 1) of the document's shingle *set*, so two sketches
differ in about ``(1 - J) / 2`` of their bits, where J is the Jaccard similarity of the two
shingle sets. ``simpg.sketch_distance(a, b) <= 36`` (:data:`MAX_SKETCH_DISTANCE`) in SQL keeps pairs whose
estimated J is at least 0.72. Two documents that share half their shingles (J = 0.5, the
truth's bound for "unrelated") differ in 64 bits on average with a standard deviation of 6.9:
36 is 4 standard deviations below. Measured on 16,000 real documents in ``bench/quality``
(docs/fingerprinting.md).

Shingles, from the text alone (any language), after NFKC and case folding (SKETCH_VERSION 3):
each script by its own rule, decided word by word from its neighbourhood, so that
a few characters of another script move a document a few bits, not half the sketch:

* words (maximal runs of word characters of the other scripts), in document order across
  the whole document: word 3-shingles, each hashed with salted copies of itself, one
  element per letter of its three words' mean length (1 to :data:`WORD_COPIES`), so a word
  weighs about what its letters weigh as characters and a list of numbers weighs little;
* the letters and digits (``str.isalnum``) of scripts written without spaces (Han, kana,
  Bopomofo, Thai, Lao, Khmer, Myanmar, Tibetan) and of Hangul (Korean words carry their
  particles, and hard wrapping cuts them), in document order: character 3-grams. A word
  goes into this stream, letters and digits only, when spaceless characters make at least
  :data:`SPACELESS_SHARE` percent of the letters within :data:`SPACELESS_WINDOW` tokens of
  it: a Latin term inside Chinese weighs by its length, as in the truth's character
  3-grams (a Chinese page and the same page followed by a list of language names in Latin
  script, J = 0.49 over character 3-grams, stay apart), while an English text with a
  Chinese name or a translator's credit keeps its word shingles and gains the name's
  characters. A text with no spaceless character is shingled by words only; a text whose
  words are all among spaceless characters, by its letters only, as in version 1;
* a line break between two letters of a spaced script in hard-wrapped spaceless text (both
  lines hold spaceless characters) is dropped first: it cut a word in two;
* a stream shorter than its n is one shingle (a two-word text still has a sketch).
* a text of a spaced language other than English (with a character other than ASCII, and
  words at least :data:`FOREIGN_SHARE` percent function words of that language, more than
  English ones: :func:`_language_gate`) is shingled by the character 3-grams of all its
  letters and digits, as those languages' truth: a revision's inflections move its words more.

Each shingle is hashed to 64 bits (MurmurHash3 of each word, splitmix64 to combine); the
top 8 bits choose one of 256 bins, each bin keeps its smallest hash, an empty bin borrows
a filled one (optimal densification, Shrivastava 2017), and each bin stores one bit of a
hash of its minimum salted with the bin's number. The sketch is 32 bytes, first bin in the
most significant bit, as PostgreSQL's ``bit(256)`` shows it.

The same minima give online lookups a second candidate source, **band keys**
(:func:`sketch_and_bands`): :data:`BANDS` bigint keys, each a hash of :data:`BAND_ROWS`
consecutive minima, so documents of Jaccard similarity J share one with probability
``1 - (1 - J**4)**4`` (0.88 at J = 0.8, 0.99 at J = 0.9).

Example:
    >>> a = sketch("The quick brown fox jumps over the lazy dog near the river bank today")
    >>> b = sketch("The quick brown fox jumps over the lazy dog near the river bank")
    >>> len(a), sketch_distance(a, a)
    (32, 0)
    >>> sketch_distance(a, b) <= MAX_SKETCH_DISTANCE
    True
    >>> sketch_distance(a, sketch("Completely different words about cooking rice")) > MAX_SKETCH_DISTANCE
    True
    >>> similarity(0), similarity(128)
    (1.0, 0.0)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any, Final

import mmh3
import numpy as np

from simpg.exc import SimpgError
from simpg.fingerprint.errors import DecodeError, EmptyDocument, InvalidConfig, InvalidDocument

__all__ = [
    "BANDS",
    "BAND_ROWS",
    "MAX_SKETCH_DISTANCE",
    "MIN_BAND_SHINGLES",
    "SKETCH_BITS",
    "SKETCH_BYTES",
    "SKETCH_VERSION",
    "band_columns",
    "checked_band_keys",
    "checked_max_sketch_distance",
    "from_sql",
    "shingle_hashes",
    "similarity",
    "sketch",
    "sketch_and_bands",
    "sketch_distance",
    "to_sql",
]

SKETCH_BITS: Final = 256
SKETCH_BYTES: Final = SKETCH_BITS // 8
#: Bumped whenever a sketch or band keys of the same text could change; stored sketches
#: and band keys of another version are not comparable.
SKETCH_VERSION: Final = 3
#: Band keys per document (online lookups' second candidate source, docs/fingerprinting.md).
BANDS: Final = 4
#: Consecutive bins hashed into one band key: two documents share a band with probability
#: about J**4, so they are candidates with probability 1 - (1 - J**4)**4.
BAND_ROWS: Final = 4
#: Fewer distinct shingles than this: no band keys. Their bins are mostly borrowed, so a
#: band would match on a handful of shingles (chosen on bench/quality's tuning part).
MIN_BAND_SHINGLES: Final = 16
#: Largest number of differing bits that confirms a candidate (estimated Jaccard >= 0.72):
#: 4 standard deviations below the 64 bits of J = 0.5. 40 (3.5) was the tuning part's
#: choice and let one J = 0.47 pair of licence files through on the held-out part.
MAX_SKETCH_DISTANCE: Final = 36

#: A word is shingled by its letters, with the spaceless characters, when those make at
#: least SPACELESS_SHARE percent of the letters within SPACELESS_WINDOW tokens of it (chosen
#: on bench/quality's tuning part and a tuning set of real-like mixing).
SPACELESS_WINDOW: Final = 128
SPACELESS_SHARE: Final = 15
#: Most elements per word shingle: a word 3-shingle is hashed with salted copies of itself,
#: one element per letter of its words' mean length (rounded, 1 to WORD_COPIES), so a word
#: weighs about what its letters weigh as character 3-grams, and a list of numbers or
#: one-letter tokens weighs little, as in the truth's character 3-grams.
WORD_COPIES: Final = 6
_WORD_N: Final = 3
_CHAR_N: Final = 3
_SHIFT: Final = np.uint64(64 - (SKETCH_BITS.bit_length() - 1))  # top 8 bits choose the bin
_C1: Final = np.uint64(0xBF58476D1CE4E5B9)
_C2: Final = np.uint64(0x94D049BB133111EB)
_GOLD: Final = np.uint64(0x9E3779B97F4A7C15)
# Word shingles and character n-grams are hashed in separate domains: never equal by design.
_TAG_WORD: Final = np.uint64(0x5752440000000000)
_TAG_CHAR: Final = np.uint64(0x4348520000000000)
_TAG_BAND: Final = np.uint64(0x42414E4400000000)  # "BAND", or'ed with the band's number
_S27: Final = np.uint64(27)
_S33: Final = np.uint64(33)
_S30: Final = np.uint64(30)
_S31: Final = np.uint64(31)
_S32: Final = np.uint64(32)
_M64: Final = (1 << 64) - 1

# Scripts shingled by characters: those written without spaces between words, and Hangul.
_SPACELESS: Final = (
    "\u3005-\u3007"  # 々〆〇
    "\u3021-\u3029\u3038-\u303b"  # Hangzhou numerals, 〸〹〺〻
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana (ー included)
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3100-\u312f\u31a0-\u31bf"  # Bopomofo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G, compatibility supplement
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    # Hangul: Korean is written with spaces, but its words carry their particles, and hard
    # wrapping (fold -w) cuts them; by characters, as the mixed-script truth
    "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
)
#: A document (with a character other than ASCII) whose words are mostly prose of a spaced
#: language other than English is shingled by the character 3-grams of all its letters and
#: digits (SKETCH_VERSION 3), as the truth of those languages: a revision's
#: inflections and compounds move its word 3-shingles (J 0.68) more than its character
#: 3-grams (J >= 0.8). "Mostly": function words of :data:`_FOREIGN_WORDS` make at least
#: FOREIGN_SHARE percent of its words and outnumber those of :data:`_ENGLISH_WORDS` (chosen on
#: bench/quality's tuning parts: no English document there reaches 5 percent, French and
#: German man pages 15 to 25).
FOREIGN_SHARE: Final = 5
# Frequent function words (folded) of the spaced languages of bench/quality's parts: French,
# German, Spanish, Italian, Portuguese, Dutch, Catalan, Romanian, Polish, Czech, Slovak,
# South Slavic, Scandinavian, Lithuanian, Hungarian, Russian, Ukrainian, Serbian, Greek,
# Hebrew, Arabic, Persian; none an English word or a frequent token of English technical text
# (de, die, in, is, per, non, con and the like are left out).
_FOREIGN_WORDS: Final = """
le la les des du un une et est sont pour dans que qui pas sur avec par au aux ce cette ces il elle ils sa son
ses leur mais où plus peut être été fait comme tous très sans entre aussi vous nous
der das und ist nicht mit für dem ein eine einen einer von auf sich werden wird sind auch oder wenn kann bei
aus nach wie noch nur durch über zum zur im vom diese dieser wurde zu
el los las del y una es para su lo más pero sus este esta ser son también entre puede
il di della dei delle che è sono questo questa anche più nel nella alla gli degli può essere
os das dos em não com uma são foi também ao pelo pela
het een en van dat zijn voor met niet aan ook bij door naar wordt worden deze kan
els amb és per però són
și în este sunt care pentru să din
się nie że jest jak dla przez lub oraz czy jego może przy na
je jsou nebo které který při také jako že
sa ako alebo sú pre
ki pa ili kao što su
och att det som på är av för med till inte ett
og ikke til skal vil jeg af
ir yra kad iš į tai kaip arba buvo nuo apie
és hogy nem egy vagy csak már mint van az
и в не на что с по как это для он из от к за то же или у бы а но так все вы его если при о до может быть
і що з та як це від або й
је да се су од са као
και το της την του η να ο με για τα που δεν από σε είναι οι στο στην
של את על הוא לא זה עם כי גם אם או
في من على إلى أن عن هذا هذه التي الذي مع لا ما هو كان أو
و در به از که این را با است برای آن یا
"""
_ENGLISH_WORDS: Final = """
the of and to a in is it that for on with as this be are by or not from at an was which can will if you your
has have these when all its
"""
_WORDS: Final = re.compile(rf"[^\W{_SPACELESS}]+")
_SPACELESS_CHARS: Final = re.compile(rf"[{_SPACELESS}]")
# A spaceless letter or digit (group 1), or a word (group 2).
_TOKEN: Final = re.compile(rf"((?=[{_SPACELESS}])[^\W_])|([^\W{_SPACELESS}]+)")
# A letter or digit of any script: \w is str.isalnum() and the underscore.
_ALNUM: Final = re.compile(r"[^\W_]")


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, a bijection of uint64 (vectorised)."""
    return _mix_in_place(x.astype(np.uint64, copy=True))


def _mix_in_place(x: np.ndarray) -> np.ndarray:
    """:func:`_mix` of a uint64 array, in place (array arithmetic wraps without warnings)."""
    t = x >> _S30
    x ^= t
    x *= _C1
    np.right_shift(x, _S27, out=t)
    x ^= t
    x *= _C2
    np.right_shift(x, _S31, out=t)
    x ^= t
    return x


def _mix_int(x: int) -> int:
    """:func:`_mix` of one Python int (the band keys: 16 values, cheaper than numpy calls)."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


#: A band key's start, before its minima: the mix of the band's tag (one per band).
_BAND_START: Final = tuple(_mix(_TAG_BAND | np.arange(BANDS, dtype=np.uint64)).tolist())
#: The first hash of each bin (the top 8 bits are the bin).
_BIN_STARTS: Final = np.arange(SKETCH_BITS, dtype=np.uint64) << _SHIFT
with np.errstate(over="ignore"):
    #: Each bin's salt for its stored bit: the bin's number times the golden ratio.
    _BIN_SALT: Final = np.arange(SKETCH_BITS, dtype=np.uint64) * _GOLD
_NO_CHARS: Final = np.zeros(0, dtype=np.uint64)
#: The salts of a word shingle's copies (copy i is salted with _COPY_SALTS[i]).
_COPY_SALTS: Final = _mix(np.arange(1, WORD_COPIES, dtype=np.uint64) * _GOLD)
_COPY_INDEX: Final = np.arange(WORD_COPIES - 1)

# Word -> MurmurHash3, shared by every document (a few words make up most of any text).
# Keys are str, or bytes on the ASCII path: mmh3 hashes a str as its UTF-8 bytes, so both
# give the same value. Emptied when it grows past _CACHE_LIMIT words.
_WORD_CACHE: dict[str | bytes, int] = {}
_CACHE_LIMIT: Final = 1 << 20
# ASCII text: bytes.translate + split finds the words of \w+ several times faster than re.
_ASCII_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ASCII_SPLIT: Final = bytes(c if c in _ASCII_WORD else 0x20 for c in range(256))


def _word_hashes(words: list[Any]) -> np.ndarray:
    """MurmurHash3 (64 bits) of each word, in order."""
    if len(words) < 2:  # itemgetter of one key gives the value, not a tuple
        return np.array([_word_hash(w) for w in words], dtype=np.uint64)
    get = itemgetter(*words)
    try:
        found = get(_WORD_CACHE)
    except KeyError:
        if len(_WORD_CACHE) > _CACHE_LIMIT:
            _WORD_CACHE.clear()
        for word in set(words).difference(_WORD_CACHE):
            _WORD_CACHE[word] = int(mmh3.hash64(word, signed=False)[0])
        found = get(_WORD_CACHE)
    return np.fromiter(found, dtype=np.uint64, count=len(words))


def _word_hash(word: Any) -> int:
    h = _WORD_CACHE.get(word)
    if h is None:
        h = int(mmh3.hash64(word, signed=False)[0])
    return h


def _ngrams(tokens: np.ndarray, n: int, tag: np.ndarray) -> np.ndarray:
    """Hashes of the n-grams of a sequence of token hashes; a shorter sequence is one shingle."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.uint64)
    if len(tokens) < n:
        with np.errstate(over="ignore"):
            h = _mix(np.array([tag ^ (np.uint64(len(tokens)) * _GOLD)], dtype=np.uint64))
        for token in tokens:
            h = _mix(h ^ token)
        return h
    count = len(tokens) - n + 1
    h = _mix_in_place(tokens[:count] ^ tag)
    for j in range(1, n):
        h ^= tokens[j:count + j]
        _mix_in_place(h)
    return h


def _text(doc: Any) -> str:
    """The document's text: a str, UTF-8 bytes, or a mapping of fields (joined by newlines)."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, (bytes, bytearray)):
        try:
            return bytes(doc).decode("utf-8")
        except UnicodeDecodeError as err:
            raise DecodeError(f"invalid utf-8 at byte {err.start}") from None
    if isinstance(doc, Mapping):
        parts: list[str] = []
        for name in sorted(doc):
            value = doc[name]
            if value is None:
                continue
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
                raise InvalidDocument(f"expected str or list of str in field {name!r}, got {type(value).__name__}")
            parts.extend(items)
        return "\n".join(parts)
    raise InvalidDocument(f"expected str, bytes or mapping, got {'None' if doc is None else type(doc).__name__}")


def _fold(text: str) -> str:
    """NFKC, then case folding (for ASCII text both are ``str.lower``)."""
    return text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()


#: A document's tokens for the sketch: its words' hashes, their lengths (code points), and
#: the code points of its character stream, each in document order.
Tokens = tuple[np.ndarray, np.ndarray, np.ndarray]


def _tokens(folded: str) -> Tokens:
    """Folded text's words (hashes and lengths) and the code points of its character stream.

    A text without a character of a script shingled by characters has words only.
    Otherwise each script by its own rule (:func:`_script_runs`): the words among those
    characters go to the character stream with them, the others stay words.
    """
    if folded.isascii():  # no spaceless script; the same words as the regular expression, faster
        hashes, _, lengths = _ascii_word_hashes(folded.encode("ascii").translate(_ASCII_SPLIT))
        return hashes, lengths, _NO_CHARS
    if _SPACELESS_CHARS.search(folded) is None:
        words = _WORDS.findall(folded)
        return _word_hashes(words), _lengths(words), _NO_CHARS
    words, lengths, chars = _script_runs(folded)
    return _word_hashes(words), lengths, chars


def _function_word_table() -> tuple[np.ndarray, np.ndarray]:
    """The hashes of the function words, sorted, and whether each is a foreign one (not English)."""
    foreign = {unicodedata.normalize("NFKC", w).casefold() for w in _FOREIGN_WORDS.split()}
    english = {unicodedata.normalize("NFKC", w).casefold() for w in _ENGLISH_WORDS.split()}
    pairs = sorted({_word_hash(w): w in foreign for w in foreign | english}.items())
    return (np.array([h for h, _ in pairs], dtype=np.uint64),
            np.array([f for _, f in pairs], dtype=bool))


_FUNCTION_HASHES, _FUNCTION_FOREIGN = _function_word_table()


def _language_gate(tokens: Tokens, folded: str | list[str]) -> Tokens:
    """A document's tokens, or all its letters and digits as characters if its words are foreign prose.

    Foreign prose: a text with a character other than ASCII (so ASCII text, most English,
    pays nothing) whose words are at least :data:`FOREIGN_SHARE` percent function words of
    :data:`_FOREIGN_WORDS`, more than of :data:`_ENGLISH_WORDS`. Decided on the word hashes
    the sketch has already; ``folded`` is the folded text, or its fields (joined by newlines).
    """
    words = tokens[0]
    if not len(words) or (folded.isascii() if isinstance(folded, str) else all(f.isascii() for f in folded)):
        return tokens
    at = np.searchsorted(_FUNCTION_HASHES, words)
    np.minimum(at, len(_FUNCTION_HASHES) - 1, out=at)
    found = _FUNCTION_HASHES[at] == words
    foreign = int(np.count_nonzero(found & _FUNCTION_FOREIGN[at]))
    if 100 * foreign < FOREIGN_SHARE * len(words) or 2 * foreign <= int(np.count_nonzero(found)):
        return tokens
    text = folded if isinstance(folded, str) else "\n".join(folded)
    return _NO_CHARS, np.zeros(0, dtype=np.int64), _alnum_codes(text)


def _lengths(words: list[str]) -> np.ndarray:
    return np.fromiter(map(len, words), dtype=np.int64, count=len(words))


def _join_wrapped(folded: str) -> str:
    r"""Join the lines of hard-wrapped spaceless text where a line break cut a word in two.

    A line break right between two letters or digits of a spaced script (no space on
    either side) is dropped when the lines on both sides hold a spaceless character:
    ``使用comm\nand命令`` is ``使用command命令``. Elsewhere a line break stays a word boundary
    (a break between two spaceless characters separates nothing: they are shingled as one
    stream of characters).
    """
    if "\n" not in folded:
        return folded
    lines = folded.split("\n")
    spaceless = [_SPACELESS_CHARS.search(line) is not None for line in lines]
    out = [lines[0]]
    for i in range(1, len(lines)):
        before, after = out[-1].removesuffix("\r"), lines[i]
        if (spaceless[i - 1] and spaceless[i] and before and after and _is_word_letter(before[-1])
                and _is_word_letter(after[0])):
            out[-1] = before + after
        else:
            out.append(lines[i])
    return "\n".join(out)


def _is_word_letter(ch: str) -> bool:
    """A letter or digit of a script written with spaces."""
    return ch.isalnum() and _SPACELESS_CHARS.match(ch) is None


def _script_runs(folded: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The words shingled as words, and the character stream, of folded text with a spaceless character.

    Tokens, in order: each spaceless letter or digit, and each word (a run of other word
    characters, :data:`_WORDS`), after :func:`_join_wrapped`. A word goes into the
    character stream (its letters and digits, with the spaceless characters, in document
    order) when spaceless characters make at least :data:`SPACELESS_SHARE` percent of the
    letters among the :data:`SPACELESS_WINDOW` tokens on either side of it (a word counts
    its length, a spaceless character one): a Latin term inside Chinese weighs by its
    letters, as in the truth's character 3-grams, while an English text with a Chinese
    name keeps its words and changes by the name alone. Each word's rule depends only on
    its neighbourhood, so a few characters of another script move only the words near them.
    """
    text = _join_wrapped(folded)
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not len(codes):
        return [], np.zeros(0, dtype=np.int64), _NO_CHARS
    # what _TOKEN finds, in numpy: a spaceless letter or digit, or a run of other word characters
    # (\w: str.isalnum() or "_"); isalnum asked once per distinct character
    distinct, inverse = np.unique(codes, return_inverse=True)
    alnum = np.fromiter((chr(c).isalnum() for c in distinct.tolist()), dtype=bool, count=len(distinct))
    spaceless_d = _spaceless_table()[distinct]
    is_alnum = alnum[inverse]
    sp = (alnum & spaceless_d)[inverse]
    word = ((alnum | (distinct == 0x5F)) & ~spaceless_d)[inverse]
    token_start = sp | (word & ~np.concatenate([[False], word[:-1]]))
    starts = np.flatnonzero(token_start)
    n = len(starts)
    if not n:  # spaceless marks only (・, ゛): no letter or word
        return [], np.zeros(0, dtype=np.int64), _NO_CHARS
    in_token = sp | word
    token = np.cumsum(token_start) - 1  # each position's token (where in_token)
    letters = np.bincount(token[in_token], minlength=n)  # a word counts its length, a spaceless character one
    spaceless = sp[starts]
    total = np.concatenate([[0], np.cumsum(letters)])
    theirs = np.concatenate([[0], np.cumsum(spaceless)])
    at = np.arange(n)
    lo, hi = np.maximum(at - SPACELESS_WINDOW, 0), np.minimum(at + SPACELESS_WINDOW + 1, n)
    spelled = spaceless | (100 * (theirs[hi] - theirs[lo]) >= SPACELESS_SHARE * (total[hi] - total[lo]))
    chars = codes[sp | (word & is_alnum & spelled[np.maximum(token, 0)])].astype(np.uint64)
    kept = np.flatnonzero(~spelled)
    lengths = letters[kept]
    words = [text[i:i + k] for i, k in zip(starts[kept].tolist(), lengths.tolist(), strict=True)]
    return words, lengths.astype(np.int64), chars


def _code_points(letters: str) -> np.ndarray:
    return np.frombuffer(letters.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)


def _alnum_codes(folded: str) -> np.ndarray:
    """The code points of the letters and digits of ``folded`` (``str.isalnum``), in order (uint64)."""
    letters = "".join(_ALNUM.findall(folded)).encode("utf-32-le", "surrogatepass")
    return np.frombuffer(letters, dtype=np.uint32).astype(np.uint64)


# MurmurHash3 x64 128 (seed 0) of words shorter than one 16-byte block, in numpy.
_MM_C1: Final = np.uint64(0x87C37B91114253D5)
_MM_C2: Final = np.uint64(0x4CF5AD432745937F)
_MM_F1: Final = np.uint64(0xFF51AFD7ED558CCD)
_MM_F2: Final = np.uint64(0xC4CEB9FE1A85EC53)
_MM_LOW: Final = np.array([(1 << 8 * min(n, 8)) - 1 for n in range(16)], dtype=np.uint64)  # bytes 0-7 of a word
_MM_HIGH: Final = np.array([(1 << 8 * max(n - 8, 0)) - 1 for n in range(16)], dtype=np.uint64)  # bytes 8-15
_MM_BLOCK: Final = 16


def _rotl_in_place(x: np.ndarray, r: int, scratch: np.ndarray) -> None:
    """Rotate each uint64 of ``x`` left by ``r`` bits, in place (``scratch``: an array of its size)."""
    np.right_shift(x, np.uint64(64 - r), out=scratch)
    x <<= np.uint64(r)
    x |= scratch


def _fmix_in_place(k: np.ndarray, scratch: np.ndarray) -> None:
    """MurmurHash3's 64-bit finaliser of each uint64 of ``k``, in place."""
    for factor in (_MM_F1, _MM_F2):
        np.right_shift(k, _S33, out=scratch)
        k ^= scratch
        k *= factor
    np.right_shift(k, _S33, out=scratch)
    k ^= scratch


def _ascii_word_hashes(separated: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MurmurHash3 of each word of ASCII text whose separators are spaces, which bytes are word bytes, word lengths.

    ``mmh3.hash64(word)[0]`` of each run of non-space bytes, in order. Words shorter than
    16 bytes (all but a few) are hashed together in numpy (MurmurHash3's tail and
    finalisation: no block, arithmetic in place); the longer ones one by one.
    """
    size = len(separated)
    # which bytes are word bytes, between two non-word bytes: a word starts or ends where they change
    flags = np.zeros(size + 2, dtype=np.bool_)
    word = flags[1:-1]
    np.not_equal(np.frombuffer(separated, dtype=np.uint8), 0x20, out=word)
    edges = np.flatnonzero(flags[1:] != flags[:-1])
    starts, ends = edges[0::2], edges[1::2]
    lengths = ends - starts
    short = lengths < _MM_BLOCK
    every = bool(short.all())
    s, n = (starts, lengths) if every else (starts[short], lengths[short])
    # row i: bytes i .. i + 15 as two little-endian uint64 (overlapping rows of the padded text)
    padded = separated + bytes(_MM_BLOCK)
    rows = np.ndarray((size, 2), dtype="<u8", buffer=padded, strides=(1, 8))
    blocks = rows[s]
    k1 = blocks[:, 0] & _MM_LOW[n]
    k2 = blocks[:, 1] & _MM_HIGH[n]
    scratch = np.empty_like(k1)
    k1 *= _MM_C1
    _rotl_in_place(k1, 31, scratch)
    k1 *= _MM_C2
    k2 *= _MM_C2  # a word of at most 8 bytes has k2 = 0, which leaves h2 as it is
    _rotl_in_place(k2, 33, scratch)
    k2 *= _MM_C1
    length = n.astype(np.uint64)
    h1 = k1
    h1 ^= length
    h2 = k2
    h2 ^= length
    h1 += h2
    h2 += h1
    _fmix_in_place(h1, scratch)
    _fmix_in_place(h2, scratch)
    h1 += h2
    if every:
        return h1, word, lengths
    out = np.empty(len(starts), dtype=np.uint64)
    out[short] = h1
    for i in np.flatnonzero(~short).tolist():
        out[i] = _word_hash(separated[starts[i]:ends[i]])
    return out, word, lengths


@lru_cache(maxsize=1)
def _spaceless_table() -> np.ndarray:
    """For every code point, whether it is one of :data:`_SPACELESS` (parsed; bench/quality uses it)."""
    table = np.zeros(0x110000, dtype=bool)
    i = 0
    while i < len(_SPACELESS):
        if i + 2 < len(_SPACELESS) and _SPACELESS[i + 1] == "-":
            table[ord(_SPACELESS[i]):ord(_SPACELESS[i + 2]) + 1] = True
            i += 3
        else:
            table[ord(_SPACELESS[i])] = True
            i += 1
    table.setflags(write=False)
    return table


def _shingle_parts(words: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The word shingles and the character 3-grams of a document's tokens (:func:`_tokens`)."""
    word_shingles = _ngrams(words, _WORD_N, _TAG_WORD)
    if not len(codes):
        return word_shingles, _NO_CHARS
    return word_shingles, _ngrams(_mix_in_place(codes + _GOLD), _CHAR_N, _TAG_CHAR)


def _extra_copies(lengths: np.ndarray) -> np.ndarray:
    """Copies of each word 3-shingle beside it: its words' mean length, rounded, 1 to WORD_COPIES, less one.

    A text of fewer than 3 words (one shingle) gets none.
    """
    count = len(lengths) - _WORD_N + 1
    if count < 1:
        return np.zeros(min(len(lengths), 1), dtype=np.int64)
    mean = (lengths[:count] + lengths[1:count + 1] + lengths[2:count + 2] + 1) // 3
    extra: np.ndarray = np.minimum(np.maximum(mean, 1), WORD_COPIES) - 1
    return extra


def _joined_extra_copies(streams: list[np.ndarray]) -> np.ndarray:
    """:func:`_extra_copies` of each of ``streams`` (word lengths, each of at least 3 words), end to end."""
    if not streams:
        return np.zeros(0, dtype=np.int64)
    joined = np.concatenate(streams) if len(streams) > 1 else streams[0]
    extra = _extra_copies(joined)
    # drop the shingles that start in a stream's last two words (they run into the next stream)
    ends = np.cumsum([len(t) for t in streams])
    keep = np.ones(len(joined), dtype=bool)
    keep[(ends[:, None] - np.arange(_WORD_N - 1, 0, -1)[None, :]).ravel()] = False
    return extra[keep[:len(extra)]]


def _copy_grid(word_shingles: np.ndarray, extra: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All WORD_COPIES - 1 salted copies of each word shingle (one row each), and which of them count.

    Copy ``j`` of a shingle counts when ``j < extra``. The shingle's hash is mixed already:
    one multiply and shift spread the salt (cheaper than :func:`_mix`).
    """
    x = word_shingles[:, None] ^ _COPY_SALTS[None, :]
    x *= _C2
    x ^= x >> _S32
    return x, _COPY_INDEX[None, :] < extra[:, None]


def _copies(word_shingles: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """``extra[i]`` salted copies of word shingle ``i``, in order (shingle, copy)."""
    if not len(extra):
        return _NO_CHARS
    grid, counted = _copy_grid(word_shingles, extra)
    kept: np.ndarray = grid[counted]
    return kept


def _token_shingles(words: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The sketch's elements of a document's tokens: its shingles and the copies of its word shingles."""
    word_shingles, char_shingles = _shingle_parts(words, lengths, codes)
    return np.concatenate([word_shingles, _copies(word_shingles, _extra_copies(lengths)), char_shingles])


def _shingles(doc: Any) -> np.ndarray:
    """The 64-bit hashes of a document's sketch elements (:func:`_token_shingles`), in no order, repeats included."""
    folded = _fold(_text(doc))
    return _token_shingles(*_language_gate(_tokens(folded), folded))


def shingle_hashes(doc: Any) -> np.ndarray:
    """The 64-bit hashes of the set the sketch estimates Jaccard similarity of (unique, sorted, uint64).

    Its shingles and the copies of its word shingles: a word shingle weighs its words'
    mean length (1 to :data:`WORD_COPIES`), a character 3-gram one.
    """
    return np.unique(_shingles(doc))


def _distinct_shingles(words: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> int:
    """The number of distinct shingles (copies not counted) of a document's tokens."""
    word_shingles, char_shingles = _shingle_parts(words, lengths, codes)
    return len(np.unique(word_shingles)) + len(np.unique(char_shingles))


@lru_cache(maxsize=1)
def _borrow_order() -> np.ndarray:
    """For each bin, the bins an empty one borrows from, in order: mix64(bin << 32 | attempt) mod bins."""
    attempts = 32 * SKETCH_BITS
    bins = np.arange(SKETCH_BITS, dtype=np.uint64)[:, None] << np.uint64(32)
    tries = np.arange(attempts, dtype=np.uint64)[None, :]
    order: np.ndarray = (_mix(bins | tries) % np.uint64(SKETCH_BITS)).astype(np.int32)
    order.setflags(write=False)
    return order


@lru_cache(maxsize=1)
def _borrow_position() -> np.ndarray:
    """``[empty bin, filled bin]``: the first attempt of :func:`_borrow_order` that names the filled bin.

    The attempts' count (8,192) where it never does. An empty bin borrows from the filled
    bin of smallest position: the first filled one its order names.
    """
    order = _borrow_order()
    attempts = order.shape[1]
    position = np.full((SKETCH_BITS, SKETCH_BITS), attempts, dtype=np.int16)
    for row in range(SKETCH_BITS):
        named, first = np.unique(order[row], return_index=True)
        position[row, named] = first
    position.setflags(write=False)
    return position


def _minima(hashes: np.ndarray) -> np.ndarray:
    """The smallest hash in each bin, empty bins filled by optimal densification (``hashes`` sorted, not empty)."""
    first = np.empty(SKETCH_BITS + 1, dtype=np.intp)
    first[:SKETCH_BITS] = np.searchsorted(hashes, _BIN_STARTS)  # a bin's first hash, or the next bin's
    first[SKETCH_BITS] = len(hashes)
    filled = first[1:] > first[:-1]
    # An empty bin's value here is never read: it borrows only from bins filled here.
    minima = hashes[np.minimum(first[:SKETCH_BITS], len(hashes) - 1)]
    empty = np.flatnonzero(~filled)
    if len(empty):
        # The first filled bin each empty bin's order names (a 256 x 256 table, not the
        # 8 MB order itself: a short text would read megabytes of it).
        never = _borrow_order().shape[1]
        positions = np.maximum(_borrow_position()[empty], np.where(filled, 0, never).astype(np.int16))
        source = positions.argmin(axis=1)
        found = positions[np.arange(len(empty)), source] < never
        minima[empty[found]] = minima[source[found]]
        # 8,192 misses in a row: only with about one shingle in the whole set
        minima[empty[~found]] = hashes[0]
    return minima


def _band_keys(minima: np.ndarray, bands: int = BANDS, rows: int = BAND_ROWS) -> np.ndarray:
    """``(n, bands)`` uint64 keys of ``(n, 256)`` minima: band i hashes bins ``i*rows .. i*rows + rows - 1``.

    splitmix64 over the band's number, then each minimum in turn, so equal minima in two
    bands still give different keys. bench/quality/bands.py calls this for its grid.
    """
    if bands * rows > minima.shape[1]:
        raise InvalidConfig(f"bands * rows must be at most {minima.shape[1]}, got {bands} * {rows}")
    groups = minima[:, : bands * rows].reshape(minima.shape[0], bands, rows)
    with np.errstate(over="ignore"):
        h = np.broadcast_to(_mix(_TAG_BAND | np.arange(bands, dtype=np.uint64)), groups.shape[:2])
        for j in range(rows):
            h = _mix(h ^ groups[:, :, j])
    return h


def _sorted_shingles(doc: Any) -> tuple[np.ndarray, Tokens]:
    """The sorted sketch elements (repeats kept) of a document with any, and its tokens; EmptyDocument otherwise."""
    text = _text(doc)
    folded = _fold(text)
    tokens = _language_gate(_tokens(folded), folded)
    hashes = np.sort(_token_shingles(*tokens))  # a repeated shingle changes no minimum: no need to drop it
    if not len(hashes):
        short = " ".join(text.split())  # named as the fingerprinter names a document
        short = short if len(short) <= 40 else short[:37] + "..."
        raise EmptyDocument(f"empty document: no words to sketch: {short!r}")
    return hashes, tokens


def _sketch_bits(minima: np.ndarray) -> bytes:
    # The bin number salts the stored bit: a document whose bins all borrowed one
    # minimum still gets independent bits, so short texts do not collapse together.
    mixed = _mix_in_place(minima ^ _BIN_SALT)
    return np.packbits((mixed & np.uint64(1)).astype(np.uint8)).tobytes()


def _doc_band_keys(minima: np.ndarray) -> tuple[int, ...]:
    """:func:`_band_keys` of one document's minima, signed, on Python ints (16 values)."""
    values = minima[: BANDS * BAND_ROWS].tolist()
    keys = []
    for i, h in enumerate(_BAND_START):
        for v in values[i * BAND_ROWS:(i + 1) * BAND_ROWS]:
            h = _mix_int(h ^ v)
        keys.append(h - (1 << 64) if h >> 63 else h)
    return tuple(keys)


def _sketch_and_bands_of(hashes: np.ndarray, tokens: Tokens) -> tuple[bytes, tuple[int, ...] | None]:
    """:func:`sketch_and_bands` of sorted sketch elements (at least one) made of ``tokens``."""
    minima = _minima(hashes)
    # A shingle makes at most WORD_COPIES distinct elements: count shingles only when that is not enough.
    elements = np.count_nonzero(hashes[1:] != hashes[:-1]) + 1
    if elements < MIN_BAND_SHINGLES or (
            elements < WORD_COPIES * MIN_BAND_SHINGLES and _distinct_shingles(*tokens) < MIN_BAND_SHINGLES):
        return _sketch_bits(minima), None
    return _sketch_bits(minima), _doc_band_keys(minima)


def _batch_ngrams(streams: list[np.ndarray], n: int, tag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_ngrams` of each of ``streams`` together: the hashes and each hash's stream (int64).

    The n-grams of the streams joined end to end, less those across a boundary; a stream
    shorter than ``n`` gets its one shingle from :func:`_ngrams`.
    """
    lengths = np.fromiter((len(t) for t in streams), dtype=np.int64, count=len(streams))
    full = np.flatnonzero(lengths >= n)
    hashes: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    if len(full):
        joined = np.concatenate([streams[i] for i in full.tolist()]) if len(full) > 1 else streams[int(full[0])]
        sizes = lengths[full]
        count = len(joined) - n + 1
        h = _mix_in_place(joined[:count] ^ tag)
        for j in range(1, n):
            h ^= joined[j:count + j]
            _mix_in_place(h)
        # the n-grams starting in a stream's last n - 1 tokens run into the next stream
        grams = sizes - (n - 1)
        ends = np.cumsum(sizes)
        keep = np.ones(count + n - 1, dtype=bool)
        if n > 1:
            cut = (ends[:, None] - np.arange(n - 1, 0, -1)[None, :]).ravel()
            keep[cut] = False
        hashes.append(h[keep[:count]])
        owners.append(np.repeat(full, grams))
    for i in np.flatnonzero((lengths > 0) & (lengths < n)).tolist():
        hashes.append(_ngrams(streams[i], n, tag))
        owners.append(np.array([i], dtype=np.int64))
    if not hashes:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    return np.concatenate(hashes), np.concatenate(owners)


def _batch_minima(hashes: np.ndarray, owners: np.ndarray, docs: int,
                  copies: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_minima` of each document's shingle hashes together: ``(docs, 256)`` minima and bins filled.

    ``owners`` names each hash's document (0 .. docs - 1); a document without hashes
    gets no minima (all bins empty, values meaningless). ``copies``: the word shingles'
    copies as :func:`_copy_grid` gives them (all copies, which of them count, each row's
    document); only those at or below their bin's minimum among the shingles (every copy
    of an empty bin) go to the slow ``np.minimum.at``: the same minima and filled bins.
    """
    # a bin (the top 8 bits, below 256) is a small uint64: read as int64 without a copy
    keys = (hashes >> _SHIFT).view(np.int64)
    keys += owners * SKETCH_BITS
    flat = np.full(docs * SKETCH_BITS, _M64, dtype=np.uint64)
    np.minimum.at(flat, keys, hashes)
    counts = np.bincount(keys, minlength=docs * SKETCH_BITS)
    if copies is not None and len(copies[0]):
        grid, counted, rows = copies
        grid_keys = (grid >> _SHIFT).view(np.int64)
        grid_keys += (rows * SKETCH_BITS)[:, None]
        near = np.less_equal(grid, flat.take(grid_keys))
        near &= counted
        at = np.flatnonzero(near)  # flat positions: much faster than the (row, column) pairs of np.nonzero
        values = grid.ravel()[at]
        more_keys = grid_keys.ravel()[at]
        np.minimum.at(flat, more_keys, values)
        counts += np.bincount(more_keys, minlength=docs * SKETCH_BITS)
    minima = flat.reshape(docs, SKETCH_BITS)
    filled = (counts > 0).reshape(docs, SKETCH_BITS)
    doc, empty = np.nonzero(~filled)
    if len(doc):
        # As _minima: the first filled bin each empty bin's order names, else the
        # document's smallest hash (the smallest filled minimum).
        never = _borrow_order().shape[1]
        positions = np.maximum(_borrow_position()[empty], np.where(filled, 0, never).astype(np.int16)[doc])
        source = positions.argmin(axis=1)
        found = positions[np.arange(len(doc)), source] < never
        values = minima[doc, source]
        if not found.all():
            smallest = np.where(filled, minima, np.uint64(_M64)).min(axis=1)
            values[~found] = smallest[doc[~found]]
        minima[doc, empty] = values
    return minima, filled


def _batch_sketch_and_bands(tokens: list[Tokens]) -> list[tuple[bytes, tuple[int, ...] | None] | None]:
    """:func:`_sketch_and_bands_of` the shingles of each document's :data:`Tokens`, together.

    None for a document without any shingle. The values are those of one document at a
    time, bit for bit: the n-grams, minima, densification, bits and band keys are computed
    for all documents in a few numpy calls instead of a few dozen per document.
    """
    docs = len(tokens)
    if not docs:
        return []
    word_h, word_doc = _batch_ngrams([w for w, _, _ in tokens], _WORD_N, _TAG_WORD)
    chars = [c for _, _, c in tokens]
    # the copies of each shingle, in _batch_ngrams's order: the full streams', then the short ones'
    full = [t[1] for t in tokens if len(t[1]) >= _WORD_N]
    short = sum(1 for t in tokens if 0 < len(t[1]) < _WORD_N)
    extra = np.concatenate([_joined_extra_copies(full), np.zeros(short, dtype=np.int64)])
    copies = (*_copy_grid(word_h, extra), word_doc) if len(extra) else None
    if any(len(c) for c in chars):
        joined = _mix_in_place(np.concatenate(chars) + _GOLD)
        bounds = np.cumsum([len(c) for c in chars]).tolist()
        streams = np.split(joined, bounds[:-1])
        char_h, char_doc = _batch_ngrams(streams, _CHAR_N, _TAG_CHAR)
        hashes, owners = np.concatenate([word_h, char_h]), np.concatenate([word_doc, char_doc])
    else:
        hashes, owners = word_h, word_doc
    # the shingles (hashes, owners) count for the band-key guard; their copies only for the minima
    minima, filled = _batch_minima(hashes, owners, docs, copies)
    mixed = _mix_in_place(minima ^ _BIN_SALT)
    bits = np.packbits((mixed & np.uint64(1)).astype(np.uint8), axis=1)
    keys = _band_keys(minima).view(np.int64).tolist()
    any_hash = np.bincount(owners, minlength=docs) > 0
    bins = filled.sum(axis=1)
    out: list[tuple[bytes, tuple[int, ...] | None] | None] = []
    for i in range(docs):
        if not any_hash[i]:
            out.append(None)
            continue
        # as _sketch_and_bands_of: distinct shingles, counted only where the bins cannot tell
        banded = bins[i] >= WORD_COPIES * MIN_BAND_SHINGLES or len(np.unique(hashes[owners == i])) >= MIN_BAND_SHINGLES
        out.append((bits[i].tobytes(), tuple(keys[i]) if banded else None))
    return out


def sketch(doc: Any) -> bytes:
    """The 32-byte sketch of a document (text, UTF-8 bytes, or a mapping of fields).

    Raises:
        EmptyDocument: no word or character to make a shingle of.
        InvalidDocument: not text; DecodeError: bytes that are not UTF-8.
    """
    return _sketch_bits(_minima(_sorted_shingles(doc)[0]))


def sketch_and_bands(doc: Any) -> tuple[bytes, tuple[int, ...] | None]:
    """The sketch and the :data:`BANDS` band keys of a document, from one set of minima.

    Band ``i`` is a 64-bit hash of the sketch's bin minima ``i*4 .. i*4 + 3`` (after
    densification): documents sharing a key are lookup candidates
    (``SimHashColumn.duplicates(..., band_keys=)``), which the sketch then confirms. Keys are
    signed, as a ``bigint`` column stores them. A document with fewer than
    :data:`MIN_BAND_SHINGLES` distinct shingles gets None: it is found through its
    fingerprint only.

    Raises:
        EmptyDocument, InvalidDocument, DecodeError: as :func:`sketch`.

    Example:
        >>> text = " ".join(f"word{i}" for i in range(20))  # 18 distinct word 3-shingles
        >>> s, keys = sketch_and_bands(text)
        >>> s == sketch(text), len(keys)
        (True, 4)
        >>> sketch_and_bands("too short to band")[1] is None
        True
    """
    return _sketch_and_bands_of(*_sorted_shingles(doc))


def sketch_distance(a: bytes, b: bytes) -> int:
    """Number of differing bits of two sketches (``simpg.sketch_distance(a, b)`` in SQL)."""
    if len(a) != len(b):
        raise ValueError(f"sketches of different sizes: {len(a)} and {len(b)} bytes")
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).bit_count()


def similarity(distance: int, bits: int = SKETCH_BITS) -> float:
    """Estimated Jaccard similarity of two shingle sets whose sketches differ in ``distance`` bits.

    Each bin agrees with probability ``(1 + J) / 2``, so J is about ``1 - 2 * distance / bits``
    (0 below that).
    """
    return max(0.0, 1.0 - 2.0 * distance / bits)


def checked_max_sketch_distance(value: int | None) -> int:
    """A confirming limit of sketch bits; None means :data:`MAX_SKETCH_DISTANCE`.

    Refused, naming the value, unless an integer from 0 to :data:`SKETCH_BITS`.
    """
    if value is None:
        return MAX_SKETCH_DISTANCE
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SKETCH_BITS:
        raise InvalidConfig(f"max_sketch_distance must be an integer from 0 to {SKETCH_BITS}, got {value!r}")
    return value


def to_sql(value: bytes) -> str:
    """A sketch as PostgreSQL's bit-string input (``'x' + hex``), e.g. for ``%s::bit(256)``."""
    if not isinstance(value, (bytes, bytearray)) or len(value) != SKETCH_BYTES:
        raise InvalidDocument(f"expected a sketch of {SKETCH_BYTES} bytes, got {value!r}")
    return "x" + bytes(value).hex()


def from_sql(value: str | None) -> bytes | None:
    """A ``bit(256)`` as psycopg returns it (a string of 0 and 1) back to 32 bytes."""
    if value is None:
        return None
    if len(value) != SKETCH_BITS or set(value) - {"0", "1"}:
        raise InvalidDocument(f"expected a bit({SKETCH_BITS}) string, got {value!r}")
    return int(value, 2).to_bytes(SKETCH_BYTES, "big")


# -- band key columns: the names and values lookups compare ------------------------------

def band_columns(sketch_column: str, columns: Any) -> tuple[str, ...]:
    """The band key columns: ``columns``, or ``<sketch_column>_b0 ..`` one per band by default."""
    if columns is None:
        return tuple(f"{sketch_column}_b{i}" for i in range(BANDS))
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns or not all(
            isinstance(c, str) and c for c in columns):
        raise SimpgError(f"expected band_columns as a list of column names, got {columns!r}")
    return tuple(columns)


def checked_band_keys(band_keys: Any, columns: Sequence[str]) -> np.ndarray:
    """A document's band keys (signed 64-bit, as stored) checked, as ``int64``, one per column."""
    if isinstance(band_keys, (str, bytes)) or not isinstance(band_keys, (Sequence, np.ndarray)):
        raise SimpgError(f"expected a sequence of band keys, got {band_keys!r}")
    keys = list(band_keys)
    if len(keys) != len(columns):
        raise SimpgError(f"expected {len(columns)} band keys (one per band column), got {len(keys)}: {keys!r}")
    for key in keys:
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) or not (
                -(1 << 63) <= int(key) < 1 << 63):
            raise SimpgError(f"expected a signed 64-bit band key, got {key!r}")
    return np.array([int(key) for key in keys], dtype=np.int64)
