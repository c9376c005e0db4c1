"""Alembic support: simpg operations, autogenerate of simhash indexes, rendering with imports.

Importing this package registers everything; add to ``env.py``::

    import simpg.alembic  # noqa: F401  (operations, comparator, renderers)

    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_name=simpg.alembic.include_name,  # only if include_schemas=True
    )

See docs/alembic.md.
"""

from __future__ import annotations

from typing import Any

from simpg.alembic import compare, render  # noqa: F401  (registration on import)
from simpg.alembic.ops import (
    CreateSimhashIndexOp,
    DropSimhashIndexOp,
    InstallSimpgOp,
    UninstallSimpgOp,
)

__all__ = [
    "CreateSimhashIndexOp",
    "DropSimhashIndexOp",
    "InstallSimpgOp",
    "UninstallSimpgOp",
    "include_name",
]


def include_name(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
    """``include_name`` hook that keeps autogenerate out of the ``simpg`` schema.

    Only matters with ``include_schemas=True``: without it, autogenerate would offer to
    drop ``simpg.indexes`` (the extension's catalog).
    """
    return not (type_ == "schema" and name == "simpg")
