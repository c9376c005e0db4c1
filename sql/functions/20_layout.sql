-- layout functions
--
-- The layout math is defined once, in simpg/layout.py's docstring; these functions
-- implement it bit for bit (the test suite compares them on every supported layout).
-- A layout is (k, levels): levels[1] blocks at level 1, optionally levels[2] at level 2.

-- binomial is plain SQL so that it is inlined into its callers: table_order calls it in
-- its loops, where as a PL/pgSQL function it took about a quarter of the time. Exact for
-- every n <= 64 (factorial is numeric). Not STRICT: a strict SQL function whose body has
-- CASE is not inlined; NULL in gives NULL out all the same.
CREATE FUNCTION simpg.binomial(n integer, r integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN r < 0 OR r > n THEN 0
                ELSE (pg_catalog.factorial(n) / (pg_catalog.factorial(r) * pg_catalog.factorial(n - r)))::bigint
           END;

COMMENT ON FUNCTION simpg.binomial(integer, integer) IS 'Binomial coefficient C(n, r)';

CREATE FUNCTION simpg.block_widths(nbits integer, m integer) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ARRAY(
        SELECT nbits / m + CASE WHEN i < nbits % m THEN 1 ELSE 0 END
        FROM pg_catalog.generate_series(0, m - 1) AS i
        ORDER BY i
    );

COMMENT ON FUNCTION simpg.block_widths(integer, integer) IS
    'Widths of m contiguous blocks splitting nbits as evenly as possible, wider blocks first';

-- narrowest_prefix: bits in the m - k narrowest of m blocks splitting nbits; what the
-- next level of a layout has left is nbits minus this (block_widths puts the wide ones first).
CREATE FUNCTION simpg.narrowest_prefix(nbits integer, m integer, k integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (m - k) * (nbits / m) + greatest(nbits % m - k, 0);

COMMENT ON FUNCTION simpg.narrowest_prefix(integer, integer, integer) IS
    'Bits in the m - k narrowest of m blocks splitting nbits';

-- radius_error: why k is not a radius from 0 to radius, or NULL when it is one.
-- Contract: never raises; the one decision on a radius in SQL (simpg.check_radius raises
-- it; simpg.layout.check_radius in Python decides the same with the same messages).
-- Without what, radius is the largest of any layout; with it, the radius that what (an
-- index, range shards) answers exactly. Plain SQL of immutable parts only (|| on text,
-- not the stable format()), so that the planner inlines it: near() asks it every call.
CREATE FUNCTION simpg.radius_error(k integer, radius integer DEFAULT 16, what text DEFAULT NULL) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN what IS NULL AND (k IS NULL OR k < 0 OR k > radius)
            THEN 'k must be an integer from 0 to ' || radius::text || ', got ' || coalesce(k::text, 'null')
        WHEN k IS NULL OR k < 0
            THEN 'k must be a non-negative integer, got ' || coalesce(k::text, 'null')
        WHEN k > radius
            THEN 'k=' || k::text || ' is above the radius k=' || radius::text || ' that ' || what || ' guarantees'
    END;

COMMENT ON FUNCTION simpg.radius_error(integer, integer, text) IS
    'Internal: why k is not a radius from 0 to radius (of what), or NULL when it is one';

-- check_radius: k, when simpg.radius_error finds nothing wrong with it.
-- Contract: raises radius_error's message (invalid_parameter_value), with hint for a k
-- above the radius when one is given.
CREATE FUNCTION simpg.check_radius(k integer, radius integer DEFAULT 16, what text DEFAULT NULL,
                                   hint text DEFAULT NULL) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_error text := simpg.radius_error(k, radius, what);
BEGIN
    IF v_error IS NULL THEN
        RETURN k;
    END IF;
    IF hint IS NOT NULL AND k > radius THEN
        RAISE EXCEPTION '%', v_error USING ERRCODE = 'invalid_parameter_value', HINT = hint;
    END IF;
    RAISE EXCEPTION '%', v_error USING ERRCODE = 'invalid_parameter_value';
END
$$;

COMMENT ON FUNCTION simpg.check_radius(integer, integer, text, text) IS
    'Internal: k if it is a radius from 0 to radius (of what), else an error naming it';

-- layout_error: why (k, levels) is not a valid layout, or NULL when it is one.
-- Contract: never raises; its messages match simpg.layout.Layout's. The catalog view
-- asks it of every generated column it reads, where an error would hide the rest.
CREATE FUNCTION simpg.layout_error(k integer, levels integer[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_remaining integer := 64;
    v_tables numeric := 1;  -- a product of two binomials can pass bigint (k=16, blocks=40x32)
    v_m integer;
    v_error text := simpg.radius_error(k);
BEGIN
    IF v_error IS NOT NULL THEN
        RETURN v_error;
    END IF;
    IF levels IS NULL OR cardinality(levels) NOT IN (1, 2) OR array_position(levels, NULL) IS NOT NULL THEN
        RETURN format('levels must be one or two block counts, got %s', coalesce(levels::text, 'null'));
    END IF;
    FOREACH v_m IN ARRAY levels LOOP
        IF v_m <= k THEN
            RETURN format('blocks must be greater than k (blocks=%s, k=%s)', v_m, k);
        END IF;
        IF v_m > v_remaining THEN
            RETURN format('blocks=%s is more than the %s bits left to split', v_m, v_remaining);
        END IF;
        v_remaining := v_remaining - simpg.narrowest_prefix(v_remaining, v_m, k);
        v_tables := v_tables * simpg.binomial(v_m, v_m - k);
    END LOOP;
    IF v_tables > 256 THEN
        RETURN format('layout k=%s blocks=%s needs %s tables, more than 256',
                      k, array_to_string(levels, 'x'), v_tables);
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.layout_error(integer, integer[]) IS
    'Why layout (k, levels) is invalid, or NULL when it is valid';

-- table_count validates a layout and returns its number of tables.
-- Contract: raises layout_error's message for an invalid layout.
CREATE FUNCTION simpg.table_count(k integer, levels integer[]) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_error text := simpg.layout_error(k, levels);
    v_tables bigint := 1;
    v_m integer;
BEGIN
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION '%', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOREACH v_m IN ARRAY levels LOOP
        v_tables := v_tables * simpg.binomial(v_m, v_m - k);
    END LOOP;
    RETURN v_tables;
END
$$;

COMMENT ON FUNCTION simpg.table_count(integer, integer[]) IS
    'Number of permuted tables of layout (k, levels); raises if the layout is invalid';

-- table_order: for table t of layout (k, levels), the source bit index (0 = most
-- significant) of every output position, and the prefix length in bits.
-- Contract: t in [0, table_count); tables numbered in mixed radix, level 1 most
-- significant, choices of m - k blocks in lexicographic order. Plain loops and
-- arithmetic only (no SQL inside): near_query calls this once per table per query.
CREATE FUNCTION simpg.table_order(k integer, levels integer[], t integer,
                                  OUT bit_order integer[], OUT prefix_bits integer)
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tables integer := simpg.table_count(k, levels);
    v_choices integer[] := '{}';
    v_rest integer := t;
    v_remaining integer[] := '{}';
    v_rest_bits integer[];
    v_chosen boolean[];
    v_n integer;
    v_m integer;
    v_r integer;
    v_idx bigint;
    v_c integer;
    v_count bigint;
    v_start integer;
    v_width integer;
BEGIN
    IF t < 0 OR t >= v_tables THEN
        RAISE EXCEPTION 'table must be from 0 to %, got %', v_tables - 1, t
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR lvl IN REVERSE cardinality(levels) .. 1 LOOP
        v_m := levels[lvl];
        v_count := simpg.binomial(v_m, v_m - k);
        v_choices := (v_rest % v_count)::integer || v_choices;
        v_rest := v_rest / v_count;
    END LOOP;
    FOR i IN 0 .. 63 LOOP
        v_remaining := v_remaining || i;
    END LOOP;

    bit_order := '{}';
    prefix_bits := 0;
    FOR lvl IN 1 .. cardinality(levels) LOOP
        v_m := levels[lvl];
        v_r := v_m - k;
        v_n := cardinality(v_remaining);
        -- unrank combination number v_choices[lvl] of r blocks out of m (lexicographic)
        v_chosen := array_fill(false, ARRAY[v_m]);
        v_idx := v_choices[lvl];
        v_c := 0;
        FOR j IN 0 .. v_r - 1 LOOP
            LOOP
                v_count := simpg.binomial(v_m - v_c - 1, v_r - j - 1);
                EXIT WHEN v_idx < v_count;
                v_idx := v_idx - v_count;
                v_c := v_c + 1;
            END LOOP;
            v_chosen[v_c + 1] := true;
            v_c := v_c + 1;
        END LOOP;
        -- blocks as in simpg.block_widths: n / m bits each, the first n % m one bit wider
        v_rest_bits := '{}';
        v_start := 1;
        FOR i IN 1 .. v_m LOOP
            v_width := v_n / v_m + CASE WHEN i <= v_n % v_m THEN 1 ELSE 0 END;
            IF v_chosen[i] THEN
                bit_order := bit_order || v_remaining[v_start : v_start + v_width - 1];
                prefix_bits := prefix_bits + v_width;
            ELSE
                v_rest_bits := v_rest_bits || v_remaining[v_start : v_start + v_width - 1];
            END IF;
            v_start := v_start + v_width;
        END LOOP;
        v_remaining := v_rest_bits;
    END LOOP;
    bit_order := bit_order || v_remaining;
END
$$;

COMMENT ON FUNCTION simpg.table_order(integer, integer[], integer) IS
    'Source bit (0 = most significant) of each position of table t''s permuted value, and its prefix length';

CREATE FUNCTION simpg.prefix_bits(k integer, levels integer[], t integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (simpg.table_order(k, levels, t)).prefix_bits;

COMMENT ON FUNCTION simpg.prefix_bits(integer, integer[], integer) IS
    'Number of leading bits of table t''s permuted value that near-duplicates share';

-- order_segments: a permutation given as table_order's bit_order, as runs of contiguous
-- bits flattened as (src_shift, mask, dst_shift) triples:
-- permuted |= ((fp >> src_shift) & mask) << dst_shift.
CREATE FUNCTION simpg.order_segments(bit_order integer[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_result bigint[] := '{}';
    v_out integer := 0;   -- output position where the current run starts
    v_src integer;        -- source bit index where the current run starts
    v_width integer := 0;
BEGIN
    FOR pos IN 0 .. 64 LOOP
        IF pos < 64 AND v_width > 0 AND bit_order[pos + 1] = v_src + v_width THEN
            v_width := v_width + 1;
            CONTINUE;
        END IF;
        IF v_width > 0 THEN
            v_result := v_result || ARRAY[
                64 - v_src - v_width,
                -- a 64-bit run is the identity; its mask is all ones
                CASE WHEN v_width = 64 THEN -1 ELSE ~(-1::bigint << v_width) END,
                64 - v_out - v_width
            ]::bigint[];
        END IF;
        EXIT WHEN pos = 64;
        v_out := pos;
        v_src := bit_order[pos + 1];
        v_width := 1;
    END LOOP;
    RETURN v_result;
END
$$;

COMMENT ON FUNCTION simpg.order_segments(integer[]) IS
    'A bit order (table_order''s bit_order) as (src_shift, mask, dst_shift) triples of contiguous bit runs';

-- table_segments: table t's permutation as runs of contiguous bits (order_segments).
CREATE FUNCTION simpg.table_segments(k integer, levels integer[], t integer) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_result bigint[] := simpg.order_segments((simpg.table_order(k, levels, t)).bit_order);
BEGIN
    IF cardinality(v_result) > 36 THEN
        RAISE EXCEPTION 'layout k=% blocks=% moves % segments, more than 12',
            k, array_to_string(levels, 'x'), cardinality(v_result) / 3
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_result;
END
$$;

COMMENT ON FUNCTION simpg.table_segments(integer, integer[], integer) IS
    'Table t''s permutation as (src_shift, mask, dst_shift) triples of contiguous bit runs';

-- apply_segments moves up to 12 runs. With a constant segs (simpg.permute folds
-- table_segments at plan time) the CASEs fold away and what remains per row is a few
-- shifts and masks: that keeps generated columns cheap on bulk loads.
CREATE FUNCTION simpg.apply_segments(fp bigint, segs bigint[]) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((fp >> segs[1]::integer) & segs[2]) << segs[3]::integer
        | CASE WHEN cardinality(segs) < 6 THEN 0::bigint ELSE ((fp >> segs[4]::integer) & segs[5]) << segs[6]::integer
        | CASE WHEN cardinality(segs) < 9 THEN 0::bigint ELSE ((fp >> segs[7]::integer) & segs[8]) << segs[9]::integer
        | CASE WHEN cardinality(segs) < 12 THEN 0::bigint ELSE ((fp >> segs[10]::integer) & segs[11]) << segs[12]::integer
        | CASE WHEN cardinality(segs) < 15 THEN 0::bigint ELSE ((fp >> segs[13]::integer) & segs[14]) << segs[15]::integer
        | CASE WHEN cardinality(segs) < 18 THEN 0::bigint ELSE ((fp >> segs[16]::integer) & segs[17]) << segs[18]::integer
        | CASE WHEN cardinality(segs) < 21 THEN 0::bigint ELSE ((fp >> segs[19]::integer) & segs[20]) << segs[21]::integer
        | CASE WHEN cardinality(segs) < 24 THEN 0::bigint ELSE ((fp >> segs[22]::integer) & segs[23]) << segs[24]::integer
        | CASE WHEN cardinality(segs) < 27 THEN 0::bigint ELSE ((fp >> segs[25]::integer) & segs[26]) << segs[27]::integer
        | CASE WHEN cardinality(segs) < 30 THEN 0::bigint ELSE ((fp >> segs[28]::integer) & segs[29]) << segs[30]::integer
        | CASE WHEN cardinality(segs) < 33 THEN 0::bigint ELSE ((fp >> segs[31]::integer) & segs[32]) << segs[33]::integer
        | CASE WHEN cardinality(segs) < 36 THEN 0::bigint ELSE ((fp >> segs[34]::integer) & segs[35]) << segs[36]::integer
          END END END END END END END END END END END;

COMMENT ON FUNCTION simpg.apply_segments(bigint, bigint[]) IS
    'Apply a permutation given as table_segments triples to a fingerprint';

-- Not STRICT on purpose: a strict SQL function whose body has CASE is not inlined.
-- NULL in gives NULL out all the same, since every operator on fp is strict.
CREATE FUNCTION simpg.permute(fp bigint, k integer, levels integer[], t integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN simpg.apply_segments(fp, simpg.table_segments(k, levels, t));

COMMENT ON FUNCTION simpg.permute(bigint, integer, integer[], integer) IS
    'Table t''s permuted fingerprint: its prefix blocks moved to the top, bit order kept inside blocks';

-- The prefix always holds the sign bit, so [lo, hi] is one contiguous signed range.
CREATE FUNCTION simpg.prefix_lo(fp bigint, k integer, levels integer[], t integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN simpg.permute(fp, k, levels, t) & (-1::bigint << (64 - simpg.prefix_bits(k, levels, t)));

CREATE FUNCTION simpg.prefix_hi(fp bigint, k integer, levels integer[], t integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN simpg.permute(fp, k, levels, t) | ~(-1::bigint << (64 - simpg.prefix_bits(k, levels, t)));

COMMENT ON FUNCTION simpg.prefix_lo(bigint, integer, integer[], integer) IS
    'Lowest permuted value of table t sharing the prefix of fingerprint fp';
COMMENT ON FUNCTION simpg.prefix_hi(bigint, integer, integer[], integer) IS
    'Highest permuted value of table t sharing the prefix of fingerprint fp';

CREATE FUNCTION simpg.prefix_range(fp bigint, k integer, levels integer[], t integer,
                                   OUT lo bigint, OUT hi bigint)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (simpg.prefix_lo(fp, k, levels, t), simpg.prefix_hi(fp, k, levels, t));

COMMENT ON FUNCTION simpg.prefix_range(bigint, integer, integer[], integer) IS
    'Signed range [lo, hi] of table t''s permuted values that share fingerprint fp''s prefix';

-- prefix_ranges: prefix_range of every fingerprint of fps for every table t of the
-- layout (n: the 1-based position in fps; NULL elements give no rows), each table's
-- permutation worked out once: prefix_range works it out at every call unless its
-- arguments are constants. PL/pgSQL so that its
-- query is planned once per session, not at every call as a SQL function's is.
CREATE FUNCTION simpg.prefix_ranges(fps bigint[], k integer, levels integer[])
    RETURNS TABLE (n integer, t integer, lo bigint, hi bigint)
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    WITH s AS MATERIALIZED (
        SELECT u.t, simpg.table_segments(k, levels, u.t) AS segs,
               -1::bigint << (64 - simpg.prefix_bits(k, levels, u.t)) AS mask
        FROM generate_series(0, simpg.table_count(k, levels) - 1) AS u(t))
    SELECT q.n::integer, s.t, simpg.apply_segments(q.fp, s.segs) & s.mask, simpg.apply_segments(q.fp, s.segs) | ~s.mask
    FROM unnest(fps) WITH ORDINALITY AS q(fp, n) CROSS JOIN s
    WHERE q.fp IS NOT NULL
    ORDER BY q.n, s.t;
END
$$;

COMMENT ON FUNCTION simpg.prefix_ranges(bigint[], integer, integer[]) IS
    'prefix_range of every fingerprint of fps for every table of the layout, with its position n in fps';
