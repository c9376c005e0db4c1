"""One vocabulary (issue 15, code item 6): the renamed handles keep their old names for one release."""

from __future__ import annotations

import pytest

import simpg.psycopg
from simpg.psycopg import AsyncSimHashColumn, SimHashColumn


@pytest.mark.parametrize(("old", "new"), [("SimIndex", SimHashColumn), ("AsyncSimIndex", AsyncSimHashColumn)])
def test_old_names_are_the_new_classes_with_a_warning(old: str, new: type) -> None:
    with pytest.warns(DeprecationWarning, match=f"simpg.psycopg.{old} is now {new.__name__}"):
        assert getattr(simpg.psycopg, old) is new
    with pytest.warns(DeprecationWarning):
        exec(f"from simpg.psycopg import {old}", {})


def test_unknown_names_still_raise() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'SimIndexes'"):
        simpg.psycopg.SimIndexes  # noqa: B018
