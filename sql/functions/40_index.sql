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

-- not_a_partition: raises when rel is a partition. A partition has exactly its parent's
-- columns (PostgreSQL refuses to add or drop one there), so its simpg index is its
-- parent's: created, dropped and listed with the partitioned table.
CREATE FUNCTION simpg.not_a_partition(rel regclass, verb text) RETURNS void
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
CREATE FUNCTION simpg.index_layout(rel regclass, col name DEFAULT NULL) RETURNS simpg.indexes
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

-- register_index: check an index whose prefix columns and B-tree indexes were made
-- outside create_index (SQLAlchemy, Alembic, simpg backfill, from the same layout math),
-- and record its fingerprint config. Nothing else is stored: the catalog is the DDL.
-- Contract: the caller owns rel; every prefix column exists, in table order, as the
-- stored generated column prefix_expression, and each index named is a valid B-tree on
-- its column; raises otherwise. Returns the catalog row.
CREATE FUNCTION simpg.register_index(rel regclass, col name, k integer, levels integer[],
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
    v_taken text;
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
    v_tables := simpg.table_count(k, v_levels);

    SELECT c.relname INTO v_relname FROM pg_class AS c WHERE c.oid = rel;
    FOR t IN 0 .. v_tables - 1 LOOP
        v_columns := v_columns || simpg.object_name(col, format('_p%s', t));
        v_indexes := v_indexes || simpg.object_name(v_relname || '_' || col, format('_p%s_idx', t));
        v_adds := v_adds || format('ADD COLUMN %I bigint GENERATED ALWAYS AS (%s) STORED',
                                   v_columns[t + 1], simpg.prefix_expression(col, k, v_levels, t));
    END LOOP;
    SELECT string_agg(quote_ident(a.attname), ', ') INTO v_taken FROM pg_attribute AS a
    WHERE a.attrelid = rel AND a.attname = ANY (v_columns) AND NOT a.attisdropped;
    IF v_taken IS NOT NULL THEN
        RAISE EXCEPTION 'table % already has columns named % (from an index of a renamed column?)', rel, v_taken
            USING ERRCODE = 'duplicate_column',
                  HINT = 'see simpg.check(table); drop or rename those columns first';
    END IF;

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

COMMENT ON FUNCTION simpg.create_index(regclass, name, integer, integer, integer, text) IS
    'Index a bigint fingerprint column for exact within-k search: one generated prefix column and B-tree per table';

-- drop_index: remove what create_index added: every prefix column computed from col
-- (which takes their indexes with them), of a complete index or of a damaged one.
CREATE FUNCTION simpg.drop_index(rel regclass, col name) RETURNS void
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
CREATE FUNCTION simpg.prepare_partition(parent regclass, tbl regclass) RETURNS SETOF text
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
                v_adds := v_adds || format('ADD COLUMN %I bigint GENERATED ALWAYS AS (%s) STORED',
                                           v_index.prefix_columns[v_t + 1],
                                           simpg.prefix_expression(v_index.fingerprint_column, v_index.k,
                                                                   v_index.levels, v_t));
            END IF;
            -- a valid B-tree on exactly this column, as ATTACH PARTITION can take it
            IF NOT EXISTS (SELECT FROM pg_index AS i
                           JOIN pg_class AS ic ON ic.oid = i.indexrelid
                           JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                           WHERE i.indrelid = tbl AND i.indnatts = 1 AND a.attname = v_index.prefix_columns[v_t + 1]
                             AND i.indexprs IS NULL AND i.indpred IS NULL AND i.indisvalid AND NOT i.indisunique
                             AND ic.relam = (SELECT am.oid FROM pg_am AS am WHERE am.amname = 'btree')) THEN
                v_creates := v_creates || format('CREATE INDEX %I ON %s (%I) WITH (fillfactor = 100)',
                                                 simpg.object_name(v_relname || '_' || v_index.fingerprint_column,
                                                                   format('_p%s_idx', v_t)),
                                                 tbl, v_index.prefix_columns[v_t + 1]);
                v_columns := v_columns || v_index.prefix_columns[v_t + 1];
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(v_adds) > 0 THEN
        v_statement := format('ALTER TABLE %s %s', tbl, array_to_string(v_adds, ', '));
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END IF;
    FOREACH v_statement IN ARRAY v_creates LOOP
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END LOOP;
    IF cardinality(v_columns) > 0 THEN
        v_statement := format('ANALYZE %s (%s)', tbl,
                              (SELECT string_agg(quote_ident(c), ', ') FROM unnest(v_columns) AS c));
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.prepare_partition(regclass, regclass) IS
    'Add a partitioned table''s simpg prefix columns and B-trees to a table about to be attached to it; returns the statements run';
