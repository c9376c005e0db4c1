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

-- check_max_sketch_distance: the limit of sketch bits that confirms a pair, when it is one.
-- Contract: returns max_sketch_distance when it is an integer from 0 to 256 (the bits of
-- a sketch); else raises naming it (invalid_parameter_value), the message of Python's
-- simpg.fingerprint.minhash.checked_max_sketch_distance. The one check in SQL.
CREATE FUNCTION simpg.check_max_sketch_distance(max_sketch_distance integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF max_sketch_distance IS NULL OR max_sketch_distance < 0 OR max_sketch_distance > 256 THEN
        RAISE EXCEPTION 'max_sketch_distance must be an integer from 0 to 256, got %',
            coalesce(max_sketch_distance::text, 'null') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN max_sketch_distance;
END
$$;

COMMENT ON FUNCTION simpg.check_max_sketch_distance(integer) IS
    'Internal: max_sketch_distance if it is from 0 to 256, else an error naming it';
