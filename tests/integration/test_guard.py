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
    close = [(a, b) for a, b in itertools.combinations(sorted(rows), 2) if bits.hamming(rows[a], rows[b]) <= k]
    assert close == [], f"{len(close)} pairs within {k}: {close[:5]}"


def refused_row(err: psycopg.Error) -> tuple[int, int]:
    """(stored key, distance) named by a refusal's DETAIL."""
    m = re.fullmatch(r"Key \(id\)=\((\d+)\) is within (\d+) bits of the new row, key \(id\)=\((\d+)\)\.",
                     err.diag.message_detail or "")
    assert m, err.diag.message_detail
    return int(m.group(1)), int(m.group(2))


def test_guard_refuses_near_duplicates_in_every_kind_of_write(conn: psycopg.Connection) -> None:
    make(conn)
    rng = random.Random(16)
    base = [rng.getrandbits(64) for _ in range(20)] + [0, 2**64 - 1, (1 << 63) | rng.getrandbits(62)]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO docs (id, simhash) VALUES (%s, %s)",
                        [(i, bits.to_db(fp)) for i, fp in enumerate(base, start=1)])
    assert conn.execute("SELECT simpg.create_guard('docs', 'simhash')").fetchone() == ("simhash_simpg_guard",)
    assert conn.execute("SELECT * FROM simpg.table_guards('docs')").fetchall() == [
        ("simhash_simpg_guard", "simhash", K, "id")]

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
    with pytest.raises(errors.InvalidParameterValue, match="a guard on public.docs.simhash needs k from 0 to 3"):
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
    # the lock keys a write takes are simpg.guard_lock_keys of its fingerprint
    conn.autocommit = False
    conn.execute("INSERT INTO docs (id, simhash) VALUES (2, %s)", [bits.to_db(2**64 - 99)])
    held = conn.execute(
        "SELECT array_agg(((classid::bigint << 32) | objid::bigint) ORDER BY 1) FROM pg_locks "
        "WHERE locktype = 'advisory' AND objsubid = 1 AND pid = pg_backend_pid()").fetchone()[0]
    assert sorted(held) == sorted(conn.execute("SELECT simpg.guard_lock_keys('docs', %s, 3, '{4}')",
                                               [bits.to_db(2**64 - 99)]).fetchone()[0])
    assert len(held) == 4
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
    close = [(a, b) for a, b in itertools.combinations(rows, 2) if bits.hamming(rows[a], rows[b]) <= K]
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
    with pytest.raises(SimpgError, match="k from 0 to 3"):
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
    """raise_near_duplicates(engine): a refused flush is a NearDuplicateError with key and distance."""
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql_text
    from sqlalchemy.exc import IntegrityError

    from simpg.sqlalchemy import NearDuplicateError, raise_near_duplicates, url_from_dsn

    make(conn)
    conn.execute("SELECT simpg.create_guard('docs')")
    conn.execute("INSERT INTO docs (id, simhash) VALUES (1, 4096)")
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        with pytest.raises(IntegrityError) as plain, engine.begin() as sa:
            sa.execute(sql_text("INSERT INTO docs (id, simhash) VALUES (2, 4097)"))
        assert not isinstance(plain.value, NearDuplicateError)
        raise_near_duplicates(engine)
        with pytest.raises(NearDuplicateError) as info, engine.begin() as sa:
            sa.execute(sql_text("INSERT INTO docs (id, simhash) VALUES (2, 4097)"))
        assert (info.value.key, info.value.distance, info.value.guard) == ("1", 1, "simhash_simpg_guard")
        with pytest.raises(IntegrityError) as other, engine.begin() as sa:  # not a guard's: left alone
            sa.execute(sql_text("INSERT INTO docs (id, simhash) VALUES (1, 99999999)"))
        assert not isinstance(other.value, NearDuplicateError)
    finally:
        engine.dispose()
