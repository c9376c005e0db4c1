"""``register_simpg(conn)``: check that simpg is installed and teach psycopg :class:`Fingerprint`.

psycopg sends a plain Python int by its value, so an unsigned fingerprint ``>= 2**63``
would go out as numeric and never equal a bigint column. Wrapping it in
:class:`Fingerprint` sends the signed bigint with the same bits instead. The dumpers
are registered for that class only: a loader on int8 would change every bigint the
connection reads (psycopg loaders are keyed by type OID), so results stay signed and
:func:`simpg.from_db` maps them back.

Example:
    >>> import psycopg
    >>> from simpg.psycopg import Fingerprint, register_simpg
    >>> conn = psycopg.connect("dbname=app")  # doctest: +SKIP
    >>> register_simpg(conn)  # doctest: +SKIP
    >>> conn.execute("SELECT %s::bigint", [Fingerprint(2**63)]).fetchone()  # doctest: +SKIP
    (-9223372036854775808,)
"""

from __future__ import annotations

import struct
from typing import Any

from psycopg.adapt import Dumper
from psycopg.pq import Format

from simpg import bits, schema
from simpg.exc import ExtensionNotInstalled

__all__ = ["Fingerprint", "register_simpg", "register_simpg_async"]

_INT8_OID = 20
_INT8 = struct.Struct(">q")


class Fingerprint(int):
    """An unsigned 64-bit fingerprint that psycopg sends as PostgreSQL's signed bigint."""

    __slots__ = ()

    def __new__(cls, value: int) -> Fingerprint:
        """Check ``value`` (unsigned, below 2**64) and wrap it."""
        return super().__new__(cls, bits.check(value))

    def __repr__(self) -> str:
        return f"Fingerprint({int(self)})"

    @property
    def db(self) -> int:
        """The signed bigint PostgreSQL stores."""
        return bits.to_db(self)


class FingerprintDumper(Dumper):
    """Text form of :class:`Fingerprint`: the signed bigint."""

    oid = _INT8_OID

    def dump(self, obj: Any) -> bytes:
        return str(bits.to_db(obj)).encode()


class FingerprintBinaryDumper(Dumper):
    """Binary form of :class:`Fingerprint`: the signed bigint."""

    format = Format.BINARY
    oid = _INT8_OID

    def dump(self, obj: Any) -> bytes:
        return _INT8.pack(bits.to_db(obj))


def _register(context: Any) -> None:
    adapters = context.adapters
    dumpers: tuple[type[Dumper], ...] = (FingerprintDumper, FingerprintBinaryDumper)
    for dumper in dumpers:
        adapters.register_dumper(Fingerprint, dumper)


def register_simpg(context: Any) -> None:
    """Register :class:`Fingerprint` on a connection (or cursor) whose database has simpg.

    Raises:
        ExtensionNotInstalled: simpg is not installed in the connected database.
    """
    conn = getattr(context, "connection", context)
    schema.require_installed(conn)
    _register(context)


async def register_simpg_async(context: Any) -> None:
    """:func:`register_simpg` for an async connection (or cursor)."""
    conn = getattr(context, "connection", context)
    cur = await conn.execute(
        "SELECT 1 FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n "
        "ON n.oid = p.pronamespace WHERE n.nspname = 'simpg' AND p.proname = 'hamming'")
    if await cur.fetchone() is None:
        raise ExtensionNotInstalled(
            "simpg is not installed in this database; run 'CREATE EXTENSION simpg' "
            "(files: 'simpg install-extension'), or 'simpg install --dsn ...', or op.install_simpg()"
        )
    _register(context)
