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
-- Contract: raises for a NULL table, a snapshot older than a rewrite of the table
-- (simpg.snapshot_sees_table's serialization_failure), a column with no simpg index
-- (simpg.index_layout's error), or k NULL, negative or above the index's radius
-- (simpg.check_radius), in that order.
CREATE FUNCTION simpg.checked_layout(rel regclass, k integer, col name DEFAULT NULL)
    RETURNS simpg.indexes
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
BEGIN
    PERFORM simpg.snapshot_sees_table(rel);  -- before the catalog, which it may contradict
    v_row := simpg.index_layout(rel, col);
    PERFORM simpg.check_radius(k, v_row.k,
                               format('the simpg index on %s.%s', rel, quote_ident(v_row.fingerprint_column)),
                               'drop and re-create the index with a larger k');
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
-- column with no simpg index. The prefix ranges are simpg.prefix_lo/prefix_hi of
-- literals, which PostgreSQL folds when it plans, so each table's condition is a plain
-- B-tree range scan; the OR of them becomes a BitmapOr, which
-- also removes rows found through several tables.
CREATE FUNCTION simpg.near_query(rel regclass, fp bigint, k integer, col name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_fp text := format('%L::bigint', fp);
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fingerprint must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_row := simpg.checked_layout(rel, k, col);
    -- every literal typed: an untyped 5 would be an integer, and a function or operator
    -- taking (bigint, integer) that someone adds could then be chosen over simpg's
    RETURN format('SELECT t.* FROM %s AS t WHERE ', rel)
        || simpg.lookup_where(v_row.fingerprint_column, v_row.prefix_columns, v_fp, format('%s::integer', k),
                              v_row.k, v_row.levels)
        || format(' ORDER BY simpg.hamming(t.%I, %s)', v_row.fingerprint_column, v_fp);
END
$$;

COMMENT ON FUNCTION simpg.near_query(regclass, bigint, integer, name) IS
    'The index-backed SQL statement that finds the rows within distance k of fp';

-- layout_is, for the statements simpg.near prepares: also the prefix columns, by name and
-- in table order, and with sole, that col's index is the table's only one (what a call
-- that names no column relies on). Evaluated when the statement is planned, as above.
CREATE FUNCTION simpg.layout_is(rel regclass, col name, k integer, levels integer[], prefix_columns name[],
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
CREATE FUNCTION simpg.lookup_lead(kind text, rel regclass) RETURNS text
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
CREATE FUNCTION simpg.lookup_parameters(kind text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE kind
        WHEN 'near' THEN '(bigint, integer)'
        WHEN 'many' THEN '(bigint[], integer)'
        WHEN 'duplicates' THEN '(bigint, integer, bit(256), bigint[], integer)'
        WHEN 'banded' THEN '(bigint, integer, bit(256), bigint[], integer)'
    END;

COMMENT ON FUNCTION simpg.lookup_parameters(text) IS
    'The parameter types of the statement a kind of lookup prepares, as PREPARE states them';

-- lookup_where: the condition of every lookup, written here only: the OR of the index's
-- prefix ranges (with band_columns, ORed with the band keys' equalities), the Hamming
-- check against the radius, and with sketch_column the sketch confirmation. Every SQL
-- statement that finds rows near a fingerprint (lookup_statement's kinds, near_query,
-- the guard, insert_or_get) and the Python handles' statements take it from here.
-- fp, radius, sketch, max_sketch and band_keys are SQL expressions (a parameter such as $1,
-- a typed literal, a column of a join such as q.fp); names are quoted here (%I). sketch
-- and max_sketch are read only with sketch_column, band_keys only with band_columns.
-- The ranges are computed from fp (k and levels: simpg.prefix_lo/prefix_hi, which
-- PostgreSQL folds when it plans with constant layout arguments), or given: each prefix
-- column's range starts at starts[i] (an expression: a typed literal, a join's column),
-- or at lows[t + 1] (lows: a bigint[] expression whose element t + 1 is table t's range
-- start, computed by the client), and ends at ends[i], or at the start plus the mask of
-- the bits after the prefix, whose width is prefix_bits[i], or the layout's if k and
-- levels are given. alias: the name the columns are read through (t).
-- SQLAlchemy's within() renders this text offline (simpg/sqlalchemy/types.py), held
-- equal to it by tests/integration/test_sqlalchemy_lookup_where.py.
-- A row found through a band may be any number of bits away; it needs a fingerprint.
CREATE FUNCTION simpg.lookup_where(col name, prefix_columns name[], fp text, radius text,
                                   k integer DEFAULT NULL, levels integer[] DEFAULT NULL,
                                   lows text DEFAULT NULL, prefix_bits integer[] DEFAULT NULL,
                                   sketch_column name DEFAULT NULL, sketch text DEFAULT NULL,
                                   max_sketch text DEFAULT NULL, band_columns name[] DEFAULT '{}',
                                   band_keys text DEFAULT NULL, starts text[] DEFAULT NULL, ends text[] DEFAULT NULL,
                                   alias name DEFAULT 't')
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_levels text := quote_literal(levels::text);
    v_count integer := cardinality(prefix_columns);
    v_ranges text := '';
    v_start text;
    v_shared text;
    v_within text;
BEGIN
    IF col IS NULL OR fp IS NULL OR radius IS NULL OR alias IS NULL OR v_count IS NULL
       OR (lows IS NULL AND starts IS NULL AND levels IS NULL)
       OR (starts IS NOT NULL AND cardinality(starts) <> v_count)
       OR (ends IS NOT NULL AND (cardinality(ends) <> v_count OR (lows IS NULL AND starts IS NULL)))
       OR (ends IS NULL AND levels IS NULL AND cardinality(prefix_bits) IS DISTINCT FROM v_count)
       OR (sketch_column IS NOT NULL AND (sketch IS NULL OR max_sketch IS NULL))
       OR (cardinality(band_columns) > 0 AND band_keys IS NULL) THEN
        RAISE EXCEPTION 'lookup_where needs a column, prefix columns, fp, radius, an alias, the ranges as k and levels or as starts or lows (with ends, prefix_bits or the layout), one per prefix column, and each optional column with its expressions'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_i IN 1 .. v_count LOOP
        v_start := coalesce(starts[v_i], lows || '[' || v_i || ']');
        v_ranges := v_ranges || CASE WHEN v_i > 1 THEN ' OR ' ELSE '' END
            || CASE WHEN v_start IS NULL
                    THEN format('%6$I.%1$I BETWEEN simpg.prefix_lo(%2$s, %3$s::integer, %4$s::integer[], %5$s::integer) '
                                'AND simpg.prefix_hi(%2$s, %3$s::integer, %4$s::integer[], %5$s::integer)',
                                prefix_columns[v_i], fp, k, v_levels, v_i - 1, alias)
                    ELSE format('%1$I.%2$I BETWEEN %3$s AND %4$s', alias, prefix_columns[v_i], v_start,
                                coalesce(ends[v_i], format('%s + %L::bigint', v_start,
                                    ~(-1::bigint << (64 - coalesce(prefix_bits[v_i], simpg.prefix_bits(k, levels, v_i - 1)))))))
               END;
    END LOOP;
    v_within := format('simpg.hamming(%I.%I, %s) <= %s', alias, col, fp, radius);
    IF cardinality(band_columns) > 0 THEN
        SELECT string_agg(format('%I.%I = %s[%s]', alias, b.c, band_keys, b.i), ' OR ' ORDER BY b.i) INTO v_shared
        FROM unnest(band_columns) WITH ORDINALITY AS b(c, i);
        v_ranges := v_ranges || ' OR ' || v_shared;
        v_within := format('%I.%I IS NOT NULL AND (%s OR %s)', alias, col, v_within, v_shared);
    END IF;
    RETURN format('(%s) AND %s', v_ranges, v_within)
        || CASE WHEN sketch_column IS NULL THEN ''
                ELSE format(' AND simpg.sketch_distance(%I.%I, %s) <= %s', alias, sketch_column, sketch, max_sketch) END;
END
$$;

COMMENT ON FUNCTION simpg.lookup_where(name, name[], text, text, integer, integer[], text, integer[], name, text, text, name[], text, text[], text[], name) IS
    'Internal: the condition of every lookup statement (prefix ranges and band keys ORed, the Hamming check, the sketch confirmation), given its expressions';

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
CREATE FUNCTION simpg.lookup_statement(kind text, rel regclass, col name, k integer, levels integer[],
                                       prefix_columns name[], sole boolean, sketch_column name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fp text := CASE WHEN kind IN ('near', 'duplicates', 'banded') THEN '$1' WHEN kind = 'many' THEN 'q.fp' END;
    v_levels text := quote_literal(levels::text);
    v_text text;
BEGIN
    IF v_fp IS NULL THEN
        RAISE EXCEPTION 'kind must be near, many, duplicates or banded, got %', coalesce(kind, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- simpg.near checks a prepared statement against this text at every call
    -- (prepared_lookup), so it is built in one pass of plain string operations
    v_text := simpg.lookup_lead(kind, rel)
        || format('%L::name, %s, %s::integer[], %L::name[], %s) AND ', col, k, v_levels, prefix_columns,
                  CASE WHEN sole THEN 'true' ELSE 'false' END);
    IF kind IN ('duplicates', 'banded') THEN
        RETURN v_text
            || simpg.lookup_where(col, prefix_columns, '$1', '$2', k, levels, sketch_column => sketch_column,
                                  sketch => '$3', max_sketch => '$5',
                                  band_columns => CASE WHEN kind = 'banded' THEN ARRAY(
                                      SELECT b.band_column FROM simpg.band_columns(sketch_column) AS b
                                      ORDER BY b.i) ELSE '{}' END,
                                  band_keys => '$4')
            || format(' ORDER BY simpg.sketch_distance(t.%1$I, $3), simpg.hamming(t.%2$I, $1)', sketch_column, col);
    END IF;
    RETURN v_text
        || simpg.lookup_where(col, prefix_columns, v_fp, '$2', k, levels)
        || ' ORDER BY ' || CASE kind WHEN 'many' THEN 'q.i, ' ELSE '' END
        || format('simpg.hamming(t.%I, %s)', col, v_fp);
END
$$;

COMMENT ON FUNCTION simpg.lookup_statement(text, regclass, name, integer, integer[], name[], boolean, name) IS
    'The parameterised statement simpg.near (kind near), simpg.near_many (kind many) or simpg.duplicates (kinds duplicates and banded, with sketch_column) prepares for this layout';

-- unquote_literal: the value of a string literal as quote_literal writes it ('...' or E'...')
CREATE FUNCTION simpg.unquote_literal(literal text) RETURNS text
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
CREATE FUNCTION simpg.statement_radius(kind text, rel regclass, sketch_column name, statement_name text,
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
CREATE FUNCTION simpg.lookup_statement_name(kind text, rel regclass, col_attnum smallint, sketch_attnum smallint)
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
CREATE FUNCTION simpg.prepared_lookup(kind text, rel regclass, col name, sketch_column name DEFAULT NULL,
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
CREATE FUNCTION simpg.session_lookup(kind text, tbl anyelement, col name, sketch_column name DEFAULT NULL,
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
CREATE FUNCTION simpg.prepare_lookup(kind text, rel regclass, k integer, col name, sketch_column name DEFAULT NULL,
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
CREATE FUNCTION simpg.lookup_rel(tbl anyelement) RETURNS regclass
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
CREATE FUNCTION simpg.near(tbl anyelement, fp bigint, k integer, col name DEFAULT NULL)
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
    v_lookup := simpg.session_lookup('near', tbl, col);
    -- a k the prepared statement does not answer: prepare_lookup checks it against the
    -- index (which may be wider now) and raises or prepares again
    IF v_lookup.radius IS NULL OR simpg.radius_error(k, v_lookup.radius, 'the prepared lookup') IS NOT NULL THEN
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
CREATE FUNCTION simpg.near_many(tbl anyelement, fps bigint[], k integer, col name DEFAULT NULL)
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
    v_lookup := simpg.session_lookup('many', tbl, col);
    -- a k the prepared statement does not answer: prepare_lookup checks it against the
    -- index (which may be wider now) and raises or prepares again
    IF v_lookup.radius IS NULL OR simpg.radius_error(k, v_lookup.radius, 'the prepared lookup') IS NOT NULL THEN
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
