-- passage functions (partial duplicates, docs/partial.md)
--
-- A passage index is a bigint[] column of the user's own table holding each row's
-- winnowed k-gram hashes (sorted ascending and distinct, as simpg.passages writes them;
-- filled by Python like the fingerprint column), a GIN index on its bucketed keys
-- (simpg.passage_keys(col, key_bits): a few rows share a key, so the index is a fraction
-- of one on the hashes; a lookup asks the keys through it and the exact hashes on the
-- row), and the config in the column's comment:
--     simpg passages: {"format": 1, "k": 5, "window": 22, "spaceless_window": 46}
-- Rows and looked-up texts are winnowed alike, with windows weighted by script: window
-- k-grams over words, spaceless_window over letters of a spaceless script (Chinese,
-- Japanese, Thai...), in between for a mix; a lookup finds every row sharing a run of
-- max(window, spaceless_window) + 4 tokens with the text (docs/partial.md). A comment of one
-- window (written before the second one) means both windows equal.
-- As for the fingerprint indexes, nothing is stored in a table of simpg's: the catalog
-- (simpg.passage_indexes) is read from pg_description and pg_index, and goes with the
-- table through pg_dump, partitions and renames.
-- Every function here is SECURITY INVOKER: it reads the table with the caller's rights.
-- The arrays are expected sorted and distinct, but no answer depends on it: counts are
-- taken over distinct values, and NULL elements match nothing.

-- passage_comment: the column comment that records a passage index's config, exactly
-- as simpg.passages.PassageConfig.to_comment() writes it.
CREATE FUNCTION simpg.passage_comment(passage_window integer, spaceless_window integer) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.format('simpg passages: {"format": 1, "k": 5, "window": %s, "spaceless_window": %s}',
                             passage_window, spaceless_window);

COMMENT ON FUNCTION simpg.passage_comment(integer, integer) IS
    'Internal: the column comment that records a passage index (format 1, k 5, the two windows)';

