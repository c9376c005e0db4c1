-- duplicates: lookups confirmed by sketches, with band keys as a second candidate source
-- (docs/fingerprinting.md, "Online lookups"). The statement is lookup_statement's kinds
-- duplicates and banded, prepared once per session like simpg.near's.

-- The decision every path that a sketch confirms makes (docs/fingerprinting.md, "One
-- decision"): a pair is a near-duplicate when its fingerprints are within k bits or it
-- shares a band key, and its sketches differ in at most max_sketch_distance bits. The
-- numbers Python defines too (simpg.fingerprint.DEDUP_K, minhash.MAX_SKETCH_DISTANCE and
-- BANDS); tests/integration/test_duplicates.py and test_decision_paths.py check that both
-- sides agree.
CREATE FUNCTION simpg.dedup_k() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 4;

COMMENT ON FUNCTION simpg.dedup_k() IS
    'The fingerprint radius of the sketch-confirmed decision (simpg dedup''s default k, simpg_documents'' index radius)';

CREATE FUNCTION simpg.max_sketch_distance() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 36;

COMMENT ON FUNCTION simpg.max_sketch_distance() IS
    'The largest number of differing sketch bits that confirms a duplicate by default (estimated Jaccard >= 0.72)';

CREATE FUNCTION simpg.band_count() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 4;

COMMENT ON FUNCTION simpg.band_count() IS
    'The number of band keys a document has (simpg.fingerprint.sketch_and_bands)';

-- with_bands: whether a decision confirmed by sketch_column also takes the rows that share
-- a band key as candidates: bands as given, and by default (NULL) whenever a sketch
-- confirms, as simpg dedup decides. Without a sketch column, never.
CREATE FUNCTION simpg.with_bands(sketch_column name, bands boolean) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(bands, sketch_column IS NOT NULL);

COMMENT ON FUNCTION simpg.with_bands(name, boolean) IS
    'Whether a report or guard confirmed by sketch_column uses band keys: bands, by default (NULL) whenever a sketch confirms';

-- band_columns: the band key columns of a sketch column, <sketch_column>_b0 .. _b3, with
-- i the 1-based position of the key in a bands array.
-- A SQL-standard body, bound when created: no search_path to pin.
CREATE FUNCTION simpg.band_columns(sketch_column name)
    RETURNS TABLE (i integer, band_column name)
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT g.i, (sketch_column || '_b' || (g.i - 1))::name
    FROM generate_series(1, simpg.band_count()) AS g(i)
    ORDER BY g.i;
END;

COMMENT ON FUNCTION simpg.band_columns(name) IS
    'The band key columns of a sketch column (<sketch_column>_b0 ..), with their 1-based position in a bands array';

-- checked_sketch_columns: raises, naming the column, unless rel has the sketch column
-- (bit(256) or varbit) and, with banded, its band columns (bigint).
CREATE FUNCTION simpg.checked_sketch_columns(rel regclass, sketch_column name, banded boolean) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_type text;
    v_band record;
BEGIN
    SELECT format_type(a.atttypid, a.atttypmod) INTO v_type FROM pg_attribute AS a
    WHERE a.attrelid = rel AND a.attname = sketch_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % of table % does not exist (the sketches to confirm with)', quote_ident(sketch_column), rel
            USING ERRCODE = 'undefined_column';
    END IF;
    IF v_type NOT IN ('bit(256)', 'bit varying') THEN
        RAISE EXCEPTION 'column % of table % must be bit(256) (sketches), got %', quote_ident(sketch_column), rel, v_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF NOT banded THEN
        RETURN;
    END IF;
    IF octet_length(sketch_column) + 3 > 63 THEN  -- <sketch_column>_b0 would be cut to 63 bytes
        RAISE EXCEPTION 'sketch column name % is too long for band columns named %_b0 ..', quote_ident(sketch_column),
            sketch_column USING ERRCODE = 'name_too_long';
    END IF;
    FOR v_band IN
        SELECT b.band_column, format_type(a.atttypid, a.atttypmod) AS type
        FROM simpg.band_columns(sketch_column) AS b
        LEFT JOIN pg_attribute AS a
            ON a.attrelid = rel AND a.attname = b.band_column AND a.attnum > 0 AND NOT a.attisdropped
        WHERE a.atttypid IS DISTINCT FROM 'bigint'::regtype
        ORDER BY b.i LIMIT 1
    LOOP
        IF v_band.type IS NULL THEN
            RAISE EXCEPTION 'column % of table % does not exist (band keys, bigint)', quote_ident(v_band.band_column), rel
                USING ERRCODE = 'undefined_column',
                      HINT = 'add the band columns and their B-trees (docs/fingerprinting.md), or leave the band keys out';
        END IF;
        RAISE EXCEPTION 'column % of table % must be bigint (band keys), got %', quote_ident(v_band.band_column), rel,
            v_band.type USING ERRCODE = 'datatype_mismatch';
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.checked_sketch_columns(regclass, name, boolean) IS
    'Raises unless rel has the sketch column (bit(256)) and, with banded, its band key columns (bigint)';

-- duplicates: near-duplicates of one document, as SimHashColumn.duplicates finds them:
-- the rows within k bits of fp, or with band_keys (simpg.fingerprint.sketch_and_bands) sharing
-- a band key (band i of the row equal to band_keys[i]), whose sketch differs from sketch in
-- at most max_sketch_distance bits. Nearest sketch first, then nearest fingerprint. Rows
-- without a fingerprint or a sketch are not returned; NULL band keys match nothing.
--   SELECT * FROM simpg.duplicates(NULL::articles, 1234, 4, '<sketch>'::bit(256), '{1,2,3,4}')
CREATE FUNCTION simpg.duplicates(tbl anyelement, fp bigint, k integer, sketch bit(256), band_keys bigint[] DEFAULT NULL,
                                 sketch_column name DEFAULT 'sketch',
                                 max_sketch_distance integer DEFAULT simpg.max_sketch_distance(),
                                 col name DEFAULT NULL)
    RETURNS SETOF anyelement
    LANGUAGE plpgsql VOLATILE  -- it may PREPARE
    SET search_path = pg_catalog, pg_temp
    -- as simpg.near: tiny tables would otherwise be scanned sequentially
    SET enable_seqscan = off
    SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_kind text := CASE WHEN band_keys IS NULL THEN 'duplicates' ELSE 'banded' END;
    v_lookup record;
    v_arguments text;
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF sketch IS NULL THEN
        RAISE EXCEPTION 'sketch must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF length(sketch) <> 256 THEN  -- the cast to bit(256) below would pad or cut it
        RAISE EXCEPTION 'sketch must have 256 bits, got %', length(sketch)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM simpg.check_max_sketch_distance(max_sketch_distance);
    IF sketch_column IS NULL THEN
        RAISE EXCEPTION 'sketch_column must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF band_keys IS NOT NULL THEN
        IF array_ndims(band_keys) IS DISTINCT FROM 1 OR cardinality(band_keys) <> simpg.band_count() THEN
            RAISE EXCEPTION 'expected % band keys (one per band column), got %', simpg.band_count(), band_keys
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF array_position(band_keys, NULL) IS NOT NULL THEN
            RAISE EXCEPTION 'band keys must not be null, got %', band_keys
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = 'a document without band keys is looked up with band_keys => NULL';
        END IF;
        band_keys := band_keys[:];  -- subscripts from 1, whatever the array's own lower bound
    END IF;
    v_lookup := simpg.session_lookup(v_kind, tbl, col, sketch_column);
    -- a k the prepared statement does not answer: prepare_lookup checks it against the
    -- index (which may be wider now) and raises or prepares again
    IF v_lookup.radius IS NULL OR simpg.radius_error(k, v_lookup.radius, 'the prepared lookup') IS NOT NULL THEN
        v_lookup.statement_name := (simpg.prepare_lookup(v_kind, v_lookup.rel, k, col, sketch_column)).statement_name;
    END IF;
    v_arguments := format('(%L::bigint, %s::integer, %L::bit(256), %L::bigint[], %s::integer)',
                          fp, k, sketch, band_keys, max_sketch_distance);
    BEGIN
        RETURN QUERY EXECUTE format('EXECUTE %I', v_lookup.statement_name) || v_arguments;
    -- the table changed since the statement was prepared (as in simpg.near); a sketch or
    -- band column of another type now: prepare_lookup names it
    EXCEPTION WHEN SQLSTATE 'SPG01' OR undefined_column OR feature_not_supported OR undefined_function THEN
        v_lookup.statement_name := (simpg.prepare_lookup(v_kind, v_lookup.rel, k, col, sketch_column)).statement_name;
        RETURN QUERY EXECUTE format('EXECUTE %I', v_lookup.statement_name) || v_arguments;
    END;
END
$$;

COMMENT ON FUNCTION simpg.duplicates(anyelement, bigint, integer, bit, bigint[], name, integer, name) IS
    'Rows within Hamming distance k of fp or sharing a band key, confirmed by their sketch within max_sketch_distance bits; nearest sketch first';
