"""Names in SQL text: composed with :mod:`psycopg.sql` only, safe next to placeholders.

Every statement in simpg that holds a table, schema or column name is built with
``psycopg.sql`` (``sql.SQL("... {} ...").format(sql.Identifier(name))``), never with
``str.format``, f-strings or ``%``, which would read the braces, percent signs or quotes
of a name as their own syntax (a table named ``t{hi}`` read another
table). ``tests/unit/test_sql_composition.py`` keeps it so.

One gap of psycopg is closed here. psycopg finds its placeholders (``%s``,
``%(name)s``) by scanning the whole statement, quoted names and literals included, so a
column ``"a%sb"`` in a statement run with parameters takes a parameter's place (an error,
or worse ``"a$1b"``: another column). :func:`with_parameters` doubles the ``%`` of every
name and literal of a statement that is run with parameters; psycopg turns ``%%`` back
into ``%``. A statement run without parameters is sent as written and must not go
through it.

Example:
    >>> from psycopg import sql
    >>> quoted_name("My Schema", "t{hi}%s"), quoted_name("public", "docs")
    ('"My Schema"."t{hi}%s"', 'public.docs')
    >>> query = sql.SQL("SELECT {} FROM t WHERE id = %s").format(sql.Identifier("a%sb"))
    >>> with_parameters(query).as_string(None)
    'SELECT "a%%sb" FROM t WHERE id = %s'
"""

from __future__ import annotations

import re
from typing import Any

from psycopg import sql

__all__ = ["quoted_name", "with_parameters"]


#: A name that ``::regclass`` and ``parse_ident`` read as itself without quotes (they fold
#: unquoted names to lower case and know no keywords).
_PLAIN = re.compile(r"[a-z_][a-z0-9_]*")


def quoted_name(*parts: str) -> str:
    """``parts`` joined by dots, quoted where needed: text that ``::regclass`` (or ``parse_ident``) reads back exactly.

    A value, not a statement: quoted by ``psycopg.sql.Identifier``, never by a driver's
    own quoting (SQLAlchemy's identifier preparer doubles ``%`` for its pyformat
    drivers, which is right in a statement but names another table in a value).
    Plain lower-case names stay unquoted, so messages and offline scripts read as
    before (``public.docs``).
    """
    return ".".join(part if _PLAIN.fullmatch(part) else sql.Identifier(part).as_string(None) for part in parts)


def with_parameters(query: sql.Composable, context: Any = None) -> sql.Composed:
    """``query`` to run with parameters: the ``%`` of its names and literals doubled.

    Placeholders (``sql.Placeholder`` or ``%s`` in ``sql.SQL`` parts) are kept, so psycopg
    binds the parameters to them and to nothing inside a name.
    """
    if isinstance(query, sql.Composed):
        return sql.Composed([with_parameters(part, context) for part in query])
    if isinstance(query, sql.SQL | sql.Placeholder):
        return sql.Composed([query])
    return sql.Composed([sql.SQL(query.as_string(context).replace("%", "%%"))])
