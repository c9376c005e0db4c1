"""The declarative models of the SQLAlchemy tests: articles with a fingerprint filled on write."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simpg.fingerprint import FingerprintConfig
from simpg.sqlalchemy import SimHash, fingerprint_on_write, simhash_index

K = 3


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String)


class Article(Base):
    __tablename__ = "articles"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("authors.id"))
    body: Mapped[str | None] = mapped_column(String)
    simhash: Mapped[int | None] = mapped_column(SimHash)


CONFIG = FingerprintConfig(ngram=2)
SPEC = simhash_index(Article.simhash, k=K, blocks=5)
fingerprint_on_write(Article.body, Article.simhash, CONFIG)
