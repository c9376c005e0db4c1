"""The ``SimHash`` column type: unsigned fingerprints in Python, signed bigint in PostgreSQL.

Its comparator's ``within`` builds the query through a declared index
(:func:`within_clause`), so this module imports :mod:`simpg.sqlalchemy.index`; the
index declarations do not need the type (they accept ``BigInteger`` columns too) and
import nothing from here.

Example:
    >>> from sqlalchemy import Column, MetaData, Table, select
    >>> t = Table("docs", MetaData(), Column("simhash", SimHash()))
    >>> print(select(t).where(t.c.simhash.distance(2**64 - 1) <= 3))
    SELECT docs.simhash
    FROM docs
    WHERE simpg.hamming(docs.simhash, :param_1) <= :hamming_1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.types.numeric import Int8
from sqlalchemy import BigInteger, Boolean, bindparam, type_coerce
from sqlalchemy.dialects.postgresql import ARRAY, BIT
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal
from sqlalchemy.types import TypeDecorator

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint.minhash import from_sql, to_sql
from simpg.layout import check_radius
from simpg.sqlalchemy.functions import hamming, sketch_distance
from simpg.sqlalchemy.index import SimHashIndex, index_for, layout_guard

__all__ = ["BigintArray", "Passages", "SimHash", "Sketch", "within_clause"]

_PSYCOPG = ("psycopg", "psycopg_async")


class Sketch(TypeDecorator[bytes]):
    """A document's 256-bit sketch (:mod:`simpg.fingerprint.minhash`) in a PostgreSQL ``bit(256)``.

    Python sees the 32 bytes :func:`simpg.fingerprint.sketch` returns; SQL compares with
    ``simpg.sketch_distance(a, b)``. Columns of this type get ``.sketch_distance(other)``.
    """

    impl = BIT(256)
    cache_ok = True

    class Comparator(TypeDecorator.Comparator[bytes]):
        """``sketch_distance`` on Sketch columns."""

        def sketch_distance(self, other: Any) -> ColumnElement[int]:
            """``simpg.sketch_distance(column, other)``: bits in which two sketches differ."""
            if isinstance(other, (bytes, bytearray)):
                other = type_coerce(bindparam(None, bytes(other), type_=Sketch()), Sketch())
            return sketch_distance(self.expr, other)

    comparator_factory = Comparator

    def process_bind_param(self, value: Any, dialect: Any) -> str | None:
        """32 bytes to the bit string PostgreSQL reads (:func:`~simpg.fingerprint.minhash.to_sql`)."""
        if value is None:
            return None
        return to_sql(value)

    def process_result_value(self, value: Any, dialect: Any) -> bytes | None:
        """The bit string PostgreSQL returns to 32 bytes."""
        return from_sql(value)


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
            return within_clause(self.expr, other, k)

    comparator_factory = Comparator

    def process_bind_param(self, value: Any, dialect: Any) -> int | None:
        """Unsigned fingerprint -> signed bigint (None stays None).

        psycopg sends a plain int as the smallest integer type that holds it, and keys
        its prepared statements by the parameters' types: an ``Int8`` keeps one
        statement for every fingerprint, large or small.
        """
        if value is None:
            return None
        return Int8(bits.to_db(value)) if dialect.driver in _PSYCOPG else bits.to_db(value)

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


def _check_k(k: Any, spec: SimHashIndex) -> int:
    return check_radius(k, spec.layout.k, what=f"the simhash index on {spec.table.name}.{spec.column.name}")


class BigintArray(TypeDecorator[Sequence[int]]):
    """A ``bigint[]`` sent as one with psycopg.

    psycopg sends a list of ints as the smallest array type that holds them, and keys
    its prepared statements by the parameters' types: ``Int8`` elements keep one
    statement for every value, as :class:`SimHash` does for the fingerprint.
    """

    impl = ARRAY(BigInteger())
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        """Each element as an ``Int8`` with psycopg."""
        return [Int8(v) for v in value] if value is not None and dialect.driver in _PSYCOPG else value


class Passages(BigintArray):
    """A document's passage hashes (:func:`simpg.passages.passage_hashes`) in a PostgreSQL ``bigint[]``.

    Sorted, distinct, signed 64-bit values, as Python computes them; bound values are
    checked (a value out of the signed 64-bit range fails where the statement is built,
    naming it). Declare its GIN index with :func:`simpg.sqlalchemy.passage_index` and fill
    it with :func:`simpg.sqlalchemy.passages_on_write`. ARRAY's comparator applies:
    ``Article.passages.overlap(hashes)`` is ``&&``.
    """

    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        """A list of signed 64-bit ints (each ``Int8`` with psycopg); anything else is an error naming it."""
        if value is None:
            return None
        if isinstance(value, (str, bytes)) or not all(
                isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63) for v in value):
            raise SimpgError(f"expected passage hashes (signed 64-bit ints), got {value!r:.80}")
        return super().process_bind_param(list(value), dialect)

    def process_result_value(self, value: Any, dialect: Any) -> list[int] | None:
        """The stored array as a list of ints (None stays None)."""
        return None if value is None else list(value)

    def __repr__(self) -> str:
        # what Alembic writes into a migration: the type takes no arguments
        return "Passages()"


#: The type of within()'s range starts parameter, one instance: SQLAlchemy's cache key of
#: a new type costs more than the rest of a within() together.
_LOWS = BigintArray()


def within_clause(expr: Any, other: Any, k: int) -> ColumnElement[bool]:
    """``expr`` within Hamming distance ``k`` of ``other``, through the prefix indexes.

    ``other`` is an unsigned fingerprint: its tables' range starts are computed in Python
    and sent as one ``bigint[]`` parameter, so the statement's text is the same for
    every fingerprint and SQLAlchemy compiles it once per table (or alias) and k. Or
    ``other`` is a SQL expression (ranges computed in SQL with ``simpg.prefix_lo`` and
    ``prefix_hi``, e.g. a self-join). Either way the condition is ``simpg.lookup_where``'s
    (:func:`_lookup_where`), compiled by :class:`_Within`.
    """
    spec = index_for(expr)
    k = _check_k(k, spec)
    if getattr(expr, "table", None) is None:
        raise SimpgError(f"within needs a table column, got {expr!r}")
    operand = _operand(other)
    if operand is not other:  # a Python fingerprint
        lows: Sequence[int] = [lo for lo, _ in spec.layout.prefix_ranges(other)]
        return _Within(expr, operand, bindparam(None, lows, _LOWS), k)
    return _Within(expr, operand, None, k)


class _Within(ColumnElement[bool]):
    """``within()``: cheap to build, compiled once per (table or alias, k).

    Its cache key is the column, the operand (a bind parameter or an expression), the
    range starts (one ``bigint[]`` bind parameter, or None when computed in SQL) and k,
    so each call builds a few small objects; the text is written at compile time
    (:func:`_compile_within`) and SQLAlchemy's statement cache reuses it.
    """

    __visit_name__ = "simpg_within"
    inherit_cache = False
    _traverse_internals = [
        ("expr", InternalTraversal.dp_clauseelement),
        ("fp", InternalTraversal.dp_clauseelement),
        ("lows", InternalTraversal.dp_clauseelement),
        ("k", InternalTraversal.dp_plain_obj),
    ]
    type = Boolean()

    def __init__(self, expr: ColumnElement[Any], fp: ColumnElement[int], lows: BindParameter[Sequence[int]] | None,
                 k: int) -> None:
        self.expr = expr
        self.fp = fp
        self.lows = lows
        self.k = k


def _lookup_where(col: str, prefix_columns: Sequence[str], fp: str, radius: str, k: int, levels: Sequence[int],
                  lows: str | None, prefix_bits: Sequence[int]) -> str:
    """``simpg.lookup_where(col, prefix_columns, fp, radius, k, levels[, lows => lows], alias => ...)``, offline.

    The text PostgreSQL's ``simpg.lookup_where`` writes (the one definition of a lookup's
    condition, sql/functions/50_query.sql), for the two forms ``within()`` needs: ranges
    from ``simpg.prefix_lo``/``prefix_hi`` of ``fp``, or from the range starts ``lows``
    (table t's range: ``lows[t + 1]`` plus the mask of the ``prefix_bits[t]`` bits after
    its prefix). ``within()`` must compile with no database at hand, on whatever table or
    alias the query names, so it cannot ask the function. ``col`` and ``prefix_columns``
    are the columns as the compiler renders them (``alias.name``, quoted where needed:
    the function writes ``%I.%I``); ``fp``, ``radius`` and ``lows`` are SQL expressions.
    tests/integration/test_sqlalchemy_lookup_where.py holds this text equal to the
    function's for many layouts, aliases and both forms.
    """
    levels_literal = "'{" + ",".join(map(str, levels)) + "}'"
    ranges = []
    for t, column in enumerate(prefix_columns):
        if lows is None:
            args = f"{fp}, {k}::integer, {levels_literal}::integer[], {t}::integer"
            ranges.append(f"{column} BETWEEN simpg.prefix_lo({args}) AND simpg.prefix_hi({args})")
        else:
            mask = (1 << (64 - prefix_bits[t])) - 1
            ranges.append(f"{column} BETWEEN {lows}[{t + 1}] AND {lows}[{t + 1}] + '{mask}'::bigint")
    return f"({' OR '.join(ranges)}) AND simpg.hamming({col}, {fp}) <= {radius}"


@compiles(_Within)
def _compile_within(element: _Within, compiler: SQLCompiler, **kw: Any) -> str:
    """``simpg.lookup_where``'s condition (:func:`_lookup_where`) and the layout guard.

    With a Python fingerprint the range starts are one ``bigint[]`` parameter. PostgreSQL
    plans each statement with its parameters' values (psycopg sends it unnamed), so the
    subscripts fold to constants and the plan sees the real, narrow ranges, as with
    literals; unlike 20 literals or parameters, one array keeps the text short and the
    same for every fingerprint, which is what parsing and SQLAlchemy's cache want.
    """
    spec = index_for(element.expr)
    source = element.expr.table
    layout = spec.layout
    # typed: with literal_binds the array is a bare ARRAY[...] of numbers
    lows = None if element.lows is None else f"(CAST({compiler.process(element.lows, **kw)} AS bigint[]))"
    condition = _lookup_where(
        compiler.process(element.expr, **kw), [compiler.process(source.c[name], **kw) for name in spec.prefix_names],
        compiler.process(element.fp, **kw), str(element.k), layout.k, layout.levels, lows,
        [layout.prefix_bits(t) for t in range(layout.tables)])
    guard = compiler.process(layout_guard(spec), **kw)
    # in parentheses: an AND of conditions, whatever it is put in (NOT, OR, ...)
    return f"({condition} AND {guard})"
