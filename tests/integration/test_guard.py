"""simpg.create_guard (issue 16): no two committed rows within k, under concurrent writers.

Every test checks the invariant by brute force over the stored rows, and every refused
write's DETAIL against the row it names. The race the guard closes is shown first with
the guard off (lookup, then insert, as an app without a lock does: it stores duplicates),
then the same writers with the guard on.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg import errors

from simpg import bits
from simpg.exc import SimpgError
from tests.integration.sketched import (
    BAND_COLUMNS,
    MAX_SKETCH,
    SGML_BASE,
    XML_CORE,
    Row,
    doc_row,
    insert_sketched,
    make_sketched,
    sketch_sql,
)
from tests.oracles import brute_decision, brute_pairs

K = 3


def flip(fp: int, positions: list[int]) -> int:
    for p in positions:
        fp ^= 1 << p
    return fp


def make(conn: psycopg.Connection, name: str = "docs", k: int = K, blocks: int = 5) -> None:
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, simhash bigint, note text)")
    conn.execute(f"SELECT simpg.create_index('{name}', 'simhash', {k}, {blocks})")


def stored(conn: psycopg.Connection, name: str = "docs") -> dict[int, int]:
    return {i: bits.from_db(fp) for i, fp in conn.execute(f"SELECT id, simhash FROM {name} WHERE simhash IS NOT NULL")}


def assert_no_pair_within(rows: dict[int, int], k: int) -> None:
    close = list(brute_pairs(rows, k))
    assert close == [], f"{len(close)} pairs within {k}: {close[:5]}"


def refused_row(err: psycopg.Error) -> tuple[int, int]:
    """(stored key, distance) named by a refusal's DETAIL."""
    m = re.fullmatch(r"Key \(id\)=\((\d+)\) is within (\d+) bits of the new row, key \(id\)=\((\d+)\)\.",
                     err.diag.message_detail or "")
    assert m, err.diag.message_detail
    return int(m.group(1)), int(m.group(2))


def locked_slots(conn: psycopg.Connection, table: str = "docs") -> list[int]:
    """The slots of simpg.guard_locks this transaction holds for table (as a superuser: no row is hidden)."""
    return conn.execute("SELECT array_agg(slot ORDER BY slot) FROM simpg.guard_locks "
                        "WHERE guarded_table = %s::regclass AND xmax = pg_current_xact_id()::xid",
                        [table]).fetchone()[0]


def test_guard_refuses_near_duplicates_in_every_kind_of_write(conn: psycopg.Connection) -> None:
    make(conn)
    rng = random.Random(16)
    base = [rng.getrandbits(64) for _ in range(20)] + [0, 2**64 - 1, (1 << 63) | rng.getrandbits(62)]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO docs (id, simhash) VALUES (%s, %s)",
                        [(i, bits.to_db(fp)) for i, fp in enumerate(base, start=1)])
    assert conn.execute("SELECT simpg.create_guard('docs', 'simhash')").fetchone() == ("simhash_simpg_guard",)
    assert conn.execute("SELECT * FROM simpg.table_guards('docs')").fetchall() == [
        ("simhash_simpg_guard", "simhash", K, "id", None, None, None)]

    # one row within k of a stored one, through bits 0 and 63 and negative bigints
    for n, (target, positions) in enumerate([(base[0], [0]), (base[21], [63, 1, 2]), (base[22], [63]),
                                             (base[5], [10, 20, 30])]):
        with pytest.raises(errors.ExclusionViolation) as info:
            conn.execute("INSERT INTO docs (id, simhash) VALUES (%s, %s)",
                         [100 + n, bits.to_db(flip(target, positions))])
        key, distance = refused_row(info.value)
        assert base[key - 1] == target and distance == len(positions)
        assert info.value.diag.constraint_name == "simhash_simpg_guard"
    # an exact copy, then two near-duplicates of each other in one statement: all refused
    with pytest.raises(errors.ExclusionViolation):
        conn.execute("INSERT INTO docs (id, simhash) VALUES (200, %s)", [bits.to_db(base[3])])
    far = rng.getrandbits(64)
    with pytest.raises(errors.ExclusionViolation) as info:
        conn.execute("INSERT INTO docs (id, simhash) VALUES (201, %s), (202, %s)",
                     [bits.to_db(far), bits.to_db(flip(far, [5, 6]))])
    assert refused_row(info.value)[1] == 2
    # COPY, and UPDATE of the fingerprint
    with pytest.raises(errors.ExclusionViolation), conn.cursor() as cur, \
            cur.copy("COPY docs (id, simhash) FROM STDIN") as copy:
        copy.write_row((300, bits.to_db(rng.getrandbits(64))))
        copy.write_row((301, bits.to_db(flip(base[7], [1]))))
    with pytest.raises(errors.ExclusionViolation):
        conn.execute("UPDATE docs SET simhash = %s WHERE id = 2", [bits.to_db(flip(base[8], [4]))])
    conn.execute("UPDATE docs SET note = 'x', simhash = simhash WHERE id = 2")  # same fingerprint: fine
    conn.execute("INSERT INTO docs (id, simhash) VALUES (400, NULL)")  # no fingerprint: nothing to guard
    conn.execute("INSERT INTO docs (id, simhash) VALUES (401, %s)", [bits.to_db(flip(base[9], [1, 2, 3, 4]))])
    rows = stored(conn)
    assert len(rows) == len(base) + 1  # every refused write left nothing behind
    assert_no_pair_within(rows, K)

    conn.execute("SELECT simpg.drop_guard('docs')")
    conn.execute("INSERT INTO docs (id, simhash) VALUES (500, %s)", [bits.to_db(base[0])])
    with pytest.raises(errors.ExclusionViolation) as info:
        conn.execute("SELECT simpg.create_guard('docs', 'simhash')")
    assert "already holds 1 pair(s) of rows within 3 bits" in str(info.value)
    assert "SELECT * FROM simpg.pairs('public.docs', 3, 'simhash')" in (info.value.diag.message_hint or "")
    assert conn.execute("SELECT * FROM simpg.table_guards('docs')").fetchall() == []


