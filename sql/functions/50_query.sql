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
CREATE FUNCTION simpg.snapshot_sees_table(rel regclass) RETURNS void
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
CREATE FUNCTION simpg.layout_is(rel regclass, col name, k integer, levels integer[])
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- first: a snapshot older than a rewrite also sees an older catalog
    PERFORM simpg.snapshot_sees_table(rel);
    PERFORM FROM simpg.table_indexes(rel) AS i
    WHERE i.fingerprint_column = col AND i.k = layout_is.k AND i.levels = layout_is.levels
      AND array_position(i.prefix_columns, NULL) IS NULL;
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
