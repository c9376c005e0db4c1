-- near-unique guard (issue 16): no two committed rows of a table within k bits, under
-- any number of concurrent writers, without serialising them.
--
-- Two fingerprints within the index's k share the full prefix of at least one of its
-- permuted tables. So a writer takes a transaction-level advisory lock for each table's
-- prefix of the fingerprint it writes, in one fixed order, and only then looks for a
-- stored row within k: the writers that could conflict wait for each other, nobody else
-- does (two unrelated prefixes that hash to one lock key only cost a wait). The look
-- runs after the locks, as a new statement, so at READ COMMITTED it sees every row
-- committed by a writer it waited for. At SERIALIZABLE the look is a read of the index
-- ranges that PostgreSQL's serializable snapshot isolation watches: a conflicting
-- writer it cannot see makes one of the two fail with 40001 (retry). REPEATABLE READ has
-- neither and is refused.

-- guard_lock_keys: the advisory lock keys of fingerprint fp under a layout, sorted and
-- distinct (the order every writer takes them in, so single-row writes never deadlock).
-- A key is a 64-bit hash of (table, permuted table t, fp's prefix in t): writers to other
-- tables, and other prefixes of this one, get other keys but for hash collisions. With a
-- banded guard, each non-NULL band key of the row adds one: a hash of (table, band i, the
-- key), tagged 65535 - i, far above any layout's table numbers (a shared key between a
-- band and a table would only cost a wait).
CREATE FUNCTION simpg.guard_lock_keys(rel regclass, fp bigint, k integer, levels integer[],
                                      bands bigint[] DEFAULT NULL) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT array_agg(DISTINCT key ORDER BY key)
            FROM (SELECT hashint8extended(simpg.prefix_lo(fp, k, levels, t), (rel::oid::bigint << 16) | t)
                  FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t
                  UNION ALL
                  SELECT hashint8extended(b.band, (rel::oid::bigint << 16) | (65536 - b.i))
                  FROM unnest(bands) WITH ORDINALITY AS b(band, i)
                  WHERE b.band IS NOT NULL) AS keys(key));

COMMENT ON FUNCTION simpg.guard_lock_keys(regclass, bigint, integer, integer[], bigint[]) IS
    'The advisory lock keys (pg_advisory_xact_lock(bigint)) a guarded write of fp (and its band keys) takes, in the order it takes them';

-- guard_check: the trigger a guard installs (AFTER INSERT OR UPDATE OF the fingerprint
-- column, FOR EACH ROW). Its arguments are fixed by create_guard: fingerprint column,
-- guard k, key column, the index layout (k, levels), its prefix columns and each one's
-- prefix length; a sketch guard adds the sketch column, the largest sketch distance and
-- its band key columns ('{}' without bands). The ranges and lock keys come from the
-- row's own generated prefix values: nothing of the layout is computed per row.
-- simpg.drop_index refuses while a guard uses the index, and a prefix column dropped by
-- hand makes writes fail (SPG01), so the guard never looks in ranges of another layout.
-- Rows of the same statement see each other (AFTER triggers run when the statement's
-- rows are all in).
--
-- A sketch guard refuses only a stored row that SimHashColumn.duplicates would return:
-- within k bits, or sharing a band key, with a fingerprint, and its sketch within the
-- largest distance of the new row's. A NULL sketch on either side confirms nothing, as
-- in duplicates: an unconfirmed pair is never refused, so no unrelated document is.
CREATE FUNCTION simpg.guard_check() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_col name := TG_ARGV[0];
    v_k integer := TG_ARGV[1]::integer;
    v_key_col name := TG_ARGV[2];
    v_prefix_columns name[] := TG_ARGV[5]::name[];
    v_prefix_bits integer[] := TG_ARGV[6]::integer[];
    v_sketch_col name := TG_ARGV[7];  -- NULL (no argument) for a fingerprint-only guard
    v_max_sketch integer := TG_ARGV[8]::integer;
    v_band_columns name[] := coalesce(TG_ARGV[9]::name[], '{}');
    v_new jsonb := to_jsonb(NEW);
    v_fp bigint := (v_new ->> v_col)::bigint;
    v_sketch bit(256);
    v_band bigint;
    v_prefix bigint;
    v_mask bigint;
    v_locks bigint[] := '{}';
    v_lock bigint;
    v_ranges text[] := '{}';
    v_shared text[] := '{}';
    v_within text;
    v_confirmed text := 'true';
    v_hit record;
