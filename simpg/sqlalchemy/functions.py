"""Typed factories for simpg's SQL functions, always schema-qualified as ``simpg.<name>``.

A registered ``GenericFunction`` would render its bare name (its ``__init__`` resets
``packagenames``), which only works with ``simpg`` on the search_path; these small
factories build ``Function(..., packagenames=("simpg",))`` instead (STYLE item 23).

Example:
    >>> from sqlalchemy import column
    >>> str(hamming(column("a"), column("b")))
    'simpg.hamming(a, b)'
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, Integer, literal_column
from sqlalchemy.sql.functions import Function

__all__ = ["hamming", "layout_is", "permute", "prefix_hi", "prefix_lo", "sketch_distance"]


def _levels(levels: tuple[int, ...]) -> str:
    # the text form PostgreSQL gives integer[] ('{4,4}'), cast in SQL
    return "{" + ",".join(str(m) for m in levels) + "}"


def hamming(a: Any, b: Any) -> Function[int]:
    """``simpg.hamming(a, b)``: the number of differing bits, an integer."""
    return Function("hamming", a, b, packagenames=("simpg",), type_=Integer())


def sketch_distance(a: Any, b: Any) -> Function[int]:
    """``simpg.sketch_distance(a, b)``: the number of differing bits of two ``bit(256)`` sketches."""
    return Function("sketch_distance", a, b, packagenames=("simpg",), type_=Integer())


def _layout_function(name: str, fp: Any, k: int, levels: tuple[int, ...], t: int) -> Function[int]:
    # The layout is structure, not data: rendered inline (the same text as
    # simpg.prefix_expression) so the planner folds it to constants in every plan.
    for value in (k, *levels, t):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer layout value, got {value!r}")
    return Function(
        name,
        fp,
        literal_column(str(k), Integer()),
        literal_column(f"'{_levels(levels)}'::integer[]"),
        literal_column(str(t), Integer()),
        packagenames=("simpg",),
        type_=BigInteger(),
    )


def permute(fp: Any, k: int, levels: tuple[int, ...], t: int) -> Function[int]:
    """``simpg.permute(fp, k, levels, t)``: table ``t``'s permuted value (signed bigint)."""
    return _layout_function("permute", fp, k, levels, t)


def prefix_lo(fp: Any, k: int, levels: tuple[int, ...], t: int) -> Function[int]:
    """``simpg.prefix_lo(fp, k, levels, t)``: lowest permuted value sharing fp's prefix."""
    return _layout_function("prefix_lo", fp, k, levels, t)


def prefix_hi(fp: Any, k: int, levels: tuple[int, ...], t: int) -> Function[int]:
    """``simpg.prefix_hi(fp, k, levels, t)``: highest permuted value sharing fp's prefix."""
    return _layout_function("prefix_hi", fp, k, levels, t)


def layout_is(rel: str, column: str, k: int, levels: tuple[int, ...]) -> Function[bool]:
    """``simpg.layout_is(rel, column, k, levels)``: true, or an error (SQLSTATE SPG01).

    ``rel`` is the table as ``regclass`` reads it (quoted, optionally schema-qualified).
    Every argument is rendered as a constant, so PostgreSQL checks it when it plans.
    """
    return Function(
        "layout_is",
        literal_column(_sql_string(rel) + "::regclass"),
        literal_column(_sql_string(column) + "::name"),
        literal_column(str(k), Integer()),
        literal_column(f"'{_levels(levels)}'::integer[]"),
        packagenames=("simpg",),
        type_=Boolean(),
    )


def _sql_string(value: str) -> str:
    """A standard SQL string literal."""
    return "'" + value.replace("'", "''") + "'"