def test_bad_calls_name_the_problem(conn: psycopg.Connection) -> None:
    make(conn)
    with pytest.raises(errors.InvalidParameterValue,
                       match="k=4 is above the radius k=3 that the simpg index on public.docs.simhash guarantees"):
        conn.execute("SELECT simpg.create_guard('docs', 'simhash', 4)")
    conn.execute("SELECT simpg.create_guard('docs', 'simhash', 2)")
    with pytest.raises(errors.DuplicateObject, match="already has the guard simhash_simpg_guard"):
        conn.execute("SELECT simpg.create_guard('docs', 'simhash')")
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, simhash bigint)")
    with pytest.raises(errors.UndefinedObject, match="no simpg index on public.plain.simhash"):
        conn.execute("SELECT simpg.create_guard('plain', 'simhash')")
    with pytest.raises(errors.UndefinedObject, match="table public.plain has no simpg guard"):
        conn.execute("SELECT simpg.drop_guard('plain')")
    # REPEATABLE READ cannot see concurrent writers: refused, not silently racy
    conn.autocommit = False
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    with pytest.raises(errors.FeatureNotSupported, match="cannot see concurrent writers at REPEATABLE READ"):
        conn.execute("INSERT INTO docs (id, simhash) VALUES (1, 42)")
    conn.rollback()
    conn.autocommit = True
    # the index cannot change under a guard; a prefix column dropped by hand stops writes
    with pytest.raises(errors.DependentObjectsStillExist, match="the simpg guard on public.docs.simhash uses this"):
        conn.execute("SELECT simpg.drop_index('docs', 'simhash')")
    conn.execute("ALTER TABLE docs DROP COLUMN simhash_p3")
    with pytest.raises(psycopg.Error, match="uses prefix column simhash_p3, which is gone") as info:
        conn.execute("INSERT INTO docs (id, simhash) VALUES (1, 42)")
    assert info.value.sqlstate == "SPG01"
    conn.execute("SELECT simpg.drop_guard('docs', 'simhash')")
    conn.execute("SELECT simpg.drop_index('docs', 'simhash')")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    conn.execute("SELECT simpg.create_guard('docs', 'simhash')")
    conn.execute("INSERT INTO docs (id, simhash) VALUES (1, 42)")
    # the rows of simpg.guard_locks a write locks are simpg.guard_lock_keys of its fingerprint
    conn.autocommit = False
    conn.execute("INSERT INTO docs (id, simhash) VALUES (2, %s)", [bits.to_db(2**64 - 99)])
    held = locked_slots(conn)
    assert held == conn.execute("SELECT simpg.guard_lock_keys('docs', %s, 3, '{4}')",
                                [bits.to_db(2**64 - 99)]).fetchone()[0]
    assert len(held) == 4
    assert conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone() == (0,)
    conn.rollback()
    conn.autocommit = True


