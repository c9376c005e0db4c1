"""Documents from a folder of text files, a JSONL file or a CSV file, read as a stream.

Each document keeps where it came from (``source``): the file path for a folder, else
``file.jsonl:LINE`` or ``file.csv:ROW`` (the data row, from 1). Files must be UTF-8
(a leading BOM is ignored); anything else is an error naming the file and the byte
offset, never a silently mangled document.

Example:
    >>> from simpg.corpus import read_documents
    >>> docs = list(read_documents("examples/corpus"))  # doctest: +SKIP
    >>> docs[0].source  # doctest: +SKIP
    'examples/corpus/en-cookies-1.txt'
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from simpg.exc import SimpgError

__all__ = ["DEFAULT_GLOB", "TEXT_COLUMNS", "Document", "count_inputs", "kind_of", "read_documents", "read_text"]

#: Files of a folder that are documents, unless --glob says otherwise.
DEFAULT_GLOB = "**/*.txt"
#: Columns (JSONL keys) tried in order for the text when none is named.
TEXT_COLUMNS = ("text", "body", "content")
_BOM = codecs.BOM_UTF8
_BLOCK = 1 << 16


@dataclass(frozen=True)
class Document:
    """One document to fingerprint and load."""

    source: str
    body: str
    title: str | None = None


def kind_of(path: str | os.PathLike[str]) -> str:
    """``"folder"``, ``"jsonl"`` or ``"csv"``, from what ``path`` is."""
    p = Path(path)
    if p.is_dir():
        return "folder"
    if not p.exists():
        raise SimpgError(f"no such file or folder: {os.fspath(path)}")
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    raise SimpgError(
        f"cannot read {os.fspath(path)}: expected a folder, a .jsonl file or a .csv file"
    )


def _folder_files(folder: Path, pattern: str) -> list[Path]:
    files = sorted(p for p in folder.glob(pattern)
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    return files


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
        raise SimpgError(
            f"{name}: invalid utf-8 at byte offset {base + err.start} (byte 0x{data[err.start]:02x})"
        ) from None
    if "\x00" in text:
        offset = base + len(text[: text.index("\x00")].encode("utf-8"))
        raise SimpgError(f"{name}: not a text file (NUL byte at offset {offset})")
    return text


def read_text(path: str | os.PathLike[str]) -> str:
    """A whole UTF-8 text file (errors name the file and byte offset)."""
    return _decode(Path(path).read_bytes(), os.fspath(path))


def _text_chunks(stream: IO[bytes], name: str) -> Iterator[str]:
    """Decode a binary stream in blocks, naming the absolute offset of any bad byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
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
            raise SimpgError(
                f"{name}: invalid utf-8 at byte offset {fed - held + err.start} "
                f"(byte 0x{err.object[err.start]:02x})"
            ) from None
        if "\x00" in text:
            raise SimpgError(f"{name}: not a text file (NUL byte)")
        fed += len(block)
        if text:
            yield text
        if final:
            return


def _lines(stream: IO[bytes], name: str) -> Iterator[str]:
    carry = ""
    for chunk in _text_chunks(stream, name):
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


def _read_folder(folder: Path, pattern: str) -> Iterator[Document]:
    files = _folder_files(folder, pattern)
    if not files:
        raise SimpgError(f"no documents in {folder} (no files match {pattern!r})")
    for path in files:
        yield Document(source=os.fspath(path), body=_decode(path.read_bytes(), os.fspath(path)))


def _read_jsonl(path: Path, text_column: str | None, title_column: str | None) -> Iterator[Document]:
    name = os.fspath(path)
    with open(path, "rb") as f:
        for number, line in enumerate(_lines(f, name), start=1):
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
            yield Document(source=f"{name}:{number}", body=body,
                           title=title if isinstance(title, str) else None)


def _read_csv(path: Path, text_column: str | None, title_column: str | None) -> Iterator[Document]:
    name = os.fspath(path)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
    with open(path, "rb") as f:
        reader = csv.reader(_lines(f, name), dialect=dialect)
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
            yield Document(source=f"{name}:{number}", body=row[text_at], title=title or None)


def read_documents(path: str | os.PathLike[str], *, pattern: str = DEFAULT_GLOB,
                   text_column: str | None = None, title_column: str | None = None) -> Iterator[Document]:
    """Stream the documents of a folder, JSONL file or CSV file.

    Args:
        path: a folder (every file matching ``pattern``, hidden ones skipped, in path
            order), a ``.jsonl`` file (one object per line) or a ``.csv``/``.tsv`` file
            with a header row.
        pattern: glob of the folder's document files.
        text_column: JSONL key or CSV column of the text (default: text, body, content).
        title_column: key or column of the title (default: title, when present).

    Raises:
        SimpgError: a missing path, an empty folder, invalid UTF-8 (naming the file and
            byte offset), invalid JSON, a missing text column.
    """
    kind = kind_of(path)
    p = Path(path)
    if kind == "folder":
        return _read_folder(p, pattern)
    if kind == "jsonl":
        return _read_jsonl(p, text_column, title_column)
    return _read_csv(p, text_column, title_column)
