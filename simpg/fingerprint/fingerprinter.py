"""The fingerprinter: documents in, unsigned 64-bit SimHash fingerprints out.

A document is a ``str``, UTF-8 ``bytes``, a mapping of fields (``{"title": ...,
"headings": [...], "body": ...}``), a binary or text stream, or a file. Features are:

* word n-gram shingles of the normalised non-Chinese text (see
  :mod:`simpg.fingerprint.tokenize`), weighted by occurrence count (``weighting="tf"``)
  or once each (``"binary"``);
* the top-N TF-IDF terms of the Han text (see :mod:`simpg.fingerprint.chinese`);
* for a field other than ``body``, the same features prefixed with ``"<field>:"``
  (so a title shingle is a feature of its own) and multiplied by the field weight.

Features are hashed (:mod:`simpg.fingerprint.hashes`) and combined bit by bit
(:mod:`simpg.fingerprint.simhash`). Long documents are processed in chunks of about
1 MiB of text, cut after punctuation, so memory stays bounded and the fingerprint is
the same as for the whole text at once (exactly so whenever the text has punctuation at
least once per chunk; otherwise a chunk is cut at whitespace).

Example:
    >>> fp = Fingerprinter(FingerprintConfig(lang="en", unit="word"))
    >>> a = fp.fingerprint("The quick brown fox jumps over the lazy dog, again and again.")
    >>> b = fp.fingerprint("The quick brown fox jumps over the lazy dog again and again")
    >>> a == b, 0 <= a < 2**64
    (True, True)
    >>> fp.features("The quick brown fox")
    [('the quick brown', 1.0), ('quick brown fox', 1.0)]
"""

from __future__ import annotations

import logging
import os
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Final, Literal, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from simpg.bits import check
from simpg.exc import InvalidFingerprint
from simpg.fingerprint import minhash
from simpg.fingerprint.chinese import ChineseTerms
from simpg.fingerprint.config import FingerprintConfig
from simpg.fingerprint.errors import DecodeError, EmptyDocument, FingerprintError, InvalidDocument, NoFeatures
from simpg.fingerprint.hashes import hash_function, hash_spans, hash_windows
from simpg.fingerprint.normalize import (
    cut_runs,
    join_han,
    joined_words,
    normalize,
    split_scripts,
    word_text,
)
from simpg.fingerprint.simhash import QUANTUM, BitTally, quantize, quantize_array
from simpg.fingerprint.tokenize import (
    ENGLISH_STOPWORDS,
    anchored_shingles,
    char_ngrams,
    shingles,
)

__all__ = ["Document", "Fingerprinter"]

logger = logging.getLogger(__name__)

Document = str | bytes | bytearray | Mapping[str, Any]
DecodeErrors = Literal["strict", "replace"]

CHUNK_CHARS: Final = 1 << 20
# Weight of one character n-gram occurrence. Tried on the Chinese evaluation set (Chinese
# text with Latin commands, names and URLs): 1.0 (F1 0.895 at k=4) beat 0.25 (0.867) and
# 0.125 (0.743); the Latin parts are the most specific features of such documents.
CHAR_WEIGHT: Final = 1.0
_READ_BYTES: Final = 1 << 20
# Cut points: after these characters neither a word, a Han run nor a jieba block can
# continue, and NFKC never combines them with what follows. Not "." (jieba keeps "3.0" and
# "www.debian.org" inside one block) and not whitespace (dropped between Han characters).
_CUT_AFTER: Final = "!?;:,)]}>\"'|。！？；：，、）」』】》"
_FEATURE_BLOCK: Final = 1 << 16
_TERM_CACHE: Final = 1 << 20
# Tokens (words and spaceless characters) whose sketches are made together at most, about.
_SKETCH_TOKENS: Final = 1 << 20
_U64 = npt.NDArray[np.uint64]
T = TypeVar("T")


def _describe(value: Any) -> str:
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _preview(text: str) -> str:
    short = " ".join(text.split())
    return repr(short if len(short) <= 40 else short[:37] + "...")


def _cut_point(text: str, lo: int, hi: int) -> int:
    """Index in (lo, hi] after which ``text`` can be split without changing features."""
    best = -1
    for ch in _CUT_AFTER:
        i = text.rfind(ch, lo, hi)
        if i > best and (i + 1 >= len(text) or not _is_mark(text[i + 1])):
            best = i
    if best >= 0:
        return best + 1
    for ch in (" ", "\n", "\t"):
        i = text.rfind(ch, lo, hi)
        if i > best:
            best = i
    return best + 1 if best >= 0 else hi


