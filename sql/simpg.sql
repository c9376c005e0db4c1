-- simpg: exact near-duplicate search with 64-bit SimHash, in pure SQL and PL/pgSQL.
-- Installed by CREATE EXTENSION simpg, or run as a plain script by `simpg install`
-- on servers whose extension directory cannot be written (managed PostgreSQL).
-- Every object is written as simpg.<name> (pgmq's scheme), so both paths give the same objects.

\echo Use "CREATE EXTENSION simpg" to load this file. \quit

-- hamming functions

-- SQL-standard bodies (RETURN ...) are parsed at creation time, so they cannot be
-- redirected through search_path, and the planner still inlines them.
CREATE FUNCTION simpg.hamming(a bigint, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.bit_count((a OPERATOR(pg_catalog.#) b)::bit(64))::integer;

COMMENT ON FUNCTION simpg.hamming(bigint, bigint) IS
    'Hamming distance between two 64-bit fingerprints: bit_count(a # b)';

-- layout functions
--
-- The layout math is defined once, in simpg/layout.py's docstring; these functions
-- implement it bit for bit (the test suite compares them on every supported layout).
-- A layout is (k, levels): levels[1] blocks at level 1, optionally levels[2] at level 2.

CREATE FUNCTION simpg.binomial(n integer, r integer) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_result bigint := 1;
BEGIN
    IF r < 0 OR r > n THEN
        RETURN 0;
    END IF;
    FOR i IN 1 .. least(r, n - r) LOOP
        v_result := v_result * (n - i + 1) / i;
    END LOOP;
    RETURN v_result;
END
$$;

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

-- table_count validates a layout and returns its number of tables.
-- Contract: raises for k outside 0..16, a level with blocks <= k or more blocks than bits,
-- or more than 256 tables; messages match simpg.layout.Layout's.
CREATE FUNCTION simpg.table_count(k integer, levels integer[]) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_remaining integer := 64;
    v_tables bigint := 1;
    v_m integer;
BEGIN
    IF k < 0 OR k > 16 THEN
        RAISE EXCEPTION 'k must be an integer from 0 to 16, got %', k
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(levels) NOT IN (1, 2) OR array_position(levels, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'levels must be one or two block counts, got %', levels
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOREACH v_m IN ARRAY levels LOOP
        IF v_m <= k THEN
            RAISE EXCEPTION 'blocks must be greater than k (blocks=%, k=%)', v_m, k
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF v_m > v_remaining THEN
            RAISE EXCEPTION 'blocks=% is more than the % bits left to split', v_m, v_remaining
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        -- the narrowest choice of m - k blocks decides how many bits the next level gets
        v_remaining := v_remaining - (
            SELECT sum(w) FROM (
                SELECT w FROM unnest(simpg.block_widths(v_remaining, v_m)) AS w
                ORDER BY w LIMIT v_m - k
            ) AS narrowest
        );
        v_tables := v_tables * simpg.binomial(v_m, v_m - k);
    END LOOP;
    IF v_tables > 256 THEN
        RAISE EXCEPTION 'layout k=% blocks=% needs % tables, more than 256',
            k, array_to_string(levels, 'x'), v_tables
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_tables;
END
$$;

COMMENT ON FUNCTION simpg.table_count(integer, integer[]) IS
    'Number of permuted tables of layout (k, levels); raises if the layout is invalid';

-- table_order: for table t of layout (k, levels), the source bit index (0 = most
-- significant) of every output position, and the prefix length in bits.
-- Contract: t in [0, table_count); tables numbered in mixed radix, level 1 most
-- significant, choices of m - k blocks in lexicographic order.
CREATE FUNCTION simpg.table_order(k integer, levels integer[], t integer,
                                  OUT bit_order integer[], OUT prefix_bits integer)
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tables integer := simpg.table_count(k, levels);
    v_choices integer[] := '{}';
    v_rest integer := t;
    v_remaining integer[] := ARRAY(SELECT generate_series(0, 63));
    v_rest_bits integer[];
    v_widths integer[];
    v_starts integer[];
    v_chosen boolean[];
    v_m integer;
    v_r integer;
    v_idx integer;
    v_c integer;
    v_count bigint;
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

    bit_order := '{}';
    prefix_bits := 0;
    FOR lvl IN 1 .. cardinality(levels) LOOP
        v_m := levels[lvl];
        v_r := v_m - k;
        v_widths := simpg.block_widths(cardinality(v_remaining), v_m);
        v_starts := ARRAY[1];
        FOR i IN 1 .. v_m LOOP
            v_starts := v_starts || (v_starts[i] + v_widths[i]);
        END LOOP;
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
        v_rest_bits := '{}';
        FOR i IN 1 .. v_m LOOP
            IF v_chosen[i] THEN
                bit_order := bit_order || v_remaining[v_starts[i] : v_starts[i + 1] - 1];
                prefix_bits := prefix_bits + v_widths[i];
            ELSE
                v_rest_bits := v_rest_bits || v_remaining[v_starts[i] : v_starts[i + 1] - 1];
            END IF;
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

-- table_segments: table t's permutation as runs of contiguous bits, flattened as
-- (src_shift, mask, dst_shift) triples: permuted |= ((fp >> src_shift) & mask) << dst_shift.
CREATE FUNCTION simpg.table_segments(k integer, levels integer[], t integer) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_order integer[] := (simpg.table_order(k, levels, t)).bit_order;
    v_result bigint[] := '{}';
    v_out integer := 0;   -- output position where the current run starts
    v_src integer;        -- source bit index where the current run starts
    v_width integer := 0;
BEGIN
    FOR pos IN 0 .. 64 LOOP
        IF pos < 64 AND v_width > 0 AND v_order[pos + 1] = v_src + v_width THEN
            v_width := v_width + 1;
            CONTINUE;
        END IF;
        IF v_width > 0 THEN
            v_result := v_result || ARRAY[
                64 - v_src - v_width,
                -- a 64-bit run is the identity; its mask is all ones
                CASE WHEN v_width = 64 THEN -1 ELSE (1::numeric * 2 ^ v_width - 1)::bigint END,
                64 - v_out - v_width
            ]::bigint[];
        END IF;
        EXIT WHEN pos = 64;
        v_out := pos;
        v_src := v_order[pos + 1];
        v_width := 1;
    END LOOP;
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

-- The sizing rule when blocks are not given; mirrors simpg.layout.default_blocks.
CREATE FUNCTION simpg.default_blocks(k integer, row_count bigint) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_want integer := greatest(ceil(log(2, greatest(row_count, 2)::numeric))::integer - 4, 1);
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

-- catalog

CREATE TABLE simpg.indexes (
    indexed_table regclass NOT NULL,
    fingerprint_column name NOT NULL,
    k integer NOT NULL CHECK (k BETWEEN 0 AND 16),
    levels integer[] NOT NULL,
    prefix_columns name[] NOT NULL,
    index_names name[] NOT NULL,
    fingerprint_config text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (indexed_table, fingerprint_column),
    CHECK (cardinality(prefix_columns) = cardinality(index_names))
);

COMMENT ON TABLE simpg.indexes IS
    'One row per fingerprint column indexed by simpg: its layout and the objects simpg created';

-- pg_dump keeps the rows of a config table. Only an extension script may mark one,
-- so the plain-script install (no pg_extension row) skips this.
SELECT pg_catalog.pg_extension_config_dump('simpg.indexes', '')
WHERE EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'simpg');

CREATE FUNCTION simpg.owns(rel regclass) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE')
            FROM pg_catalog.pg_class AS c WHERE c.oid = rel);

COMMENT ON FUNCTION simpg.owns(regclass) IS 'Whether the current role owns (or is a member of the owner of) rel';

-- Everyone may read the catalog; only a table's owner may change its rows.
ALTER TABLE simpg.indexes ENABLE ROW LEVEL SECURITY;
CREATE POLICY indexes_read ON simpg.indexes FOR SELECT USING (true);
CREATE POLICY indexes_insert ON simpg.indexes FOR INSERT WITH CHECK (simpg.owns(indexed_table));
CREATE POLICY indexes_update ON simpg.indexes FOR UPDATE
    USING (simpg.owns(indexed_table)) WITH CHECK (simpg.owns(indexed_table));
CREATE POLICY indexes_delete ON simpg.indexes FOR DELETE USING (simpg.owns(indexed_table));
GRANT USAGE ON SCHEMA simpg TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON simpg.indexes TO PUBLIC;

-- index functions

-- object_name: an identifier of at most 63 bytes; a longer one is cut and given a
-- hash suffix, so two long names never collide after PostgreSQL's truncation.
CREATE FUNCTION simpg.object_name(base text, suffix text) RETURNS name
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN octet_length(base || suffix) <= 63 THEN (base || suffix)::name
        ELSE (left(base, 63 - octet_length(suffix) - 9 - 3) || '_'
              || left(md5(base), 8) || suffix)::name
    END;

COMMENT ON FUNCTION simpg.object_name(text, text) IS
    'base || suffix, shortened with a hash to fit PostgreSQL''s 63-byte identifiers';

-- index_layout: the catalog row for (rel, col).
-- Contract: raises with a hint when the column has no simpg index.
CREATE FUNCTION simpg.index_layout(rel regclass, col name DEFAULT NULL) RETURNS simpg.indexes
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_count integer;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF col IS NULL THEN
        SELECT count(*) INTO v_count FROM simpg.indexes AS i WHERE i.indexed_table = rel;
        IF v_count > 1 THEN
            RAISE EXCEPTION 'table % has % simpg indexes; name the fingerprint column', rel, v_count
                USING ERRCODE = 'ambiguous_column';
        END IF;
        SELECT * INTO v_row FROM simpg.indexes AS i WHERE i.indexed_table = rel;
    ELSE
        SELECT * INTO v_row FROM simpg.indexes AS i
        WHERE i.indexed_table = rel AND i.fingerprint_column = col;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no simpg index on %', CASE WHEN col IS NULL THEN rel::text ELSE rel::text || '.' || quote_ident(col) END
            USING ERRCODE = 'undefined_object',
                  HINT = 'create one with simpg.create_index(table, column, k)';
    END IF;
    RETURN v_row;
END
$$;

COMMENT ON FUNCTION simpg.index_layout(regclass, name) IS
    'The simpg.indexes row of a fingerprint column (col may be omitted when the table has one)';

-- prefix_expression: the generated-column expression of table t, as stored by create_index.
CREATE FUNCTION simpg.prefix_expression(col name, k integer, levels integer[], t integer) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN format('simpg.permute(%I, %s, %L::integer[], %s)', col, k, levels::text, t);

COMMENT ON FUNCTION simpg.prefix_expression(name, integer, integer[], integer) IS
    'SQL expression of table t''s permuted column, as create_index generates it';

-- register_index: record an index whose prefix columns and B-tree indexes already exist
-- (created by create_index, or by SQLAlchemy/Alembic from the same layout math).
-- Contract: checks that every prefix column exists and is generated from
-- prefix_expression; raises otherwise. Returns the catalog row.
CREATE FUNCTION simpg.register_index(rel regclass, col name, k integer, levels integer[],
                                     prefix_columns name[], index_names name[],
                                     fingerprint_config text DEFAULT NULL)
    RETURNS simpg.indexes
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tables integer := simpg.table_count(k, levels);
    v_expr text;
    v_row simpg.indexes;
BEGIN
    IF rel IS NULL OR col IS NULL OR prefix_columns IS NULL OR index_names IS NULL THEN
        RAISE EXCEPTION 'table, column, prefix_columns and index_names must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(prefix_columns) <> v_tables OR cardinality(index_names) <> v_tables THEN
        RAISE EXCEPTION 'layout k=% blocks=% has % tables, got % prefix columns and % indexes',
            k, array_to_string(levels, 'x'), v_tables, cardinality(prefix_columns), cardinality(index_names)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR t IN 0 .. v_tables - 1 LOOP
        SELECT pg_get_expr(d.adbin, d.adrelid) INTO v_expr
        FROM pg_attribute AS a
        JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = rel AND a.attname = prefix_columns[t + 1]
          AND a.attgenerated = 's' AND NOT a.attisdropped;
        IF v_expr IS DISTINCT FROM simpg.prefix_expression(col, k, levels, t) THEN
            RAISE EXCEPTION 'column %.% is not the stored generated column %',
                rel, quote_ident(prefix_columns[t + 1]), simpg.prefix_expression(col, k, levels, t)
                USING ERRCODE = 'invalid_object_definition';
        END IF;
    END LOOP;
    INSERT INTO simpg.indexes (indexed_table, fingerprint_column, k, levels,
                               prefix_columns, index_names, fingerprint_config)
    VALUES (rel, col, k, levels, prefix_columns, index_names, fingerprint_config)
    RETURNING * INTO v_row;
    RETURN v_row;
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'column %.% already has a simpg index', rel, quote_ident(col)
        USING ERRCODE = 'duplicate_object', HINT = 'drop it first with simpg.drop_index(table, column)';
END
$$;

COMMENT ON FUNCTION simpg.register_index(regclass, name, integer, integer[], name[], name[], text) IS
    'Record prefix columns and indexes created outside create_index (SQLAlchemy, Alembic) in simpg.indexes';

-- create_index: add one stored generated column and one B-tree index per table of the
-- layout, and record them in simpg.indexes.
-- Contract: col must be a bigint column of rel, owned by the caller; blocks NULL picks
-- simpg.default_blocks(k, rows); inner_blocks adds Google's second level. Rewrites the
-- table once (ADD COLUMN ... STORED) under an ACCESS EXCLUSIVE lock.
CREATE FUNCTION simpg.create_index(rel regclass, col name, k integer DEFAULT 3,
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
    IF blocks IS NULL THEN
        IF inner_blocks IS NOT NULL THEN
            RAISE EXCEPTION 'inner_blocks needs blocks' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT c.reltuples::bigint INTO v_rows FROM pg_class AS c WHERE c.oid = rel;
        IF v_rows <= 0 THEN  -- never analyzed (-1) or empty: count, cheap for small tables
            EXECUTE format('SELECT count(*) FROM %s', rel) INTO v_rows;
        END IF;
        blocks := simpg.default_blocks(k, v_rows);
    END IF;
    v_levels := CASE WHEN inner_blocks IS NULL THEN ARRAY[blocks] ELSE ARRAY[blocks, inner_blocks] END;
    v_tables := simpg.table_count(k, v_levels);

    SELECT c.relname INTO v_relname FROM pg_class AS c WHERE c.oid = rel;
    FOR t IN 0 .. v_tables - 1 LOOP
        v_columns := v_columns || simpg.object_name(col, format('_p%s', t));
        v_indexes := v_indexes || simpg.object_name(v_relname || '_' || col, format('_p%s_idx', t));
        v_adds := v_adds || format('ADD COLUMN %I bigint GENERATED ALWAYS AS (%s) STORED',
                                   v_columns[t + 1], simpg.prefix_expression(col, k, v_levels, t));
    END LOOP;

    -- refuse before rewriting anything: the caller must own the table, and the
    -- column must not be indexed already
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF EXISTS (SELECT FROM simpg.indexes AS i WHERE i.indexed_table = rel AND i.fingerprint_column = col) THEN
        RAISE EXCEPTION 'column %.% already has a simpg index', rel, quote_ident(col)
            USING ERRCODE = 'duplicate_object', HINT = 'drop it first with simpg.drop_index(table, column)';
    END IF;

    EXECUTE format('ALTER TABLE %s %s', rel, array_to_string(v_adds, ', '));
    FOR t IN 0 .. v_tables - 1 LOOP
        EXECUTE format('CREATE INDEX %I ON %s (%I)', v_indexes[t + 1], rel, v_columns[t + 1]);
    END LOOP;
    -- statistics for the new columns, so the planner sees how narrow a prefix range is
    EXECUTE format('ANALYZE %s (%s)', rel,
                   (SELECT string_agg(quote_ident(c), ', ') FROM unnest(v_columns) AS c));
    RETURN simpg.register_index(rel, col, k, v_levels, v_columns, v_indexes, fingerprint_config);
END
$$;

COMMENT ON FUNCTION simpg.create_index(regclass, name, integer, integer, integer, text) IS
    'Index a bigint fingerprint column for exact within-k search: one generated prefix column and B-tree per table';

-- drop_index: remove exactly what create_index added (its prefix columns, which takes
-- their indexes with them) and the catalog row.
CREATE FUNCTION simpg.drop_index(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.index_layout(rel, col);
    v_drops text[];
BEGIN
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT array_agg(format('DROP COLUMN IF EXISTS %I', c)) INTO v_drops
    FROM unnest(v_row.prefix_columns) AS c;
    EXECUTE format('ALTER TABLE %s %s', rel, array_to_string(v_drops, ', '));
    DELETE FROM simpg.indexes AS i WHERE i.indexed_table = rel AND i.fingerprint_column = v_row.fingerprint_column;
END
$$;

COMMENT ON FUNCTION simpg.drop_index(regclass, name) IS
    'Remove the prefix columns, indexes and catalog row that create_index added';

-- query functions

-- near_query: the statement simpg.near runs, for EXPLAIN and for reports that want it.
-- Contract: raises for a NULL fingerprint, k < 0, k above the layout's radius, or a
-- column with no simpg index. The prefix ranges are literals, so each table's
-- condition is a plain B-tree range scan; the OR of them becomes a BitmapOr, which
-- also removes rows found through several tables.
CREATE FUNCTION simpg.near_query(rel regclass, fp bigint, k integer, col name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_ranges text[] := '{}';
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF k IS NULL OR k < 0 THEN
        RAISE EXCEPTION 'k must be a non-negative integer, got %', coalesce(k::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_row := simpg.index_layout(rel, col);
    IF k > v_row.k THEN
        RAISE EXCEPTION 'k=% is above the radius k=% that the simpg index on %.% guarantees',
            k, v_row.k, rel, quote_ident(v_row.fingerprint_column)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'drop and re-create the index with a larger k';
    END IF;
    FOR t IN 0 .. cardinality(v_row.prefix_columns) - 1 LOOP
        v_ranges := v_ranges || format('t.%I BETWEEN %s AND %s', v_row.prefix_columns[t + 1],
            simpg.prefix_lo(fp, v_row.k, v_row.levels, t), simpg.prefix_hi(fp, v_row.k, v_row.levels, t));
    END LOOP;
    RETURN format('SELECT t.* FROM %s AS t WHERE (%s) AND simpg.hamming(t.%I, %s) <= %s ORDER BY simpg.hamming(t.%I, %s)',
                  rel, array_to_string(v_ranges, ' OR '),
                  v_row.fingerprint_column, fp, k, v_row.fingerprint_column, fp);
END
$$;

COMMENT ON FUNCTION simpg.near_query(regclass, bigint, integer, name) IS
    'The index-backed SQL statement that finds the rows within distance k of fp';

-- near: every row of a table within distance k of fp, nearest first, read through the
-- prefix indexes. Polymorphic: SELECT * FROM simpg.near(NULL::articles, 1234, 3).
-- The distance of a row is simpg.hamming(its fingerprint column, fp).
CREATE FUNCTION simpg.near(tbl anyelement, fp bigint, k integer, col name DEFAULT NULL)
    RETURNS SETOF anyelement
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    -- tiny tables would otherwise be scanned sequentially; the indexes are always right here
    SET enable_seqscan = off
AS $$
DECLARE
    v_rel regclass;
BEGIN
    SELECT typ.typrelid INTO v_rel FROM pg_type AS typ WHERE typ.oid = pg_typeof(tbl);
    IF v_rel IS NULL OR v_rel = 0 THEN
        RAISE EXCEPTION 'first argument must be a table row type such as NULL::articles, got %', pg_typeof(tbl)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY EXECUTE simpg.near_query(v_rel, fp, k, col);
END
$$;

COMMENT ON FUNCTION simpg.near(anyelement, bigint, integer, name) IS
    'Rows of the table whose row type is given, within Hamming distance k of fp, nearest first';
