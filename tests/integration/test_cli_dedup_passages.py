"""``simpg dedup --passages`` and ``simpg report --passages``: copied passages of a collection, against brute force.

A folder where passages of other documents were planted (at lengths below, at and above
the guarantee of 50 tokens, Latin and CJK, with NFKC-changing spellings), beside
whole-document near-duplicates. The JSON answer is compared with the oracle of
tests/oracles.py (maximal common runs of the study's tokens, shingle containment, the
source by id), the printed report is checked for each copy, and ``simpg report
--passages`` on the stored collection gives the same pairs and clusters.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.cli import run
from tests.oracles import brute_common_runs, brute_copy_clusters, brute_passage_pair
from tests.passage_texts import study_tokens

GUARANTEE = 50


def _vocabulary(rng: random.Random) -> list[str]:
    # enough distinct words that two random texts share no run of 5
    return sorted({"".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3))
                   for _ in range(3000)})


def planted_folder(folder: Path) -> dict[str, str]:
    """Files loaded in name order (ids ascending), with passages planted and near-duplicates."""
    rng = random.Random(30)
    vocab = _vocabulary(rng)

    def words(n: int) -> list[str]:
        return [rng.choice(vocab) for _ in range(n)]

    original = words(300)
    essay_source = words(200)
    han = "".join(chr(0x4E00 + rng.randrange(2000)) for _ in range(240))
    files = {
        "a-original.txt": " ".join(original),
        # a whole-document near-duplicate of a: one word changed (its pair with a is marked)
        "b-original-again.txt": " ".join(original[:150] + ["changed"] + original[151:]),
        # a repost: 120 words of a, between an introduction and comments, in full-width and capitals
        "c-repost.txt": "Reposted, with thanks. " + " ".join(words(30)) + "\n\n"
                        + " ".join(w.upper() if n % 7 == 0 else w for n, w in enumerate(original[40:160]))
                        + "\n\nComments: " + " ".join(words(40)),
        "d-essay-source.txt": " ".join(essay_source),
        # exactly the guarantee from d, and 30 words of a (below it: not reported)
        "e-essay.txt": "My essay. " + " ".join(words(60)) + ". " + " ".join(essay_source[70:70 + GUARANTEE])
                       + ". " + " ".join(words(20)) + " " + " ".join(original[200:230]) + " " + " ".join(words(20)),
        "f-han.txt": han,
        # 90 characters of f, with full-width digits and a ligature around them
        "g-han-copy.txt": "引用１２３ ﬁle " + han[100:190] + " 完。" + "".join(
            chr(0x5000 + rng.randrange(2000)) for _ in range(60)),
        "h-unrelated.txt": " ".join(words(150)),
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return files


def brute_report(texts: dict[int, str], min_tokens: int) -> tuple[dict[tuple[int, int], Any], list[Any]]:
    """{(a, b): (longest, a_shingles, b_shingles, shared, source)} of pairs sharing a run of min_tokens,
    and their copied-from clusters (id order is load order: the source is the smaller id)."""
    toks = {i: study_tokens(t) for i, t in texts.items()}
    ids = sorted(texts)
    rank = {i: i for i in ids}
    found = {}
    for a, b in itertools.combinations(ids, 2):
        got = brute_passage_pair(toks[a], toks[b], a, b, rank)
        if got.longest >= min_tokens:
            found[(a, b)] = got
    return found, toks


def _check_against_brute(report: dict[str, Any], texts: dict[int, str], near: set[frozenset[int]]) -> None:
    passages = report["passages"]
    found, toks = brute_report(texts, GUARANTEE)
    assert {(p["a"], p["b"]) for p in passages["pairs"]} == set(found)
    for p in passages["pairs"]:
        want = found[(p["a"], p["b"])]
        assert (p["longest"], p["source"], p["rule"]) == (want.longest, want.source, "rank")
        assert p["a_in_b"] == want.shared_shingles / want.a_shingles
        assert p["b_in_a"] == want.shared_shingles / want.b_shingles
        assert p["near_duplicate"] == (frozenset((p["a"], p["b"])) in near)
        runs = brute_common_runs(toks[p["a"]], toks[p["b"]], 5)
        assert p["passage_count"] == len(runs) and p["shared_tokens"] == sum(r[1] - r[0] for r in runs)
        for q, r in zip(p["passages"], runs, strict=True):  # offsets into the texts as stored
            a_text = texts[p["a"]][q["a_start"]:q["a_end"]]
            b_text = texts[p["b"]][q["b_start"]:q["b_end"]]
            assert study_tokens(a_text) == toks[p["a"]][r[0]:r[1]] == study_tokens(b_text)
    partial = [(a, b, w.source) for (a, b), w in found.items() if frozenset((a, b)) not in near]
    assert [(c["members"], c["sources"]) for c in passages["clusters"]] == brute_copy_clusters(partial)


def _stored(dsn: str) -> tuple[dict[int, str], dict[str, int]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT id, source, body, passages IS NOT NULL FROM simpg_documents").fetchall()
    assert all(r[3] for r in rows)  # every row has its passage hashes
    return {r[0]: r[2] for r in rows}, {Path(r[1]).name: r[0] for r in rows}


def test_dedup_passages_against_brute_force_and_report(db: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    planted_folder(tmp_path)
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--passages",
                         "--collection", "planted")
    assert code == 0, err
    report = json.loads(out)
    texts, id_of = _stored(db.dsn)
    assert sorted(id_of, key=id_of.__getitem__) == sorted(id_of)  # loaded in name order
    near = {frozenset(pair) for c in report["clusters"] for pair in itertools.combinations(
        [d["id"] for d in c["documents"]], 2)}
    assert frozenset((id_of["a-original.txt"], id_of["b-original-again.txt"])) in near
    _check_against_brute(report, texts, near)
    pairs = {(Path(p["a_source"]).name, Path(p["b_source"]).name): p for p in report["passages"]["pairs"]}
    # what was planted, by name: the earlier file is the source
    assert set(pairs) == {("a-original.txt", "b-original-again.txt"), ("a-original.txt", "c-repost.txt"),
                          ("b-original-again.txt", "c-repost.txt"), ("d-essay-source.txt", "e-essay.txt"),
                          ("f-han.txt", "g-han-copy.txt")}
    assert pairs[("a-original.txt", "c-repost.txt")]["longest"] == 120
    assert pairs[("d-essay-source.txt", "e-essay.txt")]["longest"] == GUARANTEE
    assert pairs[("f-han.txt", "g-han-copy.txt")]["longest"] == 90
    assert pairs[("a-original.txt", "b-original-again.txt")]["near_duplicate"]
    assert report["passages"]["near_duplicate_pairs"] == 1 and report["passages"]["common_hashes"] == []

    # the printed report: each copy under its cluster, the near-duplicate pair left out and said so
    code, text, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--passages", "--collection", "planted")
    assert code == 0, err
    texts, id_of = _stored(db.dsn)  # a run replaces the collection: new ids
    assert "copied passages: 4 pairs of documents share a passage of 50 tokens or more" in text
    assert "left out: 1 pair of whole-document near-duplicates" in text
    section = text[text.index("copied-from cluster 1"):]
    repost = section[section.index(f"  {id_of['c-repost.txt']} "):].splitlines()
    assert repost[1].startswith(f"    copied from {id_of['a-original.txt']} ")
    assert "120 tokens shared, longest 120" in repost[2]
    han = section[section.index(f"  {id_of['g-han-copy.txt']} "):].splitlines()
    assert han[1].startswith(f"    copied from {id_of['f-han.txt']} ") and "longest 90" in han[2]

    # the same collection from the database: simpg.passage_pairs, then the texts
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--passages",
                         "--collection", "planted")
    from_dedup = json.loads(out)["passages"]
    code, out, err = run(capsys, "report", "--collection", "planted", "--dsn", db.dsn, "--passages", "--json")
    assert code == 0, err
    from_db = json.loads(out)["passages"]
    assert from_db["pairs"] == from_dedup["pairs"] and from_db["clusters"] == from_dedup["clusters"]
    assert from_db["candidates"] == from_dedup["candidates"]
    code, text_db, err = run(capsys, "report", "--collection", "planted", "--dsn", db.dsn, "--passages")
    assert code == 0, err
    assert "copied passages: 4 pairs" in text_db


def test_thresholds_and_refusals(db: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted_folder(tmp_path)
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--passages",
                         "--min-tokens", "100", "--collection", "planted")
    assert code == 0, err
    passages = json.loads(out)["passages"]
    assert {p["longest"] for p in passages["pairs"]} >= {120} and all(p["longest"] >= 100 for p in passages["pairs"])
    # containment: the Han copy holds its source's passage, a small share of either text
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--passages",
                         "--min-containment", "0.5", "--collection", "planted")
    assert code == 0, err
    kept = json.loads(out)["passages"]["pairs"]
    assert kept and all(max(p["a_in_b"], p["b_in_a"]) >= 0.5 for p in kept)
    # every hash is common when two documents are too many: no candidates, the hashes reported
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--passages",
                         "--max-common", "1", "--collection", "planted")
    assert code == 0, err
    skipped = json.loads(out)["passages"]
    assert skipped["pairs"] == [] and skipped["common_hashes"] and all(
        h["documents"] >= 2 for h in skipped["common_hashes"])
    # a share of the documents: at least 1,000 of them, so with a few documents nothing is common
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--json", "--passages",
                         "--max-common", "0.5", "--collection", "planted")
    assert code == 0, err
    shared = json.loads(out)["passages"]
    assert shared["max_common"] == 0.5 and shared["common_hashes"] == [] and shared["pairs"]
    code, out, err = run(capsys, "report", "--collection", "planted", "--dsn", db.dsn, "--json", "--passages",
                         "--max-common", "0.5")
    assert code == 0, err
    stored = json.loads(out)["passages"]  # from SQL: the share is of the collection's rows
    assert stored["common_hashes"] == [] and [(p["a"], p["b"]) for p in stored["pairs"]] == [
        (p["a"], p["b"]) for p in shared["pairs"]]
    for bad, message in ((["--min-tokens", "20"], "min_tokens must be an integer of at least 50"),
                         (["--min-containment", "1.5"], "min_containment must be a number from 0 to 1, got 1.5")):
        code, _, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--passages", *bad)
        assert code != 0 and message in err, err
    with pytest.raises(SystemExit) as parsed:  # refused by the argument parser, naming the value
        run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--passages", "--max-common", "-1")
    assert parsed.value.code == 2
    assert "a share of them between 0 and 1, or none, got '-1'" in capsys.readouterr().err
    code, _, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--min-tokens", "60")
    assert code != 0 and "--min-tokens applies with --passages" in err


def test_report_refuses_rows_without_passages(db: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted_folder(tmp_path)
    code, _, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--collection", "planted")
    assert code == 0, err
    with psycopg.connect(db.dsn, autocommit=True) as conn:  # as an older simpg left them
        conn.execute("UPDATE simpg_documents SET passages = NULL WHERE source LIKE %s", ["%h-unrelated.txt"])
    code, _, err = run(capsys, "report", "--collection", "planted", "--dsn", db.dsn, "--passages")
    assert code != 0
    assert "1 rows of collection 'planted' have no passage hashes" in err and "simpg backfill --passages" in err
    code, _, err = run(capsys, "near", "--passages", "--collection", "planted", "--dsn", db.dsn,
                       "--text", "anything at all")
    assert code == 0, err
    assert "1 rows of collection 'planted' have no passage hashes" in err and "simpg backfill --passages" in err


@pytest.mark.parametrize("workers", [1, 2])
def test_one_pass_gives_the_values_of_both(tmp_path: Path, workers: int) -> None:
    """dedup's worker pass (fingerprints, sketches, bands and passage hashes) equals the two passes apart."""
    import numpy as np

    from simpg import dedup
    from simpg.corpus import read_documents
    from simpg.fingerprint import FingerprintConfig

    planted_folder(tmp_path)
    docs = list(read_documents(str(tmp_path)))
    fused = dedup.fingerprint_sketch_band_and_passage_documents(docs, FingerprintConfig(), workers)
    assert fused[:3] == dedup.fingerprint_sketch_and_band_documents(docs, FingerprintConfig(), 1)
    apart = dedup.passage_hash_documents(docs, 1)
    assert [np.asarray(h).tolist() for h in fused[3]] == apart and any(apart)


