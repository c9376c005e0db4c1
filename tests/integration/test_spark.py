"""simpg.spark and ``simpg spark``: the same pairs and clusters as the one-machine engine and brute force.

One local Spark (``local[2]``, the session fixture ``spark``) runs every test; the data
are random and adversarial: distance 0 and k+1, duplicates, bits 0 and 63, negative
bigint fingerprints, a popular prefix, and a fingerprint repeated 10,000 times. Small
``block_size`` values force the skew path (groups cut into blocks) on small data.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simpg import allpairs
from simpg.layout import Layout
from simpg.spark import engine, io
from tests.integration.cli import run
from tests.oracles import brute_pairs_numbered

Pair = tuple[int, int, int]


def adversarial(seed: int, k: int) -> np.ndarray:
    """Random fingerprints, neighbours at 0..k+1 bits (bits 0 and 63 often), duplicates, extremes."""
    rng = random.Random(seed)
    base = [rng.getrandbits(64) for _ in range(250)]
    out = list(base)
    for i, b in enumerate(base[:120]):
        flips = rng.sample([0, 63, *rng.sample(range(1, 63), 6)], i % (k + 2))
        for p in flips:
            b ^= 1 << p
        out.append(b)
    out += base[:6] + base[:2] + [0, 1, 2**63, 2**63 + 1, 2**64 - 1, 2**64 - 2, 2**62]
    # a popular prefix: 150 values that differ only in their 10 low bits
    top = rng.getrandbits(54) << 10
    out += [top | v for v in rng.sample(range(1024), 150)]
    rng.shuffle(out)
    return np.array(out, dtype=np.uint64)


def one_machine(fps: np.ndarray, k: int) -> list[Pair]:
    return sorted((int(a) + 1, int(b) + 1, int(d)) for i, j, dd in allpairs.pair_chunks(fps, k)
                  for a, b, d in zip(i, j, dd, strict=True))


def frame(spark: Any, fps: np.ndarray, ids: np.ndarray | None = None) -> Any:
    ids = np.arange(1, len(fps) + 1) if ids is None else ids
    return spark.createDataFrame([(int(i), int(f)) for i, f in zip(ids, fps.view(np.int64), strict=True)],
                                 "id long, fp long")


def groups(rows: list[Any]) -> list[list[int]]:
    found: dict[int, list[int]] = {}
    for r in rows:
        found.setdefault(r["cluster_id"], []).append(r["id"])
        assert r["cluster_id"] in {r["id"] for r in rows}
    return sorted(sorted(g) for g in found.values())


@pytest.mark.parametrize("k", [0, 1, 3])
def test_pairs_equal_brute_force_and_one_machine(spark: Any, k: int) -> None:
    fps = adversarial(k, k)
    expected = sorted(brute_pairs_numbered(fps.tolist(), k))
    assert expected == one_machine(fps, k)
    prepared = engine.prepare(frame(spark, fps))
    try:
        for block_size, layout in ((engine.BLOCK_SIZE, None), (7, None), (3, Layout(k, (k + 2, k + 2)) if k else None)):
            got = sorted(tuple(r) for r in engine.pairs(prepared, k, layout, block_size=block_size).collect())
            assert got == expected, (block_size, layout)
    finally:
        prepared.unpersist()


def test_clusters_equal_one_machine(spark: Any) -> None:
    k = 3
    fps = adversarial(7, k)
    ids = np.array(random.Random(1).sample(range(-500, 5000), len(fps)), dtype=np.int64)  # any order, negative too
    prepared = engine.prepare(frame(spark, fps, ids))
    try:
        fp_pairs = engine.fingerprint_pairs(prepared, k, block_size=5)
        for method in engine.CLUSTER_METHODS:
            rows = engine.cluster_table(prepared, fp_pairs, method).collect()
            expected = sorted(sorted(int(ids[r]) for r in g)
                              for g in allpairs.clusters(fps, k, method=method, rank=ids))
            assert groups(rows) == expected, method
            sizes = {r["cluster_id"]: r["size"] for r in rows}
            assert all(sizes[r["cluster_id"]] == sum(1 for s in rows if s["cluster_id"] == r["cluster_id"])
                       for r in rows)
            if method == "components":  # the smallest id names the cluster, as simpg.clusters
                assert all(r["cluster_id"] == min(g) for g in groups(rows) for r in rows if r["id"] in g)
    finally:
        prepared.unpersist()


def test_connected_components_of_long_chains(spark: Any) -> None:
    # a path 0-1-...-199 in shuffled order, a star, and a cycle: many large/small-star rounds
    rng = random.Random(3)
    path = list(range(200))
    rng.shuffle(path)
    edges = [(path[i], path[i + 1]) for i in range(199)]
    edges += [(1000, 1000 + i) for i in range(1, 50)] + [(2000 + i, 2000 + (i + 1) % 30) for i in range(30)]
    got = {r["node"]: r["component"] for r in
           engine.connected_components(spark.createDataFrame(edges, "u long, v long")).collect()}
    expected = {n: min(path) for n in path} | {1000 + i: 1000 for i in range(50)} | {2000 + i: 2000 for i in range(30)}
    assert got == expected


def test_a_fingerprint_10000_times_and_a_popular_prefix(spark: Any) -> None:
    # 10,000 rows of one fingerprint (ids 1..10000), two neighbours at distance 1 and 2,
    # and 2,000 distinct values sharing every bit but the low 12 (one prefix for all tables).
    rng = np.random.default_rng(5)
    dup = np.uint64(0x8000_0000_0000_0001)
    popular = np.uint64(0x1234_5678_9ABC_D000) | rng.choice(4096, 2000, replace=False).astype(np.uint64)
    fps = np.concatenate([np.full(10_000, dup), [dup ^ np.uint64(1 << 40), dup ^ np.uint64(3)], popular])
    k = 2
    prepared = engine.prepare(frame(spark, fps))
    try:
        result = engine.pairs(prepared, k, block_size=512)
        got = {(r["distance"]): (r["n"], r["sa"], r["sb"], r["sab"]) for r in result.groupBy("distance").agg(
            {"*": "count", "id_a": "sum", "id_b": "sum"}).withColumnRenamed("count(1)", "n")
            .withColumnRenamed("sum(id_a)", "sa").withColumnRenamed("sum(id_b)", "sb")
            .join(result.selectExpr("distance", "id_a * id_b AS ab").groupBy("distance").sum("ab")
                  .withColumnRenamed("sum(ab)", "sab"), "distance").collect()}
        # expected: the 10,000 equal rows by formula, every other pair by brute force
        n = 10_000
        equal = (n * (n - 1) // 2, sum(i * (n - i) for i in range(1, n + 1)),
                 sum(j * (j - 1) for j in range(1, n + 1)), sum(j * (j - 1) * j // 2 for j in range(1, n + 1)))
        expected: dict[int, list[int]] = {}
        rest = np.arange(n, len(fps))  # rows 10001.. : brute force among themselves and to one dup row
        pairs = sorted(brute_pairs_numbered(fps[rest].tolist(), k))
        for a, b, d in pairs:
            e = expected.setdefault(d, [0, 0, 0, 0])
            a, b = a + n, b + n
            e[0] += 1
            e[1] += a
            e[2] += b
            e[3] += a * b
        for r in rest:
            d = int(np.bitwise_count(fps[r] ^ dup))
            if d <= k:  # paired with each of the 10,000 rows
                e = expected.setdefault(d, [0, 0, 0, 0])
                e[0] += n
                e[1] += n * (n + 1) // 2
                e[2] += n * (int(r) + 1)
                e[3] += (int(r) + 1) * n * (n + 1) // 2
        e = expected.setdefault(0, [0, 0, 0, 0])
        for idx in range(4):
            e[idx] += equal[idx]
        assert got == {d: tuple(v) for d, v in expected.items()}
        comps = engine.clusters(prepared, k, block_size=512).groupBy("cluster_id").count().collect()
        reference = allpairs.clusters(fps, k, method="components")
        assert sorted((r["cluster_id"], r["count"]) for r in comps) == sorted(
            (int(g[0]) + 1, len(g)) for g in reference)
    finally:
        prepared.unpersist()


def test_oversized_groups_are_found_and_cut(spark: Any) -> None:
    fps = adversarial(11, 3)
    masks = [p.source_mask for p in Layout(3, (5,)).permutations]
    heavy = engine._heavy_groups(frame(spark, np.unique(fps)).select("fp"), masks, len(np.unique(fps)), 20)
    assert heavy and all(nb >= 2 for _, _, nb in heavy)  # the popular prefix, in every table


# -- the command line -----------------------------------------------------------------------


def _read(spark: Any, path: Path, fmt: str = "parquet") -> list[tuple[int, ...]]:
    df = spark.read.option("header", True).csv(str(path)) if fmt == "csv" else spark.read.parquet(str(path))
    return sorted(tuple(int(v) for v in r) for r in df.collect())


def test_cli_text_in_parquet_and_csv_out(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fps = adversarial(2, 3)
    text = tmp_path / "fps.txt"
    text.write_text("".join(f"{v}\n" for v in fps.tolist()) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "find-all", "-d", "3", "-i", str(text), "--lines")
    assert code == 0, err
    lines = sorted(tuple(json.loads(line)) for line in out.splitlines())
    code, out, err = run(capsys, "spark", "find-all", "-d", "3", "-i", str(text), "-o", str(tmp_path / "p.parquet"))
    assert code == 0, err
    assert json.loads(out) == {"rows": len(fps), "distinct": len(np.unique(fps)), "output": str(tmp_path / "p.parquet")}
    got = _read(spark, tmp_path / "p.parquet")
    assert [(a, b) for a, b, _ in got] == lines
    assert got == sorted(brute_pairs_numbered(fps.tolist(), 3))
    code, out, err = run(capsys, "find-clusters", "-d", "3", "-i", str(text), "--lines")
    clusters_cli = sorted(json.loads(line) for line in out.splitlines())
    code, out, err = run(capsys, "spark", "find-clusters", "-d", "3", "-i", str(text), "-o", str(tmp_path / "c.csv"))
    assert code == 0, err
    rows = _read(spark, tmp_path / "c.csv", "csv")
    found: dict[int, list[int]] = {}
    for cluster_id, ident, _size in rows:
        found.setdefault(cluster_id, []).append(ident)
    assert sorted(sorted(g) for g in found.values()) == clusters_cli


def test_cli_parquet_and_csv_with_ids_and_negative_fingerprints(spark: Any, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    fps = adversarial(4, 2)
    ids = np.array(random.Random(2).sample(range(10**12, 10**12 + 10**6), len(fps)), dtype=np.int64)
    spark.createDataFrame([(int(i), int(f)) for i, f in zip(ids, fps.view(np.int64), strict=True)],
                          "doc long, simhash long").write.parquet(str(tmp_path / "in.parquet"))
    expected = sorted((min(int(ids[a - 1]), int(ids[b - 1])), max(int(ids[a - 1]), int(ids[b - 1])), d)
                      for a, b, d in sorted(brute_pairs_numbered(fps.tolist(), 2)))
    code, out, err = run(capsys, "spark", "find-all", "-d", "2", "-i", str(tmp_path / "in.parquet"),
                         "--key", "doc", "-o", str(tmp_path / "out.parquet"), "--block-size", "4")
    assert code == 0, err
    assert _read(spark, tmp_path / "out.parquet") == expected
    # CSV: unsigned decimal text, as find-all reads it, and an id column named id
    csv = tmp_path / "in.csv"
    csv.write_text("id,fingerprint\n" + "".join(f"{i},{f}\n" for i, f in zip(ids.tolist(), fps.tolist(),
                                                                              strict=True)), encoding="utf-8")
    code, out, err = run(capsys, "spark", "find-all", "-d", "2", "-i", str(csv), "-o", str(tmp_path / "o.csv"),
                         "-b", "4")
    assert code == 0, err
    assert _read(spark, tmp_path / "o.csv", "csv") == expected


@pytest.mark.parametrize(("content", "args", "message"), [
    ("1\n2\n12x\n", (), "simpg: line 3: expected a decimal 64-bit fingerprint, got '12x'"),
    ("1\n18446744073709551616\n", (), "simpg: line 2: expected a decimal 64-bit fingerprint, "
                                      "got '18446744073709551616'"),
    ("1 5\n7\n", (), "simpg: line 2: expected 'FINGERPRINT' or 'ID FINGERPRINT', the same on every line, got '7'"),
    ("1\n", ("-b", "3"), "simpg: blocks must be greater than k (blocks=3, k=3)"),
    ("1\n", ("-b", "five"), "simpg: --blocks must be a block count like 5 or 4x4, got 'five'"),
    ("1\n", ("--conf", "nonsense"), "simpg: --conf must be KEY=VALUE, got 'nonsense'"),
    ("1 5\n2 6\n1 7\n", (), "simpg: id 1 is given to 2 rows: ids must be unique"),
    ("1\n", ("--column", "x"), "simpg: text input has no columns: --column and --key are for csv "
                                  "and parquet"),
])
def test_cli_bad_input_one_line(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                args: tuple[str, ...], message: str) -> None:
    path = tmp_path / "fps.txt"
    path.write_text(content, encoding="utf-8")
    code, out, err = run(capsys, "spark", "find-all", "-d", "3", "-i", str(path), "-o", str(tmp_path / "o"), *args)
    assert (code, out, err.strip()) == (1, "", message)


def test_cli_missing_file_and_column(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "spark", "find-all", "-d", "3", "-i", str(tmp_path / "none.txt"), "-o", "x")
    assert (code, err.strip()) == (1, f"simpg: cannot read {str(tmp_path / 'none.txt')!r}: No such file or directory")
    (tmp_path / "a.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    code, _, err = run(capsys, "spark", "find-all", "-d", "3", "-i", str(tmp_path / "a.csv"), "-o", "x")
    assert (code, err.strip()) == (1, "simpg: no fingerprint column among a, b; name it with --column")
    code, _, err = run(capsys, "spark", "find-all", "-d", "3", "-i", str(tmp_path / "a.csv"), "-o", "x",
                       "--column", "b", "--key", "c")
    assert (code, err.strip()) == (1, f"simpg: no column 'c' in {str(tmp_path / 'a.csv')!r} (columns: a, b)")


# -- PostgreSQL in and out ---------------------------------------------------------------------


def test_postgres_table_in_and_out_match_the_sql_reports(spark: Any, db: Any,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg
    import sqlalchemy as sa
    import sqlalchemy.ext.automap
    import sqlalchemy.orm

    fps = adversarial(9, 3)
    conn = db.conn
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
    with conn.cursor().copy("COPY docs (id, simhash) FROM STDIN") as copy:
        for i, f in enumerate(fps.view(np.int64).tolist(), start=1):
            copy.write_row((i * 3, f))
    conn.execute("INSERT INTO docs VALUES (-7, NULL)")  # NULL fingerprints are left out, as the reports do
    conn.execute("SELECT simpg.create_index('docs', 'simhash', k => 3)")  # the SQL reports need it
    code, out, err = run(capsys, "spark", "find-all", "-d", "3", "--dsn", db.dsn, "--table", "docs",
                         "--output-table", "near_pairs", "--partitions", "3")
    assert code == 0, err
    report = json.loads(out)
    assert report["rows"] == len(fps)
    spark_pairs = conn.execute("SELECT id_a, id_b, distance FROM near_pairs ORDER BY 1, 2").fetchall()
    sql_pairs = conn.execute("SELECT least(key_a, key_b), greatest(key_a, key_b), distance "
                             "FROM simpg.pairs('docs', 3) ORDER BY 1, 2").fetchall()
    assert spark_pairs == sql_pairs
    assert report["written"] == len(sql_pairs)
    for method in ("components", "representative"):
        code, out, err = run(capsys, "spark", "find-clusters", "-d", "3", "--dsn", db.dsn, "--table", "docs",
                             "--output-table", "public.near_clusters", "--overwrite", "--method", method)
        assert code == 0, err
        got = conn.execute("SELECT cluster_id, id, size FROM near_clusters ORDER BY 2").fetchall()
        want = conn.execute("SELECT cluster_id, key, size FROM simpg.clusters('docs', 3, method => %s) "
                            "ORDER BY 2", [method]).fetchall()
        assert got == want, method
    # the table exists now: refused without --overwrite, in one line
    code, out, err = run(capsys, "spark", "find-all", "-d", "3", "--dsn", db.dsn, "--table", "docs",
                         "--output-table", "near_pairs")
    assert (code, err.strip()) == (1, "simpg: table 'near_pairs' exists; choose another name or pass --overwrite")
    # an ORM maps the output (it has a primary key)
    engine_ = sa.create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(db.dsn))
    try:
        base = sqlalchemy.ext.automap.automap_base()
        base.prepare(autoload_with=engine_)
        with sqlalchemy.orm.Session(engine_) as session:
            assert session.query(base.classes.near_pairs).count() == len(sql_pairs)
    finally:
        engine_.dispose()


def test_postgres_input_reads_one_snapshot(spark: Any, db: Any) -> None:
    conn = db.conn
    conn.execute("CREATE TABLE t (id bigint, simhash bigint)")
    conn.execute("INSERT INTO t SELECT g, g FROM generate_series(1, 5000) AS g")
    with io.read_table(spark, db.dsn, "t", partitions=4) as df:
        conn.execute("DELETE FROM t WHERE id > 100")  # after the snapshot: the read sees all 5000
        rows = df.collect()
    assert sorted(r["id"] for r in rows) == list(range(1, 5001))


def test_cli_workers_run_the_cli_interpreter(spark: Any, tmp_path: Path) -> None:
    """``/path/to/venv/bin/simpg spark ...`` without the venv on PATH: the workers run that interpreter.

    PATH starts with a ``python3`` that fails, as a system Python without simpg and pyarrow would.
    """
    import os
    import subprocess
    import sys

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 'not the driver interpreter' >&2\nexit 3\n")
    (fake / "python3").chmod(0o755)
    fps = adversarial(5, 2)
    text = tmp_path / "fps.txt"
    text.write_text("".join(f"{v}\n" for v in fps.tolist()), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    env["PATH"] = f"{fake}{os.pathsep}{env.get('PATH', '')}"
    out = tmp_path / "p.parquet"
    done = subprocess.run([sys.executable, "-m", "simpg", "spark", "find-all", "-d", "2", "-i", str(text),
                           "-o", str(out), "--master", "local[1]"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _read(spark, out) == sorted(brute_pairs_numbered(fps.tolist(), 2))
