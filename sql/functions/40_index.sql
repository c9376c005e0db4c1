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
