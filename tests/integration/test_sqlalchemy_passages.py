"""simpg.sqlalchemy passages on a real server: the declared index, writes in step, lookups == brute force."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import BigInteger, Text, create_engine, insert, text
from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from simpg.exc import SimpgError
from simpg.fingerprint.errors import InvalidConfig, InvalidDocument
from simpg.passages import PassageConfig, passage_hashes
from simpg.results import PassageMatch
from simpg.sqlalchemy import (
    Passages,
    passage_index,
    passages_near,
    passages_near_async,
    passages_on_write,
    url_from_dsn,
)
from tests.integration.passage_corpus import brute_matches, corpus, words

WINDOW = 8
SPACELESS_WINDOW = 4  # rows mostly of CJK letters: the smaller window here
CONFIG = PassageConfig(WINDOW, SPACELESS_WINDOW)
GUARANTEE = CONFIG.guarantee  # 12


class Base(DeclarativeBase):
    pass


class Page(Base):
    __tablename__ = "pages"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)
    passages: Mapped[list[int] | None] = mapped_column(Passages)


passage_index(Page.passages, window=WINDOW, spaceless_window=SPACELESS_WINDOW)
passages_on_write(Page.body, Page.passages)


def _check(found, rows: dict[int, str], query: str, min_tokens: int, min_containment: float = 0.0) -> None:
    """found (object, PassageMatch) pairs == the brute-force answer, passages and containment included."""
    want = brute_matches(query, rows, min_tokens, min_containment)
    got = {obj.id: match for obj, match in found}
    assert set(got) == set(want)
    for key, match in got.items():
        runs, text_in_row, row_in_text = want[key]
        assert isinstance(match, PassageMatch) and match.key == key
        assert [(p.a_start, p.a_end, p.b_start, p.b_end) for p in match.passages] == runs
        assert match.shared_tokens == sum(r[1] - r[0] for r in runs)
        assert match.text_in_row == pytest.approx(text_in_row) and match.row_in_text == pytest.approx(row_in_text)
        assert match.shared_hashes >= 1
        for p in match.passages:  # character offsets: the passage as written in both texts
            assert query[p.a_char_start:p.a_char_end].split() == rows[key].split()[p.b_start:p.b_end]
    assert [m.shared_hashes for _, m in found] == sorted((m.shared_hashes for _, m in found), reverse=True)


def _load(session: Session, texts: list[str]) -> dict[int, str]:
    pages = [Page(id=i, body=t) for i, t in enumerate(texts, start=1)]
    session.add_all(pages)
    session.commit()
    return {p.id: t for p, t in zip(pages, texts, strict=True)}


def test_create_all_makes_the_passage_index(db):
    engine = create_engine(url_from_dsn(db.dsn))
    try:
        Base.metadata.create_all(engine)
        row = db.conn.execute("SELECT passage_column, passage_window, spaceless_window, index_name "
                              "FROM simpg.passage_indexes WHERE indexed_table = 'pages'::regclass").fetchone()
        assert row == ("passages", WINDOW, SPACELESS_WINDOW, "pages_passages_keys_idx")
        # the same as simpg.create_passage_index makes (the one source: simpg.passage_index_ddl)
        db.conn.execute("CREATE TABLE twin (id bigint PRIMARY KEY, body text, passages bigint[])")
        db.conn.execute("SELECT simpg.create_passage_index('twin', 'passages', %s, %s)", (WINDOW, SPACELESS_WINDOW))
        defs = db.conn.execute("SELECT replace(indexdef, 'twin', 'pages') FROM pg_indexes "
                               "WHERE tablename IN ('pages', 'twin') AND indexname LIKE '%%keys%%' "
                               "ORDER BY tablename").fetchall()
        assert defs[0] == defs[1]
    finally:
        engine.dispose()


def test_lookup_equals_brute_force(db):
    engine = create_engine(url_from_dsn(db.dsn))
    try:
        Base.metadata.create_all(engine)
        texts = corpus(3, 160, GUARANTEE)
        with Session(engine) as session:
            rows = _load(session, texts)
            for page in session.query(Page):  # the column holds what Python computes
                assert page.passages == (None if page.body is None else passage_hashes(page.body, CONFIG))
            rng = random.Random(4)
            queries = [texts[i] for i in rng.sample(range(3, len(texts)), 6)]
            queries += [" ".join(words(rng, 15) + texts[-1].split()[:GUARANTEE] + words(rng, 10)), "", "one"]
            for query in queries:
                for min_tokens in (GUARANTEE, GUARANTEE + 10):
                    found = passages_near(session, Page, query, min_tokens=min_tokens, max_common=None)
                    assert found.skipped == ()
                    _check(found, rows, query, min_tokens)
                found = passages_near(session, Page, query, min_containment=0.5, max_common=None)
                _check(found, rows, query, GUARANTEE, 0.5)
                every = passages_near(session, Page, query, max_common=None)
                first = passages_near(session, Page, query, max_common=None, limit=2)
                assert [m for _, m in first] == [m for _, m in every][:2]
    finally:
        engine.dispose()


def test_orm_writes_keep_the_column_in_step(db):
    engine = create_engine(url_from_dsn(db.dsn))
    rng = random.Random(8)
    old, new = " ".join(words(rng, 60)), " ".join(words(rng, 60))
    try:
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            page = Page(id=1, body=old)
            session.add(page)
            session.commit()
            assert [o.id for o, _ in passages_near(session, Page, old)] == [1]
            page.body = new  # update of the text: the hashes follow
            session.commit()
            stored = db.conn.execute("SELECT passages FROM pages WHERE id = 1").fetchone()[0]
            assert stored == passage_hashes(new, CONFIG)
            assert list(passages_near(session, Page, old)) == []
            assert [o.id for o, _ in passages_near(session, Page, new)] == [1]
            page.body = None
            session.commit()
            assert db.conn.execute("SELECT passages FROM pages WHERE id = 1").fetchone()[0] is None
            page.body = new
            session.flush()  # not committed: the lookup runs in the session's transaction and sees it
            assert [o.id for o, _ in passages_near(session, Page, new)] == [1]
            session.delete(page)
            assert list(passages_near(session, Page, new)) == []  # autoflush: the delete is seen
            session.commit()
    finally:
        engine.dispose()


def test_common_hashes_are_skipped_and_reported(db):
    engine = create_engine(url_from_dsn(db.dsn))
    rng = random.Random(9)
    boilerplate = words(rng, 40)
    try:
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            texts = [" ".join(words(rng, 30) + boilerplate) for _ in range(300)]
            rows = _load(session, texts)
            session.execute(text("ANALYZE pages"))
            query = " ".join(boilerplate)
            skipped = passages_near(session, Page, query, max_common=100)
            assert skipped.skipped and len(skipped) < len(rows)
            assert set(skipped.skipped) <= set(passage_hashes(query, CONFIG))
            exact = passages_near(session, Page, query, max_common=None)
            assert len(exact) == len(rows) and exact.skipped == ()
    finally:
        engine.dispose()


def test_bad_input_is_a_clear_error(db):
    engine = create_engine(url_from_dsn(db.dsn))
    try:
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            # the same checks and words as simpg.psycopg.PassageColumn.near (simpg.passages.lookup)
            with pytest.raises(InvalidConfig, match=r"^min_tokens must be an integer of at least 12 \(the passage "
                                                    r"index's larger window 8 \+ 4: shorter shared runs are not all "
                                                    r"found\), got 11$"):
                passages_near(session, Page, "some text", min_tokens=11)
            with pytest.raises(InvalidConfig, match=r"^min_containment must be a number from 0 to 1, "
                                                    r"got 1\.5$"):
                passages_near(session, Page, "some text", min_containment=1.5)
            with pytest.raises(InvalidConfig, match=r"^max_common must be an integer of at least 0, a fraction "
                                                     r"between 0 and 1, or None, got -1$"):
                passages_near(session, Page, "some text", max_common=-1)
            with pytest.raises(InvalidConfig, match=r"^limit must be an integer of at least 1, got 0$"):
                passages_near(session, Page, "some text", limit=0)
            with pytest.raises(InvalidDocument, match=r"^expected a text \(str\), got 42$"):
                passages_near(session, Page, 42)  # type: ignore[arg-type]
            with pytest.raises(SimpgError, match=r"^column id of table public\.pages is bigint, expected text$"):
                passages_near(session, Page, "some text", text_column=Page.id)
            session.rollback()
            with pytest.raises(SimpgError, match=r"^column nobody of table public\.pages does not exist$"):
                passages_near(session, Page, "some text", text_column="nobody")
            session.rollback()
            with pytest.raises(StatementError, match=r"expected passage hashes \(signed 64-bit ints\), got \[9223"):
                session.execute(insert(Page).values(id=5, passages=[2**63]))
            session.rollback()
    finally:
        engine.dispose()
    with pytest.raises(SimpgError, match="expected Passages"):
        passage_index(Page.body)
    with pytest.raises(SimpgError, match="already has a passage index"):
        passage_index(Page.passages, window=WINDOW, spaceless_window=SPACELESS_WINDOW)


async def test_async_lookup_equals_brute_force(db):
    texts = corpus(5, 80, GUARANTEE)
    engine = create_async_engine(url_from_dsn(db.dsn, async_=True))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        async with AsyncSession(engine, expire_on_commit=False) as session:
            session.add_all([Page(id=i, body=t) for i, t in enumerate(texts, start=1)])
            await session.commit()
            rows = dict(enumerate(texts, start=1))
            for query in texts[10:14]:
                found = await passages_near_async(session, Page, query, max_common=None)
                _check(found, rows, query, GUARANTEE)
    finally:
        await engine.dispose()
