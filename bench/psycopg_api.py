"""The design choices of simpg.psycopg, measured side by side on one table.

For a table of N random fingerprints indexed by simpg (k=3, 5 blocks: 10 tables),
this prints, with ratios:

1. single lookups: the statement SimHashColumn.near sends (OR of prefix ranges, prepared),
   on a plain connection, on a lookup connection (SimHashColumn.connect: one generic
   plan) and on one that polls for the answer (busy_wait=0.001), against a UNION of
   per-table range scans and against ranges computed in SQL; then busy_wait by CPU
   placement (client and server on any CPU, or on separate ones) and by the time
   between lookups; and on lookup connections, near's libpq fast path against
   psycopg's cursor, with the layout checked once per plan or at every execution;
   ``--public-apis``: that fast path, which drove psycopg internals (kept here as
   InternalNear to measure it), against psycopg's public APIs for the same statement:
   cursors made per lookup or kept, RawCursor, pipeline mode, simpg's NearLookup;
2. batched lookups: SimHashColumn.near_many (per table, one join of the queries sorted by
   prefix; UNION of the tables) against a LATERAL OR of ranges per query (its form
   before 0.1.1) and a LATERAL UNION ALL of per-table scans, at several batch sizes;
3. reading (id, fingerprint) of every row: string_agg(int8send) (what fetch_all
   uses) against array_agg and a binary COPY;
4. all pairs within k: SimHashColumn.pairs() (fetch + numpy pass) against a pure-SQL
   self-join per table.

Every variant's answers are compared with the API's (and the API's with a numpy
popcount over all rows for the lookups). Usage:

    python bench/psycopg_api.py --dsn "host=... dbname=bench" --rows 1000000
    python bench/psycopg_api.py --dsn ... --rows 10000000 --table b10m   # reuse a table
    python bench/psycopg_api.py --dsn ... --rows 1000000 --public-apis   # issue 15, code item 2

The table is created (and kept) when missing: ``b<rows>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import time
from typing import Any

import numpy as np
import psycopg
from index_bench import prewarm  # bench/ is the script's folder, so on sys.path
from psycopg import sql
from psycopg.types.numeric import Int8

from simpg import allpairs, bits
from simpg.psycopg import Neighbor, SimHashColumn, _common, _internals, lookup, settings, statements, wire


class InternalNear:
    """0.1.1's ``near`` fast path, kept here to measure: the statement prepared under a name
    of its own and sent with ``pgconn.send_query_prepared``, driven by psycopg's private
    protocol generator (``psycopg.generators.execute``) through the private
    ``Connection.wait`` under the private ``conn.lock``; rows unordered, sorted in Python.
    simpg itself no longer does this (issue 15, code item 2: see public_apis())."""

    def __init__(self, conn: psycopg.Connection, info: Any, name: bytes = b"bench_internal_near") -> None:
        self.conn, self.info, self.name = conn, info, name
        self.query = statements.near_sql(info).as_bytes(conn)
        self.prepared = False
        self.int8 = struct.Struct(">q")

    def gen(self, params: list[bytes]) -> Any:
        from psycopg import generators  # private: this is what the measurement is about

        pgconn = self.conn.pgconn
        if not self.prepared:
            pgconn.send_prepare(self.name, self.query, param_types=[20, 1016, 20])
            yield from generators.execute(pgconn)
            self.prepared = True
        pgconn.send_query_prepared(self.name, params, param_formats=[1, 1, 1], result_format=1)
        result = (yield from generators.execute(pgconn))[-1]
        if result.status != psycopg.pq.ExecStatus.TUPLES_OK:
            raise psycopg.errors.error_from_result(result, encoding=self.conn.info.encoding)
        found = [Neighbor(int.from_bytes(result.get_value(i, 0) or b"", "big", signed=True),
                          int.from_bytes(result.get_value(i, 1) or b"", "big", signed=True))
                 for i in range(result.ntuples)]
        found.sort(key=lambda r: (r.distance, r.id))
        return found

    def near(self, q: int, k: int) -> list[Neighbor]:
        params = [self.int8.pack(bits.to_db(q)), self.info.ranges.lows_array(q).payload, self.int8.pack(k)]
        with self.conn.lock:
            return self.conn.wait(self.gen(params))  # type: ignore[no-any-return]


def named(statement: bytes) -> bytes:
    """near_sql's ``$1..$3`` as psycopg's named placeholders, for the variants run by a plain cursor."""
    return statement.replace(b"$1", b"%(q)s").replace(b"$2", b"%(lows)s").replace(b"$3", b"%(k)s")


def named_params(info: Any, q: int) -> dict[str, Any]:
    """near_params as the ``q``, ``lows``, ``k`` of :func:`named`."""
    return dict(zip(("q", "lows", "k"), statements.near_params(info, q, 3), strict=True))


def make_table(conn: psycopg.Connection, name: str, rows: int) -> None:
    exists = conn.execute("SELECT to_regclass(%s)", [name]).fetchone()
    if exists and exists[0]:
        return
    print(f"creating {name} with {rows} rows ...", file=sys.stderr)
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, simhash bigint NOT NULL)")
    conn.execute(f"INSERT INTO {name} SELECT i, ('x' || substr(md5(i::text), 1, 16))::bit(64)::bigint "
                 f"FROM generate_series(1, {rows}) AS i")
    # 1% planted neighbours: copies with bit (id % 5) flipped, so 0 (none: the same
    # fingerprint in another row) to 4 bits, and bit 63 or bit 0 among them.
    conn.execute(f"INSERT INTO {name} SELECT id + {rows}, simhash # (((1::bigint << (id % 5)::int) - 1) "
                 f"# CASE WHEN id % 7 = 0 THEN (-9223372036854775808)::bigint ELSE 0 END) "
                 f"FROM {name} WHERE id % 100 = 0")
    conn.execute(f"SELECT simpg.create_index('{name}', 'simhash', 3, 5)")
    conn.execute(f"VACUUM ANALYZE {name}")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(int(len(values) * p), len(values) - 1)]


def single_lookups(conn: psycopg.Connection, index: SimHashColumn, tuned: SimHashColumn, polling: SimHashColumn,
                   qs: list[int], all_fps: np.ndarray) -> None:
    info = index.info
    n = info.layout.tables
    t = sql.Identifier
    union = sql.SQL(" UNION ").join(
        sql.SQL("SELECT x.{id}, simpg.hamming(x.{fp}, %(q)s) AS distance FROM {rel} AS x "
                "WHERE x.{p} BETWEEN %(lo{i})s AND %(hi{i})s AND simpg.hamming(x.{fp}, %(q)s) <= %(k)s")
        .format(id=t(info.key_column), fp=t(info.column), rel=info.relation, p=t(c), i=sql.SQL(str(i)))
        for i, c in enumerate(info.prefix_columns))
    union = sql.SQL("SELECT id, distance FROM ({}) AS u ORDER BY distance, id").format(union)
    levels = "{" + ",".join(map(str, info.layout.levels)) + "}"
    in_sql = sql.SQL(" OR ").join(
        sql.SQL("x.{p} BETWEEN simpg.prefix_lo(%(q)s, {k}, {lv}, {i}) AND simpg.prefix_hi(%(q)s, {k}, {lv}, {i})")
        .format(p=t(c), k=sql.Literal(info.layout.k), lv=sql.Literal(levels), i=sql.Literal(i))
        for i, c in enumerate(info.prefix_columns))
    in_sql = sql.SQL("SELECT x.{id}, simpg.hamming(x.{fp}, %(q)s) AS distance FROM {rel} AS x WHERE ({c}) "
                     "AND simpg.hamming(x.{fp}, %(q)s) <= %(k)s ORDER BY distance, x.{id}").format(
        id=t(info.key_column), fp=t(info.column), rel=info.relation, c=in_sql)
    def union_params(q: int) -> dict[str, int]:
        flat = info.ranges.flat(q)
        params = {"q": Int8(bits.to_db(q)), "k": Int8(3)}
        for i in range(n):
            params[f"lo{i}"], params[f"hi{i}"] = Int8(flat[2 * i]), Int8(flat[2 * i + 1])
        return params

    variants = {
        "SimHashColumn.near (OR of ranges, prepared)": lambda q: index.near(q, 3),
        "SimHashColumn.connect(...).near (generic plan)": lambda q: tuned.near(q, 3),
        "SimHashColumn.connect(..., busy_wait=0.001).near (polls for the answer)": lambda q: polling.near(q, 3),
        "UNION of per-table scans, prepared": lambda q: [
            tuple(r) for r in conn.execute(union, union_params(q), prepare=True).fetchall()],
        "OR, ranges computed in SQL, prepared": lambda q: [
            tuple(r) for r in conn.execute(in_sql, {"q": Int8(bits.to_db(q)), "k": Int8(3)}, prepare=True).fetchall()],
    }
    results: dict[str, list[float]] = {name: [] for name in variants}
    answers: dict[str, list[Any]] = {name: [] for name in variants}
    for q in qs:  # warm pass: every variant then reads the same cached pages
        index.near(q, 3)
    order = list(variants.items())
    for i, q in enumerate(qs):
        for name, run in order[i % len(order):] + order[: i % len(order)]:  # rotate who goes first
            if "SQL" in name and i >= 200:
                continue  # planning runs PL/pgSQL each time: a few hundred samples are enough
            t0 = time.perf_counter()
            got = run(q)
            elapsed = time.perf_counter() - t0
            if i >= 50:  # warm-up
                results[name].append(elapsed)
            answers[name].append([tuple(x) for x in got])
    for q, got in zip(qs, answers["SimHashColumn.near (OR of ranges, prepared)"], strict=True):
        d = np.bitwise_count(all_fps ^ np.uint64(q))
        assert len(got) == int((d <= 3).sum()), "API answer differs from a scan of all rows"
    base = statistics.median(results["SimHashColumn.near (OR of ranges, prepared)"])
    print("\n## Single lookups (k=3)\n\n| variant | p50 ms | p90 ms | p50 ratio | same answers |")
    print("|---|---|---|---|---|")
    ref = answers["SimHashColumn.near (OR of ranges, prepared)"]
    for name, lat in results.items():
        same = answers[name] == ref[: len(answers[name])]
        print(f"| {name} | {pct(lat, .5) * 1e3:.3f} | {pct(lat, .9) * 1e3:.3f} | "
              f"{statistics.median(lat) / base:.2f} | {same} |")
    # Python time to build one lookup's parameters: near's three against 0.1.0's 23
    forms = {
        "q, k and one binary bigint[] of range starts (near_params)":
            lambda q: statements.near_params(info, q, 3),
        "23 separate int8 parameters (0.1.0)":
            lambda q: [Int8(bits.to_db(q)), *map(Int8, info.ranges.flat(q)), Int8(bits.to_db(q)), Int8(3)],
    }
    print("\n| building the parameters of one lookup | µs (best of 5) |\n|---|---|")
    for name, build in forms.items():
        best = min(timeit_each(build, qs) for _ in range(5))
        print(f"| {name} | {best * 1e6:.1f} |")


#: simpg.layout_is as it was declared before (STABLE): checked at every execution.
STABLE_GUARD = "bench_layout_is_stable"


def lookup_paths(dsn: str, name: str, qs: list[int], all_fps: np.ndarray) -> None:
    """SimHashColumn.near on a lookup connection: the libpq fast path against psycopg's cursor,
    each with the layout checked once per plan (immutable simpg.layout_is) or at every
    execution (a STABLE copy of it), taking turns. All on one connection: which CPU
    the server process runs on, next to the client or not, moves a lookup by more
    than these differences."""
    handle = SimHashColumn.connect(dsn, name)
    prewarm(handle.conn, name)
    info = handle.info
    definition = handle.conn.execute(
        "SELECT pg_get_functiondef('simpg.layout_is(regclass, name, integer, integer[])'::regprocedure)").fetchone()[0]
    handle.conn.execute(definition.replace("simpg.layout_is(", f"public.{STABLE_GUARD}(", 1)
                        .replace("layout_is.", f"{STABLE_GUARD}.").replace("IMMUTABLE", "STABLE"))

    def fast(stable: bool) -> Any:
        statement = InternalNear(handle.conn, info, b"bench_fast_stable" if stable else b"bench_fast")
        if stable:
            statement.query = statement.query.replace(b"simpg.layout_is(", f"public.{STABLE_GUARD}(".encode())
        return lambda q: statement.near(q, 3)

    def cursor(stable: bool) -> Any:
        statement = named(statements.near_sql(info, ordered=True).as_bytes(handle.conn))
        if stable:
            statement = statement.replace(b"simpg.layout_is(", f"public.{STABLE_GUARD}(".encode())

        def run(q: int) -> list[Neighbor]:
            with handle.conn.cursor(binary=True) as cur:
                cur.execute(statement, named_params(info, q), prepare=True)
                return [Neighbor(i, d) for i, d in cur.fetchall()]
        return run

    variants = {
        "libpq fast path (0.1.1's SimHashColumn.near), layout checked per plan": fast(False),
        "libpq fast path, layout checked at every execution": fast(True),
        "psycopg cursor and ORDER BY, layout checked per plan": cursor(False),
        "psycopg cursor and ORDER BY, layout checked at every execution (SimHashColumn.near before)": cursor(True),
    }
    results: dict[str, list[float]] = {v: [] for v in variants}
    answers: dict[str, list[Any]] = {v: [] for v in variants}
    order = list(variants.items())
    for i, q in enumerate(qs * 2):
        for label, run in order[i % len(order):] + order[: i % len(order)]:
            t0 = time.perf_counter()
            got = run(q)
            elapsed = time.perf_counter() - t0
            if i >= 100:
                results[label].append(elapsed)
            if i < len(qs):
                answers[label].append(got)
    ref = answers[order[0][0]]
    for q, got in zip(qs, ref, strict=True):
        d = np.bitwise_count(all_fps ^ np.uint64(q))
        assert len(got) == int((d <= 3).sum()), "API answer differs from a scan of all rows"
    base = statistics.median(results[order[-1][0]])
    print("\n## Single lookups on lookup connections: fast path and layout check (k=3)\n")
    print("| variant | p50 ms | p90 ms | p99 ms | p50 ratio to before | same answers |\n|---|---|---|---|---|---|")
    for label, lat in results.items():
        print(f"| {label} | {pct(lat, .5) * 1e3:.3f} | {pct(lat, .9) * 1e3:.3f} | {pct(lat, .99) * 1e3:.3f} | "
              f"{statistics.median(lat) / base:.2f} | {answers[label] == ref} |")
    handle.conn.execute(f"DROP FUNCTION public.{STABLE_GUARD}")
    handle.close()


def public_apis(dsn: str, name: str, qs: list[int], all_fps: np.ndarray) -> None:
    """SimHashColumn.near's libpq fast path (psycopg internals: generators, Connection.wait,
    conn.lock) against psycopg's public APIs for the same statement, on one lookup
    connection, taking turns (issue 15, code item 2): the cursor as the handles use it
    where the fast path does not apply (binary, prepared, ORDER BY), the same without
    ORDER BY and sorted in Python as the fast path does, a RawCursor with libpq's
    ``$1..$3`` (psycopg 3.2+) made per lookup or kept, the cursor in pipeline mode, and
    the documented but low-level ``pgconn.exec_prepared`` (a blocking libpq call:
    Ctrl-C waits for it). Each statement is prepared (``prepare=True``, what
    ``prepare_threshold=0`` does for every statement). Prints p50/p90 and the client's
    CPU time per lookup (process time over the whole run, divided), which is where the
    paths differ: the server does the same work for each."""
    handle = SimHashColumn.connect(dsn, name)
    conn = handle.conn
    prewarm(conn, name)
    info = handle.info
    ordered = named(statements.near_sql(info, ordered=True).as_bytes(conn))
    raw_query = statements.near_sql(info).as_bytes(conn)  # $1..$3, no ORDER BY
    unordered = named(raw_query)

    def by_distance(rows: list[Any]) -> list[Neighbor]:
        found = [Neighbor(i, d) for i, d in rows]
        found.sort(key=lambda r: (r.distance, r.id))
        return found

    def cursor_ordered(q: int) -> list[Neighbor]:
        with conn.cursor(binary=True) as cur:
            cur.execute(ordered, named_params(info, q), prepare=True)
            return [Neighbor(i, d) for i, d in cur.fetchall()]

    def cursor_unordered(q: int) -> list[Neighbor]:
        with conn.cursor(binary=True) as cur:
            cur.execute(unordered, named_params(info, q), prepare=True)
            return by_distance(cur.fetchall())

    def pipelined(q: int) -> list[Neighbor]:
        with conn.pipeline(), conn.cursor(binary=True) as cur:
            cur.execute(unordered, named_params(info, q), prepare=True)
            return by_distance(cur.fetchall())

    kept_cursor = conn.cursor(binary=True)

    def cursor_kept(q: int) -> list[Neighbor]:
        kept_cursor.execute(unordered, named_params(info, q), prepare=True)
        return by_distance(kept_cursor.fetchall())

    internal = InternalNear(conn, info)
    public = lookup.NearLookup(conn)
    # the whole handle (argument checks, layout re-read on SPG01), with either path inside
    with_internal, with_public = SimHashColumn(conn, name), SimHashColumn(conn, name)
    for handle_ in (with_internal, with_public):
        handle_.refresh()
    internal_h = InternalNear(conn, with_internal.info, b"bench_internal_handle")
    with_public_lookup = lookup.NearLookup(conn)

    def handle_near(handle_: SimHashColumn, run: Any) -> Any:
        return lambda q: handle_._lookup(lambda i: run(i, _common.fingerprint(q), _common.radius(3, i)))

    def internals(enabled: bool, run: Any) -> Any:
        """``run`` with simpg.psycopg._internals turned on or off (NearLookup's fast path)."""
        def call(q: int) -> Any:
            _internals.ENABLED = enabled
            return run(q)
        return call

    shipped = _internals.ENABLED
    variants: dict[str, Any] = {
        "SimHashColumn.near with 0.1.1's internal fast path":
            handle_near(with_internal, lambda i, q, k: internal_h.near(q, k)),
        "SimHashColumn.near with NearLookup (public API)":
            internals(False, handle_near(with_public, lambda i, q, k: with_public_lookup.near(i, q, k))),
        "SimHashColumn.near with NearLookup as shipped (fast path on tested psycopg)":
            internals(shipped, handle_near(with_public, lambda i, q, k: with_public_lookup.near(i, q, k))),
        "internal: libpq fast path (SimHashColumn.near in 0.1.1)": lambda q: internal.near(q, 3),
        "public: simpg.psycopg.lookup.NearLookup (kept RawCursor, sorted in Python)":
            internals(False, lambda q: public.near(info, q, 3)),
        "public: cursor, binary, prepared, ORDER BY (the handles' other path)": cursor_ordered,
        "public: cursor, binary, prepared, sorted in Python": cursor_unordered,
        "public: cursor in pipeline mode, sorted in Python": pipelined,
        "public: one cursor kept for all lookups, sorted in Python": cursor_kept,
    }
    if hasattr(psycopg, "RawCursor"):  # psycopg 3.2+
        kept = psycopg.RawCursor(conn)
        kept.format = psycopg.pq.Format.BINARY

        def raw_new(q: int) -> list[Neighbor]:
            p = statements.near_params(info, q, 3)
            with psycopg.RawCursor(conn) as cur:
                cur.format = psycopg.pq.Format.BINARY
                cur.execute(raw_query, p, prepare=True)
                return by_distance(cur.fetchall())

        def raw_kept(q: int) -> list[Neighbor]:
            p = statements.near_params(info, q, 3)
            kept.execute(raw_query, p, prepare=True)
            return by_distance(kept.fetchall())

        variants["public: RawCursor ($1..$3), binary, prepared, sorted in Python"] = raw_new
        variants["public: one RawCursor kept for all lookups"] = raw_kept
    exec_name = b"bench_exec_prepared"
    conn.pgconn.prepare(exec_name, internal.query, param_types=[20, 1016, 20])

    def exec_prepared(q: int) -> list[Neighbor]:
        params = [internal.int8.pack(bits.to_db(q)), info.ranges.lows_array(q).payload, internal.int8.pack(3)]
        result = conn.pgconn.exec_prepared(exec_name, params, param_formats=[1, 1, 1], result_format=1)
        return by_distance([(int.from_bytes(result.get_value(i, 0) or b"", "big", signed=True),
                             int.from_bytes(result.get_value(i, 1) or b"", "big", signed=True))
                            for i in range(result.ntuples)])

    variants["low-level public: pgconn.exec_prepared (blocking libpq call)"] = exec_prepared
    for run in variants.values():  # prepare everything, warm the caches
        for q in qs[:50]:
            run(q)
    results: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, float] = dict.fromkeys(variants, 0.0)
    answers: dict[str, list[Any]] = {v: [] for v in variants}
    order = list(variants.items())
    for i, q in enumerate(qs * 2):
        for label, run in order[i % len(order):] + order[: i % len(order)]:
            c0 = time.process_time()
            t0 = time.perf_counter()
            got = run(q)
            elapsed = time.perf_counter() - t0
            cpu[label] += time.process_time() - c0
            results[label].append(elapsed)
            if i < len(qs):
                answers[label].append([tuple(x) for x in got])
    ref = answers[order[0][0]]
    for q, got in zip(qs, ref, strict=True):
        d = np.bitwise_count(all_fps ^ np.uint64(q))
        assert len(got) == int((d <= 3).sum()), "API answer differs from a scan of all rows"
    internal_label = "internal: libpq fast path (SimHashColumn.near in 0.1.1)"
    base = statistics.median(results[internal_label])
    base_cpu = cpu[internal_label] / len(results[internal_label])
    print(f"\n## Single lookups on a lookup connection: psycopg internals against public APIs "
          f"(k=3, psycopg {psycopg.__version__}, {psycopg.pq.__impl__})\n")
    print("| variant | p50 ms | p90 ms | p50 ratio to the bare fast path | client CPU µs per lookup | CPU ratio "
          "| same answers |\n|---|---|---|---|---|---|---|")
    for label, lat in results.items():
        print(f"| {label} | {pct(lat, .5) * 1e3:.3f} | {pct(lat, .9) * 1e3:.3f} | "
              f"{statistics.median(lat) / base:.2f} | {cpu[label] / len(lat) * 1e6:.1f} | "
              f"{cpu[label] / len(lat) / base_cpu:.2f} | {answers[label] == ref} |")
    a, b = (results[x] for x in ("SimHashColumn.near with 0.1.1's internal fast path",
                                 "SimHashColumn.near with NearLookup (public API)"))
    print("\nSimHashColumn.near, public against internal: "
          f"p50 ratio {statistics.median(b) / statistics.median(a):.2f}, "
          f"client CPU ratio {cpu['SimHashColumn.near with NearLookup (public API)'] / cpu[order[0][0]]:.2f}")
    _internals.ENABLED = shipped
    conn.pgconn.exec_(b"DEALLOCATE bench_exec_prepared")
    handle.close()


