-- check and repair
--
-- simpg.check is to a simpg index what amcheck is to a B-tree: run it after an upgrade,
-- a restore or a crash. simpg.repair puts right what can be put right without guessing.

-- relation_tree: rel and, when it is partitioned, its partitions at every level, with
-- their level below rel: the tables whose indexes make up rel's.
CREATE FUNCTION simpg.relation_tree(rel regclass) RETURNS TABLE (relid regclass, level integer)
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
-- Passage columns (simpg.passage_indexes) too, in fingerprint_column: 'missing passage
-- index' (no valid GIN index on its keys: lookups stay exact but read the whole table),
-- 'invalid index' (a keys index left INVALID by a stopped concurrent build), 'passage keys
-- too coarse' (the index has fewer key bits than simpg.passage_key_bits of the table's rows
-- by the statistics, less 2: over 4 times the rows per key it aims at, so lookups read
-- that many more candidates); detail names the statement that puts it right.
-- Contract: problem is one of 'missing prefix column', 'missing b-tree',
-- 'invalid index', 'several layouts', 'stale prefix values', 'missing passage index',
-- 'passage keys too coarse'; detail says which object.
-- verify_rows => false skips the one check that reads the whole table (stale values).
CREATE FUNCTION simpg.check(rel regclass, col name DEFAULT NULL, verify_rows boolean DEFAULT true)
    RETURNS TABLE (fingerprint_column name, problem text, detail text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_index record;
    v_column record;
    v_stale bigint;
    v_passage record;
    v_aim integer;
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
    FOR v_passage IN SELECT p.*, a.attnum FROM simpg.passage_columns_of(rel) AS p
                     JOIN pg_attribute AS a ON a.attrelid = rel AND a.attname = p.passage_column
                     WHERE col IS NULL OR p.passage_column = col LOOP
        fingerprint_column := v_passage.passage_column;
        v_aim := simpg.passage_key_bits(simpg.passage_table_rows(rel));
        FOR v_column IN SELECT ki.index_name FROM simpg.passage_key_indexes(rel, v_passage.attnum) AS ki
                        WHERE NOT ki.valid ORDER BY ki.index_name LOOP
            problem := 'invalid index';
            detail := format('index %I on the keys of column %I is invalid (an interrupted CREATE INDEX CONCURRENTLY?): '
                             'SELECT simpg.create_passage_index(%L, %L, %s, %s) drops it and builds what is missing',
                             v_column.index_name, v_passage.passage_column, simpg.relation_name(rel),
                             v_passage.passage_column, v_passage.passage_window, v_passage.spaceless_window);
            RETURN NEXT;
        END LOOP;
        IF v_passage.key_bits IS NULL THEN
            problem := 'missing passage index';
            detail := format('no valid GIN index on the keys of passage column %I (answers stay exact, but read the whole table): '
                             'SELECT simpg.create_passage_index(%L, %L, %s, %s)',
                             v_passage.passage_column, simpg.relation_name(rel), v_passage.passage_column,
                             v_passage.passage_window, v_passage.spaceless_window);
            RETURN NEXT;
        ELSIF v_passage.key_bits < v_aim - 2 THEN
            problem := 'passage keys too coarse';
            detail := format('index %I on passage column %I has %s key bits, %s rows want %s (over 4 times the rows per key: '
                             'lookups read that many more candidates): SELECT simpg.create_passage_index(%L, %L, %s, %s, %s)',
                             v_passage.index_name, v_passage.passage_column, v_passage.key_bits,
                             simpg.passage_table_rows(rel)::bigint, v_aim, simpg.relation_name(rel),
                             v_passage.passage_column, v_passage.passage_window, v_passage.spaceless_window, v_aim);
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.check(regclass, name, boolean) IS
    'Problems of rel''s simpg indexes: missing prefix columns or B-trees, invalid indexes, several layouts, stale stored prefixes, missing or too coarse passage indexes (no rows: all is well)';

-- repair: make rel's simpg indexes usable again, and say what was done (one row per
-- statement run). A damaged index (a prefix column missing) has its prefix columns
-- dropped: create it again afterwards. A complete one gets its invalid indexes dropped
-- and its missing B-trees built (not CONCURRENTLY: a function runs in a transaction).
-- Stale prefix values need a rewrite that only the owner should decide on:
-- simpg.drop_index, then simpg.create_index.
CREATE FUNCTION simpg.repair(rel regclass, col name DEFAULT NULL)
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
