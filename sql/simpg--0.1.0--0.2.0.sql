-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION simpg UPDATE TO '0.2.0'" to load this file. \quit

-- simpg 0.1.0 -> 0.2.0, the part written by hand (see CHANGELOG.md and docs/security.md).
-- sql/upgrade/build.py appends every object of the 0.2.0 install script to it (every
-- function as CREATE OR REPLACE: once the schema is simpg's alone, that replaces only
-- simpg's own), so an updated install equals a fresh one (test_install compares them).
--
-- 0.1.0 kept its catalog in a table under row-level security, with an event trigger
-- whose SECURITY DEFINER function cleaned it, in a schema that belonged to the role that
-- ran CREATE EXTENSION. 0.2.0 reads its catalog from the system catalogs and owns its
-- schema. This part takes the schema over, moves the fingerprint configs into the
-- prefix columns' comments, and drops every 0.1.0 object that 0.2.0 defines anew.

SET LOCAL search_path = pg_catalog, pg_temp;

-- Take schema simpg over: it must hold nothing but simpg's own objects (the extension's
-- members, or for a plain install the installing role's simpg objects), and nothing in it
-- may belong to a role that could have planted it. This runs before any statement that
-- calls or replaces an object of the schema: under 0.1.0 the installer owned schema simpg
-- and the extension, so she could swap a member for a function of her own (ALTER
-- EXTENSION ... DROP/ADD) for this script, run by a superuser, to call, or keep as its
-- owner through CREATE OR REPLACE. With the extension every object must belong to a
-- superuser (0.1.0's script ran as one); a plain install is updated by the role that owns
-- it and everything in it, since any other role would run that role's code.
DO $$
DECLARE
    v_schema oid := pg_catalog.to_regnamespace('simpg');
    v_extension oid := (SELECT e.oid FROM pg_catalog.pg_extension AS e WHERE e.extname = 'simpg');
    v_foreign text;
    v_owned text;
    v_grantee oid;
    v_function regprocedure;
BEGIN
    IF v_schema IS NULL THEN
        RAISE EXCEPTION 'schema simpg does not exist' USING ERRCODE = 'invalid_schema_name';
    END IF;
    IF v_extension IS NOT NULL
       AND (SELECT e.extnamespace FROM pg_catalog.pg_extension AS e WHERE e.oid = v_extension) <> v_schema THEN
        RAISE EXCEPTION 'schema simpg is not the schema of extension simpg' USING ERRCODE = 'invalid_schema_name';
    END IF;
    -- every object of the schema (the schema too) and every member of the extension:
    -- whether it is a member, and whether its owner may be trusted
    WITH objects AS (
        SELECT x.classid, x.objid, x.owner,
               pg_catalog.pg_describe_object(x.classid, x.objid, 0) AS description,
               EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                       WHERE d.classid = x.classid AND d.objid = x.objid AND d.deptype = 'e'
                         AND d.refobjid = v_extension) AS member
        FROM (SELECT 'pg_class'::regclass AS classid, c.oid AS objid, c.relowner AS owner, c.relnamespace AS nsp
              FROM pg_catalog.pg_class AS c WHERE c.relkind IN ('r', 'v', 'm', 'S', 'f', 'p')
              UNION ALL SELECT 'pg_proc'::regclass, p.oid, p.proowner, p.pronamespace FROM pg_catalog.pg_proc AS p
              UNION ALL SELECT 'pg_type'::regclass, t.oid, t.typowner, t.typnamespace FROM pg_catalog.pg_type AS t
                        WHERE t.typelem = 0  -- a composite type is the member, not its pg_class row
                          AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = t.typrelid) = 'c')
              UNION ALL SELECT 'pg_operator'::regclass, o.oid, o.oprowner, o.oprnamespace FROM pg_catalog.pg_operator AS o
              UNION ALL SELECT 'pg_opfamily'::regclass, f.oid, f.opfowner, f.opfnamespace FROM pg_catalog.pg_opfamily AS f
              UNION ALL SELECT 'pg_opclass'::regclass, c.oid, c.opcowner, c.opcnamespace FROM pg_catalog.pg_opclass AS c
              UNION ALL SELECT 'pg_collation'::regclass, c.oid, c.collowner, c.collnamespace FROM pg_catalog.pg_collation AS c
              UNION ALL SELECT 'pg_conversion'::regclass, c.oid, c.conowner, c.connamespace FROM pg_catalog.pg_conversion AS c
              UNION ALL SELECT 'pg_ts_config'::regclass, c.oid, c.cfgowner, c.cfgnamespace FROM pg_catalog.pg_ts_config AS c
              UNION ALL SELECT 'pg_ts_dict'::regclass, d.oid, d.dictowner, d.dictnamespace FROM pg_catalog.pg_ts_dict AS d
              UNION ALL SELECT 'pg_statistic_ext'::regclass, s.oid, s.stxowner, s.stxnamespace FROM pg_catalog.pg_statistic_ext AS s
              UNION ALL SELECT 'pg_event_trigger'::regclass, e.oid, e.evtowner, NULL FROM pg_catalog.pg_event_trigger AS e
              UNION ALL SELECT 'pg_foreign_server'::regclass, s.oid, s.srvowner, NULL FROM pg_catalog.pg_foreign_server AS s
              UNION ALL SELECT 'pg_namespace'::regclass, n.oid, n.nspowner, n.oid FROM pg_catalog.pg_namespace AS n
             ) AS x
        WHERE x.nsp = v_schema
           OR EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                      WHERE d.classid = x.classid AND d.objid = x.objid AND d.deptype = 'e'
                        AND d.refobjid = v_extension)
    )
    SELECT string_agg(o.description, ', ' ORDER BY o.description)
               FILTER (WHERE v_extension IS NOT NULL AND NOT o.member AND o.classid <> 'pg_namespace'::regclass),
           string_agg(pg_catalog.format('%s (owned by %s)', o.description, pg_catalog.pg_get_userbyid(o.owner)),
                      ', ' ORDER BY o.description)
               FILTER (WHERE CASE WHEN v_extension IS NULL
                                  THEN o.owner <> (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user)
                                  ELSE o.classid <> 'pg_namespace'::regclass
                                       AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS r
                                                       WHERE r.oid = o.owner AND r.rolsuper) END)
    INTO v_foreign, v_owned
    FROM objects AS o;
    IF v_foreign IS NOT NULL THEN
        RAISE EXCEPTION 'schema simpg holds objects that are not simpg''s: %', v_foreign
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'move or drop them, then update simpg';
    END IF;
    IF v_owned IS NOT NULL AND v_extension IS NOT NULL THEN
        RAISE EXCEPTION 'simpg cannot be updated: objects of extension simpg belong to roles that are not superusers: %', v_owned
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'a superuser should drop them (ALTER EXTENSION simpg DROP ..., then DROP ...), or drop extension simpg and create it again';
    ELSIF v_owned IS NOT NULL THEN
        RAISE EXCEPTION 'simpg cannot be updated by %: its plain install holds objects of other roles: %', current_user, v_owned
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'run the update as the role that owns schema simpg and its objects: any other role would run that role''s code';
    END IF;
    -- functions that 0.2.0 replaces keep their owner through CREATE OR REPLACE: give those
    -- of another superuser (who installed 0.1.0) to the role updating, as the final
    -- check of this script (90_audit.sql) requires
    FOR v_function IN
        SELECT p.oid::regprocedure FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = v_schema AND p.proowner <> (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user)
    LOOP
        EXECUTE pg_catalog.format('ALTER ROUTINE %s OWNER TO %I', v_function, current_user);
    END LOOP;
    EXECUTE pg_catalog.format('ALTER SCHEMA simpg OWNER TO %I', current_user);
    FOR v_grantee IN
        SELECT DISTINCT a.grantee
        FROM pg_catalog.pg_namespace AS n, pg_catalog.aclexplode(n.nspacl) AS a
        WHERE n.oid = v_schema AND a.grantee <> n.nspowner
    LOOP
        IF v_grantee = 0 THEN
            REVOKE ALL ON SCHEMA simpg FROM PUBLIC;
        ELSE
            EXECUTE pg_catalog.format('REVOKE ALL ON SCHEMA simpg FROM %I', pg_catalog.pg_get_userbyid(v_grantee));
        END IF;
    END LOOP;
END
$$;
GRANT USAGE ON SCHEMA simpg TO PUBLIC;

-- The extension as a fresh 0.2.0 install has it: schema simpg one of its members, and
-- its own namespace not simpg. 0.1.0's control file named schema simpg, so CREATE
-- EXTENSION made it apart from the members; pg_dump then writes CREATE SCHEMA simpg and
-- ALTER SCHEMA simpg OWNER TO <the bootstrap superuser>, which an owner's restore cannot
-- run. As a member it goes with the extension; pg_catalog, as the namespace pg_dump
-- names in CREATE EXTENSION ... WITH SCHEMA, always exists (the script makes simpg).
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension AS e WHERE e.extname = 'simpg') THEN
        UPDATE pg_catalog.pg_extension SET extnamespace = 'pg_catalog'::regnamespace WHERE extname = 'simpg';
        ALTER EXTENSION simpg ADD SCHEMA simpg;  -- refused while the schema holds the extension
    END IF;
END
$$;

-- The fingerprint configs move to the comment of each index's first prefix column,
-- where 0.2.0's catalog reads them.
DO $$
DECLARE
    v_row record;
BEGIN
    FOR v_row IN
        SELECT i.indexed_table, i.prefix_columns[1] AS prefix_column, i.fingerprint_config
        FROM simpg.indexes AS i
        WHERE i.fingerprint_config IS NOT NULL
          AND EXISTS (SELECT FROM pg_catalog.pg_attribute AS a
                      WHERE a.attrelid = i.indexed_table AND a.attname = i.prefix_columns[1] AND NOT a.attisdropped)
    LOOP
        EXECUTE pg_catalog.format('COMMENT ON COLUMN %s.%I IS %L', v_row.indexed_table, v_row.prefix_column,
                                  'simpg fingerprint_config: ' || v_row.fingerprint_config);
    END LOOP;
END
$$;

DROP EVENT TRIGGER IF EXISTS simpg_forget_dropped;
DROP FUNCTION simpg.forget_dropped();
-- the functions of the old catalog's row type, then the table (no CASCADE: a view of
-- yours on simpg.indexes stops the update with an error rather than being dropped)
DROP FUNCTION simpg.index_layout(regclass, name), simpg.checked_layout(regclass, integer, name),
    simpg.register_index(regclass, name, integer, integer[], name[], name[], text),
    simpg.create_index(regclass, name, integer, integer, integer, text), simpg.prefix_select(simpg.indexes);
DROP TABLE simpg.indexes;
-- reports that gained parameters (the cluster method, the confirming sketch): CREATE OR
-- REPLACE would add overloads beside them, and calls with the old arguments would become
-- ambiguous
DROP FUNCTION simpg.pairs(regclass, integer, name, name),
    simpg.pairs(anyelement, regclass, integer, name, name),
    simpg.pairs_query(regclass, integer, name, name, regtype),
    simpg.clusters(regclass, integer, name, name),
    simpg.clusters(anyelement, regclass, integer, name, name),
    simpg.clusters_query(regclass, integer, name, name, regtype),
    simpg.cluster_rows_query(regclass, integer, name, text),
    simpg.cluster_sizes(regclass, integer, name), simpg.duplicate_stats(regclass, integer, name);

-- 0.2.0's objects, as its install script makes them:

-- hamming functions

