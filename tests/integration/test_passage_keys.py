"""The passage index on bucketed keys (simpg.passage_keys, docs/partial.md) against brute force.

The GIN index keeps each hash's low key_bits bits, so several rows share a key; a lookup asks
the keys through the index and the exact hashes on the row. With 1 to 4 bits almost every row
is a candidate: the answers must still equal the plain ``col && probe`` and the oracle. Also:
the keys themselves (negative hashes, bits 31 and 32, NULL elements, bits out of range), the
catalog's matching of the index (look-alikes are not taken), rebuilds with other bits (the new
index first, then the old one dropped; a cached statement notices), the bits a table's rows
call for, and simpg.check.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import psycopg
import pytest
from psycopg import errors

from simpg.passages import DEFAULT_SPACELESS_WINDOW as WS
from simpg.passages import DEFAULT_WINDOW as W
from simpg.psycopg import PassageColumn, configure_lookups
from tests.integration.passage_corpus import make_table, quoting_corpus
from tests.oracles import HashArray, adversarial_hash_arrays, brute_passage_candidates


def python_key(h: int, bits: int) -> int:
    """The low bits of a signed 64-bit hash, sign-extended (what simpg.passage_keys computes)."""
    low = h & ((1 << bits) - 1)
    return low - (1 << bits) if low >> (bits - 1) else low


def make_docs(conn: psycopg.Connection, rows: Mapping[int, HashArray], table: str = "docs") -> None:
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, body text, passages bigint[])")
    with conn.cursor().copy(f"COPY {table} (id, body, passages) FROM STDIN") as copy:
        for key, values in rows.items():
            copy.write_row((key, f"text {key}", values))


def candidates(conn: psycopg.Connection, probe: HashArray, max_common: int | None = None) -> dict[int, int]:
    return dict(conn.execute("SELECT (c.hit).id, c.shared FROM simpg.passage_candidates(NULL::docs, 'passages', "
                             "%s::bigint[], %s) AS c", [probe, max_common]).fetchall())


def lookup(conn: psycopg.Connection, probe: HashArray, skip: list[int] | None) -> dict[int, int]:
    statement = conn.execute("SELECT simpg.passage_probe_statement('docs', 'passages')").fetchone()[0]
    with psycopg.RawCursor(conn) as cur:
        return {key: n for key, _, n in cur.execute(statement, [probe, skip]).fetchall()}


def plain(conn: psycopg.Connection, probe: HashArray, skip: list[int] | None = None) -> dict[int, int]:
    """The answer of the plain overlap on the hashes, no keys (the layout before the keys index)."""
    return dict(conn.execute(
        "SELECT id, simpg.shared_hashes(passages, simpg.passage_probe(%s::bigint[], %s::bigint[])) FROM docs "
        "WHERE passages && simpg.passage_probe(%s::bigint[], %s::bigint[])", [probe, skip, probe, skip]).fetchall())


def array(values: list[int]) -> str:
    return f"ARRAY[{', '.join(map(str, values))}]::bigint[]"


def explain(conn: psycopg.Connection, probe: list[int]) -> str:
    """The plan of the prepared statement p for probe (EXPLAIN EXECUTE takes no bound parameters)."""
    return "\n".join(r[0] for r in conn.execute(f"EXPLAIN EXECUTE p ({array(probe)}, '{{}}')").fetchall())


def key_index_names(conn: psycopg.Connection) -> list[tuple[str, str]]:
    return conn.execute("SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index AS i JOIN pg_class AS c "
                        "ON c.oid = i.indexrelid WHERE i.indrelid = 'docs'::regclass AND i.indexprs IS NOT NULL "
                        "ORDER BY 1").fetchall()


# -- the keys --------------------------------------------------------------------------------


def test_keys_are_the_sign_extended_low_bits(conn) -> None:
    rng = random.Random(4)
    edges = [-(1 << 63), (1 << 63) - 1, -1, 0, 1, (1 << 31) - 1, 1 << 31, -(1 << 31), (1 << 32) - 1, 1 << 32,
             -(1 << 32) - 1, 0x7FFF_FFFF_8000_0000]
    hashes = edges + [rng.randrange(-(1 << 63), 1 << 63) for _ in range(200)]
    for bits in (1, 2, 3, 4, 16, 20, 30, 31, 32):
        got = conn.execute("SELECT simpg.passage_keys(%s::bigint[], %s)", [[*hashes, None], bits]).fetchone()[0]
        # NULL elements give no key; every key fits an int4
        assert got == [python_key(h, bits) for h in hashes], bits
        assert all(-(1 << (bits - 1)) <= k < (1 << (bits - 1)) for k in got)
    assert conn.execute("SELECT simpg.passage_keys('{}', 20), simpg.passage_keys(NULL, 20), "
                        "simpg.passage_keys('{1}', NULL)").fetchone() == ([], None, None)
    assert conn.execute("SELECT simpg.passage_keys(ARRAY[2147483648, -2147483649]::bigint[], 32)").fetchone() == (
        [-2147483648, 2147483647],)


@pytest.mark.parametrize("bits", [0, 33, 40, 64, -1, -2147483648])
def test_key_bits_out_of_range_are_refused_naming_them(conn, bits: int) -> None:
    from simpg.fingerprint.errors import InvalidConfig
    from simpg.passages.checks import checked_key_bits

    with pytest.raises(InvalidConfig) as python:
        checked_key_bits(bits)
    with pytest.raises(errors.InvalidParameterValue) as sql:
        conn.execute("SELECT simpg.passage_keys('{1, 2}', %s)", [bits])
    assert sql.value.diag.message_primary == str(python.value)  # the same words in SQL and Python
    assert str(python.value).endswith(f"got {bits}")
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, passages bigint[])")
    conn.execute("INSERT INTO docs VALUES (1, '{5}')")
    for call in (f"simpg.create_passage_index('docs', 'passages', key_bits => {bits})",
                 f"simpg.passage_index_ddl('docs', 'passages', key_bits => {bits})"):
        with pytest.raises(errors.InvalidParameterValue, match=rf"got {bits}(?!\d)"):
            conn.execute(f"SELECT * FROM {call}")
    # an index written by hand with such bits fails on the rows, never shifts out of range
    with pytest.raises(errors.InvalidParameterValue, match=rf"got {bits}(?!\d)"):
        conn.execute(f"CREATE INDEX ON docs USING gin ((simpg.passage_keys(passages, {bits})))")


def test_the_bits_follow_the_rows(conn) -> None:
    got = dict(conn.execute("SELECT r, simpg.passage_key_bits(r) FROM unnest(%s::float8[]) AS r",
                            [[0, 1, 4095, 8191, 65535, 65536, 100_000, 1_000_000, 2**28, 2**40, -5]]).fetchall())
    # floor(log2(rows) + 4.5): the bits step up at rows = 2^(b - 4.5)
    assert got == {0: 16, 1: 16, 4095: 16, 8191: 17, 65535: 20, 65536: 20, 100_000: 21, 1_000_000: 24,
                   2**28: 32, 2**40: 32, -5: 16}
    assert conn.execute("SELECT simpg.passage_key_bits(NULL), simpg.passage_key_bits('NaN'), "
                        "simpg.passage_key_bits('Infinity')").fetchone() == (16, 16, 32)


# -- exact answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 31, 32])
def test_tiny_and_wide_bits_answer_exactly(conn, bits: int) -> None:
    rng = random.Random(bits)
    rows = adversarial_hash_arrays(rng, 150)
    make_docs(conn, rows)
    assert conn.execute("SELECT key_bits FROM simpg.create_passage_index('docs', 'passages', key_bits => %s)",
                        [bits]).fetchone() == (bits,)
    probes: list[HashArray] = [[], [None], [42], [-(1 << 63), (1 << 63) - 1], [7, 7, None, -3], [1 << 31, -(1 << 31)],
                               *(rng.sample(range(-70, 70), rng.randrange(1, 15)) for _ in range(15)),
                               *(v for v in list(rows.values())[:10] if v is not None)]
    for probe in probes:
        want = brute_passage_candidates(rows, probe)
        assert candidates(conn, probe) == want == plain(conn, probe)
        assert lookup(conn, probe, None) == want
        assert lookup(conn, probe, [42, 7]) == brute_passage_candidates(rows, probe, [42, 7]) == plain(
            conn, probe, [42, 7])


def test_a_skipped_common_hash_keeps_the_key_another_hash_needs(conn) -> None:
    """The keys come from the probe less the skipped hashes: a query hash sharing its key with a
    skipped common one is still looked up, and the common one alone finds nothing."""
    bits = 3
    boiler = 8 * 1_000_003 + 5  # low bits 101: key -3 at 3 bits
    rare = 8 * 77 + 5  # the same key
    rows: dict[int, HashArray] = {key: [boiler, 1000 + 8 * key] for key in range(1, 1201)}  # keys 0
    rows[2000] = [rare, 9_999_992]
    make_docs(conn, rows)
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => %s)", [bits])
    assert conn.execute("SELECT simpg.passage_keys(ARRAY[%s, %s]::bigint[], 3)", [boiler, rare]).fetchone() == (
        [-3, -3],)
    assert conn.execute("SELECT simpg.common_passage_hashes('docs', 'passages', 1000)").fetchone() == ([boiler],)
    assert candidates(conn, [boiler, rare], 1000) == {2000: 1} == brute_passage_candidates(rows, [rare])
    assert lookup(conn, [boiler, rare], [boiler]) == {2000: 1}
    assert candidates(conn, [boiler], 1000) == {}
    assert candidates(conn, [boiler, rare], None) == brute_passage_candidates(rows, [boiler, rare])


def test_the_lookup_is_a_bitmap_scan_of_the_keys_index_under_the_lookup_settings(conn) -> None:
    rng = random.Random(9)
    rows = {key: sorted(rng.randrange(-(1 << 63), 1 << 63) for _ in range(50)) for key in range(1, 4001)}
    make_docs(conn, rows)
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    configure_lookups(conn)
    statement = conn.execute("SELECT simpg.passage_probe_statement('docs', 'passages')").fetchone()[0]
    conn.execute(f"PREPARE p (bigint[], bigint[]) AS {statement}")
    probe = rows[77][5:12]
    plan = explain(conn, probe)
    assert "Bitmap Index Scan on docs_passages_keys_idx" in plan, plan
    assert "Seq Scan" not in plan, plan
    assert [r[0] for r in conn.execute(f"EXECUTE p ({array(probe)}, '{{}}')").fetchall()] == [77]


# -- the catalog -----------------------------------------------------------------------------


def test_a_look_alike_index_is_not_taken(conn) -> None:
    rows = {1: [1, 2, 3], 2: [3, 4]}
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[], other bigint[])")
    conn.execute("INSERT INTO docs VALUES (1, 'a', '{1,2,3}', '{1}'), (2, 'b', '{3,4}', '{2}')")
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages')")
    conn.execute("DROP INDEX docs_passages_keys_idx")  # the comment stays
    conn.execute("CREATE SCHEMA mimic")
    conn.execute("CREATE FUNCTION mimic.passage_keys(h bigint[], b integer) RETURNS integer[] LANGUAGE sql "
                 "IMMUTABLE RETURN '{1}'::integer[]")
    for index in ("CREATE INDEX other_fn ON docs USING gin ((mimic.passage_keys(passages, 20)))",
                  "CREATE INDEX other_col ON docs USING gin ((simpg.passage_keys(other, 20)))",
                  "CREATE INDEX with_pred ON docs USING gin ((simpg.passage_keys(passages, 21))) WHERE id > 0",
                  "CREATE INDEX two_cols ON docs USING gin ((simpg.passage_keys(passages, 22)), "
                  "(simpg.passage_keys(other, 22)))",
                  "CREATE INDEX as_btree ON docs USING btree ((simpg.passage_keys(passages, 23)))",
                  "CREATE INDEX plain_gin ON docs USING gin (passages)"):
        conn.execute(index)
    assert conn.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [(None, None)]
    # the statement then reads the hashes alone (exact, the whole table)
    assert lookup(conn, [3], None) == brute_passage_candidates(rows, [3]) == {1: 1, 2: 1}
    assert "passage_keys" not in conn.execute("SELECT simpg.passage_probe_statement('docs', 'passages')"
                                              ).fetchone()[0]
    # drop takes only what simpg made
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 18)")
    assert conn.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [
        ("docs_passages_keys_idx", 18)]
    conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    assert [name for name, _ in key_index_names(conn)] == ["as_btree", "other_col", "other_fn", "two_cols",
                                                           "with_pred"]


def test_rebuilds_build_first_then_drop_and_drop_takes_every_keys_index(conn) -> None:
    rows = adversarial_hash_arrays(random.Random(2), 80)
    make_docs(conn, rows)
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 16)")
    steps = conn.execute("SELECT phase, index_name, statement FROM simpg.passage_index_ddl('docs', 'passages', "
                         "key_bits => 18, concurrently => true)").fetchall()
    assert steps == [
        ("gin", "docs_passages_keys_idx1", "CREATE INDEX CONCURRENTLY docs_passages_keys_idx1 ON public.docs USING gin "
                                          "((simpg.passage_keys(passages, 18)))"),
        ("drop_old", "docs_passages_keys_idx", "DROP INDEX CONCURRENTLY IF EXISTS public.docs_passages_keys_idx")]
    # half-way (the new index built, the old one not yet dropped): the most bits, lookups exact
    conn.execute(steps[0][2])
    assert conn.execute("SELECT index_name, key_bits FROM simpg.passage_indexes").fetchall() == [
        ("docs_passages_keys_idx1", 18)]
    assert lookup(conn, [42, 1], None) == brute_passage_candidates(rows, [42, 1])
    conn.execute(steps[1][2])
    assert conn.execute("SELECT count(*) FROM simpg.passage_index_ddl('docs', 'passages', key_bits => 18)"
                        ).fetchone() == (0,)
    # create with other bits, then the same again: built once
    assert conn.execute("SELECT index_name, key_bits FROM simpg.create_passage_index('docs', 'passages', "
                        "key_bits => 4)").fetchone() == ("docs_passages_keys_idx", 4)
    assert conn.execute("SELECT index_name, key_bits FROM simpg.create_passage_index('docs', 'passages', "
                        "key_bits => 4)").fetchone() == ("docs_passages_keys_idx", 4)
    assert len(key_index_names(conn)) == 1
    # an INVALID keys index (a stopped concurrent build) is dropped first, and by drop
    conn.execute("CREATE INDEX stopped ON docs USING gin ((simpg.passage_keys(passages, 9)))")
    conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'stopped'::regclass")
    assert [p for p, _, _ in conn.execute("SELECT * FROM simpg.passage_index_ddl('docs', 'passages', "
                                          "key_bits => 4)").fetchall()] == ["drop_invalid"]
    assert conn.execute("SELECT problem FROM simpg.check('docs') WHERE problem = 'invalid index'").fetchall() == [
        ("invalid index",)]
    conn.execute("CREATE INDEX second ON docs USING gin ((simpg.passage_keys(passages, 30)))")
    conn.execute("SELECT simpg.drop_passage_index('docs', 'passages')")
    assert key_index_names(conn) == []
    assert conn.execute("SELECT count(*) FROM simpg.passage_indexes").fetchone() == (0,)


def test_create_counts_the_rows_of_a_table_never_analyzed(conn) -> None:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[])")
    conn.execute("INSERT INTO docs SELECT g, 'b', ARRAY[g] FROM generate_series(1, 70000) AS g")
    assert conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'docs'::regclass").fetchone()[0] <= 0
    assert conn.execute("SELECT key_bits FROM simpg.create_passage_index('docs', 'passages')").fetchone() == (20,)


# -- check -----------------------------------------------------------------------------------


def test_check_reports_coarse_keys_and_a_missing_index(conn) -> None:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, passages bigint[])")
    conn.execute("INSERT INTO docs SELECT g, 'b', ARRAY[g, g + 1] FROM generate_series(1, 300000) AS g")
    conn.execute("ANALYZE docs")  # 300,000 rows: 22 bits wanted
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 20)")
    assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []  # 20 >= 22 - 2
    conn.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 19)")
    assert conn.execute("SELECT * FROM simpg.check('docs', 'passages')").fetchall() == [(
        "passages", "passage keys too coarse",
        "index docs_passages_keys_idx1 on passage column passages has 19 key bits, 300000 rows want 22 (over 4 "
        "times the rows per key: lookups read that many more candidates): "
        f"SELECT simpg.create_passage_index('public.docs', 'passages', {W}, {WS}, 22)")]
    detail = conn.execute("SELECT detail FROM simpg.check('docs')").fetchone()[0]
    conn.execute(detail[detail.index("SELECT simpg"):])  # the statement it names puts it right
    assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []
    assert conn.execute("SELECT key_bits FROM simpg.passage_indexes").fetchall() == [(22,)]
    conn.execute("DROP INDEX docs_passages_keys_idx")
    assert conn.execute("SELECT problem, detail FROM simpg.check('docs')").fetchall() == [(
        "missing passage index",
        "no valid GIN index on the keys of passage column passages (answers stay exact, but read the whole table): "
        f"SELECT simpg.create_passage_index('public.docs', 'passages', {W}, {WS})")]
    assert conn.execute("SELECT * FROM simpg.check('docs', 'body')").fetchall() == []


# -- the Python handle -----------------------------------------------------------------------


def test_a_handle_notices_a_rebuild_between_two_lookups(conn) -> None:
    rows, queries = quoting_corpus(31)
    make_table(conn)
    docs = PassageColumn(conn, "docs", text_column="body")
    assert docs.create(key_bits=4).key_bits == 4
    docs.add(list(rows.values()), list(rows))
    configure_lookups(conn)
    first = [docs.near(q, max_common=None) for q in queries]
    assert docs.info.key_bits == 4
    other = psycopg.connect(conn.info.dsn, autocommit=True)
    with other:  # another session rebuilds the index with other bits
        other.execute("SELECT simpg.create_passage_index('docs', 'passages', key_bits => 18)")
    second = [docs.near(q, max_common=None) for q in queries]
    assert second == first and any(first)
    assert (docs.info.key_bits, docs.info.index_name) == (18, "docs_passages_keys_idx1")
    statement = conn.execute("SELECT simpg.passage_probe_statement('docs', 'passages')").fetchone()[0]
    conn.execute(f"PREPARE p (bigint[], bigint[]) AS {statement}")
    plan = explain(conn, docs.hashes(queries[0]))
    assert "Bitmap Index Scan on docs_passages_keys_idx1" in plan, plan


def test_the_reference_table_rebuilds_its_keys_when_a_load_outgrew_them(conn) -> None:
    """simpg dedup's table (simpg_documents): a load past check's rule builds the keys index again."""
    from simpg.reference import ensure_reference_schema, passage_keys_follow_rows

    ensure_reference_schema(conn)
    assert conn.execute("SELECT key_bits FROM simpg.passage_indexes").fetchall() == [(16,)]
    conn.execute("INSERT INTO simpg_documents (source, body, simhash, fingerprint_config, passages) "
                 "SELECT 's', 'b', g, 'c', ARRAY[g * 7, g * 7 + 1] FROM generate_series(1, 3000) AS g")
    assert not passage_keys_follow_rows(conn, 3000)  # 16 bits are right for 3,000 rows
    conn.execute("INSERT INTO simpg_documents (source, body, simhash, fingerprint_config, passages) "
                 "SELECT 's', 'b', g, 'c', ARRAY[g * 7, g * 7 + 1] FROM generate_series(3001, 70000) AS g")
    assert passage_keys_follow_rows(conn, 67000)  # 70,000 rows want 20: 16 is too coarse
    assert conn.execute("SELECT key_bits FROM simpg.passage_indexes").fetchall() == [(20,)]
    assert conn.execute("SELECT count(*) FROM simpg.check('simpg_documents', 'passages')").fetchone() == (0,)
    assert not passage_keys_follow_rows(conn, 0)