def test_append_fills_the_passages_of_earlier_rows(db: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rows stored without passage hashes (an older simpg, or a NULL column) get them from ``dedup --append``,
    in batches that resume; the report after it pairs the old rows too."""
    from simpg import dedup
    from simpg.passages import passage_hashes
    from simpg.reference import PASSAGE_CONFIG

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    planted_folder(old)
    (new / "z-later.txt").write_text("a later document, unrelated to the others", encoding="utf-8")
    code, _, err = run(capsys, "dedup", str(old), "--dsn", db.dsn, "--collection", "planted")
    assert code == 0, err
    with psycopg.connect(db.dsn, autocommit=True) as conn:  # as an older simpg left them
        conn.execute("UPDATE simpg_documents SET passages = NULL")
        # a stopped fill resumes: one batch of two rows written, the rest left for --append
        written = []
        dedup.fill_passages(conn, "planted", batch_size=2,
                            progress=lambda items, total, desc, weight: (written.append(n) or n
                                                                         for n in itertools.islice(items, 1)))
        assert written == [2]
        assert conn.execute("SELECT count(*) FROM simpg_documents WHERE passages IS NOT NULL").fetchone() == (2,)
    code, _, err = run(capsys, "dedup", str(new), "--dsn", db.dsn, "--collection", "planted", "--append")
    assert code == 0, err
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT body, passages FROM simpg_documents WHERE collection = 'planted'").fetchall()
    assert len(rows) == len(list(old.iterdir())) + 1
    assert all(stored == passage_hashes(body, PASSAGE_CONFIG) for body, stored in rows)
    # the report over the stored collection is complete: the repost among the old rows is found
    code, out, err = run(capsys, "report", "--collection", "planted", "--dsn", db.dsn, "--passages", "--json")
    assert code == 0, err
    found = {(p["a_source"].rsplit("/", 1)[-1], p["b_source"].rsplit("/", 1)[-1])
             for p in json.loads(out)["passages"]["pairs"]}
    assert ("a-original.txt", "c-repost.txt") in found
