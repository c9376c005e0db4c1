-- planner functions
--
-- The layout planner is defined in simpg/planner.py's docstring; these functions
-- compute the same designs, figures and recommendation (the test suite compares them).

-- The sizing rule of simpg.layout.default_blocks (kept for callers of it; create_index
-- now asks simpg.default_levels, i.e. the planner).
CREATE FUNCTION simpg.default_blocks(k integer, rows bigint) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_want integer := greatest(ceil(log(2, greatest(rows, 2)::numeric))::integer - 4, 1);
    v_m integer := k + 1;
    v_narrowest integer;
BEGIN
    PERFORM simpg.table_count(k, ARRAY[k + 1]);  -- validates k
    LOOP
        SELECT sum(w) INTO v_narrowest FROM (
            SELECT w FROM unnest(simpg.block_widths(64, v_m)) AS w ORDER BY w LIMIT v_m - k
        ) AS narrowest;
        IF v_narrowest >= v_want OR v_m + 1 > 64 OR simpg.binomial(v_m + 1, v_m + 1 - k) > 64 THEN
            RETURN v_m;
        END IF;
        v_m := v_m + 1;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.default_blocks(integer, bigint) IS
    'Fewest blocks whose narrowest prefix has at least log2(rows) - 4 bits, at most 64 tables';

-- level_prefixes: prefix lengths of choosing m - k of m blocks splitting nbits.
-- block_widths makes nbits % m blocks one bit wider, so a choice holding j wide
-- blocks has (m - k) * (nbits / m) + j bits; C(wide, j) * C(m - wide, m - k - j) choices do.
CREATE FUNCTION simpg.level_prefixes(nbits integer, m integer, k integer,
                                     OUT prefix_bits integer, OUT tables bigint)
    RETURNS SETOF record
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (m - k) * (nbits / m) + j,
           simpg.binomial(nbits % m, j) * simpg.binomial(m - nbits % m, m - k - j)
    FROM pg_catalog.generate_series(greatest(0, (m - k) - (m - nbits % m)), least(nbits % m, m - k)) AS j
$$;

COMMENT ON FUNCTION simpg.level_prefixes(integer, integer, integer) IS
    'Prefix lengths, with how many choices have each, of choosing m - k of m blocks splitting nbits';

-- prefix_histogram: how many tables of layout (k, levels) have each prefix length.
-- Contract: no validation (simpg.table_count does that); agrees with
-- simpg.prefix_bits(k, levels, t) over every table of a valid layout.
CREATE FUNCTION simpg.prefix_histogram(k integer, levels integer[],
                                       OUT prefix_bits integer, OUT tables bigint)
    RETURNS SETOF record
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l1.prefix_bits, l1.tables
    FROM simpg.level_prefixes(64, levels[1], k) AS l1
    WHERE cardinality(levels) = 1
    UNION ALL
    SELECT l1.prefix_bits + l2.prefix_bits, sum(l1.tables * l2.tables)::bigint
    FROM simpg.level_prefixes(64, levels[1], k) AS l1,
         LATERAL simpg.level_prefixes(64 - l1.prefix_bits, levels[2], k) AS l2
    WHERE cardinality(levels) = 2
    GROUP BY l1.prefix_bits + l2.prefix_bits
$$;

COMMENT ON FUNCTION simpg.prefix_histogram(integer, integer[]) IS
    'How many tables of layout (k, levels) have each prefix length';

-- plan: the designs worth considering for radius k and a table of rows rows, fewest tables
-- first, with their figures and the recommended one (simpg.planner.plan in Python).
-- Contract: k in 0..16 and rows >= 0, else raises; exactly one row has
-- recommended = true. Weights (sum over tables of 2^(64 - prefix bits)) and costs are
-- compared as exact numerics, so the choice never hinges on rounding.
CREATE FUNCTION simpg.plan(k integer, rows bigint, everything boolean DEFAULT false)
    RETURNS TABLE (layout text, levels integer[], tables integer,
                   min_prefix_bits integer, max_prefix_bits integer,
                   expected_candidates double precision,
                   heap_bytes_per_row double precision, index_bytes_per_row double precision,
                   cost double precision, recommended boolean)
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- keep in step with simpg/planner.py
    c_per_probe constant integer := 4;       -- CANDIDATES_PER_PROBE
    c_heap constant float8 := 8.0;           -- HEAP_BYTES_PER_TABLE
    c_index constant float8 := 20.3;         -- INDEX_BYTES_PER_TABLE
    c_stop constant integer := 100;          -- STOP_CANDIDATES = 1/100
    c_two64 constant numeric := 2::numeric ^ 64;
    v_design record;
    v_best_weight numeric;
    v_best_cost numeric;
    v_cost numeric;
    v_best integer;
    v_front jsonb := '[]';
    v_n integer := 0;
