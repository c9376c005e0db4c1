"""simhash_guard declarations: validated when declared, before any database sees them."""

from __future__ import annotations

import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table

from simpg.exc import SimpgError
from simpg.sqlalchemy import SimHashGuard, near_duplicate, simhash_guard, simhash_index, table_guards


def table(name: str) -> Table:
    return Table(name, MetaData(), Column("id", BigInteger, primary_key=True), Column("simhash", BigInteger))


def test_guard_needs_the_index_and_a_k_within_its_radius() -> None:
    t = table("g1")
    with pytest.raises(SimpgError, match="column g1.simhash has no simhash index"):
        simhash_guard(t.c.simhash)
    simhash_index(t.c.simhash, k=3, blocks=5)
    with pytest.raises(SimpgError, match="k=4 is above the radius k=3 that the simhash index on g1.simhash guarantees"):
        simhash_guard(t.c.simhash, k=4)
    guard = simhash_guard(t.c.simhash)
    assert guard == table_guards(t)["simhash"] and isinstance(guard, SimHashGuard)
    assert (guard.k, guard.name) == (3, "simhash_simpg_guard")
    with pytest.raises(SimpgError, match="column g1.simhash already has a guard"):
        simhash_guard(t.c.simhash, k=2)


def test_near_duplicate_ignores_other_errors() -> None:
    assert near_duplicate(ValueError("x")) is None


def test_near_duplicate_error_is_both_kinds() -> None:
    from sqlalchemy.exc import IntegrityError

    from simpg import exc, sqlalchemy

    # one name, NearDuplicate: SQLAlchemy's must stay an IntegrityError, and is simpg.exc's too
    assert sqlalchemy.NearDuplicate.__name__ == exc.NearDuplicate.__name__ == "NearDuplicate"
    assert issubclass(sqlalchemy.NearDuplicate, IntegrityError)
    assert issubclass(sqlalchemy.NearDuplicate, exc.NearDuplicate)
    assert issubclass(sqlalchemy.NearDuplicate, exc.SimpgError)


def test_sketch_guard_declarations_are_checked() -> None:
    from sqlalchemy.dialects.postgresql import BIT

    t = Table("g2", MetaData(), Column("id", BigInteger, primary_key=True), Column("simhash", BigInteger),
              Column("sketch", BIT(256)))
    other = table("g3")
    simhash_index(t.c.simhash, k=3, blocks=5)
    with pytest.raises(SimpgError, match="takes bands, got True, only with a sketch_column"):
        simhash_guard(t.c.simhash, bands=True)
    with pytest.raises(SimpgError, match="takes max_sketch_distance, got 20, only with a sketch_column"):
        simhash_guard(t.c.simhash, max_sketch_distance=20)
    with pytest.raises(SimpgError, match="table g2 has no sketch column 'nope'"):
        simhash_guard(t.c.simhash, sketch_column="nope")
    with pytest.raises(SimpgError, match="a sketch column of its own table, got g3.simhash"):
        simhash_guard(t.c.simhash, sketch_column=other.c.simhash)
    with pytest.raises(SimpgError, match="max_sketch_distance must be an integer from 0 to 256, got 257"):
        simhash_guard(t.c.simhash, sketch_column=t.c.sketch, max_sketch_distance=257)
    guard = simhash_guard(t.c.simhash, sketch_column=t.c.sketch, bands=True)
    assert (guard.sketch_column, guard.max_sketch_distance, guard.bands) == ("sketch", 36, True)


def test_sketch_guard_takes_band_keys_by_default() -> None:
    """As simpg dedup decides (simpg.with_bands): band keys whenever a sketch confirms, unless bands=False."""
    from sqlalchemy.dialects.postgresql import BIT

    for bands, want in ((None, True), (False, False), (True, True)):
        t = Table("g4", MetaData(), Column("id", BigInteger, primary_key=True), Column("simhash", BigInteger),
                  Column("sketch", BIT(256)))
        simhash_index(t.c.simhash, k=3, blocks=5)
        guard = simhash_guard(t.c.simhash, sketch_column=t.c.sketch, bands=bands)
        assert guard.bands is want
    t = Table("g5", MetaData(), Column("id", BigInteger, primary_key=True), Column("simhash", BigInteger))
    simhash_index(t.c.simhash, k=3, blocks=5)
    assert simhash_guard(t.c.simhash).bands is False
