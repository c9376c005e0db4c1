"""Documents from a folder of text files, a JSONL file or a CSV file, read as a stream.

Each document keeps where it came from (``source``): the file path for a folder, else
``file.jsonl:LINE`` or ``file.csv:ROW`` (the data row, from 1). A folder's file gets its
name without the extension as its title (``notes/a.txt`` -> ``a``; shown, not fingerprinted), and a ``.gz`` file is
read decompressed (``man1/ls.1.gz`` -> title ``ls``); :func:`folder_files` says which
files a glob leaves out, so the CLI can say so. Files must be UTF-8
(a leading BOM is ignored); anything else is an error naming the file and the byte
offset, never a silently mangled document, unless ``errors`` asks to replace bad bytes
with U+FFFD or to skip the documents that hold them.

Files that cannot be opened are reported in one wording everywhere in the CLI,
``cannot read 'PATH': REASON`` (:func:`cannot_read`, :func:`cannot_write`).

Example:
    >>> from simpg.corpus import read_documents
    >>> docs = list(read_documents("examples/corpus"))  # doctest: +SKIP
    >>> docs[0].source  # doctest: +SKIP
    'examples/corpus/en-cookies-1.txt'
"""

from __future__ import annotations

import codecs
import csv
import errno
import gzip
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from simpg.exc import SimpgError

__all__ = ["DEFAULT_GLOB", "ERRORS", "TEXT_COLUMNS", "Document", "UnreadableText", "cannot_read", "cannot_write",
           "count_inputs", "file_title", "folder_files", "kind_of", "open_input", "open_output", "read_documents",
           "read_lines", "read_text"]

#: Files of a folder that are documents, unless --glob says otherwise.
DEFAULT_GLOB = "**/*.txt"
#: Columns (JSONL keys) tried in order for the text when none is named.
TEXT_COLUMNS = ("text", "body", "content")
_BOM = codecs.BOM_UTF8
_BLOCK = 1 << 16
#: What to do with a document that is not valid UTF-8: fail, use U+FFFD, or leave it out.
ERRORS = ("strict", "replace", "skip")
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes kept by surrogateescape: invalid UTF-8


class UnreadableText(SimpgError):
    """A document that is not UTF-8 text (invalid bytes, or a NUL byte)."""


def _reason(err: OSError | str) -> str:
    return err if isinstance(err, str) else (err.strerror or str(err))


def cannot_read(path: str | os.PathLike[str], err: OSError | str) -> SimpgError:
    """The CLI's one wording for an input that cannot be opened or read."""
    return SimpgError(f"cannot read {os.fspath(path)!r}: {_reason(err)}")


def cannot_write(path: str | os.PathLike[str], err: OSError | str) -> SimpgError:
    """The CLI's one wording for an output that cannot be written."""
    return SimpgError(f"cannot write {os.fspath(path)!r}: {_reason(err)}")


def open_input(path: str | os.PathLike[str]) -> IO[bytes]:
    """``open(path, "rb")``, failing with :func:`cannot_read`."""
    try:
        return open(path, "rb")
    except OSError as err:
        raise cannot_read(path, err) from None


def open_output(path: str | os.PathLike[str]) -> IO[str]:
    """``path`` opened for writing UTF-8 text, failing with :func:`cannot_write`."""
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as err:
        raise cannot_write(path, err) from None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes; a ``.gz`` file's decompressed (read like the text it holds)."""
    try:
        data = path.read_bytes()
        return gzip.decompress(data) if path.suffix.lower() == ".gz" else data
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise cannot_read(path, f"not a valid gzip file ({err})") from None
    except OSError as err:
        raise cannot_read(path, err) from None


def file_title(path: Path) -> str:
    """A file's title: its name without the extension (and without ``.gz``)."""
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    return Path(name).stem or name


@dataclass(frozen=True)
class Document:
    """One document to fingerprint and load."""

    source: str
    body: str
    title: str | None = None  #: fingerprinted with the body (weight of a title)
    #: a folder file's name without extension: stored and shown as the title when there is
    #: none, never fingerprinted (renaming a file does not change what it says)
    name: str | None = None

    @property
    def display_title(self) -> str | None:
        """The title, else the file's name: what the table's title column and the reports show."""
        return self.title or self.name


def kind_of(path: str | os.PathLike[str]) -> str:
    """``"folder"``, ``"jsonl"`` or ``"csv"``, from what ``path`` is."""
    p = Path(path)
    if p.is_dir():
        return "folder"
    if not p.exists():
        raise cannot_read(path, os.strerror(errno.ENOENT))
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    raise SimpgError(
        f"cannot read {os.fspath(path)}: expected a folder, a .jsonl file or a .csv file"
    )


def _visible(folder: Path, path: Path) -> bool:
    return path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts)


def _folder_files(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.glob(pattern) if _visible(folder, p))


