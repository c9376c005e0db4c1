"""One decision on every path that a sketch confirms (issue 28): the same pairs everywhere.

A pair is a near-duplicate when its fingerprints are within ``DEDUP_K`` bits or it shares a
band key, and its sketches differ in at most ``MAX_SKETCH_DISTANCE`` bits. On one corpus of
a few hundred documents (near-duplicates, revisions whose fingerprints are far apart while
their sketches are close, mixed-script variants, short texts without band keys, exact
copies and unrelated texts), made from a fixed seed, every path gives the same pairs with
its defaults:

* ``simpg dedup --json`` (the pairs it prints, and its clusters);
* the in-memory engine (:func:`simpg.allpairs.confirmed_pair_chunks`, ``clusters``);
* ``SimHashColumn.pairs`` / ``.clusters`` with ``sketch_column`` on the table dedup loaded;
* SQL ``simpg.pairs(..., simpg.dedup_k(), sketch_column => 'sketch')``;
* ``SimHashColumn.duplicates`` and ``simpg.duplicates`` of each document (its pairs);
* the sketch-confirmed guard: documents inserted in order, a write is refused exactly when
  the document has a decided pair with a row stored before it (what the guard can see).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from simpg import allpairs, bits
from simpg.cli import main
from simpg.fingerprint import (
    BANDS,
    DEDUP_K,
    MAX_SKETCH_DISTANCE,
    fingerprint_sketch_and_bands,
    sketch_distance,
)
from simpg.fingerprint.minhash import to_sql
from simpg.psycopg import SimHashColumn
from simpg.reference import BAND_COLUMNS
from tests.oracles import brute_decision

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "corpus"
Pair = tuple[int, int]


def _vocabulary() -> list[str]:
    words = {w.strip(".,;:!?\"'()").lower() for p in sorted(EXAMPLES.glob("en-*.txt"))
             for w in p.read_text(encoding="utf-8").split()}
    return sorted(w for w in words if w.isascii() and w.isalpha())


def _text(rng: random.Random, vocab: list[str], n: int) -> str:
    sentences, left = [], n
    while left > 0:
        size = min(left, rng.randint(6, 16))
        sentences.append(" ".join(rng.choice(vocab) for _ in range(size)).capitalize() + ".")
        left -= size
    return " ".join(sentences)


def _edit(rng: random.Random, vocab: list[str], text: str, share: float) -> str:
    words = text.split()
    for _ in range(max(1, round(len(words) * share))):
        i = rng.randrange(len(words))
        kind = rng.random()
        if kind < 0.5:
            words[i] = rng.choice(vocab)
        elif kind < 0.75 and len(words) > 3:
            del words[i]
        else:
            words.insert(i, rng.choice(vocab))
    return " ".join(words)


def _revision(rng: random.Random, text: str) -> str:
    """A later release: a section of the text repeated (an example shown again, a changelog entry)."""
    words = text.split()
    start = rng.randrange(len(words) // 2)
    return " ".join(words + words[start:start + rng.randint(len(words) // 4, len(words) // 2)])


def corpus(seed: int = 28) -> tuple[list[str], int]:
    """The documents, in load order, and how many revision pairs beyond k were planted."""
    rng = random.Random(seed)
    vocab = _vocabulary()
    bases = [_text(rng, vocab, rng.randint(40, 260)) for _ in range(110)]
    docs = list(bases)
    docs += [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.txt"))]
    docs += [_edit(rng, vocab, rng.choice(bases), rng.uniform(0.01, 0.03)) for _ in range(50)]  # near-duplicates
    docs += [_edit(rng, vocab, rng.choice(bases), rng.uniform(0.05, 0.2)) for _ in range(40)]  # grey to unrelated
    docs += [rng.choice(bases) for _ in range(5)]  # exact copies
    docs += [_text(rng, vocab, rng.randint(3, 8)) for _ in range(10)]  # too short for band keys
    # mixed scripts: a document quoting a Chinese or Japanese phrase, beside its original
    quotes = ["（原文：近似重复的文档）", "引用：東京都の図書館は月曜日休館です", "译者：张伟",
              "注意：この設定は再起動後に有効になります"]
    docs += [rng.choice(bases) + " " + rng.choice(quotes) for _ in range(12)]
    # revisions whose fingerprints are more than k bits apart and whose sketches are a
    # few bits apart: only a shared band key makes them candidates
    planted = 0
    while planted < 8:
        base = _text(rng, vocab, rng.randint(120, 300))
        revised = _revision(rng, base)
        fa, sa, ba = fingerprint_sketch_and_bands(base)
        fb, sb, bb = fingerprint_sketch_and_bands(revised)
        if bits.hamming(fa, fb) >= 8 and sketch_distance(sa, sb) <= 2 and ba and bb:
            docs += [base, revised]
            planted += 1
    order = list(range(len(docs)))
    rng.shuffle(order)
    return [docs[i] for i in order], planted


@pytest.fixture(scope="module")
def documents() -> tuple[list[str], list[tuple[int, bytes, tuple[int, ...] | None]], int]:
    texts, planted = corpus()
    return texts, [fingerprint_sketch_and_bands(t) for t in texts], planted


def test_the_defaults_are_one(conn: psycopg.Connection) -> None:
    """The numbers of the decision, in Python and in SQL, and the reference index's radius."""
    from simpg.dedup import Decision
    from simpg.reference import ensure_reference_schema

    assert conn.execute("SELECT simpg.dedup_k(), simpg.max_sketch_distance(), simpg.band_count(), "
                        "simpg.with_bands('sketch', NULL), simpg.with_bands(NULL, NULL), "
                        "simpg.with_bands('sketch', false)").fetchone() == (
        DEDUP_K, MAX_SKETCH_DISTANCE, BANDS, True, False, False)
    assert Decision() == Decision(k=DEDUP_K, confirm=True, max_sketch_distance=MAX_SKETCH_DISTANCE,
                                  method="representative", bands=True)
    ensure_reference_schema(conn)
    assert SimHashColumn(conn, "simpg_documents").layout.k == DEDUP_K  # answers at the k dedup decides at
    assert len(BAND_COLUMNS) == BANDS