def race(dsn: str, writers: int, fps: list[list[int]], write: Callable[[psycopg.Connection, int, int], None],
         ) -> tuple[list[tuple[int, psycopg.Error]], list[BaseException]]:
    """Each writer inserts its list of fingerprints, all writers starting each round together."""
    barrier = threading.Barrier(writers)
    refused: list[tuple[int, psycopg.Error]] = []
    crashed: list[BaseException] = []
    lock = threading.Lock()

    def run(w: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                for n, fp in enumerate(fps[w]):
                    barrier.wait(timeout=60)
                    try:
                        write(conn, 1000 * w + n, fp)
                    except (errors.ExclusionViolation, errors.SerializationFailure) as err:
                        with lock:
                            refused.append((fp, err))
        except BaseException as err:  # noqa: BLE001 - reported by the test
            crashed.append(err)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return refused, crashed


def planted(writers: int, rounds: int, seed: int) -> list[list[int]]:
    """Round r: every writer gets a copy of one fingerprint with 0 or 1 bit flipped (bits 0 and 63
    among them), so all copies of a round are within 2 <= K bits of each other."""
    rng = random.Random(seed)
    out: list[list[int]] = [[] for _ in range(writers)]
    for _ in range(rounds):
        centre = rng.getrandbits(64)
        for w in range(writers):
            out[w].append(flip(centre, rng.sample([0, 63, 0, 63, *range(1, 63)], rng.randint(0, 1))))
    return out


def test_without_the_guard_concurrent_writers_store_duplicates(db: object) -> None:
    """The race: each app looks first, finds nothing, then inserts; all do it at once."""
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        make(conn)
    writers = 8
    looked = threading.Barrier(writers)

    def look_then_insert(conn: psycopg.Connection, id_: int, fp: int) -> None:
        found = conn.execute("SELECT count(*) FROM simpg.near(NULL::docs, %s, %s)", [bits.to_db(fp), K]).fetchone()
        looked.wait(timeout=60)  # everyone has looked before anyone inserts: what concurrency allows
        if found == (0,):
            conn.execute("INSERT INTO docs (id, simhash) VALUES (%s, %s)", [id_, bits.to_db(fp)])

    refused, crashed = race(dsn, writers, planted(writers, 3, 161), look_then_insert)
    assert crashed == [] and refused == []
    with psycopg.connect(dsn) as conn:
        rows = stored(conn)
    close = list(brute_pairs(rows, K))
    assert len(rows) == 24 and len(close) == 3 * 28  # every writer stored its copy: the race the guard closes


@pytest.mark.parametrize("isolation", ["read committed", "serializable"])
def test_with_the_guard_concurrent_writers_leave_one_of_each(db: object, isolation: str) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        make(conn)
        conn.execute("SELECT simpg.create_guard('docs', 'simhash')")
    writers, rounds = 8, 6
    fps = planted(writers, rounds, 162)

    def insert(conn: psycopg.Connection, id_: int, fp: int) -> None:
        with conn.transaction():
            conn.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation.upper()}")
            conn.execute("INSERT INTO docs (id, simhash) VALUES (%s, %s)", [id_, bits.to_db(fp)])

    refused, crashed = race(dsn, writers, fps, insert)
    assert crashed == []
    with psycopg.connect(dsn) as conn:
        rows = stored(conn)
    assert_no_pair_within(rows, K)
    assert len(rows) + len(refused) == writers * rounds
    # at most one of each round's near-duplicates is stored; at READ COMMITTED exactly one
    assert len(rows) == rounds if isolation == "read committed" else 1 <= len(rows) <= rounds
    for fp, err in refused:
        if isinstance(err, errors.ExclusionViolation):  # names a stored row within K of the refused one
            key, distance = refused_row(err)
            assert key in rows and bits.hamming(rows[key], fp) == distance <= K


def test_updates_race_too(db: object) -> None:
    """Concurrent UPDATEs of the fingerprint column to near-duplicates: one wins per round."""
    dsn = db.dsn  # type: ignore[attr-defined]
    writers, rounds = 8, 4
    rng = random.Random(163)
    with psycopg.connect(dsn, autocommit=True) as conn:
        make(conn)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO docs (id, simhash) VALUES (%s, %s)",
                            [(1000 * w + n, bits.to_db(rng.getrandbits(64)))
                             for w in range(writers) for n in range(rounds)])
        conn.execute("SELECT simpg.create_guard('docs', 'simhash')")

    def update(conn: psycopg.Connection, id_: int, fp: int) -> None:
        conn.execute("UPDATE docs SET simhash = %s WHERE id = %s", [bits.to_db(fp), id_])

    refused, crashed = race(dsn, writers, planted(writers, rounds, 164), update)
    assert crashed == [] and len(refused) == (writers - 1) * rounds
    with psycopg.connect(dsn) as conn:
        assert_no_pair_within(stored(conn), K)


def test_a_stranger_cannot_drop_or_make_a_guard(conn: psycopg.Connection, db: object) -> None:
    make(conn)
    conn.execute("SELECT simpg.create_guard('docs')")
    conn.execute("DROP ROLE IF EXISTS guard_stranger")
    conn.execute("CREATE ROLE guard_stranger LOGIN")
    conn.execute("GRANT SELECT, INSERT ON docs TO guard_stranger")
    try:
        with psycopg.connect(db.pg.server.dsn(db.name, user="guard_stranger"), autocommit=True) as other:  # type: ignore[attr-defined]
            with pytest.raises(errors.InsufficientPrivilege):
                other.execute("SELECT simpg.drop_guard('docs')")
            with pytest.raises(errors.ExclusionViolation):  # the guard holds for every writer
                other.execute("INSERT INTO docs (id, simhash) VALUES (1, 0), (2, 1)")
            other.execute("INSERT INTO docs (id, simhash) VALUES (3, 0)")
    finally:
        conn.execute("DROP OWNED BY guard_stranger")
        conn.execute("DROP ROLE guard_stranger")
    assert conn.execute("SELECT count(*) FROM simpg.table_guards('docs')").fetchone() == (1,)