def timeit_each(fn: Any, items: list[int]) -> float:
    """Mean seconds of ``fn(item)`` over ``items``."""
    t0 = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - t0) / len(items)


def busy_wait_placement(tuned: SimHashColumn, polling: SimHashColumn, qs: list[int]) -> None:
    """A lookup connection against one polling for the answer (busy_wait=0.001), with
    lookups back to back or spaced out, first with client and server processes on any
    CPU, then with the client on CPU 0 and both server processes on the others (as
    with the server on a host of its own). Polling takes the client's wake-up out of
    each round trip; on a shared CPU it may hold up the server process woken there.
    """
    cpus = sorted(os.sched_getaffinity(0))
    print("\n## Polling for the answer (busy_wait) by CPU placement and spacing\n")
    print("| placement | time between lookups | lookup connection p50 / p90 ms "
          "| busy_wait=0.001 p50 / p90 ms | p50 ratio |")
    print("|---|---|---|---|---|")
    for placement in ("any CPU", "client on CPU 0, server on the others"):
        if placement != "any CPU":
            if len(cpus) < 2:
                break
            for handle in (tuned, polling):
                os.sched_setaffinity(handle.conn.info.backend_pid, cpus[1:])
            os.sched_setaffinity(0, cpus[:1])
        trips: dict[str, list[float]] = {"tuned": [], "polling": []}
        for i in range(2000):  # the round trip alone: a prepared SELECT 1
            for name, handle in (("tuned", tuned), ("polling", polling))[:: 1 if i % 2 else -1]:
                t0 = time.perf_counter()
                handle.conn.execute("SELECT 1", prepare=True).fetchall()
                trips[name].append(time.perf_counter() - t0)
        a, b = (statistics.median(trips[x]) for x in ("tuned", "polling"))
        print(f"| {placement} | round trip of a prepared SELECT 1, back to back | {a * 1e3:.3f} "
              f"| {b * 1e3:.3f} | {b / a:.2f} |")
        for gap in (0.0, 0.0005, 0.002):
            lat: dict[str, list[float]] = {"tuned": [], "polling": []}
            for i, q in enumerate(qs[:1000]):
                for name, handle in (("tuned", tuned), ("polling", polling))[:: 1 if i % 2 else -1]:
                    if gap:
                        time.sleep(gap)
                    t0 = time.perf_counter()
                    handle.near(q, 3)
                    lat[name].append(time.perf_counter() - t0)
            a, b = (statistics.median(lat[x]) for x in ("tuned", "polling"))
            print(f"| {placement} | {gap * 1e3:g} ms | {a * 1e3:.3f} / {pct(lat['tuned'], 0.9) * 1e3:.3f} "
                  f"| {b * 1e3:.3f} / {pct(lat['polling'], 0.9) * 1e3:.3f} | {b / a:.2f} |")
    os.sched_setaffinity(0, cpus)
    for handle in (tuned, polling):
        os.sched_setaffinity(handle.conn.info.backend_pid, cpus)


