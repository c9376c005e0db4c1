"""Alembic environment of simpg's reference schema (simpg.sqlalchemy.documents)."""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import create_engine

import simpg.alembic  # noqa: F401  (simpg's operations, autogenerate comparator, renderers)
from simpg.exc import SimpgError
from simpg.sqlalchemy import url_from_dsn
from simpg.sqlalchemy.documents import metadata

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = metadata


def database_url():
    """-x dsn=... (libpq), else $SIMPG_DSN, else sqlalchemy.url from alembic.ini."""
    dsn = context.get_x_argument(as_dictionary=True).get("dsn") or os.environ.get("SIMPG_DSN")
    if dsn:
        return url_from_dsn(dsn)
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise SimpgError(
            "no database: pass -x dsn='host=... dbname=...', set SIMPG_DSN, "
            "or set sqlalchemy.url in alembic.ini"
        )
    return url


def run_migrations_offline():
    context.configure(url=database_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online():
    engine = create_engine(database_url())
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                include_name=simpg.alembic.include_name,
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
