"""Login roles for the tests that play other users than the superuser."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql


@contextmanager
def login_role(conn: psycopg.Connection, *options: str) -> Iterator[str]:
    """A fresh LOGIN role (not superuser) that is dropped with everything it owns afterwards."""
    name = f"simpg_role_{uuid.uuid4().hex[:10]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN " + " ".join(options)).format(sql.Identifier(name)))
    try:
        yield name
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def role_dsn(db, role: str) -> str:
    return db.pg.server.dsn(db.name, user=role)
