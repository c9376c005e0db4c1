"""Autogenerate of declared simhash indexes: one op, clean re-runs, upgrade/downgrade cycles."""

from __future__ import annotations

import random
import warnings

import pytest

from simpg import bits
from tests.integration.alembic_env import AlembicEnv, assert_clean, body_of

ARTICLES = """
class Article(Base):
    __tablename__ = "articles"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    title: Mapped[str] = mapped_column(String(200), index=True)
    body: Mapped[str] = mapped_column(Text)
    simhash: Mapped[int] = mapped_column(SimHash, nullable=False)


simhash_index(Article.simhash, k=3, blocks={blocks})
"""


def catalog(conn) -> list[tuple]:
    return conn.execute(
        "SELECT indexed_table::text, fingerprint_column, k, levels, prefix_columns "
        "FROM simpg.indexes ORDER BY 1, 2"
    ).fetchall()


@pytest.fixture
def env(tmp_path, db):
    return AlembicEnv(tmp_path, db.dsn)


def test_new_model_autogenerates_create_simhash_index(env, db):
    env.write_models(ARTICLES.format(blocks=5))
    text = env.autogenerate("articles")
    # imports the generated file needs, and nothing it must not have
    assert "import simpg.alembic" in text and "import simpg.sqlalchemy.types" in text
    assert "sa.Column('simhash', simpg.sqlalchemy.types.SimHash(), nullable=False)" in text
    assert "simhash_p0" not in text and "Computed" not in text
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.create_table('articles'") < up.index(
        "op.create_simhash_index('articles', 'simhash', k=3, blocks=5)"
    )
    assert "op.create_index(op.f('ix_articles_title')" in up
    assert down.index("op.drop_simhash_index('articles', 'simhash')") < down.index(
        "op.drop_table('articles')"
    )

    env.upgrade()
    assert catalog(db.conn) == [
        ("articles", "simhash", 3, [5], [f"simhash_p{t}" for t in range(10)])
    ]
    # the migrated table answers within-k queries exactly, through SQL's simpg.near
    rng = random.Random(3)
    fps = [rng.getrandbits(64) for _ in range(300)]
    with db.conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO articles (title, body, simhash) VALUES ('t', 'b', %s)",
            [(bits.to_db(fp),) for fp in fps],
        )
    q = fps[7] ^ 0b101
    got = db.conn.execute(
        "SELECT simhash FROM simpg.near(NULL::articles, %s, 3)", (bits.to_db(q),)
    ).fetchall()
    assert sorted(bits.from_db(r[0]) for r in got) == sorted(
        fp for fp in fps if bits.hamming(fp, q) <= 3
    )

    env.downgrade("base")
    assert catalog(db.conn) == []
    assert db.conn.execute("SELECT to_regclass('articles')").fetchone() == (None,)
    env.upgrade()
    assert len(catalog(db.conn)) == 1
    assert_clean(env)


def test_layout_change_drops_and_recreates(env, db):
    env.write_models(ARTICLES.format(blocks=5))
    env.autogenerate("v1")
    env.upgrade()
    env.write_models(ARTICLES.format(blocks=6))
    text = env.autogenerate("v2")
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.drop_simhash_index('articles', 'simhash')") < up.index(
        "op.create_simhash_index('articles', 'simhash', k=3, blocks=6)"
    )
    assert down.index("op.drop_simhash_index('articles', 'simhash')") < down.index(
        "op.create_simhash_index('articles', 'simhash', k=3, blocks=5)"
    )
    assert "add_column" not in text and "drop_column" not in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Alembic warns that the generated columns changed
        env.upgrade()
    assert catalog(db.conn)[0][3] == [6] and len(catalog(db.conn)[0][4]) == 20
    assert_clean(env)
    env.downgrade("-1")
    assert catalog(db.conn)[0][3] == [5]
    env.upgrade()
    assert_clean(env)


