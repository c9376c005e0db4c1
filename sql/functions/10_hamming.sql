-- hamming functions

-- SQL-standard bodies (RETURN ...) are parsed at creation time, so they cannot be
-- redirected through search_path, and the planner still inlines them.
CREATE FUNCTION simpg.hamming(a bigint, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.bit_count((a OPERATOR(pg_catalog.#) b)::bit(64))::integer;

COMMENT ON FUNCTION simpg.hamming(bigint, bigint) IS
    'Hamming distance between two 64-bit fingerprints: bit_count(a # b)';
