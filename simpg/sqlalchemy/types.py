"""The ``SimHash`` column type: unsigned fingerprints in Python, signed bigint in PostgreSQL.

Example:
    >>> from sqlalchemy import Column, MetaData, Table, select
    >>> t = Table("docs", MetaData(), Column("simhash", SimHash()))
    >>> print(select(t).where(t.c.simhash.distance(2**64 - 1) <= 3))
    SELECT docs.simhash
    FROM docs
    WHERE simpg.hamming(docs.simhash, :param_1) <= :hamming_1
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, type_coerce
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeDecorator

from simpg import bits
from simpg.sqlalchemy.functions import hamming

__all__ = ["SimHash"]


class SimHash(TypeDecorator[int]):
    """A 64-bit SimHash fingerprint stored in a PostgreSQL ``bigint``.

    Python sees unsigned integers in ``[0, 2**64)``; the database stores the same 64
    bits as a signed bigint. The mapping is :func:`simpg.bits.to_db` /
    :func:`simpg.bits.from_db`, so a fingerprint >= 2**63 is negative in SQL.

    Columns of this type get ``.distance(q)`` and ``.within(q, k)``.
    """

    impl = BigInteger
    cache_ok = True

    class Comparator(TypeDecorator.Comparator[int]):
        """``distance`` and ``within`` on SimHash columns."""

        def distance(self, other: Any) -> ColumnElement[int]:
            """``simpg.hamming(column, other)``: the number of differing bits.

            Args:
                other: an unsigned fingerprint (int) or a SQL expression (another column).
            """
            return hamming(self.expr, _operand(other))

        def within(self, other: Any, k: int) -> ColumnElement[bool]:
            """Rows whose fingerprint differs from ``other`` in at most ``k`` bits, via the indexes.

            Needs a :func:`simpg.sqlalchemy.simhash_index` on the column. Builds the OR of
            the layout's prefix ranges (B-tree range scans, a BitmapOr in PostgreSQL)
            and the exact filter ``simpg.hamming(column, other) <= k``.

            Args:
                other: an unsigned fingerprint (int), or a SQL expression such as another
                    row's column in a self-join.
                k: the radius, from 0 to the index's k.
            """
            from simpg.sqlalchemy.index import within_clause

            return within_clause(self.expr, other, k)

    comparator_factory = Comparator

    def process_bind_param(self, value: Any, dialect: Any) -> int | None:
        """Unsigned fingerprint -> signed bigint (None stays None)."""
        return None if value is None else bits.to_db(value)

    def process_literal_param(self, value: Any, dialect: Any) -> str:
        """Render a fingerprint inline (``literal_binds``) as its signed bigint."""
        return "NULL" if value is None else str(bits.to_db(value))

    def process_result_value(self, value: Any, dialect: Any) -> int | None:
        """Signed bigint -> unsigned fingerprint (None stays None)."""
        return None if value is None else bits.from_db(value)

    @property
    def python_type(self) -> type[int]:
        """Fingerprints are Python ints."""
        return int


def _operand(other: Any) -> Any:
    """A fingerprint operand: expressions pass through, Python values become SimHash binds."""
    if isinstance(other, ColumnElement) or hasattr(other, "__clause_element__"):
        return other
    # check here, so a bad value fails where the query is built, naming the value
    bits.check(other)
    return type_coerce(other, SimHash())