def test_removed_index_and_removed_table(env, db):
    env.write_models(
        ARTICLES.format(blocks=5)
        + """

class Note(Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    fp: Mapped[int] = mapped_column(SimHash)


simhash_index(Note.fp, k=1, blocks=3)
"""
    )
    env.autogenerate("v1")
    env.upgrade()
    assert len(catalog(db.conn)) == 2
    # the model drops the index on articles and the notes table altogether
    env.write_models(ARTICLES.format(blocks=5).split("simhash_index(")[0])
    text = env.autogenerate("v2")
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert "op.drop_simhash_index('articles', 'simhash')" in up
    assert up.index("op.drop_simhash_index('notes', 'fp')") < up.index("op.drop_table('notes')")
    assert "drop_index" not in up and "drop_column" not in up
    assert down.index("op.create_table('notes'") < down.index(
        "op.create_simhash_index('notes', 'fp', k=1, blocks=3)"
    )
    assert "fp_p0" not in down
    env.upgrade()
    assert catalog(db.conn) == []
    assert_clean(env)
    env.downgrade("-1")
    assert [r[:4] for r in catalog(db.conn)] == [
        ("articles", "simhash", 3, [5]),
        ("notes", "fp", 1, [3]),
    ]
    env.upgrade()
    assert_clean(env)


def test_index_added_to_an_existing_table(env, db):
    env.write_models("""
class Page(Base):
    __tablename__ = "pages"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    body: Mapped[str] = mapped_column(Text)
""")
    env.autogenerate("v1")
    env.upgrade()
    db.conn.execute("INSERT INTO pages (body) SELECT 'x' FROM generate_series(1, 50)")
    env.write_models("""
class Page(Base):
    __tablename__ = "pages"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    body: Mapped[str] = mapped_column(Text)
    simhash: Mapped[int | None] = mapped_column(SimHash)


simhash_index(Page.simhash, k=2, blocks=4, inner_blocks=4)
""")
    text = env.autogenerate("v2")
    up = body_of(text, "upgrade")
    assert up.index(
        "op.add_column('pages', sa.Column('simhash', simpg.sqlalchemy.types.SimHash()"
    ) < up.index("op.create_simhash_index('pages', 'simhash', k=2, blocks=4, inner_blocks=4)")
    assert "import simpg.sqlalchemy.types" in text
    env.upgrade()
    assert catalog(db.conn)[0][2:4] == (2, [4, 4])
    assert_clean(env)
    env.downgrade("-1")
    assert catalog(db.conn) == []
    env.upgrade()
    assert_clean(env)


def test_concurrently_built_index_is_registered(env, db):
    env.write_models("""
class Doc(Base):
    __tablename__ = "docs"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    simhash: Mapped[int] = mapped_column(SimHash, nullable=False)
""")
    env.autogenerate("v1")
    env.upgrade()
    db.conn.execute("INSERT INTO docs (simhash) SELECT g * 7919 FROM generate_series(1, 500) AS g")
    env.revision(
        "online index",
        """
        def upgrade():
            op.create_simhash_index("docs", "simhash", k=3, blocks=5, concurrently=True)


        def downgrade():
            op.drop_simhash_index("docs", "simhash", concurrently=True)
    """,
    )
    env.upgrade()
    assert catalog(db.conn)[0][:4] == ("docs", "simhash", 3, [5])
    valid = db.conn.execute(
        "SELECT count(*) FROM pg_index WHERE indrelid = 'docs'::regclass "
        "AND indisvalid AND indexrelid::regclass::text LIKE 'docs_simhash_p%'"
    ).fetchone()
    assert valid == (10,)
    # the model now declares what the migration made: nothing to generate
    env.write_models("""
class Doc(Base):
    __tablename__ = "docs"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    simhash: Mapped[int] = mapped_column(SimHash, nullable=False)


simhash_index(Doc.simhash, k=3, blocks=5)
""")
    assert_clean(env)
    env.downgrade("-1")
    assert catalog(db.conn) == []
    assert db.conn.execute(
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'docs'"
    ).fetchone() == (1,)


