"""Fixtures shared by the integration tests: ``scene`` (alice owns a database, bob is a stranger)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from tests.integration.scenes import Scene


@pytest.fixture
def scene(pg) -> Iterator[Scene]:
    suffix = uuid.uuid4().hex[:8]
    alice, bob, name = f"alice_{suffix}", f"bob_{suffix}", f"attack_{suffix}"
    with psycopg.connect(pg.server.dsn(), autocommit=True) as root:
        for role in (alice, bob):
            root.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(
                sql.Identifier(role)))
        root.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
            sql.Identifier(name), sql.Identifier(alice)))
    try:
        with psycopg.connect(pg.server.dsn(name), autocommit=True) as admin:
            yield Scene(pg, name, alice, bob, admin)
    finally:
        with psycopg.connect(pg.server.dsn(), autocommit=True) as root:
            for db in (name, f"{name}_r1", f"{name}_r2"):
                root.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
            for role in (alice, bob):
                root.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