-- SQL-standard bodies (RETURN ...) are parsed at creation time, so they cannot be
-- redirected through search_path, and the planner still inlines them.
CREATE OR REPLACE FUNCTION simpg.hamming(a bigint, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.bit_count((a OPERATOR(pg_catalog.#) b)::bit(64))::integer;

COMMENT ON FUNCTION simpg.hamming(bigint, bigint) IS
    'Hamming distance between two 64-bit fingerprints: bit_count(a # b)';
-- layout functions
--
-- The layout math is defined once, in simpg/layout.py's docstring; these functions
-- implement it bit for bit (the test suite compares them on every supported layout).
-- A layout is (k, levels): levels[1] blocks at level 1, optionally levels[2] at level 2.

-- binomial is plain SQL so that it is inlined into its callers: table_order calls it in
-- its loops, where as a PL/pgSQL function it took about a quarter of the time. Exact for
-- every n <= 64 (factorial is numeric). Not STRICT: a strict SQL function whose body has
-- CASE is not inlined; NULL in gives NULL out all the same.
CREATE OR REPLACE FUNCTION simpg.binomial(n integer, r integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN r < 0 OR r > n THEN 0
                ELSE (pg_catalog.factorial(n) / (pg_catalog.factorial(r) * pg_catalog.factorial(n - r)))::bigint
           END;

COMMENT ON FUNCTION simpg.binomial(integer, integer) IS 'Binomial coefficient C(n, r)';

CREATE OR REPLACE FUNCTION simpg.block_widths(nbits integer, m integer) RETURNS integer[]
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
CREATE OR REPLACE FUNCTION simpg.narrowest_prefix(nbits integer, m integer, k integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (m - k) * (nbits / m) + greatest(nbits % m - k, 0);

COMMENT ON FUNCTION simpg.narrowest_prefix(integer, integer, integer) IS
    'Bits in the m - k narrowest of m blocks splitting nbits';

-- layout_error: why (k, levels) is not a valid layout, or NULL when it is one.
-- Contract: never raises; its messages match simpg.layout.Layout's. The catalog view
-- asks it of every generated column it reads, where an error would hide the rest.
CREATE OR REPLACE FUNCTION simpg.layout_error(k integer, levels integer[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_remaining integer := 64;
    v_tables numeric := 1;  -- a product of two binomials can pass bigint (k=16, blocks=40x32)
    v_m integer;
BEGIN
    IF k IS NULL OR k < 0 OR k > 16 THEN
        RETURN format('k must be an integer from 0 to 16, got %s', coalesce(k::text, 'null'));
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
CREATE OR REPLACE FUNCTION simpg.table_count(k integer, levels integer[]) RETURNS integer
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
CREATE OR REPLACE FUNCTION simpg.table_order(k integer, levels integer[], t integer,
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

CREATE OR REPLACE FUNCTION simpg.prefix_bits(k integer, levels integer[], t integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (simpg.table_order(k, levels, t)).prefix_bits;

COMMENT ON FUNCTION simpg.prefix_bits(integer, integer[], integer) IS
    'Number of leading bits of table t''s permuted value that near-duplicates share';

-- order_segments: a permutation given as table_order's bit_order, as runs of contiguous
-- bits flattened as (src_shift, mask, dst_shift) triples:
-- permuted |= ((fp >> src_shift) & mask) << dst_shift.
CREATE OR REPLACE FUNCTION simpg.order_segments(bit_order integer[]) RETURNS bigint[]
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

COMMENT ON FUNCTION simpg.table_segments(integer, integer[], integer) IS
    'Table t''s permutation as (src_shift, mask, dst_shift) triples of contiguous bit runs';

-- apply_segments moves up to 12 runs. With a constant segs (simpg.permute folds
-- table_segments at plan time) the CASEs fold away and what remains per row is a few
-- shifts and masks: that keeps generated columns cheap on bulk loads.
CREATE OR REPLACE FUNCTION simpg.apply_segments(fp bigint, segs bigint[]) RETURNS bigint
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
CREATE OR REPLACE FUNCTION simpg.permute(fp bigint, k integer, levels integer[], t integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN simpg.apply_segments(fp, simpg.table_segments(k, levels, t));

COMMENT ON FUNCTION simpg.permute(bigint, integer, integer[], integer) IS
    'Table t''s permuted fingerprint: its prefix blocks moved to the top, bit order kept inside blocks';

-- The prefix always holds the sign bit, so [lo, hi] is one contiguous signed range.
CREATE OR REPLACE FUNCTION simpg.prefix_lo(fp bigint, k integer, levels integer[], t integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN simpg.permute(fp, k, levels, t) & (-1::bigint << (64 - simpg.prefix_bits(k, levels, t)));

CREATE OR REPLACE FUNCTION simpg.prefix_hi(fp bigint, k integer, levels integer[], t integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN simpg.permute(fp, k, levels, t) | ~(-1::bigint << (64 - simpg.prefix_bits(k, levels, t)));

COMMENT ON FUNCTION simpg.prefix_lo(bigint, integer, integer[], integer) IS
    'Lowest permuted value of table t sharing the prefix of fingerprint fp';
COMMENT ON FUNCTION simpg.prefix_hi(bigint, integer, integer[], integer) IS
    'Highest permuted value of table t sharing the prefix of fingerprint fp';

CREATE OR REPLACE FUNCTION simpg.prefix_range(fp bigint, k integer, levels integer[], t integer,
                                   OUT lo bigint, OUT hi bigint)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (simpg.prefix_lo(fp, k, levels, t), simpg.prefix_hi(fp, k, levels, t));

COMMENT ON FUNCTION simpg.prefix_range(bigint, integer, integer[], integer) IS
    'Signed range [lo, hi] of table t''s permuted values that share fingerprint fp''s prefix';

-- prefix_ranges: prefix_range of every fingerprint of fps for every table t of the
-- layout (n: the 1-based position in fps; NULL elements give no rows), each table's
-- permutation worked out once: prefix_range works it out at every call unless its
-- arguments are constants (1,000 calls took 0.3 s, this 1 ms). PL/pgSQL so that its
-- query is planned once per session, not at every call as a SQL function's is.
CREATE OR REPLACE FUNCTION simpg.prefix_ranges(fps bigint[], k integer, levels integer[])
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
-- catalog
--
-- simpg keeps no table of its own. An index is what its DDL says: one stored generated
-- column simpg.permute(fp, k, levels, t) per table t of the layout, with a B-tree on
-- each. The catalog is read from PostgreSQL's own catalogs every time (as PostGIS's
-- geometry_columns is), so it cannot go stale: it goes with a dropped table or column,
-- follows a renamed one, never outlives a temporary table, restores with pg_dump as
-- the columns do, and no role can write to it, since nothing is stored.

-- prefix_expression: the generated-column expression of table t, as create_index writes
-- it; the catalog recognises a prefix column by this exact text.
-- Not STRICT, so that PostgreSQL inlines it into the queries that call it (format is
-- not strict, so a STRICT wrapper would be a function call per row); NULL in still
-- gives NULL out.
CREATE OR REPLACE FUNCTION simpg.prefix_expression(col name, k integer, levels integer[], t integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN col IS NOT NULL AND k IS NOT NULL AND levels IS NOT NULL AND t IS NOT NULL
                THEN format('simpg.permute(%I, %s, %L::integer[], %s)', col, k, levels::text, t) END;

COMMENT ON FUNCTION simpg.prefix_expression(name, integer, integer[], integer) IS
    'SQL expression of table t''s permuted column, as create_index generates it';

-- prefix_columns_of: rel's generated columns that hold a simpg permutation, one row each.
-- Contract: a column counts only if its generation expression is exactly
-- simpg.prefix_expression(its source column, k, levels, t) for a valid layout and a
-- table t of it; the source column is found by the expression's dependency (so a
-- rename is followed). pg_get_expr runs under this function's search_path, which
-- writes the function as simpg.permute whatever the caller's search_path is.
CREATE OR REPLACE FUNCTION simpg.prefix_columns_of(rel regclass)
    RETURNS TABLE (fingerprint_column name, k integer, levels integer[], t integer,
                   prefix_column name, prefix_attnum smallint, index_name name)
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE ROWS 20
    SET search_path = pg_catalog, pg_temp
    -- a catalog read of a few rows: JIT would cost a hundred times the query
    SET jit = off
AS $$
BEGIN
    RETURN QUERY
    -- LATERAL ... OFFSET 0 keeps the join order: from rel's own columns through the
    -- catalogs' indexes, never a scan of every default expression in the database
    WITH e AS MATERIALIZED (  -- rel's generated bigint columns computed by simpg.permute
        SELECT f.attname AS fingerprint_column, a.attname AS prefix_column, a.attnum AS prefix_attnum,
               ad.expr
        FROM pg_attribute AS a
        CROSS JOIN LATERAL (
            SELECT d.oid, pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attrdef AS d
            WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum
              AND (SELECT true FROM pg_depend AS dp  -- a subplan: one index probe per column
                   WHERE dp.classid = 'pg_attrdef'::regclass AND dp.objid = d.oid AND dp.objsubid = 0
                     AND dp.refclassid = 'pg_proc'::regclass
                     AND dp.refobjid = 'simpg.permute(bigint,integer,integer[],integer)'::regprocedure
                   LIMIT 1)
            OFFSET 0) AS ad
        CROSS JOIN LATERAL (  -- the one other column the expression reads
            SELECT dc.refobjsubid FROM pg_depend AS dc
            WHERE dc.classid = 'pg_attrdef'::regclass AND dc.objid = ad.oid AND dc.objsubid = 0
              AND dc.refclassid = 'pg_class'::regclass AND dc.refobjid = rel
              AND dc.refobjsubid <> a.attnum AND dc.deptype = 'n'
            OFFSET 0) AS dc
        JOIN pg_attribute AS f ON f.attrelid = rel AND f.attnum = dc.refobjsubid
        WHERE a.attrelid = rel AND a.attnum > 0 AND a.attgenerated = 's' AND NOT a.attisdropped
          AND a.atttypid = 'bigint'::regtype AND f.atttypid = 'bigint'::regtype AND NOT f.attisdropped
    ),
    -- the layout constants, read back from the text after 'simpg.permute(<column>, ':
    -- '<k>, ''{<levels>}''::integer[], <t>)' (split_part: a tenth of a regexp's time)
    a AS (
        SELECT e.*, string_to_array(substr(e.expr, length(format('simpg.permute(%I, ', e.fingerprint_column)) + 1),
                                    ', ') AS args
        FROM e
        WHERE starts_with(e.expr, format('simpg.permute(%I, ', e.fingerprint_column))
    ),
    p AS MATERIALIZED (
        SELECT a.fingerprint_column, a.prefix_column, a.prefix_attnum, a.expr,
               a.args[1]::integer AS k, split_part(a.args[2], '''', 2)::integer[] AS levels, rtrim(a.args[3], ')')::integer AS t
        FROM a
        WHERE cardinality(a.args) = 3 AND a.args[1] ~ '^\d{1,2}$'
          AND a.args[2] ~ '^''\{\d{1,2}(,\d{1,2})?\}''::integer\[\]$' AND a.args[3] ~ '^\d{1,3}\)$'
    ),
    layouts AS (  -- each valid layout once: table_count raises on an invalid one
        SELECT l.k, l.levels, simpg.table_count(l.k, l.levels) AS tables
        FROM (SELECT DISTINCT p.k, p.levels FROM p) AS l
        WHERE simpg.layout_error(l.k, l.levels) IS NULL
    )
    SELECT p.fingerprint_column, p.k, p.levels, p.t, p.prefix_column, p.prefix_attnum,
           (SELECT min(ic.relname)::name  -- a valid B-tree on exactly this column
            FROM pg_index AS i
            JOIN pg_class AS ic ON ic.oid = i.indexrelid
            WHERE i.indrelid = rel AND i.indnatts = 1 AND i.indkey[0] = p.prefix_attnum
              AND i.indexprs IS NULL AND i.indpred IS NULL AND i.indisvalid
              AND ic.relam = (SELECT am.oid FROM pg_am AS am WHERE am.amname = 'btree'))
    FROM p
    JOIN layouts AS l ON l.k = p.k AND l.levels = p.levels AND p.t < l.tables
    -- exactly the text create_index writes (not, say, simpg.permute(fp # 1, ...))
    WHERE p.expr = simpg.prefix_expression(p.fingerprint_column, p.k, p.levels, p.t);
END
$$;

COMMENT ON FUNCTION simpg.prefix_columns_of(regclass) IS
    'Generated columns of rel that hold a simpg permutation: source column, layout, table number, and its valid B-tree if any';

-- partition_disagreements: the prefix columns of a partitioned table rel that some
-- partition (at any level) computes with another expression, one row per (partition,
-- column); none when rel is not partitioned or every partition agrees.
-- PostgreSQL gives each partition rel's columns and their generation expressions,
-- and refuses to attach a table whose prefix column is missing or not generated; but
-- from PostgreSQL 16 a partition may state an expression of its own (CREATE TABLE ...
-- PARTITION OF rel (col GENERATED ALWAYS AS (...) STORED), or ATTACH PARTITION of a
-- table made so). A lookup through rel reads that partition's values with rel's prefix
-- ranges and would miss its rows, so table_indexes counts such a column as missing.
CREATE OR REPLACE FUNCTION simpg.partition_disagreements(rel regclass)
    RETURNS TABLE (partition regclass, fingerprint_column name, k integer, levels integer[], t integer,
                   prefix_column name, expected text, found text)
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE ROWS 1
    SET search_path = pg_catalog, pg_temp
    SET jit = off
AS $$
BEGIN
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = rel) IS DISTINCT FROM 'p' THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH c AS MATERIALIZED (
        SELECT p.fingerprint_column, p.k, p.levels, p.t, p.prefix_column,
               simpg.prefix_expression(p.fingerprint_column, p.k, p.levels, p.t) AS expected,
               (SELECT d.adbin::text FROM pg_attrdef AS d
                WHERE d.adrelid = rel AND d.adnum = p.prefix_attnum) AS root_bin,
               (SELECT f.attnum FROM pg_attribute AS f
                WHERE f.attrelid = rel AND f.attname = p.fingerprint_column) AS root_fp
        FROM simpg.prefix_columns_of(rel) AS p
    )
    SELECT m.relid, c.fingerprint_column, c.k, c.levels, c.t, c.prefix_column, c.expected, e.found
    FROM pg_partition_tree(rel) AS m
    CROSS JOIN c
    JOIN pg_attribute AS a ON a.attrelid = m.relid AND a.attname = c.prefix_column AND NOT a.attisdropped
    JOIN pg_attribute AS f ON f.attrelid = m.relid AND f.attname = c.fingerprint_column AND NOT f.attisdropped
    LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.attgenerated = 's'
    CROSS JOIN LATERAL (
        -- the expression's only column is the fingerprint: the same stored tree on the
        -- same column number is the same expression, without deparsing it
        SELECT CASE WHEN d.adbin::text = c.root_bin AND f.attnum = c.root_fp THEN c.expected
                    ELSE pg_get_expr(d.adbin, d.adrelid) END AS found
    ) AS e
    WHERE m.relid <> rel AND e.found IS DISTINCT FROM c.expected
    ORDER BY m.level, m.relid::regclass::text, c.fingerprint_column, c.k, c.levels, c.t;
END
$$;

COMMENT ON FUNCTION simpg.partition_disagreements(regclass) IS
    'Prefix columns of a partitioned table that a partition computes with another expression (lookups would miss its rows)';

-- table_indexes: rel's simpg indexes, complete or not: one row per (fingerprint column,
-- layout), prefix_columns and index_names in table order with NULL where one is missing.
-- The fingerprint config is the comment of the first prefix column, as
-- 'simpg fingerprint_config: <identity>' (written by register_index).
-- On a partitioned table, a prefix column that some partition computes differently
-- (simpg.partition_disagreements) counts as missing: the index is damaged.
CREATE OR REPLACE FUNCTION simpg.table_indexes(rel regclass)
    RETURNS TABLE (fingerprint_column name, k integer, levels integer[], tables integer,
                   prefix_columns name[], index_names name[], fingerprint_config text)
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE ROWS 1
    SET search_path = pg_catalog, pg_temp
    SET jit = off
AS $$
BEGIN
    RETURN QUERY
    WITH c AS MATERIALIZED (
             SELECT p.* FROM simpg.prefix_columns_of(rel) AS p
             WHERE NOT EXISTS (SELECT FROM simpg.partition_disagreements(rel) AS d
                               WHERE d.prefix_column = p.prefix_column)),
         g AS (SELECT DISTINCT c.fingerprint_column, c.k, c.levels,
                      simpg.table_count(c.k, c.levels) AS tables
               FROM c)
    SELECT g.fingerprint_column, g.k, g.levels, g.tables,
           ARRAY(SELECT (SELECT min(c.prefix_column)::name FROM c
                         WHERE c.fingerprint_column = g.fingerprint_column
                           AND c.k = g.k AND c.levels = g.levels
                           AND c.t = n)
                 FROM pg_catalog.generate_series(0, g.tables - 1) AS n ORDER BY n),
           ARRAY(SELECT (SELECT min(c.index_name)::name FROM c
                         WHERE c.fingerprint_column = g.fingerprint_column
                           AND c.k = g.k AND c.levels = g.levels
                           AND c.t = n)
                 FROM pg_catalog.generate_series(0, g.tables - 1) AS n ORDER BY n),
           (SELECT pg_catalog.substring(pg_catalog.col_description(rel, c.prefix_attnum::integer),
                                        '^simpg fingerprint_config: (.+)$')
            FROM c
            WHERE c.fingerprint_column = g.fingerprint_column
              AND c.k = g.k AND c.levels = g.levels
              AND c.t = 0
            ORDER BY c.prefix_column LIMIT 1)
    FROM g
    ORDER BY g.fingerprint_column, g.k, g.levels;
END
$$;

COMMENT ON FUNCTION simpg.table_indexes(regclass) IS
    'Every simpg index of rel, complete or not: prefix columns and B-trees in table order, NULL where one is missing';

-- The catalog: one row per complete simpg index in the database (every table of its
-- layout has its prefix column). B-trees may be missing (index_names has NULL there):
-- answers stay exact, only slower; simpg.check says so and simpg.repair rebuilds them.
-- A partitioned table is one row, its own: its partitions (at every level) have the
-- same prefix columns and B-trees, which PostgreSQL creates and attaches with them, and
-- are not listed (simpg.index_partitions lists them). A detached partition is a table
-- of its own again, with a complete index, and is listed.
CREATE VIEW simpg.indexes AS
SELECT r.oid::regclass AS indexed_table, i.fingerprint_column, i.k, i.levels,
       i.prefix_columns, i.index_names, i.fingerprint_config
FROM pg_catalog.pg_class AS r
CROSS JOIN LATERAL simpg.table_indexes(r.oid::regclass) AS i
WHERE r.oid IN (
        SELECT ad.adrelid
        FROM pg_catalog.pg_depend AS d
        JOIN pg_catalog.pg_attrdef AS ad ON ad.oid = d.objid
        WHERE d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
          AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
          AND d.refobjid = 'simpg.permute(bigint,integer,integer[],integer)'::pg_catalog.regprocedure)
  AND NOT r.relispartition
  AND pg_catalog.array_position(i.prefix_columns, NULL) IS NULL;

COMMENT ON VIEW simpg.indexes IS
    'One row per complete simpg index: its table (a partitioned table''s partitions are not listed), fingerprint column, layout, prefix columns, B-trees and fingerprint config (read from the system catalogs)';

GRANT SELECT ON simpg.indexes TO PUBLIC;

-- index_partitions: the partitions of a partitioned table rel, at every level (not rel
-- itself), and what each holds of rel's simpg indexes: one row per (partition, index of
-- rel), prefix_columns and index_names in table order as simpg.table_indexes finds them
-- on the partition, NULL where its column is computed differently from rel's
-- (simpg.partition_disagreements) or its B-tree is missing. A foreign table's B-trees
-- are on its own server, so its index_names are NULL. No rows when rel is not
-- partitioned.
CREATE OR REPLACE FUNCTION simpg.index_partitions(rel regclass)
    RETURNS TABLE (partition regclass, parent regclass, level integer, relkind "char",
                   fingerprint_column name, k integer, levels integer[],
                   prefix_columns name[], index_names name[])
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
AS $$
BEGIN
    RETURN QUERY
    SELECT m.relid, m.parentrelid, m.level, c.relkind, i.fingerprint_column, i.k, i.levels,
           coalesce(x.prefix_columns, array_fill(NULL::name, ARRAY[i.tables])),
           coalesce(x.index_names, array_fill(NULL::name, ARRAY[i.tables]))
    FROM simpg.table_indexes(rel) AS i
    CROSS JOIN pg_partition_tree(rel) AS m
    JOIN pg_class AS c ON c.oid = m.relid
    LEFT JOIN LATERAL (
        SELECT p.prefix_columns, p.index_names FROM simpg.table_indexes(m.relid) AS p
        WHERE p.fingerprint_column = i.fingerprint_column AND p.k = i.k AND p.levels = i.levels
    ) AS x ON true
    WHERE m.relid <> rel
    ORDER BY m.level, m.relid::regclass::text, i.fingerprint_column, i.k, i.levels;
END
$$;

COMMENT ON FUNCTION simpg.index_partitions(regclass) IS
    'Partitions of a partitioned table and their prefix columns and B-trees for each of its simpg indexes';

CREATE OR REPLACE FUNCTION simpg.owns(rel regclass) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE')
            FROM pg_catalog.pg_class AS c WHERE c.oid = rel);

COMMENT ON FUNCTION simpg.owns(regclass) IS 'Whether the current role owns (or is a member of the owner of) rel';
-- index functions

-- object_name: an identifier of at most 63 bytes; a longer one keeps the start of base
-- (cut on a character boundary, counted in bytes), then '_' and 8 hex digits of md5(base),
-- then suffix, so two long names never collide after PostgreSQL's truncation.
CREATE OR REPLACE FUNCTION simpg.object_name(base text, suffix text) RETURNS name
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

-- index_name: a name for a new index on rel: simpg.object_name(base, suffix), or, when a
-- relation of rel's schema (or one of taken, names about to be used) has it, the same
-- with 1, 2, ... appended, as PostgreSQL chooses the names of unnamed indexes. Table
-- a_b with column c and table a with column b_c both make base a_b_c: the second index
-- gets a_b_c_p0_idx1 instead of failing.
CREATE OR REPLACE FUNCTION simpg.index_name(rel regclass, base text, suffix text, taken name[] DEFAULT '{}') RETURNS name
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_schema oid := (SELECT c.relnamespace FROM pg_class AS c WHERE c.oid = rel);
    v_name name := simpg.object_name(base, suffix);
    v_n integer := 0;
BEGIN
    -- an INVALID index of rel itself is what a stopped concurrent build left: the
    -- statements that resume it drop that index first and build it again under its name
    WHILE v_name = ANY (coalesce(taken, '{}'))
          OR EXISTS (SELECT FROM pg_class AS c WHERE c.relnamespace = v_schema AND c.relname = v_name
                       AND NOT EXISTS (SELECT FROM pg_index AS i
                                       WHERE i.indexrelid = c.oid AND i.indrelid = rel AND NOT i.indisvalid)) LOOP
        v_n := v_n + 1;
        v_name := simpg.object_name(base, suffix || v_n);
    END LOOP;
    RETURN v_name;
END
$$;

COMMENT ON FUNCTION simpg.index_name(regclass, text, text, name[]) IS
    'Internal: object_name(base, suffix), numbered like PostgreSQL''s own index names when rel''s schema has it already';

-- not_a_partition: raises when rel is a partition. A partition has exactly its parent's
-- columns (PostgreSQL refuses to add or drop one there), so its simpg index is its
-- parent's: created, dropped and listed with the partitioned table.
CREATE OR REPLACE FUNCTION simpg.not_a_partition(rel regclass, verb text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_root regclass;
BEGIN
    SELECT t.relid INTO v_root FROM pg_partition_ancestors(rel) AS t
    WHERE NOT (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = t.relid);
    IF v_root IS NOT NULL AND v_root <> rel THEN
        RAISE EXCEPTION 'table % is a partition of %: % the simpg index on %', rel, v_root, verb, v_root
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'a partitioned table''s partitions get its prefix columns and B-trees with it (docs/partitions.md)';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.not_a_partition(regclass, text) IS
    'Raises when rel is a partition, whose simpg index is its partitioned table''s';

-- index_layout: the catalog row for (rel, col).
-- Contract: raises with a hint when the column has no simpg index, when its index is
-- damaged (a prefix column missing: answers would miss rows), and when it is ambiguous.
CREATE OR REPLACE FUNCTION simpg.index_layout(rel regclass, col name DEFAULT NULL) RETURNS simpg.indexes
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_found simpg.indexes[] := '{}';
    v_damaged text[] := '{}';
    v_index record;
    v_partition regclass;
    v_column name;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    FOR v_index IN SELECT * FROM simpg.table_indexes(rel) AS i
                   WHERE col IS NULL OR i.fingerprint_column = col LOOP
        IF array_position(v_index.prefix_columns, NULL) IS NULL THEN
            v_found := v_found || ROW(rel, v_index.fingerprint_column, v_index.k, v_index.levels,
                                      v_index.prefix_columns, v_index.index_names,
                                      v_index.fingerprint_config)::simpg.indexes;
        ELSE
            v_damaged := v_damaged || quote_ident(v_index.fingerprint_column);
        END IF;
    END LOOP;
    IF cardinality(v_found) = 1 THEN
        RETURN v_found[1];
    END IF;
    IF cardinality(v_found) > 1 THEN
        RAISE EXCEPTION 'table % has % simpg indexes%', rel, cardinality(v_found),
            CASE WHEN col IS NULL THEN '; name the fingerprint column' ELSE ' on column ' || quote_ident(col) END
            USING ERRCODE = 'ambiguous_column',
                  HINT = CASE WHEN col IS NULL THEN 'pass the column as col'
                              ELSE 'drop them with simpg.drop_index(table, column) and create one' END;
    END IF;
    IF cardinality(v_damaged) > 0 THEN
        SELECT d.partition, d.prefix_column INTO v_partition, v_column
        FROM simpg.partition_disagreements(rel) AS d
        WHERE quote_ident(d.fingerprint_column) = v_damaged[1] LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'the simpg index on %.% is damaged: partition % computes column % with another expression, so it cannot answer exactly',
                rel, v_damaged[1], v_partition, quote_ident(v_column)
                USING ERRCODE = 'SPG02',
                      HINT = 'see simpg.check(table); detach the partition, or remove the index with simpg.repair(table) or simpg.drop_index(table, column), then create it again';
        END IF;
        RAISE EXCEPTION 'the simpg index on %.% is damaged: prefix columns are missing, so it cannot answer exactly',
            rel, v_damaged[1]
            USING ERRCODE = 'SPG02',
                  HINT = 'see simpg.check(table); remove it with simpg.repair(table) or simpg.drop_index(table, column), then create it again';
    END IF;
    RAISE EXCEPTION 'no simpg index on %', CASE WHEN col IS NULL THEN rel::text ELSE rel::text || '.' || quote_ident(col) END
        USING ERRCODE = 'undefined_object',
              HINT = 'create one with simpg.create_index(table, column, k)';
END
$$;

COMMENT ON FUNCTION simpg.index_layout(regclass, name) IS
    'The simpg.indexes row of a fingerprint column (col may be omitted when the table has one); raises if there is none or it is damaged';

-- Index DDL is written here once. simpg.index_ddl returns the statements of an index;
-- simpg.create_index runs them, and so do the clients that cannot run them inside a
-- function: Alembic's create_simhash_index(concurrently=True) and simpg backfill
-- (CREATE INDEX CONCURRENTLY cannot run in a transaction). prepare_partition and repair
-- build from the same three pieces. The one other rendering is SQLAlchemy's declared
-- schema (simpg.sqlalchemy.simhash_index, which exists before any database does);
-- tests/integration/test_index_ddl.py checks that every path makes the same catalog.

-- relation_name: rel schema-qualified, as generated statements name it, so that they
-- reach rel whatever search_path runs them (a temporary table as pg_temp_N.name).
CREATE OR REPLACE FUNCTION simpg.relation_name(rel regclass) RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
            FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            WHERE c.oid = rel);

COMMENT ON FUNCTION simpg.relation_name(regclass) IS
    'rel schema-qualified and quoted, as the statements simpg generates name it';

-- prefix_column_clause: the ALTER TABLE clause that adds table t's prefix column.
CREATE OR REPLACE FUNCTION simpg.prefix_column_clause(prefix_column name, col name, k integer, levels integer[], t integer)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.format('ADD COLUMN %I bigint GENERATED ALWAYS AS (%s) STORED',
                             prefix_column, simpg.prefix_expression(col, k, levels, t));

COMMENT ON FUNCTION simpg.prefix_column_clause(name, name, integer, integer[], integer) IS
    'ADD COLUMN clause of table t''s stored generated prefix column';

-- prefix_btree_statement: CREATE INDEX of one prefix B-tree. only_parent: ON ONLY a partitioned
-- table (its partitions' indexes are attached afterwards).
CREATE OR REPLACE FUNCTION simpg.prefix_btree_statement(index_name name, rel regclass, prefix_column name,
                                             concurrently boolean DEFAULT false, only_parent boolean DEFAULT false)
    RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    -- fillfactor 100: a prefix B-tree gets random keys, so the 10% that the default
    -- keeps free for ascending inserts only makes the built index bigger
    RETURN pg_catalog.format('CREATE INDEX%s %I ON %s%s (%I) WITH (fillfactor = 100)',
                             CASE WHEN prefix_btree_statement.concurrently THEN ' CONCURRENTLY' ELSE '' END, index_name,
                             CASE WHEN only_parent THEN 'ONLY ' ELSE '' END, simpg.relation_name(rel), prefix_column);

COMMENT ON FUNCTION simpg.prefix_btree_statement(name, regclass, name, boolean, boolean) IS
    'CREATE INDEX of a prefix B-tree, as every simpg index has them (fillfactor 100)';

-- analyze_statement: statistics for the prefix columns, so the planner sees how narrow
-- a prefix range is.
CREATE OR REPLACE FUNCTION simpg.analyze_statement(rel regclass, columns name[]) RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.format('ANALYZE %s (%s)', simpg.relation_name(rel),
                             (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ' ORDER BY o)
                              FROM pg_catalog.unnest(columns) WITH ORDINALITY AS u(c, o)));

COMMENT ON FUNCTION simpg.analyze_statement(regclass, name[]) IS
    'ANALYZE of rel''s prefix columns';

-- index_ddl: the statements that give col the simpg index (k, levels), in order, one
-- row each: phase 'columns' (one ALTER TABLE adding every prefix column: one rewrite),
-- 'drop_invalid' (an INVALID index left on a prefix column by a stopped concurrent
-- build), 'btree' (table t's B-tree; on a partitioned table with concurrently, its
-- B-tree ON ONLY each partitioned table, each leaf's built CONCURRENTLY and attached,
-- as PostgreSQL's manual describes), 'analyze', 'register' (simpg.register_index,
-- which stores fingerprint_config). index_name: the index a row creates, attaches or
-- drops. With concurrently => true the statements must run outside a transaction block.
-- Contract: reads the catalogs, changes nothing, and checks no rights (the statements
-- do that when they run). What col has already of this layout is left out: prefix
-- columns and valid B-trees (found by simpg.table_indexes, whatever their names), so
-- a build that was stopped resumes. Raises when a column to add has a name that is
-- taken, and with concurrently when a partition is a foreign table.
CREATE OR REPLACE FUNCTION simpg.index_ddl(rel regclass, col name, k integer, levels integer[],
                                fingerprint_config text DEFAULT NULL, concurrently boolean DEFAULT false)
    RETURNS TABLE (phase text, t integer, index_name name, statement text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tables integer;
    v_rel text;
    v_relname name;
    v_relkind "char";
    v_have name[];
    v_built name[];
    v_columns name[] := '{}';
    v_indexes name[] := '{}';
    v_adds text[] := '{}';
    v_taken text;
    v_partitioned boolean;
BEGIN
    IF rel IS NULL OR col IS NULL OR k IS NULL OR levels IS NULL OR index_ddl.concurrently IS NULL THEN
        RAISE EXCEPTION 'table, column, k, levels and concurrently must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_tables := simpg.table_count(k, levels);
    v_rel := simpg.relation_name(rel);
    SELECT c.relname, c.relkind INTO v_relname, v_relkind FROM pg_class AS c WHERE c.oid = rel;
    SELECT i.prefix_columns, i.index_names INTO v_have, v_built FROM simpg.table_indexes(rel) AS i
    WHERE i.fingerprint_column = col AND i.k = index_ddl.k AND i.levels = index_ddl.levels;
    FOR v_t IN 0 .. v_tables - 1 LOOP
        v_columns := v_columns || coalesce(v_have[v_t + 1], simpg.object_name(col, format('_p%s', v_t)));
        v_indexes := v_indexes || coalesce(v_built[v_t + 1],
                                           simpg.index_name(rel, v_relname || '_' || col, format('_p%s_idx', v_t),
                                                            v_indexes));
        IF v_have[v_t + 1] IS NULL THEN
            v_adds := v_adds || simpg.prefix_column_clause(v_columns[v_t + 1], col, k, levels, v_t);
        END IF;
    END LOOP;
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_taken FROM pg_attribute AS a
    WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
      AND a.attname = ANY (v_columns) AND a.attname <> ALL (array_remove(coalesce(v_have, '{}'), NULL));
    IF v_taken IS NOT NULL THEN
        RAISE EXCEPTION 'table % already has columns named % that are not simpg prefix columns of %',
            rel, v_taken, quote_ident(col)
            USING ERRCODE = 'duplicate_column',
                  HINT = 'from an index of a renamed column? see simpg.check(table); drop or rename those columns first';
    END IF;
    v_partitioned := index_ddl.concurrently AND v_relkind = 'p';
    IF v_partitioned AND EXISTS (SELECT FROM pg_partition_tree(rel) AS m JOIN pg_class AS c ON c.oid = m.relid
                                 WHERE c.relkind = 'f') THEN
        RAISE EXCEPTION 'cannot build the B-trees of % concurrently: it has foreign partitions, whose B-trees are on their own servers', rel
            USING ERRCODE = 'wrong_object_type', HINT = 'build them without concurrently';
    END IF;

    IF cardinality(v_adds) > 0 THEN
        phase := 'columns';
        statement := format('ALTER TABLE %s %s', v_rel, array_to_string(v_adds, ', '));
        RETURN NEXT;
    END IF;
    -- what a stopped CREATE INDEX CONCURRENTLY left: INVALID indexes on the prefix columns
    -- kept (PostgreSQL cannot drop a partitioned one concurrently; that takes its partitions')
    RETURN QUERY
    SELECT 'drop_invalid', p.t, ic.relname,
           format('DROP INDEX%s IF EXISTS %I.%I',
                  CASE WHEN index_ddl.concurrently AND v_relkind <> 'p' THEN ' CONCURRENTLY' ELSE '' END,
                  n.nspname, ic.relname)
    FROM simpg.prefix_columns_of(rel) AS p
    JOIN pg_index AS i ON i.indrelid = rel AND p.prefix_attnum = ANY (i.indkey)
    JOIN pg_class AS ic ON ic.oid = i.indexrelid
    JOIN pg_namespace AS n ON n.oid = ic.relnamespace
    WHERE p.fingerprint_column = col AND p.k = index_ddl.k AND p.levels = index_ddl.levels AND NOT i.indisvalid
    ORDER BY p.t, ic.relname;
    FOR v_t IN 0 .. v_tables - 1 LOOP
        CONTINUE WHEN v_built[v_t + 1] IS NOT NULL;
        IF NOT v_partitioned THEN
            RETURN QUERY SELECT 'btree', v_t, v_indexes[v_t + 1],
                simpg.prefix_btree_statement(v_indexes[v_t + 1], rel, v_columns[v_t + 1], index_ddl.concurrently);
            CONTINUE;
        END IF;
        -- PostgreSQL cannot CREATE INDEX CONCURRENTLY on a partitioned table; its manual
        -- (CREATE INDEX) gives the way round: an index ON ONLY each partitioned table
        -- (invalid so far), each leaf's built concurrently and attached to its parent's,
        -- then the partitioned ones attached bottom-up. The root's index becomes valid
        -- when its last partition's is attached; until then simpg.check reports it
        -- invalid. Each index is created in its table's schema.
        RETURN QUERY
        WITH tree AS (
            SELECT m.relid, m.parentrelid, m.level, c.relkind, n.nspname, m.relid::text AS sort,
                   CASE WHEN m.level = 0 THEN v_indexes[v_t + 1]
                        ELSE simpg.index_name(m.relid, c.relname || '_' || col, format('_p%s_idx', v_t)) END AS idx
            FROM pg_partition_tree(rel) AS m
            JOIN pg_class AS c ON c.oid = m.relid
            JOIN pg_namespace AS n ON n.oid = c.relnamespace
        ),
        steps AS (
            SELECT 1 AS pass, x.level AS depth, x.sort, 0 AS sub, x.idx,
                   simpg.prefix_btree_statement(x.idx, x.relid, v_columns[v_t + 1], false, true) AS s
            FROM tree AS x WHERE x.relkind = 'p'
            UNION ALL
            SELECT 2, x.level, x.sort, 0, x.idx, simpg.prefix_btree_statement(x.idx, x.relid, v_columns[v_t + 1], true)
            FROM tree AS x WHERE x.relkind = 'r'
            UNION ALL
            SELECT CASE WHEN x.relkind = 'r' THEN 2 ELSE 3 END, CASE WHEN x.relkind = 'r' THEN x.level ELSE -x.level END,
                   x.sort, 1, x.idx, format('ALTER INDEX %I.%I ATTACH PARTITION %I.%I', p.nspname, p.idx, x.nspname, x.idx)
            FROM tree AS x JOIN tree AS p ON p.relid = x.parentrelid
            WHERE x.relkind IN ('r', 'p')
        )
        SELECT 'btree', v_t, steps.idx, steps.s FROM steps ORDER BY steps.pass, steps.depth, steps.sort, steps.sub;
    END LOOP;
    phase := 'analyze';
    t := NULL;
    index_name := NULL;
    statement := simpg.analyze_statement(rel, v_columns);
    RETURN NEXT;
    phase := 'register';
    statement := format('SELECT * FROM simpg.register_index(%L::regclass, %L::name, %s::integer, %L::integer[], %L::name[], %L::name[], %L::text)',
                        v_rel, col, k, levels, v_columns, v_indexes, fingerprint_config);
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION simpg.index_ddl(regclass, name, integer, integer[], text, boolean) IS
    'The statements that build (or finish) a simpg index: prefix columns, B-trees, ANALYZE, register_index; create_index runs them';

-- register_index: check an index whose prefix columns and B-tree indexes were made
-- outside create_index (SQLAlchemy, Alembic, simpg backfill, from the same layout math),
-- and record its fingerprint config. Nothing else is stored: the catalog is the DDL.
-- Contract: the caller owns rel; every prefix column exists, in table order, as the
-- stored generated column prefix_expression, and each index named is a valid B-tree on
-- its column; raises otherwise. Returns the catalog row.
CREATE OR REPLACE FUNCTION simpg.register_index(rel regclass, col name, k integer, levels integer[],
                                     prefix_columns name[], index_names name[],
                                     fingerprint_config text DEFAULT NULL)
    RETURNS simpg.indexes
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tables integer := simpg.table_count(k, levels);
    v_row simpg.indexes;
    v_found name[];
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
    SELECT i.prefix_columns INTO v_found FROM simpg.table_indexes(rel) AS i
    WHERE i.fingerprint_column = col AND i.k = register_index.k AND i.levels = register_index.levels;
    FOR v_t IN 0 .. v_tables - 1 LOOP
        IF v_found[v_t + 1] IS DISTINCT FROM prefix_columns[v_t + 1] THEN
            RAISE EXCEPTION 'column %.% is not the stored generated column %',
                rel, quote_ident(prefix_columns[v_t + 1]), simpg.prefix_expression(col, k, levels, v_t)
                USING ERRCODE = 'invalid_object_definition';
        END IF;
        IF NOT EXISTS (SELECT FROM pg_index AS i JOIN pg_class AS ic ON ic.oid = i.indexrelid
                       JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                       WHERE i.indrelid = rel AND ic.relname = index_names[v_t + 1] AND i.indnatts = 1
                         AND a.attname = prefix_columns[v_t + 1] AND i.indisvalid
                         AND ic.relam = (SELECT am.oid FROM pg_am AS am WHERE am.amname = 'btree')) THEN
            RAISE EXCEPTION 'index % is not a valid B-tree on %.%', quote_ident(index_names[v_t + 1]),
                rel, quote_ident(prefix_columns[v_t + 1])
                USING ERRCODE = 'invalid_object_definition';
        END IF;
    END LOOP;
    EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', rel, prefix_columns[1],
                   'simpg fingerprint_config: ' || fingerprint_config);
    v_row := simpg.index_layout(rel, col);
    IF v_row.k <> k OR v_row.levels <> levels THEN
        RAISE EXCEPTION 'column %.% has another simpg index (k=% blocks=%)', rel, quote_ident(col),
            v_row.k, array_to_string(v_row.levels, 'x')
            USING ERRCODE = 'duplicate_object';
    END IF;
    RETURN v_row;
END
$$;

COMMENT ON FUNCTION simpg.register_index(regclass, name, integer, integer[], name[], name[], text) IS
    'Check prefix columns and B-trees made outside create_index (SQLAlchemy, Alembic, backfill) and record their fingerprint config';

-- create_index: add one stored generated column and one B-tree index per table of the
-- layout.
-- Contract: col must be a bigint column of rel, owned by the caller, with no simpg index
-- (damaged leftovers included); blocks NULL picks simpg.default_levels(k, rows);
-- inner_blocks adds Google's second level. Checks everything before it changes
-- anything, then rewrites the table once (ADD COLUMN ... STORED) under an ACCESS
-- EXCLUSIVE lock.
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
    v_step record;
    v_row simpg.indexes;
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
    PERFORM simpg.not_a_partition(rel, 'create');
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF EXISTS (SELECT FROM simpg.table_indexes(rel) AS i WHERE i.fingerprint_column = col) THEN
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
    -- one rewrite (ADD COLUMN ... STORED), the B-trees, ANALYZE, register_index
    FOR v_step IN SELECT * FROM simpg.index_ddl(rel, col, k, v_levels, fingerprint_config) LOOP
        IF v_step.phase = 'register' THEN
            EXECUTE v_step.statement INTO v_row;
        ELSE
            EXECUTE v_step.statement;
        END IF;
    END LOOP;
    RETURN v_row;
END
$$;

COMMENT ON FUNCTION simpg.create_index(regclass, name, integer, integer, integer, text) IS
    'Index a bigint fingerprint column for exact within-k search: one generated prefix column and B-tree per table';

-- drop_index: remove what create_index added: every prefix column computed from col
-- (which takes their indexes with them), of a complete index or of a damaged one.
CREATE OR REPLACE FUNCTION simpg.drop_index(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_drops text;
BEGIN
    IF rel IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'table and column must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM simpg.not_a_partition(rel, 'drop');
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT string_agg(format('DROP COLUMN %I', c.prefix_column), ', ' ORDER BY c.prefix_attnum) INTO v_drops
    FROM simpg.prefix_columns_of(rel) AS c WHERE c.fingerprint_column = col;
    IF v_drops IS NULL THEN
        RAISE EXCEPTION 'no simpg index on %.%', rel, quote_ident(col)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF EXISTS (SELECT FROM simpg.table_guards(rel) AS g WHERE g.fingerprint_column = col) THEN
        RAISE EXCEPTION 'the simpg guard on %.% uses this index', rel, quote_ident(col)
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = format('drop the guard first: SELECT simpg.drop_guard(%L, %L)', rel, col);
    END IF;
    EXECUTE format('ALTER TABLE %s %s', rel, v_drops);
END
$$;

COMMENT ON FUNCTION simpg.drop_index(regclass, name) IS
    'Remove the prefix columns (and with them the B-trees) that create_index added for a column, also of a damaged index';

-- prepare_partition: give a table that is to become a partition of parent (ALTER TABLE
-- parent ATTACH PARTITION tbl ...) what PostgreSQL requires of it for parent's simpg
-- indexes: each prefix column, generated by the same expression (without them ATTACH
-- PARTITION fails with "child table is missing column"), and a B-tree on each, which
-- ATTACH PARTITION then takes as the partition's index instead of building one while it
-- holds its locks. Returns the statements it ran: none when tbl is ready, so it may run
-- again.
-- Contract: parent is a partitioned table whose simpg indexes are complete; the caller
-- owns both; tbl is not a partition, has each indexed fingerprint column as a bigint,
-- no simpg index of another layout on it, and any column named like a prefix column
-- is that generated column. Adds every missing column in one ALTER TABLE (one rewrite
-- of tbl, under an ACCESS EXCLUSIVE lock on tbl only).
CREATE OR REPLACE FUNCTION simpg.prepare_partition(parent regclass, tbl regclass) RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_index record;
    v_type regtype;
    v_relname name;
    v_found record;
    v_adds text[] := '{}';
    v_creates text[] := '{}';
    v_names name[] := '{}';  -- the B-trees about to be created
    v_name name;
    v_columns name[] := '{}';
    v_statement text;
BEGIN
    IF parent IS NULL OR tbl IS NULL THEN
        RAISE EXCEPTION 'parent and table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = parent) <> 'p' THEN
        RAISE EXCEPTION 'table % is not partitioned', parent USING ERRCODE = 'wrong_object_type';
    END IF;
    IF tbl = parent OR (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = tbl) THEN
        RAISE EXCEPTION 'table % is already a partition%', tbl,
            coalesce(' of ' || (SELECT h.inhparent::regclass::text FROM pg_inherits AS h WHERE h.inhrelid = tbl), '')
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT simpg.owns(parent) THEN
        RAISE EXCEPTION 'must be owner of table %', parent USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT simpg.owns(tbl) THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (SELECT FROM simpg.table_indexes(parent)) THEN
        RAISE EXCEPTION 'no simpg index on %', parent
            USING ERRCODE = 'undefined_object', HINT = 'create one with simpg.create_index(table, column, k)';
    END IF;
    SELECT c.relname INTO v_relname FROM pg_class AS c WHERE c.oid = tbl;
    FOR v_index IN SELECT * FROM simpg.table_indexes(parent) ORDER BY 1, 2, 3 LOOP
        IF array_position(v_index.prefix_columns, NULL) IS NOT NULL THEN
            PERFORM simpg.index_layout(parent, v_index.fingerprint_column);  -- raises: damaged
        END IF;
        SELECT a.atttypid::regtype INTO v_type FROM pg_attribute AS a
        WHERE a.attrelid = tbl AND a.attname = v_index.fingerprint_column AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'column % of table % does not exist', quote_ident(v_index.fingerprint_column), tbl
                USING ERRCODE = 'undefined_column';
        END IF;
        IF v_type <> 'bigint'::regtype THEN
            RAISE EXCEPTION 'column %.% is %, expected bigint', tbl, quote_ident(v_index.fingerprint_column), v_type
                USING ERRCODE = 'datatype_mismatch';
        END IF;
        SELECT i.k, i.levels INTO v_found FROM simpg.table_indexes(tbl) AS i
        WHERE i.fingerprint_column = v_index.fingerprint_column
          AND (i.k, i.levels) IS DISTINCT FROM (v_index.k, v_index.levels)
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'table % has a simpg index k=% blocks=% on column %, and % has k=% blocks=%',
                tbl, v_found.k, array_to_string(v_found.levels, 'x'), quote_ident(v_index.fingerprint_column),
                parent, v_index.k, array_to_string(v_index.levels, 'x')
                USING ERRCODE = 'duplicate_object',
                      HINT = format('drop it first: SELECT simpg.drop_index(%L, %L)', tbl, v_index.fingerprint_column);
        END IF;
        FOR v_t IN 0 .. v_index.tables - 1 LOOP
            IF EXISTS (SELECT FROM pg_attribute AS a
                       WHERE a.attrelid = tbl AND a.attname = v_index.prefix_columns[v_t + 1] AND NOT a.attisdropped) THEN
                IF NOT EXISTS (SELECT FROM simpg.prefix_columns_of(tbl) AS c
                               WHERE c.prefix_column = v_index.prefix_columns[v_t + 1]
                                 AND c.fingerprint_column = v_index.fingerprint_column
                                 AND c.k = v_index.k AND c.levels = v_index.levels AND c.t = v_t) THEN
                    RAISE EXCEPTION 'column %.% is not the stored generated column %', tbl,
                        quote_ident(v_index.prefix_columns[v_t + 1]),
                        simpg.prefix_expression(v_index.fingerprint_column, v_index.k, v_index.levels, v_t)
                        USING ERRCODE = 'invalid_object_definition',
                              HINT = 'drop or rename that column first';
                END IF;
            ELSE
                v_adds := v_adds || simpg.prefix_column_clause(v_index.prefix_columns[v_t + 1],
                                                               v_index.fingerprint_column, v_index.k,
                                                               v_index.levels, v_t);
            END IF;
            -- a valid B-tree on exactly this column, as ATTACH PARTITION can take it
            IF NOT EXISTS (SELECT FROM pg_index AS i
                           JOIN pg_class AS ic ON ic.oid = i.indexrelid
                           JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                           WHERE i.indrelid = tbl AND i.indnatts = 1 AND a.attname = v_index.prefix_columns[v_t + 1]
                             AND i.indexprs IS NULL AND i.indpred IS NULL AND i.indisvalid AND NOT i.indisunique
                             AND ic.relam = (SELECT am.oid FROM pg_am AS am WHERE am.amname = 'btree')) THEN
                v_name := simpg.index_name(tbl, v_relname || '_' || v_index.fingerprint_column,
                                           format('_p%s_idx', v_t), v_names);
                v_names := v_names || v_name;
                v_creates := v_creates || simpg.prefix_btree_statement(v_name, tbl, v_index.prefix_columns[v_t + 1]);
                v_columns := v_columns || v_index.prefix_columns[v_t + 1];
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(v_adds) > 0 THEN
        v_statement := format('ALTER TABLE %s %s', simpg.relation_name(tbl), array_to_string(v_adds, ', '));
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END IF;
    FOREACH v_statement IN ARRAY v_creates LOOP
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END LOOP;
    IF cardinality(v_columns) > 0 THEN
        v_statement := simpg.analyze_statement(tbl, v_columns);
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.prepare_partition(regclass, regclass) IS
    'Add a partitioned table''s simpg prefix columns and B-trees to a table about to be attached to it; returns the statements run';
-- query functions

-- snapshot_sees_table: raises serialization_failure when rel (or a partition of it) was
-- rewritten after the calling transaction took its snapshot. A table rewrite (the
-- ALTER TABLE of simpg.create_index and simpg backfill --k, TRUNCATE, VACUUM FULL) is
-- not MVCC-safe: a REPEATABLE READ or SERIALIZABLE transaction whose snapshot is older
-- sees the table empty, while the planner already sees the new columns; a lookup or
-- a report would answer "no near-duplicates" from it. The sign is cheap to read: SQL
-- sees pg_class as of the transaction's snapshot, pg_relation_filenode() the file the
-- table has now. Under READ COMMITTED every statement has a new snapshot and the two
-- agree. Retrying the transaction (what applications do with SQLSTATE 40001) fixes it.
CREATE OR REPLACE FUNCTION simpg.snapshot_sees_table(rel regclass) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_changed regclass;
    v_kind "char";
BEGIN
    SELECT c.relkind, CASE WHEN c.relfilenode <> pg_relation_filenode(c.oid) THEN c.oid END
    INTO v_kind, v_changed
    FROM pg_class AS c WHERE c.oid = rel;
    IF v_kind = 'p' THEN  -- the partitions hold the rows
        SELECT c.oid INTO v_changed
        FROM pg_partition_tree(rel) AS t JOIN pg_class AS c ON c.oid = t.relid
        WHERE c.relkind = 'r' AND c.relfilenode <> pg_relation_filenode(c.oid)
        LIMIT 1;
    END IF;
    IF v_changed IS NOT NULL THEN
        RAISE EXCEPTION 'table % was rewritten after this transaction''s snapshot was taken, so the transaction would see it empty',
            v_changed
            USING ERRCODE = 'serialization_failure',
                  HINT = 'retry the transaction (an index build, TRUNCATE or VACUUM FULL ran meanwhile)';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.snapshot_sees_table(regclass) IS
    'Raises serialization_failure (40001) when rel was rewritten after the transaction''s snapshot, which would then see it empty';

-- checked_layout: the catalog row a query or report reads, after checking k against it.
-- Contract: raises for a NULL table, k NULL or negative, k above the index's radius,
-- a column with no simpg index (simpg.index_layout's error), or a snapshot older than
-- a rewrite of the table (simpg.snapshot_sees_table's serialization_failure).
CREATE OR REPLACE FUNCTION simpg.checked_layout(rel regclass, k integer, col name DEFAULT NULL)
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
    PERFORM simpg.snapshot_sees_table(rel);  -- before the catalog, which it may contradict
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

-- layout_is: true when rel.col's simpg index has exactly this layout, else an error with
-- SQLSTATE SPG01. Clients that keep a layout in memory (simpg.psycopg's handles) put it
-- in their lookups, evaluated once per statement: an index dropped and re-created with
-- another layout reuses the prefix column names for other permutations, and a lookup
-- with the old ranges would silently miss rows. simpg.psycopg reads the layout again
-- and repeats the lookup when it sees SPG01.
-- It reads a table, yet is declared IMMUTABLE on purpose: with constant arguments
-- PostgreSQL then checks it once when it plans a statement, not at every execution
-- (a tenth of a 10M-row lookup on a connection with generic plans). That is enough:
-- a new layout always changes the table's columns, which makes PostgreSQL plan every
-- cached statement on the table again. Do not use it in an index or a generated column.
CREATE OR REPLACE FUNCTION simpg.layout_is(rel regclass, col name, k integer, levels integer[])
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    -- it runs whenever PostgreSQL plans a lookup (each SQLAlchemy within()): its own
    -- catalog reads are planned once per session, not at each call
    SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_tables integer;
    v_head text;
BEGIN
    -- first: a snapshot older than a rewrite also sees an older catalog
    PERFORM simpg.snapshot_sees_table(rel);
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = rel) IS DISTINCT FROM 'p' THEN
        -- what table_indexes would find, at a fraction of its cost: for every table t of the
        -- layout, a stored bigint column computed by exactly create_index's expression
        -- (which names col; a column of another type would be cast in it)
        v_tables := simpg.table_count(k, levels);  -- an invalid layout raises its error here
        -- prefix_expression(col, k, levels, t) is v_head, then t and ')'
        v_head := left(simpg.prefix_expression(col, k, levels, 0), -2);
        PERFORM WHERE (SELECT count(DISTINCT e.expr)
                       FROM pg_attribute AS a
                       -- LATERAL ... OFFSET 0: through pg_attrdef's index, one column at a time
                       CROSS JOIN LATERAL (SELECT pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attrdef AS d
                                           WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum OFFSET 0) AS e
                       WHERE a.attrelid = rel AND a.attnum > 0 AND a.attgenerated = 's' AND NOT a.attisdropped
                         AND a.atttypid = 'bigint'::regtype
                         -- prefix_expression(col, k, levels, t) for a table t of the layout
                         AND e.expr = ANY (ARRAY(SELECT v_head || x.t || ')' FROM generate_series(0, v_tables - 1) AS x(t))))
                      = v_tables;
    ELSE  -- partitions must also agree (simpg.partition_disagreements)
        PERFORM FROM simpg.table_indexes(rel) AS i
        WHERE i.fingerprint_column = col AND i.k = layout_is.k AND i.levels = layout_is.levels
          AND array_position(i.prefix_columns, NULL) IS NULL;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the simpg index on %.% is no longer the k=% blocks=% layout this lookup was made for',
            rel, quote_ident(col), k, array_to_string(levels, 'x')
            USING ERRCODE = 'SPG01', HINT = 'read the layout again (SimHashColumn.refresh())';
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION simpg.layout_is(regclass, name, integer, integer[]) IS
    'True if rel.col''s simpg index has this k and levels, else an error (SQLSTATE SPG01) telling a client to read the layout again';

-- near_query: the statement simpg.near runs, for EXPLAIN and for reports that want it.
-- Contract: raises for a NULL fingerprint, k < 0, k above the layout's radius, or a
-- column with no simpg index. The prefix ranges are literals, so each table's
-- condition is a plain B-tree range scan; the OR of them becomes a BitmapOr, which
-- also removes rows found through several tables.
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
        v_ranges := v_ranges || format('t.%I BETWEEN %L::bigint AND %L::bigint', v_row.prefix_columns[t + 1],
                                       v_permuted & ~v_low_mask, v_permuted | v_low_mask);
    END LOOP;
    -- every literal typed: an untyped 5 would be an integer, and a function or operator
    -- taking (bigint, integer) that someone adds could then be chosen over simpg's
    RETURN format('SELECT t.* FROM %s AS t WHERE (%s) AND simpg.hamming(t.%I, %L::bigint) <= %s::integer '
                  'ORDER BY simpg.hamming(t.%I, %L::bigint)',
                  rel, array_to_string(v_ranges, ' OR '),
                  v_row.fingerprint_column, fp, k, v_row.fingerprint_column, fp);
END
$$;

COMMENT ON FUNCTION simpg.near_query(regclass, bigint, integer, name) IS
    'The index-backed SQL statement that finds the rows within distance k of fp';

-- layout_is, for the statements simpg.near prepares: also the prefix columns, by name and
-- in table order, and with sole, that col's index is the table's only one (what a call
-- that names no column relies on). Evaluated when the statement is planned, as above.
CREATE OR REPLACE FUNCTION simpg.layout_is(rel regclass, col name, k integer, levels integer[], prefix_columns name[],
                                sole boolean)
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM simpg.snapshot_sees_table(rel);
    PERFORM FROM simpg.table_indexes(rel) AS i
    WHERE i.fingerprint_column = col AND i.k = layout_is.k AND i.levels = layout_is.levels
      AND i.prefix_columns = layout_is.prefix_columns
      AND (NOT sole OR (SELECT count(*) FROM simpg.table_indexes(rel)) = 1);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the simpg index on %.% is no longer the k=% blocks=% layout this lookup was made for',
            rel, quote_ident(col), k, array_to_string(levels, 'x')
            USING ERRCODE = 'SPG01', HINT = 'read the layout again (SimHashColumn.refresh())';
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION simpg.layout_is(regclass, name, integer, integer[], name[], boolean) IS
    'True if rel.col''s simpg index has this k, levels and prefix columns (and, with sole, is rel''s only one), else an error (SQLSTATE SPG01)';

-- lookup_lead: how lookup_statement's text begins, up to the layout it states (the
-- arguments of layout_is after the table). simpg.duplicates's kinds begin as near's.
-- A SQL-standard body, bound when created: no search_path to pin. Not STRICT, so that
-- it is inlined (CASE is not strict); NULL in gives NULL out all the same.
CREATE OR REPLACE FUNCTION simpg.lookup_lead(kind text, rel regclass) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE
        WHEN kind IN ('near', 'duplicates', 'banded')
            THEN format('SELECT t.* FROM %s AS t WHERE simpg.layout_is(%s::oid::regclass, ', rel, rel::oid)
        WHEN kind = 'many' THEN format('SELECT q.i::integer, t FROM unnest($1) WITH ORDINALITY AS q(fp, i) '
                                'JOIN %s AS t ON simpg.layout_is(%s::oid::regclass, ', rel, rel::oid)
    END;

COMMENT ON FUNCTION simpg.lookup_lead(text, regclass) IS
    'How the statement simpg.near (kind near), simpg.near_many (kind many) or simpg.duplicates (kinds duplicates and banded) prepares begins, up to the layout it states';

-- lookup_parameters: the parameter types of a kind's prepared statement, as PREPARE
-- states them (prepared_lookup compares the text, prepare_lookup writes it).
CREATE OR REPLACE FUNCTION simpg.lookup_parameters(kind text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE kind
        WHEN 'near' THEN '(bigint, integer)'
        WHEN 'many' THEN '(bigint[], integer)'
        WHEN 'duplicates' THEN '(bigint, integer, bit(256), bigint[], integer)'
        WHEN 'banded' THEN '(bigint, integer, bit(256), bigint[], integer)'
    END;

COMMENT ON FUNCTION simpg.lookup_parameters(text) IS
    'The parameter types of the statement a kind of lookup prepares, as PREPARE states them';

-- lookup_statement: the parameterised statement simpg.near (kind 'near': $1 the
-- fingerprint, $2 k) or simpg.near_many (kind 'many': $1 the fingerprints, $2 k)
-- prepares for an index of this layout. The ranges are simpg.prefix_lo/prefix_hi of
-- the parameter with constant layout arguments, which PostgreSQL folds when it plans,
-- so one generic plan serves every fingerprint. The layout it was made for is stated
-- in it, as layout_is(...), checked whenever PostgreSQL plans it.
-- simpg.duplicates's kinds ($1 the fingerprint, $2 k, $3 the sketch, $4 the band keys,
-- $5 the largest sketch distance) confirm near's rows by sketch_column; kind 'banded'
-- also finds the rows sharing a band key (band_columns: band i compared with $4[i]),
-- in the same OR as the prefix ranges (one BitmapOr of the prefix and band B-trees),
-- and keeps them at any fingerprint distance, as SimHashColumn.duplicates does.
CREATE OR REPLACE FUNCTION simpg.lookup_statement(kind text, rel regclass, col name, k integer, levels integer[],
                                       prefix_columns name[], sole boolean, sketch_column name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fp text := CASE WHEN kind IN ('near', 'duplicates', 'banded') THEN '$1' WHEN kind = 'many' THEN 'q.fp' END;
    v_levels text := quote_literal(levels::text);
    v_text text;
    v_shared text;  -- kind banded: the band equalities, ORed
BEGIN
    IF v_fp IS NULL THEN
        RAISE EXCEPTION 'kind must be near, many, duplicates or banded, got %', coalesce(kind, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- simpg.near checks a prepared statement against this text at every call
    -- (prepared_lookup), so it is built in one pass of plain string operations
    v_text := simpg.lookup_lead(kind, rel)
        || format('%L::name, %s, %s::integer[], %L::name[], %s) AND (', col, k, v_levels, prefix_columns,
                  CASE WHEN sole THEN 'true' ELSE 'false' END);
    FOR v_t IN 1 .. cardinality(prefix_columns) LOOP
        v_text := v_text || CASE WHEN v_t > 1 THEN ' OR ' ELSE '' END
            || format('t.%1$I BETWEEN simpg.prefix_lo(%2$s, %3$s, %4$s::integer[], %5$s) '
                      'AND simpg.prefix_hi(%2$s, %3$s, %4$s::integer[], %5$s)',
                      prefix_columns[v_t], v_fp, k, v_levels, v_t - 1);
    END LOOP;
    IF kind IN ('duplicates', 'banded') THEN
        IF kind = 'banded' THEN
            SELECT string_agg(format('t.%I = $4[%s]', b.band_column, b.i), ' OR ' ORDER BY b.i) INTO v_shared
            FROM simpg.band_columns(sketch_column) AS b;
            v_text := v_text || ' OR ' || v_shared;
        END IF;
        -- a row found through a band needs a fingerprint (its distance is reported) and may
        -- be any number of bits away
        RETURN v_text
            || CASE WHEN kind = 'banded'
                    THEN format(') AND t.%I IS NOT NULL AND (simpg.hamming(t.%I, $1) <= $2 OR %s)', col, col, v_shared)
                    ELSE format(') AND simpg.hamming(t.%I, $1) <= $2', col) END
            || format(' AND bit_count(t.%1$I # $3) <= $5 ORDER BY bit_count(t.%1$I # $3), simpg.hamming(t.%2$I, $1)',
                      sketch_column, col);
    END IF;
    RETURN v_text
        || format(') AND simpg.hamming(t.%I, %s) <= $2 ORDER BY ', col, v_fp)
        || CASE kind WHEN 'many' THEN 'q.i, ' ELSE '' END
        || format('simpg.hamming(t.%I, %s)', col, v_fp);
END
$$;

COMMENT ON FUNCTION simpg.lookup_statement(text, regclass, name, integer, integer[], name[], boolean, name) IS
    'The parameterised statement simpg.near (kind near), simpg.near_many (kind many) or simpg.duplicates (kinds duplicates and banded, with sketch_column) prepares for this layout';

-- unquote_literal: the value of a string literal as quote_literal writes it ('...' or E'...')
CREATE OR REPLACE FUNCTION simpg.unquote_literal(literal text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN starts_with(literal, 'E''')
                THEN replace(replace(substr(literal, 3, length(literal) - 3), '''''', ''''), '\\', '\')
                ELSE replace(substr(literal, 2, length(literal) - 2), '''''', '''') END;

COMMENT ON FUNCTION simpg.unquote_literal(text) IS
    'The value of a string literal as quote_literal writes it';

-- statement_radius: the radius of a session's prepared lookup statement, given its
-- name and text (pg_prepared_statements), if simpg can trust it; NULL if not. Anyone in
-- the session could have prepared a statement of that name, and it runs with the
-- caller's rights, so it is trusted only if its text is exactly lookup_statement's for
-- the layout it states. That layout follows layout_is's table, up to the first ') AND (':
-- '<col>'::name, <k>, '{<levels>}'::integer[], '{<prefix columns>}'::name[], <sole>) AND (
-- Whether it is still the table's is checked by layout_is whenever PostgreSQL plans the
-- statement, and any change to the table's columns makes PostgreSQL plan it again.
-- It runs at every lookup, so the common case is read with split_part and checked by
-- the comparison alone (a claim lookup_statement would not write fails a cast or the
-- comparison); only names that need quoting take the regular expression, which costs
-- as much again.
CREATE OR REPLACE FUNCTION simpg.statement_radius(kind text, rel regclass, sketch_column name, statement_name text,
                                       statement text)
    RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_head text;
    v_rest text;
    v_claim text[];
BEGIN
    IF statement IS NULL OR statement_name IS NULL THEN
        RETURN NULL;
    END IF;
    v_head := format('PREPARE %I%s AS ', statement_name, simpg.lookup_parameters(kind));
    v_rest := split_part(statement, format('simpg.layout_is(%s::oid::regclass, ', rel::oid), 2);
    v_claim := string_to_array(split_part(v_rest, ') AND (', 1), ', ');
    BEGIN
        IF cardinality(v_claim) = 5 AND left(v_claim[1], 1) = '''' AND statement = v_head
               || simpg.lookup_statement(kind, rel, substr(v_claim[1], 2, length(v_claim[1]) - 8)::name,
                                         v_claim[2]::integer, substr(v_claim[3], 2, length(v_claim[3]) - 13)::integer[],
                                         substr(v_claim[4], 2, length(v_claim[4]) - 10)::name[], v_claim[5]::boolean,
                                         sketch_column) THEN
            RETURN v_claim[2]::integer;
        END IF;
    EXCEPTION WHEN data_exception THEN  -- a claim lookup_statement would not write (a bad number, a NULL name)
        NULL;
    END;
    -- names lookup_statement quotes: the claim's literals may hold ', ' and doubled quotes
    v_claim := regexp_match(v_rest,
        '^(E?''(?:[^'']|'''')*'')::name, (\d{1,2}), ''(\{\d{1,2}(?:,\d{1,2})?\})''::integer\[\], '
        '(E?''(?:[^'']|'''')*'')::name\[\], (true|false)\) AND \(');
    IF v_claim IS NOT NULL AND array_position(simpg.unquote_literal(v_claim[4])::name[], NULL) IS NULL
       AND statement = v_head || simpg.lookup_statement(kind, rel, simpg.unquote_literal(v_claim[1])::name,
                                                        v_claim[2]::integer, v_claim[3]::integer[],
                                                        simpg.unquote_literal(v_claim[4])::name[],
                                                        v_claim[5]::boolean, sketch_column) THEN
        RETURN v_claim[2]::integer;
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.statement_radius(text, regclass, name, text, text) IS
    'Internal: the radius of a prepared lookup statement of this name and text if it is exactly one simpg prepares, else NULL';

-- lookup_statement_name: the name of the session's prepared statement (SQL PREPARE) for
-- a kind of lookup on a column of rel (its attnum; 0: the table's only index), with the
-- sketch column's attnum for simpg.duplicates's kinds.
-- STABLE, as format() is: an IMMUTABLE SQL function calling it is not inlined, and runs
-- its own planner once per transaction (a tenth of a lookup).
CREATE OR REPLACE FUNCTION simpg.lookup_statement_name(kind text, rel regclass, col_attnum smallint, sketch_attnum smallint)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN pg_catalog.format('simpg_%s_%s_%s', kind, rel::oid, col_attnum)
           || CASE WHEN sketch_attnum IS NULL THEN '' ELSE '_' || sketch_attnum END;

COMMENT ON FUNCTION simpg.lookup_statement_name(text, regclass, smallint, smallint) IS
    'Internal: the name of the session''s prepared statement for a kind of lookup on a table';

-- prepared_lookup: the name of this session's prepared statement for a kind of lookup on
-- rel.col, and the radius it was made for; a NULL radius when there is none that simpg
-- can trust (simpg.statement_radius; prepare_lookup then makes one). The statement
-- outlives the call, so later calls skip the catalog, the layout arithmetic and the
-- planner. simpg.duplicates's statements are per sketch column too. A column that does
-- not exist gives no name (prepare_lookup says why).
CREATE OR REPLACE FUNCTION simpg.prepared_lookup(kind text, rel regclass, col name, sketch_column name DEFAULT NULL,
                                      OUT statement_name text, OUT radius integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    -- plans made once per session: a custom plan per call would cost more than the lookup
    SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    -- scalar subqueries, not joins: a hash join's table costs more than the whole lookup
    SELECT s.name, simpg.statement_radius(kind, rel, sketch_column, s.name,
                                          (SELECT p.statement FROM pg_prepared_statements AS p WHERE p.name = s.name))
    INTO statement_name, radius
    FROM (SELECT CASE WHEN col IS NULL THEN 0::smallint
                      ELSE (SELECT a.attnum FROM pg_attribute AS a
                            WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped) END
                     AS col_attnum,
                 (SELECT a.attnum FROM pg_attribute AS a
                  WHERE a.attrelid = rel AND a.attname = sketch_column AND a.attnum > 0 AND NOT a.attisdropped)
                     AS sketch_attnum) AS a
    CROSS JOIN LATERAL (
        SELECT CASE WHEN a.col_attnum IS NOT NULL AND (sketch_column IS NULL OR a.sketch_attnum IS NOT NULL)
                    THEN simpg.lookup_statement_name(kind, rel, a.col_attnum, a.sketch_attnum) END AS name) AS s;
END
$$;

COMMENT ON FUNCTION simpg.prepared_lookup(text, regclass, name, name) IS
    'Name of the session''s prepared lookup statement on rel and its radius (NULL if there is none simpg made)';

-- session_lookup: what the lookup functions (simpg.near, near_many, duplicates) need
-- before they run their statement, in one call: the table whose row type tbl is
-- (simpg.lookup_rel), checked against the transaction's snapshot
-- (simpg.snapshot_sees_table), and its prepared_lookup. The common case (a plain table
-- not rewritten, the table's only index) is one catalog query: a lookup itself reads
-- only a few index pages, so each query here is a noticeable part of it.
CREATE OR REPLACE FUNCTION simpg.session_lookup(kind text, tbl anyelement, col name, sketch_column name DEFAULT NULL,
                                     OUT rel regclass, OUT statement_name text, OUT radius integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    -- plans made once per session: a custom plan per call would cost more than the lookup
    SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_current boolean;
    v_text text;
BEGIN
    SELECT c.oid, c.relkind = 'r' AND c.relfilenode = pg_relation_filenode(c.oid), s.name,
           (SELECT p.statement FROM pg_prepared_statements AS p WHERE p.name = s.name)  -- no hash join: see prepared_lookup
    INTO rel, v_current, statement_name, v_text
    FROM pg_type AS typ
    JOIN pg_class AS c ON c.oid = typ.typrelid
    CROSS JOIN LATERAL (SELECT simpg.lookup_statement_name(kind, c.oid, 0::smallint, NULL) AS name) AS s
    WHERE typ.oid = pg_typeof(tbl);
    IF rel IS NULL THEN
        rel := simpg.lookup_rel(tbl);  -- raises: not a table's row type
    END IF;
    IF NOT v_current THEN  -- partitioned, or rewritten: raises if the snapshot is older
        PERFORM simpg.snapshot_sees_table(rel);
    END IF;
    IF col IS NULL AND sketch_column IS NULL THEN
        radius := simpg.statement_radius(kind, rel, NULL, statement_name, v_text);
    ELSE
        SELECT l.statement_name, l.radius INTO statement_name, radius
        FROM simpg.prepared_lookup(kind, rel, col, sketch_column) AS l;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.session_lookup(text, anyelement, name, name) IS
    'Internal: the table of a lookup function''s first argument, checked against the snapshot, and the session''s prepared statement for it';

-- prepare_lookup: (re)prepares prepared_lookup's statement from the catalog.
-- Contract: raises for what checked_layout raises (k above the radius, no such index),
-- and for simpg.duplicates's kinds what checked_sketch_columns raises.
CREATE OR REPLACE FUNCTION simpg.prepare_lookup(kind text, rel regclass, k integer, col name, sketch_column name DEFAULT NULL,
                                     OUT statement_name text, OUT radius integer)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
BEGIN
    IF kind IN ('duplicates', 'banded') THEN
        PERFORM simpg.checked_sketch_columns(rel, sketch_column, kind = 'banded');
    END IF;
    statement_name := (simpg.prepared_lookup(kind, rel, col, sketch_column)).statement_name;
    IF EXISTS (SELECT FROM pg_prepared_statements AS p WHERE p.name = statement_name) THEN
        EXECUTE format('DEALLOCATE %I', statement_name);
    END IF;
    EXECUTE format('PREPARE %I%s AS ', statement_name, simpg.lookup_parameters(kind))
            || simpg.lookup_statement(kind, rel, v_row.fingerprint_column, v_row.k, v_row.levels,
                                      v_row.prefix_columns, col IS NULL, sketch_column);
    radius := v_row.k;
END
$$;

COMMENT ON FUNCTION simpg.prepare_lookup(text, regclass, integer, name, name) IS
    'Prepares the session''s lookup statement on rel from the catalog; its name and radius';

-- lookup_rel: the table whose row type tbl is (the polymorphic first argument of near)
CREATE OR REPLACE FUNCTION simpg.lookup_rel(tbl anyelement) RETURNS regclass
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_rel regclass;
BEGIN
    SELECT nullif(typ.typrelid, 0) INTO v_rel FROM pg_type AS typ WHERE typ.oid = pg_typeof(tbl);
    IF v_rel IS NULL THEN
        RAISE EXCEPTION 'first argument must be a table row type such as NULL::articles, got %', pg_typeof(tbl)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_rel;
END
$$;

COMMENT ON FUNCTION simpg.lookup_rel(anyelement) IS
    'The table whose row type the argument has (NULL::articles gives articles)';

-- near: every row of a table within distance k of fp, nearest first, read through the
-- prefix indexes. Polymorphic: SELECT * FROM simpg.near(NULL::articles, 1234, 3).
-- The distance of a row is simpg.hamming(its fingerprint column, fp). It runs the
-- session's prepared statement for the table (simpg.session_lookup) with its one
-- generic plan: a call costs about what a client's own prepared statement does.
CREATE OR REPLACE FUNCTION simpg.near(tbl anyelement, fp bigint, k integer, col name DEFAULT NULL)
    RETURNS SETOF anyelement
    LANGUAGE plpgsql VOLATILE  -- it may PREPARE
    SET search_path = pg_catalog, pg_temp
    -- tiny tables would otherwise be scanned sequentially; the indexes are always right here
    SET enable_seqscan = off
    SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_lookup record;
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF k IS NULL OR k < 0 THEN
        RAISE EXCEPTION 'k must be a non-negative integer, got %', coalesce(k::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lookup := simpg.session_lookup('near', tbl, col);
    IF v_lookup.radius IS NULL OR k > v_lookup.radius THEN  -- k > radius: the index may be wider now
        v_lookup.statement_name := (simpg.prepare_lookup('near', v_lookup.rel, k, col)).statement_name;
    END IF;
    BEGIN
        RETURN QUERY EXECUTE format('EXECUTE %I(%L::bigint, %s::integer)', v_lookup.statement_name, fp, k);
    -- the table changed since the statement was prepared: PostgreSQL, planning it again,
    -- finds its stated layout wrong (SPG01), a prefix column gone, or other columns
    -- ("cached plan must not change result type")
    EXCEPTION WHEN SQLSTATE 'SPG01' OR undefined_column OR feature_not_supported THEN
        v_lookup.statement_name := (simpg.prepare_lookup('near', v_lookup.rel, k, col)).statement_name;
        RETURN QUERY EXECUTE format('EXECUTE %I(%L::bigint, %s::integer)', v_lookup.statement_name, fp, k);
    END;
END
$$;

COMMENT ON FUNCTION simpg.near(anyelement, bigint, integer, name) IS
    'Rows of the table whose row type is given, within Hamming distance k of fp, nearest first';

-- near_many: simpg.near for many fingerprints in one call: each row found, with query,
-- the 1-based position in fps of the fingerprint it is near; by query, then nearest
-- first. NULL elements find nothing.
--   SELECT n.query, (n.hit).id FROM simpg.near_many(NULL::articles, ARRAY[1, 2], 3) AS n
CREATE OR REPLACE FUNCTION simpg.near_many(tbl anyelement, fps bigint[], k integer, col name DEFAULT NULL)
    RETURNS TABLE (query integer, hit anyelement)
    LANGUAGE plpgsql VOLATILE  -- it may PREPARE
    SET search_path = pg_catalog, pg_temp
    SET enable_seqscan = off
    SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_lookup record;
BEGIN
    IF fps IS NULL THEN
        RAISE EXCEPTION 'fingerprints must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF k IS NULL OR k < 0 THEN
        RAISE EXCEPTION 'k must be a non-negative integer, got %', coalesce(k::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lookup := simpg.session_lookup('many', tbl, col);
    IF v_lookup.radius IS NULL OR k > v_lookup.radius THEN
        v_lookup.statement_name := (simpg.prepare_lookup('many', v_lookup.rel, k, col)).statement_name;
    END IF;
    BEGIN
        RETURN QUERY EXECUTE format('EXECUTE %I(%L::bigint[], %s::integer)', v_lookup.statement_name, fps, k);
    EXCEPTION WHEN SQLSTATE 'SPG01' OR undefined_column OR feature_not_supported THEN
        v_lookup.statement_name := (simpg.prepare_lookup('many', v_lookup.rel, k, col)).statement_name;
        RETURN QUERY EXECUTE format('EXECUTE %I(%L::bigint[], %s::integer)', v_lookup.statement_name, fps, k);
    END;
END
$$;

COMMENT ON FUNCTION simpg.near_many(anyelement, bigint[], integer, name) IS
    'Rows within Hamming distance k of each of fps, with the 1-based position in fps of the fingerprint each is near';
-- duplicates: lookups confirmed by sketches, with band keys as a second candidate source
-- (docs/fingerprinting.md, "Online lookups"). The statement is lookup_statement's kinds
-- duplicates and banded, prepared once per session like simpg.near's.

-- The decision every path that a sketch confirms makes (docs/fingerprinting.md, "One
-- decision"): a pair is a near-duplicate when its fingerprints are within k bits or it
-- shares a band key, and its sketches differ in at most max_sketch_distance bits. The
-- numbers Python defines too (simpg.fingerprint.DEDUP_K, minhash.MAX_SKETCH_DISTANCE and
-- BANDS); tests/integration/test_duplicates.py and test_decision_paths.py check that both
-- sides agree.
CREATE OR REPLACE FUNCTION simpg.dedup_k() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 4;

COMMENT ON FUNCTION simpg.dedup_k() IS
    'The fingerprint radius of the sketch-confirmed decision (simpg dedup''s default k, simpg_documents'' index radius)';

CREATE OR REPLACE FUNCTION simpg.max_sketch_distance() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 36;

COMMENT ON FUNCTION simpg.max_sketch_distance() IS
    'The largest number of differing sketch bits that confirms a duplicate by default (estimated Jaccard >= 0.72)';

CREATE OR REPLACE FUNCTION simpg.band_count() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 4;

COMMENT ON FUNCTION simpg.band_count() IS
    'The number of band keys a document has (simpg.fingerprint.sketch_and_bands)';

-- with_bands: whether a decision confirmed by sketch_column also takes the rows that share
-- a band key as candidates: bands as given, and by default (NULL) whenever a sketch
-- confirms, as simpg dedup decides. Without a sketch column, never.
CREATE OR REPLACE FUNCTION simpg.with_bands(sketch_column name, bands boolean) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(bands, sketch_column IS NOT NULL);

COMMENT ON FUNCTION simpg.with_bands(name, boolean) IS
    'Whether a report or guard confirmed by sketch_column uses band keys: bands, by default (NULL) whenever a sketch confirms';

-- band_columns: the band key columns of a sketch column, <sketch_column>_b0 .. _b3, with
-- i the 1-based position of the key in a bands array.
-- A SQL-standard body, bound when created: no search_path to pin.
CREATE OR REPLACE FUNCTION simpg.band_columns(sketch_column name)
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
CREATE OR REPLACE FUNCTION simpg.checked_sketch_columns(rel regclass, sketch_column name, banded boolean) RETURNS void
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
-- the rows within k bits of fp, or with bands (simpg.fingerprint.sketch_and_bands) sharing
-- a band key (band i of the row equal to bands[i]), whose sketch differs from sketch in
-- at most max_sketch_distance bits. Nearest sketch first, then nearest fingerprint. Rows
-- without a fingerprint or a sketch are not returned; NULL band keys match nothing.
--   SELECT * FROM simpg.duplicates(NULL::articles, 1234, 4, '<sketch>'::bit(256), '{1,2,3,4}')
CREATE OR REPLACE FUNCTION simpg.duplicates(tbl anyelement, fp bigint, k integer, sketch bit(256), bands bigint[] DEFAULT NULL,
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
    v_kind text := CASE WHEN bands IS NULL THEN 'duplicates' ELSE 'banded' END;
    v_lookup record;
    v_arguments text;
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF k IS NULL OR k < 0 THEN
        RAISE EXCEPTION 'k must be a non-negative integer, got %', coalesce(k::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch IS NULL THEN
        RAISE EXCEPTION 'sketch must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF length(sketch) <> 256 THEN  -- the cast to bit(256) below would pad or cut it
        RAISE EXCEPTION 'sketch must have 256 bits, got %', length(sketch)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_sketch_distance IS NULL OR max_sketch_distance NOT BETWEEN 0 AND 256 THEN
        RAISE EXCEPTION 'max_sketch_distance must be an integer from 0 to 256, got %',
            coalesce(max_sketch_distance::text, 'null') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch_column IS NULL THEN
        RAISE EXCEPTION 'sketch_column must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF bands IS NOT NULL THEN
        IF array_ndims(bands) IS DISTINCT FROM 1 OR cardinality(bands) <> simpg.band_count() THEN
            RAISE EXCEPTION 'expected % band keys (one per band column), got %', simpg.band_count(), bands
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF array_position(bands, NULL) IS NOT NULL THEN
            RAISE EXCEPTION 'band keys must not be null, got %', bands
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = 'a document without band keys is looked up with bands => NULL';
        END IF;
        bands := bands[:];  -- subscripts from 1, whatever the array's own lower bound
    END IF;
    v_lookup := simpg.session_lookup(v_kind, tbl, col, sketch_column);
    IF v_lookup.radius IS NULL OR k > v_lookup.radius THEN  -- k > radius: the index may be wider now
        v_lookup.statement_name := (simpg.prepare_lookup(v_kind, v_lookup.rel, k, col, sketch_column)).statement_name;
    END IF;
    v_arguments := format('(%L::bigint, %s::integer, %L::bit(256), %L::bigint[], %s::integer)',
                          fp, k, sketch, bands, max_sketch_distance);
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
-- near-unique guard (issue 16): no two committed rows of a table within k bits, under
-- any number of concurrent writers, without serialising them.
--
-- Two fingerprints within the index's k share the full prefix of at least one of its
-- permuted tables. So a writer takes a transaction-level advisory lock for each table's
-- prefix of the fingerprint it writes, in one fixed order, and only then looks for a
-- stored row within k: the writers that could conflict wait for each other, nobody else
-- does (two unrelated prefixes that hash to one lock key only cost a wait). The look
-- runs after the locks, as a new statement, so at READ COMMITTED it sees every row
-- committed by a writer it waited for. At SERIALIZABLE the look is a read of the index
-- ranges that PostgreSQL's serializable snapshot isolation watches: a conflicting
-- writer it cannot see makes one of the two fail with 40001 (retry). REPEATABLE READ has
-- neither and is refused.

-- The locks (issue 27, class 4d). Advisory locks would do, but their keys are public:
-- any role, even one that may not read the table, could compute a guard's keys from the
-- catalogs (or read them in pg_locks) and hold them, blocking every guarded write. So a
-- guarded write locks rows of simpg.guard_locks instead: one row per (guarded table,
-- slot), a slot a 16-bit hash of (permuted table, prefix) or (band, band key), made when
-- first needed (so dump and restore, a crash or a new table only cost one insert).
-- Row-level security lets a role see, make and lock only the rows of tables it may write
-- (INSERT or UPDATE on some column): a stranger, or a reader, can take none of them.
-- The privileges are column-level only: LOCK TABLE needs a table-level one, so nobody
-- but the owner can lock the whole table. A writer can hold rows of its own table, and
-- so block other writers of it, as it can in plain PostgreSQL (an uncommitted row with a
-- unique key makes every writer of that key wait). Nothing is decided from the rows: a
-- row lost or made by hand costs a wait or one more insert, never a missed row. The
-- table is UNLOGGED (no WAL for the locks; emptied after a crash, then made again).
-- At most 65,536 rows per guarded table; two unrelated writes that share a slot wait
-- for each other (about 1 in 650 pairs of writes at 10 slots each), nothing more.
CREATE UNLOGGED TABLE simpg.guard_locks (
    guarded_table oid NOT NULL,
    slot integer NOT NULL,
    PRIMARY KEY (guarded_table, slot)
);

COMMENT ON TABLE simpg.guard_locks IS
    'Lock rows of the simpg guards: a guarded write locks its slots here (FOR UPDATE); each role sees only the rows of tables it may write';

ALTER TABLE simpg.guard_locks ENABLE ROW LEVEL SECURITY;
CREATE POLICY writers ON simpg.guard_locks
    USING (has_any_column_privilege(guarded_table, 'INSERT, UPDATE'))
    WITH CHECK (has_any_column_privilege(guarded_table, 'INSERT, UPDATE'));
-- UPDATE (slot): SELECT ... FOR UPDATE needs UPDATE on one column; a writer that changes
-- a slot of its own table only makes the guard insert it again
GRANT SELECT (guarded_table, slot), INSERT (guarded_table, slot), UPDATE (slot) ON simpg.guard_locks TO PUBLIC;

-- guard_lock_keys: the slots of simpg.guard_locks a guarded write of fp (and its band
-- keys) locks, sorted and distinct: the order every writer locks them in, so single-row
-- writes never deadlock. A slot is the low 16 bits of a 64-bit hash of fp's prefix in
-- permuted table t, seeded with t; with a banded guard, each non-NULL band key of the
-- row adds one, seeded with 65536 - i, far above any layout's table numbers. rel names
-- the guarded table (the rows are its own), which the slots do not depend on.
CREATE OR REPLACE FUNCTION simpg.guard_lock_keys(rel regclass, fp bigint, k integer, levels integer[],
                                      bands bigint[] DEFAULT NULL) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT array_agg(DISTINCT key ORDER BY key)
            FROM (SELECT hashint8extended(simpg.prefix_lo(fp, k, levels, t), t) & 65535
                  FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t
                  UNION ALL
                  SELECT hashint8extended(b.band, 65536 - b.i) & 65535
                  FROM unnest(bands) WITH ORDINALITY AS b(band, i)
                  WHERE b.band IS NOT NULL) AS keys(key));

COMMENT ON FUNCTION simpg.guard_lock_keys(regclass, bigint, integer, integer[], bigint[]) IS
    'The slots of simpg.guard_locks a guarded write of fp (and its band keys) locks, in the order it locks them';

-- guard_check: the trigger a guard installs (AFTER INSERT OR UPDATE OF the fingerprint
-- column, FOR EACH ROW). Its arguments are fixed by create_guard: fingerprint column,
-- guard k, key column, the index layout (k, levels), its prefix columns and each one's
-- prefix length; a sketch guard adds the sketch column, the largest sketch distance and
-- its band key columns ('{}' without bands). The ranges and lock slots come from the
-- row's own generated prefix values: nothing of the layout is computed per row.
-- simpg.drop_index refuses while a guard uses the index, and a prefix column dropped by
-- hand makes writes fail (SPG01), so the guard never looks in ranges of another layout.
-- Rows of the same statement see each other (AFTER triggers run when the statement's
-- rows are all in).
--
-- The guarded table is the one create_guard made the trigger on: a partition's trigger
-- is PostgreSQL's clone of its partitioned table's (tgparentid), and the look and the
-- locks are the guarded table's, so a near-duplicate in another partition is found, and
-- a row that moves to another partition (an INSERT there) is checked like a new one.
-- Before anything is read, the trigger checks what would make its look blind, and
-- refuses the write instead (it never accepts a row it could not check):
-- * a guarded column renamed or dropped (the arguments hold names): SPG01, naming it;
-- * row-level security that applies to the writer: the look would see only the rows
--   the writer may see (42501);
-- * inheritance children of the guarded table, whose writes the trigger never sees (0A000).
-- It runs no code of the table's owner: NEW's columns are read by field selection, the
-- guarded columns have built-in types (checked here: a cast or operator of another type
-- could be hers), keys are printed with their type's output function (format %s), never
-- cast (to_jsonb(NEW) would run a cast to json of any column's type).
--
-- A sketch guard refuses only a stored row that SimHashColumn.duplicates would return:
-- within k bits, or sharing a band key, with a fingerprint, and its sketch within the
-- largest distance of the new row's. A NULL sketch on either side confirms nothing, as
-- in duplicates: an unconfirmed pair is never refused, so no unrelated document is.
CREATE OR REPLACE FUNCTION simpg.guard_check() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_col name := TG_ARGV[0];
    v_k integer := TG_ARGV[1]::integer;
    v_key_col name := TG_ARGV[2];
    v_prefix_columns name[] := TG_ARGV[5]::name[];
    v_prefix_bits integer[] := TG_ARGV[6]::integer[];
    v_sketch_col name := TG_ARGV[7];  -- NULL (no argument) for a fingerprint-only guard
    v_max_sketch integer := TG_ARGV[8]::integer;
    v_band_columns name[] := coalesce(TG_ARGV[9]::name[], '{}');
    v_guarded regclass;
    v_bad record;
    v_read text;
    v_fp bigint;
    v_sketch bit(256);
    v_bands bigint[];
    v_prefixes bigint[];
    v_key text;
    v_changed boolean;
    v_prefix bigint;
    v_mask bigint;
    v_slots integer[] := '{}';
    v_locked bigint;
    v_ranges text[] := '{}';
    v_shared text[] := '{}';
    v_within text;
    v_confirmed text := 'true';
    v_hit record;
BEGIN
    -- the guarded table: the top of the chain of clones this trigger belongs to
    WITH RECURSIVE up(rel, parent) AS (
        SELECT tr.tgrelid, tr.tgparentid FROM pg_trigger AS tr WHERE tr.tgrelid = TG_RELID AND tr.tgname = TG_NAME
        UNION ALL
        SELECT tr.tgrelid, tr.tgparentid FROM up JOIN pg_trigger AS tr ON tr.oid = up.parent)
    SELECT up.rel INTO v_guarded FROM up WHERE up.parent = 0;
    -- every column the guard reads, as it is now (a partition has its table's names and types)
    SELECT c.name, c.want, c.role, format_type(a.atttypid, a.atttypmod) AS have INTO v_bad
    FROM unnest(ARRAY[v_col, v_key_col, v_sketch_col] || v_band_columns || v_prefix_columns,
                ARRAY['bigint', NULL, 'bit(256)'] || array_fill('bigint'::text, ARRAY[cardinality(v_band_columns)])
                    || array_fill('bigint'::text, ARRAY[cardinality(v_prefix_columns)]),
                ARRAY['fingerprint', 'key', 'sketch'] || array_fill('band key'::text, ARRAY[cardinality(v_band_columns)])
                    || array_fill('prefix'::text, ARRAY[cardinality(v_prefix_columns)])) AS c(name, want, role)
    LEFT JOIN pg_attribute AS a ON a.attrelid = v_guarded AND a.attname = c.name AND a.attnum > 0
                               AND NOT a.attisdropped
    WHERE c.name IS NOT NULL
      AND (a.attname IS NULL OR format_type(a.atttypid, a.atttypmod) IS DISTINCT FROM coalesce(c.want, format_type(a.atttypid, a.atttypmod)))
    LIMIT 1;
    IF FOUND AND v_bad.have IS NULL AND v_bad.role = 'prefix' THEN
        RAISE EXCEPTION 'the simpg guard on %.% uses prefix column %, which is gone',
            v_guarded, quote_ident(v_col), quote_ident(v_bad.name)
            USING ERRCODE = 'SPG01',
                  HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)), repair or re-create the '
                                'index, then create the guard again', v_guarded, v_col);
    ELSIF FOUND AND v_bad.have IS NULL THEN
        RAISE EXCEPTION 'the simpg guard on %.% reads % column %, which is gone (renamed or dropped)',
            v_guarded, quote_ident(v_col), v_bad.role, quote_ident(v_bad.name)
            USING ERRCODE = 'SPG01',
                  HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)) and create it again on the '
                                'columns as they are named now', v_guarded, v_col);
    ELSIF FOUND THEN
        RAISE EXCEPTION 'the simpg guard on %.% needs % column % to be %, got %',
            v_guarded, quote_ident(v_col), v_bad.role, quote_ident(v_bad.name), v_bad.want, v_bad.have
            USING ERRCODE = 'datatype_mismatch',
                  HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)) and create it again',
                                v_guarded, v_col);
    END IF;
    -- field selection and output functions only: no cast, no operator of a column's type
    v_read := format('SELECT ($1).%I, %s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], format(''%%s'', ($1).%I)',
                     v_col, CASE WHEN v_sketch_col IS NULL THEN 'NULL::bit(256)' ELSE format('($1).%I', v_sketch_col) END,
                     (SELECT string_agg(format('($1).%I', c), ', ' ORDER BY n)
                      FROM unnest(v_band_columns) WITH ORDINALITY AS u(c, n)),
                     (SELECT string_agg(format('($1).%I', c), ', ' ORDER BY n)
                      FROM unnest(v_prefix_columns) WITH ORDINALITY AS u(c, n)),
                     v_key_col);
    EXECUTE v_read INTO v_fp, v_sketch, v_bands, v_prefixes, v_key USING NEW;
    IF v_fp IS NULL THEN
        RETURN NULL;  -- nothing to guard
    END IF;
    IF v_sketch_col IS NOT NULL AND v_sketch IS NULL THEN
        RETURN NULL;  -- no sketch: nothing can confirm a near-duplicate of it
    END IF;
    IF TG_OP = 'UPDATE' THEN  -- built-in types: bigint's and bit's IS DISTINCT FROM
        EXECUTE format('SELECT ($1).%I IS DISTINCT FROM ($2).%I%s', v_col, v_col,
                       (SELECT string_agg(format(' OR ($1).%I IS DISTINCT FROM ($2).%I', c, c), '')
                        FROM unnest(v_sketch_col || v_band_columns) AS c WHERE c IS NOT NULL))
            INTO v_changed USING NEW, OLD;
        IF NOT v_changed THEN
            RETURN NULL;  -- none of the guarded columns changed
        END IF;
    END IF;
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot see concurrent writers at REPEATABLE READ', v_guarded,
            quote_ident(v_col)
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'write at READ COMMITTED or SERIALIZABLE';
    END IF;
    IF row_security_active(v_guarded) THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot check this write by role %: row-level security hides rows of % from it',
            v_guarded, quote_ident(v_col), quote_ident(current_user), v_guarded
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'write as a role that row-level security does not apply to (the table''s owner, or a role '
                         'with BYPASSRLS), or drop the guard: its promise needs every row';
    END IF;
    IF EXISTS (SELECT FROM pg_inherits AS h JOIN pg_class AS c ON c.oid = h.inhparent
               WHERE h.inhparent = v_guarded AND c.relkind <> 'p') THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot guard a table with inheritance children, whose writes it never sees',
            v_guarded, quote_ident(v_col)
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'use declarative partitioning (PARTITION BY), or drop the guard';
    END IF;
    IF NOT has_any_column_privilege(v_guarded, 'INSERT, UPDATE') THEN  -- a write into a partition
        RAISE EXCEPTION 'the simpg guard on %.% locks for writers of %, and role % may not write it',
            v_guarded, quote_ident(v_col), v_guarded, quote_ident(current_user)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('grant INSERT or UPDATE on %s to the role, or write through it', v_guarded);
    END IF;
    FOR t IN 0 .. cardinality(v_prefix_columns) - 1 LOOP
        v_prefix := v_prefixes[t + 1];
        v_mask := -1::bigint << (64 - v_prefix_bits[t + 1]);  -- as simpg.prefix_lo / prefix_hi
        v_slots := v_slots || (hashint8extended(v_prefix & v_mask, t) & 65535)::integer;
        v_ranges := v_ranges || format('t.%I BETWEEN %L::bigint AND %L::bigint', v_prefix_columns[t + 1],
                                       v_prefix & v_mask, v_prefix | ~v_mask);
    END LOOP;
    -- a row sharing a band key is a candidate too; its slot is as simpg.guard_lock_keys'
    FOR i IN 1 .. cardinality(v_band_columns) LOOP
        CONTINUE WHEN v_bands[i] IS NULL;
        v_slots := v_slots || (hashint8extended(v_bands[i], 65536 - i) & 65535)::integer;
        v_shared := v_shared || format('t.%I = %L::bigint', v_band_columns[i], v_bands[i]);
    END LOOP;
    -- in ascending order, the order of simpg.guard_lock_keys: every writer takes them alike.
    -- A slot's row is made by the first writer that needs it; another inserting it at the
    -- same time waits for that one's end, then finds it.
    v_slots := ARRAY(SELECT DISTINCT s FROM unnest(v_slots) AS s ORDER BY s);
    INSERT INTO simpg.guard_locks (guarded_table, slot)
    SELECT v_guarded, s FROM unnest(v_slots) AS s ORDER BY s
    ON CONFLICT DO NOTHING;
    PERFORM FROM simpg.guard_locks AS l WHERE l.guarded_table = v_guarded AND l.slot = ANY (v_slots)
    ORDER BY l.slot FOR UPDATE;
    GET DIAGNOSTICS v_locked = ROW_COUNT;
    IF v_locked <> cardinality(v_slots) THEN  -- a row deleted by the table's owner meanwhile
        RAISE EXCEPTION 'the simpg guard on %.% locked % of its % rows of simpg.guard_locks', v_guarded,
            quote_ident(v_col), v_locked, cardinality(v_slots)
            USING ERRCODE = 'serialization_failure', HINT = 'retry the transaction';
    END IF;
    v_within := format('simpg.hamming(t.%I, $1) <= $2', v_col);
    IF v_shared <> '{}' THEN  -- found through a band, a row may be more than k bits away
        v_within := format('t.%I IS NOT NULL AND (%s OR %s)', v_col, v_within, array_to_string(v_shared, ' OR '));
    END IF;
    IF v_sketch_col IS NOT NULL THEN
        v_confirmed := format('bit_count(t.%I # $4) <= $5', v_sketch_col);
    END IF;
    -- a new statement after the locks: at READ COMMITTED, a new snapshot. The look is the
    -- guarded table's, all its partitions included.
    EXECUTE format('SELECT format(''%%s'', t.%I) AS key, simpg.hamming(t.%I, $1) AS distance FROM %s AS t '
                   'WHERE (%s) AND %s AND %s AND format(''%%s'', t.%I) IS DISTINCT FROM $3 '
                   'ORDER BY 2, 1 LIMIT 1',
                   v_key_col, v_col, v_guarded, array_to_string(v_ranges || v_shared, ' OR '), v_within,
                   v_confirmed, v_key_col)
        INTO v_hit USING v_fp, v_k, v_key, v_sketch, v_max_sketch;
    IF v_hit.key IS NOT NULL THEN
        RAISE EXCEPTION 'near-duplicate row in %: its % is within % bits of a stored row''s%', v_guarded,
            quote_ident(v_col), v_k,
            CASE WHEN v_sketch_col IS NULL THEN ''
                 ELSE format('%s, and its %s within %s bits',
                             CASE WHEN v_band_columns <> '{}' THEN ' or shares a band key with it' ELSE '' END,
                             quote_ident(v_sketch_col), v_max_sketch) END
            USING ERRCODE = 'exclusion_violation',
                  CONSTRAINT = TG_NAME,
                  DETAIL = format('Key (%s)=(%s) is within %s bits of the new row, key (%s)=(%s).',
                                  v_key_col, v_hit.key, v_hit.distance, v_key_col, v_key),
                  TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA, COLUMN = v_col;
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.guard_check() IS
    'Trigger of a simpg guard: refuses a row within k bits of another (confirmed by its sketch, if any; SQLSTATE 23P01), race-free';

-- create_guard: from now on no committed state of rel holds two rows whose col differ
-- in at most k bits (default: the index's k). Needs the simpg index on col (its layout
-- gives the locks and the lookup) and a key column to name rows by (default: the single-
-- column primary key). Refused when the table already holds such rows, saying how many
-- and how to list them. Runs as the caller, who must be allowed to create the trigger.
-- Refused on a partition (guard its partitioned table, whose trigger PostgreSQL copies to
-- every partition) and when row-level security applies to the caller (its pair count, as
-- every guarded write's look, must see every row).
--
-- With sketch_column (bit(256), simpg.fingerprint.sketch), two rows count only when their
-- sketches also differ in at most max_sketch_distance bits (default simpg.max_sketch_distance(), the
-- MAX_SKETCH_DISTANCE of SimHashColumn.duplicates); with bands (by default whenever a
-- sketch confirms: simpg.with_bands), rows sharing a band key (bigint columns
-- <sketch_column>_b0 .. _b3, simpg.fingerprint.sketch_and_bands) and confirmed so count
-- too, however far their fingerprints: the decision simpg dedup makes.
CREATE OR REPLACE FUNCTION simpg.create_guard(rel regclass, col name DEFAULT NULL, k integer DEFAULT NULL,
                                   key_column name DEFAULT NULL, sketch_column name DEFAULT NULL,
                                   max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT NULL)
    RETURNS name
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.index_layout(rel, col);
    v_key record := simpg.report_key(rel, key_column);
    v_k integer := coalesce(k, v_row.k);
    v_name name := simpg.object_name(v_row.fingerprint_column, '_simpg_guard');
    v_max_sketch integer;
    v_band_columns name[] := '{}';
    v_column text;
    v_type text;
    v_want text;
    v_what text;
    v_pairs bigint;
    v_args text := '';
    v_root regclass;
BEGIN
    -- a partition's writes are its partitioned table's: guard that, which sees them all
    SELECT a.relid INTO v_root FROM pg_partition_ancestors(rel) AS a
    WHERE NOT (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = a.relid);
    IF v_root IS NOT NULL AND v_root <> rel THEN
        RAISE EXCEPTION 'table % is a partition of %: create the simpg guard on %', rel, v_root, v_root
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'a guard on a partitioned table guards every partition, and looks in all of them';
    END IF;
    -- the pair count below, and every write's look, must see every row
    IF row_security_active(rel) THEN
        RAISE EXCEPTION 'cannot create a simpg guard on % as role %: row-level security hides rows of it from the role',
            rel, quote_ident(current_user)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'a guard promises that no two rows of the whole table are near; create it as a role that '
                         'row-level security does not apply to (the table''s owner without FORCE ROW LEVEL SECURITY)';
    END IF;
    IF v_k < 0 OR v_k > v_row.k THEN
        RAISE EXCEPTION 'a guard on %.% needs k from 0 to %, the radius of its simpg index, got %', rel,
            quote_ident(v_row.fingerprint_column), v_row.k, v_k
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch_column IS NULL AND (max_sketch_distance IS NOT NULL OR bands) THEN
        RAISE EXCEPTION 'a guard on %.% takes %, got %, only with a sketch_column to confirm by', rel,
            quote_ident(v_row.fingerprint_column),
            CASE WHEN bands THEN 'bands' ELSE 'max_sketch_distance' END,
            CASE WHEN bands THEN 'true' ELSE max_sketch_distance::text END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch_column IS NOT NULL THEN
        v_max_sketch := coalesce(max_sketch_distance, simpg.max_sketch_distance());
        IF v_max_sketch < 0 OR v_max_sketch > 256 THEN
            RAISE EXCEPTION 'a guard''s max_sketch_distance must be from 0 to 256 (the bits of a sketch), got %',
                v_max_sketch
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF simpg.with_bands(sketch_column, bands) THEN  -- the names simpg.psycopg._common.band_columns gives
            v_band_columns := ARRAY(SELECT sketch_column || '_b' || i FROM generate_series(0, simpg.band_count() - 1) AS i);
        END IF;
        -- text, not name: a name too long for the convention is not cut to another column's
        FOREACH v_column IN ARRAY sketch_column::text || v_band_columns::text[] LOOP
            v_want := CASE WHEN v_column = sketch_column THEN 'bit(256)' ELSE 'bigint' END;
            v_what := CASE WHEN v_column = sketch_column THEN 'the sketches a guard confirms by'
                           ELSE 'band keys of ' || quote_ident(sketch_column) END;
            v_type := NULL;
            SELECT format_type(a.atttypid, a.atttypmod) INTO v_type FROM pg_attribute AS a
            WHERE a.attrelid = rel AND a.attname::text = v_column AND a.attnum > 0 AND NOT a.attisdropped;
            IF v_type IS NULL THEN
                RAISE EXCEPTION 'column % of table % does not exist (%, %)', quote_ident(v_column), rel, v_what, v_want
                    USING ERRCODE = 'undefined_column';
            ELSIF v_type <> v_want THEN
                RAISE EXCEPTION 'column % of table % must be % (%), got %', quote_ident(v_column), rel, v_want,
                    v_what, v_type
                    USING ERRCODE = 'datatype_mismatch';
            END IF;
        END LOOP;
        v_args := format(', %L, %L, %L', sketch_column, v_max_sketch, v_band_columns);
    END IF;
    IF EXISTS (SELECT FROM pg_trigger WHERE tgrelid = rel AND tgname = v_name) THEN
        RAISE EXCEPTION 'table % already has the guard %', rel, quote_ident(v_name)
            USING ERRCODE = 'duplicate_object',
                  HINT = format('SELECT simpg.drop_guard(%L, %L) first to change it', rel, v_row.fingerprint_column);
    END IF;
    -- the trigger first, under a lock that keeps writers out until the check is done
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OF %s ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION simpg.guard_check(%L, %L, %L, %L, %L, %L, %L%s)',
                   v_name, (SELECT string_agg(quote_ident(c), ', ')
                            FROM unnest(ARRAY[v_row.fingerprint_column, sketch_column] || v_band_columns) AS c),
                   rel, v_row.fingerprint_column, v_k, v_key.column_name,
                   v_row.k, v_row.levels, v_row.prefix_columns,
                   ARRAY(SELECT simpg.prefix_bits(v_row.k, v_row.levels, t)
                         FROM generate_series(0, cardinality(v_row.prefix_columns) - 1) AS t),
                   v_args);
    -- the pairs the trigger would refuse: within k (and with a sketch, confirmed by it;
    -- with bands, also sharing a band key), as simpg.pairs reports them
    SELECT count(*) INTO v_pairs
    FROM simpg.pairs(NULL::text, rel, v_k, v_row.fingerprint_column, v_key.column_name, sketch_column,
                     v_max_sketch, v_band_columns <> '{}');
    IF v_pairs > 0 THEN
        RAISE EXCEPTION 'table % already holds % pair(s) of rows within % bits%', rel, v_pairs, v_k,
            CASE WHEN sketch_column IS NULL THEN ''
                 ELSE format('%s whose %s are within %s bits',
                             CASE WHEN v_band_columns <> '{}' THEN ' or sharing a band key' ELSE '' END,
                             quote_ident(sketch_column), v_max_sketch) END
            USING ERRCODE = 'exclusion_violation',
                  HINT = format('list them with SELECT * FROM simpg.pairs(%L, %s, %L%s), remove or change one '
                                'row of each, then create the guard', rel, v_k, v_row.fingerprint_column,
                                CASE WHEN sketch_column IS NULL THEN ''
                                     ELSE format(', sketch_column => %L, max_sketch_distance => %s, bands => %s',
                                                 sketch_column, v_max_sketch, v_band_columns <> '{}') END);
    END IF;
    RETURN v_name;
END
$$;

COMMENT ON FUNCTION simpg.create_guard(regclass, name, integer, name, name, integer, boolean) IS
    'Refuse, race-free, any write that leaves two rows of rel within k bits (confirmed by sketch_column, with its band keys if bands); returns its name';

-- drop_guard: remove the guard of rel.col (an error if there is none).
CREATE OR REPLACE FUNCTION simpg.drop_guard(rel regclass, col name DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_guard record;
BEGIN
    SELECT * INTO v_guard FROM simpg.table_guards(rel) AS g WHERE col IS NULL OR g.fingerprint_column = col;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % has no simpg guard%', rel, coalesce(' on column ' || quote_ident(col), '')
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('DROP TRIGGER %I ON %s', v_guard.guard_name, rel);
END
$$;

COMMENT ON FUNCTION simpg.drop_guard(regclass, name) IS 'Remove the simpg guard of rel (on col)';

-- table_guards: the guards of a table, read from its triggers' arguments (tgargs: each
-- argument's UTF-8 bytes, then a zero byte).
CREATE OR REPLACE FUNCTION simpg.table_guards(rel regclass)
    RETURNS TABLE (guard_name name, fingerprint_column name, k integer, key_column name, sketch_column name,
                   max_sketch_distance integer, band_columns name[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_trigger record;
    v_args text[];
    v_rest bytea;
    v_end integer;
BEGIN
    FOR v_trigger IN
        SELECT tr.tgname, tr.tgargs FROM pg_trigger AS tr
        WHERE tr.tgrelid = rel AND tr.tgfoid = 'simpg.guard_check()'::regprocedure ORDER BY tr.tgname
    LOOP
        v_args := '{}';
        v_rest := v_trigger.tgargs;
        LOOP
            v_end := position('\x00'::bytea IN v_rest);
            EXIT WHEN v_end = 0;
            v_args := v_args || convert_from(substring(v_rest FROM 1 FOR v_end - 1), 'UTF8');
            v_rest := substring(v_rest FROM v_end + 1);
        END LOOP;
        guard_name := v_trigger.tgname;
        fingerprint_column := v_args[1];
        k := v_args[2]::integer;
        key_column := v_args[3];
        sketch_column := v_args[8];  -- NULL for a fingerprint-only guard
        max_sketch_distance := v_args[9]::integer;
        band_columns := nullif(v_args[10]::name[], '{}');
        RETURN NEXT;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.table_guards(regclass) IS
    'The simpg guards of rel: trigger name, fingerprint column, k, key column, and sketch column, its largest distance and band columns (NULL if none)';

-- insert_or_get: the 409 case without an exception. Inserts new_row (column -> value;
-- columns left out take their defaults) into a guarded table, or, when the guard refuses
-- it, inserts nothing and returns the stored row nearest to it: one row
-- (inserted, key, distance), key as text, distance NULL when inserted.
CREATE OR REPLACE FUNCTION simpg.insert_or_get(rel regclass, new_row jsonb, col name DEFAULT NULL)
    RETURNS TABLE (inserted boolean, key text, distance integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_guard record;
    v_columns text;
    v_unknown text;
    v_constraint text;
    v_rows text;
    v_confirmed text := 'true';
BEGIN
    SELECT * INTO v_guard FROM simpg.table_guards(rel) AS g WHERE col IS NULL OR g.fingerprint_column = col;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % has no simpg guard%', rel, coalesce(' on column ' || quote_ident(col), '')
            USING ERRCODE = 'undefined_object', HINT = 'create one with simpg.create_guard(table, column)';
    END IF;
    IF new_row IS NULL OR jsonb_typeof(new_row) <> 'object' THEN
        RAISE EXCEPTION 'new_row must be a JSON object of column values, got %', coalesce(new_row::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(j.name, ', ') FILTER (WHERE a.attname IS NULL OR a.attgenerated <> ''),
           string_agg(quote_ident(j.name), ', ') FILTER (WHERE a.attname IS NOT NULL AND a.attgenerated = '')
    INTO v_unknown, v_columns
    FROM jsonb_object_keys(new_row) AS j(name)
    LEFT JOIN pg_attribute AS a ON a.attrelid = rel AND a.attname = j.name AND a.attnum > 0 AND NOT a.attisdropped;
    IF v_unknown IS NOT NULL THEN
        RAISE EXCEPTION 'table % has no column it can write called %', rel, v_unknown
            USING ERRCODE = 'undefined_column';
    END IF;
    BEGIN
        -- jsonb_populate_record makes each value with its type's input function (no cast),
        -- as the INSERT's own literals would; the key is printed by its output function
        -- built-in: input functions only, and what any INSERT into rel runs (its triggers, defaults)
        EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_record(NULL::%s, $1) '
                       'RETURNING format(''%%s'', %I)',
                       rel, v_columns, v_columns, rel, v_guard.key_column)
            INTO key USING new_row;
        inserted := true;
        RETURN NEXT;
        RETURN;
    EXCEPTION WHEN exclusion_violation THEN
        GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
        IF v_constraint IS DISTINCT FROM v_guard.guard_name THEN
            RAISE;  -- another constraint's refusal is the caller's to see
        END IF;
    END;
    -- refused: the nearest stored row the guard counts, through the index (and the band
    -- keys' B-trees), in the trigger's order, so it names the row the refusal named
    v_rows := format('(%s)', simpg.near_query(rel, (new_row ->> v_guard.fingerprint_column)::bigint, v_guard.k,
                                               v_guard.fingerprint_column));
    IF v_guard.sketch_column IS NOT NULL THEN
        v_rows := v_rows || coalesce((SELECT string_agg(format(' UNION ALL (SELECT t.* FROM %s AS t WHERE t.%I = %L::bigint)',
                                                              rel, c, new_row ->> c), '')
                                      FROM unnest(v_guard.band_columns) AS c WHERE new_row ->> c IS NOT NULL), '');
        v_confirmed := format('t.%I IS NOT NULL AND bit_count(t.%I # $2) <= %s', v_guard.fingerprint_column,
                              v_guard.sketch_column, v_guard.max_sketch_distance);
    END IF;
    EXECUTE format('SELECT format(''%%s'', t.%I), simpg.hamming(t.%I, $1) FROM (%s) AS t WHERE %s ORDER BY 2, 1 LIMIT 1',
                   v_guard.key_column, v_guard.fingerprint_column, v_rows, v_confirmed)
        INTO key, distance USING (new_row ->> v_guard.fingerprint_column)::bigint,
                                 (new_row ->> v_guard.sketch_column)::bit(256);
    inserted := false;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION simpg.insert_or_get(regclass, jsonb, name) IS
    'Insert a row into a guarded table, or return the stored row within k it would duplicate: (inserted, key, distance)';
-- planner functions
--
-- The layout planner is defined in simpg/planner.py's docstring; these functions
-- compute the same designs, figures and recommendation (the test suite compares them).

-- The sizing rule of simpg.layout.default_blocks (kept for callers of it; create_index
-- now asks simpg.default_levels, i.e. the planner).
CREATE OR REPLACE FUNCTION simpg.default_blocks(k integer, row_count bigint) RETURNS integer
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
CREATE OR REPLACE FUNCTION simpg.level_prefixes(nbits integer, m integer, k integer,
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
CREATE OR REPLACE FUNCTION simpg.prefix_histogram(k integer, levels integer[],
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
            -- built-in: lv is simpg's own integer[]
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
CREATE OR REPLACE FUNCTION simpg.default_levels(k integer, row_count bigint) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT p.levels FROM simpg.plan(k, row_count) AS p WHERE p.recommended);

COMMENT ON FUNCTION simpg.default_levels(integer, bigint) IS
    'Layout (blocks per level) that create_index picks for k and a table of row_count rows';
-- pair plans: which bits the all-pairs reports join on
--
-- A report finds every pair within k by a self-join per "pass", each pass joining the
-- rows whose fingerprints agree on the bits of one mask. Any set of masks is exact when
-- every pattern of at most k differing bits misses at least one mask entirely; then a
-- pair within k agrees on that mask's bits and its pass sees it. Two families qualify:
--   * the index's own layout: table t's mask is the fingerprint bits that land in its
--     prefix (the pigeonhole argument of the index itself);
--   * s >= k + 1 segments that partition the 64 bits, one mask per choice of s - k of
--     them: k differing bits touch at most k segments, so s - k segments stay equal.
-- Exactness never depends on the data; speed does. Each pass costs a hash of every row
-- plus one comparison per pair of rows that agree on its mask, and on fingerprints
-- whose bits are not uniform (32-bit values in a bigint column, a corpus whose
-- documents share a template) the layout's prefixes can be nearly constant, so a pass
-- compares almost every pair of rows. simpg.pair_masks measures that on a sample of
-- the table and picks the family, and the segments' bits, with the least estimated
-- work; a single mask of no bits (compare every pair) is the floor it never exceeds.

-- layout_masks: table t's mask, for each t of layout (k, levels): the fingerprint bits
-- that simpg.permute moves into the table's prefix, the source bits of its leading
-- positions. One table_order per table (every report calls this, twice or more: 64
-- prefix_lo calls per table took 80-150 ms).
CREATE OR REPLACE FUNCTION simpg.layout_masks(k integer, levels integer[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ARRAY(
        SELECT (SELECT pg_catalog.bit_or(1::bigint OPERATOR(pg_catalog.<<) (63 OPERATOR(pg_catalog.-) o.src))
                FROM pg_catalog.unnest((x.o).bit_order) WITH ORDINALITY AS o(src, pos)
                WHERE o.pos OPERATOR(pg_catalog.<=) (x.o).prefix_bits)
        FROM (SELECT t, simpg.table_order(k, levels, t) AS o
              FROM pg_catalog.generate_series(0, simpg.table_count(k, levels) - 1) AS t) AS x
        ORDER BY x.t
    );

COMMENT ON FUNCTION simpg.layout_masks(integer, integer[]) IS
    'Per table of layout (k, levels): the mask of the fingerprint bits that form its prefix';

-- segment_masks: s segments over the 64 bits, balanced by bit_weights (64 weights, bit
-- 0 first: the information a bit carries), one mask per choice of s - k segments.
-- Contract: k >= 0, s > k, at most 64 segments; the masks are exact for radius k
-- whatever the weights (they only decide which bit goes where).
CREATE OR REPLACE FUNCTION simpg.segment_masks(k integer, s integer, bit_weights float8[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_segment bigint[] := array_fill(0::bigint, ARRAY[s]);
    v_weight float8[] := array_fill(0::float8, ARRAY[s]);
    v_size integer[] := array_fill(0, ARRAY[s]);
    v_masks bigint[] := '{}';
    v_bit integer;
    v_to integer;
    v_mask bigint;
    v_combo integer[];
BEGIN
    IF k < 0 OR s <= k OR s > 64 OR cardinality(bit_weights) <> 64 THEN
        RAISE EXCEPTION 'segment_masks needs 0 <= k < s <= 64 and 64 weights, got k=%, s=%, % weights',
            k, s, cardinality(bit_weights) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- greedy balance: the heaviest bit first, each to the lightest segment (then the
    -- one with fewest bits, then the first)
    FOR v_bit IN SELECT b FROM generate_series(0, 63) AS b ORDER BY bit_weights[b + 1] DESC, b LOOP
        SELECT i INTO v_to FROM generate_series(1, s) AS i
        ORDER BY v_weight[i], v_size[i], i LIMIT 1;
        v_segment[v_to] := v_segment[v_to] | (1::bigint << v_bit);
        v_weight[v_to] := v_weight[v_to] + greatest(bit_weights[v_bit + 1], 0);
        v_size[v_to] := v_size[v_to] + 1;
    END LOOP;
    -- every choice of s - k segments, in lexicographic order
    FOR v_combo IN
        WITH RECURSIVE c(items) AS (
            SELECT ARRAY[i] FROM generate_series(1, s) AS i
            UNION ALL
            SELECT c.items || i FROM c, generate_series(1, s) AS i
            WHERE i > c.items[cardinality(c.items)] AND cardinality(c.items) < s - k
        )
        SELECT items FROM c WHERE cardinality(items) = s - k ORDER BY items
    LOOP
        v_mask := 0;
        FOR v_to IN SELECT unnest(v_combo) LOOP
            v_mask := v_mask | v_segment[v_to];
        END LOOP;
        v_masks := v_masks || v_mask;
    END LOOP;
    RETURN v_masks;
END
$$;

COMMENT ON FUNCTION simpg.segment_masks(integer, integer, float8[]) IS
    'Masks of every choice of s - k out of s segments of the 64 bits, the segments balanced by bit_weights';

-- pass_cost: estimated work of one pair report with these masks over rows rows,
-- from a sample: rows hashed per pass (c_row each) plus the pairs each pass compares,
-- the sample's pairs that agree on the mask scaled up to the table.
CREATE OR REPLACE FUNCTION simpg.pass_cost(sample bigint[], masks bigint[], rows float8, c_row float8) RETURNS float8
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN rows * c_row * pg_catalog.cardinality(masks) + (
        SELECT pg_catalog.sum(g.c * (g.c - 1))
        FROM (SELECT pg_catalog.count(*) AS c
              FROM pg_catalog.unnest(sample) AS f, pg_catalog.unnest(masks) WITH ORDINALITY AS m(mask, t)
              GROUP BY m.t, f OPERATOR(pg_catalog.&) m.mask) AS g
    )::float8 / (pg_catalog.cardinality(sample)::float8 * (pg_catalog.cardinality(sample) - 1))
      * rows * (rows - 1) / 2;

COMMENT ON FUNCTION simpg.pass_cost(bigint[], bigint[], float8, float8) IS
    'Internal: estimated work of pair passes on masks over rows rows, from a sample of at least 2 fingerprints';

-- pair_masks: the masks a pair report within k joins on, for the table and column of
-- an index (layout: its row of simpg.indexes, one candidate plan; see the top of this
-- file). Reads a sample of at most about 3,000 fingerprints (all of them in a small
-- table; SYSTEM sampling with a fixed seed otherwise, so the same data gets the same
-- plan: it reads only the sampled pages, where BERNOULLI read the whole table, about
-- 70 ms at 1M rows), estimates each candidate plan's work as rows hashed plus
-- pairs compared, and returns the cheapest. Works on plain and partitioned tables; an empty table gets the
-- layout's masks.
CREATE OR REPLACE FUNCTION simpg.pair_masks(layout simpg.indexes, k integer) RETURNS bigint[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- estimated cost of hashing one row into a pass, in units of one pair compared
    -- (bench/pairs_skew.py on PostgreSQL 15: 651 ns per row and pass, 86 ns per pair)
    c_row CONSTANT float8 := 7.5;
    c_sample CONSTANT integer := 3000;
    v_rows float8;
    v_sample bigint[];
    v_m float8;
    v_weights float8[];
    rel regclass := layout.indexed_table;
    col name := layout.fingerprint_column;
    v_layout bigint[] := simpg.layout_masks(layout.k, layout.levels);
    v_best bigint[];
    v_best_cost float8;
    v_masks bigint[];
    v_cost float8;
    v_s integer;
BEGIN
    SELECT CASE WHEN c.relkind = 'p' THEN -1 ELSE c.reltuples END INTO v_rows
    FROM pg_class AS c WHERE c.oid = rel;
    IF v_rows IS NULL OR v_rows < 0 OR v_rows <= 2 * c_sample THEN
        EXECUTE format('SELECT count(*) FROM %s AS t WHERE t.%I IS NOT NULL', rel, col) INTO v_rows;
    END IF;
    IF v_rows <= 2 * c_sample THEN
        EXECUTE format('SELECT array_agg(t.%I) FROM %s AS t WHERE t.%I IS NOT NULL', col, rel, col)
            INTO v_sample;
    ELSE
        -- the LIMIT bounds the work when reltuples is far below the table's real size
        EXECUTE format('SELECT array_agg(s.fp) FROM (SELECT t.%I AS fp FROM %s AS t TABLESAMPLE SYSTEM (%s) REPEATABLE (0) '
                       'WHERE t.%I IS NOT NULL LIMIT %s) AS s',
                       col, rel, least(100.0, 100.0 * c_sample / v_rows), col, 4 * c_sample)
            INTO v_sample;
    END IF;
    v_m := coalesce(cardinality(v_sample), 0);
    IF v_m < 2 THEN
        RETURN v_layout;
    END IF;
    v_best := v_layout;
    v_best_cost := simpg.pass_cost(v_sample, v_layout, v_rows, c_row);
    -- the layout's passes compare no more pairs than they hash rows: keep it
    IF v_best_cost <= 2 * c_row * v_rows * cardinality(v_layout) THEN
        RETURN v_best;
    END IF;
    -- bit weights: each bit's entropy on the sample, so that constant bits (which
    -- every pair shares) do not make a segment look informative
    SELECT array_agg(CASE WHEN x.p <= 0 OR x.p >= 1 THEN 0
                          ELSE -(x.p * ln(x.p) + (1 - x.p) * ln(1 - x.p)) / ln(2) END ORDER BY x.b)
    INTO v_weights
    FROM (SELECT b, (SELECT count(*) FILTER (WHERE f & (1::bigint << b) <> 0) FROM unnest(v_sample) AS f)::float8
                    / v_m AS p
          FROM generate_series(0, 63) AS b) AS x(b, p);
    FOR v_s IN k + 1 .. least(64, k + 5) LOOP
        EXIT WHEN simpg.binomial(v_s, k) > 256;
        v_masks := simpg.segment_masks(k, v_s, v_weights);
        v_cost := simpg.pass_cost(v_sample, v_masks, v_rows, c_row);
        IF v_cost < v_best_cost THEN
            v_best := v_masks;
            v_best_cost := v_cost;
        END IF;
    END LOOP;
    -- one pass over every pair of rows: what a nested loop would do
    IF simpg.pass_cost(v_sample, ARRAY[0::bigint], v_rows, c_row) < v_best_cost THEN
        v_best := ARRAY[0::bigint];
    END IF;
    RETURN v_best;
END
$$;

COMMENT ON FUNCTION simpg.pair_masks(simpg.indexes, integer) IS
    'The masks the pair reports within k join on, for an index''s table and column: the layout''s, or segments fitted to a sample of the data';

-- Candidate rows from the index's B-trees (issue 17). With the layout's masks, table
-- t's mask is exactly the prefix_bits(t) leading bits of its stored prefix column, and
-- that column's B-tree holds the table in prefix order. So the rows that share table
-- t's mask with another row (the only rows pass t can pair) sit next to each other in
-- one index-only scan of that B-tree: lag() over the scan's order finds them, with no
-- sort, no grouping and no range scan per prefix (simpg.prefix_repeats). On uniform
-- fingerprints they are about 2.5% of the rows per pass at 1M rows, 15% at 10M. The
-- pairs among them are found on the stored values alone (simpg.prefix_pairs), and
-- only the rows of those pairs are read from the table, by value, through the same
-- B-tree; callers confirm each pair on the fingerprints themselves, so a candidate
-- never makes a pair that is not one.
-- Trust: the candidates are as complete as the stored prefixes are current, exactly as
-- for simpg.near (simpg.check finds stale ones); this is only used when the caller may
-- read every prefix column, and falls back to joining the whole table otherwise.

-- prefix_candidates_usable: whether the pair reports can take candidates from the
-- B-trees of layout for these masks: the masks are the layout's own (not segments
-- fitted to skewed data) and the caller may SELECT every prefix column.
CREATE OR REPLACE FUNCTION simpg.prefix_candidates_usable(layout simpg.indexes, masks bigint[]) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN masks OPERATOR(pg_catalog.=) simpg.layout_masks(layout.k, layout.levels)
       AND (SELECT pg_catalog.bool_and(pg_catalog.has_column_privilege(layout.indexed_table, c, 'SELECT'))
            FROM pg_catalog.unnest(layout.prefix_columns) AS c);

COMMENT ON FUNCTION simpg.prefix_candidates_usable(simpg.indexes, bigint[]) IS
    'Internal: whether pair passes on masks can read their candidate rows from the B-trees of layout';

-- prefix_repeats: the statement giving (v, l) for each row of table t's B-tree whose
-- stored value v shares table t's prefix with l, the value of the row before it in
-- the B-tree's order. Every value of a prefix that two or more rows share comes out
-- as a v or an l; v = l where two rows share the whole value (one fingerprint).
-- Contract: t in [0, table_count). ORDER BY the column alone lets the planner read it
-- with an index-only scan of the B-tree, already in order; lag() ignores the frame, and
-- a ROWS frame spares the window its peer checks (10-20% faster at 1M and 10M rows).
-- The prefixes are compared as one XOR shifted (top bits equal iff it is 0): a few
-- percent of a pass, whose cost is this filter and window on every row.
CREATE OR REPLACE FUNCTION simpg.prefix_repeats(layout simpg.indexes, t integer) RETURNS text
    LANGUAGE sql STABLE
    RETURN pg_catalog.format(
        'SELECT x.v, x.l FROM (SELECT s.%1$I AS v, pg_catalog.lag(s.%1$I) OVER (ORDER BY s.%1$I ROWS 1 PRECEDING) AS l '
        'FROM %2$s AS s WHERE s.%1$I IS NOT NULL) AS x '
        'WHERE (x.v # x.l) >> %3$L::integer = 0',
        layout.prefix_columns[t + 1], layout.indexed_table,
        64 - simpg.prefix_bits(layout.k, layout.levels, t));

COMMENT ON FUNCTION simpg.prefix_repeats(simpg.indexes, integer) IS
    'Internal: each row of table t''s B-tree that shares its prefix with the row before it, as (v, l), from one ordered index-only scan';

-- prefix_pairs: the statement giving (va, vb), each pair of distinct values of table
-- t's prefix column that pass t of masks (the layout's) finds first: same prefix,
-- within k, and apart on every earlier mask (as simpg/allpairs.py keeps each pair
-- once); with equal_values also (v, v) once for each value that two or more rows
-- share. Of a prefix's values x1 <= ... <= xn, simpg.prefix_repeats gives (x2, x1),
-- ..., (xn, xn-1): every x below xn is an l and every x above x1 a v, so joining its
-- rows on the prefix and taking l < v yields every pair of distinct values (DISTINCT:
-- once each when values repeat). The stored values are the fingerprints under
-- simpg.permute, which only moves bits: distances stay, and mask m becomes
-- permute(m). Callers read the rows of each value (simpg.prefix_rows) and confirm the
-- pair on their fingerprints.
CREATE OR REPLACE FUNCTION simpg.prefix_pairs(layout simpg.indexes, masks bigint[], t integer, k integer,
                                   equal_values boolean)
    RETURNS text
    LANGUAGE sql STABLE
    -- x: table t's permutation, worked out once for all the earlier masks
    RETURN (
        SELECT pg_catalog.format(
            'WITH w AS MATERIALIZED (%1$s) '
            'SELECT DISTINCT a.l AS va, b.v AS vb FROM w AS a JOIN w AS b '
            'ON b.v >> %2$L::integer = a.l >> %2$L::integer AND a.l < b.v '
            'WHERE %3$ssimpg.hamming(a.l, b.v) <= %4$L::integer%5$s',
            simpg.prefix_repeats(layout, t),
            64 - simpg.prefix_bits(layout.k, layout.levels, t),
            (SELECT pg_catalog.string_agg(
                        pg_catalog.format('(a.l # b.v) & %L::bigint <> 0 AND ',
                                          simpg.apply_segments(masks[u + 1], x.segs)), '' ORDER BY u)
             FROM pg_catalog.generate_series(0, t - 1) AS u),
            k,
            CASE WHEN equal_values THEN ' UNION ALL SELECT DISTINCT w.v, w.v FROM w WHERE w.v = w.l' ELSE '' END)
        FROM (SELECT simpg.table_segments(layout.k, layout.levels, t) AS segs) AS x
    );

COMMENT ON FUNCTION simpg.prefix_pairs(simpg.indexes, bigint[], integer, integer, boolean) IS
    'Internal: the pairs of stored values of table t within k that pass t finds first, from its B-tree alone';

-- prefix_rows: a LATERAL subquery reading the rows whose table t value is value_expr
-- (an outer column) through table t's B-tree, select_list over alias s. OFFSET 0
-- keeps it one index scan per outer row, whatever the planner thinks of their number.
CREATE OR REPLACE FUNCTION simpg.prefix_rows(layout simpg.indexes, t integer, select_list text, value_expr text)
    RETURNS text
    LANGUAGE sql STABLE
    RETURN pg_catalog.format('SELECT %3$s FROM %2$s AS s WHERE s.%1$I = %4$s OFFSET 0',
                             layout.prefix_columns[t + 1], layout.indexed_table, select_list, value_expr);

COMMENT ON FUNCTION simpg.prefix_rows(simpg.indexes, integer, text, text) IS
    'Internal: the rows whose table t value is value_expr, by an index scan of its B-tree';
-- report functions
--
-- All near-duplicate pairs of a table, their clusters (connected components) and
-- duplicate statistics, computed inside the database by self-joins on masked
-- fingerprint bits (simpg.pair_masks), so they never trust stored prefixes. Every
-- function here is SECURITY INVOKER (the default): it reads the table with the
-- caller's rights, so permissions, column privileges and row-level security apply as
-- to a plain SELECT. Dynamic SQL only ever embeds a
-- regclass (which quotes and qualifies itself) and names through format('%I').
--
-- Exactness: a pair within k agrees on the bits of at least one pass's mask (the
-- pigeonhole principle behind the index; 65_pair_plan.sql). Each pass joins the rows
-- that agree on its mask, and reports a pair only from the FIRST pass where they
-- agree, so every pair within k comes out exactly once, without a DISTINCT.



-- base_type: the type a domain is made from, through domains over domains; t itself
-- for any other type.
CREATE OR REPLACE FUNCTION simpg.base_type(t regtype) RETURNS regtype
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (WITH RECURSIVE base (oid, basetype) AS (
                SELECT y.oid, y.typbasetype FROM pg_catalog.pg_type AS y WHERE y.oid = t
                UNION ALL
                SELECT y.oid, y.typbasetype FROM base AS b JOIN pg_catalog.pg_type AS y ON y.oid = b.basetype)
            SELECT b.oid::regtype FROM base AS b WHERE b.basetype = 0);

COMMENT ON FUNCTION simpg.base_type(regtype) IS
    'The base type of domain t (through domains over domains), or t itself';

-- builtin_type: whether values of type t are compared, cast and printed by built-in code
-- only. Contract: true for the types initdb made (OIDs below 16384,
-- FirstNormalObjectId) and for domains over them (a domain's casts, operators and output
-- are its base type's; its checks run only when a value is stored into it). A cast from
-- any other type is looked up in pg_cast, whatever search_path says, so it may be a
-- function of the type's owner, which would run with the rights of whoever calls simpg.
CREATE OR REPLACE FUNCTION simpg.builtin_type(t regtype) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN simpg.base_type(t)::oid < 16384;

COMMENT ON FUNCTION simpg.builtin_type(regtype) IS
    'Whether t is a built-in type or a domain over one: values simpg may cast, compare and print without running user code';

-- checked_key_type: raises unless a key column's type is built in (simpg.builtin_type).
CREATE OR REPLACE FUNCTION simpg.checked_key_type(rel regclass, key_column name, key_type regtype) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT simpg.builtin_type(key_type) THEN
        RAISE EXCEPTION 'key column %.% has type %, which is not built in; simpg compares, casts and prints keys with built-in code only',
            rel, quote_ident(key_column), key_type
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'use a key of a built-in type (bigint, uuid, text, ...) or a domain over one; docs/security.md says why';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.checked_key_type(regclass, name, regtype) IS
    'Raises unless key_column of rel has a built-in type (or a domain over one): no report runs the code of a type''s owner';

-- report_key: the column that identifies rows in a report, and its type.
-- Contract: key_column NULL means the single-column primary key. The column must be
-- NOT NULL and carry a valid, non-partial single-column unique index: pairs are taken
-- once as key_a < key_b, so two rows with equal keys would silently lose their pair.
-- Refuses a table with inheritance children, where such an index proves nothing.
-- Refuses a key whose type is not built in (simpg.builtin_type): reports sort, compare
-- and cast keys, and must never run the code of a type's owner as their caller. Every
-- function of simpg that touches a key takes it from here.
CREATE OR REPLACE FUNCTION simpg.report_key(rel regclass, key_column name DEFAULT NULL,
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
    -- A UNIQUE index covers one table of an inheritance tree, not its children (unlike a
    -- partitioned table's): equal keys in parent and child would merge two rows.
    IF EXISTS (SELECT FROM pg_inherits AS h JOIN pg_class AS c ON c.oid = h.inhparent
               WHERE h.inhparent = rel AND c.relkind <> 'p') THEN
        RAISE EXCEPTION 'table % has inheritance children, and keys are unique only within each table: a report would merge rows that share a key',
            rel
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'report on a table without children, or use declarative partitioning (PARTITION BY), whose keys are unique across partitions';
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
        PERFORM simpg.checked_key_type(rel, column_name, column_type);
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
    PERFORM simpg.checked_key_type(rel, column_name, column_type);
END
$$;

COMMENT ON FUNCTION simpg.report_key(regclass, name) IS
    'The key column of a report on rel (default: its single-column primary key) and its type; raises unless unique and not null';

-- report_key_type: the type a report returns keys as, when the caller asks for want.
-- Contract: want may be the key column's own type, text (always lossless), or bigint
-- for a smallint, integer or bigint key (or a domain over one); anything else raises
-- naming the right call.
CREATE OR REPLACE FUNCTION simpg.report_key_type(rel regclass, key_column name, have regtype, want regtype)
    RETURNS regtype
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF want IS NULL OR want = have OR want = 'text'::regtype
       OR (want = 'bigint'::regtype
           AND simpg.base_type(have) IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype)) THEN
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
-- with columns fp, q0 .. q<n-1> (pass t's join key: the fingerprint under its mask) and a
-- column named by ident; ident_a < ident_b takes each pair once.
-- One branch per pass t: equal q_t, unequal q_u for every u < t, distance <= k.
CREATE OR REPLACE FUNCTION simpg.prefix_join(select_list text, tables integer, k integer, ident name)
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

-- mask_select: "t.<col> & m0 AS q0, t.<col> & m1 AS q1, ..." for the masks of a pair
-- plan (simpg.pair_masks): each pass joins on the fingerprint's bits under its mask.
CREATE OR REPLACE FUNCTION simpg.mask_select(col name, masks bigint[]) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (
        SELECT pg_catalog.string_agg(pg_catalog.format('t.%I & %L::bigint AS q%s', col, m.mask, m.n - 1),
                                     ', ' ORDER BY m.n)
        FROM pg_catalog.unnest(masks) WITH ORDINALITY AS m(mask, n)
    );

COMMENT ON FUNCTION simpg.mask_select(name, bigint[]) IS
    'Internal: the select list of each pass''s join key, the fingerprint under its mask, as q0, q1, ...';

-- report_sketch_distance: the largest sketch distance that confirms a pair in a report
-- with these arguments, or NULL for a report by fingerprints alone (sketch_column NULL).
-- Raises, naming the value, for max_sketch_distance or bands without a sketch_column, a
-- distance outside 0 .. 256, or a sketch or band column that is missing or of another
-- type (simpg.checked_sketch_columns). bands NULL is the default: band keys whenever a
-- sketch confirms (simpg.with_bands).
CREATE OR REPLACE FUNCTION simpg.report_sketch_distance(rel regclass, sketch_column name, max_sketch_distance integer,
                                             bands boolean)
    RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF sketch_column IS NULL THEN
        IF max_sketch_distance IS NOT NULL OR coalesce(bands, false) THEN
            RAISE EXCEPTION 'a report on % takes %, got %, only with a sketch_column to confirm by', rel,
                CASE WHEN coalesce(bands, false) THEN 'bands' ELSE 'max_sketch_distance' END,
                CASE WHEN coalesce(bands, false) THEN 'true' ELSE max_sketch_distance::text END
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN NULL;
    END IF;
    IF max_sketch_distance NOT BETWEEN 0 AND 256 THEN
        RAISE EXCEPTION 'max_sketch_distance must be an integer from 0 to 256, got %', max_sketch_distance
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM simpg.checked_sketch_columns(rel, sketch_column, simpg.with_bands(sketch_column, bands));
    RETURN coalesce(max_sketch_distance, simpg.max_sketch_distance());
END
$$;

COMMENT ON FUNCTION simpg.report_sketch_distance(regclass, name, integer, boolean) IS
    'Internal: the sketch distance that confirms a pair in a report (NULL: no sketch); raises on bad sketch arguments';

-- band_passes: with bands, one statement per band column i: the pairs of rows that share
-- band key i (NULL keys share nothing) and no earlier one, whose fingerprints are more
-- than k bits apart (a pair within k comes from the fingerprint passes) and whose
-- sketches are within max_sketch_distance: with those passes, each confirmed pair once.
-- Only the keys two or more rows share are read (a GROUP BY that an index-only scan of
-- the band's B-tree feeds in order), then their rows by that B-tree. Columns as
-- pairs_query's; keys compared in the key column's own order, then cast to key_type
-- (key_column and key_type as simpg.report_key and report_key_type return them: built in).
CREATE OR REPLACE FUNCTION simpg.band_passes(rel regclass, k integer, fingerprint_column name, key_column name,
                                  key_type regtype, sketch_column name, max_sketch_distance integer)
    RETURNS text[]
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    RETURN ARRAY(
        SELECT format(
            '(WITH v AS MATERIALIZED (SELECT s.%1$I AS band FROM %2$s AS s WHERE s.%1$I IS NOT NULL '
            'GROUP BY s.%1$I HAVING count(*) > 1), '
            'r AS MATERIALIZED (SELECT x.* FROM v, LATERAL (SELECT s.%3$I AS key, s.%4$I AS fp, s.%5$I AS sk, %6$s '
            'FROM %2$s AS s WHERE s.%1$I = v.band AND s.%4$I IS NOT NULL AND s.%5$I IS NOT NULL OFFSET 0) AS x) '
            'SELECT a.key::%7$s AS key_a, b.key::%7$s AS key_b, simpg.hamming(a.fp, b.fp) AS distance '
            'FROM r AS a JOIN r AS b ON b.b%8$s = a.b%8$s AND a.key < b.key '
            'WHERE %9$ssimpg.hamming(a.fp, b.fp) > %10$L::integer AND bit_count(a.sk # b.sk) <= %11$L::integer)',
            c.band_column, rel, key_column, fingerprint_column, sketch_column,
            (SELECT string_agg(format('s.%I AS b%s', e.band_column, e.i), ', ' ORDER BY e.i)
             FROM simpg.band_columns(sketch_column) AS e),
            key_type, c.i,
            (SELECT string_agg(format('(b.b%s = a.b%s) IS NOT TRUE AND ', e.i, e.i), '' ORDER BY e.i)
             FROM simpg.band_columns(sketch_column) AS e WHERE e.i < c.i),
            k, max_sketch_distance)
        FROM simpg.band_columns(sketch_column) AS c
        ORDER BY c.i);

COMMENT ON FUNCTION simpg.band_passes(regclass, integer, name, name, regtype, name, integer) IS
    'Internal: the statements of a report''s band passes, the confirmed pairs sharing a band key beyond k bits';

-- pairs_passes: the statements of a pair report, run one after the other; their
-- UNION ALL is simpg.pairs_query. With the B-trees usable (simpg.prefix_candidates_usable)
-- one statement per pass t: the pairs of stored values pass t finds first
-- (simpg.prefix_pairs, from one ordered scan of its B-tree), each value's rows read
-- through the same B-tree, and each pair of rows confirmed on the fingerprints: equal
-- under mask t, apart under every earlier mask ((a # b) & m_u <> 0, as
-- simpg/allpairs.py does), within k. So each pair comes out once, and only pass 0
-- reports rows with equal fingerprints. Otherwise one statement: a hash join per pass
-- over one scan of the whole table (simpg.prefix_join). With a sketch column each pass
-- keeps only the pairs whose sketches confirm them, and with bands simpg.band_passes
-- follow. Contract: as pairs_query's.
CREATE OR REPLACE FUNCTION simpg.pairs_passes(rel regclass, k integer, col name DEFAULT NULL,
                                   key_column name DEFAULT NULL, key_type regtype DEFAULT NULL,
                                   sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                                   bands boolean DEFAULT NULL)
    RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
    v_key record := simpg.report_key(rel, key_column);
    v_type regtype := simpg.report_key_type(rel, v_key.column_name, v_key.column_type, key_type);
    v_masks bigint[] := simpg.pair_masks(v_row, k);
    v_select text := format('a.key::%s AS key_a, b.key::%s AS key_b, simpg.hamming(a.fp, b.fp) AS distance',
                            v_type, v_type);
    v_max integer := simpg.report_sketch_distance(rel, sketch_column, max_sketch_distance, bands);
    v_cols text := format('s.%I AS key, s.%I AS fp', v_key.column_name, v_row.fingerprint_column) ||
        CASE WHEN v_max IS NULL THEN '' ELSE format(', s.%I AS sk', sketch_column) END;
    -- a NULL sketch confirms nothing: bit_count of NULL is not <= anything
    v_confirmed text := CASE WHEN v_max IS NULL THEN '' ELSE format(' AND bit_count(a.sk # b.sk) <= %L::integer', v_max) END;
    v_bands text[] := CASE WHEN v_max IS NOT NULL AND simpg.with_bands(sketch_column, bands)
                           THEN simpg.band_passes(rel, k, v_row.fingerprint_column, v_key.column_name, v_type,
                                                  sketch_column, v_max)
                           ELSE '{}' END;
BEGIN
    IF simpg.prefix_candidates_usable(v_row, v_masks) THEN
        -- keys ordered before the cast: key_a < key_b in the key column's own order
        RETURN ARRAY(
            SELECT format(
                '(WITH p AS MATERIALIZED (%s) '
                'SELECT LEAST(a.key, b.key)::%s AS key_a, GREATEST(a.key, b.key)::%s AS key_b, '
                'simpg.hamming(a.fp, b.fp) AS distance FROM p, LATERAL (%s) AS a, LATERAL (%s) AS b '
                'WHERE (p.va < p.vb OR a.key < b.key) AND (a.fp # b.fp) & %L::bigint = 0 AND '
                '%ssimpg.hamming(a.fp, b.fp) <= %L::integer%s)',
                simpg.prefix_pairs(v_row, v_masks, t, k, t = 0), v_type, v_type,
                simpg.prefix_rows(v_row, t, v_cols, 'p.va'), simpg.prefix_rows(v_row, t, v_cols, 'p.vb'),
                v_masks[t + 1],
                (SELECT string_agg(format('(a.fp # b.fp) & %L::bigint <> 0 AND ', v_masks[u + 1]), ''
                                   ORDER BY u)
                 FROM generate_series(0, t - 1) AS u),
                k, v_confirmed)
            FROM generate_series(0, cardinality(v_masks) - 1) AS t
            ORDER BY t) || v_bands;
    END IF;
    -- The CTE reads the table once; each pass is a hash join on its masked bits.
    IF v_max IS NULL THEN
        RETURN ARRAY[format(
            'WITH r AS MATERIALIZED (SELECT t.%I AS key, t.%I AS fp, %s FROM %s AS t WHERE t.%I IS NOT NULL) %s',
            v_key.column_name, v_row.fingerprint_column,
            simpg.mask_select(v_row.fingerprint_column, v_masks), rel, v_row.fingerprint_column,
            simpg.prefix_join(v_select, cardinality(v_masks), k, 'key'))];
    END IF;
    -- with sketches: only rows that have one, each pair's sketch distance kept if it confirms
    RETURN ARRAY[format(
        'WITH r AS MATERIALIZED (SELECT t.%I AS key, t.%I AS fp, t.%I AS sk, %s FROM %s AS t '
        'WHERE t.%I IS NOT NULL AND t.%I IS NOT NULL) '
        'SELECT q.key_a, q.key_b, q.distance FROM (%s) AS q WHERE q.sketch_distance <= %L::integer',
        v_key.column_name, v_row.fingerprint_column, sketch_column,
        simpg.mask_select(v_row.fingerprint_column, v_masks), rel, v_row.fingerprint_column, sketch_column,
        simpg.prefix_join(v_select || ', bit_count(a.sk # b.sk) AS sketch_distance', cardinality(v_masks), k, 'key'),
        v_max)] || v_bands;
END
$$;

COMMENT ON FUNCTION simpg.pairs_passes(regclass, integer, name, name, regtype, name, integer, boolean) IS
    'Internal: the statements simpg.pairs runs in turn (one per pass when the B-trees give candidates)';

-- pairs_query: the statement simpg.pairs runs, for EXPLAIN and for views.
-- Contract: columns key_a, key_b, distance; key_a < key_b in the key column's own
-- order; every pair of rows within distance k exactly once, rows with equal
-- fingerprints included, rows with a NULL fingerprint left out. key_type NULL returns
-- keys in the key column's own type. With sketch_column (bit(256), simpg.fingerprint.sketch)
-- only the pairs whose sketches are both there and differ in at most max_sketch_distance
-- bits (default simpg.max_sketch_distance()), as SimHashColumn.duplicates confirms them;
-- with bands also every pair so confirmed that shares a band key (band i of one row equal
-- to band i of the other, columns <sketch_column>_b0 .. _b3), however far apart their
-- fingerprints (distance is still theirs).
CREATE OR REPLACE FUNCTION simpg.pairs_query(rel regclass, k integer, col name DEFAULT NULL,
                                  key_column name DEFAULT NULL, key_type regtype DEFAULT NULL,
                                  sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                                  bands boolean DEFAULT NULL)
    RETURNS text
    LANGUAGE sql STABLE
    RETURN pg_catalog.array_to_string(
        simpg.pairs_passes(rel, k, col, key_column, key_type, sketch_column, max_sketch_distance, bands),
        ' UNION ALL ');

COMMENT ON FUNCTION simpg.pairs_query(regclass, integer, name, name, regtype, name, integer, boolean) IS
    'The SQL statement that lists every pair of rows of rel within distance k (key_a, key_b, distance), confirmed by sketch_column if given';

-- report_work_mem: raises work_mem, for the rest of the calling function, to about 40
-- bytes a row of rel (at least 64MB, at most 1GB): enough to keep a pass's candidate
-- rows, materialized and hashed, in memory even when most rows are candidates (crowded
-- prefixes), and the clusters' sorts; spilled to disk they take 2-3x as long. Only call it
-- from a function with a SET work_mem clause, which confines the change to that
-- function (a SET LOCAL inside such a function ends with it).
CREATE OR REPLACE FUNCTION simpg.report_work_mem(rel regclass) RETURNS text
    LANGUAGE sql VOLATILE
    RETURN pg_catalog.set_config('work_mem',
        (SELECT LEAST(1024 * 1024, GREATEST(64 * 1024,
                    GREATEST(c.reltuples, 0) * 40 / 1024))::bigint::text || 'kB'
         FROM pg_catalog.pg_class AS c WHERE c.oid = rel), true);

COMMENT ON FUNCTION simpg.report_work_mem(regclass) IS
    'Internal: sets work_mem, local to the calling function, for the in-memory sorts of a pair report on rel';

-- pairs: every pair of rows within distance k, keys as bigint (integer keys).
-- Runs the statements of simpg.pairs_passes in turn: each pass is its own statement
-- (its sort's memory freed before the next), and on tables of 100,000 rows or more a
-- NOTICE after each pass shows a long run's progress. STABLE: every pass reads the
-- calling query's snapshot. Settings: no hash aggregate (grouping a B-tree's
-- presorted prefixes is a cheap sort, hashing a million groups is not); no merge join
-- or JIT (the planner knows nothing of the masked columns; a hash join without JIT was
-- 2.1-2.4x faster than its merge join on 100k rows, bench/reports.py).
-- With sketch_column (and bands) the pairs are confirmed by their sketches: see pairs_query.
CREATE OR REPLACE FUNCTION simpg.pairs(rel regclass, k integer, col name DEFAULT NULL, key_column name DEFAULT NULL,
                            sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                            bands boolean DEFAULT NULL)
    RETURNS TABLE (key_a bigint, key_b bigint, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET enable_hashagg = off
    SET jit = off
    SET work_mem = '64MB'
AS $$
DECLARE
    v_passes text[] := simpg.pairs_passes(rel, k, col, key_column, 'bigint', sketch_column, max_sketch_distance,
                                          bands);
    v_notice boolean := (SELECT c.reltuples >= 100000 FROM pg_class AS c WHERE c.oid = rel);
    v_start timestamptz := clock_timestamp();
BEGIN
    PERFORM simpg.report_work_mem(rel);
    FOR v_i IN 1 .. cardinality(v_passes) LOOP
        RETURN QUERY EXECUTE v_passes[v_i];
        IF v_notice THEN
            RAISE NOTICE 'simpg.pairs on %: pass % of % done after % s', rel, v_i, cardinality(v_passes),
                round(extract(epoch FROM clock_timestamp() - v_start)::numeric, 1);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.pairs(regclass, integer, name, name, name, integer, boolean) IS
    'Every pair of rows of rel within Hamming distance k (confirmed by sketch_column if given), once each (key_a < key_b), keys of an integer key column as bigint';

-- pairs with a typed first argument: keys of any type, e.g. simpg.pairs(NULL::uuid, 'docs', 3).
CREATE OR REPLACE FUNCTION simpg.pairs(key_type anyelement, rel regclass, k integer, col name DEFAULT NULL,
                            key_column name DEFAULT NULL, sketch_column name DEFAULT NULL,
                            max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT NULL)
    RETURNS TABLE (key_a anyelement, key_b anyelement, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET enable_hashagg = off
    SET jit = off
    SET work_mem = '64MB'
AS $$
DECLARE
    v_passes text[] := simpg.pairs_passes(rel, k, col, key_column, pg_typeof(key_type)::regtype, sketch_column,
                                          max_sketch_distance, bands);
    v_notice boolean := (SELECT c.reltuples >= 100000 FROM pg_class AS c WHERE c.oid = rel);
    v_start timestamptz := clock_timestamp();
BEGIN
    PERFORM simpg.report_work_mem(rel);
    FOR v_i IN 1 .. cardinality(v_passes) LOOP
        RETURN QUERY EXECUTE v_passes[v_i];
        IF v_notice THEN
            RAISE NOTICE 'simpg.pairs on %: pass % of % done after % s', rel, v_i, cardinality(v_passes),
                round(extract(epoch FROM clock_timestamp() - v_start)::numeric, 1);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.pairs(anyelement, regclass, integer, name, name, name, integer, boolean) IS
    'Every pair of rows of rel within Hamming distance k, once each, keys of the type of the first argument (NULL::uuid, NULL::text, ...)';

-- fingerprint_pairs_query: the statement the clustering functions read: columns n
-- (how many fingerprints are numbered), ia < ib (their numbers, 1 .. n), fa, fb: every
-- pair of distinct fingerprints of rel within k once. Fingerprints are
-- numbered in fingerprint order, or with by_key in the order of their smallest key
-- (then fingerprint); numbers need only keep that relative order, so with the B-trees
-- (simpg.prefix_candidates_usable) only the fingerprints in a pair are numbered: each
-- pass's pairs of stored values (simpg.prefix_pairs), each value's smallest key read
-- through the B-tree (a fingerprint's rows share every stored value), confirmed on the
-- fingerprints. Otherwise every distinct fingerprint is numbered and joined
-- (simpg.prefix_join). key_column is read only with by_key; it is simpg.report_key's
-- (a built-in type, so its order runs no user code).
CREATE OR REPLACE FUNCTION simpg.fingerprint_pairs_query(layout simpg.indexes, masks bigint[], k integer,
                                              key_column name, by_key boolean)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_cols text := format('s.%I AS fp, s.%I AS key', layout.fingerprint_column,
                          CASE WHEN by_key THEN key_column ELSE layout.fingerprint_column END);
    v_order text := CASE WHEN by_key THEN 'u.key, u.fp' ELSE 'u.fp' END;
BEGIN
    IF simpg.prefix_candidates_usable(layout, masks) THEN
        RETURN format(
            'WITH p AS MATERIALIZED (%s), '
            'f AS MATERIALIZED (SELECT u.fp, (row_number() OVER (ORDER BY %s))::integer AS i '
            'FROM (SELECT p.fa AS fp, p.ka AS key FROM p UNION SELECT p.fb, p.kb FROM p) AS u) '
            'SELECT (SELECT count(*) FROM f)::integer, LEAST(x.i, y.i) AS ia, GREATEST(x.i, y.i) AS ib, '
            'CASE WHEN x.i < y.i THEN p.fa ELSE p.fb END AS fa, CASE WHEN x.i < y.i THEN p.fb ELSE p.fa END AS fb '
            'FROM p JOIN f AS x ON x.fp = p.fa JOIN f AS y ON y.fp = p.fb',
            (SELECT string_agg(format(
                '(WITH q AS MATERIALIZED (%s) '
                'SELECT a.fp AS fa, b.fp AS fb, a.key AS ka, b.key AS kb FROM q, '
                'LATERAL (SELECT r.fp, r.key FROM (%s) AS r ORDER BY r.key LIMIT 1) AS a, '
                'LATERAL (SELECT r.fp, r.key FROM (%s) AS r ORDER BY r.key LIMIT 1) AS b '
                'WHERE a.fp <> b.fp AND (a.fp # b.fp) & %L::bigint = 0 AND %ssimpg.hamming(a.fp, b.fp) <= %L::integer)',
                simpg.prefix_pairs(layout, masks, t, k, false),
                simpg.prefix_rows(layout, t, v_cols, 'q.va'), simpg.prefix_rows(layout, t, v_cols, 'q.vb'),
                masks[t + 1],
                (SELECT string_agg(format('(a.fp # b.fp) & %L::bigint <> 0 AND ', masks[u + 1]), '' ORDER BY u)
                 FROM generate_series(0, t - 1) AS u),
                k), ' UNION ALL ' ORDER BY t)
             FROM generate_series(0, cardinality(masks) - 1) AS t),
            v_order);
    END IF;
    RETURN format(
        'WITH d AS (SELECT DISTINCT ON (t.fp) t.fp, t.key FROM (%s) AS t ORDER BY t.fp, t.key), '
        'r AS MATERIALIZED (SELECT t.fp, %s, (row_number() OVER (ORDER BY %s))::integer AS i FROM d AS t) '
        'SELECT (SELECT count(*) FROM r)::integer, p.* FROM (%s) AS p',
        format('SELECT %s FROM %s AS s WHERE s.%I IS NOT NULL', v_cols, layout.indexed_table, layout.fingerprint_column), simpg.mask_select('fp', masks), replace(v_order, 'u.', 't.'),
        simpg.prefix_join('a.i AS ia, b.i AS ib, a.fp AS fa, b.fp AS fb', cardinality(masks), k, 'i'));
END
$$;

COMMENT ON FUNCTION simpg.fingerprint_pairs_query(simpg.indexes, bigint[], integer, name, boolean) IS
    'Internal: the statement giving each pair of distinct fingerprints of a table within k once, numbered for the clustering functions';

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
CREATE OR REPLACE FUNCTION simpg.fingerprint_clusters(rel regclass, k integer, col name DEFAULT NULL)
    RETURNS TABLE (fingerprint bigint, cluster bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET enable_hashagg = off
    SET jit = off
    SET work_mem = '64MB'
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
    v_masks bigint[] := simpg.pair_masks(v_row, k);
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
    PERFORM simpg.report_work_mem(rel);
    FOR v_n, v_a, v_b, v_fa, v_fb IN EXECUTE simpg.fingerprint_pairs_query(v_row, v_masks, k, NULL, false)
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

-- fingerprint_representatives: clusters of rel's distinct fingerprints around
-- representatives. A fingerprint arrives with its row of smallest key; in that order
-- each joins the earliest representative within k, else it is one. So every member is
-- within k of its representative, and a chain of neighbours never joins unrelated rows.
-- Contract: one row per distinct fingerprint in a cluster of two or more distinct
-- fingerprints (members and their representatives); cluster is the representative.
-- Deterministic for a given table; a new row never changes an earlier assignment.
CREATE OR REPLACE FUNCTION simpg.fingerprint_representatives(rel regclass, k integer, col name DEFAULT NULL,
                                                  key_column name DEFAULT NULL)
    RETURNS TABLE (fingerprint bigint, cluster bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET enable_hashagg = off
    SET jit = off
    SET work_mem = '64MB'
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
    v_key record := simpg.report_key(rel, key_column);
    v_masks bigint[] := simpg.pair_masks(v_row, k);
    v_rep integer[];      -- v_rep[i]: the representative fingerprint number i joined, NULL while it leads
    v_fp bigint[];        -- v_fp[i]: fingerprint number i (numbered in arrival order)
    v_members integer[] := '{}';
    v_fps bigint[];
    v_clusters bigint[];
    v_n integer;
    v_a integer;
    v_b integer;
    v_fa bigint;
    v_fb bigint;
BEGIN
    PERFORM simpg.report_work_mem(rel);
    -- pairs (a earlier than b), by b then a: when b is reached, every earlier
    -- fingerprint's place is settled, and the first representative among b's earlier
    -- neighbours is the earliest
    FOR v_n, v_a, v_b, v_fa, v_fb IN EXECUTE format('SELECT q.* FROM (%s) AS q ORDER BY q.ib, q.ia',
        simpg.fingerprint_pairs_query(v_row, v_masks, k, v_key.column_name, true))
    LOOP
        IF v_rep IS NULL THEN
            v_rep := array_fill(NULL::integer, ARRAY[v_n]);
            v_fp := array_fill(NULL::bigint, ARRAY[v_n]);
        END IF;
        IF v_rep[v_b] IS NULL AND v_rep[v_a] IS NULL AND v_fp[v_b] IS NULL THEN
            v_rep[v_b] := v_a;
            v_fp[v_b] := v_fb;
            v_fp[v_a] := v_fa;  -- v_a leads: it stays without a v_rep
            v_members := v_members || v_b;
        END IF;
    END LOOP;
    IF v_rep IS NULL THEN
        RETURN;
    END IF;
    -- plain arrays for the result: a query that indexed v_fp per row would copy it each time
    v_fps := array_fill(NULL::bigint, ARRAY[cardinality(v_members)]);
    v_clusters := array_fill(NULL::bigint, ARRAY[cardinality(v_members)]);
    FOR v_i IN 1 .. cardinality(v_members) LOOP
        v_fps[v_i] := v_fp[v_members[v_i]];
        v_clusters[v_i] := v_fp[v_rep[v_members[v_i]]];
    END LOOP;
    RETURN QUERY
        SELECT u.fp, u.rep FROM unnest(v_fps, v_clusters) AS u(fp, rep)
        UNION ALL
        SELECT DISTINCT u.rep, u.rep FROM unnest(v_clusters) AS u(rep);
END
$$;

COMMENT ON FUNCTION simpg.fingerprint_representatives(regclass, integer, name, name) IS
    'Clusters of rel''s distinct fingerprints around representatives (arrival by smallest key): each member and its representative''s fingerprint';

-- confirmed_clusters: clusters of the rows of rel over the pairs that simpg.pairs reports
-- with sketch_column (within k and confirmed by their sketches, with bands also those
-- sharing a band key). Rows, not distinct fingerprints: two rows of one fingerprint are a
-- pair only when their sketches agree. The rows in a pair are numbered in key order;
-- 'representative': in that order each joins the earliest representative it has a pair
-- with, else it is one (so every member is a confirmed near-duplicate of its
-- representative); 'components': union-find over the pairs.
-- Contract: one row per row of rel in a confirmed pair: its key as text (the callers cast
-- it back) and comp, the number of its representative or of its component's first row.
-- A row may be alone in its comp (its pairs are with members of earlier clusters).
CREATE OR REPLACE FUNCTION simpg.confirmed_clusters(rel regclass, k integer, col name, key_column name, method text,
                                         sketch_column name, max_sketch_distance integer DEFAULT NULL,
                                         bands boolean DEFAULT NULL)
    RETURNS TABLE (key text, comp integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET enable_mergejoin = off
    SET enable_hashagg = off
    SET jit = off
    SET work_mem = '64MB'
AS $$
DECLARE
    v_key_column name := (simpg.report_key(rel, key_column)).column_name;
    v_link integer[];   -- components: parent, NULL for a root; representative: the row's representative
    v_keys text[];      -- v_keys[i]: the key of row number i
    v_comps integer[];
    v_n integer;
    v_a integer;
    v_b integer;
    v_ka text;
    v_kb text;
    v_ra integer;
    v_rb integer;
BEGIN
    IF sketch_column IS NULL THEN
        RAISE EXCEPTION 'sketch_column must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF method IS NULL OR method NOT IN ('representative', 'components') THEN
        RAISE EXCEPTION 'method must be ''representative'' or ''components'', got %', coalesce(quote_literal(method), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM simpg.report_work_mem(rel);
    -- pairs (a < b) by b then a: when b is reached, every earlier row's place is settled
    FOR v_n, v_a, v_b, v_ka, v_kb IN EXECUTE format(
        'WITH p AS MATERIALIZED (%s), '
        'n AS MATERIALIZED (SELECT u.key, (row_number() OVER (ORDER BY u.key))::integer AS i '
        'FROM (SELECT p.key_a AS key FROM p UNION SELECT p.key_b FROM p) AS u) '
        'SELECT (SELECT count(*) FROM n)::integer, x.i, y.i, x.key::text, y.key::text '
        'FROM p JOIN n AS x ON x.key = p.key_a JOIN n AS y ON y.key = p.key_b ORDER BY y.i, x.i',
        simpg.pairs_query(rel, k, col, v_key_column, NULL, sketch_column, max_sketch_distance, bands))
    LOOP
        IF v_keys IS NULL THEN
            v_link := array_fill(NULL::integer, ARRAY[v_n]);
            v_keys := array_fill(NULL::text, ARRAY[v_n]);
        END IF;
        v_keys[v_a] := v_ka;
        v_keys[v_b] := v_kb;
        IF method = 'representative' THEN
            -- a leads when it joined nobody; b joins its earliest such neighbour
            IF v_link[v_a] IS NULL AND v_link[v_b] IS NULL THEN
                v_link[v_b] := v_a;
            END IF;
            CONTINUE;
        END IF;
        v_ra := v_a;
        WHILE v_link[v_ra] IS NOT NULL LOOP
            v_ra := v_link[v_ra];
        END LOOP;
        v_rb := v_b;
        WHILE v_link[v_rb] IS NOT NULL LOOP
            v_rb := v_link[v_rb];
        END LOOP;
        IF v_ra <> v_rb THEN  -- the smaller number (smaller key) stays the root
            v_link[GREATEST(v_ra, v_rb)] := LEAST(v_ra, v_rb);
        END IF;
        v_link[v_a] := LEAST(v_ra, v_rb);  -- shorten the paths walked
        v_link[v_b] := LEAST(v_ra, v_rb);
        IF v_link[v_a] = v_a THEN
            v_link[v_a] := NULL;
        END IF;
    END LOOP;
    IF v_keys IS NULL THEN
        RETURN;
    END IF;
    v_comps := array_fill(NULL::integer, ARRAY[v_n]);
    FOR v_i IN 1 .. v_n LOOP
        v_a := v_i;
        WHILE v_link[v_a] IS NOT NULL AND method = 'components' LOOP
            v_a := v_link[v_a];
        END LOOP;
        v_comps[v_i] := coalesce(v_link[v_a], v_a);
    END LOOP;
    RETURN QUERY SELECT u.key, u.comp FROM unnest(v_keys, v_comps) AS u(key, comp);
END
$$;

COMMENT ON FUNCTION simpg.confirmed_clusters(regclass, integer, name, name, text, name, integer, boolean) IS
    'Internal: clusters of rel''s rows over the pairs confirmed by sketch_column (key as text, comp)';

-- cluster_call: the call of the clustering function of method on layout's table
-- (fingerprint, cluster), as text for the report statements.
CREATE OR REPLACE FUNCTION simpg.cluster_call(layout simpg.indexes, k integer, method text, key_column name)
    RETURNS text
    LANGUAGE sql STABLE
    RETURN CASE method
        WHEN 'components' THEN pg_catalog.format(
            'simpg.fingerprint_clusters(%L::pg_catalog.regclass, %s, %L::pg_catalog.name)',
            layout.indexed_table, k, layout.fingerprint_column)
        ELSE pg_catalog.format(
            'simpg.fingerprint_representatives(%L::pg_catalog.regclass, %s, %L::pg_catalog.name, %L::pg_catalog.name)',
            layout.indexed_table, k, layout.fingerprint_column,
            (simpg.report_key(layout.indexed_table, key_column)).column_name)
    END;

COMMENT ON FUNCTION simpg.cluster_call(simpg.indexes, integer, text, name) IS
    'Internal: the call of the clustering function of method, as text';

-- cluster_rows_query: rows of rel with their cluster, columns key (key_expr over the
-- row as t) and comp (the cluster's representative fingerprint, or for 'components' its
-- smallest; a row alone at its fingerprint keeps its own). Contract: every row in a
-- cluster of two or more rows comes out once; other rows may come out too, each alone
-- in its comp (the callers keep or count comps of two or more). With the B-trees usable
-- (simpg.prefix_candidates_usable) only the rows that can be in a cluster are read, by
-- index: the rows of a fingerprint with a neighbour (the clustering function's result)
-- and those of a fingerprint two rows share (equal stored values, next to each other in
-- table 0's B-tree: simpg.prefix_repeats). Otherwise every row with a fingerprint.
-- key_expr may read the fingerprint column and key_column only (a role may have
-- SELECT on just those and the prefixes). method is 'representative' or 'components'
-- (else invalid_parameter_value); 'representative' orders rows by the report key
-- (key_column, default the primary key). With sketch_column the clusters are
-- simpg.confirmed_clusters', over the confirmed pairs, and only their rows come out
-- (key_expr then sees a t with the key column alone).
CREATE OR REPLACE FUNCTION simpg.cluster_rows_query(rel regclass, k integer, col name, key_expr text, method text,
                                         key_column name DEFAULT NULL, sketch_column name DEFAULT NULL,
                                         max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.checked_layout(rel, k, col);
    v_cols text := format('s.%I', v_row.fingerprint_column) ||
        CASE WHEN key_column <> v_row.fingerprint_column THEN format(', s.%I', key_column) ELSE '' END;
    v_key record;
BEGIN
    IF method IS NULL OR method NOT IN ('representative', 'components') THEN
        RAISE EXCEPTION 'method must be ''representative'' or ''components'', got %', coalesce(quote_literal(method), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF simpg.report_sketch_distance(rel, sketch_column, max_sketch_distance, bands) IS NOT NULL THEN
        v_key := simpg.report_key(rel, key_column);
        RETURN format(
            'SELECT %s AS key, c.comp FROM simpg.confirmed_clusters(%L::pg_catalog.regclass, %s, %L::pg_catalog.name, '
            '%L::pg_catalog.name, %L, %L::pg_catalog.name, %s, %L) AS c, LATERAL (SELECT c.key::%s AS %I) AS t',
            key_expr, rel, k, v_row.fingerprint_column, v_key.column_name, method, sketch_column,
            coalesce(max_sketch_distance::text, 'NULL'), simpg.with_bands(sketch_column, bands), v_key.column_type,
            v_key.column_name);
    END IF;
    IF simpg.prefix_candidates_usable(v_row, simpg.pair_masks(v_row, k)) THEN
        -- f: table 0's stored value of each such fingerprint, with its cluster if it
        -- has one; then its rows by index (a row whose stored value is stale is left out)
        RETURN format(
            'WITH c AS MATERIALIZED (SELECT * FROM %1$s), '
            'f AS MATERIALIZED (SELECT u.v, max(u.comp) AS comp FROM ('
            'SELECT simpg.permute(c.fingerprint, %2$L::integer, %3$L::integer[], 0) AS v, c.cluster AS comp FROM c '
            'UNION ALL SELECT w.v, NULL FROM (%4$s) AS w WHERE w.v = w.l) AS u GROUP BY u.v) '
            'SELECT %5$s AS key, coalesce(f.comp, t.%6$I) AS comp FROM f, LATERAL (%7$s) AS t '
            'WHERE simpg.permute(t.%6$I, %2$L::integer, %3$L::integer[], 0) = f.v',
            simpg.cluster_call(v_row, k, method, key_column), v_row.k, v_row.levels,
            simpg.prefix_repeats(v_row, 0), key_expr, v_row.fingerprint_column,
            simpg.prefix_rows(v_row, 0, v_cols, 'f.v'));
    END IF;
    RETURN format(
        'SELECT %s AS key, coalesce(c.cluster, t.%I) AS comp FROM %s AS t LEFT JOIN %s AS c ON c.fingerprint = t.%I '
        'WHERE t.%I IS NOT NULL',
        key_expr, v_row.fingerprint_column, rel, simpg.cluster_call(v_row, k, method, key_column),
        v_row.fingerprint_column, v_row.fingerprint_column);
END
$$;

COMMENT ON FUNCTION simpg.cluster_rows_query(regclass, integer, name, text, text, name, name, integer, boolean) IS
    'Internal: the statement giving the rows of rel that may be in a cluster (key_expr AS key) and their cluster';

-- clusters_query: the statement simpg.clusters runs.
-- Contract: columns cluster_id, key, size; one row per row of rel in a cluster of two
-- or more rows; cluster_id is the smallest key of the cluster, size its number of rows.
-- Ordered by cluster_id, key. method 'representative' (the default): rows in key order,
-- each joins the earliest representative within k or becomes one, so every member is
-- within k of the row cluster_id names; 'components': connected components, where a
-- row joins when it is within k of any member (through a chain of such rows). With
-- sketch_column, max_sketch_distance and bands the clusters are made of the pairs
-- pairs_query reports with them (confirmed by the sketches): every member of a
-- 'representative' cluster is a confirmed near-duplicate of the row cluster_id names.
CREATE OR REPLACE FUNCTION simpg.clusters_query(rel regclass, k integer, col name DEFAULT NULL,
                                     key_column name DEFAULT NULL, key_type regtype DEFAULT NULL,
                                     method text DEFAULT 'representative', sketch_column name DEFAULT NULL,
                                     max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT NULL)
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
        v_type, v_type,
        simpg.cluster_rows_query(rel, k, col, format('t.%I', v_key.column_name), method, v_key.column_name,
                                 sketch_column, max_sketch_distance, bands));
END
$$;

COMMENT ON FUNCTION simpg.clusters_query(regclass, integer, name, name, regtype, text, name, integer, boolean) IS
    'The SQL statement that lists the near-duplicate clusters of rel (cluster_id, key, size)';

-- clusters: near-duplicate clusters, keys as bigint (see clusters_query for method).
CREATE OR REPLACE FUNCTION simpg.clusters(rel regclass, k integer, col name DEFAULT NULL, key_column name DEFAULT NULL,
                               method text DEFAULT 'representative', sketch_column name DEFAULT NULL,
                               max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT NULL)
    RETURNS TABLE (cluster_id bigint, key bigint, size bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.clusters_query(rel, k, col, key_column, 'bigint', method, sketch_column,
                                              max_sketch_distance, bands);
END
$$;

COMMENT ON FUNCTION simpg.clusters(regclass, integer, name, name, text, name, integer, boolean) IS
    'Near-duplicate clusters of rel under distance <= k (confirmed by sketch_column if given), around representatives (or method => ''components''): cluster_id = smallest key, one row per member';

CREATE OR REPLACE FUNCTION simpg.clusters(key_type anyelement, rel regclass, k integer, col name DEFAULT NULL,
                               key_column name DEFAULT NULL, method text DEFAULT 'representative',
                               sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                               bands boolean DEFAULT NULL)
    RETURNS TABLE (cluster_id anyelement, key anyelement, size bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.clusters_query(rel, k, col, key_column, pg_typeof(key_type)::regtype, method,
                                              sketch_column, max_sketch_distance, bands);
END
$$;

COMMENT ON FUNCTION simpg.clusters(anyelement, regclass, integer, name, name, text, name, integer, boolean) IS
    'Near-duplicate clusters of rel, keys of the type of the first argument (NULL::uuid, NULL::text, ...)';

-- cluster_groups: the statement giving n, the number of rows of rel with a
-- fingerprint, and per cluster of two or more rows its size (comp, size), as CTEs a
-- and g for the statistics below. Rows alone in their cluster are counted, not read
-- (simpg.cluster_rows_query reads only the rows that can be in a cluster).
CREATE OR REPLACE FUNCTION simpg.cluster_groups(rel regclass, k integer, col name, key_column name, method text,
                                     sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                                     bands boolean DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN format(
        'WITH g AS MATERIALIZED (SELECT w.comp, count(*) AS size FROM (%s) AS w GROUP BY w.comp HAVING count(*) > 1), '
        'a AS MATERIALIZED (SELECT count(*) AS n FROM %s AS t WHERE t.%I IS NOT NULL) ',
        simpg.cluster_rows_query(rel, k, col, 'NULL', method, key_column, sketch_column, max_sketch_distance, bands),
        rel, (simpg.checked_layout(rel, k, col)).fingerprint_column);
END
$$;

COMMENT ON FUNCTION simpg.cluster_groups(regclass, integer, name, name, text, name, integer, boolean) IS
    'Internal: CTEs a (rows with a fingerprint) and g (size of each cluster of two or more rows) for the statistics';

-- cluster_sizes: histogram of cluster sizes; size 1 counts the rows with no
-- near-duplicate. The key orders rows for 'representative'; 'components' needs none.
CREATE OR REPLACE FUNCTION simpg.cluster_sizes(rel regclass, k integer, col name DEFAULT NULL,
                                    key_column name DEFAULT NULL, method text DEFAULT 'representative',
                                    sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                                    bands boolean DEFAULT NULL)
    RETURNS TABLE (cluster_size bigint, clusters bigint, rows bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.cluster_groups(rel, k, col, key_column, method, sketch_column, max_sketch_distance,
                                              bands) ||
        'SELECT g.size, count(*), sum(g.size)::bigint FROM g GROUP BY g.size '
        'UNION ALL SELECT 1::bigint, s.n, s.n FROM (SELECT a.n - (SELECT coalesce(sum(g.size), 0) FROM g)::bigint AS n '
        'FROM a) AS s WHERE s.n > 0 ORDER BY 1';
END
$$;

COMMENT ON FUNCTION simpg.cluster_sizes(regclass, integer, name, name, text, name, integer, boolean) IS
    'Histogram of near-duplicate cluster sizes of rel under distance <= k, confirmed by sketch_column if given (size 1: rows with no near-duplicate)';

-- duplicate_stats: one row summing up the duplicates of rel. rows counts the rows
-- with a fingerprint; duplicated_rows those in a cluster; rows_after_dedup keeps one
-- row per cluster (its representative). The key orders rows for 'representative';
-- 'components' needs none.
CREATE OR REPLACE FUNCTION simpg.duplicate_stats(rel regclass, k integer, col name DEFAULT NULL,
                                      key_column name DEFAULT NULL, method text DEFAULT 'representative',
                                      sketch_column name DEFAULT NULL, max_sketch_distance integer DEFAULT NULL,
                                      bands boolean DEFAULT NULL)
    RETURNS TABLE (rows bigint, duplicated_rows bigint, clusters bigint, largest_cluster bigint,
                   rows_after_dedup bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.cluster_groups(rel, k, col, key_column, method, sketch_column, max_sketch_distance,
                                              bands) ||
        'SELECT a.n, s.rows, s.clusters, s.largest, a.n - s.rows + s.clusters FROM a, '
        '(SELECT coalesce(sum(g.size), 0)::bigint AS rows, count(*) AS clusters, '
        'coalesce(max(g.size), 0)::bigint AS largest FROM g) AS s';
END
$$;

COMMENT ON FUNCTION simpg.duplicate_stats(regclass, integer, name, name, text, name, integer, boolean) IS
    'Rows, rows in a cluster, clusters, largest cluster, and rows left keeping one per cluster';
-- shard functions
--
-- Shards on several servers with PostgreSQL's own sharding: a partitioned table on a
-- coordinator whose partitions are postgres_fdw foreign tables, each the table of a
-- shard server that has simpg and an index of the same layout. No router of simpg's:
-- PostgreSQL routes writes to the partitions and runs lookups on every shard at once
-- (asynchronous foreign scans).
--
-- The layout is registered once, on the coordinator: simpg.create_index on the
-- partitioned parent gives it (and every foreign partition, which inherits them) the
-- generated prefix columns. A foreign table stores nothing, so they are computed where
-- the rows are: postgres_fdw sends DEFAULT for a generated column on INSERT, and the
-- shard's own generated columns (its simpg index, made by the statements of
-- simpg.shard_ddl) compute them. A lookup through the parent sends each shard the
-- prefix ranges and the distance filter (simpg.hamming is a SQL function that
-- PostgreSQL inlines into bit_count(a # b), which postgres_fdw ships on either install
-- path); each shard answers from its own B-trees.
--
-- postgres_fdw runs no DDL on the remote side, so a shard's table and index are made
-- by statements that simpg.shard_ddl writes and a client runs on the shard (the
-- `simpg shard create` command, or psql): they run with the shard's own rights, need
-- no dblink, and can be read first. simpg.check_shards then reads each shard's
-- simpg.indexes through postgres_fdw, so the coordinator can tell that every shard has
-- the parent's layout: a shard indexed with another layout would answer with other
-- permutations under the same column names and silently miss rows.
--
-- Nothing here needs postgres_fdw at install time: the functions look it up when they run.

-- shard_ddl: the statements that make a shard's table for the partitioned table parent,
-- to run on the shard (which has simpg installed): CREATE TABLE with parent's columns
-- (no defaults: the coordinator computes them before routing a row), its partition key
-- as PRIMARY KEY when that is one column (each key value goes to one shard, so keys
-- unique on every shard are unique everywhere), then simpg.create_index with parent's
-- layout and fingerprint config.
-- Contract: parent is partitioned, owned by the caller, with one simpg index (or col
-- naming one); remote_schema and remote_table default to parent's schema and name.
-- Columns of types the shard lacks (an enum, a domain) must be made there first.
CREATE OR REPLACE FUNCTION simpg.shard_ddl(parent regclass, remote_schema name DEFAULT NULL,
                                remote_table name DEFAULT NULL, col name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_target text;
    v_columns text;
    v_key text;
BEGIN
    v_row := simpg.sharded_layout(parent, col);
    SELECT format('%I.%I', coalesce(remote_schema, n.nspname), coalesce(remote_table, c.relname))
    INTO v_target
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = parent;
    -- every column but parent's prefix columns: those are the shard's simpg index. Other
    -- generated columns keep their expressions: postgres_fdw sends DEFAULT for them.
    SELECT string_agg(format('%I %s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                             CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                                  THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END,
                             CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                             CASE WHEN a.attgenerated = 's'
                                  THEN format(' GENERATED ALWAYS AS (%s) STORED', pg_get_expr(d.adbin, d.adrelid))
                                  ELSE '' END),
                      ', ' ORDER BY a.attnum)
    INTO v_columns
    FROM pg_attribute AS a
    JOIN pg_type AS t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = parent AND a.attnum > 0 AND NOT a.attisdropped
      AND a.attname <> ALL (v_row.prefix_columns);
    SELECT format(', PRIMARY KEY (%I)', a.attname) INTO v_key
    FROM pg_partitioned_table AS p
    JOIN pg_attribute AS a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
    WHERE p.partrelid = parent AND p.partnatts = 1 AND p.partattrs[0] <> 0;
    RETURN NEXT format('CREATE TABLE %s (%s%s)', v_target, v_columns, coalesce(v_key, ''));
    RETURN NEXT format('SELECT simpg.create_index(%L::regclass, %L::name, %s::integer, %s::integer, %s::integer, %s::text)',
                       v_target, v_row.fingerprint_column, v_row.k, v_row.levels[1],
                       coalesce(v_row.levels[2]::text, 'NULL'), coalesce(quote_literal(v_row.fingerprint_config), 'NULL'));
END
$$;

COMMENT ON FUNCTION simpg.shard_ddl(regclass, name, name, name) IS
    'Statements to run on a shard server: its table for the partitioned table parent, and a simpg index of parent''s layout';

-- sharded_layout: the simpg.indexes row of a partitioned table that shards are made
-- for. Contract: raises unless parent is a partitioned table owned by the caller with a
-- (single, or named by col) simpg index.
CREATE OR REPLACE FUNCTION simpg.sharded_layout(parent regclass, col name DEFAULT NULL) RETURNS simpg.indexes
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF parent IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = parent) IS DISTINCT FROM 'p' THEN
        RAISE EXCEPTION 'table % is not partitioned; shards are the partitions of a partitioned table', parent
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'create it with PARTITION BY HASH (key), then simpg.create_index on it';
    END IF;
    IF NOT simpg.owns(parent) THEN
        RAISE EXCEPTION 'must be owner of table %', parent USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN simpg.index_layout(parent, col);
END
$$;

COMMENT ON FUNCTION simpg.sharded_layout(regclass, name) IS
    'The simpg index of a partitioned table that shards are made for; raises unless there is one and the caller owns the table';

-- shard_server_problem: why the caller must not send credentials or rows through the
-- foreign server server, NULL when it may. Only through a server the caller itself owns
-- (srvowner = current_user, not a role it is a member of): its owner reads the options of
-- every user mapping on it, passwords included (pg_user_mappings), and points it anywhere
-- with ALTER SERVER; and only through the caller's own user mapping (umuser =
-- current_user), never a PUBLIC one that postgres_fdw would fall back to (need_mapping
-- false: the caller is about to make its own). options ('key=value', from the caller's
-- connection string) must match the server's: each one given, and host, hostaddr, port,
-- dbname and service also when absent (a server that names another database than the
-- connection string would take the shard's rows there). Reads the catalogs only.
CREATE OR REPLACE FUNCTION simpg.shard_server_problem(server name, options text[] DEFAULT NULL, need_mapping boolean DEFAULT true,
                                           OUT problem text, OUT detail text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_server record;
    v_key text;
    v_want text;
    v_have text;
BEGIN
    SELECT s.oid, s.srvowner, s.srvoptions, w.fdwname INTO v_server
    FROM pg_foreign_server AS s JOIN pg_foreign_data_wrapper AS w ON w.oid = s.srvfdw WHERE s.srvname = server;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'foreign server % does not exist', quote_ident(server)
            USING ERRCODE = 'undefined_object',
                  HINT = 'CREATE SERVER ... FOREIGN DATA WRAPPER postgres_fdw and a user mapping first';
    END IF;
    IF v_server.srvowner <> (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user) THEN
        problem := 'server not owned';
        detail := format('foreign server %I belongs to role %I, not to %I: its owner could read the password of a user mapping on it and point it at another database; use a server of your own (another name)',
                         server, pg_get_userbyid(v_server.srvowner), current_user);
        RETURN;
    END IF;
    IF v_server.fdwname <> 'postgres_fdw' THEN
        problem := 'not postgres_fdw';
        detail := format('server %I uses foreign data wrapper %I; shards need postgres_fdw', server, v_server.fdwname);
        RETURN;
    END IF;
    FOR v_key IN SELECT DISTINCT x.key
                 FROM (SELECT split_part(o, '=', 1) AS key FROM unnest(options) AS o
                       UNION ALL SELECT unnest(ARRAY['host', 'hostaddr', 'port', 'dbname', 'service'])) AS x
                 WHERE options IS NOT NULL ORDER BY x.key LOOP
        SELECT substr(o, length(v_key) + 2) INTO v_want FROM unnest(options) AS o WHERE o LIKE v_key || '=%' LIMIT 1;
        SELECT substr(o, length(v_key) + 2) INTO v_have FROM unnest(v_server.srvoptions) AS o
        WHERE o LIKE v_key || '=%' LIMIT 1;
        IF v_want IS DISTINCT FROM v_have THEN
            problem := 'options differ';
            detail := format('foreign server %I has %s %s, the connection string %s', server, v_key,
                             coalesce(quote_literal(v_have), 'none'), coalesce(quote_literal(v_want), 'none'));
            RETURN;
        END IF;
    END LOOP;
    IF need_mapping AND NOT EXISTS (SELECT FROM pg_user_mappings AS u
                                    WHERE u.srvid = v_server.oid
                                      AND u.umuser = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user)) THEN
        problem := 'no user mapping';
        detail := format('foreign server %I has no user mapping for %I (a PUBLIC mapping is not used): CREATE USER MAPPING FOR CURRENT_USER SERVER %I',
                         server, current_user, server);
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.shard_server_problem(name, text[], boolean) IS
    'Internal: why a foreign server must not carry the caller''s shards (not its own, no own user mapping, other options); NULL when it may';

-- check_shard_server: raise unless the caller may use foreign server server for shards
-- (simpg.shard_server_problem), naming the server and, when it is not the caller's, its
-- owner. Every path that writes a user mapping or attaches a shard goes through it.
CREATE OR REPLACE FUNCTION simpg.check_shard_server(server name, options text[] DEFAULT NULL, need_mapping boolean DEFAULT true)
    RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_found record;
BEGIN
    IF server IS NULL THEN
        RAISE EXCEPTION 'server must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO v_found FROM simpg.shard_server_problem(server, options, need_mapping);
    IF v_found.problem IS NOT NULL THEN
        RAISE EXCEPTION 'foreign server % cannot carry shards: %', quote_ident(server), v_found.detail
            USING ERRCODE = CASE v_found.problem WHEN 'server not owned' THEN 'insufficient_privilege'
                                                 WHEN 'no user mapping' THEN 'insufficient_privilege'
                                                 WHEN 'not postgres_fdw' THEN 'wrong_object_type'
                                                 ELSE 'invalid_parameter_value' END;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.check_shard_server(name, text[], boolean) IS
    'Raise unless a foreign server is the caller''s own postgres_fdw server with its own user mapping (and the given options)';

-- remote_index_problems: what is wrong with the shard table remote_schema.remote_table on
-- foreign server server for the simpg index layout of parent, read from the shard's
-- simpg.indexes through postgres_fdw (a temporary foreign table, dropped before
-- returning). One row per problem, none when the shard has exactly parent's layout:
-- those of simpg.shard_server_problem ('server not owned', 'no user mapping', 'not
-- postgres_fdw': the server is then not used at all), 'unreachable' (the connection failed; detail has postgres_fdw's
-- message, which names the server), 'simpg missing' (no simpg.indexes there), 'error'
-- (another error while reading it), 'no simpg index', 'layout differs', 'missing b-tree'.
CREATE OR REPLACE FUNCTION simpg.remote_index_problems(parent regclass, server name, remote_schema name,
                                            remote_table name, col name DEFAULT NULL)
    RETURNS TABLE (problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.sharded_layout(parent, col);
    v_target text := format('%I.%I', remote_schema, remote_table);
    v_found record;
    v_seen boolean := false;
    v_detail text;
BEGIN
    -- nothing goes through a server or user mapping that is not the caller's own
    SELECT * INTO problem, detail FROM simpg.shard_server_problem(server);
    IF problem IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    BEGIN
        IF pg_catalog.to_regclass('pg_temp.simpg_remote_indexes') IS NOT NULL THEN
            DROP FOREIGN TABLE pg_temp.simpg_remote_indexes;
        END IF;
        -- the view's regclass and name columns as text: regclass names the shard's table
        -- as the shard sees it (postgres_fdw's sessions run with search_path pg_catalog,
        -- so it is schema-qualified)
        EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_indexes (indexed_table text, fingerprint_column text, '
                       'k integer, levels integer[], prefix_columns text[], index_names text[]) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)', server, 'simpg', 'indexes');
        -- compared here, not in a WHERE clause: postgres_fdw would send it to the shard,
        -- which has no regclass = text
        FOR v_found IN SELECT * FROM pg_temp.simpg_remote_indexes LOOP
            CONTINUE WHEN v_found.indexed_table <> v_target OR v_found.fingerprint_column <> v_row.fingerprint_column;
            v_seen := true;
            IF v_found.k <> v_row.k OR v_found.levels <> v_row.levels
               OR v_found.prefix_columns <> v_row.prefix_columns::text[] THEN
                problem := 'layout differs';
                detail := format('%s.%I on server %I has k=%s blocks=%s with columns %s; %s has k=%s blocks=%s with columns %s',
                                 v_target, v_row.fingerprint_column, server, v_found.k,
                                 array_to_string(v_found.levels, 'x'), v_found.prefix_columns, parent,
                                 v_row.k, array_to_string(v_row.levels, 'x'), v_row.prefix_columns);
                RETURN NEXT;
            ELSIF array_position(v_found.index_names, NULL) IS NOT NULL THEN
                problem := 'missing b-tree';
                detail := format('%s.%I on server %I lacks B-trees (answers stay exact, but read the whole shard); run simpg.repair there',
                                 v_target, v_row.fingerprint_column, server);
                RETURN NEXT;
            END IF;
        END LOOP;
        DROP FOREIGN TABLE pg_temp.simpg_remote_indexes;
    EXCEPTION
        WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception OR connection_failure THEN
            GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
            problem := 'unreachable';
            detail := SQLERRM || coalesce(': ' || nullif(rtrim(v_detail, E'\n'), ''), '');
            RETURN NEXT;
            RETURN;
        WHEN undefined_table OR invalid_schema_name THEN
            problem := 'simpg missing';
            detail := format('server %I has no simpg.indexes (%s); install simpg there', server, SQLERRM);
            RETURN NEXT;
            RETURN;
        WHEN OTHERS THEN
            problem := 'error';
            detail := format('reading simpg.indexes on server %I: %s', server, SQLERRM);
            RETURN NEXT;
            RETURN;
    END;
    IF NOT v_seen THEN
        problem := 'no simpg index';
        detail := format('server %I has no simpg index on %s.%I (run the statements of simpg.shard_ddl(%L) there)',
                         server, v_target, v_row.fingerprint_column, parent::text);
        RETURN NEXT;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.remote_index_problems(regclass, name, name, name, name) IS
    'Internal: problems of a shard table''s simpg index against a partitioned table''s layout, read through postgres_fdw';

-- shards: the foreign partitions of parent, at every level, with their server and the
-- table each one reads (postgres_fdw's schema_name and table_name options, defaulting to
-- the foreign table's own), and whether postgres_fdw scans it asynchronously
-- (async_capable of the foreign table, else of the server). Reads the catalogs only.
CREATE OR REPLACE FUNCTION simpg.shards(parent regclass)
    RETURNS TABLE (shard regclass, server name, remote_schema name, remote_table name,
                   bound text, async_capable boolean)
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.oid::regclass, s.srvname,
           coalesce((SELECT substr(o, length('schema_name=') + 1) FROM unnest(f.ftoptions) AS o
                     WHERE o LIKE 'schema_name=%'),
                    n.nspname)::name,
           coalesce((SELECT substr(o, length('table_name=') + 1) FROM unnest(f.ftoptions) AS o
                     WHERE o LIKE 'table_name=%'), c.relname)::name,
           pg_get_expr(c.relpartbound, c.oid),
           coalesce((SELECT substr(o, length('async_capable=') + 1) FROM unnest(f.ftoptions) AS o
                     WHERE o LIKE 'async_capable=%'),
                    (SELECT substr(o, length('async_capable=') + 1) FROM unnest(s.srvoptions) AS o
                     WHERE o LIKE 'async_capable=%'), 'false')::boolean
    FROM pg_partition_tree(parent) AS m
    JOIN pg_class AS c ON c.oid = m.relid AND c.relkind = 'f'
    JOIN pg_namespace AS n ON n.oid = c.relnamespace
    JOIN pg_foreign_table AS f ON f.ftrelid = c.oid
    JOIN pg_foreign_server AS s ON s.oid = f.ftserver
    ORDER BY m.level, c.oid::regclass::text
$$;

COMMENT ON FUNCTION simpg.shards(regclass) IS
    'Foreign partitions of a partitioned table: server, remote table, partition bound, asynchronous scans';

-- check_shards: every problem of parent's shards, one row each; no rows means each
-- foreign partition reaches a shard table with exactly parent's simpg index layout and
-- is scanned asynchronously. Problems: those of simpg.remote_index_problems, 'not async'
-- (lookups would visit the shards one after the other), and 'no shards'.
-- Contract: reads every shard's simpg.indexes through postgres_fdw, with the caller's
-- user mappings; a shard that cannot be reached is a problem row, not an error.
CREATE OR REPLACE FUNCTION simpg.check_shards(parent regclass, col name DEFAULT NULL)
    RETURNS TABLE (shard regclass, server name, problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_shard record;
    v_problem record;
    v_any boolean := false;
BEGIN
    PERFORM simpg.sharded_layout(parent, col);
    FOR v_shard IN SELECT * FROM simpg.shards(parent) LOOP
        v_any := true;
        shard := v_shard.shard;
        server := v_shard.server;
        IF NOT v_shard.async_capable THEN
            problem := 'not async';
            detail := format('%s is not scanned asynchronously: ALTER FOREIGN TABLE %s OPTIONS (ADD async_capable %L)',
                             v_shard.shard, v_shard.shard, 'true');
            RETURN NEXT;
        END IF;
        FOR v_problem IN SELECT * FROM simpg.remote_index_problems(parent, v_shard.server, v_shard.remote_schema,
                                                                   v_shard.remote_table, col) LOOP
            problem := v_problem.problem;
            detail := v_problem.detail;
            RETURN NEXT;
        END LOOP;
    END LOOP;
    IF NOT v_any THEN
        shard := NULL;
        server := NULL;
        problem := 'no shards';
        detail := format('%s has no foreign partitions', parent);
        RETURN NEXT;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.check_shards(regclass, name) IS
    'Problems of a partitioned table''s foreign partitions: shards unreachable, without simpg, or with another layout; none when all is well';

-- attach_shard: make a shard table a hash partition of parent on the coordinator:
-- CREATE FOREIGN TABLE ... PARTITION OF parent FOR VALUES WITH (MODULUS modulus,
-- REMAINDER remainder) SERVER server, scanned asynchronously (async_capable),
-- fetched 10,000 rows per round trip (fetch_size; postgres_fdw's default of 100 makes
-- a whole-table read, such as SimHashColumn.pairs, a round trip per 100 rows), and written
-- 1,000 rows per round trip by INSERT (batch_size; the default of 1 made an INSERT of
-- 20,000 rows through the coordinator take 60 s instead of 0.9 s).
-- Contract: parent is hash-partitioned, owned by the caller, with a simpg index; the
-- shard table (remote_schema.remote_table, default parent's schema and name) already
-- has exactly parent's layout, which is read through postgres_fdw before anything is
-- created: any problem raises, naming the server. The partition is named
-- partition_name (default: parent's name, '_', the server's) in parent's schema.
-- For range or list partitioning, create the foreign partition yourself (the same
-- options) and run simpg.check_shards.
CREATE OR REPLACE FUNCTION simpg.attach_shard(parent regclass, server name, modulus integer, remainder integer,
                                   remote_schema name DEFAULT NULL, remote_table name DEFAULT NULL,
                                   partition_name name DEFAULT NULL)
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_strategy "char";
    v_schema name;
    v_name name;
    v_problem record;
    v_partition regclass;
BEGIN
    IF server IS NULL OR modulus IS NULL OR remainder IS NULL THEN
        RAISE EXCEPTION 'server, modulus and remainder must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_row := simpg.sharded_layout(parent);
    SELECT p.partstrat INTO v_strategy FROM pg_partitioned_table AS p WHERE p.partrelid = parent;
    IF v_strategy <> 'h' THEN
        RAISE EXCEPTION 'table % is not hash-partitioned; create its foreign partitions yourself and run simpg.check_shards', parent
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF modulus < 1 OR remainder < 0 OR remainder >= modulus THEN
        RAISE EXCEPTION 'remainder must be from 0 to modulus - 1, got modulus % and remainder %', modulus, remainder
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT n.nspname, c.relname INTO v_schema, v_name
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = parent;
    remote_schema := coalesce(remote_schema, v_schema);
    remote_table := coalesce(remote_table, v_name);
    FOR v_problem IN SELECT * FROM simpg.remote_index_problems(parent, server, remote_schema, remote_table) LOOP
        RAISE EXCEPTION 'shard % cannot be attached to %: % (%)', quote_ident(server), parent,
            v_problem.problem, v_problem.detail
            USING ERRCODE = CASE WHEN v_problem.problem = 'unreachable' THEN 'sqlclient_unable_to_establish_sqlconnection'
                                 WHEN v_problem.problem IN ('server not owned', 'no user mapping') THEN 'insufficient_privilege'
                                 ELSE 'invalid_object_definition' END,
                  HINT = CASE v_problem.problem
                      WHEN 'unreachable' THEN 'check that the shard is up and the server''s options and user mapping'
                      WHEN 'server not owned' THEN 'create a foreign server of your own, under another name (simpg shard create does)'
                      WHEN 'no user mapping' THEN 'CREATE USER MAPPING FOR CURRENT_USER on the server (simpg shard create does)'
                      WHEN 'layout differs' THEN 'drop the shard''s index (simpg.drop_index there) and run the statements of simpg.shard_ddl'
                      WHEN 'missing b-tree' THEN 'run simpg.repair on the shard'
                      ELSE 'run the statements of simpg.shard_ddl on the shard first (simpg shard create does)' END;
    END LOOP;
    partition_name := coalesce(partition_name, simpg.object_name(v_name, '_' || server));
    EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES WITH (MODULUS %s, REMAINDER %s) '
                   'SERVER %I OPTIONS (schema_name %L, table_name %L, async_capable %L, fetch_size %L, batch_size %L)',
                   v_schema, partition_name, parent, modulus, remainder, server,
                   remote_schema, remote_table, 'true', '10000', '1000');
    v_partition := format('%I.%I', v_schema, partition_name)::regclass;
    RETURN v_partition;
END
$$;

COMMENT ON FUNCTION simpg.attach_shard(regclass, name, integer, integer, name, name, name) IS
    'Attach a shard server''s table (checked to have the same simpg layout) as a foreign hash partition, scanned asynchronously';
-- range shard functions
--
-- The range distribution of a sharded index (Google's design, seeds 001/003): for each
-- permuted table t of the layout the coordinator holds a table <table>_<col>_r<t>
-- (p bigint, key bigint, fp bigint), p = simpg.permute(fp, k, levels, t), PARTITION BY
-- RANGE (p), whose partitions are postgres_fdw foreign tables, one per shard, over equal
-- ranges of the signed 64-bit value. The bits that choose a shard are the top bits of
-- p, which are always inside table t's prefix, so the rows sharing a lookup's prefix lie
-- in one shard: a lookup reads exactly one partition per permuted table, whatever the
-- number of shards (the hash distribution of 75_shards.sql asks every shard).
--
-- The user's base table (ordinary or partitioned, on the coordinator) keeps its rows;
-- statement-level AFTER triggers with transition tables keep the T permuted tables in
-- step (one INSERT ... SELECT per permuted table per statement, which postgres_fdw
-- sends in batches of batch_size rows). The triggers are also the registry: their
-- arguments (fingerprint column, key column, k, levels, schema and name stem of the
-- permuted tables) are the layout, read by simpg.range_layout. Like simpg.indexes,
-- nothing is stored in a table of simpg's: the registry goes with the base table.
--
-- As for hash shards, postgres_fdw runs no DDL on a shard: simpg.range_shard_ddl writes
-- the shard's tables and B-trees and a client runs them there (simpg shard create
-- --distribution range does).

-- trigger_args: a trigger's arguments (pg_trigger.tgargs, each ended by a zero byte).
CREATE OR REPLACE FUNCTION simpg.trigger_args(args bytea) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_out text[] := '{}';
    v_start integer := 0;
BEGIN
    FOR i IN 0 .. length(args) - 1 LOOP
        IF get_byte(args, i) = 0 THEN
            v_out := v_out || convert_from(substring(args FROM v_start + 1 FOR i - v_start), getdatabaseencoding());
            v_start := i + 1;
        END IF;
    END LOOP;
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION simpg.trigger_args(bytea) IS
    'Internal: the arguments of a trigger (pg_trigger.tgargs) as text';

-- range_shard_bounds: the shard ranges of the permuted values for shards shards: shard
-- i (from 0) holds lo <= p < hi, lo NULL for the first (MINVALUE) and hi NULL for the
-- last (MAXVALUE). The cuts are equal splits of the signed range, rounded to a multiple
-- of 2^(64 - b), b the layout's smallest prefix: every prefix range (the values that
-- share b or more leading bits) then lies in one shard. With a power of two the ranges
-- are exactly equal.
-- Contract: 1 <= shards <= 2^b, else raises naming both.
CREATE OR REPLACE FUNCTION simpg.range_shard_bounds(k integer, levels integer[], shards integer)
    RETURNS TABLE (shard_number integer, lo bigint, hi bigint)
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_bits integer;
    v_cuts bigint[] := '{}';
BEGIN
    IF k IS NULL OR levels IS NULL OR shards IS NULL THEN
        RAISE EXCEPTION 'k, levels and shards must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT min(simpg.prefix_bits(k, levels, t)) INTO v_bits
    FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t;
    IF shards < 1 OR shards::numeric > 2::numeric ^ v_bits THEN
        RAISE EXCEPTION 'shards=% is too many for layout k=% blocks=%: log2(shards) must be at most its smallest prefix, % bits (at most % shards)',
            shards, k, array_to_string(levels, 'x'), v_bits, least(2::numeric ^ v_bits, 2147483647)::bigint
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'use fewer shards, or a layout with longer prefixes (fewer blocks)';
    END IF;
    FOR i IN 1 .. shards - 1 LOOP
        v_cuts := v_cuts || (-(2::numeric ^ 63)
                             + floor(i * 2::numeric ^ v_bits / shards) * 2::numeric ^ (64 - v_bits))::bigint;
    END LOOP;
    FOR i IN 0 .. shards - 1 LOOP
        shard_number := i;
        lo := CASE WHEN i > 0 THEN v_cuts[i] END;
        hi := CASE WHEN i < shards - 1 THEN v_cuts[i + 1] END;
        RETURN NEXT;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.range_shard_bounds(integer, integer[], integer) IS
    'Range distribution: the range of permuted values each of shards shards holds (lo inclusive, hi exclusive, NULL unbounded)';

-- range_layout: the range distribution registered on base (the arguments of its
-- INSERT trigger), with its permuted tables in table order (NULL where one is missing).
-- Contract: raises unless base has range shards on col (or exactly one column, when col
-- is NULL). Needs no rights on base beyond reading the catalogs.
CREATE OR REPLACE FUNCTION simpg.range_layout(base regclass, col name DEFAULT NULL,
                                   OUT fingerprint_column name, OUT key_column name, OUT k integer,
                                   OUT levels integer[], OUT tables regclass[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_args text[];
    v_found integer;
BEGIN
    IF base IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT count(*) INTO v_found
    FROM pg_trigger AS g
    WHERE g.tgrelid = base AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
      AND g.tgtype & 4 <> 0  -- the INSERT trigger
      AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member'  -- a partition's is not a registry
      AND (col IS NULL OR (simpg.trigger_args(g.tgargs))[1] = col);
    IF v_found = 0 THEN
        RAISE EXCEPTION 'table % has no range shards%', base, coalesce(' on column ' || quote_ident(col), '')
            USING ERRCODE = 'undefined_object',
                  HINT = 'set them up with simpg.create_range_index (simpg shard create --distribution range)';
    ELSIF v_found > 1 THEN
        RAISE EXCEPTION 'table % has range shards on several columns; name one as col', base
            USING ERRCODE = 'ambiguous_parameter';
    END IF;
    SELECT simpg.trigger_args(g.tgargs) INTO v_args
    FROM pg_trigger AS g
    WHERE g.tgrelid = base AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
      AND g.tgtype & 4 <> 0 AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member'
      AND (col IS NULL OR (simpg.trigger_args(g.tgargs))[1] = col);
    fingerprint_column := v_args[1];
    key_column := v_args[2];
    k := v_args[3]::integer;
    levels := v_args[4]::integer[];
    SELECT array_agg(to_regclass(format('%I.%I', v_args[5], simpg.object_name(v_args[6], t::text))) ORDER BY t)
    INTO tables
    FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t;
END
$$;

COMMENT ON FUNCTION simpg.range_layout(regclass, name) IS
    'The range shards of a table: fingerprint and key columns, layout, and its permuted tables in table order';

-- complete_range_layout: range_layout, for what needs every permuted table: raises when
-- one of them is gone from the coordinator.
CREATE OR REPLACE FUNCTION simpg.complete_range_layout(base regclass, col name DEFAULT NULL,
                                            OUT fingerprint_column name, OUT key_column name, OUT k integer,
                                            OUT levels integer[], OUT tables regclass[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT * INTO fingerprint_column, key_column, k, levels, tables FROM simpg.range_layout(base, col);
    IF array_position(tables, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'table % lacks some of its permuted tables on the coordinator', base
            USING ERRCODE = 'undefined_table', HINT = 'simpg.drop_range_index, then simpg.create_range_index';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.complete_range_layout(regclass, name) IS
    'Internal: simpg.range_layout, raising when a permuted table is missing';

-- range_radius: the radius a range lookup on base uses: k, or the layout's radius when
-- k is NULL. Contract: raises for k negative or above the layout's radius.
CREATE OR REPLACE FUNCTION simpg.range_radius(base regclass, fingerprint_column name, radius integer, k integer)
    RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF k < 0 THEN
        RAISE EXCEPTION 'k must be a non-negative integer, got %', k USING ERRCODE = 'invalid_parameter_value';
    ELSIF k > radius THEN
        RAISE EXCEPTION 'k=% is above the radius k=% that the range shards of %.% guarantees',
            k, radius, base, quote_ident(fingerprint_column)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN coalesce(k, radius);
END
$$;

COMMENT ON FUNCTION simpg.range_radius(regclass, name, integer, integer) IS
    'Internal: the radius of a range lookup, k or the layout''s; raises if k is negative or above the layout''s';

-- range_members: every table below base (its partitions at every level, or inheritance
-- children), by name. Their rows are base's rows, but a statement on one of them fires
-- no statement trigger of base's, and attaching, detaching or dropping one fires none.
CREATE OR REPLACE FUNCTION simpg.range_members(base regclass) RETURNS regclass[]
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE down AS (
        SELECT h.inhrelid FROM pg_inherits AS h WHERE h.inhparent = base
        UNION ALL
        SELECT h.inhrelid FROM pg_inherits AS h JOIN down AS d ON h.inhparent = d.inhrelid)
    SELECT coalesce(array_agg(d.inhrelid::regclass ORDER BY d.inhrelid::regclass::text), '{}') FROM down AS d
$$;

COMMENT ON FUNCTION simpg.range_members(regclass) IS
    'Internal: the partitions (at every level) or inheritance children of a table';

-- range_members_record: what base's triggers record of its members (the 7th argument of
-- its range triggers): md5 of their names. Names, not oids, so that a dump restores it.
CREATE OR REPLACE FUNCTION simpg.range_members_record(base regclass) RETURNS text
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    RETURN md5(array_to_string(simpg.range_members(base)::text[], ','));

COMMENT ON FUNCTION simpg.range_members_record(regclass) IS
    'Internal: the record of a table''s partitions that its range triggers keep (md5 of their names)';

-- range_out_of_step: why the permuted tables of base.col may not hold exactly base's
-- rows, NULL when they do as far as the catalogs tell. The writes that fire no trigger
-- of base's are caught here: base made a partition or child of another table (writes
-- through that one), a partition created, attached, detached or dropped since the
-- triggers were installed (the record of simpg.range_members_record), or a partition
-- (or base) without its four enabled range triggers. Reads the catalogs only.
CREATE OR REPLACE FUNCTION simpg.range_out_of_step(base regclass, col name) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parent regclass;
    v_col text := encode(convert_to(col, getdatabaseencoding()), 'escape') || '\000';  -- col as the first argument
    v_args text;
    v_layout text;
    v_members regclass[];
    v_triggers bigint;
BEGIN
    SELECT h.inhparent::regclass INTO v_parent FROM pg_inherits AS h WHERE h.inhrelid = base LIMIT 1;
    IF FOUND THEN
        RETURN format('%s is now a partition or child of %s: writes through %s do not reach its range shards',
                      base, v_parent, v_parent);
    END IF;
    -- the arguments as escaped text (a zero byte shows as \000): cheaper than
    -- simpg.trigger_args at every lookup. The registry: base's INSERT trigger on col.
    SELECT encode(g.tgargs, 'escape') INTO v_args
    FROM pg_trigger AS g
    WHERE g.tgrelid = base AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure AND g.tgtype & 4 <> 0
      AND left(encode(g.tgargs, 'escape'), length(v_col)) = v_col
      AND split_part(encode(g.tgargs, 'escape'), '\000', 7) <> 'member';
    v_layout := array_to_string((string_to_array(v_args, '\000'))[1:6], '\000') || '\000';
    v_members := simpg.range_members(base);
    IF coalesce(nullif(split_part(v_args, '\000', 7), ''), md5('')) <> md5(array_to_string(v_members::text[], ',')) THEN
        RETURN format('the partitions of %s changed since its range triggers were installed (a partition created, attached, detached or dropped, or a child table): their rows are not known to be in the range shards',
                      base);
    END IF;
    -- four enabled triggers (insert, update, delete, truncate) naming the permuted tables
    -- on base and on each partition
    SELECT count(*) INTO v_triggers FROM pg_trigger AS g
    WHERE g.tgrelid = ANY (base || v_members) AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
      AND g.tgenabled <> 'D' AND left(encode(g.tgargs, 'escape'), length(v_layout)) = v_layout;
    IF v_triggers <> 4 * (1 + cardinality(v_members)) THEN
        RETURN format('%s or one of its partitions lacks some of its enabled range triggers: writes there may not have reached the range shards',
                      base);
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.range_out_of_step(regclass, name) IS
    'Internal: why a table''s range shards may not hold its rows (partitions changed, triggers missing); NULL when in step';

-- range_in_step: raise unless simpg.range_out_of_step finds nothing; true. Every lookup
-- of the range distribution runs it first: a lookup never answers from permuted tables
-- that may have missed writes.
CREATE OR REPLACE FUNCTION simpg.range_in_step(base regclass, col name) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_problem text := simpg.range_out_of_step(base, col);
BEGIN
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'range shards of %.% are not in step with it: %', base, quote_ident(col), v_problem
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('SELECT simpg.range_fill(%L) refills the shards and installs the triggers on every partition',
                                base::text);
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION simpg.range_in_step(regclass, name) IS
    'Internal: raise unless a table''s range shards are known to hold exactly its rows (run before each range lookup)';

-- range_shards_write: the trigger that keeps the permuted tables in step with the base
-- table, one statement per permuted table per statement on the base table. Arguments:
-- fingerprint column, key column, k, levels, schema and name stem of the permuted
-- tables, and on base the record of its partitions (simpg.range_members_record), on a
-- partition 'member'. Each partition carries the same triggers as base: a statement on
-- the partition fires only its own, a statement on base only base's, so every write is
-- counted once. Rows whose key and fingerprint did not change are left alone; NULL
-- fingerprints are not stored. Old entries are deleted by key among the partitions
-- their permuted values are in (plan-time pruning on constant arrays), in chunks of
-- 10,000 rows; new ones are inserted by INSERT ... SELECT, which postgres_fdw batches.
-- TRUNCATE (BEFORE) of base truncates the permuted tables (postgres_fdw truncates the
-- shards' tables); of a partition, deletes its own rows' entries (TRUNCATE of base fires
-- base's first, then its partitions', which find the permuted tables empty).
-- A partition's trigger raises once the table is no longer under the base table whose
-- triggers name the same permuted tables (detached: its rows are not base's any more),
-- and every trigger raises if the key or fingerprint column changed type (its values
-- would go through a cast that is not the built-in one).
-- Runs with the rights of the role that writes the base table: it needs INSERT and
-- DELETE (TRUNCATE) on the permuted tables and a user mapping for every shard.
CREATE OR REPLACE FUNCTION simpg.range_shards_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_col name := TG_ARGV[0];
    v_key name := TG_ARGV[1];
    v_k integer := TG_ARGV[2]::integer;
    v_levels integer[] := TG_ARGV[3]::integer[];
    v_member boolean := TG_NARGS > 6 AND TG_ARGV[6] = 'member';
    v_tables text[];
    v_old text;
    v_new text;
    v_chunk record;
    v_p bigint[];
    v_types regtype[];
    v_any boolean;
BEGIN
    SELECT array_agg(a.atttypid::regtype ORDER BY a.attname = v_key) INTO v_types
    FROM pg_attribute AS a
    WHERE a.attrelid = TG_RELID AND a.attname IN (v_col, v_key) AND a.attnum > 0 AND NOT a.attisdropped;
    IF v_types IS DISTINCT FROM ARRAY['bigint'::regtype, v_types[2]]
       OR v_types[2] NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'range shards of %: column % must be bigint and key column % smallint, integer or bigint, found %',
            TG_RELID::regclass, quote_ident(v_col), quote_ident(v_key), coalesce(v_types::text, 'none')
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'simpg.drop_range_index, then simpg.create_range_index with the new types';
    END IF;
    IF v_member AND NOT EXISTS (
        WITH RECURSIVE up AS (
            SELECT h.inhparent FROM pg_inherits AS h WHERE h.inhrelid = TG_RELID
            UNION ALL
            SELECT h.inhparent FROM pg_inherits AS h JOIN up AS u ON h.inhrelid = u.inhparent)
        SELECT FROM up JOIN pg_trigger AS g ON g.tgrelid = up.inhparent
        WHERE g.tgfoid = 'simpg.range_shards_write()'::regprocedure AND g.tgname = TG_NAME
          AND (simpg.trigger_args(g.tgargs))[1:6] = TG_ARGV[0:5]
          AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member') THEN
        RAISE EXCEPTION 'table % is no longer a partition of the table whose range shards its trigger % writes', TG_RELID::regclass, TG_NAME
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('DROP TRIGGER %I ON %s (simpg.range_fill of the base table drops it too)', TG_NAME, TG_RELID::regclass);
    END IF;
    SELECT array_agg(format('%I.%I', TG_ARGV[4], simpg.object_name(TG_ARGV[5], t::text)) ORDER BY t) INTO v_tables
    FROM generate_series(0, simpg.table_count(v_k, v_levels) - 1) AS t;
    IF TG_OP = 'TRUNCATE' AND NOT v_member THEN
        EXECUTE 'TRUNCATE ' || array_to_string(v_tables, ', ');
        RETURN NULL;
    END IF;
    -- the (key, fingerprint) entries that go away and those that come
    IF TG_OP = 'TRUNCATE' THEN  -- a partition's own rows, still there (BEFORE TRUNCATE)
        -- built-in: these casts are of a smallint, integer or bigint key (checked above)
        v_old := format('SELECT o.%1$I::bigint AS key, o.%2$I AS fp FROM ONLY %3$s AS o WHERE o.%2$I IS NOT NULL',
                        v_key, v_col, TG_RELID::regclass);
    ELSE
        -- built-in: as above
        v_old := format('SELECT o.%1$I::bigint AS key, o.%2$I AS fp FROM simpg_old AS o WHERE o.%2$I IS NOT NULL', v_key, v_col);
    END IF;
    -- built-in: as above
    v_new := format('SELECT n.%1$I::bigint AS key, n.%2$I AS fp FROM simpg_new AS n WHERE n.%2$I IS NOT NULL', v_key, v_col);
    IF TG_OP = 'UPDATE' THEN  -- rows whose key and fingerprint stay are left alone
        SELECT format('(%s) EXCEPT (%s)', v_old, v_new), format('(%s) EXCEPT (%s)', v_new, v_old) INTO v_old, v_new;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        -- nothing to delete when base's own TRUNCATE emptied the permuted tables just before
        EXECUTE format('SELECT EXISTS (SELECT FROM %s)', v_tables[1]) INTO v_any;
        IF NOT v_any THEN
            RETURN NULL;
        END IF;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE', 'TRUNCATE') THEN
        FOR v_chunk IN EXECUTE format('SELECT array_agg(c.key) AS keys, array_agg(c.fp) AS fps FROM '
                                      '(SELECT e.key, e.fp, (row_number() OVER () - 1) / 10000 AS g FROM (%s) AS e) AS c '
                                      'GROUP BY c.g', v_old) LOOP
            FOR t IN 0 .. cardinality(v_tables) - 1 LOOP
                -- constants in the text: permute folds to shifts and masks
                EXECUTE format('SELECT array_agg(simpg.permute(f, %s, %L::integer[], %s)) FROM unnest($1) AS f',
                               v_k, v_levels, t) INTO v_p USING v_chunk.fps;
                -- EXECUTE's parameters are constants to the planner: only the shards that
                -- hold one of the values are asked, each with one DELETE
                EXECUTE format('DELETE FROM %s AS r WHERE r.p = ANY ($1) AND r.key = ANY ($2)', v_tables[t + 1])
                    USING v_p, v_chunk.keys;
            END LOOP;
        END LOOP;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        FOR t IN 0 .. cardinality(v_tables) - 1 LOOP
            EXECUTE format('INSERT INTO %s (p, key, fp) SELECT simpg.permute(e.fp, %s, %L::integer[], %s), e.key, e.fp '
                           'FROM (%s) AS e', v_tables[t + 1], v_k, v_levels, t, v_new);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.range_shards_write() IS
    'Trigger of the range distribution: keeps the permuted tables of a base table in step with its inserts, updates, deletes and truncates';

-- range_install_triggers: (re)install the range triggers of base for the layout args
-- (fingerprint column, key column, k, levels, schema and stem of the permuted tables):
-- drops every range trigger that names those permuted tables on base and on the tables
-- the caller owns (former partitions too), then creates base's (with the record of its
-- partitions) and the same on each partition. Contract: the caller owns base and its
-- partitions; the caller keeps the permuted tables in step (create_range_index on an
-- empty registry, range_fill by refilling them under a lock).
CREATE OR REPLACE FUNCTION simpg.range_install_triggers(base regclass, args text[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_old record;
    v_rel regclass;
    v_args text;
    v_name name;
BEGIN
    FOR v_old IN SELECT g.tgrelid::regclass AS rel, g.tgname FROM pg_trigger AS g
                 WHERE g.tgfoid = 'simpg.range_shards_write()'::regprocedure
                   AND (simpg.trigger_args(g.tgargs))[1:6] = args[1:6]
                   AND (g.tgrelid = base OR simpg.owns(g.tgrelid)) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', v_old.tgname, v_old.rel);
    END LOOP;
    FOREACH v_rel IN ARRAY base || simpg.range_members(base) LOOP
        v_args := (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args[1:6]) AS a)
                  || ', ' || quote_literal(CASE WHEN v_rel = base THEN simpg.range_members_record(base) ELSE 'member' END);
        v_name := 'simpg_range_' || args[1];
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS simpg_new '
                       'FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_insert'), v_rel, v_args);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS simpg_old NEW TABLE AS simpg_new '
                       'FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_update'), v_rel, v_args);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS simpg_old '
                       'FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_delete'), v_rel, v_args);
        -- BEFORE: a partition's trigger reads the rows that go
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_truncate'), v_rel, v_args);
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.range_install_triggers(regclass, text[]) IS
    'Internal: (re)install the range triggers on a base table and every partition of it, with the record of its partitions';

-- create_range_index: register the range distribution of base.col on the coordinator:
-- the permuted tables <table>_<col>_r<t> (p bigint, key bigint, fp bigint) PARTITION BY
-- RANGE (p), in base's schema, and the triggers that keep them in step (which are the
-- registry). The tables have no partitions yet: simpg.attach_range_shard makes them, and
-- until every shard is attached a write of the base table fails (no partition for the
-- row) rather than lose a row; simpg.range_fill then copies the rows already there.
-- Contract: base is owned by the caller; col is bigint; key_column (default: base's
-- single-column primary key) is smallint, integer or bigint, not null and unique;
-- (k, blocks, inner_blocks) is a valid layout, blocks NULL meaning
-- simpg.default_levels(k, rows of base). Returns the permuted tables in table order.
CREATE OR REPLACE FUNCTION simpg.create_range_index(base regclass, col name, k integer DEFAULT 3, blocks integer DEFAULT NULL,
                                         inner_blocks integer DEFAULT NULL, key_column name DEFAULT NULL)
    RETURNS regclass[]
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_schema name;
    v_name name;
    v_key record;
    v_type regtype;
    v_levels integer[];
    v_stem text;
    v_tables regclass[] := '{}';
    v_table name;
BEGIN
    IF base IS NULL OR col IS NULL OR k IS NULL THEN
        RAISE EXCEPTION 'table, col and k must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT simpg.owns(base) THEN
        RAISE EXCEPTION 'must be owner of table %', base USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT a.atttypid::regtype INTO v_type FROM pg_attribute AS a
    WHERE a.attrelid = base AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % of table % does not exist', quote_ident(col), base USING ERRCODE = 'undefined_column';
    ELSIF v_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column %.% is %, not bigint', base, quote_ident(col), v_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    SELECT * INTO v_key FROM simpg.report_key(base, key_column);
    IF v_key.column_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'key column %.% is %; range shards store keys as bigint (smallint, integer or bigint)',
            base, quote_ident(v_key.column_name), v_key.column_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF EXISTS (SELECT FROM pg_trigger AS g WHERE g.tgrelid = base
               AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
               AND (simpg.trigger_args(g.tgargs))[1] = col) THEN
        RAISE EXCEPTION 'table % has range shards on column % already', base, quote_ident(col)
            USING ERRCODE = 'duplicate_object';
    END IF;
    IF blocks IS NULL THEN
        IF inner_blocks IS NOT NULL THEN
            RAISE EXCEPTION 'inner_blocks needs blocks' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        EXECUTE format('SELECT simpg.default_levels(%s, (SELECT count(*) FROM %s))', k, base) INTO v_levels;
    ELSE
        v_levels := CASE WHEN inner_blocks IS NULL THEN ARRAY[blocks] ELSE ARRAY[blocks, inner_blocks] END;
    END IF;
    PERFORM simpg.table_count(k, v_levels);  -- raises naming an invalid layout
    SELECT n.nspname, c.relname INTO v_schema, v_name
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = base;
    v_stem := v_name || '_' || col || '_r';
    FOR t IN 0 .. simpg.table_count(k, v_levels) - 1 LOOP
        v_table := simpg.object_name(v_stem, t::text);
        EXECUTE format('CREATE TABLE %I.%I (p bigint NOT NULL, key bigint NOT NULL, fp bigint NOT NULL) '
                       'PARTITION BY RANGE (p)', v_schema, v_table);
        v_tables := v_tables || format('%I.%I', v_schema, v_table)::regclass;
    END LOOP;
    -- the partitions carry the triggers too: a statement on one fires none of base's
    PERFORM simpg.range_install_triggers(base, ARRAY[col, v_key.column_name, k::text, v_levels::text, v_schema, v_stem]);
    RETURN v_tables;
END
$$;

COMMENT ON FUNCTION simpg.create_range_index(regclass, name, integer, integer, integer, name) IS
    'Range distribution: the permuted tables of a base table (PARTITION BY RANGE of the permuted value) and the triggers that keep them in step';

-- range_registry: the arguments of base's range INSERT trigger on column col (the
-- registry: fingerprint column, key column, k, levels, schema and stem of the permuted
-- tables, record of the partitions). Contract: base has range shards on col.
CREATE OR REPLACE FUNCTION simpg.range_registry(base regclass, col name) RETURNS text[]
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    RETURN (SELECT simpg.trigger_args(g.tgargs) FROM pg_catalog.pg_trigger AS g
            WHERE g.tgrelid = base AND g.tgfoid = 'simpg.range_shards_write()'::pg_catalog.regprocedure
              AND g.tgtype OPERATOR(pg_catalog.&) 4 OPERATOR(pg_catalog.<>) 0
              AND (simpg.trigger_args(g.tgargs))[1] OPERATOR(pg_catalog.=) col
              AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member');

COMMENT ON FUNCTION simpg.range_registry(regclass, name) IS
    'Internal: the arguments of a table''s range INSERT trigger (its range layout and the record of its partitions)';

-- drop_range_index: remove what create_range_index made (the triggers and the permuted
-- tables with their foreign partitions; the shards' tables stay).
CREATE OR REPLACE FUNCTION simpg.drop_range_index(base regclass, col name DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_trigger record;
    v_args text[];
BEGIN
    SELECT * INTO v_layout FROM simpg.range_layout(base, col);
    IF NOT simpg.owns(base) THEN
        RAISE EXCEPTION 'must be owner of table %', base USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_args := simpg.range_registry(base, v_layout.fingerprint_column);
    -- base's and its partitions' (and former partitions' the caller owns)
    FOR v_trigger IN SELECT g.tgrelid::regclass AS rel, g.tgname FROM pg_trigger AS g
                     WHERE g.tgfoid = 'simpg.range_shards_write()'::regprocedure
                       AND (simpg.trigger_args(g.tgargs))[1:6] = v_args[1:6]
                       AND (g.tgrelid = base OR simpg.owns(g.tgrelid)) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', v_trigger.tgname, v_trigger.rel);
    END LOOP;
    FOR i IN 1 .. cardinality(v_layout.tables) LOOP
        IF v_layout.tables[i] IS NOT NULL THEN
            EXECUTE format('DROP TABLE %s', v_layout.tables[i]);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.drop_range_index(regclass, name) IS
    'Range distribution: drop the triggers and the coordinator''s permuted tables (the shards keep theirs)';

-- range_shard_ddl: the statements that make a shard's tables for the range distribution
-- of base, to run on each shard: CREATE TABLE for every permuted table, then its covering
-- B-tree (p) INCLUDE (key, fp), which answers a lookup from the index alone. For a bulk
-- load run the CREATE TABLEs, COPY, then the CREATE INDEXes. IF NOT EXISTS: running
-- them again after a failure resumes (simpg.attach_range_shard checks what is there).
CREATE OR REPLACE FUNCTION simpg.range_shard_ddl(base regclass, col name DEFAULT NULL, remote_schema name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_names text[];
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(base, col);
    SELECT array_agg(format('%I.%I', coalesce(remote_schema, n.nspname), c.relname) ORDER BY u.t)
    INTO v_names
    FROM unnest(v_layout.tables) WITH ORDINALITY AS u(rel, t)
    JOIN pg_class AS c ON c.oid = u.rel JOIN pg_namespace AS n ON n.oid = c.relnamespace;
    RETURN QUERY SELECT format('CREATE TABLE IF NOT EXISTS %s (p bigint NOT NULL, key bigint NOT NULL, fp bigint NOT NULL)', v)
                 FROM unnest(v_names) AS v;
    RETURN QUERY SELECT format('CREATE INDEX IF NOT EXISTS %I ON %s (p) INCLUDE (key, fp) WITH (fillfactor = 100)',
                               simpg.object_name(c.relname, '_p_idx'), v)
                 FROM unnest(v_names, v_layout.tables) WITH ORDINALITY AS u(v, rel, t) JOIN pg_class AS c ON c.oid = u.rel
                 ORDER BY u.t;
END
$$;

COMMENT ON FUNCTION simpg.range_shard_ddl(regclass, name, name) IS
    'Range distribution: the statements to run on a shard server, its permuted tables and their covering B-trees';

-- remote_range_problems: what is wrong with a shard's permuted table
-- remote_schema.remote_table on server, read through postgres_fdw (temporary foreign
-- tables, dropped before returning): those of simpg.shard_server_problem (the server is
-- then not used at all), 'unreachable', 'table missing', 'missing b-tree'
-- (no B-tree on (p) including key and fp: exact but reads the whole table), 'error'.
CREATE OR REPLACE FUNCTION simpg.remote_range_problems(server name, remote_schema name, remote_table name)
    RETURNS TABLE (problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_detail text;
BEGIN
    -- nothing goes through a server or user mapping that is not the caller's own
    SELECT * INTO problem, detail FROM simpg.shard_server_problem(server);
    IF problem IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    BEGIN
        IF to_regclass('pg_temp.simpg_remote_range') IS NOT NULL THEN
            DROP FOREIGN TABLE pg_temp.simpg_remote_range;
        END IF;
        IF to_regclass('pg_temp.simpg_remote_btrees') IS NOT NULL THEN
            DROP FOREIGN TABLE pg_temp.simpg_remote_btrees;
        END IF;
        EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_range (p bigint, key bigint, fp bigint) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)', server, remote_schema, remote_table);
        EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_btrees (schemaname name, tablename name, indexdef text) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)', server, 'pg_catalog', 'pg_indexes');
        PERFORM FROM pg_temp.simpg_remote_range LIMIT 1;  -- the table and its columns are there
        IF NOT EXISTS (SELECT FROM pg_temp.simpg_remote_btrees AS i
                       WHERE i.schemaname = remote_schema AND i.tablename = remote_table
                         AND i.indexdef LIKE '%USING btree (p) INCLUDE (key, fp)%') THEN
            problem := 'missing b-tree';
            detail := format('%I.%I on server %I has no B-tree on (p) INCLUDE (key, fp): lookups read the whole table',
                             remote_schema, remote_table, server);
            RETURN NEXT;
        END IF;
        DROP FOREIGN TABLE pg_temp.simpg_remote_range;
        DROP FOREIGN TABLE pg_temp.simpg_remote_btrees;
    EXCEPTION
        WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception OR connection_failure THEN
            GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
            problem := 'unreachable';
            detail := SQLERRM || coalesce(': ' || nullif(rtrim(v_detail, E'\n'), ''), '');
            RETURN NEXT;
        WHEN undefined_table OR invalid_schema_name OR undefined_column THEN
            problem := 'table missing';
            detail := format('server %I has no table %I.%I (p, key, fp): %s (run the statements of simpg.range_shard_ddl there)',
                             server, remote_schema, remote_table, SQLERRM);
            RETURN NEXT;
        WHEN OTHERS THEN
            problem := 'error';
            detail := format('reading %I.%I on server %I: %s', remote_schema, remote_table, server, SQLERRM);
            RETURN NEXT;
    END;
END
$$;

COMMENT ON FUNCTION simpg.remote_range_problems(name, name, name) IS
    'Internal: problems of a shard''s permuted table of the range distribution, read through postgres_fdw';

-- attach_range_shard: make shard number shard_number (from 0) of shards the foreign
-- partition of every permuted table of base, over its range of permuted values
-- (simpg.range_shard_bounds), scanned asynchronously, fetched 10,000 rows and inserted
-- 1,000 rows per round trip. Each shard table is read first (simpg.remote_range_problems):
-- any problem raises naming the server, and nothing is created. The partitions are
-- named <permuted table>_<server>; the shard's tables remote_schema (default: the
-- permuted tables' schema) with the permuted tables' names.
CREATE OR REPLACE FUNCTION simpg.attach_range_shard(base regclass, server name, shard_number integer, shards integer,
                                         remote_schema name DEFAULT NULL, col name DEFAULT NULL)
    RETURNS regclass[]
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_bound record;
    v_rel record;
    v_problem record;
    v_out regclass[] := '{}';
BEGIN
    IF server IS NULL OR shard_number IS NULL OR shards IS NULL THEN
        RAISE EXCEPTION 'server, shard_number and shards must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT simpg.owns(base) THEN
        RAISE EXCEPTION 'must be owner of table %', base USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT * INTO v_layout FROM simpg.range_layout(base, col);
    IF shard_number < 0 OR shard_number >= shards THEN
        RAISE EXCEPTION 'shard_number must be from 0 to shards - 1, got shard_number % and shards %', shard_number, shards
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO v_bound FROM simpg.range_shard_bounds(v_layout.k, v_layout.levels, shards) AS b
    WHERE b.shard_number = attach_range_shard.shard_number;
    FOR v_rel IN SELECT u.t, n.nspname, c.relname FROM unnest(v_layout.tables) WITH ORDINALITY AS u(rel, t)
                 JOIN pg_class AS c ON c.oid = u.rel JOIN pg_namespace AS n ON n.oid = c.relnamespace ORDER BY u.t LOOP
        FOR v_problem IN SELECT * FROM simpg.remote_range_problems(server, coalesce(remote_schema, v_rel.nspname),
                                                                   v_rel.relname) LOOP
            RAISE EXCEPTION 'shard % cannot be attached to %: % (%)', quote_ident(server), base,
                v_problem.problem, v_problem.detail
                USING ERRCODE = CASE WHEN v_problem.problem = 'unreachable' THEN 'sqlclient_unable_to_establish_sqlconnection'
                                     WHEN v_problem.problem IN ('server not owned', 'no user mapping') THEN 'insufficient_privilege'
                                     ELSE 'invalid_object_definition' END,
                      HINT = CASE v_problem.problem
                          WHEN 'unreachable' THEN 'check that the shard is up and the server''s options and user mapping'
                          WHEN 'server not owned' THEN 'create a foreign server of your own, under another name (simpg shard create does)'
                          WHEN 'no user mapping' THEN 'CREATE USER MAPPING FOR CURRENT_USER on the server (simpg shard create does)'
                          ELSE 'run the statements of simpg.range_shard_ddl on the shard first (simpg shard create does)' END;
        END LOOP;
    END LOOP;
    FOR v_rel IN SELECT u.t, n.nspname, c.relname, u.rel FROM unnest(v_layout.tables) WITH ORDINALITY AS u(rel, t)
                 JOIN pg_class AS c ON c.oid = u.rel JOIN pg_namespace AS n ON n.oid = c.relnamespace ORDER BY u.t LOOP
        EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%s) TO (%s) SERVER %I '
                       'OPTIONS (schema_name %L, table_name %L, async_capable %L, fetch_size %L, batch_size %L)',
                       v_rel.nspname, simpg.object_name(v_rel.relname, '_' || server), v_rel.rel,
                       coalesce(v_bound.lo::text, 'MINVALUE'), coalesce(v_bound.hi::text, 'MAXVALUE'), server,
                       coalesce(remote_schema, v_rel.nspname), v_rel.relname, 'true', '10000', '1000');
        v_out := v_out || format('%I.%I', v_rel.nspname, simpg.object_name(v_rel.relname, '_' || server))::regclass;
    END LOOP;
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION simpg.attach_range_shard(regclass, name, integer, integer, name, name) IS
    'Range distribution: attach a shard server''s permuted tables as foreign range partitions of every permuted table';

-- range_fill: (re)fill the permuted tables from the base table: install the range
-- triggers again on base and every partition it has now (simpg.range_install_triggers:
-- the fix when its partitions changed), TRUNCATE the permuted tables (on the shards,
-- through postgres_fdw), then one INSERT ... SELECT each, under a SHARE lock on the base
-- table so that no write slips between. Returns the rows each table got.
-- Contract: the caller owns base (and its partitions).
CREATE OR REPLACE FUNCTION simpg.range_fill(base regclass, col name DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_key record;
    v_rows bigint;
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(base, col);
    IF NOT simpg.owns(base) THEN
        RAISE EXCEPTION 'must be owner of table %', base USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('LOCK TABLE %s IN SHARE MODE', base);
    -- the key still unique (no inheritance children) and of a built-in integer type
    SELECT * INTO v_key FROM simpg.report_key(base, v_layout.key_column);
    IF v_key.column_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype)
       OR (SELECT a.atttypid FROM pg_attribute AS a WHERE a.attrelid = base AND a.attname = v_layout.fingerprint_column
           AND NOT a.attisdropped) IS DISTINCT FROM 'bigint'::regtype THEN
        RAISE EXCEPTION 'range shards of %: column % must be bigint and key column % smallint, integer or bigint',
            base, quote_ident(v_layout.fingerprint_column), quote_ident(v_layout.key_column)
            USING ERRCODE = 'datatype_mismatch', HINT = 'simpg.drop_range_index, then simpg.create_range_index';
    END IF;
    -- every partition of now gets the triggers, and base the record of them
    PERFORM simpg.range_install_triggers(base, simpg.range_registry(base, v_layout.fingerprint_column));
    EXECUTE 'TRUNCATE ' || array_to_string(v_layout.tables::text[], ', ');
    FOR t IN 0 .. cardinality(v_layout.tables) - 1 LOOP
        EXECUTE format('INSERT INTO %s (p, key, fp) SELECT simpg.permute(b.%I, %s, %L::integer[], %s), b.%I, b.%I '
                       'FROM %s AS b WHERE b.%I IS NOT NULL',
                       v_layout.tables[t + 1], v_layout.fingerprint_column, v_layout.k, v_layout.levels, t,
                       v_layout.key_column, v_layout.fingerprint_column, base, v_layout.fingerprint_column);
        GET DIAGNOSTICS v_rows = ROW_COUNT;
    END LOOP;
    RETURN v_rows;
END
$$;

COMMENT ON FUNCTION simpg.range_fill(regclass, name) IS
    'Range distribution: empty the permuted tables and fill them again from the base table';

-- range_lower_bound: the lower bound of a range partition's bound text
-- (pg_get_expr of relpartbound), NULL for MINVALUE.
CREATE OR REPLACE FUNCTION simpg.range_lower_bound(bound text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (pg_catalog.regexp_match(bound, 'FROM \(''?(-?\d+)''?\)'))[1]::bigint;

COMMENT ON FUNCTION simpg.range_lower_bound(text) IS
    'Internal: the lower bound of a bigint range partition''s bound text; NULL for MINVALUE';

-- range_upper_bound: the upper bound (exclusive) of a range partition's bound text
-- (pg_get_expr of relpartbound); NULL for MAXVALUE.
CREATE OR REPLACE FUNCTION simpg.range_upper_bound(bound text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (pg_catalog.regexp_match(bound, ' TO \(''?(-?\d+)''?\)'))[1]::bigint;

COMMENT ON FUNCTION simpg.range_upper_bound(text) IS
    'Internal: the upper bound (exclusive) of a bigint range partition''s bound text; NULL for MAXVALUE';

-- range_scan_targets: what a lookup reads for each of its (table t, values lo .. hi),
-- given as arrays (position i of ts, los and his; tables in table order): the
-- partitions of table t whose ranges meet lo .. hi (one, as the prefix ranges never
-- cross a shard's bounds), named directly. PostgreSQL runs an Append asynchronously
-- only over foreign scans it sees directly, and a partitioned table pruned to one
-- partition is not one: named, the partitions of a lookup are asked at once. Table t
-- itself (pruned by PostgreSQL, its scans one after the other) when its partitions are
-- not all plain range partitions that the caller may read (reading a partition
-- directly needs its own SELECT). One catalog query for all of them.
CREATE OR REPLACE FUNCTION simpg.range_scan_targets(tables regclass[], ts integer[], los bigint[], his bigint[])
    RETURNS TABLE (i integer, target regclass)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- PL/pgSQL: the query is planned once per session (a SQL function's at every call)
    RETURN QUERY
    WITH parts AS MATERIALIZED (
        SELECT array_position(tables, h.inhparent::regclass) - 1 AS t, c.oid::regclass AS part,
               simpg.range_lower_bound(b.bound) AS lo, simpg.range_upper_bound(b.bound) AS hi,
               c.relkind <> 'p' AND b.bound LIKE 'FOR VALUES FROM (%) TO (%)' AND has_table_privilege(c.oid, 'SELECT')
                   AS plain
        FROM pg_inherits AS h
        JOIN pg_class AS c ON c.oid = h.inhrelid
        CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) AS b
        WHERE h.inhparent = ANY (tables::oid[])),
    direct AS MATERIALIZED (  -- the tables read through their partitions
        SELECT p.t FROM parts AS p GROUP BY p.t HAVING bool_and(p.plain))
    SELECT q.i::integer, p.part
    FROM unnest(ts, los, his) WITH ORDINALITY AS q(t, lo, hi, i)
    JOIN direct AS d ON d.t = q.t
    JOIN parts AS p ON p.t = q.t AND (p.lo IS NULL OR p.lo <= q.hi) AND (p.hi IS NULL OR p.hi > q.lo)
    UNION ALL
    SELECT q.i::integer, tables[q.t + 1]
    FROM unnest(ts, los, his) WITH ORDINALITY AS q(t, lo, hi, i)
    WHERE NOT EXISTS (SELECT FROM direct AS d WHERE d.t = q.t);
END
$$;

COMMENT ON FUNCTION simpg.range_scan_targets(regclass[], integer[], bigint[], bigint[]) IS
    'Internal: for each (table, lo, hi) of a lookup, the partitions it reads directly, or the table itself';

-- range_shards: the foreign partitions of every permuted table of base, in table order.
CREATE OR REPLACE FUNCTION simpg.range_shards(base regclass, col name DEFAULT NULL)
    RETURNS TABLE (t integer, shard regclass, server name, remote_schema name, remote_table name,
                   bound text, async_capable boolean)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (u.t - 1)::integer, s.shard, s.server, s.remote_schema, s.remote_table, s.bound, s.async_capable
    FROM unnest((simpg.range_layout(base, col)).tables) WITH ORDINALITY AS u(rel, t)
    CROSS JOIN LATERAL simpg.shards(u.rel) AS s
    ORDER BY u.t, simpg.range_lower_bound(s.bound) NULLS FIRST
$$;

COMMENT ON FUNCTION simpg.range_shards(regclass, name) IS
    'Range distribution: the foreign partitions of every permuted table of a base table';

-- check_range_shards: every problem of base's range distribution, one row each; no rows
-- means every permuted table has its partitions, every shard table is there with its
-- B-tree, and (verify_rows) every shard holds exactly the rows the base table puts in
-- its range, with p = simpg.permute(fp) on a sample. Problems: 'table missing' (on the
-- coordinator or a shard), 'no shards', 'shards differ' (another set of shards or
-- ranges than the first permuted table's), 'not async', 'unreachable', 'missing b-tree',
-- 'row count differs', 'layout differs', 'trigger missing', 'not in step'
-- (simpg.range_out_of_step: partitions changed, a partition without its triggers). verify_rows reads the base
-- table once per permuted table and counts each shard's rows there.
CREATE OR REPLACE FUNCTION simpg.check_range_shards(base regclass, col name DEFAULT NULL, verify_rows boolean DEFAULT true)
    RETURNS TABLE (shard regclass, server name, problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_first text;
    v_this text;
    v_part record;
    v_problem record;
    v_unreachable name[] := '{}';
    v_expected bigint;
    v_found bigint;
    v_outside bigint;
    v_wrong bigint;
    v_triggers integer;
BEGIN
    SELECT * INTO v_layout FROM simpg.range_layout(base, col);
    SELECT count(*) INTO v_triggers FROM pg_trigger AS g
    WHERE g.tgrelid = base AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure AND g.tgenabled <> 'D'
      AND (simpg.trigger_args(g.tgargs))[1] = v_layout.fingerprint_column
      AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member';
    IF v_triggers <> 4 THEN
        problem := 'trigger missing';
        detail := format('%s has %s of its 4 enabled range triggers (insert, update, delete, truncate): writes would not reach the shards',
                         base, v_triggers);
        RETURN NEXT;
    ELSE
        detail := simpg.range_out_of_step(base, v_layout.fingerprint_column);
        IF detail IS NOT NULL THEN
            problem := 'not in step';
            RETURN NEXT;
        END IF;
    END IF;
    FOR i IN 1 .. cardinality(v_layout.tables) LOOP
        shard := NULL;
        server := NULL;
        IF v_layout.tables[i] IS NULL THEN
            problem := 'table missing';
            detail := format('permuted table %s of %s is missing on the coordinator', i - 1, base);
            RETURN NEXT;
            CONTINUE;
        END IF;
        SELECT string_agg(s.server || ' ' || s.bound, ', ' ORDER BY simpg.range_lower_bound(s.bound) NULLS FIRST) INTO v_this
        FROM simpg.shards(v_layout.tables[i]) AS s;
        IF v_this IS NULL THEN
            problem := 'no shards';
            detail := format('%s has no foreign partitions', v_layout.tables[i]);
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_first := coalesce(v_first, v_this);
        IF v_this <> v_first THEN
            problem := 'shards differ';
            detail := format('%s has shards %s; %s has %s', v_layout.tables[i], v_this, v_layout.tables[1], v_first);
            RETURN NEXT;
        END IF;
        FOR v_part IN SELECT s.*, lower_bound, upper_bound FROM simpg.shards(v_layout.tables[i]) AS s
                      CROSS JOIN LATERAL (SELECT simpg.range_lower_bound(s.bound) AS lower_bound,
                                                 simpg.range_upper_bound(s.bound) AS upper_bound) AS b
                      ORDER BY lower_bound NULLS FIRST LOOP
            shard := v_part.shard;
            server := v_part.server;
            IF NOT v_part.async_capable THEN
                problem := 'not async';
                detail := format('%s is not scanned asynchronously: ALTER FOREIGN TABLE %s OPTIONS (ADD async_capable %L)',
                                 v_part.shard, v_part.shard, 'true');
                RETURN NEXT;
            END IF;
            CONTINUE WHEN v_part.server = ANY (v_unreachable);
            FOR v_problem IN SELECT * FROM simpg.remote_range_problems(v_part.server, v_part.remote_schema,
                                                                       v_part.remote_table) LOOP
                problem := v_problem.problem;
                detail := v_problem.detail;
                RETURN NEXT;
                IF v_problem.problem IN ('unreachable', 'server not owned', 'no user mapping', 'not postgres_fdw') THEN
                    -- not read again: nor its rows counted through it
                    v_unreachable := v_unreachable || v_part.server;
                END IF;
            END LOOP;
            CONTINUE WHEN NOT verify_rows OR v_part.server = ANY (v_unreachable);
            BEGIN
                EXECUTE format('SELECT count(*) FROM %s AS b WHERE b.%I IS NOT NULL '
                               'AND simpg.permute(b.%I, %s, %L::integer[], %s) >= %s AND simpg.permute(b.%I, %s, %L::integer[], %s) < %s',
                               base, v_layout.fingerprint_column,
                               v_layout.fingerprint_column, v_layout.k, v_layout.levels, i - 1,
                               coalesce(v_part.lower_bound, -9223372036854775808),
                               v_layout.fingerprint_column, v_layout.k, v_layout.levels, i - 1,
                               coalesce(v_part.upper_bound::numeric, 9223372036854775808)) INTO v_expected;
                -- a temporary foreign table: no partition bound that the planner could assume
                IF to_regclass('pg_temp.simpg_remote_range') IS NOT NULL THEN
                    DROP FOREIGN TABLE pg_temp.simpg_remote_range;
                END IF;
                EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_range (p bigint, key bigint, fp bigint) '
                               'SERVER %I OPTIONS (schema_name %L, table_name %L)',
                               v_part.server, v_part.remote_schema, v_part.remote_table);
                EXECUTE format('SELECT count(*), count(*) FILTER (WHERE r.p < %s OR r.p >= %s) FROM pg_temp.simpg_remote_range AS r',
                               coalesce(v_part.lower_bound, -9223372036854775808),
                               coalesce(v_part.upper_bound::numeric, 9223372036854775808))
                    INTO v_found, v_outside;
                EXECUTE format('SELECT count(*) FROM (SELECT r.p, r.fp FROM pg_temp.simpg_remote_range AS r LIMIT 1000) AS s '
                               'WHERE s.p IS DISTINCT FROM simpg.permute(s.fp, %s, %L::integer[], %s)',
                               v_layout.k, v_layout.levels, i - 1) INTO v_wrong;
                DROP FOREIGN TABLE pg_temp.simpg_remote_range;
            EXCEPTION WHEN OTHERS THEN
                problem := 'error';
                detail := format('counting the rows of %s: %s', v_part.shard, SQLERRM);
                RETURN NEXT;
                CONTINUE;
            END;
            IF v_outside > 0 OR v_wrong > 0 THEN
                problem := 'layout differs';
                detail := format('%s on server %s holds %s rows outside its range %s and %s of 1,000 sampled whose p is not simpg.permute(fp, %s, %L, %s)',
                                 v_part.shard, v_part.server, v_outside, v_part.bound, v_wrong,
                                 v_layout.k, v_layout.levels, i - 1);
                RETURN NEXT;
            END IF;
            IF v_found <> v_expected THEN
                problem := 'row count differs';
                detail := format('%s on server %s holds %s rows; %s has %s for its range',
                                 v_part.shard, v_part.server, v_found, base, v_expected);
                RETURN NEXT;
            END IF;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.check_range_shards(regclass, name, boolean) IS
    'Range distribution: problems of a table''s permuted tables and their shards; none when all is well';

-- range_near_query: the statement simpg.range_near runs, with the constants as typed
-- literals (for EXPLAIN): one arm per permuted table, each reading the rows of its
-- prefix range within k of fp from the one partition (shard) that holds it, named
-- directly (range_scan_targets) so that the T foreign scans run at once; postgres_fdw
-- sends each shard the range and the distance filter. A row found through several
-- tables is returned once.
CREATE OR REPLACE FUNCTION simpg.range_near_query(base regclass, fp bigint, k integer DEFAULT NULL, col name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_k integer;
    v_statement text;
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(base, col);
    v_k := simpg.range_radius(base, v_layout.fingerprint_column, v_layout.k, k);
    PERFORM simpg.range_in_step(base, v_layout.fingerprint_column);  -- never answer from stale tables
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fp must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- one arm per permuted table and partition read (range_scan_targets): plain columns,
    -- so that each is a bare foreign scan, run at once with the others
    WITH r AS MATERIALIZED (SELECT x.t, x.lo, x.hi FROM simpg.prefix_ranges(ARRAY[fp], v_layout.k, v_layout.levels) AS x)
    SELECT 'SELECT s.key, min(simpg.hamming(s.fp, ' || quote_literal(fp) || '::bigint)) AS distance FROM ('
        || coalesce(string_agg(format('SELECT r.key, r.fp FROM %2$s AS r WHERE r.p BETWEEN %3$L::bigint AND %4$L::bigint '
                                      'AND simpg.hamming(r.fp, %1$L::bigint) <= %5$L::integer',
                                      fp, g.target, r.lo, r.hi, v_k), ' UNION ALL ' ORDER BY r.t, g.target::text),
                    'SELECT NULL::bigint AS key, NULL::bigint AS fp WHERE false')
        || ') AS s GROUP BY s.key ORDER BY distance, s.key'
    INTO v_statement
    FROM simpg.range_scan_targets(v_layout.tables, ARRAY(SELECT r.t FROM r ORDER BY r.t),
                                  ARRAY(SELECT r.lo FROM r ORDER BY r.t), ARRAY(SELECT r.hi FROM r ORDER BY r.t)) AS g
    JOIN r ON r.t = g.i - 1;
    RETURN v_statement;
END
$$;

COMMENT ON FUNCTION simpg.range_near_query(regclass, bigint, integer, name) IS
    'Range distribution: the statement range_near runs, with its constants as literals (for EXPLAIN)';

-- range_near: the keys within k of fp, nearest first (then by key), read from one
-- partition per permuted table.
CREATE OR REPLACE FUNCTION simpg.range_near(base regclass, fp bigint, k integer DEFAULT NULL, col name DEFAULT NULL)
    RETURNS TABLE (key bigint, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.range_near_query(base, fp, k, col);
END
$$;

COMMENT ON FUNCTION simpg.range_near(regclass, bigint, integer, name) IS
    'Range distribution: the keys within k of a fingerprint and their distance, nearest first';

-- range_near_many: range_near for many fingerprints, 100 per statement: each permuted
-- table is asked once per statement, with the OR of the queries' prefix ranges (pruned
-- to the shards that hold one) and of their distance filters; each row found goes to
-- the queries it is within k of. Rows (query, key, distance), query the 1-based position
-- in fps, by query then nearest first; NULL elements find nothing.
CREATE OR REPLACE FUNCTION simpg.range_near_many(base regclass, fps bigint[], k integer DEFAULT NULL, col name DEFAULT NULL)
    RETURNS TABLE (query integer, key bigint, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_k integer;
    v_arms text;
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(base, col);
    v_k := simpg.range_radius(base, v_layout.fingerprint_column, v_layout.k, k);
    PERFORM simpg.range_in_step(base, v_layout.fingerprint_column);  -- never answer from stale tables
    FOR v_start IN 1 .. coalesce(cardinality(fps), 0) BY 100 LOOP
        -- one arm per permuted table and partition read, asked at once (as in range_near_query),
        -- with the prefix ranges and distance filters of the queries it may hold rows of
        WITH r AS MATERIALIZED (
            SELECT (row_number() OVER (ORDER BY x.t, x.n))::integer AS i, x.t, x.n, (fps[v_start : v_start + 99])[x.n] AS fp,
                   x.lo, x.hi
            FROM simpg.prefix_ranges(fps[v_start : v_start + 99], v_layout.k, v_layout.levels) AS x)
        SELECT string_agg(format('SELECT r.key, r.fp FROM %s AS r WHERE (%s) AND (%s)', a.target, a.ranges, a.near),
                          ' UNION ' ORDER BY a.t, a.target::text)
        INTO v_arms
        FROM (SELECT r.t, g.target,
                     string_agg(format('r.p BETWEEN %L::bigint AND %L::bigint', r.lo, r.hi), ' OR ' ORDER BY r.n) AS ranges,
                     string_agg(format('simpg.hamming(r.fp, %L::bigint) <= %L::integer', r.fp, v_k), ' OR ' ORDER BY r.n)
                         AS near
              FROM simpg.range_scan_targets(v_layout.tables, ARRAY(SELECT r.t FROM r ORDER BY r.i),
                                            ARRAY(SELECT r.lo FROM r ORDER BY r.i),
                                            ARRAY(SELECT r.hi FROM r ORDER BY r.i)) AS g
              JOIN r ON r.i = g.i
              GROUP BY r.t, g.target) AS a;
        CONTINUE WHEN v_arms IS NULL;  -- only NULL fingerprints
        RETURN QUERY EXECUTE format(
            'SELECT (q.n + $3 - 1)::integer, s.key, simpg.hamming(s.fp, q.fp) AS distance FROM (%s) AS s '
            'JOIN unnest($1::bigint[]) WITH ORDINALITY AS q(fp, n) ON simpg.hamming(s.fp, q.fp) <= $2 '
            'ORDER BY q.n, distance, s.key', v_arms)
            USING fps[v_start : v_start + 99], v_k, v_start;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.range_near_many(regclass, bigint[], integer, name) IS
    'Range distribution: range_near for many fingerprints, each row with the 1-based position of its query';
-- check and repair
--
-- simpg.check is to a simpg index what amcheck is to a B-tree: run it after an upgrade,
-- a restore or a crash. simpg.repair puts right what can be put right without guessing.

-- relation_tree: rel and, when it is partitioned, its partitions at every level, with
-- their level below rel: the tables whose indexes make up rel's.
CREATE OR REPLACE FUNCTION simpg.relation_tree(rel regclass) RETURNS TABLE (relid regclass, level integer)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT rel, 0
    UNION
    SELECT t.relid, t.level FROM pg_catalog.pg_partition_tree(rel) AS t;
END;

COMMENT ON FUNCTION simpg.relation_tree(regclass) IS
    'rel and, if it is partitioned, its partitions at every level, with their level below rel';

-- check: every problem of rel's simpg indexes (of col's, if given), one row each; no
-- rows means every index is complete, has its B-trees, and stores exactly what
-- simpg.permute computes today.
-- Contract: problem is one of 'missing prefix column', 'missing b-tree',
-- 'invalid index', 'several layouts', 'stale prefix values'; detail says which object.
-- verify_rows => false skips the one check that reads the whole table (stale values).
CREATE OR REPLACE FUNCTION simpg.check(rel regclass, col name DEFAULT NULL, verify_rows boolean DEFAULT true)
    RETURNS TABLE (fingerprint_column name, problem text, detail text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_index record;
    v_column record;
    v_stale bigint;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- one catalog read: the layouts of each column are counted alongside
    FOR v_index IN SELECT * FROM (SELECT i.*, count(*) OVER (PARTITION BY i.fingerprint_column) AS layouts
                                  FROM simpg.table_indexes(rel) AS i) AS i
                   WHERE col IS NULL OR i.fingerprint_column = col LOOP
        fingerprint_column := v_index.fingerprint_column;
        IF v_index.layouts > 1 THEN
            problem := 'several layouts';
            detail := format('k=%s blocks=%s is one of several layouts on this column; keep one',
                             v_index.k, array_to_string(v_index.levels, 'x'));
            RETURN NEXT;
        END IF;
        FOR v_t IN 0 .. v_index.tables - 1 LOOP
            IF v_index.prefix_columns[v_t + 1] IS NULL AND EXISTS (
                    SELECT FROM simpg.partition_disagreements(rel) AS d
                    WHERE d.fingerprint_column = v_index.fingerprint_column AND d.k = v_index.k
                      AND d.levels = v_index.levels AND d.t = v_t) THEN
                -- rel has the column; a partition computes it otherwise (PostgreSQL 16+)
                FOR v_column IN
                    SELECT d.* FROM simpg.partition_disagreements(rel) AS d
                    WHERE d.fingerprint_column = v_index.fingerprint_column AND d.k = v_index.k
                      AND d.levels = v_index.levels AND d.t = v_t
                LOOP
                    problem := 'missing prefix column';
                    detail := format('table %s of k=%s blocks=%s: partition %s computes column %I as %s, not %s',
                                     v_t, v_index.k, array_to_string(v_index.levels, 'x'), v_column.partition,
                                     v_column.prefix_column, coalesce(v_column.found, 'no expression'),
                                     v_column.expected);
                    RETURN NEXT;
                END LOOP;
            ELSIF v_index.prefix_columns[v_t + 1] IS NULL THEN
                problem := 'missing prefix column';
                detail := format('table %s of k=%s blocks=%s: no column %s', v_t, v_index.k,
                                 array_to_string(v_index.levels, 'x'),
                                 simpg.prefix_expression(v_index.fingerprint_column, v_index.k, v_index.levels, v_t));
                RETURN NEXT;
            ELSIF v_index.index_names[v_t + 1] IS NULL THEN
                problem := 'missing b-tree';
                detail := format('no valid B-tree on column %I (answers stay exact, but read the whole table)',
                                 v_index.prefix_columns[v_t + 1]);
                RETURN NEXT;
            END IF;
        END LOOP;
        FOR v_column IN
            SELECT c.prefix_column, ic.relname AS index_name, x.relid AS partition
            FROM simpg.prefix_columns_of(rel) AS c
            CROSS JOIN simpg.relation_tree(rel) AS x
            JOIN pg_attribute AS a ON a.attrelid = x.relid AND a.attname = c.prefix_column AND NOT a.attisdropped
            JOIN pg_index AS i ON i.indrelid = x.relid AND a.attnum = ANY (i.indkey)
            JOIN pg_class AS ic ON ic.oid = i.indexrelid
            WHERE c.fingerprint_column = v_index.fingerprint_column AND c.k = v_index.k
              AND c.levels = v_index.levels AND NOT i.indisvalid
            ORDER BY x.level, x.relid::text, ic.relname
        LOOP
            problem := 'invalid index';
            detail := CASE WHEN v_column.partition = rel
                           THEN format('index %I on column %I is invalid (an interrupted CREATE INDEX CONCURRENTLY?)',
                                       v_column.index_name, v_column.prefix_column)
                           ELSE format('index %I on column %I of partition %s is invalid (an interrupted CREATE INDEX CONCURRENTLY?)',
                                       v_column.index_name, v_column.prefix_column, v_column.partition) END;
            RETURN NEXT;
        END LOOP;
        IF verify_rows THEN
            FOR v_t IN 0 .. v_index.tables - 1 LOOP
                CONTINUE WHEN v_index.prefix_columns[v_t + 1] IS NULL;
                EXECUTE format('SELECT count(*) FROM %s AS t WHERE t.%I IS DISTINCT FROM simpg.permute(t.%I, %s, %L::integer[], %s)',
                               rel, v_index.prefix_columns[v_t + 1], v_index.fingerprint_column,
                               v_index.k, v_index.levels::text, v_t)
                    INTO v_stale;
                IF v_stale > 0 THEN
                    problem := 'stale prefix values';
                    detail := format('%s rows of column %I differ from what simpg.permute computes now',
                                     v_stale, v_index.prefix_columns[v_t + 1]);
                    RETURN NEXT;
                END IF;
            END LOOP;
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.check(regclass, name, boolean) IS
    'Problems of rel''s simpg indexes: missing prefix columns or B-trees, invalid indexes, several layouts, stale stored prefixes (no rows: all is well)';

-- repair: make rel's simpg indexes usable again, and say what was done (one row per
-- statement run). A damaged index (a prefix column missing) has its prefix columns
-- dropped: create it again afterwards. A complete one gets its invalid indexes dropped
-- and its missing B-trees built (not CONCURRENTLY: a function runs in a transaction).
-- Stale prefix values need a rewrite that only the owner should decide on:
-- simpg.drop_index, then simpg.create_index.
CREATE OR REPLACE FUNCTION simpg.repair(rel regclass, col name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_index record;
    v_invalid record;
    v_statement text;
    v_relname name;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT c.relname INTO v_relname FROM pg_class AS c WHERE c.oid = rel;
    -- rel's own first: dropping a partitioned index drops its partitions' with it
    FOR v_invalid IN
        SELECT i.indexrelid, min(x.level) AS level
        FROM simpg.prefix_columns_of(rel) AS c
        CROSS JOIN simpg.relation_tree(rel) AS x
        JOIN pg_attribute AS a ON a.attrelid = x.relid AND a.attname = c.prefix_column AND NOT a.attisdropped
        JOIN pg_index AS i ON i.indrelid = x.relid AND a.attnum = ANY (i.indkey)
        WHERE NOT i.indisvalid AND (col IS NULL OR c.fingerprint_column = col)
        GROUP BY i.indexrelid
        ORDER BY 2, i.indexrelid::regclass::text
    LOOP
        CONTINUE WHEN NOT EXISTS (SELECT FROM pg_class AS ic WHERE ic.oid = v_invalid.indexrelid);
        v_statement := format('DROP INDEX %s', v_invalid.indexrelid::regclass);
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END LOOP;
    FOR v_index IN SELECT * FROM simpg.table_indexes(rel) AS i
                   WHERE col IS NULL OR i.fingerprint_column = col LOOP
        IF array_position(v_index.prefix_columns, NULL) IS NOT NULL THEN
            -- with the columns that a partition computes otherwise (counted as missing)
            SELECT format('ALTER TABLE %s %s', rel,
                          string_agg(format('DROP COLUMN %I', c), ', ' ORDER BY c))
            INTO v_statement
            FROM (SELECT c FROM unnest(v_index.prefix_columns) AS c WHERE c IS NOT NULL
                  UNION
                  SELECT d.prefix_column FROM simpg.partition_disagreements(rel) AS d
                  WHERE d.fingerprint_column = v_index.fingerprint_column AND d.k = v_index.k
                    AND d.levels = v_index.levels) AS u(c);
            EXECUTE v_statement;
            RETURN NEXT v_statement;
            CONTINUE;
        END IF;
        FOR v_t IN 0 .. v_index.tables - 1 LOOP
            CONTINUE WHEN v_index.index_names[v_t + 1] IS NOT NULL;
            v_statement := simpg.prefix_btree_statement(
                simpg.index_name(rel, v_relname || '_' || v_index.prefix_columns[v_t + 1], '_idx'),
                rel, v_index.prefix_columns[v_t + 1]);
            EXECUTE v_statement;
            RETURN NEXT v_statement;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.repair(regclass, name) IS
    'Drop invalid indexes and the prefix columns of damaged simpg indexes of rel, build missing B-trees; returns the statements run';
-- audit: the last statement of the install and of every update script
--
-- Whatever ran before, the script ends only if schema simpg is simpg's alone: every
-- object in it, and every member of the extension wherever it lives, belongs to the role
-- that ran the script (the bootstrap superuser for CREATE EXTENSION, trusted or not; the
-- installing role for a plain install), and no grant gives another role more than
-- USAGE, EXECUTE or SELECT, nor the right to grant. Otherwise the transaction is rolled
-- back, so no install or update can leave an object another role could change under a
-- superuser who calls it (docs/security.md). The check is written for the catalogs, not
-- for simpg's objects, so it holds for objects a later version adds.
DO $$
DECLARE
    v_me oid := (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user);
    v_schema oid := pg_catalog.to_regnamespace('simpg');
    v_extension oid := (SELECT e.oid FROM pg_catalog.pg_extension AS e WHERE e.extname = 'simpg');
    v_problems text;
BEGIN
    WITH objects AS (
        SELECT x.classid, x.objid, x.owner, x.acl
        FROM (SELECT 'pg_class'::regclass AS classid, c.oid AS objid, c.relowner AS owner, c.relacl AS acl,
                     c.relnamespace AS nsp
              FROM pg_catalog.pg_class AS c
              UNION ALL SELECT 'pg_proc'::regclass, p.oid, p.proowner, p.proacl, p.pronamespace FROM pg_catalog.pg_proc AS p
              UNION ALL SELECT 'pg_type'::regclass, t.oid, t.typowner, t.typacl, t.typnamespace FROM pg_catalog.pg_type AS t
              UNION ALL SELECT 'pg_operator'::regclass, o.oid, o.oprowner, NULL, o.oprnamespace FROM pg_catalog.pg_operator AS o
              UNION ALL SELECT 'pg_opfamily'::regclass, f.oid, f.opfowner, NULL, f.opfnamespace FROM pg_catalog.pg_opfamily AS f
              UNION ALL SELECT 'pg_opclass'::regclass, c.oid, c.opcowner, NULL, c.opcnamespace FROM pg_catalog.pg_opclass AS c
              UNION ALL SELECT 'pg_collation'::regclass, c.oid, c.collowner, NULL, c.collnamespace FROM pg_catalog.pg_collation AS c
              UNION ALL SELECT 'pg_conversion'::regclass, c.oid, c.conowner, NULL, c.connamespace FROM pg_catalog.pg_conversion AS c
              UNION ALL SELECT 'pg_ts_config'::regclass, c.oid, c.cfgowner, NULL, c.cfgnamespace FROM pg_catalog.pg_ts_config AS c
              UNION ALL SELECT 'pg_ts_dict'::regclass, d.oid, d.dictowner, NULL, d.dictnamespace FROM pg_catalog.pg_ts_dict AS d
              UNION ALL SELECT 'pg_statistic_ext'::regclass, s.oid, s.stxowner, NULL, s.stxnamespace FROM pg_catalog.pg_statistic_ext AS s
              UNION ALL SELECT 'pg_event_trigger'::regclass, e.oid, e.evtowner, NULL, NULL FROM pg_catalog.pg_event_trigger AS e
              UNION ALL SELECT 'pg_foreign_server'::regclass, s.oid, s.srvowner, s.srvacl, NULL FROM pg_catalog.pg_foreign_server AS s
              UNION ALL SELECT 'pg_namespace'::regclass, n.oid, n.nspowner, n.nspacl, n.oid FROM pg_catalog.pg_namespace AS n
             ) AS x
        WHERE x.nsp = v_schema
           OR EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                      WHERE d.classid = x.classid AND d.objid = x.objid AND d.deptype = 'e' AND d.refobjid = v_extension)
    )
    SELECT string_agg(p.problem, '; ' ORDER BY p.problem) INTO v_problems
    FROM (SELECT pg_catalog.format('%s is owned by %s', pg_catalog.pg_describe_object(o.classid, o.objid, 0),
                                   pg_catalog.pg_get_userbyid(o.owner)) AS problem
          FROM objects AS o WHERE o.owner <> v_me
          UNION ALL
          SELECT pg_catalog.format('%s grants %s%s to %s', pg_catalog.pg_describe_object(o.classid, o.objid, 0),
                                   a.privilege_type, CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END,
                                   CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END)
          FROM objects AS o, pg_catalog.aclexplode(o.acl) AS a
          WHERE a.grantee <> o.owner
            AND (a.privilege_type NOT IN ('USAGE', 'EXECUTE', 'SELECT') OR a.is_grantable)) AS p;
    IF v_problems IS NOT NULL THEN
        RAISE EXCEPTION 'simpg refuses to finish its install: schema simpg must belong to % alone, but %', current_user, v_problems
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'a role planted or granted these objects; a superuser should drop them, then install or update simpg again';
    END IF;
END
$$;
