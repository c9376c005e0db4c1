-- catalog
--
-- simpg keeps no table of its own. An index is what its DDL says: one stored generated
-- column simpg.permute(fp, k, levels, t) per table t of the layout, with a B-tree on
-- each. The catalog is read from PostgreSQL's own catalogs every time (as PostGIS's
-- geometry_columns is), so it cannot go stale: it goes with a dropped table or column,
-- follows a renamed one, never outlives a temporary table, restores with pg_dump as
-- the columns do, and no role can write to it, since nothing is stored.

-- column_type: the type of rel's column col; raises naming them when it does not exist
-- (the one check of every function that takes a column by name).
CREATE FUNCTION simpg.column_type(rel regclass, col name) RETURNS regtype
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_type regtype;
BEGIN
    SELECT a.atttypid::regtype INTO v_type FROM pg_attribute AS a
    WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % of table % does not exist', quote_ident(col), rel
            USING ERRCODE = 'undefined_column';
    END IF;
    RETURN v_type;
END
$$;

COMMENT ON FUNCTION simpg.column_type(regclass, name) IS
    'Internal: the type of a column of rel, or an error naming it when it does not exist';

-- prefix_expression: the generated-column expression of table t, as create_index writes
-- it; the catalog recognises a prefix column by this exact text.
-- Not STRICT, so that PostgreSQL inlines it into the queries that call it (format is
-- not strict, so a STRICT wrapper would be a function call per row); NULL in still
-- gives NULL out.
CREATE FUNCTION simpg.prefix_expression(col name, k integer, levels integer[], t integer) RETURNS text
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
CREATE FUNCTION simpg.prefix_columns_of(rel regclass)
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
CREATE FUNCTION simpg.partition_disagreements(rel regclass)
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
CREATE FUNCTION simpg.table_indexes(rel regclass)
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
CREATE FUNCTION simpg.index_partitions(rel regclass)
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

CREATE FUNCTION simpg.owns(rel regclass) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE')
            FROM pg_catalog.pg_class AS c WHERE c.oid = rel);

COMMENT ON FUNCTION simpg.owns(regclass) IS 'Whether the current role owns (or is a member of the owner of) rel';
