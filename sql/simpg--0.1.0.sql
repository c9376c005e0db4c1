-- simpg: exact near-duplicate search with 64-bit SimHash, in pure SQL and PL/pgSQL.
-- Installed by CREATE EXTENSION simpg, or run as a plain script by `simpg install`
-- on servers whose extension directory cannot be written (managed PostgreSQL).
-- Every object is written as simpg.<name> (pgmq's scheme), so both paths give the same objects.

\echo Use "CREATE EXTENSION simpg" to load this file. \quit

-- Refuse a schema simpg that another (non-superuser) role made first: its owner could
-- add look-alike functions there. session_user: a trusted CREATE EXTENSION runs this
-- script as the bootstrap superuser, for the calling role.
DO $$
DECLARE
    v_owner name;
BEGIN
    SELECT r.rolname INTO v_owner
    FROM pg_catalog.pg_namespace AS n JOIN pg_catalog.pg_roles AS r ON r.oid = n.nspowner
    WHERE n.nspname = 'simpg' AND r.rolname NOT IN (current_user, session_user) AND NOT r.rolsuper;
    IF FOUND THEN
        RAISE EXCEPTION 'schema simpg already exists and belongs to role %; drop it, or install simpg as that role', v_owner
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
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

-- narrowest_prefix: bits in the m - k narrowest of m blocks splitting nbits; what the
-- next level of a layout has left is nbits minus this (block_widths puts the wide ones first).
CREATE FUNCTION simpg.narrowest_prefix(nbits integer, m integer, k integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (m - k) * (nbits / m) + greatest(nbits % m - k, 0);

COMMENT ON FUNCTION simpg.narrowest_prefix(integer, integer, integer) IS
    'Bits in the m - k narrowest of m blocks splitting nbits';

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
        v_remaining := v_remaining - simpg.narrowest_prefix(v_remaining, v_m, k);
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
                CASE WHEN v_width = 64 THEN -1 ELSE ~(-1::bigint << v_width) END,
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

-- forget_dropped: when a table with a simpg index, its fingerprint column or one of its
-- prefix columns is dropped, the catalog row goes too (no dangling rows).
-- SECURITY DEFINER on purpose, the one exception: after the drop, simpg.owns() cannot
-- see the table any more, so the dropping role's own rights could not pass the RLS
-- policy. It deletes only rows whose objects no longer exist.
CREATE FUNCTION simpg.forget_dropped() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM simpg.indexes AS i
    WHERE i.indexed_table::oid IN (
            SELECT d.objid FROM pg_event_trigger_dropped_objects() AS d
            WHERE d.classid = 'pg_class'::regclass)
      AND (NOT EXISTS (SELECT FROM pg_class AS c WHERE c.oid = i.indexed_table::oid)
           OR EXISTS (SELECT FROM unnest(i.prefix_columns || i.fingerprint_column) AS col
                      WHERE NOT EXISTS (SELECT FROM pg_attribute AS a
                                        WHERE a.attrelid = i.indexed_table::oid
                                          AND a.attname = col AND NOT a.attisdropped)));
END
$$;

COMMENT ON FUNCTION simpg.forget_dropped() IS
    'Event trigger: remove simpg.indexes rows whose table or columns were dropped';

-- Event triggers need a superuser: CREATE EXTENSION runs this as one (also when trusted);
-- a plain install by a non-superuser goes without, and simpg ignores rows of dropped tables.
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        CREATE EVENT TRIGGER simpg_forget_dropped ON sql_drop
            EXECUTE FUNCTION simpg.forget_dropped();
    END IF;
END
$$;
-- index functions

-- object_name: an identifier of at most 63 bytes; a longer one keeps the start of base
-- (cut on a character boundary, counted in bytes), then '_' and 8 hex digits of md5(base),
-- then suffix, so two long names never collide after PostgreSQL's truncation.
CREATE FUNCTION simpg.object_name(base text, suffix text) RETURNS name
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_room integer := 63 - octet_length(suffix) - 9;
    v_head text := base;
BEGIN
    IF octet_length(base || suffix) <= 63 THEN
        RETURN (base || suffix)::name;
    END IF;
    v_head := left(base, greatest(v_room, 0));
    WHILE octet_length(v_head) > v_room LOOP
        v_head := left(v_head, -1);
    END LOOP;
    RETURN (v_head || '_' || left(md5(base), 8) || suffix)::name;
END
$$;

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
-- simpg.default_levels(k, rows); inner_blocks adds Google's second level. Rewrites the
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

-- checked_layout: the catalog row a query or report reads, after checking k against it.
-- Contract: raises for a NULL table, k NULL or negative, k above the index's radius,
-- or a column with no simpg index (simpg.index_layout's error).
CREATE FUNCTION simpg.checked_layout(rel regclass, k integer, col name DEFAULT NULL)
    RETURNS simpg.indexes
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
BEGIN
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
    RETURN v_row;
END
$$;

COMMENT ON FUNCTION simpg.checked_layout(regclass, integer, name) IS
    'The simpg.indexes row a report on rel reads; raises if k is null, negative or above the index''s k';

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
    v_permuted bigint;
    v_low_mask bigint;  -- the bits after table t's prefix
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_row := simpg.checked_layout(rel, k, col);
    FOR t IN 0 .. cardinality(v_row.prefix_columns) - 1 LOOP
        v_permuted := simpg.apply_segments(fp, simpg.table_segments(v_row.k, v_row.levels, t));
        v_low_mask := ~(-1::bigint << (64 - simpg.prefix_bits(v_row.k, v_row.levels, t)));
        v_ranges := v_ranges || format('t.%I BETWEEN %s AND %s', v_row.prefix_columns[t + 1],
                                       v_permuted & ~v_low_mask, v_permuted | v_low_mask);
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
-- planner functions
--
-- The layout planner is defined in simpg/planner.py's docstring; these functions
-- compute the same designs, figures and recommendation (the test suite compares them).

-- The sizing rule of simpg.layout.default_blocks (kept for callers of it; create_index
-- now asks simpg.default_levels, i.e. the planner).
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

-- plan: the designs worth considering for radius k and row_count rows, fewest tables
-- first, with their figures and the recommended one (simpg.planner.plan in Python).
-- Contract: k in 0..16 and row_count >= 0, else raises; exactly one row has
-- recommended = true. Weights (sum over tables of 2^(64 - prefix bits)) and costs are
-- compared as exact numerics, so the choice never hinges on rounding.
CREATE FUNCTION simpg.plan(k integer, row_count bigint, everything boolean DEFAULT false)
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
    c_index constant float8 := 22.5;         -- INDEX_BYTES_PER_TABLE
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

COMMENT ON FUNCTION simpg.plan(integer, bigint, boolean) IS
    'Candidate index layouts for radius k and row_count rows with their costs; one is recommended';

-- default_levels: the layout create_index uses when blocks are not given: the planner's
-- recommendation (simpg.planner.recommend in Python).
CREATE FUNCTION simpg.default_levels(k integer, row_count bigint) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT p.levels FROM simpg.plan(k, row_count) AS p WHERE p.recommended);

COMMENT ON FUNCTION simpg.default_levels(integer, bigint) IS
    'Layout (blocks per level) that create_index picks for k and a table of row_count rows';
-- report functions
--
-- All near-duplicate pairs of a table, their clusters (connected components) and
-- duplicate statistics, computed inside the database from the prefix columns that
-- simpg.create_index added. Every function here is SECURITY INVOKER (the default):
-- it reads the table with the caller's rights, so permissions, column privileges and
-- row-level security apply as to a plain SELECT. Dynamic SQL only ever embeds a
-- regclass (which quotes and qualifies itself) and names through format('%I').
--
-- Exactness: a pair within k shares its prefix in at least one table of the layout
-- (the pigeonhole principle behind the index). Each table's pass joins the rows whose
-- prefixes are equal, and reports a pair only from the FIRST table where they are
-- equal, so every pair within k comes out exactly once, without a DISTINCT.



-- report_key: the column that identifies rows in a report, and its type.
-- Contract: key_column NULL means the single-column primary key. The column must be
-- NOT NULL and carry a valid, non-partial single-column unique index: pairs are taken
-- once as key_a < key_b, so two rows with equal keys would silently lose their pair.
CREATE FUNCTION simpg.report_key(rel regclass, key_column name DEFAULT NULL,
                                 OUT column_name name, OUT column_type regtype)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_attnum smallint;
    v_notnull boolean;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF key_column IS NULL THEN
        SELECT a.attname, a.atttypid::regtype INTO column_name, column_type
        FROM pg_index AS i
        JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = rel AND i.indisprimary AND i.indnkeyatts = 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'table % has no single-column primary key; name a unique not-null column as key_column', rel
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN;
    END IF;
    SELECT a.attname, a.atttypid::regtype, a.attnum, a.attnotnull
    INTO column_name, column_type, v_attnum, v_notnull
    FROM pg_attribute AS a
    WHERE a.attrelid = rel AND a.attname = key_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % of table % does not exist', quote_ident(key_column), rel
            USING ERRCODE = 'undefined_column';
    END IF;
    IF NOT v_notnull OR NOT EXISTS (
        SELECT FROM pg_index AS i
        WHERE i.indrelid = rel AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1
          AND i.indkey[0] = v_attnum AND i.indpred IS NULL AND i.indexprs IS NULL
    ) THEN
        RAISE EXCEPTION 'key column %.% must be not null and unique (a primary key or a unique index of its own)',
            rel, quote_ident(key_column)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.report_key(regclass, name) IS
    'The key column of a report on rel (default: its single-column primary key) and its type; raises unless unique and not null';

-- report_key_type: the type a report returns keys as, when the caller asks for want.
-- Contract: want may be the key column's own type, text (always lossless), or bigint
-- for a smallint, integer or bigint key; anything else raises naming the right call.
CREATE FUNCTION simpg.report_key_type(rel regclass, key_column name, have regtype, want regtype)
    RETURNS regtype
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF want IS NULL OR want = have OR want = 'text'::regtype
       OR (want = 'bigint'::regtype AND have IN ('smallint'::regtype, 'integer'::regtype)) THEN
        RETURN coalesce(want, have);
    END IF;
    RAISE EXCEPTION 'key column %.% is %, not %; pass NULL::% as the first argument to get % keys',
        rel, quote_ident(key_column), have, want, have, have
        USING ERRCODE = 'datatype_mismatch';
END
$$;

COMMENT ON FUNCTION simpg.report_key_type(regclass, name, regtype, regtype) IS
    'Type a report returns keys as: the key column''s own type, text, or bigint for integer keys; raises otherwise';

-- prefix_join: the FROM/WHERE part shared by the pair queries. r must be a relation
-- with columns fp, q0 .. q<n-1> (prefix t shifted down to its prefix bits) and a
-- column named by ident; ident_a < ident_b takes each pair once.
-- One branch per table t: equal q_t, unequal q_u for every u < t, distance <= k.
CREATE FUNCTION simpg.prefix_join(select_list text, tables integer, k integer, ident name)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (
        SELECT pg_catalog.string_agg(
            pg_catalog.format(
                'SELECT %s FROM r AS a JOIN r AS b ON b.q%s = a.q%s AND a.%I < b.%I WHERE %ssimpg.hamming(a.fp, b.fp) <= %s',
                select_list, t, t, ident, ident,
                (SELECT pg_catalog.string_agg(pg_catalog.format('b.q%s <> a.q%s AND ', u, u), '' ORDER BY u)
                 FROM pg_catalog.generate_series(0, t - 1) AS u),
                k),
            ' UNION ALL ' ORDER BY t)
        FROM pg_catalog.generate_series(0, tables - 1) AS t
    );

COMMENT ON FUNCTION simpg.prefix_join(text, integer, integer, name) IS
    'Internal: UNION ALL of one equal-prefix self-join of r per table, each pair reported from its first table only';

-- prefix_select: "t.<p0> >> s0 AS q0, t.<p1> >> s1 AS q1, ..." for a layout row.
CREATE FUNCTION simpg.prefix_select(layout simpg.indexes) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (
        SELECT pg_catalog.string_agg(
            pg_catalog.format('t.%I >> %s AS q%s', c.col,
                              64 - simpg.prefix_bits(layout.k, layout.levels, (c.n - 1)::integer), c.n - 1),
            ', ' ORDER BY c.n)
        FROM pg_catalog.unnest(layout.prefix_columns) WITH ORDINALITY AS c(col, n)
    );

COMMENT ON FUNCTION simpg.prefix_select(simpg.indexes) IS
    'Internal: the select list of every table''s prefix, shifted down to its prefix bits, as q0, q1, ...';

-- pairs_query: the statement simpg.pairs runs, for EXPLAIN and for views.
-- Contract: columns key_a, key_b, distance; key_a < key_b in the key column's own
-- order; every pair of rows within distance k exactly once, rows with equal
-- fingerprints included, rows with a NULL fingerprint left out. key_type NULL returns
-- keys in the key column's own type.
CREATE FUNCTION simpg.pairs_query(rel regclass, k integer, col name DEFAULT NULL,
                                  key_column name DEFAULT NULL, key_type regtype DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
    v_key record := simpg.report_key(rel, key_column);
    v_type regtype := simpg.report_key_type(rel, v_key.column_name, v_key.column_type, key_type);
BEGIN
    -- The CTE reads the table once; each table's pass is a hash join on its prefix.
    RETURN format(
        'WITH r AS MATERIALIZED (SELECT t.%I AS key, t.%I AS fp, %s FROM %s AS t WHERE t.%I IS NOT NULL) %s',
        v_key.column_name, v_row.fingerprint_column, simpg.prefix_select(v_row), rel,
        v_row.fingerprint_column,
        simpg.prefix_join(format('a.key::%s AS key_a, b.key::%s AS key_b, simpg.hamming(a.fp, b.fp) AS distance',
                                 v_type, v_type),
                          cardinality(v_row.prefix_columns), k, 'key'));
END
$$;

COMMENT ON FUNCTION simpg.pairs_query(regclass, integer, name, name, regtype) IS
    'The SQL statement that lists every pair of rows of rel within distance k (key_a, key_b, distance)';

-- pairs: every pair of rows within distance k, keys as bigint (integer keys).
-- The planner knows nothing of the CTE's prefix columns and prefers a merge join
-- whose sorts spill, then JIT-compiles it for its inflated cost estimate; a hash join
-- per table without JIT is 2.1-2.4x faster on 100k rows (bench/reports.py).
CREATE FUNCTION simpg.pairs(rel regclass, k integer, col name DEFAULT NULL, key_column name DEFAULT NULL)
    RETURNS TABLE (key_a bigint, key_b bigint, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET jit = off
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.pairs_query(rel, k, col, key_column, 'bigint');
END
$$;

COMMENT ON FUNCTION simpg.pairs(regclass, integer, name, name) IS
    'Every pair of rows of rel within Hamming distance k, once each (key_a < key_b), keys of an integer key column as bigint';

-- pairs with a typed first argument: keys of any type, e.g. simpg.pairs(NULL::uuid, 'docs', 3).
CREATE FUNCTION simpg.pairs(key_type anyelement, rel regclass, k integer, col name DEFAULT NULL,
                            key_column name DEFAULT NULL)
    RETURNS TABLE (key_a anyelement, key_b anyelement, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET jit = off
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.pairs_query(rel, k, col, key_column, pg_typeof(key_type)::regtype);
END
$$;

COMMENT ON FUNCTION simpg.pairs(anyelement, regclass, integer, name, name) IS
    'Every pair of rows of rel within Hamming distance k, once each, keys of the type of the first argument (NULL::uuid, NULL::text, ...)';

-- fingerprint_clusters: connected components of the distinct fingerprints of rel,
-- joined by the pairs within distance k.
-- Contract: one row per distinct fingerprint that has another distinct fingerprint
-- within k; cluster is the smallest fingerprint of its component. Fingerprints with no
-- such neighbour are left out (rows that share one fingerprint are near-duplicates all
-- the same; the callers count them). STABLE on purpose: every statement of a STABLE
-- function reads the calling query's snapshot, so all passes see the same rows.
--
-- Working on distinct fingerprints keeps exact duplicates (often the bulk of a
-- corpus's duplicates) out of the pair join, which would otherwise grow with the
-- square of each group. Components: union-find over dense numbers in a PL/pgSQL
-- array (in place, O(1) per access), union by smaller number, path compression.
-- bench/reports.py compares it with a recursive CTE (docs/benchmarks.md).
CREATE FUNCTION simpg.fingerprint_clusters(rel regclass, k integer, col name DEFAULT NULL)
    RETURNS TABLE (fingerprint bigint, cluster bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET jit = off
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
    v_parent integer[];   -- v_parent[i]: parent of fingerprint number i, NULL for a root
    v_fp bigint[];        -- v_fp[i]: fingerprint number i (numbered in fingerprint order)
    v_seen integer[] := '{}';  -- numbers that appear in a pair, in first-seen order
    v_n integer;
    v_a integer;
    v_b integer;
    v_fa bigint;
    v_fb bigint;
    v_ra integer;
    v_rb integer;
    v_x integer;
    v_next integer;
    v_fps bigint[];
    v_roots bigint[];
BEGIN
    FOR v_n, v_a, v_b, v_fa, v_fb IN EXECUTE format(
        'WITH d AS (SELECT DISTINCT t.%I AS fp, %s FROM %s AS t WHERE t.%I IS NOT NULL), '
        'r AS MATERIALIZED (SELECT d.*, (row_number() OVER (ORDER BY d.fp))::integer AS i FROM d) '
        'SELECT (SELECT count(*) FROM r)::integer, p.* FROM (%s) AS p',
        v_row.fingerprint_column, simpg.prefix_select(v_row), rel, v_row.fingerprint_column,
        simpg.prefix_join('a.i AS ia, b.i AS ib, a.fp AS fa, b.fp AS fb', cardinality(v_row.prefix_columns), k, 'fp'))
    LOOP
        IF v_parent IS NULL THEN
            v_parent := array_fill(NULL::integer, ARRAY[v_n]);
            v_fp := array_fill(NULL::bigint, ARRAY[v_n]);
        END IF;
        IF v_fp[v_a] IS NULL THEN
            v_fp[v_a] := v_fa;
            v_seen := v_seen || v_a;
        END IF;
        IF v_fp[v_b] IS NULL THEN
            v_fp[v_b] := v_fb;
            v_seen := v_seen || v_b;
        END IF;
        v_ra := v_a;
        WHILE v_parent[v_ra] IS NOT NULL LOOP
            v_ra := v_parent[v_ra];
        END LOOP;
        v_rb := v_b;
        WHILE v_parent[v_rb] IS NOT NULL LOOP
            v_rb := v_parent[v_rb];
        END LOOP;
        IF v_ra <> v_rb THEN
            -- the smaller number (smaller fingerprint) stays the root
            IF v_ra < v_rb THEN
                v_parent[v_rb] := v_ra;
                v_rb := v_ra;
            ELSE
                v_parent[v_ra] := v_rb;
                v_ra := v_rb;
            END IF;
        END IF;
        -- path compression: point both walked paths straight at the root
        FOREACH v_x IN ARRAY ARRAY[v_a, v_b] LOOP
            WHILE v_parent[v_x] IS NOT NULL AND v_x <> v_ra LOOP
                v_next := v_parent[v_x];
                v_parent[v_x] := v_ra;
                v_x := v_next;
            END LOOP;
        END LOOP;
    END LOOP;
    IF v_parent IS NULL THEN
        RETURN;
    END IF;
    -- plain arrays for the result: a query that indexed v_fp per row would copy it each time
    v_fps := array_fill(NULL::bigint, ARRAY[cardinality(v_seen)]);
    v_roots := array_fill(NULL::bigint, ARRAY[cardinality(v_seen)]);
    FOR v_i IN 1 .. cardinality(v_seen) LOOP
        v_x := v_seen[v_i];
        v_fps[v_i] := v_fp[v_x];
        WHILE v_parent[v_x] IS NOT NULL LOOP
            v_x := v_parent[v_x];
        END LOOP;
        v_roots[v_i] := v_fp[v_x];
    END LOOP;
    RETURN QUERY SELECT u.fp, u.root FROM unnest(v_fps, v_roots) AS u(fp, root);
END
$$;

COMMENT ON FUNCTION simpg.fingerprint_clusters(regclass, integer, name) IS
    'Connected components of rel''s distinct fingerprints under distance <= k: each fingerprint with a neighbour and its cluster''s smallest fingerprint';

-- cluster_rows_query: per row with a fingerprint, its key and its component (the
-- smallest fingerprint of its cluster, or its own fingerprint when it has no
-- neighbour at another fingerprint). The outer statements group on comp.
CREATE FUNCTION simpg.cluster_rows_query(rel regclass, k integer, col name, key_expr text)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
BEGIN
    RETURN format(
        'SELECT %s AS key, coalesce(c.cluster, t.%I) AS comp FROM %s AS t '
        'LEFT JOIN simpg.fingerprint_clusters(%L::pg_catalog.regclass, %s, %L::pg_catalog.name) AS c ON c.fingerprint = t.%I '
        'WHERE t.%I IS NOT NULL',
        key_expr, v_row.fingerprint_column, rel, rel, k, v_row.fingerprint_column,
        v_row.fingerprint_column, v_row.fingerprint_column);
END
$$;

COMMENT ON FUNCTION simpg.cluster_rows_query(regclass, integer, name, text) IS
    'Internal: the statement giving each row of rel (key_expr AS key) its cluster component';

-- clusters_query: the statement simpg.clusters runs.
-- Contract: columns cluster_id, key, size; one row per row of rel that has at least
-- one other row within k, directly or through a chain of such rows; cluster_id is the
-- smallest key of the cluster, size its number of rows. Ordered by cluster_id, key.
CREATE FUNCTION simpg.clusters_query(rel regclass, k integer, col name DEFAULT NULL,
                                     key_column name DEFAULT NULL, key_type regtype DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key record := simpg.report_key(rel, key_column);
    v_type regtype := simpg.report_key_type(rel, v_key.column_name, v_key.column_type, key_type);
BEGIN
    -- first_value over the key order rather than min(): uuid and other types have
    -- a B-tree order but no min aggregate
    RETURN format(
        'SELECT s.cluster_id::%s AS cluster_id, s.key::%s AS key, s.size FROM ('
        'SELECT first_value(w.key) OVER (PARTITION BY w.comp ORDER BY w.key) AS cluster_id, w.key, '
        'count(*) OVER (PARTITION BY w.comp) AS size FROM (%s) AS w) AS s '
        'WHERE s.size > 1 ORDER BY s.cluster_id, s.key',
        v_type, v_type, simpg.cluster_rows_query(rel, k, col, format('t.%I', v_key.column_name)));
END
$$;

COMMENT ON FUNCTION simpg.clusters_query(regclass, integer, name, name, regtype) IS
    'The SQL statement that lists the near-duplicate clusters of rel (cluster_id, key, size)';

-- clusters: near-duplicate clusters (connected components), keys as bigint.
CREATE FUNCTION simpg.clusters(rel regclass, k integer, col name DEFAULT NULL, key_column name DEFAULT NULL)
    RETURNS TABLE (cluster_id bigint, key bigint, size bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.clusters_query(rel, k, col, key_column, 'bigint');
END
$$;

COMMENT ON FUNCTION simpg.clusters(regclass, integer, name, name) IS
    'Near-duplicate clusters of rel (connected components under distance <= k): cluster_id = smallest key, one row per member';

CREATE FUNCTION simpg.clusters(key_type anyelement, rel regclass, k integer, col name DEFAULT NULL,
                               key_column name DEFAULT NULL)
    RETURNS TABLE (cluster_id anyelement, key anyelement, size bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.clusters_query(rel, k, col, key_column, pg_typeof(key_type)::regtype);
END
$$;

COMMENT ON FUNCTION simpg.clusters(anyelement, regclass, integer, name, name) IS
    'Near-duplicate clusters of rel, keys of the type of the first argument (NULL::uuid, NULL::text, ...)';

-- cluster_sizes: histogram of cluster sizes; size 1 counts the rows with no
-- near-duplicate. Needs no key column.
CREATE FUNCTION simpg.cluster_sizes(rel regclass, k integer, col name DEFAULT NULL)
    RETURNS TABLE (cluster_size bigint, clusters bigint, rows bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT g.n, count(*), sum(g.n)::bigint FROM '
        '(SELECT w.comp, count(*) AS n FROM (%s) AS w GROUP BY w.comp) AS g '
        'GROUP BY g.n ORDER BY g.n',
        simpg.cluster_rows_query(rel, k, col, 'NULL'));
END
$$;

COMMENT ON FUNCTION simpg.cluster_sizes(regclass, integer, name) IS
    'Histogram of near-duplicate cluster sizes of rel under distance <= k (size 1: rows with no near-duplicate)';

-- duplicate_stats: one row summing up the duplicates of rel. Needs no key column.
-- rows counts the rows with a fingerprint; duplicated_rows those with at least one
-- other row within k; rows_after_dedup keeps one row per cluster.
CREATE FUNCTION simpg.duplicate_stats(rel regclass, k integer, col name DEFAULT NULL)
    RETURNS TABLE (rows bigint, duplicated_rows bigint, clusters bigint, largest_cluster bigint,
                   rows_after_dedup bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT coalesce(sum(g.n), 0)::bigint, coalesce(sum(g.n) FILTER (WHERE g.n > 1), 0)::bigint, '
        'count(*) FILTER (WHERE g.n > 1), coalesce(max(g.n) FILTER (WHERE g.n > 1), 0)::bigint, count(*) '
        'FROM (SELECT w.comp, count(*) AS n FROM (%s) AS w GROUP BY w.comp) AS g',
        simpg.cluster_rows_query(rel, k, col, 'NULL'));
END
$$;

COMMENT ON FUNCTION simpg.duplicate_stats(regclass, integer, name) IS
    'Rows, rows with a near-duplicate within k, clusters, largest cluster, and rows left keeping one per cluster';