-- checked_key_bits: raises unless key_bits is between 1 and 32 (the bits of a passage key).
CREATE FUNCTION simpg.checked_key_bits(key_bits integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF key_bits IS NULL OR key_bits < 1 OR key_bits > 32 THEN
        RAISE EXCEPTION 'key_bits must be an integer between 1 and 32, got %', coalesce(key_bits::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN key_bits;
END
$$;

COMMENT ON FUNCTION simpg.checked_key_bits(integer) IS
    'Internal: key_bits, or an error naming it when it is not between 1 and 32';

-- passage_keys: the keys a passage index stores for a row (docs/partial.md): each non-NULL
-- hash's low key_bits bits, sign-extended to an integer ((h << (64 - b)) >> (64 - b): int8
-- shifts are arithmetic, so the value fits int4 for every b in 1..32), in the order of
-- hashes. The low bits, not the high ones: a winnowed hash is the least of its window, its
-- top bits are small. Several rows share a key, so the GIN index on these keys is a
-- fraction of one on the hashes; a lookup asks the keys through the index and the exact
-- hashes on the row, so its answer stays exact.
-- Contract: key_bits 1..32, else an error naming it (never a shift by 64 or more).
-- Evaluated on every insert, by whoever inserts, and by CREATE INDEX: LANGUAGE sql with a
-- body parsed at creation (immune to the caller's search_path), built-in code only. Measured
-- against PL/pgSQL with SET search_path for an index build (docs/benchmarks.md).
CREATE FUNCTION simpg.passage_keys(hashes bigint[], key_bits integer) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN key_bits BETWEEN 1 AND 32
                THEN ARRAY(SELECT ((h.h << (64 - key_bits)) >> (64 - key_bits))::integer
                           FROM pg_catalog.unnest(hashes) AS h(h) WHERE h.h IS NOT NULL)
                ELSE ARRAY[simpg.checked_key_bits(key_bits)] END;  -- raises

COMMENT ON FUNCTION simpg.passage_keys(bigint[], integer) IS
    'The keys a passage index stores: each non-NULL hash''s low key_bits bits (1 to 32), sign-extended to an integer';

-- passage_table_rows: the rows of rel by the statistics, as simpg.common_passage_hashes
-- counts them: a partitioned table's own reltuples is not kept on every version, so the
-- whole tree's (each table's own; a table never analyzed, -1, counts as 0).
CREATE FUNCTION simpg.passage_table_rows(rel regclass) RETURNS double precision
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    WITH RECURSIVE tree (oid) AS (
        SELECT rel::oid
        UNION
        SELECT h.inhrelid FROM pg_catalog.pg_inherits AS h JOIN tree ON h.inhparent = tree.oid)
    SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::double precision
    FROM tree JOIN pg_catalog.pg_class AS c ON c.oid = tree.oid
    WHERE c.relkind <> 'p';
END;

COMMENT ON FUNCTION simpg.passage_table_rows(regclass) IS
    'Internal: the rows of a table (its whole tree) by the statistics; a table never analyzed counts as 0';

-- passage_key_bits: the key bits for a table of rows rows: floor(log2(rows) + 4.5), within
-- 16..32: 2.9 to 5.8 rows per key at 66 keys a row (5 KB of English at windows 22/46), the
-- column and index 0.33-0.45x the text, 190-380 candidate rows read a lookup. At a million
-- rows, 24 bits: 0.39x and a lookup p50 of 8.6 ms, where floor(log2(rows)) + 4 (23 bits)
-- gave 0.30x and 12.9 ms (docs/benchmarks.md). Fewer rows per key cost index bytes, more
-- cost candidates, each a heap row read.
CREATE FUNCTION simpg.passage_key_bits(table_rows double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN table_rows IS NULL OR table_rows < 2 OR table_rows = 'NaN'::double precision THEN 16
                ELSE least(32, greatest(16, floor(log(2::numeric, least(table_rows, 1e30)::numeric) + 4.5)::integer)) END;

COMMENT ON FUNCTION simpg.passage_key_bits(double precision) IS
    'The key bits of a passage index for a table of that many rows: floor(log2(rows) + 4.5), between 16 and 32';

-- passage_key_indexes: the GIN indexes of rel on passage keys of column attnum, valid or
-- not, with their key bits: those whose only key is the expression
-- simpg.passage_keys(<that column>, <a constant 1..32>) with the default operator class
-- (array_ops), no predicate. Matched on the catalog: the index depends on simpg.passage_keys
-- itself (pg_depend: not a function of that name in another schema) and pg_get_expr, under
-- this function's search_path, prints the expression with simpg.passage_keys qualified.
CREATE FUNCTION simpg.passage_key_indexes(rel regclass, attnum smallint)
    RETURNS TABLE (index_oid oid, index_name name, key_bits integer, valid boolean)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.indexrelid, ic.relname, e.bits, i.indisvalid
    FROM pg_index AS i
    JOIN pg_class AS ic ON ic.oid = i.indexrelid
    JOIN pg_attribute AS a ON a.attrelid = rel AND a.attnum = passage_key_indexes.attnum AND NOT a.attisdropped
    CROSS JOIN LATERAL (
        SELECT (regexp_match(substr(x.expr, length(x.head) + 1), '^(\d{1,2})\)$'))[1]::integer AS bits
        FROM (SELECT pg_get_expr(i.indexprs, i.indrelid) AS expr,
                     'simpg.passage_keys(' || quote_ident(a.attname) || ', ' AS head) AS x
        WHERE starts_with(x.expr, x.head)
    ) AS e
    WHERE i.indrelid = rel AND i.indnatts = 1 AND i.indkey[0] = 0 AND i.indpred IS NULL
      AND ic.relam = (SELECT am.oid FROM pg_am AS am WHERE am.amname = 'gin')
      AND i.indclass[0] = (SELECT oc.oid FROM pg_opclass AS oc
                           WHERE oc.opcname = 'array_ops' AND oc.opcnamespace = 'pg_catalog'::regnamespace
                             AND oc.opcmethod = ic.relam)
      AND e.bits BETWEEN 1 AND 32
      AND EXISTS (SELECT FROM pg_depend AS d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid
                    AND d.refclassid = 'pg_proc'::regclass
                    AND d.refobjid = 'simpg.passage_keys(bigint[], integer)'::regprocedure)
      AND EXISTS (SELECT FROM pg_depend AS d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid
                    AND d.refclassid = 'pg_class'::regclass AND d.refobjid = rel
                    AND d.refobjsubid = passage_key_indexes.attnum)
$$;

COMMENT ON FUNCTION simpg.passage_key_indexes(regclass, smallint) IS
    'Internal: the GIN indexes on simpg.passage_keys(column, bits) of a column, valid or not, with their bits';

-- passage_columns_of: rel's bigint[] columns whose comment records a passage index, one
-- row each, with the config read from the comment and the valid GIN index on its keys
-- (simpg.passage_key_indexes: the most key bits when there are several, a rebuild in
-- progress) if there is one (index_name and key_bits NULL otherwise: lookups stay exact,
-- they read the whole table). Only the comment's exact shape counts; a column of
-- another type with such a comment is not listed.
CREATE FUNCTION simpg.passage_columns_of(rel regclass)
    RETURNS TABLE (passage_column name, passage_window integer, spaceless_window integer, format integer, k integer,
                   index_name name, key_bits integer)
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE ROWS 1
    SET search_path = pg_catalog, pg_temp
    SET jit = off
AS $$
BEGIN
    RETURN QUERY
    -- a comment of one window (before the second one) records both windows equal
    SELECT a.attname, m.v[3]::integer, coalesce(m.v[4], m.v[3])::integer, m.v[1]::integer, m.v[2]::integer,
           x.index_name, x.key_bits
    FROM pg_attribute AS a
    JOIN pg_description AS d ON d.objoid = rel AND d.classoid = 'pg_class'::regclass AND d.objsubid = a.attnum
    CROSS JOIN LATERAL (
        SELECT regexp_match(d.description,
                            '^simpg passages: \{"format": (\d{1,9}), "k": (\d{1,9}), "window": (\d{1,9})'
                            '(?:, "spaceless_window": (\d{1,9}))?\}$') AS v
    ) AS m
    LEFT JOIN LATERAL (
        SELECT ki.index_name, ki.key_bits FROM simpg.passage_key_indexes(rel, a.attnum) AS ki
        WHERE ki.valid ORDER BY ki.key_bits DESC, ki.index_name LIMIT 1
    ) AS x ON true
    WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
      AND a.atttypid = 'bigint[]'::regtype AND m.v IS NOT NULL
    ORDER BY a.attnum;
END
$$;

COMMENT ON FUNCTION simpg.passage_columns_of(regclass) IS
    'Internal: rel''s bigint[] columns recorded as passage indexes (config from the comment) and their keys index and bits if any';

-- The catalog of passage indexes: one row per recorded column of a table in the
-- database. A partitioned table is one row, its own (its partitions get its GIN index
-- from PostgreSQL and are not listed). index_name and key_bits NULL: the GIN index on the
-- keys is missing (dropped by hand, or an INVALID one left by a stopped build).
CREATE VIEW simpg.passage_indexes AS
SELECT r.oid::regclass AS indexed_table, p.passage_column, p.passage_window, p.spaceless_window, p.format, p.k,
       p.index_name, p.key_bits
FROM pg_catalog.pg_class AS r
CROSS JOIN LATERAL simpg.passage_columns_of(r.oid::regclass) AS p
WHERE r.oid IN (SELECT d.objoid FROM pg_catalog.pg_description AS d
                WHERE d.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid > 0
                  AND pg_catalog.starts_with(d.description, 'simpg passages: '))
  AND NOT r.relispartition;

COMMENT ON VIEW simpg.passage_indexes IS
    'One row per passage index: its table, bigint[] column, windows (spaced and spaceless), format, k, GIN index and its key bits (read from the system catalogs)';

GRANT SELECT ON simpg.passage_indexes TO PUBLIC;

-- passage_column_type: raises unless col is a column of rel of type bigint[].
CREATE FUNCTION simpg.passage_column_type(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_type regtype;
BEGIN
    IF rel IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'table and column must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_type := simpg.column_type(rel, col);
    IF v_type <> 'bigint[]'::regtype THEN
        RAISE EXCEPTION 'column %.% is %, expected bigint[]', rel, quote_ident(col), v_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.passage_column_type(regclass, name) IS
    'Internal: raises unless col is a bigint[] column of rel';

-- passage_layout: the catalog row of rel.col. Raises for a NULL table or column, a column
-- that does not exist or is not bigint[], a column with no passage index, and a format
-- or k this version does not know.
CREATE FUNCTION simpg.passage_layout(rel regclass, col name) RETURNS simpg.passage_indexes
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.passage_indexes;
BEGIN
    PERFORM simpg.passage_column_type(rel, col);
    SELECT rel, p.* INTO v_row FROM simpg.passage_columns_of(rel) AS p WHERE p.passage_column = col;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no simpg passage index on %.%', rel, quote_ident(col)
            USING ERRCODE = 'undefined_object',
                  HINT = 'create one with simpg.create_passage_index(table, column)';
    END IF;
    IF v_row.format <> 1 OR v_row.k <> 5 THEN
        RAISE EXCEPTION 'the passage index on %.% has format % and k %, which this version of simpg does not read (format 1, k 5)',
            rel, quote_ident(col), v_row.format, v_row.k
            USING ERRCODE = 'feature_not_supported', HINT = 'update simpg';
    END IF;
    RETURN v_row;
END
$$;

COMMENT ON FUNCTION simpg.passage_layout(regclass, name) IS
    'Internal: the simpg.passage_indexes row of rel.col; raises if there is none';

-- checked_window: raises unless the window called p_name is at least 1.
CREATE FUNCTION simpg.checked_window(p_name text, p_window integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_window IS NULL OR p_window < 1 THEN
        RAISE EXCEPTION '% must be at least 1, got %', p_name, coalesce(p_window::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN p_window;
END
$$;

COMMENT ON FUNCTION simpg.checked_window(text, integer) IS
    'Internal: the window, or an error naming it when it is NULL or below 1';

-- passage_statistics_target: the statistics target create_passage_index gives a passage
-- column. ANALYZE then samples 300,000 rows and lists the hashes in more than about
-- 0.0063 * 37 * rows / 1,000 rows (233 at a million rows of 5 KB texts at window 46; about
-- 400 at window 26, where a row holds about 1.7 times the hashes): enough
-- for the default max_common of 1,000 up to about four million rows; a bigger table wants
-- ALTER TABLE ... ALTER COLUMN ... SET STATISTICS up to 10,000 (docs/partial.md).
CREATE FUNCTION simpg.passage_statistics_target() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 1000;

COMMENT ON FUNCTION simpg.passage_statistics_target() IS
    'Internal: the statistics target create_passage_index gives a passage column';

-- passage_index_ddl: the statements that give rel.col its passage index, in order, one
-- row each: phase 'drop_invalid' (an INVALID keys index on the column, left by a stopped
-- concurrent build), 'gin' (the GIN index on simpg.passage_keys(col, key_bits); on a
-- partitioned table it covers every partition, those attached later too), 'drop_old'
-- (valid keys indexes of other bits, once the new one is built: a rebuild with
-- concurrently keeps lookups indexed throughout), 'statistics' (the column's statistics
-- target raised to simpg.passage_statistics_target() where it is lower: ANALYZE lists an
-- array element only when it is in more than about 0.0063 * (hashes a row) * rows / target
-- rows, so at the default target of 100 a hash in 1,000 of a million rows is never listed,
-- never skipped, and a lookup sharing it reads all its rows), 'analyze' (the element
-- statistics simpg.common_passage_hashes reads), 'comment' (the config). key_bits NULL:
-- the bits of the column's keys index if it has one, else simpg.passage_key_bits of the
-- table's rows by the statistics (a table never analyzed counts 0 rows:
-- create_passage_index analyzes it first). What is there already is left
-- out, so a stopped build resumes. With concurrently the statements must run outside a
-- transaction block.
-- Contract: reads the catalogs, changes nothing, checks no rights (the statements do).
-- Raises for a column that is not bigint[], a window below 1, key_bits outside 1..32, a
-- column recorded with other windows, and with concurrently on a partitioned table
-- (PostgreSQL cannot build a partitioned index concurrently; build it without).
CREATE FUNCTION simpg.passage_index_ddl(rel regclass, col name, passage_window integer DEFAULT 22,
                                        spaceless_window integer DEFAULT 46, key_bits integer DEFAULT NULL,
                                        concurrently boolean DEFAULT false)
    RETURNS TABLE (phase text, index_name name, statement text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_rel text;
    v_relname name;
    v_relkind "char";
    v_found record;
    v_attnum smallint;
    v_target integer;
    v_bits integer;
    v_built boolean;
    v_concurrently text := CASE WHEN passage_index_ddl.concurrently THEN ' CONCURRENTLY' ELSE '' END;
BEGIN
    PERFORM simpg.passage_column_type(rel, col);
    PERFORM simpg.checked_window('passage_window', passage_window);
    PERFORM simpg.checked_window('spaceless_window', passage_index_ddl.spaceless_window);
    IF passage_index_ddl.key_bits IS NOT NULL THEN
        PERFORM simpg.checked_key_bits(passage_index_ddl.key_bits);
    END IF;
    IF passage_index_ddl.concurrently IS NULL THEN
        RAISE EXCEPTION 'concurrently must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_rel := simpg.relation_name(rel);
    SELECT c.relname, c.relkind INTO v_relname, v_relkind FROM pg_class AS c WHERE c.oid = rel;
    IF passage_index_ddl.concurrently AND v_relkind = 'p' THEN
        RAISE EXCEPTION 'cannot build the passage index of % concurrently: it is partitioned', rel
            USING ERRCODE = 'wrong_object_type', HINT = 'build it without concurrently';
    END IF;
    SELECT p.* INTO v_found FROM simpg.passage_columns_of(rel) AS p WHERE p.passage_column = col;
    IF FOUND AND (v_found.passage_window, v_found.spaceless_window, v_found.format, v_found.k)
                 IS DISTINCT FROM (passage_window, passage_index_ddl.spaceless_window, 1, 5) THEN
        RAISE EXCEPTION 'column %.% already has a simpg passage index with windows % and % (format %, k %), not windows % and %',
            rel, quote_ident(col), v_found.passage_window, v_found.spaceless_window, v_found.format, v_found.k,
            passage_window, passage_index_ddl.spaceless_window
            USING ERRCODE = 'duplicate_object',
                  HINT = 'its stored hashes were made with those windows: drop it with simpg.drop_passage_index(table, column), fill the column again, and create it';
    END IF;
    SELECT a.attnum INTO v_attnum FROM pg_attribute AS a WHERE a.attrelid = rel AND a.attname = col;
    -- key_bits NULL keeps the bits of the index there is (a rebuild is asked for by bits,
    -- never started by a call that only makes sure the index exists), else follows the rows
    v_bits := coalesce(passage_index_ddl.key_bits,
                       (SELECT max(ki.key_bits) FROM simpg.passage_key_indexes(rel, v_attnum) AS ki WHERE ki.valid),
                       simpg.passage_key_bits(simpg.passage_table_rows(rel)));
    v_built := EXISTS (SELECT FROM simpg.passage_key_indexes(rel, v_attnum) AS ki
                       WHERE ki.valid AND ki.key_bits = v_bits);
    -- CONCURRENTLY except on a partitioned table (PostgreSQL cannot drop a partitioned
    -- index concurrently; that takes its partitions')
    RETURN QUERY
    SELECT 'drop_invalid', ki.index_name,
           format('DROP INDEX%s IF EXISTS %s', CASE WHEN v_relkind <> 'p' THEN v_concurrently ELSE '' END,
                  ki.index_oid::regclass)
    FROM simpg.passage_key_indexes(rel, v_attnum) AS ki WHERE NOT ki.valid ORDER BY ki.index_name;
    IF NOT v_built THEN
        phase := 'gin';
        index_name := simpg.index_name(rel, v_relname || '_' || col, '_keys_idx');
        statement := format('CREATE INDEX%s %I ON %s USING gin ((simpg.passage_keys(%I, %s)))', v_concurrently,
                            index_name, v_rel, col, v_bits);
        RETURN NEXT;
    END IF;
    RETURN QUERY
    SELECT 'drop_old', ki.index_name,
           format('DROP INDEX%s IF EXISTS %s', CASE WHEN v_relkind <> 'p' THEN v_concurrently ELSE '' END,
                  ki.index_oid::regclass)
    FROM simpg.passage_key_indexes(rel, v_attnum) AS ki WHERE ki.valid AND ki.key_bits <> v_bits
    ORDER BY ki.index_name;
    -- -1 (NULL from PostgreSQL 17): the default target
    SELECT coalesce(nullif(a.attstattarget::integer, -1), current_setting('default_statistics_target')::integer)
        INTO v_target
    FROM pg_attribute AS a WHERE a.attrelid = rel AND a.attnum = v_attnum;
    IF v_target < simpg.passage_statistics_target() THEN
        phase := 'statistics';
        index_name := NULL;
        statement := format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS %s', v_rel, col,
                            simpg.passage_statistics_target());
        RETURN NEXT;
    END IF;
    IF v_found.index_name IS NULL OR v_target < simpg.passage_statistics_target() THEN
        phase := 'analyze';
        index_name := NULL;
        statement := simpg.analyze_statement(rel, ARRAY[col]);
        RETURN NEXT;
    END IF;
    IF v_found.passage_column IS NULL THEN
        phase := 'comment';
        index_name := NULL;
        statement := format('COMMENT ON COLUMN %s.%I IS %L', v_rel, col, simpg.passage_comment(passage_window,
                                                                                 passage_index_ddl.spaceless_window));
        RETURN NEXT;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.passage_index_ddl(regclass, name, integer, integer, integer, boolean) IS
    'The statements that give a bigint[] column its passage index (GIN on its keys, statistics target, ANALYZE, the config comment), leaving out what is there';

-- create_passage_index: a GIN index on the keys of rel.col (simpg.passage_keys(col,
-- key_bits)) and the comment recording the windows; idempotent: a column that has it
-- already (same windows, same bits) gets only what is missing; one whose index has other
-- bits gets the new index, then loses the old one. key_bits NULL: the bits of the index
-- there is, else simpg.passage_key_bits of the table's rows by the statistics (a table
-- never analyzed is analyzed first).
-- Contract: col is a bigint[] column of rel (filled by simpg.passages.passage_hashes
-- with these windows: the column's hashes are the caller's to keep right), the caller owns
-- rel, rel is not a partition (its partitioned table's index covers it); windows >= 1;
-- key_bits NULL or 1..32.
CREATE FUNCTION simpg.create_passage_index(rel regclass, col name, passage_window integer DEFAULT 22,
                                           spaceless_window integer DEFAULT 46, key_bits integer DEFAULT NULL)
    RETURNS simpg.passage_indexes
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_step record;
BEGIN
    PERFORM simpg.passage_column_type(rel, col);
    PERFORM simpg.checked_window('passage_window', passage_window);
    PERFORM simpg.checked_window('spaceless_window', create_passage_index.spaceless_window);
    IF create_passage_index.key_bits IS NOT NULL THEN
        PERFORM simpg.checked_key_bits(create_passage_index.key_bits);
    END IF;
    PERFORM simpg.not_a_partition(rel, 'create');
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- the bits follow the rows by the statistics: a table never analyzed (reltuples -1,
    -- e.g. loaded just now) would count as empty
    IF create_passage_index.key_bits IS NULL AND EXISTS (
            SELECT FROM simpg.relation_tree(rel) AS x JOIN pg_class AS c ON c.oid = x.relid
            WHERE c.relkind <> 'p' AND c.reltuples < 0) THEN
        EXECUTE simpg.analyze_statement(rel, ARRAY[col]);
    END IF;
    FOR v_step IN SELECT * FROM simpg.passage_index_ddl(rel, col, passage_window,
                                                        create_passage_index.spaceless_window,
                                                        create_passage_index.key_bits) LOOP
        EXECUTE v_step.statement;
    END LOOP;
    RETURN simpg.passage_layout(rel, col);
END
$$;

COMMENT ON FUNCTION simpg.create_passage_index(regclass, name, integer, integer, integer) IS
    'Index a bigint[] column of winnowed passage hashes: a GIN index on their keys (key_bits, default by the table''s rows) and the config comment (windows, default 22 and 46 for spaceless scripts)';

-- drop_passage_index: remove what create_passage_index added: every GIN index on the
-- keys of rel.col (simpg.passage_key_indexes, valid or not) and the comment. The column
-- and its values stay.
CREATE FUNCTION simpg.drop_passage_index(rel regclass, col name) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_drops text;
    v_recorded boolean;
BEGIN
    PERFORM simpg.passage_column_type(rel, col);
    PERFORM simpg.not_a_partition(rel, 'drop');
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_recorded := EXISTS (SELECT FROM simpg.passage_columns_of(rel) AS p WHERE p.passage_column = col);
    SELECT string_agg(ki.index_oid::regclass::text, ', ' ORDER BY ki.index_name) INTO v_drops
    FROM pg_attribute AS a
    CROSS JOIN LATERAL simpg.passage_key_indexes(rel, a.attnum) AS ki
    WHERE a.attrelid = rel AND a.attname = col;
    IF NOT v_recorded AND v_drops IS NULL THEN
        RAISE EXCEPTION 'no simpg passage index on %.%', rel, quote_ident(col)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF v_drops IS NOT NULL THEN
        EXECUTE 'DROP INDEX ' || v_drops;
    END IF;
    IF v_recorded THEN
        EXECUTE format('COMMENT ON COLUMN %s.%I IS NULL', simpg.relation_name(rel), col);
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.drop_passage_index(regclass, name) IS
    'Remove the GIN indexes on the keys and the config comment that create_passage_index added (the column and its hashes stay)';

-- checked_max_common: raises unless max_common is NULL (skip nothing) or at least 0.
CREATE FUNCTION simpg.checked_max_common(max_common bigint) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF max_common < 0 THEN
        RAISE EXCEPTION 'max_common must be an integer of at least 0, a fraction between 0 and 1, or null, got %',
            max_common USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN max_common;
END
$$;

COMMENT ON FUNCTION simpg.checked_max_common(bigint) IS
    'Internal: max_common, or an error naming it when it is negative';

-- checked_max_common with a count or a share of the rows: NULL (skip nothing), a whole
-- number of at least 0 (a count of rows), or a share of the rows above 0 and below 1;
-- anything else (negative, NaN, infinite, 1.5) raises naming it. The same rule as
-- simpg.passages.lookup.checked_max_common, with the same words.
CREATE FUNCTION simpg.checked_max_common(max_common double precision) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF max_common IN ('NaN', 'Infinity', '-Infinity') OR max_common < 0
       OR (max_common >= 1 AND max_common <> trunc(max_common)) THEN
        RAISE EXCEPTION 'max_common must be an integer of at least 0, a fraction between 0 and 1, or null, got %',
            max_common USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN max_common;
END
$$;

COMMENT ON FUNCTION simpg.checked_max_common(double precision) IS
    'Internal: max_common (a count of rows, or a share of them below 1), or an error naming it';

-- max_common_rows: the number of rows above which a hash is common, for a checked
-- max_common and the table's rows by the statistics: a count as it is; a share x
-- (0 < x < 1) as greatest(1000, x * rows). Why the floor: skipping is there to bound the
-- work of a lookup, and reading 1,000 candidates costs milliseconds (the lookup verifies
-- them in order and stops at its limit), while a share alone would skip, on a table of
-- 10,000 rows, a passage copied into 11 of them. NULL: skip nothing.
CREATE FUNCTION simpg.max_common_rows(max_common double precision, table_rows double precision)
    RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN max_common > 0 AND max_common < 1
                THEN greatest(1000, max_common * greatest(coalesce(table_rows, 0), 0))
                ELSE max_common END;

COMMENT ON FUNCTION simpg.max_common_rows(double precision, double precision) IS
    'Internal: the rows above which a hash is common: max_common if a count, greatest(1000, max_common * rows) if a share below 1';

-- common_passage_hashes: the hashes of rel.col that the planner's statistics put in more
-- than max_common rows (pg_stats.most_common_elems, their frequencies times the rows
-- with a non-NULL array, rounded), ascending; max_common a count, or a share of the
-- table's rows by the statistics (0 < max_common < 1), never below 1,000 rows
-- (simpg.max_common_rows); '{}' for max_common NULL, or before the column was
-- analyzed. An estimate, as fresh as the last ANALYZE (autovacuum's): lookups that skip
-- these hashes say so. A partitioned table's (and a table with inheritance children)
-- statistics are the whole tree's. Needs SELECT on the column, like pg_stats, which
-- would otherwise answer nothing (so: skip nothing) rather than refuse.
CREATE FUNCTION simpg.common_passage_hashes(rel regclass, col name, max_common double precision) RETURNS bigint[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_rows float8;
    v_inherited boolean;
    v_found bigint[];
    v_limit float8;
BEGIN
    PERFORM simpg.passage_column_type(rel, col);
    PERFORM simpg.checked_max_common(max_common);
    IF NOT has_column_privilege(rel, col, 'SELECT') THEN
        RAISE EXCEPTION 'permission denied for table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF max_common IS NULL THEN
        RETURN '{}';
    END IF;
    v_inherited := EXISTS (SELECT FROM pg_inherits AS h WHERE h.inhparent = rel);
    v_rows := simpg.passage_table_rows(rel);
    v_limit := simpg.max_common_rows(max_common, v_rows);
    SELECT coalesce(array_agg(e.hash ORDER BY e.hash), '{}') INTO v_found
    FROM pg_stats AS s
    CROSS JOIN LATERAL unnest(s.most_common_elems::text::bigint[],
                              s.most_common_elem_freqs[1:cardinality(s.most_common_elems::text::bigint[])])
        AS e(hash, freq)
    WHERE s.schemaname = (SELECT n.nspname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                          WHERE c.oid = rel)
      AND s.tablename = (SELECT c.relname FROM pg_class AS c WHERE c.oid = rel)
      AND s.attname = col AND s.inherited = v_inherited
      AND round(e.freq * (1 - s.null_frac) * v_rows) > v_limit;
    RETURN v_found;
END
$$;

COMMENT ON FUNCTION simpg.common_passage_hashes(regclass, name, double precision) IS
    'Hashes of a passage column that the statistics put in more than max_common rows, or that share of its rows when below 1 (boilerplate a lookup may skip)';

-- common_passage_hashes with a count of rows (bigint): the form above.
CREATE FUNCTION simpg.common_passage_hashes(rel regclass, col name, max_common bigint) RETURNS bigint[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM simpg.checked_max_common(max_common);
    RETURN simpg.common_passage_hashes(rel, col, max_common::float8);
END
$$;

COMMENT ON FUNCTION simpg.common_passage_hashes(regclass, name, bigint) IS
    'Hashes of a passage column that the statistics put in more than max_common rows (boilerplate a lookup may skip)';

-- passage_probe: the distinct non-NULL hashes of hashes that are not in skip, ascending:
-- what a lookup looks for. Not STRICT: skip NULL skips nothing.
CREATE FUNCTION simpg.passage_probe(hashes bigint[], skip bigint[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY(SELECT DISTINCT h.h FROM pg_catalog.unnest(hashes) AS h(h)
                 WHERE h.h IS NOT NULL AND h.h <> ALL (COALESCE(skip, '{}'::bigint[]))
                 ORDER BY h.h);

COMMENT ON FUNCTION simpg.passage_probe(bigint[], bigint[]) IS
    'Internal: the distinct non-NULL hashes not in skip, ascending: what a passage lookup searches';

-- shared_hashes: how many distinct non-NULL values stored and probe have in common
-- (probe distinct, as passage_probe makes it).
CREATE FUNCTION simpg.shared_hashes(stored bigint[], probe bigint[]) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT pg_catalog.count(DISTINCT s.h)::integer FROM pg_catalog.unnest(stored) AS s(h)
            WHERE s.h = ANY (probe));

COMMENT ON FUNCTION simpg.shared_hashes(bigint[], bigint[]) IS
    'Internal: the number of distinct values two hash arrays share';

-- passage_layout_is: true when rel.col still has the passage index of these windows and
-- key bits (NULL: no keys index), else an error with SQLSTATE SPG01. Declared IMMUTABLE on
-- purpose, as simpg.layout_is: with constant arguments PostgreSQL checks it when it plans
-- the statement; creating or dropping an index (which create_passage_index and
-- drop_passage_index always do when the config or the bits change) makes PostgreSQL plan
-- cached statements again.
CREATE FUNCTION simpg.passage_layout_is(rel regclass, col name, passage_window integer, spaceless_window integer,
                                        key_bits integer)
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM simpg.snapshot_sees_table(rel);
    PERFORM FROM simpg.passage_columns_of(rel) AS p
    WHERE p.passage_column = col AND p.passage_window = passage_layout_is.passage_window
      AND p.spaceless_window = passage_layout_is.spaceless_window AND p.format = 1 AND p.k = 5
      AND p.key_bits IS NOT DISTINCT FROM passage_layout_is.key_bits;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the passage index on %.% is no longer the windows % and % index of key bits % this lookup was made for',
            rel, quote_ident(col), passage_window, passage_layout_is.spaceless_window,
            coalesce(passage_layout_is.key_bits::text, 'none')
            USING ERRCODE = 'SPG01', HINT = 'read the passage index again';
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION simpg.passage_layout_is(regclass, name, integer, integer, integer) IS
    'True if rel.col has the passage index of these windows and key bits, else an error (SQLSTATE SPG01); checked when a statement is planned';

-- passage_condition: the WHERE condition of every passage lookup statement, for the FROM
-- alias t, $1 the text's hashes and $2 the hashes to skip: the layout it was made for
-- (simpg.passage_layout_is), then the keys of the probe through the keys index and the
-- exact hashes on the row. The keys are computed from the probe (the hashes less the
-- skipped ones), so skipping a common hash never drops a key another hash of the text
-- needs. With no keys index, the hashes alone (lookups stay exact, reading the table).
-- The probe is a scalar subquery: one InitPlan, evaluated once per execution, whose value
-- the GIN index scan takes as its key.
CREATE FUNCTION simpg.passage_condition(layout simpg.passage_indexes) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN format('simpg.passage_layout_is(%1$s::oid::regclass, %2$L::name, %3$s, %4$s, %5$s::integer) AND %6$s'
                  't.%7$I OPERATOR(pg_catalog.&&) (SELECT simpg.passage_probe($1::bigint[], $2::bigint[]))',
                  (layout).indexed_table::oid, (layout).passage_column, (layout).passage_window,
                  (layout).spaceless_window, coalesce((layout).key_bits::text, 'NULL'),
                  CASE WHEN (layout).key_bits IS NULL THEN ''
                       ELSE format('simpg.passage_keys(t.%1$I, %2$s) OPERATOR(pg_catalog.&&) '
                                   '(SELECT simpg.passage_keys(simpg.passage_probe($1::bigint[], $2::bigint[]), %2$s)) AND ',
                                   (layout).passage_column, (layout).key_bits) END,
                  (layout).passage_column);

COMMENT ON FUNCTION simpg.passage_condition(simpg.passage_indexes) IS
    'Internal: the WHERE condition of a passage lookup ($1 hashes, $2 hashes to skip): the layout, the keys through the index, the exact hashes';

-- checked_text_column: raises unless rel.text_column exists and is of a text type (the
-- candidates are verified on their texts: clients read the column as strings).
CREATE FUNCTION simpg.checked_text_column(rel regclass, text_column name) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_text_type text;
BEGIN
    IF text_column IS NULL THEN
        RAISE EXCEPTION 'text column must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_text_type := format_type(simpg.column_type(rel, text_column), NULL);
    IF v_text_type NOT IN ('text', 'character varying', 'character', 'name', 'citext') THEN
        RAISE EXCEPTION 'column % of table % is %, expected text', quote_ident(text_column), rel, v_text_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.checked_text_column(regclass, name) IS
    'Internal: raises unless the column exists and is of a text type';

-- passage_statement: the text of passage_lookup_statement (text_column given) and of
-- passage_probe_statement (text_column NULL: no body column), from one format.
CREATE FUNCTION simpg.passage_statement(rel regclass, col name, key_column name, text_column name)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.passage_indexes := simpg.passage_layout(rel, col);
    v_key record := simpg.report_key(rel, key_column);
BEGIN
    RETURN format('SELECT t.%1$I AS key, %2$s'
                  't.%3$I AS hashes, '
                  'simpg.shared_hashes(t.%3$I, (SELECT simpg.passage_probe($1::bigint[], $2::bigint[]))) AS shared '
                  'FROM %4$s AS t WHERE %5$s ORDER BY shared DESC, key',
                  v_key.column_name, CASE WHEN text_column IS NULL THEN '' ELSE format('t.%I AS body, ', text_column) END,
                  col, simpg.relation_name(rel), simpg.passage_condition(v_row));
END
$$;

COMMENT ON FUNCTION simpg.passage_statement(regclass, name, name, name) IS
    'Internal: the text of passage_lookup_statement, or of passage_probe_statement when text_column is null';

-- passage_lookup_statement: the statement that finds the rows that share a hash with a
-- text, with their texts: $1 bigint[] the text's hashes, $2 bigint[] hashes to skip
-- (simpg.common_passage_hashes; NULL or '{}' skips nothing). Columns: key (the key
-- column, its own type), body (the text column, of a text type: another is refused), hashes (the stored
-- bigint[]), shared (integer: distinct hashes of $1 not skipped that the row holds, >= 1);
-- most shared first, then by key. The windows it was made for are stated in it
-- (simpg.passage_layout_is), checked whenever PostgreSQL plans it.
-- key_column NULL: the single-column primary key (simpg.report_key's rules).
-- The Python surfaces run passage_probe_statement and passage_texts_statement instead,
-- so as to read the texts of the candidates they verify only.
CREATE FUNCTION simpg.passage_lookup_statement(rel regclass, col name, text_column name,
                                               key_column name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM simpg.passage_layout(rel, col);
    PERFORM simpg.checked_text_column(rel, text_column);
    RETURN simpg.passage_statement(rel, col, key_column, text_column);
END
$$;

COMMENT ON FUNCTION simpg.passage_lookup_statement(regclass, name, name, name) IS
    'The parameterised statement ($1 the text''s hashes, $2 hashes to skip) that finds the rows sharing a passage hash: key, body, hashes, shared';

-- passage_probe_statement: passage_lookup_statement without the texts: columns key,
-- hashes, shared, in the same order (most shared first, then by key). A lookup ranks
-- these candidates by what their hashes allow (simpg.passages.lookup) and reads the texts
-- of those it verifies with passage_texts_statement, a batch at a time.
CREATE FUNCTION simpg.passage_probe_statement(rel regclass, col name, key_column name DEFAULT NULL)
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    RETURN simpg.passage_statement(rel, col, key_column, NULL);

COMMENT ON FUNCTION simpg.passage_probe_statement(regclass, name, name) IS
    'The parameterised statement ($1 the text''s hashes, $2 hashes to skip) that finds the rows sharing a passage hash, without their texts: key, hashes, shared';

-- passage_texts_statement: the statement that reads the texts of some rows: $1 an array
-- of keys (cast to the key column's type), columns key, body; in no order, a key not
-- found (a row deleted since) gives no row.
CREATE FUNCTION simpg.passage_texts_statement(rel regclass, text_column name, key_column name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key record := simpg.report_key(rel, key_column);
BEGIN
    PERFORM simpg.checked_text_column(rel, text_column);
    RETURN format('SELECT t.%1$I AS key, t.%2$I AS body FROM %3$s AS t WHERE t.%1$I = ANY ($1::%4$s[])',
                  v_key.column_name, text_column, simpg.relation_name(rel), v_key.column_type);
END
$$;

COMMENT ON FUNCTION simpg.passage_texts_statement(regclass, name, name) IS
    'The parameterised statement ($1 an array of keys) that reads the texts of rows: key, body';

-- passage_candidates: the rows of the table whose row type is given that share at least
-- one hash of hashes (less those simpg.common_passage_hashes skips at max_common), with
-- shared, the number of distinct hashes shared; most shared first. max_common: a count of
-- rows, or a share of them below 1 (simpg.max_common_rows); the bigint form below has the
-- default, 1,000 rows. A candidate only:
-- the texts decide (simpg.passages.compare).
--   SELECT c.shared, (c.hit).id FROM simpg.passage_candidates(NULL::docs, 'passages', hashes) AS c
CREATE FUNCTION simpg.passage_candidates(tbl anyelement, col name, hashes bigint[], max_common double precision)
    RETURNS TABLE (shared integer, hit anyelement)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_rel regclass := simpg.lookup_rel(tbl);
    v_row simpg.passage_indexes := simpg.passage_layout(v_rel, col);
    v_skip bigint[] := simpg.common_passage_hashes(v_rel, col, max_common);
BEGIN
    IF hashes IS NULL THEN
        RAISE EXCEPTION 'hashes must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT simpg.shared_hashes(t.%1$I, (SELECT simpg.passage_probe($1::bigint[], $2::bigint[]))), t '
        'FROM %2$s AS t WHERE %3$s ORDER BY 1 DESC',
        col, simpg.relation_name(v_rel), simpg.passage_condition(v_row))
        USING hashes, v_skip;
END
$$;

COMMENT ON FUNCTION simpg.passage_candidates(anyelement, name, bigint[], double precision) IS
    'Rows of the table whose row type is given sharing a passage hash with hashes (common hashes skipped at max_common), with the count shared';

-- passage_candidates with a count of rows (bigint, default 1,000): the form above.
CREATE FUNCTION simpg.passage_candidates(tbl anyelement, col name, hashes bigint[], max_common bigint DEFAULT 1000)
    RETURNS TABLE (shared integer, hit anyelement)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM simpg.checked_max_common(max_common);
    RETURN QUERY SELECT c.shared, c.hit FROM simpg.passage_candidates(tbl, col, hashes, max_common::float8) AS c;
END
$$;

COMMENT ON FUNCTION simpg.passage_candidates(anyelement, name, bigint[], bigint) IS
    'Rows of the table whose row type is given sharing a passage hash with hashes (common hashes skipped at max_common), with the count shared';

-- passage_filter: the condition restricting passage_pairs to the rows whose filter_column
-- equals filter_value ('' for no filter; both NULL), for the statement's FROM alias t.
-- Contract: the column must exist and have a built-in type (simpg.builtin_type: the value
-- is cast and compared with built-in code only, never a type owner's); the value is a
-- quoted literal cast to the column's type. The report stays SECURITY INVOKER: the caller
-- reads the column with its own rights (column privileges and row-level security apply).
CREATE FUNCTION simpg.passage_filter(rel regclass, filter_column name, filter_value text)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_type regtype;
BEGIN
    IF filter_column IS NULL AND filter_value IS NULL THEN
        RETURN '';
    END IF;
    IF filter_column IS NULL OR filter_value IS NULL THEN
        RAISE EXCEPTION 'filter_column and filter_value go together, got % and %',
            coalesce(quote_ident(filter_column), 'null'), coalesce(quote_literal(filter_value), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_type := simpg.column_type(rel, filter_column);
    IF NOT simpg.builtin_type(v_type) THEN
        RAISE EXCEPTION 'filter column %.% has type %, which is not built in; simpg compares values with built-in code only',
            rel, quote_ident(filter_column), v_type
            USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN format(' WHERE t.%I OPERATOR(pg_catalog.=) %L::%s', filter_column, filter_value, v_type);
END
$$;

COMMENT ON FUNCTION simpg.passage_filter(regclass, name, text) IS
    'Internal: the WHERE clause of passage_pairs_query for rows whose filter_column equals filter_value';

-- passage_pairs_query: the statement passage_pairs runs: every pair of rows sharing at
-- least min_shared distinct hashes, as (key_a, key_b, shared) with key_a < key_b in the
-- key's own order, keys cast to key_type (simpg.report_key_type's rules), only rows whose
-- filter_column equals filter_value when given (simpg.passage_filter: one collection of a
-- table). One pass: each row's distinct hashes (less the common ones, a literal here),
-- joined with themselves on the hash, grouped by the pair. Any count bound on min_shared
-- is 1: a verified pair may share one distinct hash (simpg/passages/pairs.py says why).
CREATE FUNCTION simpg.passage_pairs_query(rel regclass, col name, min_shared integer DEFAULT 1,
                                          max_common double precision DEFAULT 1000, key_column name DEFAULT NULL,
                                          key_type regtype DEFAULT NULL, filter_column name DEFAULT NULL,
                                          filter_value text DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.passage_indexes := simpg.passage_layout(rel, col);
    v_key record := simpg.report_key(rel, key_column);
    v_type regtype := simpg.report_key_type(rel, v_key.column_name, v_key.column_type, key_type);
    v_where text := simpg.passage_filter(rel, filter_column, filter_value);
    v_skip bigint[] := simpg.common_passage_hashes(rel, col, max_common);
BEGIN
    IF min_shared IS NULL OR min_shared < 1 THEN
        RAISE EXCEPTION 'min_shared must be at least 1, got %', coalesce(min_shared::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- DISTINCT inside each row (a small sort of its own array) keeps the counts right
    -- for arrays stored unsorted or with repeats, without sorting every element of the table
    RETURN format(
        'WITH e AS MATERIALIZED (SELECT t.%1$I AS key, u.h FROM %2$s AS t '
        'CROSS JOIN LATERAL (SELECT DISTINCT x.h FROM pg_catalog.unnest(t.%3$I) AS x(h) '
        'WHERE x.h IS NOT NULL%4$s) AS u%7$s) '
        'SELECT a.key::%5$s AS key_a, b.key::%5$s AS key_b, pg_catalog.count(*)::integer AS shared '
        'FROM e AS a JOIN e AS b ON b.h = a.h AND a.key < b.key '
        'GROUP BY a.key, b.key HAVING pg_catalog.count(*) >= %6$s',
        v_key.column_name, simpg.relation_name(rel), col,
        CASE WHEN cardinality(v_skip) > 0 THEN format(' AND x.h <> ALL (%L::bigint[])', v_skip) ELSE '' END,
        v_type, min_shared, v_where);
END
$$;

COMMENT ON FUNCTION simpg.passage_pairs_query(regclass, name, integer, double precision, name, regtype, name, text) IS
    'The statement passage_pairs runs, for EXPLAIN or a view';

-- passage_pairs: every pair of rows sharing at least min_shared distinct passage hashes
-- (hashes in more than max_common rows by the statistics skipped: a count, or a share of
-- the table's rows below 1 as simpg.max_common_rows reads it; NULL skips nothing),
-- once each (key_a < key_b), keys of an integer key column as bigint; with filter_column
-- and filter_value, only the rows whose filter_column equals filter_value. The report's
-- candidates: the texts decide.
CREATE FUNCTION simpg.passage_pairs(rel regclass, col name, min_shared integer DEFAULT 1,
                                    max_common double precision DEFAULT 1000, key_column name DEFAULT NULL,
                                    filter_column name DEFAULT NULL, filter_value text DEFAULT NULL)
    RETURNS TABLE (key_a bigint, key_b bigint, shared integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    SET work_mem = '64MB'
AS $$
BEGIN
    PERFORM simpg.report_work_mem(rel);
    RETURN QUERY EXECUTE simpg.passage_pairs_query(rel, col, min_shared, max_common, key_column, 'bigint',
                                                   filter_column, filter_value);
END
$$;

COMMENT ON FUNCTION simpg.passage_pairs(regclass, name, integer, double precision, name, name, text) IS
    'Every pair of rows sharing at least min_shared passage hashes, once each (key_a < key_b), with the count; integer keys as bigint';

-- passage_pairs with a typed first argument: keys of any type, e.g.
-- simpg.passage_pairs(NULL::uuid, 'docs', 'passages').
CREATE FUNCTION simpg.passage_pairs(key_type anyelement, rel regclass, col name, min_shared integer DEFAULT 1,
                                    max_common double precision DEFAULT 1000, key_column name DEFAULT NULL,
                                    filter_column name DEFAULT NULL, filter_value text DEFAULT NULL)
    RETURNS TABLE (key_a anyelement, key_b anyelement, shared integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    SET work_mem = '64MB'
AS $$
BEGIN
    PERFORM simpg.report_work_mem(rel);
    RETURN QUERY EXECUTE simpg.passage_pairs_query(rel, col, min_shared, max_common, key_column,
                                                   pg_typeof(key_type)::regtype, filter_column, filter_value);
END
$$;

COMMENT ON FUNCTION simpg.passage_pairs(anyelement, regclass, name, integer, double precision, name, name, text) IS
    'Every pair of rows sharing at least min_shared passage hashes, keys of the type of the first argument (NULL::uuid, NULL::text, ...)';
