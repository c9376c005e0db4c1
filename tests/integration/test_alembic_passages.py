"""Alembic and passage indexes: the operations, autogenerate round trips, the window changed or dropped."""

from __future__ import annotations

import pytest

from simpg.exc import SimpgError
from simpg.passages import passage_hashes
from tests.integration.alembic_env import AlembicEnv, assert_clean, body_of

PAGES = """
from simpg.sqlalchemy import Passages, passage_index


class Page(Base):
    __tablename__ = "pages"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    body: Mapped[str] = mapped_column(Text)
    passages: Mapped[list[int] | None] = mapped_column(Passages)


{declaration}
"""


def models(window: int | None) -> str:
    return PAGES.format(declaration="" if window is None else f"passage_index(Page.passages, window={window})")


def catalog(conn) -> list[tuple]:
    return conn.execute("SELECT indexed_table::text, passage_column, passage_window, spaceless_window, index_name "
                        "FROM simpg.passage_indexes ORDER BY 1, 2").fetchall()


@pytest.fixture
def env(tmp_path, db):
    return AlembicEnv(tmp_path, db.dsn)


def test_autogenerate_round_trip(env, db):
    env.write_models(models(46))
    text = env.autogenerate("pages")
    assert "import simpg.alembic" in text and "import simpg.sqlalchemy.types" in text
    assert "sa.Column('passages', simpg.sqlalchemy.types.Passages(), nullable=True, " \
           "comment='simpg passages: {\"format\": 1, \"k\": 5, \"window\": 46, \"spaceless_window\": 46}')" in text
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.create_table('pages'") < up.index(
        "op.create_passage_index('pages', 'passages', window=46, spaceless_window=46)")
    assert down.index("op.drop_passage_index('pages', 'passages')") < down.index("op.drop_table('pages')")
    assert "gin" not in text

    env.upgrade()
    assert catalog(db.conn) == [("pages", "passages", 46, 46, "pages_passages_keys_idx")]
    assert_clean(env)  # the GIN index and the comment are the model's: nothing to change
    # the migrated table answers lookups: the index finds a row sharing a passage
    body = " ".join(f"w{i}" for i in range(120))
    db.conn.execute("INSERT INTO pages VALUES (1, %s, %s)", (body, passage_hashes(body)))
    got = db.conn.execute("SELECT (c.hit).id FROM simpg.passage_candidates(NULL::pages, 'passages', %s, NULL) AS c",
                          (passage_hashes("intro " + body[:400]),)).fetchall()
    assert got == [(1,)]

    env.downgrade("base")
    assert catalog(db.conn) == [] and db.conn.execute("SELECT to_regclass('pages')").fetchone() == (None,)
    env.upgrade()
    assert catalog(db.conn) == [("pages", "passages", 46, 46, "pages_passages_keys_idx")]


def test_window_changed_then_index_removed(env, db):
    env.write_models(models(46))
    env.autogenerate("pages")
    env.upgrade()

    env.write_models(models(30))
    text = env.autogenerate("window 30")
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.drop_passage_index('pages', 'passages')") < up.index(
        "op.create_passage_index('pages', 'passages', window=30, spaceless_window=46)")
    assert down.index("op.drop_passage_index('pages', 'passages')") < down.index(
        "op.create_passage_index('pages', 'passages', window=46, spaceless_window=46)")
    assert "alter_column" not in text and "drop_index" not in text
    assert "# the stored hashes were made with windows 46 and 46: make them again with these" in up
    assert "--window 30 --spaceless-window 46" in up
    env.upgrade()
    assert catalog(db.conn) == [("pages", "passages", 30, 46, "pages_passages_keys_idx")]
    assert_clean(env)
    env.downgrade("-1")
    assert catalog(db.conn) == [("pages", "passages", 46, 46, "pages_passages_keys_idx")]
    env.upgrade()

    env.write_models(models(None))  # the column stays, its index goes
    text = env.autogenerate("no passage index")
    up = body_of(text, "upgrade").split("def ")[0]
    assert "op.drop_passage_index('pages', 'passages')" in up and "drop_column" not in up
    assert "alter_column" not in text
    env.upgrade()
    assert catalog(db.conn) == []
    assert db.conn.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'pages'").fetchone() == (1,)  # pkey
    assert_clean(env)


def test_the_index_missing_is_created_again(env, db):
    env.write_models(models(46))
    env.autogenerate("pages")
    env.upgrade()
    db.conn.execute("DROP INDEX pages_passages_keys_idx")  # the comment stays: a passage index without GIN
    assert catalog(db.conn) == [("pages", "passages", 46, 46, None)]
    text = env.autogenerate("gin again")
    up = body_of(text, "upgrade").split("def ")[0]
    assert "op.create_passage_index('pages', 'passages', window=46, spaceless_window=46)" in up
    assert "drop_passage_index" not in up
    env.upgrade()
    assert catalog(db.conn) == [("pages", "passages", 46, 46, "pages_passages_keys_idx")]


def test_operations_concurrently_and_offline(env, db):
    db.conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[])")
    env.revision("concurrently", """
        def upgrade():
            op.create_passage_index("docs", "passages", window=20, concurrently=True)


        def downgrade():
            op.drop_passage_index("docs", "passages")
        """)
    env.upgrade()
    assert catalog(db.conn) == [("docs", "passages", 20, 46, "docs_passages_keys_idx")]
    indexdef = db.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'docs_passages_keys_idx'").fetchone()
    assert indexdef == ("CREATE INDEX docs_passages_keys_idx ON public.docs USING gin "
                        "(simpg.passage_keys(passages, 16))",)
    env.downgrade("base")
    assert catalog(db.conn) == []
    with pytest.raises(SimpgError, match=r"create_passage_index\(concurrently=True\) needs a database connection"):
        env.upgrade_sql()


def test_offline_sql(env):
    env.revision("plain", """
        def upgrade():
            op.create_passage_index("docs", "passages", window=20)


        def downgrade():
            op.drop_passage_index("docs", "passages")
        """)
    sql = env.upgrade_sql()
    assert ("SELECT simpg.create_passage_index(CAST('docs' AS REGCLASS), 'passages', 20, 46, "
            "CAST(NULL AS INTEGER))") in sql


def test_key_bits_in_the_model_the_op_and_autogenerate(env, db):
    """Declared key bits are made, compared and rebuilt; undeclared ones (None) are left as the rows chose."""
    env.write_models(PAGES.format(declaration="passage_index(Page.passages, window=46, key_bits=18)"))
    text = env.autogenerate("pages")
    assert "op.create_passage_index('pages', 'passages', window=46, spaceless_window=46, key_bits=18)" in text
    env.upgrade()
    bits = "SELECT index_name, key_bits FROM simpg.passage_indexes"
    assert db.conn.execute(bits).fetchall() == [("pages_passages_keys_idx", 18)]
    assert "create_passage_index" not in body_of(env.autogenerate("same"), "upgrade")
    env.upgrade()
    env.write_models(PAGES.format(declaration="passage_index(Page.passages, window=46, key_bits=20)"))
    up = body_of(env.autogenerate("more bits"), "upgrade").split("def ")[0]
    assert "op.create_passage_index('pages', 'passages', window=46, spaceless_window=46, key_bits=20)" in up
    assert "drop_passage_index" not in up  # a rebuild: the new index, then the old one dropped
    env.upgrade()
    assert db.conn.execute(bits).fetchall() == [("pages_passages_keys_idx1", 20)]
    env.write_models(models(46))  # bits no longer declared: the index stays as it is
    assert "create_passage_index" not in body_of(env.autogenerate("undeclared"), "upgrade")
