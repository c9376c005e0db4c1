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

-- index_name: a name for a new index on rel: simpg.object_name(base, suffix), or, when a
-- relation of rel's schema (or one of taken, names about to be used) has it, the same
-- with 1, 2, ... appended, as PostgreSQL chooses the names of unnamed indexes. Table
-- a_b with column c and table a with column b_c both make base a_b_c: the second index
-- gets a_b_c_p0_idx1 instead of failing.
CREATE FUNCTION simpg.index_name(rel regclass, base text, suffix text, taken name[] DEFAULT '{}') RETURNS name
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

-- invalid_index_drops: what a stopped CREATE INDEX CONCURRENTLY left on rel's column
-- attnum: its INVALID one-column indexes (of access method am; NULL: any), each with the
-- statement that drops it, by name. CONCURRENTLY with concurrently, except on a partitioned
-- table (PostgreSQL cannot drop a partitioned index concurrently; that takes its partitions').
-- The statements that resume a build drop these first and build them again under their names.
CREATE FUNCTION simpg.invalid_index_drops(rel regclass, attnum smallint, am name, concurrently boolean)
    RETURNS TABLE (index_name name, statement text)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ic.relname,
           format('DROP INDEX%s IF EXISTS %I.%I',
                  CASE WHEN invalid_index_drops.concurrently AND c.relkind <> 'p' THEN ' CONCURRENTLY' ELSE '' END,
                  n.nspname, ic.relname)
    FROM pg_index AS i
    JOIN pg_class AS c ON c.oid = i.indrelid
    JOIN pg_class AS ic ON ic.oid = i.indexrelid
    JOIN pg_namespace AS n ON n.oid = ic.relnamespace
    JOIN pg_am AS a ON a.oid = ic.relam
    WHERE i.indrelid = rel AND i.indnatts = 1 AND i.indkey[0] = invalid_index_drops.attnum AND NOT i.indisvalid
      AND (invalid_index_drops.am IS NULL OR a.amname = invalid_index_drops.am)
    ORDER BY ic.relname
$$;

COMMENT ON FUNCTION simpg.invalid_index_drops(regclass, smallint, name, boolean) IS
    'Internal: the INVALID one-column indexes on a column that a stopped concurrent build left, with the DROP INDEX of each';

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

-- Index DDL is written here once. simpg.index_ddl returns the statements of an index;
-- simpg.create_index runs them, and so do the clients that cannot run them inside a
-- function: Alembic's create_simhash_index(concurrently=True) and simpg backfill
-- (CREATE INDEX CONCURRENTLY cannot run in a transaction). prepare_partition and repair
-- build from the same three pieces. The one other rendering is SQLAlchemy's declared
-- schema (simpg.sqlalchemy.simhash_index, which exists before any database does);
-- tests/integration/test_index_ddl.py checks that every path makes the same catalog.

-- relation_name: rel schema-qualified, as generated statements name it, so that they
-- reach rel whatever search_path runs them (a temporary table as pg_temp_N.name).
CREATE FUNCTION simpg.relation_name(rel regclass) RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
            FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            WHERE c.oid = rel);

COMMENT ON FUNCTION simpg.relation_name(regclass) IS
    'rel schema-qualified and quoted, as the statements simpg generates name it';

-- prefix_column_clause: the ALTER TABLE clause that adds table t's prefix column.
CREATE FUNCTION simpg.prefix_column_clause(prefix_column name, col name, k integer, levels integer[], t integer)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.format('ADD COLUMN %I bigint GENERATED ALWAYS AS (%s) STORED',
                             prefix_column, simpg.prefix_expression(col, k, levels, t));

COMMENT ON FUNCTION simpg.prefix_column_clause(name, name, integer, integer[], integer) IS
    'ADD COLUMN clause of table t''s stored generated prefix column';