BEGIN
    PERFORM simpg.check_radius(k);
    IF rows < 0 THEN
        RAISE EXCEPTION 'rows must be a non-negative integer, got %', rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_design IN
        WITH sizes AS (
            -- block counts whose level alone stays within 256 tables
            SELECT m, simpg.binomial(m, k) AS n
            FROM generate_series(k + 1, 64) AS m
            WHERE simpg.binomial(m, k) <= 256
        ), layouts AS (
            -- one level; with k = 0 one table of all 64 bits, whatever m
            SELECT ARRAY[s.m] AS lv FROM sizes AS s WHERE k > 0 OR s.m = 1
            UNION ALL
            -- two levels: level 2 splits the bits level 1's narrowest choice leaves
            SELECT ARRAY[s1.m, s2.m]
            FROM sizes AS s1, sizes AS s2
            WHERE k > 0 AND s1.n * s2.n <= 256
              AND s2.m <= 64 - (SELECT min(p.prefix_bits) FROM simpg.level_prefixes(64, s1.m, k) AS p)
        )
        SELECT l.lv, h.n_tables, h.weight, h.min_bits, h.max_bits
        FROM layouts AS l,
             LATERAL (SELECT sum(p.tables)::integer AS n_tables,
                             sum(p.tables * 2::numeric ^ (64 - p.prefix_bits)) AS weight,
                             min(p.prefix_bits) AS min_bits, max(p.prefix_bits) AS max_bits
                      FROM simpg.prefix_histogram(k, l.lv) AS p) AS h
        ORDER BY h.n_tables, h.weight, cardinality(l.lv), l.lv
    LOOP
        -- sorted by tables: a design survives only by expecting fewer candidates than
        -- every design with as few tables (ties went to the earlier, simpler one)
        CONTINUE WHEN v_best_weight IS NOT NULL AND v_design.weight >= v_best_weight;
        v_best_weight := v_design.weight;
        v_n := v_n + 1;
        v_cost := v_design.n_tables * c_per_probe * c_two64 + rows * v_design.weight;
        IF v_best_cost IS NULL OR v_cost < v_best_cost THEN
            v_best_cost := v_cost;
            v_best := v_n;
        END IF;
        v_front := v_front || jsonb_build_object(
            -- built-in: lv is simpg's own integer[]
            'levels', to_jsonb(v_design.lv), 'tables', v_design.n_tables,
            'min', v_design.min_bits, 'max', v_design.max_bits,
            'candidates', (rows * v_design.weight / c_two64)::float8,
            'cost', (v_cost / (c_per_probe * c_two64))::float8);
        EXIT WHEN NOT everything AND rows * v_design.weight * c_stop < c_two64;
    END LOOP;

    RETURN QUERY
    SELECT format('k%s:%s', k, array_to_string(lv, 'x')),
           lv,
           (d.value ->> 'tables')::integer,
           (d.value ->> 'min')::integer,
           (d.value ->> 'max')::integer,
           (d.value ->> 'candidates')::float8,
           c_heap * (d.value ->> 'tables')::integer,
           c_index * (d.value ->> 'tables')::integer,
           (d.value ->> 'cost')::float8,
           d.ordinality = v_best
    FROM jsonb_array_elements(v_front) WITH ORDINALITY AS d,
         LATERAL (SELECT array_agg(x::integer ORDER BY i) AS lv
                  FROM jsonb_array_elements_text(d.value -> 'levels') WITH ORDINALITY AS e(x, i)) AS a
    ORDER BY d.ordinality;
END
$$;

COMMENT ON FUNCTION simpg.plan(integer, bigint, boolean) IS
    'Candidate index layouts for radius k and a table of rows rows with their costs; one is recommended';

-- default_levels: the layout create_index uses when blocks are not given: the planner's
-- recommendation (simpg.planner.recommend in Python).
CREATE FUNCTION simpg.default_levels(k integer, rows bigint) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT p.levels FROM simpg.plan(k, rows) AS p WHERE p.recommended);

COMMENT ON FUNCTION simpg.default_levels(integer, bigint) IS
    'Layout (blocks per level) that create_index picks for k and a table of rows rows';