def lateral_or_sql(info: Any) -> sql.Composed:
    """near_many's statement before 0.1.1: per query, a LATERAL BitmapOr of all ranges."""
    n = info.layout.tables
    t = sql.Identifier
    names = ["q"] + [f"{side}{i}" for i in range(n) for side in ("lo", "hi")]
    cond = sql.SQL(" OR ").join(sql.SQL("x.{} BETWEEN u.{} AND u.{}").format(t(c), t(f"lo{i}"), t(f"hi{i}"))
                                for i, c in enumerate(info.prefix_columns))
    return sql.SQL("SELECT u.n, r.id, r.distance FROM unnest({a}) WITH ORDINALITY AS u({names}, n) "
                   "CROSS JOIN LATERAL (SELECT x.{id} AS id, simpg.hamming(x.{fp}, u.q) AS distance "
                   "FROM {rel} AS x WHERE ({cond}) AND simpg.hamming(x.{fp}, u.q) <= %s) AS r "
                   "ORDER BY 1, 3, 2").format(
        a=sql.SQL(", ").join(sql.SQL("%s::bigint[]") for _ in names), names=sql.SQL(", ").join(t(x) for x in names),
        id=t(info.key_column), fp=t(info.column), rel=info.relation, cond=cond)


def lateral_union_all_sql(info: Any) -> sql.Composed:
    """Per query, a LATERAL UNION ALL of one range scan per table, made distinct."""
    n = info.layout.tables
    t = sql.Identifier
    names = ["q"] + [f"{side}{i}" for i in range(n) for side in ("lo", "hi")]
    branches = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT x.{id} AS id, simpg.hamming(x.{fp}, u.q) AS distance FROM {rel} AS x "
                "WHERE x.{p} BETWEEN u.{lo} AND u.{hi} AND simpg.hamming(x.{fp}, u.q) <= %s")
        .format(id=t(info.key_column), fp=t(info.column), rel=info.relation, p=t(c), lo=t(f"lo{i}"), hi=t(f"hi{i}"))
        for i, c in enumerate(info.prefix_columns))
    return sql.SQL("SELECT DISTINCT u.n, r.id, r.distance FROM unnest({a}) WITH ORDINALITY AS u({names}, n) "
                   "CROSS JOIN LATERAL ({b}) AS r ORDER BY 1, 3, 2").format(
        a=sql.SQL(", ").join(sql.SQL("%s::bigint[]") for _ in names),
        names=sql.SQL(", ").join(t(x) for x in names), b=branches)


