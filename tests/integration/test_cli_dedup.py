"""``simpg dedup``: the sample corpus, JSONL and CSV inputs, bad input, and the embedded default."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from simpg import bits, reference
from simpg.fingerprint import (
    DEDUP_K,
    MAX_SKETCH_DISTANCE,
    FingerprintConfig,
    FingerprintError,
    fingerprint,
    sketch,
    sketch_and_bands,
    sketch_distance,
)
from tests.integration.cli import CORPUS, run
from tests.oracles import brute_text_clusters, brute_text_pairs


def test_sample_corpus_json(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "--json")  # type: ignore[attr-defined]
    assert code == 0, err
    report = json.loads(out)
    files = sorted(CORPUS.glob("*.txt"))
    texts = {os.fspath(p): p.read_text(encoding="utf-8") for p in files}
    assert report["documents"] == len(files)
    got = {frozenset(d["source"] for d in c["documents"]) for c in report["clusters"]}
    assert len(got) >= 5  # the README promises several groups of near-duplicates
    assert report["k"] == DEDUP_K and report["confirm"] == "sketch"
    decided = brute_text_pairs(texts, report["k"])
    for cluster in report["clusters"]:
        first = cluster["documents"][0]  # the representative: the first loaded
        for d in cluster["documents"]:
            assert d["simhash"] == fingerprint(texts[d["source"]])
            assert d["distance"] == bits.hamming(first["simhash"], d["simhash"])
            if d is not first:  # every member is a confirmed near-duplicate of it
                assert frozenset((first["source"], d["source"])) in decided
                sd = sketch_distance(sketch(texts[first["source"]]), sketch(texts[d["source"]]))
                assert d["similarity"] == round(1 - 2 * sd / 256, 3)
    # every pair it decided, with its distances: exactly the brute-force pairs
    assert report["method"] == "representative"
    assert {frozenset((p["source_a"], p["source_b"])): (p["distance"], p["sketch_distance"])
            for p in report["pairs"]} == decided
    assert all(p["a"] < p["b"] and p["similarity"] >= 1 - 2 * MAX_SKETCH_DISTANCE / 256 for p in report["pairs"])
    clustered = {d["source"] for c in report["clusters"] for d in c["documents"]}
    assert clustered == {p[s] for p in report["pairs"] for s in ("source_a", "source_b")}
    code, out, err = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "--json",  # type: ignore[attr-defined]
                         "--clusters", "components")
    assert code == 0, err
    components = {frozenset(d["source"] for d in c["documents"]) for c in json.loads(out)["clusters"]}
    assert components == brute_text_clusters(texts, report["k"])
    # --confirm none: the fingerprints alone, at the reference radius
    code, out, err = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "--json",  # type: ignore[attr-defined]
                         "--confirm", "none")
    alone = json.loads(out)
    assert (alone["k"], alone["confirm"], alone["max_sketch_distance"]) == (4, "none", None)
    assert {frozenset((p["source_a"], p["source_b"])): (p["distance"], None) for p in alone["pairs"]} == \
        brute_text_pairs(texts, 4, confirm=False)
    assert all("similarity" not in p for p in alone["pairs"])
    # rows landed in the reference table, with the config identity
    with psycopg.connect(db.dsn) as conn:  # type: ignore[attr-defined]
        rows = conn.execute("SELECT count(*), min(fingerprint_config) FROM simpg_documents").fetchone()
    assert rows == (len(files), FingerprintConfig().identity)


def test_sample_corpus_table_and_rerun_replaces(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "-k", "2")  # type: ignore[attr-defined]
    assert code == 0
    assert out.splitlines()[0].startswith(f"{len(list(CORPUS.glob('*.txt')))} documents in collection")
    assert "cluster 1 (" in out and "  id  bits   sim  source" in out
    code, again, _ = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "-k", "2")  # type: ignore[attr-defined]
    assert again.splitlines()[0] == out.splitlines()[0]  # replaced, not doubled
    code, appended, _ = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "--append", "--json")  # type: ignore[attr-defined]
    report = json.loads(appended)
    assert report["documents"] == 2 * len(list(CORPUS.glob("*.txt")))
    assert all(c["size"] % 2 == 0 for c in report["clusters"])  # every document now has its copy


def test_jsonl_and_csv(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = "the committee met on tuesday and agreed to repaint the old fence around the park " * 3
    texts = {"a": base, "b": base + "today", "c": "something else entirely about green tea " * 4, "d": ""}
    jsonl = tmp_path / "docs.jsonl"
    lines = [json.dumps({"title": f"t{n}", "content": t} if t else {"content": "  "}) for n, t in texts.items()]
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(jsonl), "--dsn", db.dsn, "--json")  # type: ignore[attr-defined]
    assert code == 0, err
    report = json.loads(out)
    assert report["skipped"] == [f"{jsonl}:4"] and "skipped 1 document" in err
    docs = {d["source"]: d for c in report["clusters"] for d in c["documents"]}
    wanted = brute_text_clusters({f"{jsonl}:{i}": {"title": f"t{n}", "body": t}
                                for i, (n, t) in enumerate(texts.items(), start=1) if t}, DEDUP_K)
    assert {frozenset(d["source"] for d in c["documents"]) for c in report["clusters"]} == wanted
    assert all(d["title"].startswith("t") for d in docs.values())

    csv_file = tmp_path / "docs.csv"
    csv_file.write_text("id,body\n1,\"" + base + "\"\n2,\"" + base + "today\"\n", encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(csv_file), "--dsn", db.dsn, "--json", "--text-column", "body")  # type: ignore[attr-defined]
    assert code == 0, err
    sources = [d["source"] for c in json.loads(out)["clusters"] for d in c["documents"]]
    assert sorted(sources) == [f"{csv_file}:1", f"{csv_file}:2"]


def test_bad_inputs(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    folder = tmp_path / "docs"
    folder.mkdir()
    code, _, err = run(capsys, "dedup", str(folder), "--dsn", dsn)
    assert (code, err) == (1, f"simpg: no documents in {folder} (no files match '**/*.txt')\n")
    (folder / "good.txt").write_text("fine text here", encoding="utf-8")
    (folder / "bad.txt").write_bytes("caf\u00e9 ".encode() + b"\xff\xfe rest")
    code, _, err = run(capsys, "dedup", str(folder), "--dsn", dsn)
    assert code == 1
    assert err == (f"simpg: {folder / 'bad.txt'}: invalid utf-8 at byte offset 6 (byte 0xff); to go on, use "
                   "--errors replace (U+FFFD for bad bytes) or --errors skip (leave such documents out)\n")
    code, _, err = run(capsys, "dedup", str(tmp_path / "nope"), "--dsn", dsn)
    assert (code, err) == (1, f"simpg: cannot read '{tmp_path / 'nope'}': No such file or directory\n")
    (tmp_path / "x.pdf").write_bytes(b"%PDF")
    code, _, err = run(capsys, "dedup", str(tmp_path / "x.pdf"), "--dsn", dsn)
    assert code == 1 and "expected a folder, a .jsonl file or a .csv file" in err
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"text": "ok"}\n{"text": 5}\n', encoding="utf-8")
    code, _, err = run(capsys, "dedup", str(bad_json), "--dsn", dsn)
    assert (code, err) == (1, f"simpg: {bad_json}:2: field 'text' is not a string: 5\n")
    (folder / "bad.txt").unlink()
    for k in ("17", "40", "-2"):  # pairs come from all rows in memory: any k the engine answers
        code, _, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "-k", k)
        assert (code, err) == (1, f"simpg: -k must be from 0 to 16, got {k}\n")
    for t in ("257", "-1"):
        code, _, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--max-sketch-distance", t)
        assert (code, err) == (1, f"simpg: --max-sketch-distance must be from 0 to 256, got {t}\n")
    for workers in ("0", "-2"):
        code, _, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--workers", workers)
        assert (code, err) == (1, f"simpg: --workers must be 1 or more, got {workers}\n")
    with psycopg.connect(dsn) as conn:  # refused before connecting: nothing made or loaded
        assert conn.execute("SELECT to_regclass('simpg_documents')").fetchone() == (None,)


def test_errors_replace_and_skip(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """One non-UTF-8 file need not abort the run: --errors replace or skip, skips reported."""
    dsn = db.dsn  # type: ignore[attr-defined]
    folder = tmp_path / "docs"
    folder.mkdir()
    base = "the committee met on tuesday and agreed to repaint the old fence around the park " * 3
    (folder / "a.txt").write_text(base, encoding="utf-8")
    (folder / "b.txt").write_text(base + "today", encoding="utf-8")
    latin1 = (base + "caf\u00e9").encode("latin-1")
    (folder / "c.txt").write_bytes(latin1)
    (folder / "d.bin.txt").write_bytes(b"\x00\x01binary")
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json", "--errors", "skip")
    assert code == 0, err
    report = json.loads(out)
    assert report["documents"] == 2 and report["skipped"] == [str(folder / "c.txt"), str(folder / "d.bin.txt")]
    assert report["unreadable"] == [
        {"source": str(folder / "c.txt"), "reason": f"invalid utf-8 at byte offset {len(base) + 3} (byte 0xe9)"},
        {"source": str(folder / "d.bin.txt"), "reason": "not a text file (NUL byte at offset 0)"}]
    assert "skipped 2 documents that are not valid utf-8 (--errors skip)" in err
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--errors", "skip")
    assert f"skipped 2 documents: {folder / 'c.txt'}, {folder / 'd.bin.txt'}" in out.splitlines()
    (folder / "d.bin.txt").unlink()
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json", "--errors", "replace")
    assert code == 0, err
    report = json.loads(out)
    assert report["documents"] == 3 and report["skipped"] == []
    with psycopg.connect(dsn) as conn:  # as simpg fingerprint --errors replace reads it
        row = conn.execute("SELECT body, simhash FROM simpg_documents WHERE source = %s",
                           [str(folder / "c.txt")]).fetchone()
    assert row is not None and row[0] == latin1.decode("utf-8", "replace")
    assert bits.from_db(row[1]) == fingerprint(latin1.decode("utf-8", "replace"))

    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_bytes(b'{"text": "' + base.encode() + b'"}\n{"text": "caf\xe9 ' + base.encode()
                      + b'"}\n{"text": "' + base.encode() + b'again"}\n')
    code, out, err = run(capsys, "dedup", str(jsonl), "--dsn", dsn, "--json", "--errors", "skip")
    assert code == 0, err
    report = json.loads(out)
    assert report["documents"] == 2 and report["skipped"] == [f"{jsonl}:2"]
    code, out, err = run(capsys, "dedup", str(jsonl), "--dsn", dsn, "--json", "--errors", "replace")
    assert code == 0 and json.loads(out)["documents"] == 3
    code, out, err = run(capsys, "dedup", str(jsonl), "--dsn", dsn)
    assert code == 1 and err.startswith(f"simpg: {jsonl}: invalid utf-8 at byte offset ")


def test_table_says_what_it_shows(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Singular counts, the clustering rule, and what the bits column is, in the output itself."""
    folder = tmp_path / "docs"
    folder.mkdir()
    base = "the committee met on tuesday and agreed to repaint the old fence around the park " * 3
    (folder / "a.txt").write_text(base, encoding="utf-8")
    (folder / "b.txt").write_text(base, encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (f"2 documents in collection '{folder}': 1 cluster of near-duplicates (each member "
                        f"within {DEDUP_K} bits of its cluster's first document or sharing a band key, confirmed by "
                        "sketches), 2 documents in them")
    assert lines[1] == ("bits: how many bits a document differs from its cluster's first document; "
                        "sim: their estimated share of word sequences (Jaccard, from the sketches)")
    assert lines[5].split()[:3] == ["1", "0", "1.00"]  # id, bits, sim
    (folder / "b.txt").unlink()
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn,  # type: ignore[attr-defined]
                         "--clusters", "components")
    assert out.splitlines()[0] == (f"1 document in collection '{folder}': 0 clusters of near-duplicates "
                                   f"(chains of documents within {DEDUP_K} bits of each other or sharing a band key, "
                                   "confirmed by sketches), "
                                   "0 documents in them")