def test_insert_or_get(conn: psycopg.Connection) -> None:
    """The 409 case without an exception: the new row's key, or the stored row it duplicates."""
    conn.execute("CREATE TABLE art (id bigserial PRIMARY KEY, title text, simhash bigint)")
    conn.execute("SELECT simpg.create_index('art', 'simhash', 3, 5)")
    conn.execute("SELECT simpg.create_guard('art')")
    fp = (1 << 63) | 0x5555_1234_abcd
    first = conn.execute("SELECT * FROM simpg.insert_or_get('art', %s)",
                         [json.dumps({"title": "a", "simhash": bits.to_db(fp)})]).fetchall()
    assert first == [(True, "1", None)]
    again = conn.execute("SELECT * FROM simpg.insert_or_get('art', %s)",
                         [json.dumps({"title": "b", "simhash": bits.to_db(fp ^ 0b101)})]).fetchall()
    assert again == [(False, "1", 2)]
    assert conn.execute("SELECT id, title FROM art").fetchall() == [(1, "a")]
    other = conn.execute("SELECT * FROM simpg.insert_or_get('art', %s, 'simhash')",
                         [json.dumps({"title": "c", "simhash": bits.to_db(fp ^ 0xFFFF)})]).fetchall()
    assert other[0][0] is True
    with pytest.raises(errors.UndefinedColumn, match="has no column it can write called nope, simhash_p0"):
        conn.execute("SELECT * FROM simpg.insert_or_get('art', %s)", [json.dumps({"nope": 1, "simhash_p0": 2})])
    with pytest.raises(errors.InvalidParameterValue, match="new_row must be a JSON object"):
        conn.execute("SELECT * FROM simpg.insert_or_get('art', '[1]')")
    with pytest.raises(errors.UniqueViolation):  # another constraint's refusal is not swallowed
        conn.execute("SELECT * FROM simpg.insert_or_get('art', %s)",
                     [json.dumps({"id": 1, "simhash": bits.to_db(fp ^ 0xFFFF_0000)})])
    conn.execute("CREATE TABLE bare (id bigint PRIMARY KEY, simhash bigint)")
    with pytest.raises(errors.UndefinedObject, match="table public.bare has no simpg guard"):
        conn.execute("SELECT * FROM simpg.insert_or_get('bare', '{}')")


def test_python_surface(conn: psycopg.Connection, db: object) -> None:
    """SimHashColumn and AsyncSimHashColumn: create/drop/list the guard, insert_or_get, NearDuplicate."""
    import asyncio

    from simpg.exc import NearDuplicate
    from simpg.psycopg import AsyncSimHashColumn, Guard, Inserted, SimHashColumn, near_duplicate

    make(conn)
    index = SimHashColumn(conn, "docs", "simhash")
    assert index.create_guard() == "simhash_simpg_guard"
    assert index.guards() == [Guard("simhash_simpg_guard", "simhash", K, "id")]
    fp = 2**64 - 12345
    assert index.insert_or_get({"id": 1, "simhash": fp, "note": "a"}) == Inserted(True, "1", None)
    assert index.insert_or_get({"id": 2, "simhash": fp ^ 1}) == Inserted(False, "1", 1)
    with pytest.raises(NearDuplicate) as info:
        index.add([fp ^ 0b110], columns={"id": [10]})
    assert (info.value.key, info.value.distance, info.value.guard) == ("1", 2, "simhash_simpg_guard")
    assert "near-duplicate row in public.docs" in str(info.value)
    with pytest.raises(errors.ExclusionViolation) as raw:
        conn.execute("INSERT INTO docs (id, simhash) VALUES (3, %s)", [bits.to_db(fp ^ 4)])
    dup = near_duplicate(raw.value)
    assert dup is not None and (dup.key, dup.distance) == ("1", 1)
    with pytest.raises(SimpgError, match="k=9 is above the radius k=3"):
        index.drop_guard()
        index.create_guard(k=9)

    async def run() -> tuple[list[Guard], Inserted]:
        aconn = await psycopg.AsyncConnection.connect(db.dsn, autocommit=True)  # type: ignore[attr-defined]
        async with aconn:
            aindex = AsyncSimHashColumn(aconn, "docs", "simhash")
            await aindex.create_guard(k=2)
            found = await aindex.insert_or_get({"id": 5, "simhash": fp ^ 3})
            guards = await aindex.guards()
            await aindex.drop_guard()
            return guards, found

    guards, found = asyncio.run(run())
    assert guards == [Guard("simhash_simpg_guard", "simhash", 2, "id")] and found == Inserted(False, "1", 2)
    assert index.guards() == []


def test_writers_of_several_statements_meet_a_deadlock_at_worst(db: object) -> None:
    """Two transactions, each writing two rows in two statements, in crossed order: one of them
    is cancelled as a deadlock (40P01, retryable), the other commits, and no pair is within k."""
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        make(conn)
        conn.execute("SELECT simpg.create_guard('docs')")
    a, b = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210
    t1, t2 = psycopg.connect(dsn), psycopg.connect(dsn)
    outcome: dict[str, BaseException | None] = {}
    try:
        t1.execute("INSERT INTO docs (id, simhash) VALUES (1, %s)", [bits.to_db(a)])
        t2.execute("INSERT INTO docs (id, simhash) VALUES (2, %s)", [bits.to_db(b)])

        def second(conn: psycopg.Connection, name: str, id_: int, fp: int) -> None:
            try:
                conn.execute("INSERT INTO docs (id, simhash) VALUES (%s, %s)", [id_, bits.to_db(fp)])
                conn.commit()
                outcome[name] = None
            except psycopg.Error as err:
                conn.rollback()
                outcome[name] = err

        first = threading.Thread(target=second, args=(t1, "t1", 3, b ^ 1))  # waits for t2's keys
        first.start()
        time.sleep(0.3)
        second(t2, "t2", 4, a ^ 1)  # waits for t1's: a deadlock, which PostgreSQL breaks
        first.join(timeout=60)
    finally:
        t1.close()
        t2.close()
    failures = [err for err in outcome.values() if err is not None]
    assert len(outcome) == 2 and len(failures) == 1, outcome
    assert isinstance(failures[0], errors.DeadlockDetected)
    with psycopg.connect(dsn) as conn:
        rows = stored(conn)
    assert len(rows) == 2
    assert_no_pair_within(rows, K)


