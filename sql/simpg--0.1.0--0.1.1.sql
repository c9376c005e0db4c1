-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION simpg UPDATE TO '0.1.1'" to load this file. \quit

-- simpg 0.1.0 -> 0.1.1 (see CHANGELOG.md). Each function below is replaced by its
-- 0.1.1 text from sql/functions/, unchanged, so an updated install equals a fresh one
-- (tests/integration/test_install.py compares them, function bodies included).

-- create_index builds the prefix B-trees with fillfactor 100.
CREATE OR REPLACE FUNCTION simpg.create_index(rel regclass, col name, k integer DEFAULT 3,
                                   blocks integer DEFAULT NULL, inner_blocks integer DEFAULT NULL,
                                   fingerprint_config text DEFAULT NULL)
    RETURNS simpg.indexes
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_type regtype;
    v_rows bigint;
    v_levels integer[];
    v_tables integer;
    v_relname text;
    v_columns name[] := '{}';
    v_indexes name[] := '{}';
    v_adds text[] := '{}';
BEGIN
    IF rel IS NULL OR col IS NULL OR k IS NULL THEN
        RAISE EXCEPTION 'table, column and k must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT a.atttypid::regtype INTO v_type FROM pg_attribute AS a
    WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % of table % does not exist', quote_ident(col), rel
            USING ERRCODE = 'undefined_column';
    END IF;
    IF v_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column %.% is %, expected bigint', rel, quote_ident(col), v_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    -- refuse before reading or rewriting anything: the caller must own the table, and
    -- the column must not be indexed already
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF EXISTS (SELECT FROM simpg.indexes AS i WHERE i.indexed_table = rel AND i.fingerprint_column = col) THEN
        RAISE EXCEPTION 'column %.% already has a simpg index', rel, quote_ident(col)
            USING ERRCODE = 'duplicate_object', HINT = 'drop it first with simpg.drop_index(table, column)';
    END IF;
    IF blocks IS NULL THEN
        IF inner_blocks IS NOT NULL THEN
            RAISE EXCEPTION 'inner_blocks needs blocks' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT c.reltuples::bigint INTO v_rows FROM pg_class AS c WHERE c.oid = rel;
        IF v_rows <= 0 THEN  -- never analyzed (-1) or empty: count, cheap for small tables
            EXECUTE format('SELECT count(*) FROM %s', rel) INTO v_rows;
        END IF;
        v_levels := simpg.default_levels(k, v_rows);
    ELSIF inner_blocks IS NULL THEN
        v_levels := ARRAY[blocks];
    ELSE
        v_levels := ARRAY[blocks, inner_blocks];
    END IF;
    v_tables := simpg.table_count(k, v_levels);

    SELECT c.relname INTO v_relname FROM pg_class AS c WHERE c.oid = rel;
    FOR t IN 0 .. v_tables - 1 LOOP
        v_columns := v_columns || simpg.object_name(col, format('_p%s', t));
        v_indexes := v_indexes || simpg.object_name(v_relname || '_' || col, format('_p%s_idx', t));
        v_adds := v_adds || format('ADD COLUMN %I bigint GENERATED ALWAYS AS (%s) STORED',
                                   v_columns[t + 1], simpg.prefix_expression(col, k, v_levels, t));
    END LOOP;

    EXECUTE format('ALTER TABLE %s %s', rel, array_to_string(v_adds, ', '));
    FOR t IN 0 .. v_tables - 1 LOOP
        -- fillfactor 100: a prefix B-tree gets random keys, so the 10% that the default
        -- keeps free for ascending inserts only makes the built index bigger
        EXECUTE format('CREATE INDEX %I ON %s (%I) WITH (fillfactor = 100)', v_indexes[t + 1], rel, v_columns[t + 1]);
    END LOOP;
    -- statistics for the new columns, so the planner sees how narrow a prefix range is
    EXECUTE format('ANALYZE %s (%s)', rel,
                   (SELECT string_agg(quote_ident(c), ', ') FROM unnest(v_columns) AS c));
    RETURN simpg.register_index(rel, col, k, v_levels, v_columns, v_indexes, fingerprint_config);