def test_progress_covers_every_stage(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "--progress")  # type: ignore[attr-defined]
    assert code == 0
    for stage in ("reading", "fingerprinting", "sketching", "loading and indexing", "simpg: pairing "):
        assert stage in err, (stage, err)


def test_unreachable_server(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "dedup", str(CORPUS), "--dsn",
                         f"host={tmp_path} port=1 dbname=x connect_timeout=2")
    assert code == 1 and out == ""
    # the corpus's README.md, left out by the glob, is said first; then the one error line
    assert err.splitlines()[0].startswith("simpg: read 31 files matching **/*.txt; skipped 1 other file")
    assert err.splitlines()[1].startswith("simpg: database error: connection") and err.count("\n") == 2


def test_embedded_default(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    os.chmod(tmp_path, 0o755)  # the embedded server runs as its own OS user when we are root
    monkeypatch.setenv("SIMPG_HOME", str(home))
    monkeypatch.delenv("SIMPG_DSN", raising=False)
    code, out, err = run(capsys, "dedup", str(CORPUS), "--json", "--clusters", "components")
    assert code == 0, err
    report = json.loads(out)
    texts = {os.fspath(p): p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}
    assert {frozenset(d["source"] for d in c["documents"]) for c in report["clusters"]} == brute_text_clusters(
        texts, report["k"])
    assert (home / "pgdata").is_dir()
    code, out, err = run(capsys, "near", "--file", str(CORPUS / "en-cookies-original.txt"), "--json")
    assert code == 0, err
    found = {n["source"] for n in json.loads(out)[0]["neighbors"]}
    assert os.fspath(CORPUS / "en-cookies-original.txt") in found


def test_ensure_reference_schema(conn: psycopg.Connection, bare_db: object) -> None:
    from simpg.exc import ExtensionNotInstalled
    from simpg.psycopg import SimHashColumn
    from simpg.reference import ensure_reference_schema

    assert ensure_reference_schema(conn) is True
    assert ensure_reference_schema(conn) is False
    columns = conn.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = 'simpg_documents' AND column_name NOT LIKE 'simhash_p%' ORDER BY ordinal_position"
    ).fetchall()
    assert columns == [
        ("id", "bigint", "NO"), ("collection", "text", "NO"), ("source", "text", "NO"), ("title", "text", "YES"),
        ("body", "text", "NO"), ("simhash", "bigint", "NO"), ("fingerprint_config", "text", "NO"),
        ("created_at", "timestamp with time zone", "NO"), ("sketch", "bit", "YES"), ("sketch_b0", "bigint", "YES"),
        ("sketch_b1", "bigint", "YES"), ("sketch_b2", "bigint", "YES"), ("sketch_b3", "bigint", "YES"),
        ("passages", "ARRAY", "YES"),
    ]
    assert SimHashColumn(conn, "simpg_documents").layout.name == "k4:6"
    assert conn.execute("SELECT passage_column, passage_window, spaceless_window, index_name "
                        "FROM simpg.passage_indexes").fetchall() == [
        ("passages", reference.PASSAGE_WINDOW, reference.PASSAGE_SPACELESS_WINDOW,
         "simpg_documents_passages_keys_idx")]
    with pytest.raises(ExtensionNotInstalled):
        ensure_reference_schema(bare_db.conn)  # type: ignore[attr-defined]


