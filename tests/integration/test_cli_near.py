"""``simpg near``: fingerprints and texts looked up in the reference table or any indexed table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from simpg.cli import main
from simpg.fingerprint import (
    MAX_SKETCH_DISTANCE,
    FingerprintConfig,
    fingerprint,
    sketch_and_bands,
)
from tests.integration.cli import CORPUS, run
from tests.oracles import brute_duplicates, brute_near


def test_near_after_dedup(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    assert main(["dedup", str(CORPUS), "--dsn", dsn, "--json"]) == 0
    capsys.readouterr()
    path = CORPUS / "zh-green-tea.txt"
    fp = fingerprint(path.read_text(encoding="utf-8"))
    code, out, err = run(capsys, "near", str(fp), hex(fp), "--file", str(path), "--dsn", dsn, "--json", "-k", "3")
    assert code == 0, err
    results = json.loads(out)
    assert [r["fingerprint"] for r in results] == [fp, fp, fp]
    texts = {os.fspath(p): p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}
    fingerprints = {s: fingerprint(t) for s, t in texts.items()}
    expected = [(n.distance, n.id) for n in brute_near(fingerprints, fp, 3)]
    for r in results:
        assert [(n["distance"], n["source"]) for n in r["neighbors"]] == expected
    code, out, _ = run(capsys, "near", "--text", texts[os.fspath(path)], "--dsn", dsn)
    assert code == 0 and "within 4 bits or sharing a band key, confirmed by sketches" in out
    assert os.fspath(path) in out


def test_text_queries_are_confirmed_by_sketches(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    """--file on the reference table: rows within 4 bits or sharing a band key, confirmed by sketches."""
    dsn = db.dsn  # type: ignore[attr-defined]
    assert main(["dedup", str(CORPUS), "--dsn", dsn]) == 0
    capsys.readouterr()
    texts = {os.fspath(p): p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}

    docs = {s: (fingerprint(t), *sketch_and_bands(t)) for s, t in texts.items()}

    def expected(query: str) -> set[tuple[str, int, int]]:
        sk, keys = sketch_and_bands(query)
        return set(brute_duplicates(docs, fingerprint(query), sk, 4, MAX_SKETCH_DISTANCE, keys))

    for path in sorted(texts):
        fp = fingerprint(texts[path])
        code, out, err = run(capsys, "near", "--file", path, "--dsn", dsn, "--json")
        assert code == 0, err
        got = {(n["source"], n["distance"], n["sketch_distance"]) for n in json.loads(out)[0]["neighbors"]}
        assert got == expected(texts[path])
        code, out, err = run(capsys, "near", "--file", path, "--dsn", dsn, "--json", "--confirm", "none")
        assert {(n["source"], n["distance"]) for n in json.loads(out)[0]["neighbors"]} == set(
            brute_near({s: d[0] for s, d in docs.items()}, fp, 4))
    # the recipe with a paragraph of another page added: 8 bits away, found through a shared band key
    recipe = os.fspath(CORPUS / "en-cookies-with-footer.txt")
    edited = texts[recipe] + "\n" + " ".join(texts[os.fspath(CORPUS / "en-library-hours-update.txt")].split()[:20])
    code, out, err = run(capsys, "near", "--text", edited, "--dsn", dsn, "--json")
    got = {(n["source"], n["distance"], n["sketch_distance"]) for n in json.loads(out)[0]["neighbors"]}
    assert got == expected(edited)
    assert any(source == recipe and distance > 4 for source, distance, _ in got), got
    code, out, err = run(capsys, "near", "--file", sorted(texts)[0], "--dsn", dsn)
    assert "   sim  source" in out.splitlines()[1]
    code, _, err = run(capsys, "near", "42", "--confirm", "sketch", "--dsn", dsn)
    assert (code, err) == (1, "simpg: --confirm sketch needs texts (--text, --file): a fingerprint has no sketch\n")
    code, _, err = run(capsys, "near", "--text", "x", "--max-sketch-distance", "300", "--dsn", dsn)
    assert (code, err) == (1, "simpg: --max-sketch-distance must be from 0 to 256, got 300\n")


def test_near_on_another_table(conn: object, db: object, capsys: pytest.CaptureFixture[str]) -> None:
    conn.execute("CREATE TABLE items (id integer PRIMARY KEY, fp bigint)")  # type: ignore[attr-defined]
    conn.execute("INSERT INTO items VALUES (1, 7), (2, 6), (3, -1)")  # type: ignore[attr-defined]
    conn.execute("SELECT simpg.create_index('items', 'fp', 2, 4)")  # type: ignore[attr-defined]
    code, out, err = run(capsys, "near", "7", "18446744073709551615", "--table", "items", "--column", "fp",
                         "-k", "1", "--json", "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert code == 0, err
    assert [[(n["id"], n["distance"]) for n in r["neighbors"]] for r in json.loads(out)] == [[(1, 0), (2, 1)], [(3, 0)]]


@pytest.mark.parametrize("argv, message", [
    (["-1"], "simpg: expected 64-bit fingerprint in [0, 2**64), got -1\n"),
    (["0xZZ"], "simpg: expected 64-bit fingerprint, got '0xZZ'\n"),
    ([str(2**64)], f"simpg: expected 64-bit fingerprint in [0, 2**64), got {2**64}\n"),
    ([], "simpg: nothing to look up; give fingerprints, --text or --file\n"),
    (["1_000"], "simpg: expected 64-bit fingerprint, got '1_000'\n"),
    (["+5"], "simpg: expected 64-bit fingerprint, got '+5'\n"),
])
def test_near_bad_input(db: object, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "near", *argv, "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert (code, out, err) == (1, "", message)


def test_near_without_index_or_bad_k(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "near", "5", "--table", "nothing_here", "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert code == 1 and 'relation "nothing_here" does not exist' in err
    assert main(["dedup", str(CORPUS), "--dsn", db.dsn]) == 0  # type: ignore[attr-defined]
    capsys.readouterr()
    # the range this table allows, not advice to rebuild an index the user may not own
    for k in ("9", "40", "-1"):
        code, _, err = run(capsys, "near", "5", "-k", k, "--dsn", db.dsn)  # type: ignore[attr-defined]
        assert (code, err) == (1, f"simpg: -k must be from 0 to 4 for the index on simpg_documents.simhash, "
                                  f"got {k}\n")
    missing = tmp_path / "missing.txt"
    code, _, err = run(capsys, "near", "--file", str(missing), "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert (code, err) == (1, f"simpg: cannot read '{missing}': No such file or directory\n")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xc3\x28")
    code, _, err = run(capsys, "near", "--file", str(bad), "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert (code, err) == (1, f"simpg: {bad}: invalid utf-8 at byte offset 3 (byte 0xc3)\n")


def test_near_defaults_to_the_index_radius(conn: object, db: object, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/python.md's pattern on an index made with create_index's default k=3."""
    conn.execute("CREATE TABLE articles (id integer PRIMARY KEY, simhash bigint)")  # type: ignore[attr-defined]
    conn.execute("INSERT INTO articles VALUES (1, 42), (2, 43), (3, 42 # 15)")  # type: ignore[attr-defined]
    conn.execute("SELECT simpg.create_index('articles', 'simhash')")  # type: ignore[attr-defined]
    code, out, err = run(capsys, "near", "42", "--table", "articles", "--column", "simhash",
                         "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert code == 0, err
    assert out.splitlines()[0] == "42 (fingerprint 42): 2 within 3 bits"
    code, out, err = run(capsys, "near", "42", "--table", "articles", "--column", "simhash", "-k", "4",
                         "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert (code, err) == (1, "simpg: -k must be from 0 to 3 for the index on articles.simhash, got 4\n")


def test_texts_are_not_compared_with_fingerprints_of_another_config(db: object,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A new default is a new config: text queries refuse rows fingerprinted with another one."""
    dsn = db.dsn  # type: ignore[attr-defined]
    old = "simpg-fp1:87fc02debb4e04b3"  # FingerprintConfig() of format 1, as simpg dedup 0.2 stored it
    assert main(["dedup", str(CORPUS), "--dsn", dsn]) == 0
    capsys.readouterr()
    path = sorted(CORPUS.glob("*.txt"))[0]
    conn = db.conn  # type: ignore[attr-defined]
    conn.execute("UPDATE simpg_documents SET fingerprint_config = %s", [old])
    code, _, err = run(capsys, "near", "--file", str(path), "--dsn", dsn)
    assert code == 1 and f"hold fingerprints made with config {old}, not {FingerprintConfig().identity}" in err
    assert "run simpg dedup again on their collection" in err
    code, out, err = run(capsys, "near", str(fingerprint(path.read_text(encoding="utf-8"))), "--dsn", dsn)
    assert code == 0, err  # a fingerprint is the caller's to compare
    assert main(["dedup", str(CORPUS), "--dsn", dsn]) == 0  # replaces the collection: comparable again
    capsys.readouterr()
    code, out, err = run(capsys, "near", "--file", str(path), "--dsn", dsn)
    assert code == 0 and os.fspath(path) in out, err

    # any other table: the config its index records
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("INSERT INTO items VALUES (1, 42)")
    conn.execute("SELECT simpg.create_index('items', 'fp', 3, 4, fingerprint_config => %s)", [old])
    code, _, err = run(capsys, "near", "--text", "some words", "--table", "items", "--column", "fp", "--dsn", dsn)
    assert code == 1 and old in err and "simpg backfill --refingerprint" in err