def test_sqlalchemy_raises_near_duplicate_errors(conn: psycopg.Connection, db: object) -> None:
    """raise_near_duplicates(engine): a refused flush is a NearDuplicate with key and distance."""
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql_text
    from sqlalchemy.exc import IntegrityError

    from simpg.sqlalchemy import NearDuplicate, raise_near_duplicates, url_from_dsn

    make(conn)
    conn.execute("SELECT simpg.create_guard('docs')")
    conn.execute("INSERT INTO docs (id, simhash) VALUES (1, 4096)")
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        with pytest.raises(IntegrityError) as plain, engine.begin() as sa:
            sa.execute(sql_text("INSERT INTO docs (id, simhash) VALUES (2, 4097)"))
        assert not isinstance(plain.value, NearDuplicate)
        raise_near_duplicates(engine)
        with pytest.raises(NearDuplicate) as info, engine.begin() as sa:
            sa.execute(sql_text("INSERT INTO docs (id, simhash) VALUES (2, 4097)"))
        assert (info.value.key, info.value.distance, info.value.guard) == ("1", 1, "simhash_simpg_guard")
        with pytest.raises(IntegrityError) as other, engine.begin() as sa:  # not a guard's: left alone
            sa.execute(sql_text("INSERT INTO docs (id, simhash) VALUES (1, 99999999)"))
        assert not isinstance(other.value, NearDuplicate)
    finally:
        engine.dispose()


# -- the sketch-confirmed guard (issue 14): a 409 never refuses an unrelated document --------

# Two Debian copyright files (sgml-base and xml-core, as Debian 12 ships them): one GPL-2+
# licence text under two lists of authors, unrelated packages. Their fingerprints lie 3
# bits apart, their sketches 61 (Jaccard about 0.5): fingerprints alone call them duplicates.
def confirmed(a: Row, b: Row, k: int, bands: bool) -> bool:
    """What the sketch guard counts as a near-duplicate pair (SimHashColumn.duplicates' rule):
    adapter onto oracles.brute_decision for one pair."""
    return (0, 1) in brute_decision({0: a, 1: b}, k, MAX_SKETCH, bands)


def test_sketch_guard_accepts_unrelated_licence_files_and_refuses_real_copies(conn: psycopg.Connection) -> None:
    from simpg.fingerprint import sketch_distance

    make_sketched(conn)
    sgml, xml = doc_row(SGML_BASE), doc_row(XML_CORE)
    assert sgml[0] is not None and xml[0] is not None and sgml[1] is not None and xml[1] is not None
    assert bits.hamming(sgml[0], xml[0]) <= K  # the fingerprints alone call them duplicates
    assert sketch_distance(sgml[1].to_bytes(32, "big"), xml[1].to_bytes(32, "big")) > MAX_SKETCH
    assert conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch')").fetchone() == (
        "simhash_simpg_guard",)
    # band keys by default with a sketch column (simpg dedup's decision, simpg.with_bands)
    assert conn.execute("SELECT * FROM simpg.table_guards('docs')").fetchall() == [
        ("simhash_simpg_guard", "simhash", K, "id", "sketch", MAX_SKETCH, list(BAND_COLUMNS))]
    insert_sketched(conn, 1, sgml)
    insert_sketched(conn, 2, xml)  # (a) unrelated: accepted, though within K bits
    # (b) the same file with a year changed: refused, naming the stored row
    copy = doc_row(SGML_BASE.replace("2019      Boyuan", "2019-2021 Boyuan"))
    with pytest.raises(errors.ExclusionViolation) as info:
        insert_sketched(conn, 3, copy)
    assert refused_row(info.value) == (1, bits.hamming(sgml[0], copy[0]))  # type: ignore[arg-type]
    assert "and its sketch within 36 bits" in str(info.value)
    found = conn.execute("SELECT * FROM simpg.insert_or_get('docs', %s)", [json.dumps(
        {"id": 3, "simhash": bits.to_db(copy[0]), "sketch": sketch_sql(copy[1])})]).fetchall()  # type: ignore[arg-type]
    assert found == [(False, "1", bits.hamming(sgml[0], copy[0]))]  # type: ignore[arg-type]
    assert sorted(stored(conn)) == [1, 2]
    # the fingerprint-only guard cannot even be created on these two files
    conn.execute("SELECT simpg.drop_guard('docs')")
    with pytest.raises(errors.ExclusionViolation, match="already holds 1 pair"):
        conn.execute("SELECT simpg.create_guard('docs', 'simhash')")


