"""How simpg's operations and SimHash columns are written into generated migration files.

Every rendered ``op.*_simhash_index`` / ``op.*install_simpg`` line adds ``import
simpg.alembic`` (which registers the operations) to the file's imports, and every
operation that renders a ``SimHash`` type adds ``import simpg.sqlalchemy.types``, so
generated migrations never fail with a missing import.
"""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import renderers
from alembic.autogenerate.api import AutogenContext
from alembic.operations import ops

from simpg.alembic.ops import (
    CreatePassageIndexOp,
    CreateSimhashGuardOp,
    CreateSimhashIndexOp,
    DropPassageIndexOp,
    DropSimhashGuardOp,
    DropSimhashIndexOp,
    InstallSimpgOp,
    UninstallSimpgOp,
)

__all__ = ["OPS_IMPORT", "TYPES_IMPORT", "needs_types_import"]

OPS_IMPORT = "import simpg.alembic"
TYPES_IMPORT = "import simpg.sqlalchemy.types"


def _call(name: str, args: list[str], kwargs: dict[str, Any]) -> str:
    parts = args + [f"{key}={value!r}" for key, value in kwargs.items()]
    return f"op.{name}({', '.join(parts)})"


@renderers.dispatch_for(CreateSimhashIndexOp)
def _render_create(autogen_context: AutogenContext, op: CreateSimhashIndexOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    kwargs: dict[str, Any] = {"k": op.k}
    for key in ("blocks", "inner_blocks", "fingerprint_config", "schema"):
        if getattr(op, key) is not None:
            kwargs[key] = getattr(op, key)
    if op.concurrently:
        kwargs["concurrently"] = True
    return _call("create_simhash_index", [repr(op.table_name), repr(op.column_name)], kwargs)


@renderers.dispatch_for(DropSimhashIndexOp)
def _render_drop(autogen_context: AutogenContext, op: DropSimhashIndexOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    kwargs: dict[str, Any] = {}
    if op.schema is not None:
        kwargs["schema"] = op.schema
    if op.concurrently:
        kwargs["concurrently"] = True
    return _call("drop_simhash_index", [repr(op.table_name), repr(op.column_name)], kwargs)


@renderers.dispatch_for(CreateSimhashGuardOp)
def _render_create_guard(autogen_context: AutogenContext, op: CreateSimhashGuardOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    kwargs = {key: getattr(op, key) for key in ("k", "key_column", "sketch_column", "max_sketch_distance", "schema")
              if getattr(op, key) is not None}
    if op.bands is not None and (op.bands or op.sketch_column is not None):  # explicit beside a sketch column
        kwargs["bands"] = op.bands
    return _call("create_simhash_guard", [repr(op.table_name), repr(op.column_name)], kwargs)


@renderers.dispatch_for(DropSimhashGuardOp)
def _render_drop_guard(autogen_context: AutogenContext, op: DropSimhashGuardOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    kwargs = {"schema": op.schema} if op.schema is not None else {}
    return _call("drop_simhash_guard", [repr(op.table_name), repr(op.column_name)], kwargs)


@renderers.dispatch_for(CreatePassageIndexOp)
def _render_create_passage_index(autogen_context: AutogenContext, op: CreatePassageIndexOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    kwargs: dict[str, Any] = {"window": op.window, "spaceless_window": op.spaceless_window}
    if op.schema is not None:
        kwargs["schema"] = op.schema
    if op.concurrently:
        kwargs["concurrently"] = True
    if op.key_bits is not None:
        kwargs["key_bits"] = op.key_bits
    call = _call("create_passage_index", [repr(op.table_name), repr(op.column_name)], kwargs)
    if op.replaces_windows is None:
        return call
    # the hashes are the caller's to keep right: a lookup trusts the recorded windows
    old, old_spaceless = op.replaces_windows
    return (f"# the stored hashes were made with windows {old} and {old_spaceless}: make them again with these\n"
            f"# (simpg backfill --passages --refingerprint --table {op.table_name} --window {op.window} "
            f"--spaceless-window {op.spaceless_window} ...)\n" + call)


@renderers.dispatch_for(DropPassageIndexOp)
def _render_drop_passage_index(autogen_context: AutogenContext, op: DropPassageIndexOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    kwargs = {"schema": op.schema} if op.schema is not None else {}
    return _call("drop_passage_index", [repr(op.table_name), repr(op.column_name)], kwargs)


@renderers.dispatch_for(InstallSimpgOp)
def _render_install(autogen_context: AutogenContext, op: InstallSimpgOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    return _call("install_simpg", [], {} if op.plain is None else {"plain": op.plain})


@renderers.dispatch_for(UninstallSimpgOp)
def _render_uninstall(autogen_context: AutogenContext, op: UninstallSimpgOp) -> str:
    autogen_context.imports.add(OPS_IMPORT)
    return _call("uninstall_simpg", [], {} if op.plain is None else {"plain": op.plain})


# Alembic renders a SimHash column as ``simpg.sqlalchemy.types.SimHash()`` without
# importing the module (the missing-import bug of third-party types). The comparator
# swaps such operations for these subclasses, whose renderers add the import and then
# defer to Alembic's own renderer.


class CreateTableWithSimHash(ops.CreateTableOp):
    """A CreateTableOp with a SimHash column."""


class AddColumnWithSimHash(ops.AddColumnOp):
    """An AddColumnOp of a SimHash column."""


class AlterColumnWithSimHash(ops.AlterColumnOp):
    """An AlterColumnOp to a SimHash type."""


_WRAPPERS: dict[type, type] = {
    ops.CreateTableOp: CreateTableWithSimHash,
    ops.AddColumnOp: AddColumnWithSimHash,
    ops.AlterColumnOp: AlterColumnWithSimHash,
}


def _is_simhash(type_: Any) -> bool:
    """Whether ``type_`` renders as a type of ``simpg.sqlalchemy.types`` that needs its import."""
    from simpg.sqlalchemy.types import Passages, SimHash

    return isinstance(type_, (SimHash, Passages))


def needs_types_import(op: Any) -> bool:
    """Whether rendering ``op`` writes a SimHash type."""
    if isinstance(op, ops.CreateTableOp):
        return any(_is_simhash(getattr(c, "type", None)) for c in op.columns)
    if isinstance(op, ops.AddColumnOp):
        return _is_simhash(op.column.type)
    if isinstance(op, ops.AlterColumnOp):
        return _is_simhash(op.modify_type)
    return False


def mark_simhash_types(op: Any) -> None:
    """Give ``op`` the subclass whose renderer adds the SimHash import, if it renders one."""
    wrapper = _WRAPPERS.get(type(op))
    if wrapper is not None and needs_types_import(op):
        op.__class__ = wrapper


def _importing(base: type) -> Any:
    def render(autogen_context: AutogenContext, op: Any) -> Any:
        autogen_context.imports.add(TYPES_IMPORT)
        return renderers.dispatch(base)(autogen_context, op)

    return render


for _base, _wrapper in _WRAPPERS.items():
    renderers.dispatch_for(_wrapper)(_importing(_base))
