-- simpg.passage_keys (SQL RETURN form) against PL/pgSQL with and without SET search_path:
-- CREATE INDEX on 100,000 rows of 55 hashes, three rounds in rotated order, then the function alone.
-- Run in a database with simpg installed: psql -f bench/passage_keys_function.sql (docs/benchmarks.md)
\timing on
DROP TABLE IF EXISTS fb;
CREATE TABLE fb AS SELECT g AS id, ARRAY(SELECT (hashint8extended(g * 100 + i, 0)) FROM generate_series(1, 55) i) AS passages FROM generate_series(1, 100000) g;
CREATE OR REPLACE FUNCTION public.keys_plpgsql(hashes bigint[], key_bits integer) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF key_bits < 1 OR key_bits > 32 THEN
        RAISE EXCEPTION 'key_bits must be between 1 and 32, got %', key_bits USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN ARRAY(SELECT ((h.h << (64 - key_bits)) >> (64 - key_bits))::integer FROM unnest(hashes) AS h(h) WHERE h.h IS NOT NULL);
END $$;
CREATE OR REPLACE FUNCTION public.keys_plpgsql_noset(hashes bigint[], key_bits integer) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF key_bits < 1 OR key_bits > 32 THEN
        RAISE EXCEPTION 'key_bits must be between 1 and 32, got %', key_bits USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN ARRAY(SELECT ((h.h OPERATOR(pg_catalog.<<) (64 - key_bits)) OPERATOR(pg_catalog.>>) (64 - key_bits))::integer FROM pg_catalog.unnest(hashes) AS h(h) WHERE h.h IS NOT NULL);
END $$;
SET maintenance_work_mem = '256MB';
SET max_parallel_maintenance_workers = 0;
\echo round 1
CREATE INDEX fb_sql ON fb USING gin ((simpg.passage_keys(passages, 20))); DROP INDEX fb_sql;
CREATE INDEX fb_pl ON fb USING gin ((public.keys_plpgsql(passages, 20))); DROP INDEX fb_pl;
CREATE INDEX fb_pln ON fb USING gin ((public.keys_plpgsql_noset(passages, 20))); DROP INDEX fb_pln;
\echo round 2
CREATE INDEX fb_pl ON fb USING gin ((public.keys_plpgsql(passages, 20))); DROP INDEX fb_pl;
CREATE INDEX fb_pln ON fb USING gin ((public.keys_plpgsql_noset(passages, 20))); DROP INDEX fb_pln;
CREATE INDEX fb_sql ON fb USING gin ((simpg.passage_keys(passages, 20))); DROP INDEX fb_sql;
\echo round 3
CREATE INDEX fb_pln ON fb USING gin ((public.keys_plpgsql_noset(passages, 20))); DROP INDEX fb_pln;
CREATE INDEX fb_sql ON fb USING gin ((simpg.passage_keys(passages, 20))); DROP INDEX fb_sql;
CREATE INDEX fb_pl ON fb USING gin ((public.keys_plpgsql(passages, 20))); DROP INDEX fb_pl;
\echo evaluation only
SELECT count(simpg.passage_keys(passages, 20)) FROM fb;
SELECT count(public.keys_plpgsql(passages, 20)) FROM fb;
SELECT count(public.keys_plpgsql_noset(passages, 20)) FROM fb;
SELECT count(simpg.passage_keys(passages, 20)) FROM fb;
SELECT count(public.keys_plpgsql(passages, 20)) FROM fb;
SELECT count(public.keys_plpgsql_noset(passages, 20)) FROM fb;
DROP TABLE fb; DROP FUNCTION public.keys_plpgsql(bigint[], integer); DROP FUNCTION public.keys_plpgsql_noset(bigint[], integer);
