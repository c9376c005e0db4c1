"""simpg.spark.passage_pairs / passage_clusters and ``simpg spark find-passages``: the in-memory report's answers.

simpg.passages.passage_pairs (checked against brute force in tests/unit/test_passage_pairs.py)
is the reference: on the same texts, Spark gives the same candidates (with the hashes they
share), the same common hashes, the same kept pairs with every count, passage and direction,
and the same clusters. Texts: random Latin and CJK with planted passages (respelled), a
boilerplate paragraph in many of them, empty, one-word and three-word documents, and a document
holding another twice. Ids are not positions (negative ones too); a small ``block_size`` cuts
the boilerplate's hashes into blocks. One session, the suite's ``spark`` fixture (local[2]).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from simpg.passages import (
    CommonHash,
    PassageConfig,
    PassagePairs,
    candidate_pairs,
    passage_clusters,
    passage_hashes,
    passage_pairs,
)
from simpg.spark import passages as spark_passages
from tests.integration.cli import run
from tests.passage_texts import BOILERPLATE, planted_corpus

WINDOW = 4
Row = tuple[Any, ...]


def corpus(seed: int, n: int) -> tuple[list[str], list[int]]:
    """Planted texts plus a document holding another twice and the boilerplate alone; ids increasing, not positions."""
    rng = random.Random(seed)
    texts = planted_corpus(rng, n)
    donor = next(t for t in texts if len(t.split()) > 60)
    texts += [donor + " and again: " + donor, BOILERPLATE, "", "one"]
    ids = sorted(rng.sample(range(-10_000, 10_000), len(texts)))
    return texts, ids


def memory_rows(report: PassagePairs, ids: list[int]) -> list[Row]:
    rows = []
    for p in report.pairs:
        c = p.comparison
        rows.append((ids[p.a], ids[p.b], ids[p.source], p.rule, c.shared_tokens, c.longest, c.a_in_b, c.b_in_a,
                     c.a_shingles, c.b_shingles, c.shared_shingles,
                     [tuple(getattr(q, f) for f in spark_passages.PASSAGE_FIELDS) for q in c.passages]))
    return rows


def spark_rows(rows: list[Any]) -> list[Row]:
    return sorted((r["a"], r["b"], r["source"], r["rule"], r["shared_tokens"], r["longest"], r["a_in_b"], r["b_in_a"],
                   r["a_shingles"], r["b_shingles"], r["shared_shingles"],
                   [tuple(q[f] for f in spark_passages.PASSAGE_FIELDS) for q in r["passages"]]) for r in rows)


def memory_clusters(report: PassagePairs, ids: list[int]) -> list[tuple[list[int], list[int]]]:
    return sorted(([ids[m] for m in c.members], [ids[s] for s in c.sources]) for c in passage_clusters(report.pairs))


def spark_clusters(rows: list[Any]) -> list[tuple[list[int], list[int]]]:
    groups: dict[int, list[Any]] = {}
    for r in rows:
        groups.setdefault(r["cluster_id"], []).append(r)
    out = []
    for cluster_id, members in groups.items():
        assert cluster_id == min(r["id"] for r in members)
        assert all(r["size"] == len(members) for r in members)
        out.append((sorted(r["id"] for r in members), sorted(r["id"] for r in members if r["source"])))
    return sorted(out)


@pytest.mark.parametrize(("min_tokens", "min_containment", "max_common", "ranked", "given_hashes"), [
    (8, None, None, False, False),   # every hash makes pairs, boilerplate included; rank = id
    (None, 0.3, 3, True, True),      # boilerplate left out; a rank column with ties; hashes given
])
def test_passage_pairs_equal_the_in_memory_report(spark: Any, min_tokens: int | None, min_containment: float | None,
                                                  max_common: int | None, ranked: bool, given_hashes: bool) -> None:
    texts, ids = corpus(1 if ranked else 0, 36)
    config = PassageConfig(WINDOW)
    rng = random.Random(5)
    ranks = [rng.randrange(4) for _ in texts] if ranked else ids
    hashes = [passage_hashes(t, config) for t in texts]
    given = [random.Random(n).sample(h, len(h)) + h[:1] for n, h in enumerate(hashes)]  # any order, repeats
    rows = [(i, t, r, g) for i, t, r, g in zip(ids, texts, ranks, given, strict=True)]
    df = spark.createDataFrame(rows, "doc long, body string, arrived int, hashes array<long>")
    report = spark_passages.passage_pairs(df, config, id_column="doc", text_column="body",
                                          hashes_column="hashes" if given_hashes else None,
                                          rank_column="arrived" if ranked else None, min_tokens=min_tokens,
                                          min_containment=min_containment, max_common=max_common, block_size=3)
    try:
        expected = passage_pairs(texts, config, min_tokens=min_tokens, min_containment=min_containment,
                                 max_common=max_common, rank=ranks, workers=1)
        assert expected.pairs and {p.rule for p in expected.pairs} == ({"rank", "containment"} if ranked else {"rank"})
        found = candidate_pairs(hashes, max_common=max_common)
        assert report.documents == len(texts) and report.candidate_count == expected.candidates
        assert sorted(tuple(r) for r in report.candidates.collect()) == [
            (ids[a], ids[b], n) for a, b, n in zip(found.a.tolist(), found.b.tolist(), found.shared.tolist(),
                                                   strict=True)]
        common = sorted((r["hash"], r["documents"]) for r in report.common.collect())
        assert tuple(CommonHash(h, n) for h, n in common) == expected.common
        assert bool(expected.common) == (max_common is not None)
        got = report.pairs.collect()
        assert spark_rows(got) == memory_rows(expected, ids)
        clusters = spark_passages.passage_clusters(spark.createDataFrame(got, spark_passages.PAIRS_SCHEMA))
        assert spark_clusters(clusters.collect()) == memory_clusters(expected, ids)
    finally:
        report.unpersist()


def test_bad_documents_are_an_error_naming_them(spark: Any) -> None:
    from simpg.exc import SimpgError

    for rows, message in (([(1, "a"), (1, "b")], "id 1 is given to 2 documents: ids must be unique"),
                          ([(1, "a"), (2, None)], "document 2 has no text")):
        with pytest.raises(SimpgError, match=message):
            spark_passages.passage_pairs(spark.createDataFrame(rows, "id long, text string"))
    with pytest.raises(SimpgError, match=r"no text column 'body' \(columns: id, text\)"):
        spark_passages.passage_pairs(spark.createDataFrame([(1, "a")], "id long, text string"), text_column="body")
    with pytest.raises(SimpgError, match="id column 'id': expected an integer, got '7x'"):
        spark_passages.passage_pairs(spark.createDataFrame([("7", "a"), ("7x", "b")], "id string, text string"))
    with pytest.raises(SimpgError, match="text column 'text' must hold strings, got bigint"):
        spark_passages.passage_pairs(spark.createDataFrame([(1, 2)], "id long, text long"))


def test_cli_find_passages(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    texts, ids = corpus(2, 24)
    spark.createDataFrame(list(zip(ids, texts, strict=True)), "doc long, body string").write.parquet(
        str(tmp_path / "docs.parquet"))
    out, clusters = tmp_path / "pairs.json", tmp_path / "clusters.json"
    code, printed, err = run(capsys, "spark", "find-passages", str(tmp_path / "docs.parquet"), "--key", "doc",
                             "--text-column", "body", "--window", str(WINDOW), "--min-tokens", "10",
                             "--max-common", "4", "-o", str(out), "--clusters", str(clusters))
    assert code == 0, err
    expected = passage_pairs(texts, PassageConfig(WINDOW), min_tokens=10, max_common=4, rank=ids, workers=1)
    assert json.loads(printed) == {"documents": len(texts), "candidates": expected.candidates,
                                   "common_hashes": len(expected.common), "pairs": len(expected.pairs),
                                   "output": str(out), "clusters": str(clusters)}
    assert spark_rows(spark.read.schema(spark_passages.PAIRS_SCHEMA).json(str(out)).collect()) == memory_rows(
        expected, ids)
    assert spark_clusters(spark.read.json(str(clusters)).collect()) == memory_clusters(expected, ids)
    # the output exists now: refused without --overwrite, in one line
    code, printed, err = run(capsys, "spark", "find-passages", str(tmp_path / "docs.parquet"), "-o", str(out))
    assert (code, err.strip()) == (1, f"simpg: cannot write {str(out)!r}: it exists; choose another path or pass "
                                      "--overwrite")
    code, printed, err = run(capsys, "spark", "find-passages", str(tmp_path / "docs.parquet"), "-o",
                             str(tmp_path / "x"))
    assert (code, err.strip()) == (1, f"simpg: no column 'text' in {str(tmp_path / 'docs.parquet')!r} "
                                      "(columns: doc, body)")


def test_cli_text_and_csv_input(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    words = [f"w{i}" for i in range(60)]
    texts = [" ".join(words), "intro " + " ".join(words[5:40]), "nothing shared here", " ".join(words[30:60])]
    expected = passage_pairs(texts, PassageConfig(WINDOW), min_tokens=10, workers=1)
    want = sorted((p.a + 1, p.b + 1, p.source + 1, p.comparison.longest) for p in expected.pairs)
    assert len(want) == 3
    (tmp_path / "docs.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")  # ids: line numbers
    # CSV: a quoted text spanning lines, ids named id
    (tmp_path / "docs.csv").write_text("id,text\n" + "".join(f'{n},"{t.replace(" w3", chr(10) + "w3")}"\n'
                                                            for n, t in enumerate(texts, start=1)), encoding="utf-8")
    for name in ("docs.txt", "docs.csv"):
        out = tmp_path / f"{name}.parquet"
        code, printed, err = run(capsys, "spark", "find-passages", str(tmp_path / name), "--window", str(WINDOW),
                                 "--min-tokens", "10", "-o", str(out))
        assert code == 0, err
        assert json.loads(printed)["pairs"] == 3
        got = sorted((r["a"], r["b"], r["source"], r["longest"]) for r in spark.read.parquet(str(out)).collect())
        assert got == want, name
