"""A document store that refuses near-duplicates: Flask + simpg's SQLAlchemy API.

    POST /documents            {"title": "...", "body": "..."}
        201 + the stored document, or
        409 + the existing near-duplicate (within k bits) that blocked it

The database refuses the near-duplicate itself (``simhash_guard``: simpg.create_guard):
writers of unrelated documents never wait for each other, and two copies posted at the
same moment cannot both be stored.
    GET  /documents/<id>       the document
    GET  /documents/<id>/near  its near-duplicates, nearest first (?k= up to the index's k)

Run it (DATABASE_URL is a SQLAlchemy URL; SIMPG_DSN a libpq string also works):

    DATABASE_URL=postgresql+psycopg://user@localhost/app flask --app examples/webapp/app.py run
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from flask import Flask, jsonify, request
from sqlalchemy import BigInteger, DateTime, Engine, Text, create_engine, func
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from simpg import bits
from simpg.exc import NearDuplicate, SimpgError
from simpg.fingerprint import FingerprintError
from simpg.sqlalchemy import (
    SimHash,
    fingerprint_on_write,
    near_select,
    raise_near_duplicates,
    simhash_guard,
    simhash_index,
    url_from_dsn,
)

K = 3


class Base(DeclarativeBase):
    pass


class Document(Base):
    __tablename__ = "webapp_documents"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    title: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    simhash: Mapped[int] = mapped_column(SimHash)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


simhash_index(Document.simhash, k=K, blocks=5)
simhash_guard(Document.simhash)  # no two stored documents within K bits, race-free
fingerprint_on_write(Document.body, Document.simhash)  # default FingerprintConfig()


def as_json(doc: Document, distance: int | None = None) -> dict[str, Any]:
    # 64-bit values as hex strings: JSON numbers lose precision above 2**53 in JavaScript
    out: dict[str, Any] = {
        "id": doc.id,
        "title": doc.title,
        "body": doc.body,
        "simhash": f"{doc.simhash:016x}",
        "created_at": doc.created_at.isoformat() if doc.created_at else None,
    }
    if distance is not None:
        out["distance"] = distance
    return out


def error(status: int, message: str):
    return jsonify(error=message), status


def database_url() -> Any:
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    if os.environ.get("SIMPG_DSN"):
        return url_from_dsn(os.environ["SIMPG_DSN"])
    raise SimpgError("set DATABASE_URL (SQLAlchemy URL) or SIMPG_DSN (libpq string)")


def create_app(
    url: Any = None, *, engine: Engine | None = None, create_tables: bool = True
) -> Flask:
    """The Flask app; ``create_tables`` runs create_all (a demo: use Alembic in production)."""
    engine = engine or create_engine(url or database_url())
    raise_near_duplicates(engine)  # the guard's refusals arrive as NearDuplicate (an IntegrityError)
    if create_tables:
        Base.metadata.create_all(engine)
    Session = sessionmaker(engine, expire_on_commit=False)
    app = Flask(__name__)

    @app.post("/documents")
    def create_document():
        data = request.get_json(silent=True)
        if not isinstance(data, dict) or not isinstance(data.get("body"), str):
            return error(400, 'expected a JSON object with a "body" string')
        title = data.get("title")
        if title is not None and not isinstance(title, str):
            return error(400, f"title must be a string, got {title!r}")
        try:
            doc = Document(title=title, body=data["body"])  # fingerprinted here
        except FingerprintError as err:
            return error(422, f"cannot fingerprint body: {err}")
        try:
            with Session.begin() as session:
                session.add(doc)
                session.flush()  # the guard refuses a near-duplicate here
                session.refresh(doc)
        except NearDuplicate as duplicate:
            with Session() as session:
                nearest = session.get(Document, int(duplicate.key or 0))
                if nearest is None:  # deleted since: a retry may succeed
                    return error(409, "near-duplicate of a document deleted since; try again")
                return jsonify(error="near-duplicate", existing=as_json(nearest, duplicate.distance)), 409
        return jsonify(as_json(doc)), 201, {"Location": f"/documents/{doc.id}"}

    @app.get("/documents/<int:doc_id>")
    def get_document(doc_id: int):
        with Session() as session:
            doc = session.get(Document, doc_id)
            return jsonify(as_json(doc)) if doc else error(404, f"no document {doc_id}")

    @app.get("/documents/<int:doc_id>/near")
    def near_documents(doc_id: int):
        k = request.args.get("k", default=K, type=int)
        with Session() as session:
            doc = session.get(Document, doc_id)
            if doc is None:
                return error(404, f"no document {doc_id}")
            try:
                found = session.scalars(near_select(Document, doc, k)).all()
            except SimpgError as err:
                return error(400, str(err))
            return jsonify(
                document=doc.id,
                k=k,
                near=[as_json(d, bits.hamming(d.simhash, doc.simhash)) for d in found],
            )

    return app


if __name__ == "__main__":
    create_app().run()