def batched_lookups(conn: psycopg.Connection, index: SimHashColumn, qs: list[int]) -> None:
    """near_many's statement against the two per-query forms, same batch, same transaction settings."""
    info = index.info
    n = info.layout.tables
    per_query = {"LATERAL OR per query (before 0.1.1)": (lateral_or_sql(info), 1),
                 "LATERAL UNION ALL per query": (lateral_union_all_sql(info), n)}
    print("\n## Batched lookups (k=3)\n\n"
          "| batch | near_many lookups/s | " + " | ".join(f"{v} lookups/s" for v in per_query)
          + " | near_many speed-up | same answers |\n|---|---|---|---|---|---|")
    index.near_many(np.array(qs, dtype=np.uint64), 3)  # warm pass
    for size in (100, 1000, 10000):
        batch = np.array(qs[:size], dtype=np.uint64)
        arrays = [wire.Int8Array(batch.view(np.int64)), *map(wire.Int8Array, info.ranges.arrays(batch))]

        def run(statement: sql.Composed, k_params: int, arrays: list[Any] = arrays) -> list[Any]:
            # what near_many does around its statement: a transaction with local settings
            with conn.transaction(), conn.cursor(binary=True) as cur:
                cur.adapters.register_dumper(wire.Int8Array, wire.Int8ArrayBinaryDumper)
                cur.execute(settings.NEAR_MANY_SETTINGS.sql)
                return cur.execute(statement, arrays + [Int8(3)] * k_params, prepare=True).fetchall()

        api = index.near_many(batch, 3)  # prepares the statement
        best = {"api": float("inf"), **{name: float("inf") for name in per_query}}
        same = True
        for _ in range(3):  # best of 3, taking turns
            t0 = time.perf_counter()
            index.near_many(batch, 3)
            best["api"] = min(best["api"], time.perf_counter() - t0)
            for name, (statement, k_params) in per_query.items():
                t0 = time.perf_counter()
                rows = run(statement, k_params)
                best[name] = min(best[name], time.perf_counter() - t0)
                other: list[list[tuple[Any, int]]] = [[] for _ in range(size)]
                for q_n, id_, d in rows:
                    other[q_n - 1].append((id_, d))
                same = same and [[tuple(x) for x in a] for a in api] == other
        rates = [size / best[name] for name in per_query]
        print(f"| {size} | {size / best['api']:.0f} | " + " | ".join(f"{r:.0f}" for r in rates)
              + f" | {size / best['api'] / rates[0]:.2f} | {same} |")