BEGIN
    IF v_fp IS NULL THEN
        RETURN NULL;  -- nothing to guard
    END IF;
    IF v_sketch_col IS NOT NULL THEN
        v_sketch := (v_new ->> v_sketch_col)::bit(256);
        IF v_sketch IS NULL THEN
            RETURN NULL;  -- no sketch: nothing can confirm a near-duplicate of it
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND NOT EXISTS (
            SELECT FROM unnest(ARRAY[v_col, v_sketch_col] || v_band_columns) AS c
            WHERE to_jsonb(OLD) -> c IS DISTINCT FROM v_new -> c) THEN
        RETURN NULL;  -- none of the guarded columns changed
    END IF;
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot see concurrent writers at REPEATABLE READ', TG_RELID::regclass,
            quote_ident(v_col)
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'write at READ COMMITTED or SERIALIZABLE';
    END IF;
    FOR t IN 0 .. cardinality(v_prefix_columns) - 1 LOOP
        v_prefix := (v_new ->> v_prefix_columns[t + 1])::bigint;
        IF v_prefix IS NULL THEN
            RAISE EXCEPTION 'the simpg guard on %.% uses prefix column %, which is gone',
                TG_RELID::regclass, quote_ident(v_col), quote_ident(v_prefix_columns[t + 1])
                USING ERRCODE = 'SPG01',
                      HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)), repair or re-create the '
                                    'index, then create the guard again', TG_RELID::regclass, v_col);
        END IF;
        v_mask := -1::bigint << (64 - v_prefix_bits[t + 1]);  -- as simpg.prefix_lo / prefix_hi
        v_locks := v_locks || hashint8extended(v_prefix & v_mask, (TG_RELID::oid::bigint << 16) | t);
        v_ranges := v_ranges || format('t.%I BETWEEN %L::bigint AND %L::bigint', v_prefix_columns[t + 1],
                                       v_prefix & v_mask, v_prefix | ~v_mask);
    END LOOP;
    -- a row sharing a band key is a candidate too; its lock key is as simpg.guard_lock_keys'
    FOR i IN 1 .. cardinality(v_band_columns) LOOP
        v_band := (v_new ->> v_band_columns[i])::bigint;
        CONTINUE WHEN v_band IS NULL;
        v_locks := v_locks || hashint8extended(v_band, (TG_RELID::oid::bigint << 16) | (65536 - i));
        v_shared := v_shared || format('t.%I = %L::bigint', v_band_columns[i], v_band);
    END LOOP;
    -- in ascending order, the order of simpg.guard_lock_keys: every writer takes them alike
    FOREACH v_lock IN ARRAY ARRAY(SELECT DISTINCT x FROM unnest(v_locks) AS x ORDER BY x) LOOP
        PERFORM pg_advisory_xact_lock(v_lock);
    END LOOP;
    v_within := format('simpg.hamming(t.%I, $1) <= $2', v_col);
    IF v_shared <> '{}' THEN  -- found through a band, a row may be more than k bits away
        v_within := format('t.%I IS NOT NULL AND (%s OR %s)', v_col, v_within, array_to_string(v_shared, ' OR '));
    END IF;
    IF v_sketch_col IS NOT NULL THEN
        v_confirmed := format('bit_count(t.%I # $4) <= $5', v_sketch_col);
    END IF;
    -- a new statement after the locks: at READ COMMITTED, a new snapshot
    EXECUTE format('SELECT t.%I::text AS key, simpg.hamming(t.%I, $1) AS distance FROM %s AS t '
                   'WHERE (%s) AND %s AND %s AND t.%I::text IS DISTINCT FROM $3 '
                   'ORDER BY 2, 1 LIMIT 1',
                   v_key_col, v_col, TG_RELID::regclass, array_to_string(v_ranges || v_shared, ' OR '), v_within,
                   v_confirmed, v_key_col)
        INTO v_hit USING v_fp, v_k, v_new ->> v_key_col, v_sketch, v_max_sketch;
    IF v_hit.key IS NOT NULL THEN
        RAISE EXCEPTION 'near-duplicate row in %: its % is within % bits of a stored row''s%', TG_RELID::regclass,
            quote_ident(v_col), v_k,
            CASE WHEN v_sketch_col IS NULL THEN ''
                 ELSE format('%s, and its %s within %s bits',
                             CASE WHEN v_band_columns <> '{}' THEN ' or shares a band key with it' ELSE '' END,
                             quote_ident(v_sketch_col), v_max_sketch) END
            USING ERRCODE = 'exclusion_violation',
                  CONSTRAINT = TG_NAME,
                  DETAIL = format('Key (%s)=(%s) is within %s bits of the new row, key (%s)=(%s).',
                                  v_key_col, v_hit.key, v_hit.distance, v_key_col, v_new ->> v_key_col),
                  TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA, COLUMN = v_col;
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.guard_check() IS
    'Trigger of a simpg guard: refuses a row within k bits of another (confirmed by its sketch, if any; SQLSTATE 23P01), race-free';