def test_every_path_decides_the_same_pairs(db: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           documents: tuple[list[str], list[Any], int]) -> None:
    texts, made, planted = documents
    expected = set(brute_decision(dict(enumerate(made)), DEDUP_K, MAX_SKETCH_DISTANCE))
    # the corpus holds what the decision is about
    beyond_k = {(i, j) for i, j in expected if bits.hamming(made[i][0], made[j][0]) > DEDUP_K}
    revisions = {(i, j) for i, j in beyond_k if bits.hamming(made[i][0], made[j][0]) >= 8
                 and sketch_distance(made[i][1], made[j][1]) <= 2}
    assert len(revisions) >= planted == 8
    assert len(beyond_k) > len(revisions)  # other band-only pairs too (edits, copies of them)
    within_unconfirmed = sum(1 for i in range(len(made)) for j in range(i + 1, len(made))
                             if bits.hamming(made[i][0], made[j][0]) <= DEDUP_K and (i, j) not in expected)
    assert len(expected) > 100 and within_unconfirmed > 0 and sum(m[2] is None for m in made) >= 10

    # simpg dedup, with its defaults
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    assert main(["dedup", str(path), "--dsn", db.dsn, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["k"] == DEDUP_K and report["bands"] is True and report["max_sketch_distance"] == MAX_SKETCH_DISTANCE
    line = {f"{path}:{n}": n - 1 for n in range(1, len(texts) + 1)}
    by_dedup = {(line[p["source_a"]], line[p["source_b"]]) for p in report["pairs"]}
    assert by_dedup == expected and revisions <= by_dedup
    # the revisions come through their band keys alone: without them dedup misses every pair beyond k
    assert main(["dedup", str(path), "--dsn", db.dsn, "--json", "--no-bands", "--collection", "no-bands"]) == 0
    no_bands = json.loads(capsys.readouterr().out)
    assert no_bands["bands"] is False
    assert {(line[p["source_a"]], line[p["source_b"]]) for p in no_bands["pairs"]} == expected - beyond_k
    db.conn.execute("DELETE FROM simpg_documents WHERE collection = 'no-bands'")

    conn = db.conn
    rows = conn.execute("SELECT id, source FROM simpg_documents ORDER BY id").fetchall()
    doc_of = {id_: line[source] for id_, source in rows}
    id_of = {d: i for i, d in doc_of.items()}
    assert sorted(doc_of.values()) == list(range(len(texts)))

    def as_docs(pairs: Any) -> set[Pair]:
        return {tuple(sorted((doc_of[a], doc_of[b]))) for a, b in pairs}  # type: ignore[misc]

    # the in-memory engine, on the documents' own values
    fps = np.array([m[0] for m in made], dtype=np.uint64)
    sketches = [m[1] for m in made]
    keys = [m[2] for m in made]
    in_memory = {(int(a), int(b))
                 for i, j, _, _ in allpairs.confirmed_pair_chunks(fps, sketches, DEDUP_K, band_keys=keys)
                 for a, b in zip(i, j, strict=True)}
    assert in_memory == expected

    # SimHashColumn.pairs with the sketch column, defaults (k: the index's radius; bands on)
    index = SimHashColumn(conn, "simpg_documents")
    assert as_docs((p.a, p.b) for p in index.pairs(sketch_column="sketch")) == expected
    assert as_docs((p.a, p.b) for p in index.pairs(sketch_column="sketch", bands=False)) == {
        p for p in expected if p not in beyond_k}  # without bands: the pairs within k only

    # SQL
    sql_pairs = conn.execute("SELECT key_a, key_b FROM simpg.pairs('simpg_documents', simpg.dedup_k(), "
                             "sketch_column => 'sketch')").fetchall()
    assert as_docs(sql_pairs) == expected

    # each document's duplicates, through the index and its band keys
    looked_up: set[Pair] = set()
    for d, (fp, sk, band_keys) in enumerate(made):
        for found in index.duplicates(fp, sk, band_keys=band_keys):
            if found.id != id_of[d]:
                looked_up.add(tuple(sorted((d, doc_of[found.id]))))  # type: ignore[arg-type]
    assert looked_up == expected
    d = next(iter(sorted(revisions)))[0]
    fp, sk, band_keys = made[d]
    in_sql = conn.execute("SELECT n.id FROM simpg.duplicates(NULL::simpg_documents, %s, simpg.dedup_k(), "
                          "%s::bit(256), %s) AS n", [bits.to_db(fp), to_sql(sk), list(band_keys or [])]).fetchall()
    assert {doc_of[r[0]] for r in in_sql} - {d} == {b if a == d else a for a, b in expected if d in (a, b)}

    # clusters around representatives, in load order: dedup's, the engine's and the report's
    by_report = {frozenset(line[m["source"]] for m in c["documents"]) for c in report["clusters"]}
    engine = allpairs.clusters(fps, DEDUP_K, sketches=sketches, band_keys=keys,
                               rank=[id_of[i] for i in range(len(made))])
    assert {frozenset(int(i) for i in c) for c in engine} == by_report
    assert {frozenset(doc_of[i] for i in c) for c in index.clusters(sketch_column="sketch")} == by_report


def test_append_decides_as_one_run(db: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   documents: tuple[list[str], list[Any], int]) -> None:
    """The corpus loaded in two runs (the second with --append) gives the pairs and clusters of one run.

    The second run pairs what it computed with the rows the first one stored, read back
    (the only rows ``simpg dedup`` reads): every pair across the two halves counts too.
    """
    texts, made, _ = documents
    expected = set(brute_decision(dict(enumerate(made)), DEDUP_K, MAX_SKETCH_DISTANCE))
    half = len(texts) // 2
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[:half]), encoding="utf-8")
    second.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[half:]), encoding="utf-8")
    doc = {f"{first}:{n}": n - 1 for n in range(1, half + 1)}
    doc.update({f"{second}:{n}": half + n - 1 for n in range(1, len(texts) - half + 1)})
    whole = tmp_path / "whole.jsonl"
    whole.write_text(first.read_text(encoding="utf-8") + second.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["dedup", str(whole), "--dsn", db.dsn, "--json", "--collection", "one-run"]) == 0
    one_run = json.loads(capsys.readouterr().out)
    doc.update({f"{whole}:{n}": n - 1 for n in range(1, len(texts) + 1)})
    for path, extra in ((first, []), (second, ["--append"])):
        assert main(["dedup", str(path), "--dsn", db.dsn, "--json", "--collection", "two-runs", *extra]) == 0
        appended = json.loads(capsys.readouterr().out)
    assert appended["documents"] == one_run["documents"] == len(texts)

    def pairs(report: dict[str, Any]) -> set[tuple[int, int, int, int]]:
        return {(*sorted((doc[p["source_a"]], doc[p["source_b"]])), p["distance"], p["sketch_distance"])
                for p in report["pairs"]}  # type: ignore[misc]

    def clusters(report: dict[str, Any]) -> list[list[tuple[int, int, float]]]:
        return [[(doc[m["source"]], m["distance"], m["similarity"]) for m in c["documents"]]
                for c in report["clusters"]]

    assert {p[:2] for p in pairs(appended)} == expected
    assert pairs(appended) == pairs(one_run)
    assert clusters(appended) == clusters(one_run) and len(appended["clusters"]) > 10
    assert any(doc[m["source"]] < half <= doc[n["source"]] for c in appended["clusters"]  # across the runs
               for m in c["documents"] for n in c["documents"])


