"""Attacks on the near-unique guard (issue 27, class 4 and the guard's share of class 2).

Played as roles on both install paths: ``alice`` owns the database and her tables and is
not a superuser (she installs simpg), ``carol`` may write alice's table, ``bob`` is a
stranger (no rights on it; in one part a reader). Each test shows the attack's effect is
absent: no near-duplicate stored, no writer blocked, no code of alice's run as another
role. docs/guard.md states what the guard promises; docs/security.md lists these.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import errors, sql

from simpg import bits
from tests.integration.scenes import PATHS, Scene
from tests.integration.sketched import BAND_COLUMNS, insert_sketched, make_sketched

FP = 0x0123_4567_89AB_CDEF


@dataclass
class Guarded:
    """A scene with simpg installed by alice and a writer, carol."""

    scene: Scene
    carol: str

    def connect(self, user: str | None = None) -> psycopg.Connection:
        return self.scene.connect(user)

    def grant(self, what: str, table: str, role: str) -> None:
        with self.connect(self.scene.alice) as alice:
            alice.execute(sql.SQL("GRANT {} ON {} TO {}").format(sql.SQL(what), sql.Identifier(table),
                                                                 sql.Identifier(role)))


@pytest.fixture(params=PATHS)
def guarded(scene: Scene, request: pytest.FixtureRequest) -> Iterator[Guarded]:
    scene.install(request.param)
    carol = f"carol_{uuid.uuid4().hex[:8]}"
    scene.admin.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER").format(sql.Identifier(carol)))
    try:
        yield Guarded(scene, carol)
    finally:
        scene.admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(carol)))
        scene.admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(carol)))


def docs(conn: psycopg.Connection, partitioned: bool = False) -> None:
    """alice's table docs (id, fp, note), indexed at k = 3 and guarded; partitioned: 4 hash partitions."""
    if partitioned:
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint, note text) PARTITION BY HASH (id)")
        for r in range(4):
            conn.execute(f"CREATE TABLE docs_{r} PARTITION OF docs FOR VALUES WITH (MODULUS 4, REMAINDER {r})")
    else:
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint, note text)")
    conn.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
    conn.execute("SELECT simpg.create_guard('docs', 'fp')")


def partition_of(conn: psycopg.Connection, id_: int) -> str:
    return conn.execute("SELECT tableoid::regclass::text FROM docs WHERE id = %s", [id_]).fetchone()[0]


def fingerprints(conn: psycopg.Connection) -> dict[int, int]:
    return {i: bits.from_db(fp) for i, fp in conn.execute("SELECT id, fp FROM docs WHERE fp IS NOT NULL")}


def assert_no_pair_within(rows: dict[int, int], k: int = 3) -> None:
    close = [(a, b) for a in rows for b in rows if a < b and bits.hamming(rows[a], rows[b]) <= k]
    assert close == []


def timed(conn: psycopg.Connection, ms: int = 3000) -> psycopg.Connection:
    """conn, never waiting longer than ms for a lock or a statement: a test that would hang fails."""
    conn.execute(f"SET lock_timeout = {ms}")
    conn.execute(f"SET statement_timeout = {2 * ms}")
    return conn


# -- (d) a stranger cannot block guarded writers ------------------------------------------


