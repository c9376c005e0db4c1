"""ORM helpers: fingerprint a text attribute on write, find near-duplicates of a text or object.

Example:
    >>> from simpg.sqlalchemy import fingerprint_on_write, near
    >>> fingerprint_on_write(Article.body, Article.simhash)       # doctest: +SKIP
    >>> near(session, Article, "some text", k=3)                    # doctest: +SKIP
    >>> sk, keys = sketch_and_bands("some text")                     # doctest: +SKIP
    >>> duplicates(session, Article, fp, sk, band_keys=keys)            # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, and_, event, inspect, not_, or_, select, type_coerce

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint import FingerprintConfig, fingerprint
from simpg.fingerprint.minhash import band_columns as default_band_columns
from simpg.fingerprint.minhash import checked_band_keys, checked_max_sketch_distance, to_sql
from simpg.sqlalchemy.index import SimHashIndex, _resolve_column, index_for
from simpg.sqlalchemy.types import Sketch

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession
    from sqlalchemy.orm import Session

__all__ = [
    "FingerprintWriter",
    "duplicates",
    "duplicates_async",
    "duplicates_select",
    "fingerprint_on_write",
    "near",
    "near_async",
    "near_select",
]

_WRITER_KEY = "simpg_fingerprint"


@dataclass(frozen=True)
class FingerprintWriter:
    """Fingerprints ``source`` into ``target`` whenever ``source`` is set on an object."""

    source: str
    target: str
    config: FingerprintConfig

    def fingerprint(self, text: Any) -> int:
        """The fingerprint of one text with this writer's config."""
        return fingerprint(text, self.config)


def fingerprint_on_write(
    source: Any, target: Any, config: FingerprintConfig | None = None
) -> FingerprintWriter:
    """Opt in: setting ``source`` (``Article.body``) also sets ``target`` (``Article.simhash``).

    The fingerprint is computed when the attribute is set (in the constructor too), so
    ``article.simhash`` is there before any flush, e.g. to look for near-duplicates
    first. Bulk ``insert()`` statements bypass ORM events: fingerprint those yourself
    (``simpg.fingerprint.fingerprint_many``). Setting ``source`` to None sets ``target``
    to None.

    Args:
        source: mapped text attribute.
        target: mapped fingerprint attribute (``SimHash`` column).
        config: fingerprint settings; None means ``FingerprintConfig()``.
    """
    target_column = _resolve_column(target)
    writer = FingerprintWriter(source.key, target.key, config or FingerprintConfig())

    def on_set(obj: Any, value: Any, oldvalue: Any, initiator: Any) -> None:
        setattr(obj, writer.target, None if value is None else writer.fingerprint(value))

    event.listen(source, "set", on_set, propagate=True)
    target_column.info[_WRITER_KEY] = writer
    return writer


def _indexed_attribute(entity: Any, column: Any) -> tuple[Any, SimHashIndex]:
    """The fingerprint attribute of ``entity`` to search, and its index."""
    if column is not None:
        return column, index_for(column)
    mapper = inspect(entity).mapper
    found = [prop.key for prop in mapper.column_attrs if "simpg_index" in prop.columns[0].info]
    if len(found) != 1:
        raise SimpgError(
            f"{mapper.class_.__name__} has {len(found)} simhash-indexed columns; pass column="
        )
    attr = getattr(entity, found[0])
    return attr, index_for(attr)


def near_select(
    entity: Any, target: Any, k: int | None = None, *, column: Any = None
) -> Select[Any]:
    """``SELECT entity`` rows within ``k`` of a text, a fingerprint or an object, nearest first.

    Args:
        entity: a mapped class (or an ``aliased()`` one).
        target: a text (fingerprinted with the column's ``fingerprint_on_write`` config),
            an unsigned fingerprint, or an instance of the entity (itself excluded).
        k: radius; default the index's k.
        column: the fingerprint attribute, when the entity has several indexed ones.

    Returns:
        A select ordered by distance then primary key; add ``.limit()`` etc. as needed.
    """
    attr, spec = _indexed_attribute(entity, column)
    mapper = inspect(entity).mapper
    exclude = None
    if isinstance(target, str):
        writer = spec.column.info.get(_WRITER_KEY)
        if writer is None:
            raise SimpgError(
                f"no fingerprint config for {spec.table.name}.{spec.column.name}; "
                "pass a fingerprint, "
                "or declare fingerprint_on_write(text_attribute, fingerprint_attribute)"
            )
        fp = writer.fingerprint(target)
    elif isinstance(target, mapper.class_):
        fp = getattr(target, attr.key)
        if fp is None:
            raise SimpgError(f"{target!r} has no fingerprint in {attr.key}")
        identity = inspect(target).identity
        if identity is not None:
            pks = [
                getattr(entity, mapper.get_property_by_column(c).key) for c in mapper.primary_key
            ]
            exclude = not_(and_(*(pk == value for pk, value in zip(pks, identity, strict=True))))
    else:
        fp = bits.check(target)
    stmt = select(entity).where(attr.within(fp, spec.layout.k if k is None else k))
    if exclude is not None:
        stmt = stmt.where(exclude)
    pk_order = [getattr(entity, mapper.get_property_by_column(c).key) for c in mapper.primary_key]
    return stmt.order_by(attr.distance(fp), *pk_order)


