-- pgTAP: simpg's report functions against brute force written independently in SQL.
-- Run by tests/integration/test_pgtap.py (psql -f, one fresh database, pgtap installed).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(40);

-- the API (the last three arguments: sketch_column, max_sketch_distance, bands)
SELECT has_function('simpg', 'pairs', ARRAY['regclass', 'integer', 'name', 'name', 'name', 'integer', 'boolean']);
SELECT has_function('simpg', 'pairs', ARRAY['anyelement', 'regclass', 'integer', 'name', 'name',
                                            'name', 'integer', 'boolean']);
SELECT has_function('simpg', 'clusters', ARRAY['regclass', 'integer', 'name', 'name', 'text',
                                               'name', 'integer', 'boolean']);
SELECT has_function('simpg', 'clusters', ARRAY['anyelement', 'regclass', 'integer', 'name', 'name', 'text',
                                               'name', 'integer', 'boolean']);
SELECT has_function('simpg', 'duplicate_stats', ARRAY['regclass', 'integer', 'name', 'name', 'text',
                                                      'name', 'integer', 'boolean']);
SELECT has_function('simpg', 'cluster_sizes', ARRAY['regclass', 'integer', 'name', 'name', 'text',
                                                    'name', 'integer', 'boolean']);
-- the range distribution of shards (sql/functions/76_range_shards.sql)
SELECT has_function('simpg', 'create_range_index', ARRAY['regclass', 'name', 'integer', 'integer', 'integer', 'name']);
SELECT has_function('simpg', 'drop_range_index', ARRAY['regclass', 'name']);
SELECT has_function('simpg', 'range_layout', ARRAY['regclass', 'name']);
SELECT has_function('simpg', 'range_shard_bounds', ARRAY['integer', 'integer[]', 'integer']);
SELECT has_function('simpg', 'range_shard_ddl', ARRAY['regclass', 'name', 'name']);
SELECT has_function('simpg', 'attach_range_shard', ARRAY['regclass', 'name', 'integer', 'integer', 'name', 'name']);
SELECT has_function('simpg', 'range_fill', ARRAY['regclass', 'name']);
SELECT has_function('simpg', 'range_shards', ARRAY['regclass', 'name']);
SELECT has_function('simpg', 'check_range_shards', ARRAY['regclass', 'name', 'boolean']);
SELECT has_function('simpg', 'range_near', ARRAY['regclass', 'bigint', 'integer', 'name']);
SELECT has_function('simpg', 'range_near_many', ARRAY['regclass', 'bigint[]', 'integer', 'name']);
SELECT has_function('simpg', 'range_near_query', ARRAY['regclass', 'bigint', 'integer', 'name']);
SELECT function_returns('simpg', 'range_shards_write', ARRAY[]::text[], 'trigger');
SELECT is((SELECT array_agg(lo ORDER BY shard_number) FROM simpg.range_shard_bounds(3, '{5}', 4)),
          ARRAY[NULL, -4611686018427387904, 0, 4611686018427387904]::bigint[],
          'range_shard_bounds: four equal ranges of the signed value');
SELECT volatility_is('simpg', 'pairs', ARRAY['regclass', 'integer', 'name', 'name', 'name', 'integer', 'boolean'],
                     'stable');
SELECT volatility_is('simpg', 'fingerprint_clusters', ARRAY['regclass', 'integer', 'name'], 'stable',
                     'fingerprint_clusters is STABLE, so its passes share the caller''s snapshot');

-- data: random rows, near copies with 0 to 4 bits flipped (bits 0 and 63 among them),
-- exact duplicates, the bigint extremes, and a NULL fingerprint
CREATE TABLE tap_docs (id integer PRIMARY KEY, title text, simhash bigint);
SELECT setseed(0.25);
INSERT INTO tap_docs
SELECT g, 'random ' || g, ((random() * 4294967296)::bigint << 32) # (random() * 4294967296)::bigint
FROM generate_series(1, 250) AS g;
INSERT INTO tap_docs
SELECT 1000 + g, 'copy of ' || g,
       simhash # CASE WHEN g % 5 >= 1 THEN 1::bigint << (g % 64) ELSE 0 END
               # CASE WHEN g % 5 >= 2 THEN 1::bigint << ((g * 7 + 13) % 64) ELSE 0 END
               # CASE WHEN g % 5 >= 3 THEN 1::bigint << ((g * 17 + 29) % 64) ELSE 0 END
               # CASE WHEN g % 5 >= 4 THEN 1::bigint << ((g * 31 + 3) % 64) ELSE 0 END
FROM (SELECT id AS g, simhash FROM tap_docs WHERE id <= 250 AND id % 2 = 0) AS originals;
INSERT INTO tap_docs VALUES
    (2001, 'zero', 0), (2002, 'zero again', 0), (2003, 'one', 1), (2004, 'all ones', -1),
    (2005, 'min', -9223372036854775808), (2006, 'max', 9223372036854775807),
    (2007, 'min + 1', -9223372036854775807), (2008, 'no fingerprint', NULL);