def _is_mark(ch: str) -> bool:
    return not ch.isascii() and unicodedata.category(ch)[0] == "M"


def _chunks(text: str, size: int) -> Iterator[str]:
    """Cut ``text`` into pieces of at most about ``size`` characters at safe points."""
    pos, n = 0, len(text)
    while n - pos > size:
        cut = _cut_point(text, pos, pos + size)
        if cut <= pos:
            cut = pos + size
        yield text[pos:cut]
        pos = cut
    yield text[pos:]


def _incomplete_utf8_tail(data: bytes) -> int:
    """Length of a trailing, so far valid but unfinished, UTF-8 sequence."""
    for i in range(1, min(4, len(data)) + 1):
        b = data[-i]
        if b & 0xC0 == 0x80:
            continue
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return i if need > i else 0
        return 0
    return 0


def _decode(data: bytes, name: str, errors: DecodeErrors, base: int = 0) -> str:
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"invalid utf-8 in {name} at byte offset {base + exc.start} (byte 0x{data[exc.start]:02x})"
        ) from None


class _WordStream:
    """Shingles of one field, fed chunk by chunk, added to a tally."""

    def __init__(self, owner: Fingerprinter, prefix: bytes, weight_q: int, tally: BitTally):
        cfg = owner.config
        self.n = cfg.ngram
        self.chars = cfg.unit == "char"
        self.hash = cfg.hash
        self.binary = cfg.weighting == "binary"
        self.anchors = owner.anchors if cfg.anchored else None
        self.prefix = prefix
        self.weight_q = weight_q
        self.tally = tally
        self.tail = ""
        self.tail_count = 0
        self.tokens = 0
        self.seen: _U64 | None = None
        self.anchored_any = False
        self.pending: list[_U64] = []

    def feed(self, canonical: str) -> None:
        if not canonical:
            return
        if self.chars:
            self._feed_chars(canonical)
            return
        if self.tail:
            canonical = f"{self.tail} {canonical}"
        buf = canonical.encode("utf-8")
        raw = np.frombuffer(buf, dtype=np.uint8)
        spaces = np.flatnonzero(raw == 32)
        count = len(spaces) + 1
        starts = np.empty(count, dtype=np.intp)
        ends = np.empty(count, dtype=np.intp)
        starts[0] = 0
        starts[1:] = spaces + 1
        ends[:-1] = spaces
        ends[-1] = len(buf)
        self.tokens += count - self.tail_count
        n = self.n
        if count >= n:
            hashes = hash_spans(self.hash, buf, starts[: count - n + 1], ends[n - 1 :], self.prefix)
            if self.anchors is None:
                self._emit(hashes)
            else:
                flags = np.fromiter((t in self.anchors for t in canonical.split(" ")), dtype=np.int32, count=count)
                windows = np.convolve(flags, np.ones(n, dtype=np.int32), mode="valid") > 0
                if self.anchored_any:
                    self._emit(hashes[windows])
                elif windows.any():
                    self.anchored_any = True
                    self.pending.clear()
                    self._emit(hashes[windows])
                else:
                    # Kept only in case the document turns out to have no anchored shingle.
                    self.pending.append(hashes)
        if n > 1:
            keep = min(n - 1, count)
            self.tail = buf[starts[count - keep] :].decode("utf-8")
            self.tail_count = keep

    def _feed_chars(self, canonical: str) -> None:
        # Chunks of one field are joined by a space, as in the whole field's word text.
        prior = self.tail_count
        if self.tail:
            canonical = f"{self.tail} {canonical}"
            prior += 1
        buf = canonical.encode("utf-8")
        n = self.n
        hashes: _U64 | None = None
        if canonical.isascii():  # one byte a character: the n-grams are the n-byte windows
            count = len(buf)
            if count >= n:
                hashes = hash_windows(self.hash, buf, n, self.prefix)
        else:
            raw = np.frombuffer(buf, dtype=np.uint8)
            starts = np.flatnonzero((raw & 0xC0) != 0x80).astype(np.intp)
            count = len(starts)
            if count >= n:
                bounds = np.append(starts, len(buf))
                hashes = hash_spans(self.hash, buf, bounds[: count - n + 1], bounds[n:], self.prefix)
        self.tokens += count - prior
        if hashes is not None:
            self._emit(hashes)
        if n > 1:
            keep = min(n - 1, count)
            self.tail = canonical[len(canonical) - keep :]
            self.tail_count = keep

    def _emit(self, hashes: _U64) -> None:
        if self.binary:
            hashes = np.unique(hashes)
            if self.seen is not None:
                hashes = np.setdiff1d(hashes, self.seen, assume_unique=True)
                self.seen = np.union1d(self.seen, hashes)
            else:
                self.seen = hashes
        self.tally.add_uniform(hashes, self.weight_q)

    def finish(self) -> None:
        if 0 < self.tokens < self.n:
            buf = self.tail.encode("utf-8")
            self._emit(
                hash_spans(
                    self.hash,
                    buf,
                    np.array([0], np.intp),
                    np.array([len(buf)], np.intp),
                    self.prefix,
                )
            )
        for hashes in self.pending:
            self._emit(hashes)
        self.pending.clear()


