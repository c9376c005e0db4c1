-- check and repair
--
-- simpg.check is to a simpg index what amcheck is to a B-tree: run it after an upgrade,
-- a restore or a crash. simpg.repair puts right what can be put right without guessing.

-- check: every problem of rel's simpg indexes (of col's, if given), one row each; no
-- rows means every index is complete, has its B-trees, and stores exactly what
-- simpg.permute computes today.
-- Contract: problem is one of 'missing prefix column', 'missing b-tree',
-- 'invalid index', 'several layouts', 'stale prefix values'; detail says which object.
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
            IF v_index.prefix_columns[v_t + 1] IS NULL THEN
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
            SELECT c.prefix_column, ic.relname AS index_name
            FROM simpg.prefix_columns_of(rel) AS c
            JOIN pg_index AS i ON i.indrelid = rel AND c.prefix_attnum = ANY (i.indkey)
            JOIN pg_class AS ic ON ic.oid = i.indexrelid
            WHERE c.fingerprint_column = v_index.fingerprint_column AND c.k = v_index.k
              AND c.levels = v_index.levels AND NOT i.indisvalid
            ORDER BY ic.relname
        LOOP
            problem := 'invalid index';
            detail := format('index %I on column %I is invalid (an interrupted CREATE INDEX CONCURRENTLY?)',
                             v_column.index_name, v_column.prefix_column);
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
CREATE FUNCTION simpg.repair(rel regclass, col name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_index record;
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
    FOR v_statement IN
        SELECT DISTINCT format('DROP INDEX %s', i.indexrelid::regclass)
        FROM simpg.prefix_columns_of(rel) AS c
        JOIN pg_index AS i ON i.indrelid = rel AND c.prefix_attnum = ANY (i.indkey)
        WHERE NOT i.indisvalid AND (col IS NULL OR c.fingerprint_column = col)
    LOOP
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END LOOP;
    FOR v_index IN SELECT * FROM simpg.table_indexes(rel) AS i
                   WHERE col IS NULL OR i.fingerprint_column = col LOOP
        IF array_position(v_index.prefix_columns, NULL) IS NOT NULL THEN
            SELECT format('ALTER TABLE %s %s', rel,
                          string_agg(format('DROP COLUMN %I', c), ', ' ORDER BY c))
            INTO v_statement
            FROM unnest(v_index.prefix_columns) AS c WHERE c IS NOT NULL;
            EXECUTE v_statement;
            RETURN NEXT v_statement;
            CONTINUE;
        END IF;
        FOR v_t IN 0 .. v_index.tables - 1 LOOP
            CONTINUE WHEN v_index.index_names[v_t + 1] IS NOT NULL;
            v_statement := format('CREATE INDEX %I ON %s (%I) WITH (fillfactor = 100)',
                                  simpg.object_name(v_relname || '_' || v_index.prefix_columns[v_t + 1], '_idx'),
                                  rel, v_index.prefix_columns[v_t + 1]);
            EXECUTE v_statement;
            RETURN NEXT v_statement;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.repair(regclass, name) IS
    'Drop invalid indexes and the prefix columns of damaged simpg indexes of rel, build missing B-trees; returns the statements run';