-- create_guard: from now on no committed state of rel holds two rows whose col differ
-- in at most k bits (default: the index's k). Needs the simpg index on col (its layout
-- gives the locks and the lookup) and a key column to name rows by (default: the single-
-- column primary key). Refused when the table already holds such rows, saying how many
-- and how to list them. Runs as the caller, who must be allowed to create the trigger.
--
-- With sketch_column (bit(256), simpg.fingerprint.sketch), two rows count only when their
-- sketches also differ in at most max_sketch_distance bits (default simpg.max_sketch_distance(), the
-- MAX_SKETCH_DISTANCE of SimHashColumn.duplicates); with bands, rows sharing a band key
-- (bigint columns <sketch_column>_b0 .. _b3, simpg.fingerprint.sketch_and_bands) and
-- confirmed so count too, however far their fingerprints.
CREATE FUNCTION simpg.create_guard(rel regclass, col name DEFAULT NULL, k integer DEFAULT NULL,
                                   key_column name DEFAULT NULL, sketch_column name DEFAULT NULL,
                                   max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT false)
    RETURNS name
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.index_layout(rel, col);
    v_key record := simpg.report_key(rel, key_column);
    v_k integer := coalesce(k, v_row.k);
    v_name name := simpg.object_name(v_row.fingerprint_column, '_simpg_guard');
    v_max_sketch integer;
    v_band_columns name[] := '{}';
    v_column text;
    v_type text;
    v_want text;
    v_what text;
    v_pairs bigint;
    v_args text := '';
BEGIN
    IF v_k < 0 OR v_k > v_row.k THEN
        RAISE EXCEPTION 'a guard on %.% needs k from 0 to %, the radius of its simpg index, got %', rel,
            quote_ident(v_row.fingerprint_column), v_row.k, v_k
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch_column IS NULL AND (max_sketch_distance IS NOT NULL OR bands) THEN
        RAISE EXCEPTION 'a guard on %.% takes %, got %, only with a sketch_column to confirm by', rel,
            quote_ident(v_row.fingerprint_column),
            CASE WHEN bands THEN 'bands' ELSE 'max_sketch_distance' END,
            CASE WHEN bands THEN 'true' ELSE max_sketch_distance::text END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch_column IS NOT NULL THEN
        v_max_sketch := coalesce(max_sketch_distance, simpg.max_sketch_distance());
        IF v_max_sketch < 0 OR v_max_sketch > 256 THEN
            RAISE EXCEPTION 'a guard''s max_sketch_distance must be from 0 to 256 (the bits of a sketch), got %',
                v_max_sketch
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF coalesce(bands, false) THEN  -- the names simpg.psycopg._common.band_columns gives
            v_band_columns := ARRAY(SELECT sketch_column || '_b' || i FROM generate_series(0, simpg.band_count() - 1) AS i);
        END IF;
        -- text, not name: a name too long for the convention is not cut to another column's
        FOREACH v_column IN ARRAY sketch_column::text || v_band_columns::text[] LOOP
            v_want := CASE WHEN v_column = sketch_column THEN 'bit(256)' ELSE 'bigint' END;
            v_what := CASE WHEN v_column = sketch_column THEN 'the sketches a guard confirms by'
                           ELSE 'band keys of ' || quote_ident(sketch_column) END;
            v_type := NULL;
            SELECT format_type(a.atttypid, a.atttypmod) INTO v_type FROM pg_attribute AS a
            WHERE a.attrelid = rel AND a.attname::text = v_column AND a.attnum > 0 AND NOT a.attisdropped;
            IF v_type IS NULL THEN
                RAISE EXCEPTION 'column % of table % does not exist (%, %)', quote_ident(v_column), rel, v_what, v_want
                    USING ERRCODE = 'undefined_column';
            ELSIF v_type <> v_want THEN
                RAISE EXCEPTION 'column % of table % must be % (%), got %', quote_ident(v_column), rel, v_want,
                    v_what, v_type
                    USING ERRCODE = 'datatype_mismatch';
            END IF;
        END LOOP;
        v_args := format(', %L, %L, %L', sketch_column, v_max_sketch, v_band_columns);
    END IF;
    IF EXISTS (SELECT FROM pg_trigger WHERE tgrelid = rel AND tgname = v_name) THEN
        RAISE EXCEPTION 'table % already has the guard %', rel, quote_ident(v_name)
            USING ERRCODE = 'duplicate_object',
                  HINT = format('SELECT simpg.drop_guard(%L, %L) first to change it', rel, v_row.fingerprint_column);
    END IF;
    -- the trigger first, under a lock that keeps writers out until the check is done
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OF %s ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION simpg.guard_check(%L, %L, %L, %L, %L, %L, %L%s)',
                   v_name, (SELECT string_agg(quote_ident(c), ', ')
                            FROM unnest(ARRAY[v_row.fingerprint_column, sketch_column] || v_band_columns) AS c),
                   rel, v_row.fingerprint_column, v_k, v_key.column_name,
                   v_row.k, v_row.levels, v_row.prefix_columns,
                   ARRAY(SELECT simpg.prefix_bits(v_row.k, v_row.levels, t)
                         FROM generate_series(0, cardinality(v_row.prefix_columns) - 1) AS t),
                   v_args);
    -- the pairs the trigger would refuse: within k (and with a sketch, confirmed by it;
    -- with bands, also sharing a band key), as simpg.pairs reports them
    SELECT count(*) INTO v_pairs
    FROM simpg.pairs(NULL::text, rel, v_k, v_row.fingerprint_column, v_key.column_name, sketch_column,
                     v_max_sketch, coalesce(bands, false));
    IF v_pairs > 0 THEN
        RAISE EXCEPTION 'table % already holds % pair(s) of rows within % bits%', rel, v_pairs, v_k,
            CASE WHEN sketch_column IS NULL THEN ''
                 ELSE format('%s whose %s are within %s bits',
                             CASE WHEN v_band_columns <> '{}' THEN ' or sharing a band key' ELSE '' END,
                             quote_ident(sketch_column), v_max_sketch) END
            USING ERRCODE = 'exclusion_violation',
                  HINT = format('list them with SELECT * FROM simpg.pairs(%L, %s, %L%s), remove or change one '
                                'row of each, then create the guard', rel, v_k, v_row.fingerprint_column,
                                CASE WHEN sketch_column IS NULL THEN ''
                                     ELSE format(', sketch_column => %L, max_sketch_distance => %s, bands => %s',
                                                 sketch_column, v_max_sketch, coalesce(bands, false)) END);
    END IF;
    RETURN v_name;
