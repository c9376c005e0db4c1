"""Casts and other implicit user code inside simpg's SQL (issue 27, class 2; docs/security.md).

A cast from a type is looked up in pg_cast, whatever search_path says: ``alice`` owns
her table and its key's type, so a cast from that type to text (or json, or bigint) is
her function, and it would run with the rights of whoever casts, a superuser running a
report on her table. simpg refuses key types that are not built in (simpg.builtin_type),
so that no report, guard or shard step casts, compares or prints a key with user code;
tests/unit/test_sql_builtin_only.py keeps new casts of user columns out of sql/.
"""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import sql

from simpg import bits
from tests.integration.scenes import GRAB, PATHS, Scene
from tests.oracles import adversarial_fingerprints, brute_pairs

#: every report a superuser might run on alice's table, with the key in its own type or as text
REPORTS = [
    "SELECT count(*) FROM simpg.pairs('docs', 3)",
    "SELECT count(*) FROM simpg.pairs(NULL::text, 'docs', 3)",
    "SELECT count(*) FROM simpg.clusters('docs', 3)",
    "SELECT count(*) FROM simpg.clusters(NULL::text, 'docs', 3)",
    "SELECT count(*) FROM simpg.clusters('docs', 3, method => 'components')",
    "SELECT * FROM simpg.duplicate_stats('docs', 3)",
    "SELECT count(*) FROM simpg.cluster_sizes('docs', 3)",
    "SELECT count(*) FROM simpg.fingerprint_representatives('docs', 3)",
    "SELECT simpg.pairs_query('docs', 3)",
    "SELECT simpg.clusters_query('docs', 3)",
]


def key_types(scene: Scene, alice: psycopg.Connection) -> dict[str, str]:
    """alice's own types, each with casts to text, json and bigint that are her functions."""
    alice.execute("CREATE TYPE mood AS ENUM ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')")
    alice.execute("CREATE TYPE pair AS (x integer, y integer)")
    for type_, text in (("mood", "pg_catalog.enum_out($1)::text"), ("pair", "'(' || $1.x || ',' || $1.y || ')'")):
        for target, result in (("text", text), ("json", f"to_json({text})"), ("bigint", "1")):
            alice.execute(f"CREATE FUNCTION grab_{type_}_{target}({type_}) RETURNS {target} LANGUAGE plpgsql AS $$"
                          + GRAB.format(alice=scene.alice, result=result) + "$$")
            alice.execute(f"CREATE CAST ({type_} AS {target}) WITH FUNCTION grab_{type_}_{target}({type_}) "
                          "AS ASSIGNMENT")
    return {"mood": "(ARRAY['a','b','c','d','e','f','g','h']::mood[])[1 + i % 8]",
            "pair": "ROW(i, i)::pair"}


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("key_type", ["mood", "pair"])
def test_a_superuser_running_reports_never_runs_the_key_types_casts(scene, how, key_type):
    scene.install(how)
    with scene.connect(scene.alice) as alice:
        key_of = key_types(scene, alice)[key_type]
        alice.execute(f"CREATE TABLE docs (id {key_type} PRIMARY KEY, fp bigint)")
        # eight rows: near duplicates of each other, so every report has pairs to cast
        alice.execute(f"INSERT INTO docs SELECT {key_of}, i FROM generate_series(0, 7) AS i")
        alice.execute("SELECT simpg.create_index('docs', 'fp', 3, 4)")
    errors = {}
    for statement in REPORTS:
        try:
            scene.admin.execute(statement)
        except psycopg.Error as err:
            errors[statement] = err
        assert not scene.is_superuser(scene.alice), statement  # the attack's effect, first
    for statement in REPORTS:  # then the reason: each report refused the key's type
        assert isinstance(errors.get(statement), psycopg.errors.FeatureNotSupported), (statement, errors.get(statement))
        assert f"has type public.{key_type}, which is not built in" in str(errors[statement])
    # connected components never read a key, so they still answer, on the right rows
    stats = scene.admin.execute("SELECT rows, duplicated_rows, clusters FROM simpg.duplicate_stats('docs', 3, "
                                "method => 'components')").fetchone()
    assert stats == (8, 8, 1)  # fingerprints 0 .. 7 differ in bits 0 .. 2 only: one cluster
    assert not scene.is_superuser(scene.alice)


@pytest.mark.parametrize("how", PATHS)
def test_keys_of_built_in_types_and_domains_over_them_still_report_exactly(scene, how):
    scene.install(how)
    rng = random.Random(5)
    rows = dict(enumerate(adversarial_fingerprints(rng, 3, 4, random_rows=200), start=1))
    with scene.connect(scene.alice) as alice:
        alice.execute("CREATE DOMAIN doc_id AS bigint CHECK (VALUE > 0)")
        alice.execute("CREATE TABLE docs (id doc_id PRIMARY KEY, fp bigint)")
        with alice.cursor().copy("COPY docs (id, fp) FROM STDIN") as copy:
            for key, fp in rows.items():
                copy.write_row((key, None if fp is None else bits.to_db(fp)))
        alice.execute("SELECT simpg.create_index('docs', 'fp', 3, 4)")
        alice.execute(sql.SQL("GRANT SELECT ON docs TO {}").format(sql.Identifier(scene.bob)))
    expected = brute_pairs(rows, 3)
    for conn in (scene.admin, scene.connect(scene.bob)):
        got = {(a, b): d for a, b, d in conn.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', 3)")}
        assert got == expected
        as_text = conn.execute("SELECT key_a, key_b FROM simpg.pairs(NULL::text, 'docs', 3)").fetchall()
        assert {(int(a), int(b)) for a, b in as_text} == set(expected)


def test_builtin_type_says_which_types_run_only_built_in_code(db):
    conn = db.conn
    conn.execute("CREATE TYPE mood AS ENUM ('a')")
    conn.execute("CREATE DOMAIN d_int AS integer")
    conn.execute("CREATE DOMAIN d_d_int AS d_int")
    conn.execute("CREATE DOMAIN d_mood AS mood")
    conn.execute("CREATE TYPE pair AS (x integer)")
    for type_, expected in [("bigint", True), ("text", True), ("uuid", True), ("integer[]", True),
                            ("d_int", True), ("d_d_int", True), ("mood", False), ("d_mood", False),
                            ("pair", False), ("mood[]", False)]:
        assert conn.execute("SELECT simpg.builtin_type(%s::regtype)", [type_]).fetchone() == (expected,), type_
