"""What band keys cost online (measured prototype, not product): lookup time and bytes per row.

The cost side of :mod:`bench.quality.bands`, in the shape of ``bench/confirm_cost.py``: one
server, the same fingerprints (``bench/generate.py``, uniform with planted neighbours), random
sketches and random band keys, the same queries, interleaved round-robin over the variants:

* **today**: ``SimHashColumn.near(q)`` at k = 4 on the reference layout (6 blocks, 15 tables), no
  sketch column (the 1.0x of issue 14's cost limits);
* **duplicates k=4**: ``SimHashColumn.duplicates(q, sketch)`` at k = 4 on that layout, sketch column;
* **k=K + b bands**: a ``bit(256)`` sketch column and ``b`` bigint band columns, each with a
  B-tree (fillfactor 100, as the prefix B-trees), and the fingerprint indexed for k = K on the
  planner's layout (K ``-``: the fingerprint is stored but not indexed). One statement: the
  prefix ranges of ``duplicates`` ORed with ``band_i = $bands[i]`` (PostgreSQL makes a BitmapOr
  of one B-tree scan per table and per band), kept when ``hamming <= K`` or a band is equal,
  and confirmed by the sketch. With K a number this is now the product's statement
  (``SimHashColumn.duplicates(..., band_keys=, band_columns=)``; the figures in
  docs/fingerprinting.md were measured with the prototype's, which lacked its
  ``fp IS NOT NULL``); bands only (K ``-``) stays the prototype's.
* **SQL simpg.duplicates k=K + 4 bands**: the same table as k=K + 4 bands, looked up through
  ``SELECT id FROM simpg.duplicates(NULL::t, fp, K, sketch, bands)`` (a client-side prepared
  statement): the SQL function against ``SimHashColumn.duplicates`` on the same rows, in the
  same rounds. Band columns are named as the product's default, ``sketch_b0`` ...

Every candidate's sketch is compared (limit 256, as confirm_cost.py). Rows come in groups of
``--band-hits`` (8) sharing band 0; each query's band 0 is a random row's band 0, so a lookup
finds that many rows through the bands (about the mean number of candidates per lookup on the
English tuning part with 4 bands); its other bands are fresh random keys. Bytes per row are
``pg_relation_size`` + ``pg_indexes_size`` over the rows.

Usage::

    python3 -m bench.quality.bands_cost --rows 1000000 --designs 5:0,4:4,4:6,3:4,3:6,-:4,-:6 --rounds 5
    python3 -m bench.quality.bands_cost --rows 50000 --designs 4:4,3:4,-:4 --check 200   # exact?
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402
import pgserver  # noqa: E402

from simpg import planner, schema  # noqa: E402
from simpg.layout import Layout  # noqa: E402
from simpg.psycopg import SimHashColumn, _common, statements  # noqa: E402
from simpg.psycopg.wire import Int8Array, register_dumpers  # noqa: E402

M64 = (1 << 64) - 1


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def signed(x: np.ndarray) -> np.ndarray:
    return x.astype(np.uint64).view(np.int64)


def build(conn: psycopg.Connection, name: str, fps: np.ndarray, sketches: np.ndarray | None,
          bands: np.ndarray | None, layout: Layout | None) -> dict[str, Any]:
    """A table of (id, fp[, sketch][, band_i...]); fp indexed with ``layout``; bytes per row."""
    nb = 0 if bands is None else bands.shape[1]
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    cols = ["id bigint PRIMARY KEY", "fp bigint NOT NULL"]
    if sketches is not None:
        cols.append("sketch bit(256)")
    cols += [f"sketch_b{i} bigint NOT NULL" for i in range(nb)]
    conn.execute(f"CREATE TABLE {name} ({', '.join(cols)})")
    sb = None if bands is None else signed(bands)
    with conn.cursor().copy(f"COPY {name} FROM STDIN") as copy:
        for i, fp in enumerate(fps.tolist(), start=1):
            row: list[Any] = [i, fp]
            if sketches is not None:
                row.append("x" + sketches[i - 1].tobytes().hex())
            if sb is not None:
                row += sb[i - 1].tolist()
            copy.write_row(row)
    started = time.perf_counter()
    if layout is not None:
        inner = f", inner_blocks => {layout.levels[1]}" if len(layout.levels) > 1 else ""
        conn.execute(f"SELECT simpg.create_index('{name}', 'fp', k => {layout.k}, blocks => {layout.levels[0]}{inner})")
    for i in range(nb):
        conn.execute(f"CREATE INDEX {name}_sketch_b{i} ON {name} (sketch_b{i}) WITH (fillfactor = 100)")
    conn.execute(f"VACUUM ANALYZE {name}")
    heap, index = conn.execute("SELECT pg_relation_size(%s), pg_indexes_size(%s)", [name, name]).fetchone()
    n = len(fps)
    return {"table": name, "layout": layout.name if layout else "-", "tables": layout.tables if layout else 0,
            "bands": nb, "build_seconds": time.perf_counter() - started, "heap_bytes_per_row": heap / n,
            "index_bytes_per_row": index / n, "bytes_per_row": (heap + index) / n}


def bands_only_sql(table: str, nb: int) -> sql.Composed:
    """Candidates sharing a band key, confirmed by the sketch (no fingerprint index: the prototype's)."""
    bands = [sql.SQL("t.{c} = {b}[{i}]").format(c=sql.Identifier(f"sketch_b{i}"), b=sql.Placeholder("bands"),
                                                 i=sql.Literal(i + 1)) for i in range(nb)]
    sketch = sql.SQL("bit_count(t.sketch # {s}::bit(256))").format(s=sql.Placeholder("s"))
    return sql.SQL("SELECT t.id, {sketch} AS sketch_distance FROM {rel} AS t WHERE ({bands}) AND {sketch} <= {t} "
                   "ORDER BY sketch_distance, t.id").format(
        sketch=sketch, rel=sql.Identifier(table), bands=sql.SQL(" OR ").join(bands), t=sql.Placeholder("t"))


class Banded:
    """A lookup handle for one banded table (the statement composed once, prepared)."""

    def __init__(self, dsn: str, table: str, nb: int, k: int | None) -> None:
        self.k = k
        self.columns = [f"sketch_b{i}" for i in range(nb)]
        self.handle = SimHashColumn.connect(dsn, table, "fp", key_column="id") if k is not None else None
        self.conn = self.handle.conn if self.handle else psycopg.connect(dsn, autocommit=True)
        register_dumpers(self.conn)
        self.info = _common.with_ids(self.handle.info) if self.handle else None
        # what explain shows: the product's statement, or the bands-only prototype's
        if self.info is not None:  # $1..$6, run with a RawCursor
            condition = self.conn.execute(statements.DUPLICATES_CONDITION_SQL, statements.duplicates_condition_params(
                self.info, "sketch", self.columns)).fetchone()[0]
            self.statement = statements.duplicates_sql(self.info, "sketch", condition).as_bytes(self.conn)
        else:
            self.statement = bands_only_sql(table, nb).as_bytes(self.conn)

    def params(self, q: int, sketch: bytes, bands: list[int]) -> Any:
        if self.info is not None:
            return _common.duplicates_params(self.info, q, self.k or 0, sketch, 256, bands, self.columns)
        return {"s": "x" + sketch.hex(), "t": 256, "bands": Int8Array(np.array(bands, dtype=np.int64))}

    def lookup(self, q: int, sketch: bytes, bands: list[int]) -> list[Any]:
        if self.handle is not None:  # the product: SimHashColumn.duplicates(..., band_keys=)
            return self.handle.duplicates(q, sketch, self.k, band_keys=bands, band_columns=self.columns,
                                          max_sketch_distance=256)
        params = self.params(q, sketch, bands)
        with self.conn.cursor(binary=True) as cur:
            cur.execute(self.statement, params, prepare=True)
            return cur.fetchall()


class SqlDuplicates:
    """``simpg.duplicates`` from SQL on a banded table (the function takes its 4 band columns by name)."""

    def __init__(self, dsn: str, table: str, k: int) -> None:
        self.k = k
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.statement = sql.SQL("SELECT t.id FROM simpg.duplicates(NULL::{}, %s, %s, %s::bit(256), %s, "
                                 "max_sketch_distance => 256) AS t").format(sql.Identifier(table))

    def lookup(self, q: int, sketch: bytes, bands: list[int]) -> list[Any]:
        signed_q = q - (1 << 64) if q >= 1 << 63 else q
        with self.conn.cursor(binary=True) as cur:
            cur.execute(self.statement, [signed_q, self.k, "x" + sketch.hex(), bands], prepare=True)
            return cur.fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--designs", default="4:4,3:4,-:6",
                        help="K:b,... (K '-': fingerprint not indexed; b 0: duplicates at radius K, no bands)")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dsn", help="use this server instead of starting one")
    parser.add_argument("--explain", action="store_true", help="print each banded statement's plan once")
    parser.add_argument("--check", type=int, default=0, metavar="N",
                        help="first compare N lookups of every banded table with a brute force over the arrays")
    parser.add_argument("--band-hits", type=int, default=8,
                        help="rows in each group sharing band 0, so rows a lookup finds through the bands (default 8)")
    args = parser.parse_args()
    n = args.rows
    designs = [(None if k == "-" else int(k), int(b)) for k, b in (d.split(":") for d in args.designs.split(","))]
    data = generate.load(n, k=4, seed=1, queries=2000)
    rng = np.random.default_rng(14)
    sketches = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    maxb = max(b for _, b in designs)
    bands = rng.integers(0, 1 << 63, size=(n, maxb), dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, size=(n, maxb), dtype=np.uint64)
    hits = max(1, args.band_hits)
    whole = n - n % hits
    bands[:whole, 0] = np.repeat(bands[:whole:hits, 0], hits)  # groups of `hits` rows share band 0
    if args.dsn:
        dsn = args.dsn
    else:
        say("starting PostgreSQL 15")
        server = pgserver.start()
        schema.install_extension_files(sharedir=server.sharedir)
        dsn = server.dsn()
    conn = psycopg.connect(dsn, autocommit=True)
    schema.install(conn)
    today = Layout(4, (6,))
    variants: list[dict[str, Any]] = []
    say("today: k=4, 15 tables, no sketch column")
    variants.append({"name": "today: near k=4", "kind": "near", "k": 4,
                     **build(conn, "bc_today", data.fps, None, None, today)})
    say("duplicates k=4, sketch column")
    variants.append({"name": "duplicates k=4", "kind": "duplicates", "k": 4,
                     **build(conn, "bc_k4", data.fps, sketches, None, today)})
    for k, b in designs:
        layout = None if k is None else (today if k == 4 else planner.recommend(k, n))
        name = f"bc_{'x' if k is None else k}_{b}"
        if b == 0 and k is not None:  # a reference: duplicates at a wider radius, as bench/confirm_cost.py
            say(f"duplicates k={k}: {layout.name}")
            variants.append({"name": f"duplicates k={k}", "kind": "duplicates", "k": k,
                             **build(conn, name, data.fps, sketches, None, layout)})
            continue
        say(f"k={k} + {b} bands: {layout.name if layout else 'fingerprint not indexed'}")
        variants.append({"name": f"k={'-' if k is None else k} + {b} bands", "kind": "banded", "k": k,
                         **build(conn, name, data.fps, sketches, bands[:, :b], layout)})
        if k is not None and b == 4:  # the same table through the SQL function
            variants.append({**variants[-1], "name": f"SQL simpg.duplicates k={k} + 4 bands", "kind": "sql"})
    queries = [int(q) & M64 for q in data.queries[: args.queries]]
    picks = rng.integers(0, n, size=len(queries))
    q_sketches = [sketches[i].tobytes() for i in picks]
    q_bands = [[int(signed(bands[i, :1])[0])] + [int(x) for x in signed(
        rng.integers(0, 1 << 62, size=maxb - 1, dtype=np.uint64))] for i in picks]
    handles: list[Any] = []
    for v in variants:
        if v["kind"] == "banded":
            handles.append(Banded(dsn, v["table"], v["bands"], v["k"]))
        elif v["kind"] == "sql":
            handles.append(SqlDuplicates(dsn, v["table"], v["k"]))
        else:
            handles.append(SimHashColumn.connect(dsn, v["table"], "fp", key_column="id"))

    def one(v: dict, h: Any, x: int) -> int:
        if v["kind"] == "near":
            return len(h.near(queries[x], 4))
        if v["kind"] == "duplicates":
            return len(h.duplicates(queries[x], q_sketches[x], v["k"], max_sketch_distance=256))
        return len(h.lookup(queries[x], q_sketches[x], q_bands[x][: v["bands"]]))

    if args.check:  # rows within k bits or sharing a band, by numpy, against what each statement returned
        sb = signed(bands)
        for v, h in zip(variants, handles, strict=True):
            if v["kind"] not in ("banded", "sql"):
                continue
            for x in range(args.check):
                want = set()
                if v["k"] is not None:
                    q = signed(np.array([queries[x]]))[0]
                    want |= set((generate.brute_force(data.fps, q, v["k"]) + 1).tolist())
                keys = np.array(q_bands[x][: v["bands"]], dtype=np.int64)
                want |= set((np.flatnonzero((sb[:, : v["bands"]] == keys[None, :]).any(axis=1)) + 1).tolist())
                got = {row[0] for row in h.lookup(queries[x], q_sketches[x], q_bands[x][: v["bands"]])}
                if got != want:
                    raise SystemExit(f"{v['name']}: lookup {x} returned {sorted(got)[:10]}, "
                                     f"brute force {sorted(want)[:10]}")
            say(f"{v['name']}: {args.check} lookups equal the brute force")
    if args.explain:
        for v, h in zip(variants, handles, strict=True):
            if v["kind"] == "banded":
                params = h.params(queries[0], q_sketches[0], q_bands[0][: v["bands"]])
                with (psycopg.RawCursor(h.conn) if h.info is not None else h.conn.cursor()) as cur:
                    cur.execute(b"EXPLAIN (ANALYZE, COSTS OFF) " + h.statement, params, binary=True)
                    print(f"-- {v['name']}\n" + "\n".join(r[0] for r in cur.fetchall()), file=sys.stderr)
    times: list[list[float]] = [[] for _ in variants]
    found = [0] * len(variants)
    say(f"{len(queries)} lookups x {args.rounds} rounds x {len(variants)} variants, interleaved")
    for v, h in zip(variants, handles, strict=True):  # warm up
        for x in range(100):
            one(v, h, x)
    for _ in range(args.rounds):
        for x in range(len(queries)):
            for y, (v, h) in enumerate(zip(variants, handles, strict=True)):
                started = time.perf_counter()
                found[y] += one(v, h, x)
                times[y].append(time.perf_counter() - started)
    base_p50 = statistics.median(times[0])
    base_bytes = variants[0]["bytes_per_row"]
    lines = [f"Command: `python3 -m bench.quality.bands_cost --rows {n} --designs {args.designs} --band-hits {hits}`, "
             f"{time.strftime('%Y-%m-%d %H:%M')}; {len(queries)} queries x {args.rounds} rounds, interleaved.", "",
             "| variant | layout | tables + bands | rows found / lookup | lookup p50 ms | p99 ms | p50 vs today "
             "| bytes/row | bytes vs today |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v, t, f in zip(variants, times, found, strict=True):
        p50, p99 = statistics.median(t), float(np.percentile(t, 99))
        v.update(p50_ms=p50 * 1e3, p99_ms=p99 * 1e3, p50_ratio=p50 / base_p50, found_per_lookup=f / len(t),
                 bytes_ratio=v["bytes_per_row"] / base_bytes)
        lines.append(f"| {v['name']} | {v['layout']} | {v['tables']} + {v.get('bands', 0)} | {f / len(t):.2f} | "
                     f"{p50 * 1e3:.3f} | {p99 * 1e3:.3f} | {p50 / base_p50:.2f}x | {v['bytes_per_row']:.0f} | "
                     f"{v['bytes_per_row'] / base_bytes:.2f}x |")
    print("\n".join(lines))
    out = BENCH / "results" / f"bands-cost-{n}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": n, "designs": args.designs, "variants": variants}, indent=2))
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