END
$$;

COMMENT ON FUNCTION simpg.create_guard(regclass, name, integer, name, name, integer, boolean) IS
    'Refuse, race-free, any write that leaves two rows of rel within k bits (confirmed by sketch_column, with its band keys if bands); returns its name';

-- drop_guard: remove the guard of rel.col (an error if there is none).
CREATE FUNCTION simpg.drop_guard(rel regclass, col name DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_guard record;
BEGIN
    SELECT * INTO v_guard FROM simpg.table_guards(rel) AS g WHERE col IS NULL OR g.fingerprint_column = col;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % has no simpg guard%', rel, coalesce(' on column ' || quote_ident(col), '')
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('DROP TRIGGER %I ON %s', v_guard.guard_name, rel);
END
$$;

COMMENT ON FUNCTION simpg.drop_guard(regclass, name) IS 'Remove the simpg guard of rel (on col)';

-- table_guards: the guards of a table, read from its triggers' arguments (tgargs: each
-- argument's UTF-8 bytes, then a zero byte).
CREATE FUNCTION simpg.table_guards(rel regclass)
    RETURNS TABLE (guard_name name, fingerprint_column name, k integer, key_column name, sketch_column name,
                   max_sketch_distance integer, band_columns name[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_trigger record;
    v_args text[];
    v_rest bytea;
    v_end integer;
BEGIN
    FOR v_trigger IN
        SELECT tr.tgname, tr.tgargs FROM pg_trigger AS tr
        WHERE tr.tgrelid = rel AND tr.tgfoid = 'simpg.guard_check()'::regprocedure ORDER BY tr.tgname
    LOOP
        v_args := '{}';
        v_rest := v_trigger.tgargs;
        LOOP
            v_end := position('\x00'::bytea IN v_rest);
            EXIT WHEN v_end = 0;
            v_args := v_args || convert_from(substring(v_rest FROM 1 FOR v_end - 1), 'UTF8');
            v_rest := substring(v_rest FROM v_end + 1);
        END LOOP;
        guard_name := v_trigger.tgname;
        fingerprint_column := v_args[1];
        k := v_args[2]::integer;
        key_column := v_args[3];
        sketch_column := v_args[8];  -- NULL for a fingerprint-only guard
        max_sketch_distance := v_args[9]::integer;
        band_columns := nullif(v_args[10]::name[], '{}');
        RETURN NEXT;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.table_guards(regclass) IS
    'The simpg guards of rel: trigger name, fingerprint column, k, key column, and sketch column, its largest distance and band columns (NULL if none)';

-- insert_or_get: the 409 case without an exception. Inserts new_row (column -> value;
-- columns left out take their defaults) into a guarded table, or, when the guard refuses
-- it, inserts nothing and returns the stored row nearest to it: one row
-- (inserted, key, distance), key as text, distance NULL when inserted.
CREATE FUNCTION simpg.insert_or_get(rel regclass, new_row jsonb, col name DEFAULT NULL)
    RETURNS TABLE (inserted boolean, key text, distance integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_guard record;
    v_columns text;
    v_unknown text;
    v_constraint text;
    v_rows text;
    v_confirmed text := 'true';
BEGIN
    SELECT * INTO v_guard FROM simpg.table_guards(rel) AS g WHERE col IS NULL OR g.fingerprint_column = col;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % has no simpg guard%', rel, coalesce(' on column ' || quote_ident(col), '')
            USING ERRCODE = 'undefined_object', HINT = 'create one with simpg.create_guard(table, column)';
    END IF;
    IF new_row IS NULL OR jsonb_typeof(new_row) <> 'object' THEN
        RAISE EXCEPTION 'new_row must be a JSON object of column values, got %', coalesce(new_row::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(j.name, ', ') FILTER (WHERE a.attname IS NULL OR a.attgenerated <> ''),
           string_agg(quote_ident(j.name), ', ') FILTER (WHERE a.attname IS NOT NULL AND a.attgenerated = '')
    INTO v_unknown, v_columns
    FROM jsonb_object_keys(new_row) AS j(name)
    LEFT JOIN pg_attribute AS a ON a.attrelid = rel AND a.attname = j.name AND a.attnum > 0 AND NOT a.attisdropped;
    IF v_unknown IS NOT NULL THEN
        RAISE EXCEPTION 'table % has no column it can write called %', rel, v_unknown
            USING ERRCODE = 'undefined_column';
    END IF;
    BEGIN
        EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_record(NULL::%s, $1) RETURNING %I::text',
                       rel, v_columns, v_columns, rel, v_guard.key_column)
            INTO key USING new_row;
        inserted := true;
        RETURN NEXT;
        RETURN;
    EXCEPTION WHEN exclusion_violation THEN
        GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
        IF v_constraint IS DISTINCT FROM v_guard.guard_name THEN
            RAISE;  -- another constraint's refusal is the caller's to see
        END IF;
    END;
    -- refused: the nearest stored row the guard counts, through the index (and the band
    -- keys' B-trees), in the trigger's order, so it names the row the refusal named
    v_rows := format('(%s)', simpg.near_query(rel, (new_row ->> v_guard.fingerprint_column)::bigint, v_guard.k,
                                               v_guard.fingerprint_column));
    IF v_guard.sketch_column IS NOT NULL THEN
        v_rows := v_rows || coalesce((SELECT string_agg(format(' UNION ALL (SELECT t.* FROM %s AS t WHERE t.%I = %L::bigint)',
                                                              rel, c, new_row ->> c), '')
                                      FROM unnest(v_guard.band_columns) AS c WHERE new_row ->> c IS NOT NULL), '');
        v_confirmed := format('t.%I IS NOT NULL AND bit_count(t.%I # $2) <= %s', v_guard.fingerprint_column,
                              v_guard.sketch_column, v_guard.max_sketch_distance);
    END IF;
    EXECUTE format('SELECT t.%I::text, simpg.hamming(t.%I, $1) FROM (%s) AS t WHERE %s ORDER BY 2, 1 LIMIT 1',
                   v_guard.key_column, v_guard.fingerprint_column, v_rows, v_confirmed)
        INTO key, distance USING (new_row ->> v_guard.fingerprint_column)::bigint,
                                 (new_row ->> v_guard.sketch_column)::bit(256);
    inserted := false;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION simpg.insert_or_get(regclass, jsonb, name) IS
    'Insert a row into a guarded table, or return the stored row within k it would duplicate: (inserted, key, distance)';
