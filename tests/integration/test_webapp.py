"""examples/webapp against a real server: 201 / 409 on POST, exact near-duplicate lists on GET."""

from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from simpg import bits
from simpg.fingerprint import fingerprint
from simpg.sqlalchemy import url_from_dsn

APP_PATH = Path(__file__).resolve().parents[2] / "examples" / "webapp" / "app.py"


def load_app_module():
    if "simpg_example_webapp" not in sys.modules:  # its models may be declared only once
        spec = importlib.util.spec_from_file_location("simpg_example_webapp", APP_PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["simpg_example_webapp"]


@pytest.fixture
def client(db):
    webapp = load_app_module()
    engine = create_engine(url_from_dsn(db.dsn), pool_size=8)
    app = webapp.create_app(engine=engine)
    yield app.test_client()
    engine.dispose()


BASE = (
    "Near-duplicate detection finds documents that are almost the same, such as mirrored "
    "pages, reposted articles and lightly edited copies of one text."
)
TEXTS = [
    BASE,
    BASE.upper(),  # normalised to the same words
    BASE.replace("lightly", "slightly"),
    BASE + " Also translations.",
    "PostgreSQL B-tree indexes answer range queries over permuted fingerprint prefixes quickly.",
    "A completely unrelated note about gardening, tomatoes, and the weather in spring.",
    "Completely unrelated: a note about gardening, tomatoes and the weather in spring!",
]


def test_post_refuses_near_duplicates_and_get_lists_them(client):
    stored: dict[int, int] = {}  # id -> fingerprint
    for text in TEXTS:
        fp = fingerprint(text)
        near = [i for i, other in stored.items() if bits.hamming(fp, other) <= 3]
        resp = client.post("/documents", json={"title": text[:10], "body": text})
        if near:
            assert resp.status_code == 409, resp.json
            existing = resp.json["existing"]
            best = min(bits.hamming(fp, stored[i]) for i in near)
            assert existing["id"] in near and existing["distance"] == best
        else:
            assert resp.status_code == 201, resp.json
            assert resp.json["simhash"] == f"{fp:016x}"
            assert resp.headers["Location"] == f"/documents/{resp.json['id']}"
            stored[resp.json["id"]] = fp
    assert 2 <= len(stored) < len(TEXTS)  # both answers happened

    # the store holds no two documents within 3 bits, so list with k=3 the SQL way too
    for doc_id, fp in stored.items():
        got = client.get(f"/documents/{doc_id}")
        assert got.status_code == 200 and got.json["simhash"] == f"{fp:016x}"
        for k in (0, 3):
            resp = client.get(f"/documents/{doc_id}/near?k={k}")
            want = sorted(
                (bits.hamming(fp, o), i)
                for i, o in stored.items()
                if i != doc_id and bits.hamming(fp, o) <= k
            )
            assert [(d["distance"], d["id"]) for d in resp.json["near"]] == want


def test_near_lists_are_exact(client, db):
    # documents stored directly, with chosen fingerprints: 0..4 bits from the first one
    first = client.post("/documents", json={"body": "seed document for the neighbour list"}).json
    fp = int(first["simhash"], 16)
    flips = [0, 1 << 63, 1, (1 << 63) | 1, 0b111 << 30, 0b1111 << 30]
    db.conn.execute("SELECT simpg.drop_guard('webapp_documents')")  # the guard would refuse them
    with db.conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO webapp_documents (body, simhash) VALUES ('x', %s)",
            [(bits.to_db(fp ^ f),) for f in flips],
        )
    resp = client.get(f"/documents/{first['id']}/near")
    assert sorted(d["distance"] for d in resp.json["near"]) == [0, 1, 1, 2, 3]


def test_bad_requests(client):
    assert client.post("/documents", json={"title": "no body"}).status_code == 400
    assert client.post("/documents", data="not json").status_code == 400
    assert client.post("/documents", json={"body": 5}).status_code == 400
    resp = client.post("/documents", json={"body": "   "})
    assert resp.status_code == 422 and "empty document" in resp.json["error"]
    assert client.get("/documents/999").status_code == 404
    doc = client.post("/documents", json={"body": "a document to ask about"}).json
    resp = client.get(f"/documents/{doc['id']}/near?k=4")
    assert resp.status_code == 400 and "k=4 is above the radius k=3" in resp.json["error"]


def test_the_guard_is_in_the_database(client, db):
    """create_all made the guard: a near-duplicate inserted around the app is refused too."""
    import psycopg

    first = client.post("/documents", json={"body": "stored through the app, then copied by hand"}).json
    assert db.conn.execute("SELECT guard_name, k FROM simpg.table_guards('webapp_documents')").fetchall() == [
        ("simhash_simpg_guard", 3)]
    with pytest.raises(psycopg.errors.ExclusionViolation):
        db.conn.execute("INSERT INTO webapp_documents (body, simhash) VALUES ('x', %s)",
                        [bits.to_db(int(first["simhash"], 16) ^ 0b101)])


def test_concurrent_duplicates_store_one(client):
    body = "Posted twice at the same moment by two impatient clients, word for word."
    with ThreadPoolExecutor(4) as pool:
        codes = sorted(
            pool.map(lambda _: client.post("/documents", json={"body": body}).status_code, range(4))
        )
    assert codes == [201, 409, 409, 409]