SELECT lives_ok($$SELECT simpg.create_index('tap_docs', 'simhash', 3, 4)$$, 'create_index k=3 blocks=4');

-- brute force with a popcount of its own (the bit string's ones), every pair once
CREATE TEMP VIEW brute AS
SELECT a.id AS key_a, b.id AS key_b,
       length(replace((a.simhash # b.simhash)::bit(64)::text, '0', '')) AS distance
FROM tap_docs AS a JOIN tap_docs AS b ON a.id < b.id
WHERE a.simhash IS NOT NULL AND b.simhash IS NOT NULL;

SELECT cmp_ok((SELECT count(*) FROM brute WHERE distance <= 3), '>', 100::bigint, 'the data has many pairs within 3');
SELECT cmp_ok((SELECT count(*) FROM brute WHERE distance = 4), '>', 10::bigint, 'and pairs at 4 that must not match');

SELECT results_eq(
    format('SELECT key_a, key_b, distance FROM simpg.pairs(''tap_docs'', %s) ORDER BY 1, 2', k),
    format('SELECT key_a::bigint, key_b::bigint, distance FROM brute WHERE distance <= %s ORDER BY 1, 2', k),
    format('pairs at k=%s equal brute force', k))
FROM generate_series(0, 3) AS k;

SELECT results_eq(
    $$SELECT key_a, key_b, distance FROM simpg.pairs(NULL::integer, 'tap_docs', 2) ORDER BY 1, 2$$,
    $$SELECT key_a, key_b, distance FROM brute WHERE distance <= 2 ORDER BY 1, 2$$,
    'pairs with integer keys equal brute force');

-- clusters: transitive closure of the brute-force pairs, by recursive CTE
CREATE TEMP VIEW brute_clusters AS
WITH RECURSIVE e AS (
    SELECT key_a AS a, key_b AS b FROM brute WHERE distance <= 3
    UNION ALL SELECT key_b, key_a FROM brute WHERE distance <= 3
), reach(src, dst) AS (
    SELECT a, a FROM e
    UNION SELECT r.src, e.b FROM reach AS r JOIN e ON e.a = r.dst
)
SELECT src AS key, min(dst) AS cluster_id, count(*) AS size FROM reach GROUP BY src;

SELECT results_eq(
    $$SELECT cluster_id, key, size FROM simpg.clusters('tap_docs', 3, method => 'components') ORDER BY key$$,
    $$SELECT cluster_id::bigint, key::bigint, size FROM brute_clusters ORDER BY key$$,
    'components at k=3 equal the transitive closure of brute-force pairs');
SELECT results_eq(
    $$SELECT cluster_size, clusters FROM simpg.cluster_sizes('tap_docs', 3, method => 'components') WHERE cluster_size > 1$$,
    $$SELECT size, count(*) FROM (SELECT DISTINCT cluster_id, size FROM brute_clusters) AS c GROUP BY size ORDER BY size$$,
    'cluster size histogram equals brute force');
SELECT results_eq(
    $$SELECT rows, duplicated_rows, clusters FROM simpg.duplicate_stats('tap_docs', 3, method => 'components')$$,
    $$SELECT (SELECT count(*) FROM tap_docs WHERE simhash IS NOT NULL), (SELECT count(*) FROM brute_clusters),
             (SELECT count(DISTINCT cluster_id) FROM brute_clusters)$$,
    'duplicate_stats equals brute force');
SELECT is((SELECT count(*) FROM simpg.pairs('tap_docs', 3) WHERE key_a = 2008 OR key_b = 2008), 0::bigint,
          'a row without fingerprint is in no pair');

-- errors name the value
SELECT throws_ok($$SELECT * FROM simpg.pairs('tap_docs', 4)$$, '22023',
    'k=4 is above the radius k=3 that the simpg index on public.tap_docs.simhash guarantees', 'k above the index');
SELECT throws_ok($$SELECT * FROM simpg.clusters('tap_docs', -1)$$, '22023',
    'k must be a non-negative integer, got -1', 'negative k');
SELECT throws_ok($$SELECT * FROM simpg.duplicate_stats('tap_docs', NULL)$$, '22023',
    'k must be a non-negative integer, got null', 'NULL k');
SELECT throws_ok($$SELECT * FROM simpg.pairs('tap_docs', 3, 'title')$$, '42704',
    'no simpg index on public.tap_docs.title', 'no index');
SELECT throws_ok($$SELECT * FROM simpg.pairs(NULL::uuid, 'tap_docs', 3)$$, '42804',
    'key column public.tap_docs.id is integer, not uuid; pass NULL::integer as the first argument to get integer keys',
    'key type that does not match');
SELECT throws_ok($$SELECT * FROM simpg.pairs('tap_docs', 3, key_column => 'title')$$, '22023',
    'key column public.tap_docs.title must be not null and unique (a primary key or a unique index of its own)',
    'key column that is not unique');

SELECT * FROM finish();
ROLLBACK;
