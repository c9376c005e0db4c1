-- pgTAP: how simpg's functions and catalog hold up against other roles.
-- Run by tests/integration/test_pgtap.py (psql -f, one fresh database, pgtap installed).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(22);

-- every function: SECURITY INVOKER, commented, and immune to the caller's search_path
CREATE TEMP VIEW simpg_functions AS
SELECT p.oid::regprocedure::text AS signature, p.prosecdef, l.lanname, p.proconfig,
       obj_description(p.oid, 'pg_proc') AS comment,
       -- SQL-standard bodies (RETURN ...) are bound to objects when created
       p.prosqlbody IS NOT NULL AS standard_body, p.prorettype::regtype AS rettype
FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang
WHERE p.pronamespace = 'simpg'::regnamespace;

SELECT cmp_ok((SELECT count(*) FROM simpg_functions), '>=', 30::bigint, 'simpg has its functions');
-- event trigger functions cannot be called, only fired: the one place SECURITY DEFINER is allowed
SELECT is_empty($$SELECT signature FROM simpg_functions WHERE prosecdef AND rettype <> 'event_trigger'::regtype$$,
                'no callable simpg function is SECURITY DEFINER');
SELECT is_empty($$SELECT signature FROM simpg_functions WHERE comment IS NULL$$, 'every simpg function has a comment');
SELECT is_empty(
    $$SELECT signature FROM simpg_functions
      WHERE lanname = 'plpgsql' AND NOT coalesce(proconfig, '{}') @> ARRAY['search_path=pg_catalog, pg_temp']$$,
    'every PL/pgSQL function pins search_path = pg_catalog, pg_temp');
SELECT is_empty(
    $$SELECT signature FROM simpg_functions
      WHERE lanname = 'sql' AND NOT standard_body
        AND NOT coalesce(proconfig, '{}') @> ARRAY['search_path=pg_catalog, pg_temp']$$,
    'every SQL function has a SQL-standard body or a pinned search_path');
SELECT is_empty($$SELECT signature FROM simpg_functions WHERE lanname NOT IN ('sql', 'plpgsql')$$,
    'simpg is pure SQL and PL/pgSQL');

-- the catalog: a view of the system catalogs, nothing stored that a role could write
SELECT has_view('simpg', 'indexes', 'simpg.indexes is a view');
-- but the guard's lock rows, from which nothing is decided (docs/security.md, item 9):
-- unlogged, under row-level security, and no table-level right for anyone else
SELECT is_empty($$SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'simpg'::regnamespace AND c.relkind <> 'v'
                  AND c.relname NOT IN ('guard_locks', 'guard_locks_pkey')$$,
    'simpg stores nothing but the guard''s lock rows: no other table, sequence or index of its own');
SELECT ok((SELECT c.relpersistence = 'u' AND c.relrowsecurity FROM pg_class c WHERE c.oid = 'simpg.guard_locks'::regclass),
    'the guard''s lock rows: unlogged, under row-level security');
SELECT is_empty($$SELECT a.grantee FROM pg_class c, aclexplode(c.relacl) a
                  WHERE c.oid = 'simpg.guard_locks'::regclass AND a.grantee <> c.relowner$$,
    'no role but its owner has a table-level right on the guard''s lock rows');
SELECT is_empty($$SELECT evtname FROM pg_event_trigger WHERE evtname LIKE 'simpg%'$$, 'no event trigger');

CREATE ROLE tap_owner NOLOGIN;
CREATE ROLE tap_other NOLOGIN;
GRANT CREATE ON SCHEMA public TO tap_owner;
SET LOCAL ROLE tap_owner;
CREATE TABLE owned (id bigint PRIMARY KEY, simhash bigint);
INSERT INTO owned VALUES (1, 0), (2, 1), (3, 7);
SELECT NULL FROM simpg.create_index('owned', 'simhash', 2, 3);
GRANT SELECT ON owned TO tap_other;
RESET ROLE;

SET LOCAL ROLE tap_other;
SELECT throws_ok($$DELETE FROM simpg.indexes$$, '55000', NULL, 'nobody writes the catalog view');
SELECT throws_ok($$CREATE FUNCTION simpg.hamming(bigint, integer) RETURNS integer LANGUAGE sql RETURN 0$$,
    '42501', NULL, 'another role cannot add functions to schema simpg');
SELECT is((SELECT k FROM simpg.indexes WHERE indexed_table = 'owned'::regclass), 2,
          'another role reads the catalog row');
SELECT throws_ok($$SELECT simpg.drop_index('owned', 'simhash')$$, '42501',
    'must be owner of table public.owned', 'another role cannot drop the index');
SELECT throws_ok($$SELECT simpg.create_index('owned', 'id', 1, 2)$$, '42501',
    'must be owner of table public.owned', 'another role cannot create an index on the table');
SELECT throws_ok(
    $$SELECT simpg.register_index('owned', 'id', 0, '{1}', '{id}', '{owned_pkey}')$$, '42501',
    'must be owner of table public.owned', 'another role cannot register an index on the table');
SELECT results_eq($$SELECT key_a, key_b FROM simpg.pairs('owned', 2) ORDER BY 1, 2$$,
                  $$VALUES (1::bigint, 2::bigint), (2, 3)$$,
                  'a role with SELECT reads the pairs');
RESET ROLE;

-- without SELECT, no simpg function reads the table
REVOKE SELECT ON owned FROM tap_other;
SET LOCAL ROLE tap_other;
SELECT throws_ok($$SELECT * FROM simpg.pairs('owned', 2)$$, '42501', NULL, 'pairs: permission denied');
SELECT throws_ok($$SELECT * FROM simpg.clusters('owned', 2)$$, '42501', NULL, 'clusters: permission denied');
SELECT throws_ok($$SELECT * FROM simpg.duplicate_stats('owned', 2)$$, '42501', NULL, 'duplicate_stats: permission denied');
SELECT throws_ok($$SELECT * FROM simpg.near(NULL::owned, 0, 2)$$, '42501', NULL, 'near: permission denied');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