def test_a_stranger_cannot_block_guarded_writers(guarded: Guarded) -> None:
    """Before: bob computed the advisory keys of a fingerprint (simpg.guard_lock_keys, or
    pg_locks) and held them; every write of that fingerprint then waited for him. Now the
    locks are rows of simpg.guard_locks that only writers of the table may see and lock."""
    scene = guarded.scene
    with scene.connect(scene.alice) as alice:
        docs(alice)
        alice.execute("INSERT INTO docs (id, fp) VALUES (1, %s)", [bits.to_db(FP)])
    guarded.grant("SELECT, INSERT", "docs", guarded.carol)
    slots = scene.admin.execute("SELECT simpg.guard_lock_keys('docs', %s, 3, '{5}')",
                                [bits.to_db(FP ^ 1)]).fetchone()[0]
    assert scene.admin.execute("SELECT count(*) FROM simpg.guard_locks").fetchone()[0] >= len(slots)
    for bob_may_read in (False, True):  # a stranger, then a reader
        if bob_may_read:
            guarded.grant("SELECT", "docs", scene.bob)
        with timed(scene.connect(scene.bob)) as bob, timed(scene.connect(guarded.carol)) as carol:
            # what bob can do without an error, held in an open transaction
            bob.autocommit = False
            for key in slots:
                bob.execute("SELECT pg_advisory_lock(%s)", [key])
            locked = bob.execute("SELECT count(*) FROM (SELECT FROM simpg.guard_locks FOR UPDATE) AS l")
            assert locked.fetchone() == (0,)
            assert bob.execute("UPDATE simpg.guard_locks SET slot = slot").rowcount == 0
            # carol writes on, the same fingerprints bob aimed at
            with pytest.raises(errors.ExclusionViolation):
                carol.execute("INSERT INTO docs (id, fp) VALUES (2, %s)", [bits.to_db(FP ^ 1)])
            carol.execute("INSERT INTO docs (id, fp) VALUES (%s, %s)",
                          [10 + bob_may_read, bits.to_db(FP ^ (0xFF00 << (16 * bob_may_read)))])
            bob.rollback()
            bob.autocommit = True
            # what bob cannot do at all
            for attack in ("LOCK TABLE simpg.guard_locks IN ACCESS EXCLUSIVE MODE",
                           "LOCK TABLE simpg.guard_locks IN SHARE MODE",
                           "LOCK TABLE simpg.guard_locks IN ROW EXCLUSIVE MODE",
                           "DELETE FROM simpg.guard_locks", "TRUNCATE simpg.guard_locks",
                           f"INSERT INTO simpg.guard_locks VALUES ('docs'::regclass, {slots[0]})",
                           "ALTER TABLE simpg.guard_locks DISABLE ROW LEVEL SECURITY"):
                with pytest.raises(errors.InsufficientPrivilege):
                    bob.execute(f"BEGIN; {attack}; COMMIT")
                bob.execute("ROLLBACK")
    # the control: a writer (alice) holding the rows does block carol, so the locks are real
    with scene.connect(scene.alice) as alice, timed(scene.connect(guarded.carol), 500) as carol:
        alice.autocommit = False
        alice.execute("SELECT FROM simpg.guard_locks WHERE guarded_table = 'docs'::regclass AND slot = ANY (%s) "
                      "FOR UPDATE", [slots])
        with pytest.raises(errors.LockNotAvailable):
            carol.execute("INSERT INTO docs (id, fp) VALUES (3, %s)", [bits.to_db(FP ^ 3)])
        alice.rollback()
    with scene.connect(scene.alice) as alice:
        rows = fingerprints(alice)
    assert sorted(rows) == [1, 10, 11]
    assert_no_pair_within(rows)


# -- (a) partitions ---------------------------------------------------------------------


