"""PostgreSQL's binary formats, built and read with numpy: COPY streams, ``bigint[]``, bytea.

What the handles send and read in bulk without a Python loop per value:

* :func:`binary_copy_payload`: a whole binary ``COPY FROM STDIN`` stream of bigint
  columns (``SimHashColumn.add``);
* :class:`Int8Array`: a ``bigint[]`` parameter already in the binary array format
  (the lookups' range starts, ``near_many``'s arrays), sent by
  :class:`Int8ArrayBinaryDumper` once :func:`register_dumpers` taught a connection;
* :class:`RawByteaLoader`, :func:`parse_fetch` and :func:`parse_sketched`: ``fetch_all``'s
  (and the sketch-confirmed pairs' and clusters') aggregated bytea values back to numpy arrays.

Nothing here runs a statement.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

__all__ = [
    "INT8_ARRAY_HEADER",
    "Int8Array",
    "Int8ArrayBinaryDumper",
    "RawByteaLoader",
    "binary_copy_payload",
    "int8_array_header",
    "parse_fetch",
    "parse_sketched",
    "register_dumpers",
]

_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"

#: struct format of the header of a one-dimensional binary array.
INT8_ARRAY_HEADER = ">iiiii"


def binary_copy_payload(columns: Sequence[np.ndarray]) -> bytes:
    """A whole binary COPY stream of NOT NULL bigint columns (int64 arrays)."""
    n = len(columns[0]) if columns else 0
    fields: list[tuple[str, str]] = [("nfields", ">i2")]
    for c in range(len(columns)):
        fields += [(f"len{c}", ">i4"), (f"v{c}", ">i8")]
    rows = np.empty(n, dtype=np.dtype(fields))
    rows["nfields"] = len(columns)
    for c, values in enumerate(columns):
        rows[f"len{c}"] = 8
        rows[f"v{c}"] = values
    return _COPY_SIGNATURE + b"\x00" * 8 + rows.tobytes() + b"\xff\xff"


def int8_array_header(n: int) -> tuple[int, int, int, int, int]:
    """Header of a binary ``bigint[]`` of ``n`` elements.

    ndim 1, no nulls, element type int8 (oid 20), then the length and lower bound 1.
    """
    return (1, 0, 20, n, 1)


class Int8Array:
    """A ``bigint[]`` parameter, already in PostgreSQL's binary array format.

    Built from an int64 numpy array without a Python loop, or by
    :meth:`RangeMaker.lows_array <simpg.psycopg.ranges.RangeMaker.lows_array>`. Needs
    :class:`Int8ArrayBinaryDumper` registered (:func:`register_dumpers`).
    """

    __slots__ = ("payload",)

    def __init__(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=np.int64)
        n = len(values)
        header = struct.pack(INT8_ARRAY_HEADER, *int8_array_header(n))
        items = np.empty(n, dtype=[("len", ">i4"), ("v", ">i8")])
        items["len"] = 8
        items["v"] = values
        self.payload = header + items.tobytes()

    @classmethod
    def from_payload(cls, payload: bytes) -> Int8Array:
        """Wrap bytes that are already a binary ``bigint[]``."""
        array = cls.__new__(cls)
        array.payload = payload
        return array


class Int8ArrayBinaryDumper(Dumper):
    """Dump :class:`Int8Array` as the ``bigint[]`` it holds."""

    format = Format.BINARY
    oid = 1016  # int8[]

    def dump(self, obj: Int8Array) -> bytes:
        """The payload as it is."""
        return obj.payload


def register_dumpers(conn: Any) -> None:
    """Teach ``conn`` (sync or async) to send :class:`Int8Array` parameters.

    Only objects of that class are affected, so this is safe on a caller's connection.
    """
    conn.adapters.register_dumper(Int8Array, Int8ArrayBinaryDumper)


class RawByteaLoader(Loader):
    """Load bytea as the raw bytes of the binary protocol (registered on one cursor only)."""

    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        """The bytes as they came."""
        return bytes(data)


def parse_fetch(ids: Any, fps: Any, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Numpy arrays from one :func:`~simpg.psycopg.statements.fetch_sql` row (bytea loaded as raw bytes)."""
    fp_arr = np.frombuffer(fps or b"", dtype=">i8").astype(np.int64).view(np.uint64)
    if integer:
        id_arr = np.frombuffer(ids or b"", dtype=">i8").astype(np.int64)
    else:
        id_arr = np.empty(len(fp_arr), dtype=object)
        id_arr[:] = list(ids or [])
    return id_arr, fp_arr


#: Bytes of one ``varbit_send`` value of a ``bit(256)`` sketch: the bit count (int4), then 32 bytes.
SKETCH_RECORD = 4 + 32


def parse_sketched(row: Sequence[Any], integer: bool, bands: int,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Numpy arrays from one :func:`~simpg.psycopg.statements.fetch_sketched_sql` row.

    ``(ids, fingerprints, sketches, band keys, NULL flags)``: sketches as ``(n, 32)``
    ``uint8``, band keys as ``(n, bands)`` ``int64``, the flags as int16 (bit ``i``: band
    ``i`` is NULL). Raises ValueError naming the bit count of a sketch that is not 256 bits.
    """
    ids, fps = parse_fetch(row[0], row[1], integer)
    n = len(fps)
    raw = np.frombuffer(row[2] or b"", dtype=np.uint8)
    records = raw.reshape(n, SKETCH_RECORD) if len(raw) == n * SKETCH_RECORD else None
    if records is None or bool(np.any(np.ascontiguousarray(records[:, :4]).view(">i4") != 256)):
        at = 0
        while at + 4 <= len(raw):  # the first sketch of another length, for the message
            count = int.from_bytes(bytes(raw[at:at + 4]), "big")
            if count != 256:
                raise ValueError(f"a sketch of {count} bits")
            at += SKETCH_RECORD
        raise ValueError("sketches of another length")
    sketches = np.ascontiguousarray(records[:, 4:])
    keys = np.empty((n, bands), dtype=np.int64)
    for b in range(bands):
        keys[:, b] = np.frombuffer(row[3 + b] or b"", dtype=">i8")
    nulls = (np.frombuffer(row[3 + bands] or b"", dtype=">i2").astype(np.int16) if bands
             else np.zeros(n, dtype=np.int16))
    return ids, fps, sketches, keys, nulls