def test_offline_sql_renders_the_operations(env):
    env.write_models(ARTICLES.format(blocks=5))
    env.autogenerate("v1")
    env.revision(
        "online index",
        """
        def upgrade():
            op.create_simhash_index("articles", "body_fp", k=2, blocks=4, concurrently=True)


        def downgrade():
            pass
    """,
    )
    sql = env.upgrade_sql()
    assert (
        "SELECT simpg.create_index(CAST('articles' AS REGCLASS), 'simhash', 3, 5, NULL, NULL)"
        in sql
    )
    assert "COMMIT;" in sql
    assert (
        "CREATE INDEX CONCURRENTLY articles_body_fp_p5_idx ON articles (body_fp_p5) "
        "WITH (fillfactor = 100);" in sql
    )
    assert (
        "ADD COLUMN body_fp_p0 BIGINT GENERATED ALWAYS AS "
        "(simpg.permute(body_fp, 2, '{4}'::integer[], 0)) STORED"
    ) in sql
    assert "simpg.register_index(CAST('articles' AS regclass), 'body_fp', 2" in sql


def test_autogenerate_installs_simpg_when_missing(tmp_path, bare_db):
    """On a database without simpg the first migration installs it, and runs as generated."""
    env = AlembicEnv(tmp_path, bare_db.dsn)
    env.write_models(ARTICLES.format(blocks=5))
    text = env.autogenerate("articles")
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.install_simpg()") < up.index("op.create_table('articles'")
    assert down.index("op.drop_table('articles')") < down.index("op.uninstall_simpg()")
    env.upgrade()
    assert catalog(bare_db.conn) == [
        ("articles", "simhash", 3, [5], [f"simhash_p{t}" for t in range(10)])
    ]
    assert_clean(env)  # installed now: no second install_simpg
    env.downgrade("base")
    assert bare_db.conn.execute("SELECT to_regnamespace('simpg')").fetchone() == (None,)


def test_autogenerate_does_not_install_twice(env, db):
    env.write_models(ARTICLES.format(blocks=5))
    assert "install_simpg" not in env.autogenerate("articles")


def test_guard_autogenerates_after_its_index_and_round_trips(env, db):
    """simhash_guard in the model: op.create_simhash_guard after the index, dropped before it."""
    import psycopg

    env.write_models(ARTICLES.format(blocks=5) + "simhash_guard(Article.simhash, k=2)\n")
    text = env.autogenerate("guarded")
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.create_simhash_index('articles', 'simhash', k=3, blocks=5)") < up.index(
        "op.create_simhash_guard('articles', 'simhash', k=2)")
    assert down.index("op.drop_simhash_guard('articles', 'simhash')") < down.index(
        "op.drop_simhash_index('articles', 'simhash')")
    env.upgrade()
    guards = "SELECT guard_name, fingerprint_column, k, key_column FROM simpg.table_guards('articles')"
    assert db.conn.execute(guards).fetchall() == [("simhash_simpg_guard", "simhash", 2, "id")]
    db.conn.execute("INSERT INTO articles (title, body, simhash) VALUES ('a', 'b', 12345)")
    with pytest.raises(psycopg.errors.ExclusionViolation):
        db.conn.execute("INSERT INTO articles (title, body, simhash) VALUES ('a', 'b', 12344)")
    assert_clean(env)
    # another k: drop and create; no guard in the model: drop
    env.write_models(ARTICLES.format(blocks=5) + "simhash_guard(Article.simhash)\n")
    text = env.autogenerate("k3")
    up = body_of(text, "upgrade")
    assert up.index("op.drop_simhash_guard('articles', 'simhash')") < up.index(
        "op.create_simhash_guard('articles', 'simhash', k=3)")
    env.upgrade()
    assert db.conn.execute(guards).fetchall() == [("simhash_simpg_guard", "simhash", 3, "id")]
    assert_clean(env)
    env.write_models(ARTICLES.format(blocks=5))
    text = env.autogenerate("unguarded")
    assert "op.drop_simhash_guard('articles', 'simhash')" in body_of(text, "upgrade")
    assert "op.create_simhash_guard('articles', 'simhash', k=3, key_column='id')" in body_of(text, "downgrade")
    env.upgrade()
    assert db.conn.execute(guards).fetchall() == []
    assert_clean(env)
    env.downgrade("base")
    assert db.conn.execute("SELECT to_regclass('articles')").fetchone() == (None,)


