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
CREATE FUNCTION simpg.base_type(t regtype) RETURNS regtype
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
CREATE FUNCTION simpg.builtin_type(t regtype) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN simpg.base_type(t)::oid < 16384;

COMMENT ON FUNCTION simpg.builtin_type(regtype) IS
    'Whether t is a built-in type or a domain over one: values simpg may cast, compare and print without running user code';

-- checked_key_type: raises unless a key column's type is built in (simpg.builtin_type).
CREATE FUNCTION simpg.checked_key_type(rel regclass, key_column name, key_type regtype) RETURNS void
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
CREATE FUNCTION simpg.report_key_type(rel regclass, key_column name, have regtype, want regtype)
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

-- mask_select: "t.<col> & m0 AS q0, t.<col> & m1 AS q1, ..." for the masks of a pair
-- plan (simpg.pair_masks): each pass joins on the fingerprint's bits under its mask.
CREATE FUNCTION simpg.mask_select(col name, masks bigint[]) RETURNS text
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
CREATE FUNCTION simpg.report_sketch_distance(rel regclass, sketch_column name, max_sketch_distance integer,
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
    PERFORM simpg.checked_sketch_columns(rel, sketch_column, simpg.with_bands(sketch_column, bands));
    RETURN simpg.check_max_sketch_distance(coalesce(max_sketch_distance, simpg.max_sketch_distance()));
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
CREATE FUNCTION simpg.band_passes(rel regclass, k integer, fingerprint_column name, key_column name,
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
            'WHERE %9$ssimpg.hamming(a.fp, b.fp) > %10$L::integer AND simpg.sketch_distance(a.sk, b.sk) <= %11$L::integer)',
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
CREATE FUNCTION simpg.pairs_passes(rel regclass, k integer, col name DEFAULT NULL,
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
    -- a NULL sketch confirms nothing: its sketch_distance is NULL, not <= anything
    v_confirmed text := CASE WHEN v_max IS NULL THEN '' ELSE format(' AND simpg.sketch_distance(a.sk, b.sk) <= %L::integer', v_max) END;
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
        simpg.prefix_join(v_select || ', simpg.sketch_distance(a.sk, b.sk) AS sketch_distance', cardinality(v_masks), k, 'key'),
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
CREATE FUNCTION simpg.pairs_query(rel regclass, k integer, col name DEFAULT NULL,
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
CREATE FUNCTION simpg.report_work_mem(rel regclass) RETURNS text
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
-- or JIT (the planner knows nothing of the masked columns; a hash join without JIT is
-- faster than its merge join, bench/reports.py).
-- With sketch_column (and bands) the pairs are confirmed by their sketches: see pairs_query.
CREATE FUNCTION simpg.pairs(rel regclass, k integer, col name DEFAULT NULL, key_column name DEFAULT NULL,
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
CREATE FUNCTION simpg.pairs(key_type anyelement, rel regclass, k integer, col name DEFAULT NULL,
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
CREATE FUNCTION simpg.fingerprint_pairs_query(layout simpg.indexes, masks bigint[], k integer,
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
CREATE FUNCTION simpg.fingerprint_clusters(rel regclass, k integer, col name DEFAULT NULL)
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
CREATE FUNCTION simpg.fingerprint_representatives(rel regclass, k integer, col name DEFAULT NULL,
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
CREATE FUNCTION simpg.confirmed_clusters(rel regclass, k integer, col name, key_column name, method text,
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
CREATE FUNCTION simpg.cluster_call(layout simpg.indexes, k integer, method text, key_column name)
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
CREATE FUNCTION simpg.cluster_rows_query(rel regclass, k integer, col name, key_expr text, method text,
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
CREATE FUNCTION simpg.clusters_query(rel regclass, k integer, col name DEFAULT NULL,
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
CREATE FUNCTION simpg.clusters(rel regclass, k integer, col name DEFAULT NULL, key_column name DEFAULT NULL,
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

CREATE FUNCTION simpg.clusters(key_type anyelement, rel regclass, k integer, col name DEFAULT NULL,
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
CREATE FUNCTION simpg.cluster_groups(rel regclass, k integer, col name, key_column name, method text,
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
CREATE FUNCTION simpg.cluster_sizes(rel regclass, k integer, col name DEFAULT NULL,
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
CREATE FUNCTION simpg.duplicate_stats(rel regclass, k integer, col name DEFAULT NULL,
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