def test_sketch_guard_with_bands_refuses_copies_beyond_k(conn: psycopg.Connection) -> None:
    """(d) A real copy with a paragraph added lies 2 bits away: beyond a guard of k = 1, found by its band keys."""
    make_sketched(conn)
    sgml = doc_row(SGML_BASE)
    grown = doc_row(SGML_BASE + "\nFiles: debian/*\nCopyright: 2024 Someone Else <else@example.org>\n"
                                "License: GPL-2+\n")
    assert sgml[0] is not None and grown[0] is not None and bits.hamming(sgml[0], grown[0]) == 2
    assert confirmed(sgml, grown, 1, bands=True) and not confirmed(sgml, grown, 1, bands=False)
    insert_sketched(conn, 1, sgml)
    conn.execute("SELECT simpg.create_guard('docs', 'simhash', 1, sketch_column => 'sketch', bands => false)")
    assert conn.execute("SELECT band_columns FROM simpg.table_guards('docs')").fetchone() == (None,)
    conn.autocommit = False
    insert_sketched(conn, 2, grown)  # without bands: beyond k, accepted
    conn.rollback()
    conn.autocommit = True
    conn.execute("SELECT simpg.drop_guard('docs')")
    conn.execute("SELECT simpg.create_guard('docs', 'simhash', 1, sketch_column => 'sketch', bands => true)")
    assert conn.execute("SELECT band_columns FROM simpg.table_guards('docs')").fetchone() == (list(BAND_COLUMNS),)
    with pytest.raises(errors.ExclusionViolation, match="or shares a band key with it") as info:
        insert_sketched(conn, 2, grown)
    assert refused_row(info.value) == (1, 2)
    found = conn.execute("SELECT * FROM simpg.insert_or_get('docs', %s)", [json.dumps(
        {"id": 2, "simhash": bits.to_db(grown[0]), "sketch": sketch_sql(grown[1]),
         **dict(zip(BAND_COLUMNS, grown[2] or (), strict=True))})]).fetchall()
    assert found == [(False, "1", 2)]


def adversarial_rows(rng: random.Random, n: int) -> list[Row]:
    """Clusters around a few centres: fingerprints 0..K+2 bits off (bits 0 and 63 often, negative
    bigints), sketches around the confirming limit, band keys shared, changed or NULL, NULL
    fingerprints and sketches, exact copies."""
    centres: list[Row] = []
    for c in range(6):
        fp = [0, 2**64 - 1, 1 << 63][c] if c < 3 else rng.getrandbits(64)
        centres.append((fp, rng.getrandbits(256), tuple(rng.getrandbits(64) - 2**63 for _ in range(4))))
    rows: list[Row] = []
    for _ in range(n):
        fp, sketch, bands = rng.choice(centres)
        assert fp is not None and sketch is not None and bands is not None
        near_fp = flip(fp, rng.sample([0, 63, 0, 63, *range(1, 63)], rng.choice([0, 0, 1, 2, K, K + 1, K + 2, 20])))
        near_sketch = sketch
        for p in rng.sample(range(256), rng.choice([0, 1, MAX_SKETCH - 1, MAX_SKETCH, MAX_SKETCH + 1, 90])):
            near_sketch ^= 1 << p
        keys: tuple[int | None, ...] = tuple(
            rng.choice([b, b, None, rng.getrandbits(64) - 2**63]) for b in bands)
        roll = rng.random()
        rows.append((None if roll < 0.05 else near_fp,
                     None if 0.05 <= roll < 0.12 else near_sketch,
                     None if 0.12 <= roll < 0.17 else keys))
    return rows


@pytest.mark.parametrize("bands", [False, True])
def test_sketch_guard_equals_brute_force(conn: psycopg.Connection, bands: bool) -> None:
    """(c) Every write is refused exactly when brute force finds a confirmed stored row, and names
    the nearest one (fingerprint distance, then key); create_guard counts pairs as brute force does."""
    make_sketched(conn)
    rows = adversarial_rows(random.Random(140 + bands), 160)
    # on a loaded table first: create_guard refuses, counting the confirmed pairs
    for i, row in enumerate(rows, start=1):
        insert_sketched(conn, i, row)
    pairs = sum(confirmed(rows[a], rows[b], K, bands) for a, b in itertools.combinations(range(len(rows)), 2))
    assert pairs > 0
    with pytest.raises(errors.ExclusionViolation, match=f"already holds {pairs} pair"):
        conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch', bands => %s)",
                     [bands])
    conn.execute("TRUNCATE docs")
    conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch', bands => %s)", [bands])
    kept: dict[int, Row] = {}
    refusals = 0
    for i, row in enumerate(rows, start=1):
        hits = [(bits.hamming(row[0], r[0]), str(key)) for key, r in kept.items()  # type: ignore[arg-type]
                if confirmed(row, r, K, bands)]
        try:
            insert_sketched(conn, i, row)
        except errors.ExclusionViolation as err:
            assert hits, f"row {i} {row} refused, but brute force finds no confirmed row"
            distance, key = min(hits)
            assert refused_row(err) == (int(key), distance)
            refusals += 1
            continue
        assert not hits, f"row {i} {row} accepted, but brute force confirms {hits}"
        kept[i] = row
    assert refusals > 20 and len(kept) > 20
    # an UPDATE of the sketch alone is guarded too
    a, b = next((a, b) for a, b in itertools.permutations(kept, 2)
                if kept[a][0] is not None and kept[b][0] is not None and kept[b][1] is not None
                and bits.hamming(kept[a][0], kept[b][0]) <= K)  # type: ignore[arg-type]
    with pytest.raises(errors.ExclusionViolation):
        conn.execute("UPDATE docs SET sketch = (SELECT sketch FROM docs WHERE id = %s) WHERE id = %s", [b, a])
    conn.execute("UPDATE docs SET note = 'x', sketch = sketch WHERE id = %s", [a])  # unchanged: fine


