"""Reviewers' decisions (simpg.review.decisions, simpg review): kept in PostgreSQL, applied by dedup.

A planted pair marked not_duplicate leaves the pairs and is never in one cluster, even
through a third document; a duplicate decision between two representatives joins their
clusters; both survive --append; a file the report exports is checked whole and written
all or nothing. The clustering constraints are checked against brute force too.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from simpg import allpairs
from simpg.review import decisions
from tests.integration.cli import run

VOCAB = [f"w{n}" for n in range(2000)]


def words(seed: int, n: int = 160) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(VOCAB) for _ in range(n)]


def variant(base: list[str], seed: int, changes: int) -> list[str]:
    rng = random.Random(seed)
    out = list(base)
    for position in rng.sample(range(len(out)), changes):
        out[position] = rng.choice(VOCAB)
    return out


def write(folder: Path, name: str, tokens: list[str]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(" ".join(tokens) + "\n", encoding="utf-8")
    return str(path)


def dedup(capsys: pytest.CaptureFixture[str], dsn: str, folder: Path, *extra: str) -> dict[str, Any]:
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json", "--collection", "c", *extra)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def pair_set(report: dict[str, Any]) -> set[frozenset[str]]:
    return {frozenset((p["source_a"], p["source_b"])) for p in report["pairs"]}


def cluster_sets(report: dict[str, Any]) -> list[set[str]]:
    return [{d["source"] for d in c["documents"]} for c in report["clusters"]]


def together(report: dict[str, Any], x: str, y: str) -> bool:
    return any(x in c and y in c for c in cluster_sets(report))


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Any]:
    """Two families of near-duplicates (t0..t2, u0..u1), unrelated texts, and a later t3 to append."""
    t, u = words(1), words(2)
    first = tmp_path / "first"
    files = {
        "t0": write(first, "t0.txt", t), "t1": write(first, "t1.txt", variant(t, 11, 2)),
        "t2": write(first, "t2.txt", variant(t, 12, 3)),
        "u0": write(first, "u0.txt", u), "u1": write(first, "u1.txt", variant(u, 21, 2)),
        **{f"x{n}": write(first, f"x{n}.txt", words(100 + n)) for n in range(3)},
        "t3": write(tmp_path / "later", "t3.txt", variant(t, 13, 1)),
    }
    return {"files": files, "first": first, "later": tmp_path / "later"}


def ids_by_source(report: dict[str, Any]) -> dict[str, int]:
    return {d["source"]: d["id"] for c in report["clusters"] for d in c["documents"]} | {
        p[f"source_{e}"]: p[e] for p in report["pairs"] for e in ("a", "b")}


def test_decisions_change_what_dedup_returns_and_survive_append(
        db: Any, corpus: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    f = corpus["files"]
    before = dedup(capsys, db.dsn, corpus["first"])
    assert before["decisions"] == []
    # the planted families are near-duplicates, the unrelated texts are not
    assert frozenset((f["t0"], f["t1"])) in pair_set(before) and together(before, f["t0"], f["t1"])
    assert {f["t0"], f["t1"], f["t2"]} in cluster_sets(before) and {f["u0"], f["u1"]} in cluster_sets(before)
    ids = ids_by_source(before)

    code, out, err = run(capsys, "review", "mark", f["t0"], str(ids[f["t1"]]), "--not-duplicate",
                         "--collection", "c", "--dsn", db.dsn, "--reviewer", "ana", "--note", "two editions")
    assert code == 0, err and "not duplicates" in out
    # merge the two clusters: a duplicate decision between their representatives
    code, _, err = run(capsys, "review", "mark", str(ids[f["u0"]]), str(ids[f["t0"]]), "--duplicate",
                       "--collection", "c", "--dsn", db.dsn)
    assert code == 0, err

    # --append a third near-copy of t: near t0 and t1 both, it must not bring them together
    after = dedup(capsys, db.dsn, corpus["later"], "--append")
    assert {(d["a"], d["b"], d["verdict"]) for d in after["decisions"]} == {
        (ids[f["t0"]], ids[f["t1"]], "not_duplicate"), (min(ids[f["t0"]], ids[f["u0"]]),
                                                        max(ids[f["t0"]], ids[f["u0"]]), "duplicate")}
    pairs = pair_set(after)
    assert frozenset((f["t0"], f["t1"])) not in pairs
    assert frozenset((f["t3"], f["t1"])) in pairs and frozenset((f["t3"], f["t0"])) in pairs  # the third document
    assert not together(after, f["t0"], f["t1"])
    assert frozenset((f["t0"], f["u0"])) in pairs  # the duplicate decision is a pair
    merged = next(c for c in cluster_sets(after) if f["t0"] in c)
    assert {f["t0"], f["t2"], f["t3"], f["u0"], f["u1"]} <= merged and f["t1"] not in merged
    code, text, _ = run(capsys, "dedup", str(corpus["later"]), "--dsn", db.dsn, "--collection", "c", "--append")
    assert "applied 2 reviewer decisions (1 not duplicate, 1 duplicate;" in text

    # the pairs the report engineer's report gets from the stored collection
    stored = decisions.load(db.conn, "c")
    assert [d.reviewer for d in stored] == ["ana", None] and stored.items[0].note == "two editions"
    assert all(d.who == db.conn.execute("SELECT current_user").fetchone()[0] for d in stored)
    assert decisions.apply(before["pairs"], stored) == [p for p in before["pairs"] if {p["a"], p["b"]} != {
        ids[f["t0"]], ids[f["t1"]]}] + [{"a": min(ids[f["t0"]], ids[f["u0"]]), "b": max(ids[f["t0"]], ids[f["u0"]])}]

    # list and undo
    code, out, _ = run(capsys, "review", "list", "--collection", "c", "--dsn", db.dsn, "--json")
    listed = json.loads(out)["decisions"]
    assert [(d["a"], d["b"], d["verdict"]) for d in listed] == [(d.a, d.b, d.verdict) for d in stored]
    code, _, err = run(capsys, "review", "undo", f["t1"], f["t0"], "--collection", "c", "--dsn", db.dsn)
    assert code == 0, err
    again = dedup(capsys, db.dsn, corpus["later"], "--append")
    assert frozenset((f["t0"], f["t1"])) in pair_set(again) and len(again["decisions"]) == 1

    # a run that replaces the collection deletes its rows, and their decisions with them
    dedup(capsys, db.dsn, corpus["first"])
    assert db.conn.execute("SELECT count(*) FROM simpg_decisions").fetchone() == (0,)


def test_a_later_decision_replaces_the_earlier(db: Any, corpus: dict[str, Any],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    f = corpus["files"]
    dedup(capsys, db.dsn, corpus["first"])
    first = decisions.record(db.conn, "c", f["t0"], f["t1"], "not_duplicate", who="ana")
    second = decisions.record(db.conn, "c", f["t1"], f["t0"], "duplicate")
    assert (first.a, first.b) == (second.a, second.b) and first.a < first.b
    assert [(d.verdict, d.reviewer) for d in decisions.load(db.conn, "c")] == [("duplicate", None)]
    assert decisions.forget(db.conn, "c", f["t0"], f["t1"]) is True
    assert decisions.forget(db.conn, "c", f["t0"], f["t1"]) is False
    assert len(decisions.load(db.conn, "c")) == 0


def export(collection: str, entries: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"format": "simpg-decisions", "version": 1, "collection": collection, "decisions": entries, **top}


def test_apply_refuses_bad_files_and_writes_nothing(db: Any, corpus: dict[str, Any], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    f = corpus["files"]
    ids = ids_by_source(dedup(capsys, db.dsn, corpus["first"]))
    # another collection, whose ids are not c's
    code, out, err = run(capsys, "dedup", str(corpus["later"]), "--dsn", db.dsn, "--json", "--collection", "other")
    other_id = db.conn.execute("SELECT id FROM simpg_documents WHERE collection = 'other'").fetchone()[0]
    good = {"a": ids[f["t0"]], "b": ids[f["t1"]], "verdict": "not_duplicate",
            "source_a": f["t0"], "source_b": f["t1"]}
    bad_files = {
        "wrong format": ({"format": "other", "version": 1, "collection": "c", "decisions": []},
                         "is not a simpg-decisions file (format 'other')"),
        "wrong version": (export("c", [good], version=2), "has simpg-decisions version 2"),
        "no collection": (export("nope", [good]), "collection 'nope' has no documents"),
        "unknown id": (export("c", [good, {**good, "b": 999999}]), "decision 2 of"),
        "other collection": (export("c", [good, {**good, "b": other_id, "source_b": f["t3"]}]),
                             f"document {other_id} is in collection 'other', not 'c'"),
        "source mismatch": (export("c", [good, {**good, "source_b": f["t2"]}]),
                            f"document {ids[f['t1']]} is {f['t1']!r}, not {f['t2']!r}"),
        "bad verdict": (export("c", [good, {**good, "verdict": "maybe"}]), "got 'maybe'"),
        "same document": (export("c", [{**good, "b": good["a"], "source_b": f["t0"]}]), "twice"),
    }
    for name, (data, message) in bad_files.items():
        path = tmp_path / f"{name.replace(' ', '_')}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        code, out, err = run(capsys, "review", "apply", str(path), "--dsn", db.dsn)
        assert code == 1 and out == "", name
        assert err.startswith("simpg: ") and err.count("\n") == 1 and message in err, (name, err)
        assert err[7].islower() and not err.rstrip().endswith("."), err
        assert db.conn.execute("SELECT count(*) FROM simpg_decisions").fetchone() == (0,), name
    unknown = tmp_path / "unknown_id.json"
    assert "document 999999 does not exist" in run(capsys, "review", "apply", str(unknown), "--dsn", db.dsn)[2]

    path = tmp_path / "good.json"
    path.write_text(json.dumps(export("c", [good, {"a": ids[f["u1"]], "b": ids[f["t2"]], "verdict": "duplicate",
                                                   "source_a": f["u1"], "source_b": f["t2"]}])), encoding="utf-8")
    code, out, err = run(capsys, "review", "apply", str(path), "--dsn", db.dsn, "--reviewer", "bo")
    assert code == 0, err
    assert out == f"recorded 2 decisions (1 not duplicate, 1 duplicate) from {path}\n"
    assert sorted((d.a, d.b, d.verdict, d.reviewer) for d in decisions.load(db.conn, "c")) == sorted([
        (ids[f["t0"]], ids[f["t1"]], "not_duplicate", "bo"),
        (min(ids[f["u1"]], ids[f["t2"]]), max(ids[f["u1"]], ids[f["t2"]]), "duplicate", "bo")])


def test_cli_errors_name_the_value(db: Any, corpus: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    f = corpus["files"]
    dedup(capsys, db.dsn, corpus["first"])
    cases = [
        (("mark", "999999", f["t0"], "--not-duplicate", "--collection", "c"),
         "document 999999 is not in collection 'c'"),
        (("mark", "nowhere.txt", f["t0"], "--duplicate", "--collection", "c"),
         "no document with source 'nowhere.txt' in collection 'c'"),
        (("mark", f["t0"], f["t0"], "--duplicate", "--collection", "c"), "got document"),
        (("mark", f["t0"], f["t1"], "--duplicate", "--collection", "zz"), "collection 'zz' has no documents"),
        (("undo", f["t0"], f["t1"], "--collection", "c"), f"no decision on {f['t0']!r} and {f['t1']!r}"),
        (("apply", "/nonexistent/decisions.json"), "/nonexistent/decisions.json"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, "review", *argv, "--dsn", db.dsn)
        assert code == 1 and out == "" and message in err and err.count("\n") == 1, (argv, err)
        assert err.startswith("simpg: ") and err[7].islower(), err


def brute_ok(groups: list[np.ndarray], cannot: list[tuple[int, int]]) -> bool:
    where = {int(r): n for n, g in enumerate(groups) for r in g}
    return all(where.get(a, -1 - a) != where.get(b, -2 - b) for a, b in cannot)


@pytest.mark.parametrize("method", allpairs.CLUSTER_METHODS)
def test_cannot_and_must_link_against_brute_force(method: str) -> None:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**63, size=12, dtype=np.uint64)
    # near copies of a few values, up to 3 bits away, so that some copies are 4 to 6 bits apart (chains);
    # and exact copies, which are taken apart when a decision names one
    flips = [np.bitwise_or.reduce(np.uint64(1) << rng.integers(0, 64, size=3).astype(np.uint64)
                                  * rng.integers(0, 2, size=3).astype(np.uint64)) for _ in range(160)]
    fps = np.concatenate([base[rng.integers(0, 12, size=160)] ^ np.array(flips, dtype=np.uint64), base[:3], base[:3]])
    decided = allpairs.decide(fps, 3)
    plain = decided.clusters(method)
    edges = {(int(i), int(j)) for i, j, _, _ in decided.pair_chunks() for i, j in zip(i, j, strict=True)}
    for trial in range(20):
        local = random.Random(trial)
        cannot = [tuple(sorted(local.sample(sorted(g.tolist()), 2))) for g in local.sample(plain, min(4, len(plain)))]
        must = [(int(local.choice(plain[0])), int(local.choice(plain[-1])))]
        groups = decided.clusters(method, cannot_link=cannot, must_link=must)
        assert brute_ok(groups, cannot), (trial, cannot)
        rows = [int(r) for g in groups for r in g]
        assert len(rows) == len(set(rows))  # a row is in one cluster at most
        for g in groups:  # every cluster is joined by edges and must_link pairs, and nothing else
            members = set(g.tolist())
            linked = {(a, b) for a, b in itertools.combinations(sorted(members), 2)
                      if (a, b) in edges and (a, b) not in cannot} | {tuple(sorted(m)) for m in must}
            seen, todo = {min(members)}, [min(members)]
            while todo:
                x = todo.pop()
                for a, b in linked:
                    for y in ((b,) if a == x else (a,) if b == x else ()):
                        if y in members and y not in seen:
                            seen.add(y)
                            todo.append(y)
            assert seen == members
            if method == "representative" and not set(must[0]) & members:
                rep = min(members)  # every member is a neighbour of the representative
                assert all((min(rep, r), max(rep, r)) in edges for r in members - {rep})
        merged = {int(r) for g in groups for r in g if must[0][0] in g.tolist()}
        if not any(a in merged and b in merged for a, b in cannot) and must[0][1] not in merged:
            # the merge was refused: it would have put a cannot_link pair together
            m0 = next((set(g.tolist()) for g in groups if must[0][1] in g.tolist()), {must[0][1]})
            assert any((a in merged and b in m0) or (a in m0 and b in merged) for a, b in cannot)
    with pytest.raises(Exception, match="cannot_link must pair two rows"):
        decided.clusters(method, cannot_link=[(0, 0)])


def test_no_decisions_table_means_no_decisions(conn: psycopg.Connection) -> None:
    assert len(decisions.load(conn, "c")) == 0
    assert decisions.apply([(1, 2, 0)], decisions.load(conn, "c")) == [(1, 2, 0)]


def test_the_stored_report_applies_and_shows_decisions(db: Any, corpus: dict[str, Any],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``simpg report --collection`` decides as ``dedup --append`` would: decisions applied and shown."""
    from simpg.review import data

    f = corpus["files"]
    dedup(capsys, db.dsn, corpus["first"])
    plain = data.from_collection(db.conn, "c")
    ids = {d["source"]: int(i) for i, d in plain["documents"].items()}
    t0, t1 = ids[f["t0"]], ids[f["t1"]]

    def co_clustered(report: dict[str, Any], x: int, y: int) -> bool:
        return any({x, y} <= {c["representative"], *(m["id"] for m in c["members"])} for c in report["clusters"])

    def linked(report: dict[str, Any], x: int, y: int) -> bool:
        return any({link["a"], link["b"]} == {x, y} for link in report["links"])

    assert co_clustered(plain, t0, t1) and plain["decisions"] == []
    decisions.record(db.conn, "c", t0, t1, "not_duplicate", who="ana")
    reviewed = data.from_collection(db.conn, "c")
    assert not co_clustered(reviewed, t0, t1) and not linked(reviewed, t0, t1)
    assert [(d["a"], d["b"], d["verdict"], d["who"]) for d in reviewed["decisions"]] == [
        (min(t0, t1), max(t0, t1), "not_duplicate", "ana")]
