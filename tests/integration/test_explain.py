"""simpg explain / simpg.review.explain: every figure equals an independent computation.

Fingerprint distance by counting bits, the permuted tables by comparing every table's
prefix of the two permuted fingerprints (brute force over the reference layout, read
from the server's catalog), sketch distance and band keys from the Python sketcher, the
decision from the rule written out, and the passages against the texts' own characters.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from simpg.corpus import Document
from simpg.fingerprint import fingerprint, sketch_and_bands
from simpg.layout import Layout
from simpg.review import decisions
from simpg.review.explain import explain, reference_layout
from tests.integration.cli import run

VOCAB = [f"w{n}" for n in range(2000)]


def brute_tables(a: int, b: int, layout: Layout) -> list[int]:
    out = []
    for t in range(layout.tables):
        low = 64 - layout.prefix_bits(t)
        if layout.permute(a, t) >> low == layout.permute(b, t) >> low:
            out.append(t)
    return out


@pytest.fixture
def stored(db: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rng = random.Random(5)
    base = [rng.choice(VOCAB) for _ in range(150)]
    near = list(base)
    changed = sorted(rng.sample(range(150), 3))
    for n in changed:
        near[n] = f"changed{n}"
    texts = {"t0.txt": " ".join(base), "t1.txt": " ".join(near),
             "x.txt": " ".join(rng.choice(VOCAB) for _ in range(150)),
             "far.txt": " ".join(base[:60] + [rng.choice(VOCAB) for _ in range(90)])}
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--collection", "e")
    assert code == 0, err
    report = json.loads(out)
    ids = {Path(r[1]).name: r[0] for r in db.conn.execute("SELECT id, source FROM simpg_documents")}
    pairs = {frozenset((Path(p["source_a"]).name, Path(p["source_b"]).name)) for p in report["pairs"]}
    return {"texts": texts, "ids": ids, "pairs": pairs, "changed": [f"changed{n}" for n in changed],
            "dir": tmp_path}


def check_figures(e: Any, text_a: str, text_b: str, layout: Layout) -> None:
    fa, fb = fingerprint(text_a), fingerprint(text_b)
    assert (e.a.fingerprint, e.b.fingerprint) == (fa, fb)
    assert e.distance == bin(fa ^ fb).count("1")
    assert e.tables == brute_tables(fa, fb, layout)
    (sa, ba), (sb, bb) = sketch_and_bands(text_a), sketch_and_bands(text_b)
    sd = bin(int.from_bytes(sa, "big") ^ int.from_bytes(sb, "big")).count("1")
    assert e.sketch_distance == sd and e.similarity == round(max(0.0, 1 - 2 * sd / 256), 3)
    assert ba is not None and bb is not None
    assert e.shared_bands == [n for n in range(4) if ba[n] == bb[n]]
    assert e.decision.duplicate == ((e.distance <= 4 or bool(e.shared_bands)) and sd <= 36)
    assert e.decision.reasons[0].startswith("within k: ") == (e.distance <= 4)
    assert [r for r in e.decision.reasons if r.startswith("shared band key")] == [
        f"shared band key {n}" for n in e.shared_bands]
    assert any(r.startswith("sketch too far") for r in e.decision.reasons) == (sd > 36)
    for p in e.shared:
        assert text_a[p.a_start:p.a_end] == p.text_a == p.text_b == text_b[p.b_start:p.b_end] != ""
    assert [len(p.text_a.split()) for p in e.shared] == sorted((len(p.text_a.split()) for p in e.shared), reverse=True)
    for p in e.differing:
        assert text_a[p.a_start:p.a_end] == p.text_a and text_b[p.b_start:p.b_end] == p.text_b
        assert p.text_a != p.text_b


def test_stored_pairs_against_independent_figures(db: Any, stored: dict[str, Any]) -> None:
    layout = reference_layout()
    k, levels = db.conn.execute("SELECT k, levels FROM simpg.indexes "
                                "WHERE indexed_table = 'simpg_documents'::regclass").fetchone()
    assert (layout.k, list(layout.levels)) == (k, list(levels))  # the index the server has
    texts, ids = stored["texts"], stored["ids"]
    for a, b in [("t0.txt", "t1.txt"), ("t0.txt", "x.txt"), ("t1.txt", "far.txt"), ("t0.txt", "far.txt")]:
        e = explain(ids[a], ids[b], conn=db.conn, collection="e")
        check_figures(e, texts[a], texts[b], layout)
        # the decision is the one simpg dedup made
        assert e.decision.duplicate == (frozenset((a, b)) in stored["pairs"]), (a, b)
        assert (e.a.id, e.b.id, e.a.collection) == (ids[a], ids[b], "e")
    near = explain(ids["t0.txt"], str(stored["dir"] / "t1.txt"), conn=db.conn)  # by source, all collections
    assert near.decision.duplicate and near.reviewer_decision is None
    assert [w for p in near.differing for w in p.text_b.split()] == stored["changed"]  # in text order
    assert explain(ids["t0.txt"], ids["x.txt"], conn=db.conn).decision.duplicate is False

    decisions.record(db.conn, "e", ids["t0.txt"], ids["x.txt"], "duplicate", who="bo")  # another pair's
    decisions.record(db.conn, "e", ids["t0.txt"], ids["t1.txt"], "not_duplicate", who="ana")
    assert [d.verdict for d in decisions.load(db.conn, "e", (ids["t1.txt"], ids["t0.txt"]))] == ["not_duplicate"]
    assert len(decisions.load(db.conn, "e")) == 2
    e = explain(ids["t1.txt"], ids["t0.txt"], conn=db.conn)
    assert e.reviewer_decision is not None and e.reviewer_decision["verdict"] == "not_duplicate"
    assert e.reviewer_decision["reviewer"] == "ana" and e.decision.duplicate  # the defaults' decision stays


def test_cli_json_and_text(db: Any, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ids, texts = stored["ids"], stored["texts"]
    code, out, err = run(capsys, "explain", str(ids["t0.txt"]), str(ids["t1.txt"]), "--collection", "e",
                         "--dsn", db.dsn, "--json")
    assert code == 0, err
    got = json.loads(out)
    want = explain(ids["t0.txt"], ids["t1.txt"], conn=db.conn).to_json()
    assert got == json.loads(json.dumps(want))
    code, out, err = run(capsys, "explain", str(ids["t0.txt"]), str(ids["t1.txt"]), "--dsn", db.dsn)
    assert code == 0, err
    assert f"fingerprints: {want['distance']} bits apart" in out
    assert "decision (simpg dedup's defaults): duplicate" in out
    # a stored document against an ad-hoc file with the same text: distance 0, every table
    path = stored["dir"] / "t0.txt"
    code, out, err = run(capsys, "explain", str(ids["t0.txt"]), "--file", str(path), "--dsn", db.dsn, "--json")
    assert code == 0, err
    same = json.loads(out)
    assert same["distance"] == 0 and same["tables"] == list(range(reference_layout().tables))
    assert same["differing"] == [] and same["shared_fraction"] == 1.0
    assert same["b"]["id"] is None and texts["t0.txt"]


def test_ad_hoc_texts_cjk_by_characters(capsys: pytest.CaptureFixture[str]) -> None:
    a = "我们今天去公园散步，天气非常好，阳光明媚，孩子们在草地上玩耍。"
    b = a.replace("今", "明")
    e = explain(Document("a", a), Document("b", b))
    check_figures(e, a, b, reference_layout())
    assert [(p.a_start, p.text_a, p.text_b) for p in e.differing] == [(2, "今", "明")]
    code, out, err = run(capsys, "explain", "--text", a, "--text", b, "--json")
    assert code == 0, err
    assert json.loads(out)["differing"][0]["text_b"] == "明"


def test_cli_errors_name_the_value(db: Any, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ids = stored["ids"]
    cases = [
        (("999999", str(ids["t0.txt"])), "no document 999999"),
        (("nowhere.txt", str(ids["t0.txt"])), "no document with source 'nowhere.txt'"),
        ((str(ids["t0.txt"]), str(ids["t1.txt"]), "--collection", "zz"), "in collection 'zz'"),
        ((str(ids["t0.txt"]),), "explain needs two documents (ids, sources, --text or --file), got 1"),
        (("--text", "a", "--text", "b", "--text", "c"), "got 3"),
        (("--file", "/nonexistent/x.txt", "--text", "b"), "/nonexistent/x.txt"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, "explain", *argv, "--dsn", db.dsn)
        assert code == 1 and out == "" and message in err and err.count("\n") == 1, (argv, err)
        assert err.startswith("simpg: ") and err[7].islower(), err


def test_simhash_column_explain_on_a_users_table(conn: Any) -> None:
    from simpg import bits
    from simpg.fingerprint.minhash import to_sql
    from simpg.psycopg import SimHashColumn

    rng = random.Random(9)
    base = [rng.choice(VOCAB) for _ in range(120)]
    texts = {1: " ".join(base), 2: " ".join(base[:100] + ["new"] * 3 + base[103:]), 3: "just a few words here"}
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, fp bigint, sketch bit(256), "
                 "sketch_b0 bigint, sketch_b1 bigint, sketch_b2 bigint, sketch_b3 bigint)")
    for id_, text in texts.items():
        made, keys = sketch_and_bands(text)
        conn.execute("INSERT INTO docs VALUES (%s, %s, %s, %s::bit(256), %s, %s, %s, %s)",
                     [id_, text, bits.to_db(fingerprint(text)), to_sql(made), *(keys or [None] * 4)])
    conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
    index = SimHashColumn(conn, "docs", "fp")
    layout = Layout(3, (5,))
    e = index.explain(1, 2, text_column="body")
    assert (e.layout, e.layout_k) == (layout.name, 3)
    check_figures(e, texts[1], texts[2], layout)
    assert e.decision.k == 3 and e.a.id == 1
    assert [p.text_b for p in e.differing] == ["new new new"]
    # the same pair explained with the reference decision, from the texts: the same figures
    adhoc = explain(Document("1", texts[1]), Document("2", texts[2]))
    assert (adhoc.distance, adhoc.sketch_distance, adhoc.shared_bands) == (e.distance, e.sketch_distance,
                                                                          e.shared_bands)
    short = index.explain(1, 3)  # no band keys for a short text; no text column: no passages
    assert short.shared_bands == [] and short.shared == [] and short.b.bands is None
    with pytest.raises(Exception, match="no row with id = 99 in docs"):
        index.explain(1, 99)
    with pytest.raises(Exception, match="column nope of table docs does not exist"):
        index.explain(1, 2, text_column="nope")
    conn.execute("ALTER TABLE docs DROP COLUMN sketch_b3, DROP COLUMN sketch")
    bare = index.explain(1, 2)  # a table without sketches: the fingerprints alone decide, within k
    assert bare.sketch_distance is None and bare.decision.duplicate == (bare.distance <= 3)