def test_the_guard_refuses_what_is_decided(conn: psycopg.Connection,
                                           documents: tuple[list[str], list[Any], int]) -> None:
    """Inserted in order, a document is refused exactly when it has a decided pair with a stored one."""
    _, made, _ = documents
    expected = set(brute_decision(dict(enumerate(made)), DEDUP_K, MAX_SKETCH_DISTANCE))
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint NOT NULL, sketch bit(256), "
                 + ", ".join(f"{c} bigint" for c in BAND_COLUMNS) + ")")
    for c in BAND_COLUMNS:
        conn.execute(f"CREATE INDEX ON docs ({c})")
    index = SimHashColumn(conn, "docs")
    index.create(DEDUP_K, 6)  # the reference table's layout
    index.create_guard(sketch_column="sketch")  # defaults: the index's k, the sketch limit, band keys
    guard = index.guards()[0]
    assert (guard.k, guard.max_sketch_distance, guard.band_columns) == (DEDUP_K, MAX_SKETCH_DISTANCE,
                                                                         BAND_COLUMNS)
    stored: list[int] = []
    refused: dict[int, int] = {}
    for d, (fp, sk, band_keys) in enumerate(made):
        got = index.insert_or_get({"id": d, "simhash": fp, "sketch": to_sql(sk),
                                   **dict(zip(BAND_COLUMNS, band_keys or [None] * BANDS, strict=True))})
        if got.inserted:
            stored.append(d)
        else:
            refused[d] = int(got.key)
    kept = set()
    for d in range(len(made)):  # what the guard can see: the rows stored before, not those refused
        hits = [s for s in kept if (min(s, d), max(s, d)) in expected]
        if not hits:
            kept.add(d)
        else:
            assert d in refused and refused[d] in hits, f"document {d}: refused {refused.get(d)}, decided {hits}"
    assert set(stored) == kept and len(refused) > 50
