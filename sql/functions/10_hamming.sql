-- hamming functions

-- SQL-standard bodies (RETURN ...) are parsed at creation time, so they cannot be
-- redirected through search_path, and the planner still inlines them.
CREATE FUNCTION simpg.hamming(a bigint, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.bit_count((a OPERATOR(pg_catalog.#) b)::bit(64))::integer;

COMMENT ON FUNCTION simpg.hamming(bigint, bigint) IS
    'Hamming distance between two 64-bit fingerprints: bit_count(a # b)';

-- sketch_distance: bits in which two sketches (bit(256), simpg.fingerprint.sketch) differ,
-- the one definition of the distance every sketch confirmation uses. Inlined like
-- hamming, so postgres_fdw ships the built-in bit_count(a # b) it becomes.
CREATE FUNCTION simpg.sketch_distance(a bit, b bit) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.bit_count(a OPERATOR(pg_catalog.#) b)::integer;

COMMENT ON FUNCTION simpg.sketch_distance(bit, bit) IS
    'Number of differing bits of two sketches: bit_count(a # b)';