-- prefix_btree_statement: CREATE INDEX of one prefix B-tree. only_parent: ON ONLY a partitioned
-- table (its partitions' indexes are attached afterwards).
CREATE FUNCTION simpg.prefix_btree_statement(index_name name, rel regclass, prefix_column name,
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
CREATE FUNCTION simpg.analyze_statement(rel regclass, columns name[]) RETURNS text
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
CREATE FUNCTION simpg.index_ddl(rel regclass, col name, k integer, levels integer[],
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
    SELECT 'drop_invalid', p.t, d.index_name, d.statement
    FROM simpg.prefix_columns_of(rel) AS p
    CROSS JOIN LATERAL simpg.invalid_index_drops(rel, p.prefix_attnum, NULL, index_ddl.concurrently) AS d
    WHERE p.fingerprint_column = col AND p.k = index_ddl.k AND p.levels = index_ddl.levels
    ORDER BY p.t, d.index_name;
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
    v_step record;
    v_row simpg.indexes;
BEGIN
    IF rel IS NULL OR col IS NULL OR k IS NULL THEN
        RAISE EXCEPTION 'table, column and k must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_type := simpg.column_type(rel, col);
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

-- prepare_partition: give partition, a table that is to become a partition of rel (ALTER
-- TABLE rel ATTACH PARTITION partition ...), what PostgreSQL requires of it for rel's simpg
-- indexes: each prefix column, generated by the same expression (without them ATTACH
-- PARTITION fails with "child table is missing column"), and a B-tree on each, which
-- ATTACH PARTITION then takes as the partition's index instead of building one while it
-- holds its locks. Returns the statements it ran: none when partition is ready, so it may run
-- again.
-- Contract: rel is a partitioned table whose simpg indexes are complete; the caller
-- owns both; partition is not a partition yet, has each indexed fingerprint column as a bigint,
-- no simpg index of another layout on it, and any column named like a prefix column
-- is that generated column. Adds every missing column in one ALTER TABLE (one rewrite
-- of partition, under an ACCESS EXCLUSIVE lock on partition only).
CREATE FUNCTION simpg.prepare_partition(rel regclass, partition regclass) RETURNS SETOF text
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
    IF rel IS NULL OR partition IS NULL THEN
        RAISE EXCEPTION 'rel and partition must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = rel) <> 'p' THEN
        RAISE EXCEPTION 'table % is not partitioned', rel USING ERRCODE = 'wrong_object_type';
    END IF;
    IF partition = rel OR (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = partition) THEN
        RAISE EXCEPTION 'table % is already a partition%', partition,
            coalesce(' of ' || (SELECT h.inhparent::regclass::text FROM pg_inherits AS h WHERE h.inhrelid = partition), '')
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT simpg.owns(partition) THEN
        RAISE EXCEPTION 'must be owner of table %', partition USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (SELECT FROM simpg.table_indexes(rel)) THEN
        RAISE EXCEPTION 'no simpg index on %', rel
            USING ERRCODE = 'undefined_object', HINT = 'create one with simpg.create_index(table, column, k)';
    END IF;
    SELECT c.relname INTO v_relname FROM pg_class AS c WHERE c.oid = partition;
    FOR v_index IN SELECT * FROM simpg.table_indexes(rel) ORDER BY 1, 2, 3 LOOP
        IF array_position(v_index.prefix_columns, NULL) IS NOT NULL THEN
            PERFORM simpg.index_layout(rel, v_index.fingerprint_column);  -- raises: damaged
        END IF;
        v_type := simpg.column_type(partition, v_index.fingerprint_column);
        IF v_type <> 'bigint'::regtype THEN
            RAISE EXCEPTION 'column %.% is %, expected bigint', partition, quote_ident(v_index.fingerprint_column), v_type
                USING ERRCODE = 'datatype_mismatch';
        END IF;
        SELECT i.k, i.levels INTO v_found FROM simpg.table_indexes(partition) AS i
        WHERE i.fingerprint_column = v_index.fingerprint_column
          AND (i.k, i.levels) IS DISTINCT FROM (v_index.k, v_index.levels)
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'table % has a simpg index k=% blocks=% on column %, and % has k=% blocks=%',
                partition, v_found.k, array_to_string(v_found.levels, 'x'), quote_ident(v_index.fingerprint_column),
                rel, v_index.k, array_to_string(v_index.levels, 'x')
                USING ERRCODE = 'duplicate_object',
                      HINT = format('drop it first: SELECT simpg.drop_index(%L, %L)', partition, v_index.fingerprint_column);
        END IF;
        FOR v_t IN 0 .. v_index.tables - 1 LOOP
            IF EXISTS (SELECT FROM pg_attribute AS a
                       WHERE a.attrelid = partition AND a.attname = v_index.prefix_columns[v_t + 1] AND NOT a.attisdropped) THEN
                IF NOT EXISTS (SELECT FROM simpg.prefix_columns_of(partition) AS c
                               WHERE c.prefix_column = v_index.prefix_columns[v_t + 1]
                                 AND c.fingerprint_column = v_index.fingerprint_column
                                 AND c.k = v_index.k AND c.levels = v_index.levels AND c.t = v_t) THEN
                    RAISE EXCEPTION 'column %.% is not the stored generated column %', partition,
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
                           WHERE i.indrelid = partition AND i.indnatts = 1 AND a.attname = v_index.prefix_columns[v_t + 1]
                             AND i.indexprs IS NULL AND i.indpred IS NULL AND i.indisvalid AND NOT i.indisunique
                             AND ic.relam = (SELECT am.oid FROM pg_am AS am WHERE am.amname = 'btree')) THEN
                v_name := simpg.index_name(partition, v_relname || '_' || v_index.fingerprint_column,
                                           format('_p%s_idx', v_t), v_names);
                v_names := v_names || v_name;
                v_creates := v_creates || simpg.prefix_btree_statement(v_name, partition, v_index.prefix_columns[v_t + 1]);
                v_columns := v_columns || v_index.prefix_columns[v_t + 1];
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(v_adds) > 0 THEN
        v_statement := format('ALTER TABLE %s %s', simpg.relation_name(partition), array_to_string(v_adds, ', '));
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END IF;
    FOREACH v_statement IN ARRAY v_creates LOOP
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END LOOP;
    IF cardinality(v_columns) > 0 THEN
        v_statement := simpg.analyze_statement(partition, v_columns);
        EXECUTE v_statement;
        RETURN NEXT v_statement;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.prepare_partition(regclass, regclass) IS
    'Add a partitioned table''s simpg prefix columns and B-trees to a table about to be attached to it; returns the statements run';