def fetching(conn: psycopg.Connection, index: SimHashColumn) -> None:
    info = index.info

    class Raw(psycopg.adapt.Loader):
        format = psycopg.pq.Format.BINARY

        def load(self, data: Any) -> bytes:
            return bytes(data)

    def with_array_agg() -> int:
        with conn.cursor(binary=True) as cur:
            cur.adapters.register_loader(1016, Raw)
            row = cur.execute(sql.SQL("SELECT array_agg({}), array_agg({}) FROM {}").format(
                sql.Identifier(info.key_column), sql.Identifier(info.column), info.relation)).fetchone()
        dt = np.dtype([("len", ">i4"), ("v", ">i8")])
        return len(np.frombuffer(row[0], dtype=dt, offset=20)["v"].astype(np.int64))

    def with_copy() -> int:
        buf = bytearray()
        with conn.cursor() as cur, cur.copy(sql.SQL("COPY (SELECT {}, {} FROM {}) TO STDOUT (FORMAT BINARY)").format(
                sql.Identifier(info.key_column), sql.Identifier(info.column), info.relation)) as copy:
            for block in copy:
                buf += block
        return (len(buf) - 21) // 26

    variants = {"string_agg(int8send) (fetch_all)": lambda: len(index.fetch_all()[0]),
                "array_agg, binary arrays": with_array_agg, "binary COPY": with_copy}
    times: dict[str, list[float]] = {name: [] for name in variants}
    counts = set()
    for _ in range(3):  # the first round also warms the cache; report each one's best
        for name, run in variants.items():
            t0 = time.perf_counter()
            counts.add(run())
            times[name].append(time.perf_counter() - t0)
    assert len(counts) == 1, counts
    base = min(times["string_agg(int8send) (fetch_all)"])
    print("\n## Reading (id, fingerprint) of every row (best of 3)\n\n| method | seconds | ratio |\n|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.2f} | {min(ts) / base:.2f} |")