def test_templates_and_separators_do_not_make_duplicates(db: object, capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    """Issue 14: pages sharing a template, or a separator line, are not called duplicates.

    The pages' fingerprints are close (the template and the underscores weigh most), so
    --confirm none pairs them; the sketches see how little text they share.
    """
    header = ("NAME\n" + "_" * 79 + "\nThis manual page is part of the reference documentation of the toolkit. "
              "Copyright the authors; distributed under the same terms as the toolkit itself.\n")
    footer = "\nSEE ALSO\nthe toolkit reference manual, the introduction, the index of commands\n" + "_" * 79
    bodies = [
        "button widgets display a textual string bitmap or image and invoke a command when pressed",
        "canvas widgets implement structured graphics and can display lines polygons and ovals",
        "entry widgets let the user type a single line of text that can be scrolled horizontally",
        "listbox widgets show a list of strings one per line from which the user may select",
        "scrollbar widgets control the view of another widget with arrows and a slider",
        "zh 这个命令用于创建并操作按钮控件按钮可以显示文本位图或图像并在按下时调用命令",
        "zh 画布控件实现结构化图形可以显示直线多边形椭圆文本窗口以及图像等多种对象",
    ]
    folder = tmp_path / "pages"
    folder.mkdir()
    texts = {}
    for n, body in enumerate(bodies):
        path = folder / f"p{n}.txt"
        texts[os.fspath(path)] = header + body + footer
        path.write_text(texts[os.fspath(path)], encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn, "--json")  # type: ignore[attr-defined]
    assert code == 0, err
    report = json.loads(out)
    assert report["pairs"] == [] and report["clusters"] == []
    assert brute_text_pairs(texts, DEDUP_K) == {}
    assert brute_text_pairs(texts, DEDUP_K, confirm=False)  # what the fingerprints alone would call duplicates


def test_rows_stored_before_sketches_get_them(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A simpg 0.1 table (no sketch or band columns) gains them; old rows are sketched from their stored text."""
    dsn = db.dsn  # type: ignore[attr-defined]
    base = "the committee met on tuesday and agreed to repaint the old fence around the park before the fair " * 3
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(base, encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json")
    assert code == 0, err
    with psycopg.connect(dsn, autocommit=True) as conn:  # as simpg 0.1 left it
        conn.execute("ALTER TABLE simpg_documents DROP COLUMN sketch, DROP COLUMN sketch_b0, DROP COLUMN sketch_b1, "
                     "DROP COLUMN sketch_b2, DROP COLUMN sketch_b3")
    (folder / "a.txt").unlink()
    (folder / "b.txt").write_text(base + "today", encoding="utf-8")
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json", "--append",
                         "--collection", str(folder))
    assert code == 0, err
    report = json.loads(out)
    assert report["documents"] == 2
    assert [(p["source_a"], p["source_b"]) for p in report["pairs"]] == [(str(folder / "a.txt"),
                                                                          str(folder / "b.txt"))]
    assert report["pairs"][0]["sketch_distance"] == sketch_distance(sketch(base), sketch(base + "today"))
    with psycopg.connect(dsn) as conn:
        stored = conn.execute("SELECT source, sketch::text, ARRAY[sketch_b0, sketch_b1, sketch_b2, sketch_b3] "
                              "FROM simpg_documents ORDER BY id").fetchall()
        indexed = conn.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'simpg_documents' "
                               "AND indexname LIKE 'simpg_documents_sketch_b%_idx'").fetchone()
    assert [(s, int(b, 2).to_bytes(32, "big"), tuple(keys)) for s, b, keys in stored] == [
        (str(folder / "a.txt"), *sketch_and_bands(base)), (str(folder / "b.txt"), *sketch_and_bands(base + "today"))]
    assert stored[0][2][0] is not None and indexed == (4,)


def test_dedup_stores_band_keys(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    """Each row's band keys are sketch_and_bands of its text; NULL for texts of fewer than 16 shingles."""
    dsn = db.dsn  # type: ignore[attr-defined]
    code, _, err = run(capsys, "dedup", str(CORPUS), "--dsn", dsn, "--json")
    assert code == 0, err
    with psycopg.connect(dsn) as conn:
        stored = conn.execute("SELECT source, ARRAY[sketch_b0, sketch_b1, sketch_b2, sketch_b3] "
                              "FROM simpg_documents").fetchall()
    texts = {os.fspath(p): p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}
    assert {s: tuple(k) for s, k in stored} == {
        s: sketch_and_bands(t)[1] or (None,) * 4 for s, t in texts.items() if fingerprint_or_none(t) is not None}
    assert sum(k[0] is not None for _, k in stored) > 10


def test_template_pages_and_separator_only_documents(db: object, capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    # issue 14 item 4: pages of one template with unrelated bodies are no cluster, by either
    # decision; a document of separator lines only is left out, with the reason, not clustered
    from tests.template_pages import TEMPLATES

    pages = TEMPLATES["tcl"] + TEMPLATES["zh"]
    texts = [*pages, pages[0].replace("Additional", "More"), "_" * 79 + "\n" + "-" * 79, "=" * 30]
    jsonl = tmp_path / "pages.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    for confirm in ("sketch", "none"):
        code, out, err = run(capsys, "dedup", str(jsonl), "--dsn", db.dsn,  # type: ignore[attr-defined]
                             "--json", "--confirm", confirm)
        assert code == 0, err
        report = json.loads(out)
        assert [sorted(d["source"] for d in c["documents"]) for c in report["clusters"]] == [
            [f"{jsonl}:1", f"{jsonl}:13"]]
        assert report["skipped"] == [f"{jsonl}:14", f"{jsonl}:15"]
        assert report["featureless"] == [
            {"source": f"{jsonl}:14", "reason": "document has no usable features: '" + "_" * 37 + "...'"},
            {"source": f"{jsonl}:15", "reason": "document has no usable features: '" + "=" * 30 + "'"}]
        assert "skipped 2 documents without usable text" in err


def fingerprint_or_none(text: str) -> int | None:
    try:
        return fingerprint(text)
    except FingerprintError:
        return None
