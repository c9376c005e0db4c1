"""Exceptions raised by simpg, and the translation of database errors into them.

Messages are lowercase and name the offending value. simpg's SQL functions raise errors
whose message says it all; :func:`translated` passes them on as :class:`SimpgError`, so
callers (and the CLI) catch one family only:

Example:
    >>> from simpg.exc import SimpgError, translated
    >>> with translated():  # doctest: +SKIP
    ...     conn.execute("SELECT simpg.check('articles'::regclass, NULL, false)")

psycopg is imported only where a database error is read (``import simpg`` stays light).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DAMAGED",
    "LAYOUT_CHANGED",
    "ExtensionNotInstalled",
    "InvalidFingerprint",
    "InvalidLayout",
    "NearDuplicate",
    "SimpgError",
    "near_duplicate",
    "translate",
    "translated",
]

#: SQLSTATE of simpg.layout_is: the index no longer has the layout a statement was made for.
LAYOUT_CHANGED = "SPG01"
#: SQLSTATE of simpg.index_layout and the queries: the index lost a prefix column and
#: cannot answer exactly (simpg.check says which; simpg.repair removes it).
DAMAGED = "SPG02"


class SimpgError(Exception):
    """simpg failed."""

    def __init__(self, message: str | None = None) -> None:
        # The docstring is the default message, in the lowercase style of every error.
        default = (self.__doc__ or "").strip().rstrip(".")
        super().__init__(message or default[:1].lower() + default[1:])


class InvalidFingerprint(SimpgError, ValueError):
    """Invalid fingerprint."""


class InvalidLayout(SimpgError, ValueError):
    """Invalid index layout."""


class ExtensionNotInstalled(SimpgError):
    """Simpg is not installed in this database; run 'simpg install --dsn ...' or op.install_simpg()."""


class NearDuplicate(SimpgError):
    """A simpg guard refused a write: a stored row is within k bits (SQLSTATE 23P01).

    Attributes:
        key: the stored row's key, as text (the guard's key column).
        distance: its Hamming distance to the refused fingerprint.
        guard: the guard (trigger) that refused it.
    """

    def __init__(self, message: str | None = None, *, key: str | None = None, distance: int | None = None,
                 guard: str | None = None) -> None:
        super().__init__(message)
        self.key, self.distance, self.guard = key, distance, guard


# -- database errors ------------------------------------------------------------------

def _clear_sqlstates() -> tuple[type[Exception], ...]:
    """The classes of database error whose message, from simpg's SQL functions, is meant for people."""
    from psycopg import errors

    return (errors.InvalidParameterValue, errors.UndefinedObject, errors.UndefinedColumn,
            errors.UndefinedTable, errors.DuplicateObject, errors.DatatypeMismatch,
            errors.NullValueNotAllowed, errors.AmbiguousColumn, errors.InsufficientPrivilege,
            errors.InvalidObjectDefinition)


def near_duplicate(err: psycopg.Error) -> NearDuplicate | None:
    """The :class:`NearDuplicate` a simpg guard's refusal means, else None.

    For your own INSERTs: ``except psycopg.errors.ExclusionViolation as err:
    dup = near_duplicate(err)``.
    """
    from psycopg import errors

    if not isinstance(err, errors.ExclusionViolation):
        return None
    found = re.fullmatch(r"Key \((?:.+)\)=\((.*)\) is within (\d+) bits of the new row, key \(.+\)=\(.*\)\.",
                         err.diag.message_detail or "", re.S)
    if found is None:
        return None  # an EXCLUDE constraint's, not a guard's
    message = (err.diag.message_primary or str(err)) + f" ({err.diag.message_detail})"
    return NearDuplicate(message, key=found.group(1), distance=int(found.group(2)), guard=err.diag.constraint_name)


def translate(err: psycopg.Error) -> Exception:
    """A SimpgError for the database errors whose message says it all, else ``err``."""
    from psycopg import errors

    duplicate = near_duplicate(err)
    if duplicate is not None:
        return duplicate
    if isinstance(err, (errors.UndefinedFunction, errors.InvalidSchemaName)) and "simpg" in str(err):
        return ExtensionNotInstalled()
    if isinstance(err, _clear_sqlstates()) or err.sqlstate in (LAYOUT_CHANGED, DAMAGED):
        diag = err.diag
        message = diag.message_primary or str(err)
        if diag.message_hint:
            message += f"; {diag.message_hint}"
        return SimpgError(message)
    return err


@contextmanager
def translated() -> Iterator[None]:
    """Database errors raised inside come out as :func:`translate` gives them.

    The one place that says how: ``with translated(): cur.execute(...)``, in sync
    and async code alike (it does no I/O itself, so it needs no ``async with``). A
    psycopg error that :func:`translate` keeps is re-raised as it is, with its traceback.
    """
    try:
        yield
    except Exception as err:
        import psycopg  # already loaded when a psycopg error is raised

        if not isinstance(err, psycopg.Error):
            raise
        clear = translate(err)
        if clear is err:
            raise
        raise clear from err