def near(
    session: Session,
    entity: Any,
    target: Any,
    k: int | None = None,
    *,
    column: Any = None,
    limit: int | None = None,
) -> list[Any]:
    """Run :func:`near_select` in a ``Session``: the objects within ``k``, nearest first."""
    return list(session.scalars(near_select(entity, target, k, column=column).limit(limit)).all())


async def near_async(
    session: AsyncSession,
    entity: Any,
    target: Any,
    k: int | None = None,
    *,
    column: Any = None,
    limit: int | None = None,
) -> list[Any]:
    """:func:`near` for an ``AsyncSession``."""
    return list((await session.scalars(near_select(entity, target, k, column=column).limit(limit))).all())


def _attribute_named(entity: Any, name: str, what: str) -> Any:
    """The attribute of ``entity`` mapped to its table's column ``name`` (errors name the column)."""
    mapper = inspect(entity).mapper
    table = mapper.local_table
    column = table.c.get(name) if isinstance(name, str) else None
    if column is None:
        raise SimpgError(f"column {name} of table {table.name} does not exist ({what})")
    return getattr(entity, mapper.get_property_by_column(column).key)


def duplicates_select(
    entity: Any,
    fingerprint: int,
    sketch: bytes,
    k: int | None = None,
    *,
    band_keys: Any = None,
    sketch_column: str = "sketch",
    band_columns: Any = None,
    max_sketch_distance: int | None = None,
    column: Any = None,
) -> Select[Any]:
    """``SELECT entity`` rows that ``SimHashColumn.duplicates`` finds: within ``k`` or sharing a band, sketch-confirmed.

    A row is a candidate when its fingerprint is within ``k`` bits (``within()``: the
    prefix B-trees) or, with ``band_keys`` (:func:`simpg.fingerprint.sketch_and_bands`), when
    band column i holds key i (one B-tree each); PostgreSQL reads both through one
    BitmapOr. It is kept when it has a fingerprint and its sketch differs from
    ``sketch`` in at most ``max_sketch_distance`` bits. Rows without a sketch are not
    returned; NULL band keys match nothing.

    Args:
        entity: a mapped class (or an ``aliased()`` one).
        fingerprint: the document's unsigned fingerprint.
        sketch: the document's sketch (32 bytes).
        k: fingerprint radius; default the index's k.
        band_keys: the document's band keys (signed), or None: fingerprint candidates only.
        sketch_column: the table's column of sketches (``bit(256)``).
        band_columns: the band key columns, in band order (default ``<sketch_column>_b0`` ..).
        max_sketch_distance: the largest sketch distance that confirms a row (default
            :data:`~simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`).
        column: the fingerprint attribute, when the entity has several indexed ones.

    Returns:
        A select ordered by sketch distance, then fingerprint distance, then primary key.
    """
    attr, spec = _indexed_attribute(entity, column)
    fp = bits.check(fingerprint)
    limit = checked_max_sketch_distance(max_sketch_distance)
    to_sql(sketch)  # a bad sketch fails here, naming the value, not when the statement runs
    sketch_distance = type_coerce(_attribute_named(entity, sketch_column, "the sketches to confirm with"),
                                  Sketch()).sketch_distance(sketch)
    candidates = attr.within(fp, spec.layout.k if k is None else k)
    if band_keys is not None:
        names = default_band_columns(sketch_column, band_columns)
        checked_band_keys(band_keys, names)  # checked, naming the value: one signed 64-bit key per column
        shared = [_attribute_named(entity, name, "band keys, bigint") == int(key)
                  for name, key in zip(names, band_keys, strict=True)]
        # a row found through a band may be any number of bits away, but needs a fingerprint
        candidates = and_(or_(candidates, *shared), attr.is_not(None))
    mapper = inspect(entity).mapper
    pk_order = [getattr(entity, mapper.get_property_by_column(c).key) for c in mapper.primary_key]
    return (select(entity).where(candidates, sketch_distance <= limit)
            .order_by(sketch_distance, attr.distance(fp), *pk_order))


def duplicates(
    session: Session,
    entity: Any,
    fingerprint: int,
    sketch: bytes,
    k: int | None = None,
    *,
    limit: int | None = None,
    **options: Any,
) -> list[Any]:
    """Run :func:`duplicates_select` in a ``Session`` (``options``: its keyword arguments)."""
    return list(session.scalars(duplicates_select(entity, fingerprint, sketch, k, **options).limit(limit)).all())


async def duplicates_async(
    session: AsyncSession,
    entity: Any,
    fingerprint: int,
    sketch: bytes,
    k: int | None = None,
    *,
    limit: int | None = None,
    **options: Any,
) -> list[Any]:
    """:func:`duplicates` for an ``AsyncSession``."""
    stmt = duplicates_select(entity, fingerprint, sketch, k, **options).limit(limit)
    return list((await session.scalars(stmt)).all())