def test_a_near_duplicate_in_another_partition_is_refused(guarded: Guarded) -> None:
    """Before: the clone of the trigger on each partition looked and locked in its own
    partition only, so a copy whose key hashed to another partition was stored."""
    scene = guarded.scene
    with scene.connect(scene.alice) as alice:
        docs(alice, partitioned=True)
        alice.execute("INSERT INTO docs (id, fp) VALUES (1, %s)", [bits.to_db(FP)])
        home = partition_of(alice, 1)
    guarded.grant("SELECT, INSERT, UPDATE", "docs", guarded.carol)
    with scene.connect(scene.alice) as alice:
        for r in range(4):  # writing into a partition directly is guarded as well
            alice.execute(sql.SQL("GRANT SELECT, INSERT ON {} TO {}").format(
                sql.Identifier(f"docs_{r}"), sql.Identifier(guarded.carol)))
    with timed(scene.connect(guarded.carol)) as carol:
        elsewhere = []
        for id_ in range(2, 40):
            with pytest.raises(errors.ExclusionViolation) as info:
                carol.execute("INSERT INTO docs (id, fp) VALUES (%s, %s)", [id_, bits.to_db(FP ^ (1 << (id_ % 64)))])
            assert "Key (id)=(1)" in (info.value.diag.message_detail or "")
            target = landing(scene, id_)
            if target != home:
                elsewhere.append((id_, target))
        assert len(elsewhere) > 10  # most copies would have landed in another partition
        id_, target = elsewhere[0]
        with pytest.raises(errors.ExclusionViolation):
            carol.execute(sql.SQL("INSERT INTO {} (id, fp) VALUES (%s, %s)").format(sql.Identifier(target)),
                          [id_, bits.to_db(FP ^ 6)])
        # a row that moves to another partition is checked like a new one, and passes when alone
        carol.execute("INSERT INTO docs (id, fp) VALUES (100, %s)", [bits.to_db(FP ^ 0xFFFF_0000)])
        moved = next(i for i in range(101, 200)
                     if landing(scene, i) not in (partition_of(carol, 100), partition_of(carol, 1)))
        carol.execute("UPDATE docs SET id = %s WHERE id = 100", [moved])
        assert partition_of(carol, moved) != partition_of(carol, 1)
        with pytest.raises(errors.ExclusionViolation):  # moved next to a near-duplicate: refused
            carol.execute("UPDATE docs SET fp = %s WHERE id = %s", [bits.to_db(FP ^ 5), moved])
    # concurrent writers in two partitions wait for each other, then the second is refused
    one = 600
    two = next(i for i in range(601, 700) if landing(scene, i) != landing(scene, one))
    near = [bits.to_db(FP ^ 0xF0F0_F0F0_0000_0000), bits.to_db(FP ^ 0xF0F0_F0F0_0000_0001)]
    with scene.connect(guarded.carol) as first, timed(scene.connect(guarded.carol), 500) as second:
        first.autocommit = False
        first.execute("INSERT INTO docs (id, fp) VALUES (%s, %s)", [one, near[0]])
        with pytest.raises(errors.LockNotAvailable):  # it waits for the first, in another partition
            second.execute("INSERT INTO docs (id, fp) VALUES (%s, %s)", [two, near[1]])
        first.commit()
        with pytest.raises(errors.ExclusionViolation):
            second.execute("INSERT INTO docs (id, fp) VALUES (%s, %s)", [two, near[1]])
    rows = fingerprints(scene.admin)
    assert_no_pair_within(rows)
    assert 1 in rows and one in rows and two not in rows
    # a partition attached later (empty, made like the others) is guarded with them
    with scene.connect(scene.alice) as alice:
        alice.execute("ALTER TABLE docs DETACH PARTITION docs_3")
        alice.execute("CREATE TABLE docs_3b (LIKE docs INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING INDEXES)")
        alice.execute("ALTER TABLE docs ATTACH PARTITION docs_3b FOR VALUES WITH (MODULUS 4, REMAINDER 3)")
        three = next(i for i in range(700, 800) if landing(scene, i) == "docs_3b")
        kept = min(fingerprints(alice).items())
        with pytest.raises(errors.ExclusionViolation) as info:
            alice.execute("INSERT INTO docs (id, fp) VALUES (%s, %s)", [three, bits.to_db(kept[1] ^ 9)])
        assert f"Key (id)=({kept[0]})" in (info.value.diag.message_detail or "")
        # the table detached keeps its rows but not the guard: it is a table of its own now
        assert alice.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs_3'::regclass").fetchone() == (0,)