def all_pairs(conn: psycopg.Connection, index: SimHashColumn, sql_pairs: bool) -> None:
    info = index.info
    print("\n## All pairs within k=3\n\n| method | seconds | pairs | ratio |\n|---|---|---|---|")
    t0 = time.perf_counter()
    ids, fps = index.fetch_all()
    fetched = time.perf_counter() - t0
    chunks = list(allpairs.pair_chunks(fps, 3))
    total = time.perf_counter() - t0
    count = sum(len(c[0]) for c in chunks)
    layout = allpairs.pairs_layout(3, len(fps))
    print(f"| SimHashColumn.pairs(3): fetch {fetched:.2f} s + numpy pass over {layout.name} | {total:.2f} "
          f"| {count} | 1.00 |")
    if not sql_pairs:
        return
    # Pure SQL: per table, a self-join on the prefix (hash join), keeping each pair in
    # the first table that sees it is not expressible cheaply, so DISTINCT over all.
    parts = []
    for t, col in enumerate(info.prefix_columns):
        low = 64 - info.layout.prefix_bits(t)
        parts.append(sql.SQL(
            "SELECT a.{id} AS a, b.{id} AS b FROM {rel} AS a JOIN {rel} AS b "
            "ON a.{p} >> {low} = b.{p} >> {low} AND a.{id} < b.{id} "
            "WHERE simpg.hamming(a.{fp}, b.{fp}) <= 3").format(
            id=sql.Identifier(info.key_column), rel=info.relation, p=sql.Identifier(col),
            low=sql.Literal(low), fp=sql.Identifier(info.column)))
    statement = sql.SQL("SELECT count(*) FROM ({}) AS s").format(sql.SQL(" UNION ").join(parts))
    t0 = time.perf_counter()
    row = conn.execute(statement).fetchone()
    took = time.perf_counter() - t0
    print(f"| pure SQL: UNION of per-table self-joins | {took:.2f} | {row[0] if row else '?'} | {took / total:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--table")
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--no-sql-pairs", action="store_true", help="skip the (slow) pure-SQL all-pairs variant")
    parser.add_argument("--only-paths", action="store_true", help="only the fast path / layout check comparison")
    parser.add_argument("--public-apis", action="store_true",
                        help="only the fast path against psycopg's public APIs (issue 15, code item 2)")
    args = parser.parse_args()
    name = args.table or f"b{args.rows}"
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        make_table(conn, name, args.rows)
        index = SimHashColumn(conn, name)
        rows = conn.execute(sql.SQL("SELECT simhash FROM {} TABLESAMPLE SYSTEM (1) LIMIT %s").format(
            sql.Identifier(name)), [args.queries]).fetchall()
        rng = np.random.default_rng(1)
        # half stored rows with 1 to 4 bits flipped, half random
        qs = [bits.from_db(r[0]) ^ int(sum(1 << int(b) for b in rng.choice(64, 1 + i % 4, replace=False)))
              for i, r in enumerate(rows[: len(rows) // 2])]
        qs += [int(x) for x in rng.integers(0, 2**64, size=args.queries - len(qs), dtype=np.uint64)]
        _, all_fps = index.fetch_all()
        print(f"# simpg.psycopg design choices: {name}, {len(all_fps)} rows, layout {index.layout.name}, "
              f"{len(qs)} queries")
        if args.only_paths:
            lookup_paths(args.dsn, name, qs, all_fps)
            return
        if args.public_apis:
            public_apis(args.dsn, name, qs, all_fps)
            return
        with SimHashColumn.connect(args.dsn, name) as tuned, \
                SimHashColumn.connect(args.dsn, name, busy_wait=0.001) as polling:
            for handle in (tuned, polling):
                prewarm(handle.conn, name)
            single_lookups(conn, index, tuned, polling, qs, all_fps)
            busy_wait_placement(tuned, polling, qs)
        lookup_paths(args.dsn, name, qs, all_fps)
        batched_lookups(conn, index, qs * (10000 // len(qs) + 1))
        fetching(conn, index)
        all_pairs(conn, index, not args.no_sql_pairs)


if __name__ == "__main__":
    main()