END
$$;

-- plan: B-tree bytes per row at fillfactor 100.
CREATE OR REPLACE FUNCTION simpg.plan(k integer, row_count bigint, everything boolean DEFAULT false)
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
    IF k < 0 OR k > 16 THEN
        RAISE EXCEPTION 'k must be an integer from 0 to 16, got %', k
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF row_count < 0 THEN
        RAISE EXCEPTION 'rows must be a non-negative integer, got %', row_count
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
        v_cost := v_design.n_tables * c_per_probe * c_two64 + row_count * v_design.weight;
        IF v_best_cost IS NULL OR v_cost < v_best_cost THEN
            v_best_cost := v_cost;
            v_best := v_n;
        END IF;
        v_front := v_front || jsonb_build_object(
            'levels', to_jsonb(v_design.lv), 'tables', v_design.n_tables,
            'min', v_design.min_bits, 'max', v_design.max_bits,
            'candidates', (row_count * v_design.weight / c_two64)::float8,
            'cost', (v_cost / (c_per_probe * c_two64))::float8);
        EXIT WHEN NOT everything AND row_count * v_design.weight * c_stop < c_two64;
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

-- layout_is: new; simpg.psycopg's lookups check the layout they were made for.
CREATE FUNCTION simpg.layout_is(rel regclass, col name, k integer, levels integer[])
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM FROM simpg.indexes AS i
    WHERE i.indexed_table = rel AND i.fingerprint_column = col
      AND i.k = layout_is.k AND i.levels = layout_is.levels;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the simpg index on %.% is no longer the k=% blocks=% layout this lookup was made for',
            rel, quote_ident(col), k, array_to_string(levels, 'x')
            USING ERRCODE = 'SPG01', HINT = 'read the layout again (SimIndex.refresh())';
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION simpg.layout_is(regclass, name, integer, integer[]) IS
    'True if rel.col''s simpg index has this k and levels, else an error (SQLSTATE SPG01) telling a client to read the layout again';

-- binomial: plain SQL, inlined into table_order (simpg.near's layout math, 1.5x faster).
CREATE OR REPLACE FUNCTION simpg.binomial(n integer, r integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN r < 0 OR r > n THEN 0
                ELSE (pg_catalog.factorial(n) / (pg_catalog.factorial(r) * pg_catalog.factorial(n - r)))::bigint
           END;

-- order_segments: new; table_segments and near_query share it.
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

-- table_segments: through order_segments.
CREATE OR REPLACE FUNCTION simpg.table_segments(k integer, levels integer[], t integer) RETURNS bigint[]
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

-- near_query: one table_order call per table.
CREATE OR REPLACE FUNCTION simpg.near_query(rel regclass, fp bigint, k integer, col name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_ranges text[] := '{}';
    v_order record;     -- table t's bit_order and prefix_bits: one table_order call a table
    v_permuted bigint;
    v_low_mask bigint;  -- the bits after table t's prefix
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_row := simpg.checked_layout(rel, k, col);
    FOR t IN 0 .. cardinality(v_row.prefix_columns) - 1 LOOP
        v_order := simpg.table_order(v_row.k, v_row.levels, t);
        v_permuted := simpg.apply_segments(fp, simpg.order_segments(v_order.bit_order));
        v_low_mask := ~(-1::bigint << (64 - v_order.prefix_bits));
        v_ranges := v_ranges || format('t.%I BETWEEN %s AND %s', v_row.prefix_columns[t + 1],
                                       v_permuted & ~v_low_mask, v_permuted | v_low_mask);
    END LOOP;
    RETURN format('SELECT t.* FROM %s AS t WHERE (%s) AND simpg.hamming(t.%I, %s) <= %s ORDER BY simpg.hamming(t.%I, %s)',
                  rel, array_to_string(v_ranges, ' OR '),
                  v_row.fingerprint_column, fp, k, v_row.fingerprint_column, fp);
END
$$;