def landing(scene: Scene, id_: int) -> str:
    """The partition of docs a row with key id_ lands in (tried in a transaction that is rolled back)."""
    with scene.admin.transaction(force_rollback=True):
        scene.admin.execute("SET LOCAL session_replication_role = replica")  # no guard: nothing to check
        return scene.admin.execute("INSERT INTO docs (id) VALUES (%s) RETURNING tableoid::regclass::text",
                                   [id_]).fetchone()[0]


def test_create_guard_on_a_partition_is_refused(guarded: Guarded) -> None:
    scene = guarded.scene
    with scene.connect(scene.alice) as alice:
        docs(alice, partitioned=True)
        alice.execute("SELECT simpg.drop_guard('docs')")
        with pytest.raises(errors.WrongObjectType, match="table public.docs_1 is a partition of public.docs: create "
                                                         "the simpg guard on public.docs"):
            alice.execute("SELECT simpg.create_guard('docs_1', 'fp')")
        assert alice.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE '%simpg_guard'").fetchone() == (0,)


# -- (b) renamed columns ----------------------------------------------------------------


def test_a_renamed_guarded_column_stops_writes_never_lets_them_through(guarded: Guarded) -> None:
    """Before: renaming the fingerprint or sketch column made the trigger read NULL and
    accept every row (renaming the key column made every write fail obscurely)."""
    scene = guarded.scene
    with scene.connect(scene.alice) as alice:
        make_sketched(alice)
        alice.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'sketch', bands => true)")
        insert_sketched(alice, 1, (FP, 7, (1, 2, 3, 4)))
    guarded.grant("SELECT, INSERT, UPDATE", "docs", guarded.carol)
    copy = (FP ^ 1, 7, (1, 2, 3, 4))
    for column, role in [("simhash", "fingerprint"), ("sketch", "sketch"), ("id", "key"),
                         ("sketch_b2", "band key"), ("simhash_p4", "prefix")]:
        with scene.connect(scene.alice) as alice:
            alice.execute(sql.SQL("ALTER TABLE docs RENAME COLUMN {} TO renamed").format(sql.Identifier(column)))
            names = {"simhash": "renamed"} if column == "simhash" else {}
            with scene.connect(guarded.carol) as carol:
                try:
                    with pytest.raises(psycopg.Error) as info:
                        if column == "id":
                            carol.execute("INSERT INTO docs (renamed, simhash, sketch) VALUES (2, %s, %s::bit(256))",
                                          [bits.to_db(copy[0]), "x" + (7).to_bytes(32, "big").hex()])
                        else:
                            cols = ["id", names.get("simhash", "simhash"), *(
                                ["renamed"] if column == "sketch" else ["sketch"])]
                            carol.execute(sql.SQL("INSERT INTO docs ({}) VALUES (2, %s, %s::bit(256))").format(
                                sql.SQL(", ").join(map(sql.Identifier, cols))),
                                [bits.to_db(FP ^ 0xFFFF_FFFF), "x" + (7).to_bytes(32, "big").hex()])
                    assert info.value.sqlstate == "SPG01", info.value
                    expected = (f"uses prefix column {column}, which is gone" if role == "prefix"
                                else f"reads {role} column {column}, which is gone (renamed or dropped)")
                    assert expected in str(info.value)
                    assert "simpg.drop_guard('public.docs', 'simhash')" in (info.value.diag.message_hint or "")
                finally:
                    alice.execute(sql.SQL("ALTER TABLE docs RENAME COLUMN renamed TO {}").format(
                        sql.Identifier(column)))
    with scene.connect(guarded.carol) as carol:
        assert carol.execute("SELECT count(*) FROM docs").fetchone() == (1,)  # nothing got through
        with pytest.raises(errors.ExclusionViolation):
            insert_sketched(carol, 2, copy)
    # renamed for good: drop the guard and create it on the new names
    with scene.connect(scene.alice) as alice:
        alice.execute("ALTER TABLE docs RENAME COLUMN sketch TO minhash")
        for band in BAND_COLUMNS:
            alice.execute(sql.SQL("ALTER TABLE docs RENAME COLUMN {} TO {}").format(
                sql.Identifier(band), sql.Identifier(band.replace("sketch", "minhash"))))
        alice.execute("SELECT simpg.drop_guard('docs', 'simhash')")
        alice.execute("SELECT simpg.create_guard('docs', 'simhash', sketch_column => 'minhash', bands => true)")
    with scene.connect(guarded.carol) as carol, pytest.raises(errors.ExclusionViolation):
        carol.execute("INSERT INTO docs (id, simhash, minhash) VALUES (2, %s, %s::bit(256))",
                      [bits.to_db(copy[0]), "x" + (7).to_bytes(32, "big").hex()])