def folder_files(folder: str | os.PathLike[str], pattern: str = DEFAULT_GLOB) -> tuple[list[Path], list[Path]]:
    """The files of ``folder`` that ``pattern`` takes, and the other (not hidden) files it leaves out."""
    root = Path(folder)
    taken = _folder_files(root, pattern)
    chosen = set(taken)
    return taken, sorted(p for p in root.glob("**/*") if p not in chosen and _visible(root, p))


def count_inputs(path: str | os.PathLike[str], pattern: str = DEFAULT_GLOB) -> int | None:
    """How many documents a folder holds (for a progress bar); None for single files."""
    if kind_of(path) != "folder":
        return None
    return len(_folder_files(Path(path), pattern))


def _decode(data: bytes, name: str, base: int = 0) -> str:
    if base == 0 and data.startswith(_BOM):
        data, base = data[len(_BOM):], len(_BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnreadableText(
            f"{name}: invalid utf-8 at byte offset {base + err.start} (byte 0x{data[err.start]:02x})"
        ) from None
    if "\x00" in text:
        offset = base + len(text[: text.index("\x00")].encode("utf-8"))
        raise UnreadableText(f"{name}: not a text file (NUL byte at offset {offset})")
    return text


def read_text(path: str | os.PathLike[str]) -> str:
    """A whole UTF-8 text file (errors name the file and byte offset)."""
    return _decode(_read_bytes(Path(path)), os.fspath(path))


def read_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of a UTF-8 file, or of stdin for ``"-"``, decoded strictly, streamed.

    Invalid UTF-8 is an :class:`UnreadableText` naming the file (``<stdin>``) and the
    byte offset; a file that cannot be opened, :func:`cannot_read`.
    """
    if os.fspath(path) == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # a text stream without bytes underneath (tests, embedding)
            yield from sys.stdin
            return
        yield from _lines(buffer, "<stdin>")
        return
    with open_input(path) as f:
        try:
            yield from _lines(f, os.fspath(path))
        except OSError as err:
            raise cannot_read(path, err) from None


def _text_chunks(stream: IO[bytes], name: str, errors: str = "strict") -> Iterator[str]:
    """Decode a binary stream in blocks, naming the absolute offset of any bad byte.

    ``errors`` other than strict are the codec's: ``replace`` (U+FFFD) or
    ``surrogateescape`` (bad bytes kept as U+DC80..U+DCFF, found later by ``_ESCAPED``).
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    fed = 0  # bytes given to the decoder so far
    while True:
        block = stream.read(_BLOCK)
        final = not block
        if fed == 0 and block.startswith(_BOM):
            block, fed = block[len(_BOM):], len(_BOM)
        held = len(decoder.getstate()[0])  # bytes of an unfinished character, from before
        try:
            text = decoder.decode(block, final=final)
        except UnicodeDecodeError as err:
            raise UnreadableText(
                f"{name}: invalid utf-8 at byte offset {fed - held + err.start} "
                f"(byte 0x{err.object[err.start]:02x})"
            ) from None
        if "\x00" in text:
            raise UnreadableText(f"{name}: not a text file (NUL byte)")
        fed += len(block)
        if text:
            yield text
        if final:
            return


def _lines(stream: IO[bytes], name: str, errors: str = "strict") -> Iterator[str]:
    carry = ""
    for chunk in _text_chunks(stream, name, errors):
        carry += chunk
        *complete, carry = carry.split("\n")
        for line in complete:
            yield line + "\n"
    if carry:
        yield carry


def _pick(columns: list[str], wanted: str | None, what: str, name: str, fallbacks: tuple[str, ...]) -> str | None:
    if wanted is not None:
        if wanted not in columns:
            raise SimpgError(f"{name}: no {what} column {wanted!r} (columns: {', '.join(columns)})")
        return wanted
    for candidate in fallbacks:
        if candidate in columns:
            return candidate
    return None


OnSkip = Callable[[str, str], None]


def _codec_errors(errors: str) -> str:
    if errors not in ERRORS:
        raise SimpgError(f"errors must be one of {', '.join(ERRORS)}, got {errors!r}")
    return "surrogateescape" if errors == "skip" else errors


def _usable(doc: Document, errors: str, on_skip: OnSkip | None) -> Document | None:
    """``doc``, or None (reported to ``on_skip``) when --errors skip meets a bad byte in it."""
    if errors == "skip" and (_ESCAPED.search(doc.body) or (doc.title and _ESCAPED.search(doc.title))):
        if on_skip is not None:
            on_skip(doc.source, "invalid utf-8")
        return None
    return doc


def _read_folder(folder: Path, pattern: str, errors: str = "strict",
                 on_skip: OnSkip | None = None) -> Iterator[Document]:
    files = _folder_files(folder, pattern)
    if not files:
        raise SimpgError(f"no documents in {folder} (no files match {pattern!r})")
    for path in files:
        name = os.fspath(path)
        data = _read_bytes(path)
        try:
            body = _decode(data, name)
        except UnreadableText as err:
            if errors == "strict" or (errors == "replace" and "NUL byte" in str(err)):
                raise
            if errors == "skip":
                if on_skip is not None:
                    on_skip(name, str(err).removeprefix(f"{name}: "))
                continue
            body = data.removeprefix(_BOM).decode("utf-8", "replace")  # as fingerprint --errors replace
        yield Document(source=name, body=body, name=file_title(path))


def _read_jsonl(path: Path, text_column: str | None, title_column: str | None,
                errors: str = "strict", on_skip: OnSkip | None = None) -> Iterator[Document]:
    name = os.fspath(path)
    with open_input(path) as f:
        for number, line in enumerate(_lines(f, name, _codec_errors(errors)), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as err:
                raise SimpgError(f"{name}:{number}: invalid json: {err}") from None
            if not isinstance(obj, dict):
                raise SimpgError(f"{name}:{number}: expected a json object, got {type(obj).__name__}")
            keys = list(obj)
            text_key = _pick(keys, text_column, "text", f"{name}:{number}", TEXT_COLUMNS)
            if text_key is None:
                raise SimpgError(f"{name}:{number}: no text field (tried {', '.join(TEXT_COLUMNS)}); "
                                 "name it with --text-column")
            body = obj[text_key]
            if not isinstance(body, str):
                raise SimpgError(f"{name}:{number}: field {text_key!r} is not a string: {body!r:.60}")
            title_key = _pick(keys, title_column, "title", f"{name}:{number}", ("title",))
            title = obj.get(title_key) if title_key else None
            doc = _usable(Document(source=f"{name}:{number}", body=body,
                                   title=title if isinstance(title, str) else None), errors, on_skip)
            if doc is not None:
                yield doc


def _read_csv(path: Path, text_column: str | None, title_column: str | None,
              errors: str = "strict", on_skip: OnSkip | None = None) -> Iterator[Document]:
    name = os.fspath(path)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
    with open_input(path) as f:
        reader = csv.reader(_lines(f, name, _codec_errors(errors)), dialect=dialect)
        header = next(reader, None)
        if header is None:
            raise SimpgError(f"{name}: empty csv file (no header row)")
        text_key = _pick(header, text_column, "text", name, TEXT_COLUMNS)
        if text_key is None:
            raise SimpgError(f"{name}: no text column (tried {', '.join(TEXT_COLUMNS)}); "
                             f"name one with --text-column (columns: {', '.join(header)})")
        title_key = _pick(header, title_column, "title", name, ("title",))
        text_at = header.index(text_key)
        title_at = header.index(title_key) if title_key else None
        for number, row in enumerate(reader, start=1):
            if not row:
                continue
            if len(row) <= text_at:
                raise SimpgError(f"{name}:{number}: row has {len(row)} fields, no {text_key!r}")
            title = row[title_at] if title_at is not None and title_at < len(row) else None
            doc = _usable(Document(source=f"{name}:{number}", body=row[text_at], title=title or None),
                          errors, on_skip)
            if doc is not None:
                yield doc


def read_documents(path: str | os.PathLike[str], *, pattern: str = DEFAULT_GLOB,
                   text_column: str | None = None, title_column: str | None = None,
                   errors: str = "strict", on_skip: OnSkip | None = None) -> Iterator[Document]:
    """Stream the documents of a folder, JSONL file or CSV file.

    Args:
        path: a folder (every file matching ``pattern``, hidden ones skipped, in path
            order), a ``.jsonl`` file (one object per line) or a ``.csv``/``.tsv`` file
            with a header row.
        pattern: glob of the folder's document files.
        text_column: JSONL key or CSV column of the text (default: text, body, content).
        title_column: key or column of the title (default: title, when present).
        errors: invalid UTF-8 is an error (``"strict"``, the default), becomes U+FFFD
            (``"replace"``, as ``simpg fingerprint --errors replace``), or leaves its
            document out (``"skip"``: a folder's file, including one with NUL bytes, or
            a JSONL line or CSV row), calling ``on_skip(source, reason)``.
        on_skip: called for each document left out by ``errors="skip"``.

    Raises:
        SimpgError: a missing path, an empty folder, invalid UTF-8 (naming the file and
            byte offset), invalid JSON, a missing text column.
    """
    kind = kind_of(path)
    _codec_errors(errors)
    p = Path(path)
    if kind == "folder":
        return _read_folder(p, pattern, errors, on_skip)
    if kind == "jsonl":
        return _read_jsonl(p, text_column, title_column, errors, on_skip)
    return _read_csv(p, text_column, title_column, errors, on_skip)