def test_sketch_guard_bad_calls_name_the_value(conn: psycopg.Connection) -> None:
    make_sketched(conn)
    conn.execute("ALTER TABLE docs ADD COLUMN short bit(64), ADD COLUMN other bit(256)")
    cases = [
        ("sketch_column => 'nope'", errors.UndefinedColumn,
         re.escape("column nope of table public.docs does not exist (the sketches a guard confirms by, bit(256))")),
        ("sketch_column => 'short'", errors.DatatypeMismatch,
         r"column short of table public.docs must be bit\(256\) \(the sketches a guard confirms by\), got bit\(64\)"),
        ("sketch_column => 'note'", errors.DatatypeMismatch, r"must be bit\(256\) .*, got text"),
        ("sketch_column => 'sketch', max_sketch_distance => 257", errors.InvalidParameterValue,
         "max_sketch_distance must be an integer from 0 to 256, got 257"),
        ("sketch_column => 'sketch', max_sketch_distance => -1", errors.InvalidParameterValue, "got -1"),
        ("max_sketch_distance => 20", errors.InvalidParameterValue,
         "takes max_sketch_distance, got 20, only with a sketch_column"),
        ("bands => true", errors.InvalidParameterValue, "takes bands, got true, only with a sketch_column"),
        ("sketch_column => 'other', bands => true", errors.UndefinedColumn,
         "column other_b0 of table public.docs does not exist \\(band keys of other, bigint\\)"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            conn.execute(f"SELECT simpg.create_guard('docs', 'simhash', {args})")
    conn.execute("ALTER TABLE docs ALTER COLUMN sketch_b2 TYPE integer")
    for bands in (", bands => true", ""):  # band keys by default with a sketch column
        with pytest.raises(errors.DatatypeMismatch, match="column sketch_b2 of table public.docs must be bigint "
                                                          r"\(band keys of sketch\), got integer"):
            conn.execute(f"SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch'{bands})")
    assert conn.execute("SELECT count(*) FROM simpg.table_guards('docs')").fetchone() == (0,)
    # a sketch guard keeps the index: drop_index refuses; drop_guard then works
    conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch', max_sketch_distance => 0, "
                 "bands => false)")
    with pytest.raises(errors.DependentObjectsStillExist):
        conn.execute("SELECT simpg.drop_index('docs', 'simhash')")
    conn.execute("SELECT simpg.drop_guard('docs')")


def test_sketch_guard_lock_keys_include_the_band_keys(conn: psycopg.Connection) -> None:
    make_sketched(conn, k=3)
    conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch', bands => true)")
    fp, bands = 2**64 - 99, (-5, None, 2**63 - 1, -(2**63))
    conn.autocommit = False
    insert_sketched(conn, 1, (fp, 7, bands))
    held = locked_slots(conn)
    expected = conn.execute("SELECT simpg.guard_lock_keys('docs', %s, 3, '{5}', %s)",
                            [bits.to_db(fp), list(bands)]).fetchone()[0]
    plain = conn.execute("SELECT simpg.guard_lock_keys('docs', %s, 3, '{5}')", [bits.to_db(fp)]).fetchone()[0]
    assert held == expected and len(expected) == len(plain) + 3  # one key per non-NULL band
    conn.rollback()
    conn.autocommit = True


def sketched_rounds(writers: int, rounds: int, seed: int) -> tuple[list[list[int]], dict[int, Row]]:
    """Round r: every writer writes one document of a cluster, alternately within K bits of one
    fingerprint (sketches a few bits apart), or far fingerprints sharing only band key 2 (band-only)."""
    rng = random.Random(seed)
    fps: list[list[int]] = [[] for _ in range(writers)]
    rows: dict[int, Row] = {}
    for r in range(rounds):
        centre, sketch, band = rng.getrandbits(64), rng.getrandbits(256), rng.getrandbits(64) - 2**63
        for w in range(writers):
            fp = flip(centre, rng.sample([0, 63, *range(1, 63)], 1)) if r % 2 == 0 else rng.getrandbits(64)
            keys = (None, None, band, rng.getrandbits(64) - 2**63) if r % 2 else None
            rows[fp] = (fp, sketch ^ (1 << rng.randrange(256)), keys)
            fps[w].append(fp)
    return fps, rows


@pytest.mark.parametrize("isolation", ["read committed", "serializable"])
def test_sketch_guard_concurrent_writers_leave_one_of_each(db: object, isolation: str) -> None:
    """(e) Writers of near-duplicates all at once, within K and band-only: one of each cluster stays."""
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        make_sketched(conn)
        conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch', bands => true)")
    writers, rounds = 6, 6
    fps, rows = sketched_rounds(writers, rounds, 165)

    def insert(conn: psycopg.Connection, id_: int, fp: int) -> None:
        with conn.transaction():
            conn.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation.upper()}")
            insert_sketched(conn, id_, rows[fp])

    refused, crashed = race(dsn, writers, fps, insert)
    assert crashed == []
    with psycopg.connect(dsn) as conn:
        kept = [rows[fp] for fp in stored(conn).values()]
    assert not any(confirmed(a, b, K, bands=True) for a, b in itertools.combinations(kept, 2))
    assert len(kept) + len(refused) == writers * rounds
    assert len(kept) == rounds if isolation == "read committed" else 1 <= len(kept) <= rounds