# -- (c) row-level security ------------------------------------------------------------


def test_row_level_security_refuses_the_writers_it_applies_to(guarded: Guarded) -> None:
    """Before: carol, who sees only her own rows, was checked against those only, and stored
    a copy of alice's row. A guard cannot keep its promise for a writer who cannot see every
    row, so such a write is refused (42501), saying why; writers RLS does not apply to are
    guarded as before."""
    scene = guarded.scene
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp bigint, who name NOT NULL DEFAULT current_user)")
        alice.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
        alice.execute("SELECT simpg.create_guard('docs', 'fp')")
        alice.execute("INSERT INTO docs (id, fp) VALUES (1, %s)", [bits.to_db(FP)])
        alice.execute("CREATE POLICY own ON docs USING (who = current_user)")
        alice.execute("ALTER TABLE docs ENABLE ROW LEVEL SECURITY")
    guarded.grant("SELECT, INSERT", "docs", guarded.carol)
    with scene.connect(guarded.carol) as carol:
        assert carol.execute("SELECT count(*) FROM docs").fetchone() == (0,)  # alice's row is hidden from her
        for fp in (FP ^ 1, FP ^ 0xFFFF_FFFF_0000):  # a copy, and a row that may well be new: neither is checkable
            with pytest.raises(errors.InsufficientPrivilege, match="row-level security hides rows of public.docs"):
                carol.execute("INSERT INTO docs (id, fp) VALUES (2, %s)", [bits.to_db(fp)])
    with scene.connect(scene.alice) as alice:  # the owner, whom RLS does not apply to: guarded as ever
        with pytest.raises(errors.ExclusionViolation):
            alice.execute("INSERT INTO docs (id, fp) VALUES (3, %s)", [bits.to_db(FP ^ 2)])
        alice.execute("INSERT INTO docs (id, fp) VALUES (4, %s)", [bits.to_db(FP ^ 0xFFFF_FFFF_0000)])
        alice.execute("ALTER TABLE docs FORCE ROW LEVEL SECURITY")
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security hides rows"):
            alice.execute("INSERT INTO docs (id, fp) VALUES (5, %s)", [bits.to_db(FP ^ 0xFF)])
        alice.execute("SELECT simpg.drop_guard('docs')")
        with pytest.raises(errors.InsufficientPrivilege, match="cannot create a simpg guard on public.docs as role"):
            alice.execute("SELECT simpg.create_guard('docs', 'fp')")
        alice.execute("ALTER TABLE docs NO FORCE ROW LEVEL SECURITY")
        alice.execute("SELECT simpg.create_guard('docs', 'fp')")
    # a role with BYPASSRLS sees every row: guarded as usual
    scene.admin.execute(sql.SQL("ALTER ROLE {} BYPASSRLS").format(sql.Identifier(guarded.carol)))
    with scene.connect(guarded.carol) as carol:
        with pytest.raises(errors.ExclusionViolation):
            carol.execute("INSERT INTO docs (id, fp) VALUES (6, %s)", [bits.to_db(FP ^ 4)])
        carol.execute("INSERT INTO docs (id, fp) VALUES (7, %s)", [bits.to_db(FP ^ 0xF0F0_0000_0000_0000)])
    rows = {i: bits.from_db(fp) for i, fp in scene.admin.execute("SELECT id, fp FROM docs")}
    assert sorted(rows) == [1, 4, 7]
    assert_no_pair_within(rows)