class _Normalized(NamedTuple):
    """A non-blank chunk already normalised (:func:`normalize`), and its :func:`word_text` if made."""

    text: str
    word_text: str | None


def _attempt(fn: Callable[..., T], *args: Any) -> T | FingerprintError:
    """``fn(*args)``, or the FingerprintError it raised."""
    try:
        return fn(*args)
    except FingerprintError as exc:
        return exc


class Fingerprinter:
    """Fingerprints documents with one :class:`FingerprintConfig`.

    Build one and reuse it: the jieba tokenizer and IDF dictionary are loaded once per
    process, on first Chinese text (or by :meth:`warm_up`).

    Args:
        config: the settings (defaults to ``FingerprintConfig()``).
        **overrides: settings changed from ``config``, e.g. ``lang="zh"``.
    """

    def __init__(self, config: FingerprintConfig | None = None, /, **overrides: Any) -> None:
        if config is None:
            config = FingerprintConfig(**overrides)
        elif not isinstance(config, FingerprintConfig):
            raise InvalidDocument(f"expected FingerprintConfig, got {_describe(config)}")
        elif overrides:
            config = config.replace(**overrides)
        self._config = config
        self._field_weights = config.field_weights
        self._field_q = {name: quantize(w) for name, w in self._field_weights.items()}
        # Fixed-point weight of one word shingle / char n-gram occurrence per field.
        unit = CHAR_WEIGHT if config.unit == "char" else 1.0
        self._unit_q = {name: quantize(w * unit) for name, w in self._field_weights.items()}
        self.anchors: frozenset[str] = (
            ENGLISH_STOPWORDS if config.anchor_words is None else frozenset(config.anchor_words)
        )
        self._zh = ChineseTerms(
            idf_path=config.idf_path,
            idf_sha256=config.idf_sha256,
            stopwords=config.stopwords,
            hmm=config.hmm,
            top_n=config.top_n,
        )
        self._hash = hash_function(config.hash)
        self._term_hashes: dict[str, int] = {}
        self._chunk_chars = CHUNK_CHARS

    @property
    def config(self) -> FingerprintConfig:
        """The settings."""
        return self._config

    @property
    def identity(self) -> str:
        """``config.identity``: store it next to the fingerprints."""
        return self._config.identity

    def warm_up(self) -> None:
        """Load jieba and the IDF dictionary now (a no-op for ``lang="en"``)."""
        if self._config.lang != "en":
            self._zh.warm_up()

    # -- documents -------------------------------------------------------------------

    def _fields(self, doc: Any, name: str) -> list[tuple[str, Iterable[str]]]:
        if isinstance(doc, str):
            return [("body", self._text_chunks(doc))]
        if isinstance(doc, (bytes, bytearray, memoryview)):
            return [("body", self._text_chunks(_decode(bytes(doc), name, "strict")))]
        if isinstance(doc, Mapping):
            out: list[tuple[str, Iterable[str]]] = []
            for field in sorted(doc, key=lambda k: (not isinstance(k, str), str(k))):
                value = doc[field]
                if field not in self._field_q:
                    raise InvalidDocument(f"unknown field {field!r}; configured fields: {', '.join(self._field_q)}")
                if value is None:
                    continue
                if isinstance(value, (bytes, bytearray, memoryview)):
                    value = _decode(bytes(value), f"field {field!r}", "strict")
                if isinstance(value, str):
                    out.append((field, self._text_chunks(value)))
                elif isinstance(value, (list, tuple)):
                    for item in value:
                        if not isinstance(item, str):
                            raise InvalidDocument(f"expected str in field {field!r}, got {_describe(item)}")
                    # Items are separate paragraphs: a newline keeps shingles from
                    # running across them no more than across lines of a body.
                    out.append((field, self._text_chunks("\n".join(value))))
                else:
                    raise InvalidDocument(f"expected str or list of str in field {field!r}, got {_describe(value)}")
            return out
        raise InvalidDocument(f"expected str, bytes or mapping, got {_describe(doc)}")

    def _text_chunks(self, text: str) -> Iterator[str]:
        return _chunks(text, self._chunk_chars)

    def _split(self, chunk: str) -> tuple[str, str]:
        """(text for jieba, text for word features); word_text cuts runs in the latter."""
        return self._split_normalized(normalize(chunk))

    def _split_normalized(self, norm: str) -> tuple[str, str]:
        """:meth:`_split` of a chunk already normalised."""
        lang = self._config.lang
        if lang == "en":
            return "", norm
        if lang == "zh":
            return cut_runs(join_han(norm)), ""
        han, other = split_scripts(norm)
        return (cut_runs(han) if han else han), other

    def _add_field(self, tally: BitTally, field: str, chunks: Iterable[str | _Normalized]) -> bool:
        """Add one field's features; return whether it had any non-blank text.

        A chunk is raw text, or a non-blank chunk the caller already normalised.
        """
        prefix = b"" if field == "body" else f"{field}:".encode()
        weight = self._unit_q[field]
        words = _WordStream(self, prefix, weight, tally)
        counts: Counter[str] = Counter()
        nonblank = False
        for chunk in chunks:
            made = None
            if isinstance(chunk, _Normalized):
                han, other = self._split_normalized(chunk.text)
                if other is chunk.text:  # no Han text taken out: the word text made is this one's
                    made = chunk.word_text
            elif not chunk or chunk.isspace():
                continue
            else:
                han, other = self._split(chunk)
            nonblank = True
            if other:
                words.feed(word_text(other) if made is None else made)
            if han:
                self._zh.count(han, counts)
        words.finish()
        if counts:
            ranked = self._zh.ranked(counts)
            if ranked:
                p = prefix.decode()
                hashes = np.array(self._term_hash_list([p + t for _, t in ranked] if p else [t for _, t in ranked]),
                                  dtype=np.uint64)
                fw = self._field_weights[field]
                weights = quantize_array([-negative * fw for negative, _ in ranked])
                tally.add_weighted(hashes, weights)
        return nonblank

    def _term_hash_list(self, features: list[str]) -> list[int]:
        """:meth:`_term_hash` of each feature."""
        get = self._term_hashes.get
        hashes = [get(f) for f in features]
        if None in hashes:
            return [self._term_hash(f) for f in features]
        return hashes  # type: ignore[return-value]

    def _term_hash(self, feature: str) -> int:
        # Terms repeat across documents (a vocabulary of at most a few hundred thousand),
        # so their hashes are memoised; the cache is dropped when it gets large.
        h = self._term_hashes.get(feature)
        if h is None:
            if len(self._term_hashes) >= _TERM_CACHE:
                self._term_hashes.clear()
            h = self._term_hashes[feature] = self._hash(feature)
        return h

    def _zh_features(self, prefix: bytes, field_weight: float, counts: Counter[str]) -> list[tuple[str, float]]:
        p = prefix.decode()
        return [(p + t, w * field_weight) for t, w in self._zh.weigh(counts)]

    def fingerprint(self, doc: Document) -> int:
        """Fingerprint of a document, an unsigned int in ``[0, 2**64)``.

        Args:
            doc: text, UTF-8 bytes, or a mapping of configured field names to text (a
                list of strings for a field such as ``headings``; None values are
                skipped).

        Raises:
            InvalidDocument: None or another type, an unknown field.
            DecodeError: bytes that are not UTF-8 (the message names the byte offset).
            EmptyDocument: empty or whitespace-only text.
            NoFeatures: text without any usable feature (e.g. only punctuation).
        """
        return self._fingerprint_fields(self._fields(doc, "<bytes>"), doc)

    def _fingerprint_fields(self, fields: list[tuple[str, Iterable[str]]], doc: Any, name: str | None = None) -> int:
        tally = BitTally()
        nonblank = False
        for field, chunks in fields:
            nonblank |= self._add_field(tally, field, chunks)
        if not nonblank:
            raise EmptyDocument("empty document" if name is None else f"empty document: {name}")
        if tally.features == 0:
            what = name if name is not None else (_preview(doc) if isinstance(doc, str) else "")
            raise NoFeatures(f"document has no usable features: {what}".rstrip(": "))
        return tally.value()

    def fingerprint_stream(
        self,
        stream: IO[bytes] | IO[str],
        *,
        name: str = "<stream>",
        errors: DecodeErrors = "strict",
    ) -> int:
        """Fingerprint a whole binary (UTF-8) or text stream as one ``body``, in chunks.

        Memory stays bounded for any size (with ``weighting="binary"`` the distinct
        shingle hashes are kept, 8 bytes each).

        Args:
            stream: file object opened in binary or text mode.
            name: used in error messages (e.g. the file name).
            errors: ``"strict"`` raises :class:`DecodeError` naming the byte offset of the
                first invalid byte; ``"replace"`` substitutes U+FFFD.
        """
        if errors not in ("strict", "replace"):
            raise InvalidDocument(f"expected errors 'strict' or 'replace', got {errors!r}")
        chunks = self._stream_chunks(stream, name, errors)
        return self._fingerprint_fields([("body", chunks)], None, name)

    def fingerprint_file(self, path: str | os.PathLike[str], *, errors: DecodeErrors = "strict") -> int:
        """Fingerprint a UTF-8 file as one document (streamed, see :meth:`fingerprint_stream`)."""
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidDocument(f"expected a file path, got {_describe(path)}")
        with open(path, "rb") as f:
            return self.fingerprint_stream(f, name=repr(os.fspath(path)), errors=errors)

    def _stream_chunks(self, stream: Any, name: str, errors: DecodeErrors) -> Iterator[str]:
        size = self._chunk_chars
        pending = ""
        carry = b""
        base = 0
        while True:
            block = stream.read(_READ_BYTES)
            if not block:
                break
            if isinstance(block, str):
                pending += block
            elif isinstance(block, (bytes, bytearray)):
                data = carry + bytes(block)
                tail = _incomplete_utf8_tail(data)
                body = data[: len(data) - tail]
                pending += _decode(body, name, errors, base)
                base += len(body)
                carry = data[len(data) - tail :]
            else:
                raise InvalidDocument(f"expected a binary or text stream, got {_describe(block)}")
            while len(pending) > size:
                cut = _cut_point(pending, 0, size)
                if cut <= 0:
                    cut = size
                yield pending[:cut]
                pending = pending[cut:]
        if carry:
            pending += _decode(carry, name, errors, base)
        yield pending

    # -- fingerprint, sketch and band keys at once ----------------------------------

    def fingerprint_sketch_and_bands(self, doc: Document) -> tuple[int, bytes, tuple[int, ...] | None]:
        """``(fingerprint(doc), *sketch_and_bands(doc))``, the text normalised and split once.

        The values are those of :meth:`fingerprint` and
        :func:`~simpg.fingerprint.sketch_and_bands`, bit for bit; what ``simpg dedup``
        computes per document.

        Raises:
            the fingerprint's error (:meth:`fingerprint`), else the sketch's.
        """
        fp, made = self._fingerprint_and_sketch(doc)
        if isinstance(fp, FingerprintError):
            raise fp
        if isinstance(made, FingerprintError):
            raise made
        return fp, made[0], made[1]

    def _fingerprint_and_sketch(
        self, doc: Any
    ) -> tuple[int | FingerprintError, tuple[bytes, tuple[int, ...] | None] | FingerprintError]:
        """The fingerprint and the sketch with band keys of ``doc``, each or its error.

        Both normalise the text (NFKC and case folding, once here) and, for ASCII text, find
        the same words (the sketch hashes them, the fingerprint joins them into its word
        text). Documents this pass does not take (longer than a chunk, fields the config
        does not name, anything not plain text) get the two functions one after the other.
        """
        fp, tokens = self._fingerprint_and_tokens(doc)
        if tokens is None:
            return fp, _attempt(minhash.sketch_and_bands, doc)
        hashes = np.sort(minhash._token_shingles(*tokens))
        if not len(hashes):  # the sketch's own error, with its message
            return fp, _attempt(minhash.sketch_and_bands, doc)
        return fp, minhash._sketch_and_bands_of(hashes, tokens)

    def _fingerprint_and_sketch_many(
        self, docs: list[Any]
    ) -> list[tuple[int | FingerprintError, tuple[bytes, tuple[int, ...] | None] | FingerprintError]]:
        """:meth:`_fingerprint_and_sketch` of each document, the sketches' numpy work done for all together.

        Each document is tokenised on its own (jieba for the fingerprint, words and
        characters for the sketch), then :func:`minhash._batch_sketch_and_bands` makes the
        sketches and band keys of all documents in a few numpy calls: the values are those
        of one document at a time, bit for bit.
        """
        Sketches = tuple[bytes, tuple[int, ...] | None] | None
        fps: list[int | FingerprintError] = []
        sketched: list[Sketches | FingerprintError] = []
        group: list[int] = []
        tokens: list[minhash.Tokens] = []
        size = 0

        def flush() -> None:
            for i, made in zip(group, minhash._batch_sketch_and_bands(tokens), strict=True):
                sketched[i] = made
            group.clear()
            tokens.clear()

        for i, doc in enumerate(docs):
            fp, found = self._fingerprint_and_tokens(doc)
            fps.append(fp)
            sketched.append(None)
            if found is not None:
                group.append(i)
                tokens.append(found)
                # a batch of long texts is sketched in parts: memory stays that of a few texts
                size += len(found[0]) + len(found[2])
                if size >= _SKETCH_TOKENS:
                    flush()
                    size = 0
        flush()
        # the other documents, and those with nothing to sketch: the sketch's own call (its error)
        return [
            (fp, _attempt(minhash.sketch_and_bands, doc) if made is None else made)
            for doc, fp, made in zip(docs, fps, sketched, strict=True)
        ]

    def _fingerprint_and_tokens(
        self, doc: Any
    ) -> tuple[int | FingerprintError, minhash.Tokens | None]:
        """The fingerprint (or its error) and the sketch's tokens of ``doc`` (:data:`minhash.Tokens`).

        None instead of the tokens for a document this pass does not take (see
        :meth:`_fingerprint_and_sketch`).
        """
        fields = self._whole_fields(doc)
        if fields is None:
            return _attempt(self.fingerprint, doc), None
        chunks: list[tuple[str, Iterable[str | _Normalized]]] = []
        # The sketch's word hashes across fields in order (as in the fields joined by
        # newlines), and each field's folded text: with a spaceless character in any field,
        # the tokens are those of the folded fields joined by newlines (minhash._tokens),
        # since a run of words may cross fields.
        words: list[npt.NDArray[np.uint64]] = []
        lengths: list[npt.NDArray[np.int64]] = []
        folded_fields: list[str] = []
        spaceless = False
        word_features = self._config.lang != "zh"
        for field, text in fields:
            if text.isascii():
                norm = text.lower()  # normalize() and the sketch's folding, for ASCII text
                separated = norm.encode("ascii").translate(minhash._ASCII_SPLIT)
                found, word, length = minhash._ascii_word_hashes(separated)
                words.append(found)
                lengths.append(length)
                folded_fields.append(norm)
                # word_text(norm): the same words, one space between them
                made = cut_runs(joined_words(separated, word)) if word_features else None
            else:
                folded = unicodedata.normalize("NFKC", text).casefold()  # the sketch's text
                norm = folded if unicodedata.is_normalized("NFKC", folded) else unicodedata.normalize("NFKC", folded)
                spaceless = spaceless or minhash._SPACELESS_CHARS.search(folded) is not None
                if not spaceless:
                    found, length, _ = minhash._tokens(folded)
                    words.append(found)
                    lengths.append(length)
                folded_fields.append(folded)
                made = None
            if text and not text.isspace():
                chunks.append((field, [_Normalized(norm, made)]))
        fp = _attempt(self._fingerprint_fields, chunks, doc)
        if spaceless:
            tokens = minhash._tokens("\n".join(folded_fields))
        elif len(words) == 1:
            tokens = (words[0], lengths[0], minhash._NO_CHARS)
        else:
            tokens = (np.concatenate(words) if words else minhash._NO_CHARS,
                      np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64), minhash._NO_CHARS)
        return fp, minhash._language_gate(tokens, folded_fields)

    def _whole_fields(self, doc: Any) -> list[tuple[str, str]] | None:
        """``(field, text)`` of a document of one chunk per field, in the sketch's field order.

        None for anything else: longer fields, unknown fields, bytes that are not UTF-8,
        values the sketch refuses.
        """
        if isinstance(doc, str):
            texts = [("body", doc)]
        elif isinstance(doc, (bytes, bytearray)):
            try:
                texts = [("body", bytes(doc).decode("utf-8"))]
            except UnicodeDecodeError:
                return None
        elif isinstance(doc, Mapping):
            texts = []
            if not all(isinstance(k, str) for k in doc):
                return None
            for field in sorted(doc):
                value = doc[field]
                if field not in self._field_q:
                    return None
                if value is None:
                    continue
                if isinstance(value, str):
                    texts.append((field, value))
                elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                    texts.append((field, "\n".join(value)))
                else:
                    return None
        else:
            return None
        return None if any(len(text) > self._chunk_chars for _, text in texts) else texts

    # -- features --------------------------------------------------------------------

    def features(self, doc: Document) -> list[tuple[str, float]]:
        """The document's features as ``(feature string, weight)`` pairs.

        This is a readable, unvectorised reference: ``fingerprint_features(features(doc))``
        equals ``fingerprint(doc)``. Word features come in order of first occurrence,
        Chinese terms heaviest first, fields in name order.
        """
        cfg = self._config
        weights = self._field_weights
        out: list[tuple[str, float]] = []
        for field, chunks in self._fields(doc, "<bytes>"):
            text = "".join(chunks)
            prefix = "" if field == "body" else f"{field}:"
            han, other = self._split(text)
            canonical = word_text(other)
            tokens = canonical.split(" ") if canonical else []
            if cfg.unit == "char":
                feats = char_ngrams(canonical, cfg.ngram)
            elif cfg.anchored:
                feats = anchored_shingles(tokens, cfg.ngram, self.anchors)
            else:
                feats = shingles(tokens, cfg.ngram)
            counts = Counter(feats)
            # The exact fixed-point weight of one occurrence, as the fast path uses it.
            unit = self._unit_q[field] / QUANTUM
            for feat in dict.fromkeys(feats):
                out.append((prefix + feat, unit if cfg.weighting == "binary" else counts[feat] * unit))
            if han:
                out.extend(self._zh_features(prefix.encode(), weights[field], self._zh.count(han)))
        return out

    def fingerprint_features(self, pairs: Iterable[tuple[str | bytes | int, float]]) -> int:
        """Fingerprint of caller-made features: ``(feature, weight)`` pairs.

        A feature is a ``str`` (hashed as UTF-8 with the configured hash), ``bytes``, or an
        ``int`` taken as an already computed unsigned 64-bit feature hash. Weights are
        numbers in ``[0, 2**40)``; repeated features simply add up.

        Raises:
            NoFeatures: no pairs, or all weights zero.
            InvalidDocument: a malformed pair, feature or weight (the message names it).
        """
        if pairs is None or isinstance(pairs, (str, bytes, Mapping)):
            raise InvalidDocument(f"expected iterable of (feature, weight) pairs, got {_describe(pairs)}")
        tally = BitTally()
        hashes: list[int] = []
        weights: list[int] = []
        fn = self._hash
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise InvalidDocument(f"expected (feature, weight) pair, got {_describe(pair)}")
            feature, weight = pair
            if isinstance(feature, (str, bytes)):
                hashes.append(fn(feature))
            elif isinstance(feature, int) and not isinstance(feature, bool):
                try:
                    hashes.append(check(feature))
                except InvalidFingerprint:
                    raise InvalidDocument(f"expected 64-bit feature hash, got {feature!r}") from None
            else:
                raise InvalidDocument(f"expected str, bytes or int feature, got {_describe(feature)}")
            weights.append(quantize(weight))
            if len(hashes) >= _FEATURE_BLOCK:
                tally.add_weighted(np.array(hashes, np.uint64), np.array(weights, np.int64))
                hashes.clear()
                weights.clear()
        tally.add_weighted(np.array(hashes, np.uint64), np.array(weights, np.int64))
        return tally.value()