SKETCHED = """
from sqlalchemy.dialects.postgresql import BIT


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    simhash: Mapped[int] = mapped_column(SimHash, nullable=True)
    sketch: Mapped[str] = mapped_column(BIT(256), nullable=True)
    sketch_b0: Mapped[int] = mapped_column(BigInteger, nullable=True, index=True)
    sketch_b1: Mapped[int] = mapped_column(BigInteger, nullable=True, index=True)
    sketch_b2: Mapped[int] = mapped_column(BigInteger, nullable=True, index=True)
    sketch_b3: Mapped[int] = mapped_column(BigInteger, nullable=True, index=True)


simhash_index(Note.simhash, k=3, blocks=5)
"""


def test_sketch_guard_settings_autogenerate_and_round_trip(env, db):
    """A guard's sketch column, largest distance and bands are written, applied, and a change is noticed."""
    import psycopg

    guards = "SELECT k, sketch_column, max_sketch_distance, band_columns FROM simpg.table_guards('notes')"
    env.write_models(SKETCHED + "simhash_guard(Note.simhash, sketch_column=Note.sketch, bands=False)\n")
    up = body_of(env.autogenerate("sketch guard"), "upgrade")
    assert ("op.create_simhash_guard('notes', 'simhash', k=3, sketch_column='sketch', max_sketch_distance=36, "
            "bands=False)") in up
    env.upgrade()
    assert db.conn.execute(guards).fetchall() == [(3, "sketch", 36, None)]
    db.conn.execute("INSERT INTO notes (id, simhash, sketch) VALUES (1, 12345, repeat('0', 256)::bit(256))")
    db.conn.execute("INSERT INTO notes (id, simhash, sketch) VALUES (2, 12344, repeat('1', 256)::bit(256))")
    with pytest.raises(psycopg.errors.ExclusionViolation):  # within k and its sketch agrees
        db.conn.execute("INSERT INTO notes (id, simhash, sketch) VALUES (3, 12344, repeat('0', 256)::bit(256))")
    assert_clean(env)
    # bands on, another distance: drop and create, and the downgrade puts the old settings back
    env.write_models(SKETCHED + "simhash_guard(Note.simhash, sketch_column='sketch', max_sketch_distance=20, "
                                "bands=True)\n")
    text = env.autogenerate("banded")
    up, down = body_of(text, "upgrade"), body_of(text, "downgrade")
    assert up.index("op.drop_simhash_guard('notes', 'simhash')") < up.index(
        "op.create_simhash_guard('notes', 'simhash', k=3, sketch_column='sketch', max_sketch_distance=20, "
        "bands=True)")
    assert ("op.create_simhash_guard('notes', 'simhash', k=3, key_column='id', sketch_column='sketch', "
            "max_sketch_distance=36, bands=False)") in down
    env.upgrade()
    bands = [f"sketch_b{i}" for i in range(4)]
    assert db.conn.execute(guards).fetchall() == [(3, "sketch", 20, bands)]
    assert_clean(env)
    # back to fingerprints alone: noticed too (the stored rows 1 and 2 are within k: refused)
    env.write_models(SKETCHED + "simhash_guard(Note.simhash)\n")
    assert "op.create_simhash_guard('notes', 'simhash', k=3)" in body_of(env.autogenerate("plain"), "upgrade")
    env.downgrade("-1")
    assert db.conn.execute(guards).fetchall() == [(3, "sketch", 36, None)]