# -- class 2: no code of the table's owner runs as the writer ------------------------------


def test_the_guard_runs_no_code_of_the_table_owner(guarded: Guarded) -> None:
    """Before: the trigger read the row with to_jsonb(NEW), which runs a cast to json of
    any column's type, and printed keys with ::text, which runs a cast to text. alice owns
    an enum type with both casts, functions that try to make her superuser; the superuser
    writes to her table (and asks insert_or_get), as does carol. Nothing of hers runs."""
    scene = guarded.scene
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE TABLE trap (who name, what text)")
        alice.execute("GRANT INSERT ON trap TO PUBLIC")
        alice.execute("CREATE TYPE mood AS ENUM ('k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8')")
        for target in ("json", "text"):
            alice.execute(f"""CREATE FUNCTION grab_{target}(mood) RETURNS {target} LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO public.trap VALUES (current_user, '{target}');
                    BEGIN
                        EXECUTE format('ALTER ROLE %I SUPERUSER', '{scene.alice}');
                    EXCEPTION WHEN insufficient_privilege THEN NULL;
                    END;
                    RETURN '"x"'::json::{target};
                END $$""")
            alice.execute(f"CREATE CAST (mood AS {target}) WITH FUNCTION grab_{target}(mood)")
        alice.execute("CREATE TABLE docs (id text PRIMARY KEY, fp bigint, m mood)")
        alice.execute("SELECT simpg.create_index('docs', 'fp', 3, 5)")
        alice.execute("SELECT simpg.create_guard('docs', 'fp')")
        # the key becomes her type after the guard was made (create_guard checks only then)
        alice.execute("ALTER TABLE docs ALTER COLUMN id TYPE mood USING id::mood")
        alice.execute("SELECT 'k1'::mood::json, 'k1'::mood::text")  # the casts work: her own call runs them
        assert alice.execute("SELECT count(*) FROM trap").fetchone() == (2,)
        alice.execute("TRUNCATE trap")
    guarded.grant("SELECT, INSERT, UPDATE", "docs", guarded.carol)
    admin = scene.admin
    admin.execute("INSERT INTO docs VALUES ('k1', %s, 'k2')", [bits.to_db(FP)])
    with pytest.raises(errors.ExclusionViolation) as info:
        admin.execute("INSERT INTO docs VALUES ('k2', %s, 'k3')", [bits.to_db(FP ^ 1)])
    assert info.value.diag.message_detail == "Key (id)=(k1) is within 1 bits of the new row, key (id)=(k2)."
    admin.execute("UPDATE docs SET fp = %s, m = 'k4' WHERE id = 'k1'", [bits.to_db(FP ^ 2)])
    assert admin.execute("SELECT * FROM simpg.insert_or_get('docs', %s)",
                         [f'{{"id": "k3", "fp": {bits.to_db(FP ^ 3)}, "m": "k5"}}']).fetchall() == [(False, "k1", 1)]
    assert admin.execute("SELECT * FROM simpg.insert_or_get('docs', %s)",
                         ['{"id": "k4", "fp": 12345, "m": "k5"}']).fetchall() == [(True, "k4", None)]
    with scene.connect(guarded.carol) as carol:
        carol.execute("INSERT INTO docs VALUES ('k5', 99999999, 'k6')")
        with pytest.raises(errors.ExclusionViolation):
            carol.execute("INSERT INTO docs VALUES ('k6', 99999998, 'k6')")
    assert admin.execute("SELECT * FROM trap").fetchall() == []
    assert not scene.is_superuser(scene.alice)