def test_sketch_guard_needs_the_sketches_read(conn: psycopg.Connection, db: object) -> None:
    """(f) A role with TRIGGER on the table but no right to read the sketches cannot make a sketch
    guard (whose success would tell whether stored sketches are close), and a writer that may not
    read the sketches the guard confirms by is refused, never let through unchecked."""
    make_sketched(conn)
    conn.execute("DROP ROLE IF EXISTS guard_sketch_stranger")
    conn.execute("CREATE ROLE guard_sketch_stranger LOGIN")
    prefixes = [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 'docs'::regclass AND attname LIKE 'simhash_p%'")]
    readable = ", ".join(["id", "simhash", "note", *BAND_COLUMNS, *prefixes])
    conn.execute(f"GRANT SELECT ({readable}), INSERT, UPDATE, TRIGGER ON docs TO guard_sketch_stranger")
    try:
        with psycopg.connect(db.pg.server.dsn(db.name, user="guard_sketch_stranger"),  # type: ignore[attr-defined]
                             autocommit=True) as other:
            # its pair count reads the sketches as the caller: no oracle of their distances
            with pytest.raises(errors.InsufficientPrivilege, match="permission denied for table docs") as info:
                other.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch')")
            assert "simpg.create_guard" in str(info.value)  # its pair count (simpg.pairs), as the caller
            assert conn.execute("SELECT count(*) FROM simpg.table_guards('docs')").fetchone() == (0,)
            conn.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch')")
            insert_sketched(conn, 1, (5, 0, None))
            with pytest.raises(errors.InsufficientPrivilege):
                insert_sketched(other, 2, (4, 0, None))
            with pytest.raises(errors.InsufficientPrivilege):
                other.execute("SELECT simpg.drop_guard('docs')")
    finally:
        conn.execute("DROP OWNED BY guard_sketch_stranger")
        conn.execute("DROP ROLE guard_sketch_stranger")
    assert sorted(stored(conn)) == [1]


def test_sketch_guard_python_surface(conn: psycopg.Connection) -> None:
    from simpg.exc import NearDuplicate
    from simpg.psycopg import Guard, SimHashColumn

    make_sketched(conn)
    index = SimHashColumn(conn, "docs", "simhash")
    assert index.create_guard(2, sketch_column="sketch", max_sketch_distance=20, bands=True) == "simhash_simpg_guard"
    assert index.guards() == [Guard("simhash_simpg_guard", "simhash", 2, "id", "sketch", 20, BAND_COLUMNS)]
    insert_sketched(conn, 1, (99, 0, (1, 2, 3, 4)))
    insert_sketched(conn, 2, (99 ^ 0b111, 0, None))  # 3 bits: beyond k = 2
    insert_sketched(conn, 3, (98, (1 << 21) - 1, None))  # 1 bit, but sketches 21 bits apart
    with pytest.raises(NearDuplicate) as info:  # 40 bits away, shares band 3, sketches 20 bits apart
        index.add([99 ^ ((1 << 40) - 1)], columns={"id": [4], "sketch": [sketch_sql((1 << 20) - 1)], "sketch_b3": [4]})
    assert (info.value.key, info.value.distance) == ("1", 40)
    with pytest.raises(SimpgError, match="max_sketch_distance must be an integer from 0 to 256"):
        index.drop_guard()
        index.create_guard(sketch_column="sketch", max_sketch_distance=300)
    assert index.guards() == []


def test_inheritance_children_added_later_stop_guarded_writes(conn: psycopg.Connection) -> None:
    """Writes to an inheritance child never reach the parent's trigger, and its look would
    read the child's rows under keys that may repeat: create_guard refuses such a table, and
    a guarded table that gets a child later refuses writes (never checks them half)."""
    make(conn)
    conn.execute("SELECT simpg.create_guard('docs')")
    conn.execute("INSERT INTO docs (id, simhash) VALUES (1, 4096)")
    conn.execute("CREATE TABLE docs_child () INHERITS (docs)")
    with pytest.raises(errors.FeatureNotSupported, match="cannot guard a table with inheritance children"):
        conn.execute("INSERT INTO docs (id, simhash) VALUES (2, 1)")
    conn.execute("SELECT simpg.drop_guard('docs')")
    with pytest.raises(errors.FeatureNotSupported, match="has inheritance children"):
        conn.execute("SELECT simpg.create_guard('docs')")
    conn.execute("DROP TABLE docs_child")
    conn.execute("SELECT simpg.create_guard('docs')")
    with pytest.raises(errors.ExclusionViolation):
        conn.execute("INSERT INTO docs (id, simhash) VALUES (2, 4097)")
