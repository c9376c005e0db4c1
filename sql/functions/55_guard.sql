-- near-unique guard: no two committed rows of a table within k bits, under
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

-- The locks. Advisory locks would do, but their keys are public:
-- any role, even one that may not read the table, could compute a guard's keys from the
-- catalogs (or read them in pg_locks) and hold them, blocking every guarded write. So a
-- guarded write locks rows of simpg.guard_locks instead: one row per (guarded table,
-- slot), a slot a 16-bit hash of (permuted table, prefix) or (band, band key), made when
-- first needed (so dump and restore, a crash or a new table only cost one insert).
-- Row-level security lets a role see, make and lock only the rows of tables it may write
-- (INSERT or UPDATE on some column): a stranger, or a reader, can take none of them.
-- The privileges are column-level only: LOCK TABLE needs a table-level one, so nobody
-- but the owner can lock the whole table. A writer can hold rows of its own table, and
-- so block other writers of it, as it can in plain PostgreSQL (an uncommitted row with a
-- unique key makes every writer of that key wait). Nothing is decided from the rows: a
-- row lost or made by hand costs a wait or one more insert, never a missed row. The
-- table is UNLOGGED (no WAL for the locks; emptied after a crash, then made again).
-- At most 65,536 rows per guarded table; two unrelated writes that share a slot wait
-- for each other (about 1 in 650 pairs of writes at 10 slots each), nothing more.
CREATE UNLOGGED TABLE simpg.guard_locks (
    guarded_table oid NOT NULL,
    slot integer NOT NULL,
    PRIMARY KEY (guarded_table, slot)
);

COMMENT ON TABLE simpg.guard_locks IS
    'Lock rows of the simpg guards: a guarded write locks its slots here (FOR UPDATE); each role sees only the rows of tables it may write';

ALTER TABLE simpg.guard_locks ENABLE ROW LEVEL SECURITY;
CREATE POLICY writers ON simpg.guard_locks
    USING (has_any_column_privilege(guarded_table, 'INSERT, UPDATE'))
    WITH CHECK (has_any_column_privilege(guarded_table, 'INSERT, UPDATE'));
-- UPDATE (slot): SELECT ... FOR UPDATE needs UPDATE on one column; a writer that changes
-- a slot of its own table only makes the guard insert it again
GRANT SELECT (guarded_table, slot), INSERT (guarded_table, slot), UPDATE (slot) ON simpg.guard_locks TO PUBLIC;

-- guard_lock_keys: the slots of simpg.guard_locks a guarded write of fp (and its band
-- keys) locks, sorted and distinct: the order every writer locks them in, so single-row
-- writes never deadlock. A slot is the low 16 bits of a 64-bit hash of fp's prefix in
-- permuted table t, seeded with t; with a banded guard, each non-NULL band key of the
-- row adds one, seeded with 65536 - i, far above any layout's table numbers. rel names
-- the guarded table (the rows are its own), which the slots do not depend on.
CREATE FUNCTION simpg.guard_lock_keys(rel regclass, fp bigint, k integer, levels integer[],
                                      band_keys bigint[] DEFAULT NULL) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT array_agg(DISTINCT key ORDER BY key)
            FROM (SELECT hashint8extended(simpg.prefix_lo(fp, k, levels, t), t) & 65535
                  FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t
                  UNION ALL
                  SELECT hashint8extended(b.band, 65536 - b.i) & 65535
                  FROM unnest(band_keys) WITH ORDINALITY AS b(band, i)
                  WHERE b.band IS NOT NULL) AS keys(key));

COMMENT ON FUNCTION simpg.guard_lock_keys(regclass, bigint, integer, integer[], bigint[]) IS
    'The slots of simpg.guard_locks a guarded write of fp (and its band keys) locks, in the order it locks them';

-- guard_check: the trigger a guard installs (AFTER INSERT OR UPDATE OF the fingerprint
-- column, FOR EACH ROW). Its arguments are fixed by create_guard: fingerprint column,
-- guard k, key column, the index layout (k, levels), its prefix columns and each one's
-- prefix length; a sketch guard adds the sketch column, the largest sketch distance and
-- its band key columns ('{}' without bands). The ranges and lock slots come from the
-- row's own generated prefix values: nothing of the layout is computed per row.
-- simpg.drop_index refuses while a guard uses the index, and a prefix column dropped by
-- hand makes writes fail (SPG01), so the guard never looks in ranges of another layout.
-- Rows of the same statement see each other (AFTER triggers run when the statement's
-- rows are all in).
--
-- The guarded table is the one create_guard made the trigger on: a partition's trigger
-- is PostgreSQL's clone of its partitioned table's (tgparentid), and the look and the
-- locks are the guarded table's, so a near-duplicate in another partition is found, and
-- a row that moves to another partition (an INSERT there) is checked like a new one.
-- Before anything is read, the trigger checks what would make its look blind, and
-- refuses the write instead (it never accepts a row it could not check):
-- * a guarded column renamed or dropped (the arguments hold names): SPG01, naming it;
-- * row-level security that applies to the writer: the look would see only the rows
--   the writer may see (42501);
-- * inheritance children of the guarded table, whose writes the trigger never sees (0A000).
-- It runs no code of the table's owner: NEW's columns are read by field selection, the
-- guarded columns have built-in types (checked here: a cast or operator of another type
-- could be hers), keys are printed with their type's output function (format %s), never
-- cast (to_jsonb(NEW) would run a cast to json of any column's type).
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
    v_guarded regclass;
    v_bad record;
    v_read text;
    v_fp bigint;
    v_sketch bit(256);
    v_bands bigint[];
    v_prefixes bigint[];
    v_key text;
    v_changed boolean;
    v_prefix bigint;
    v_mask bigint;
    v_slots integer[] := '{}';
    v_locked bigint;
    v_lows bigint[] := '{}';  -- each table's range start: the new row's prefix, low bits cleared
    v_hit record;
BEGIN
    -- the guarded table: the top of the chain of clones this trigger belongs to
    WITH RECURSIVE up(rel, parent) AS (
        SELECT tr.tgrelid, tr.tgparentid FROM pg_trigger AS tr WHERE tr.tgrelid = TG_RELID AND tr.tgname = TG_NAME
        UNION ALL
        SELECT tr.tgrelid, tr.tgparentid FROM up JOIN pg_trigger AS tr ON tr.oid = up.parent)
    SELECT up.rel INTO v_guarded FROM up WHERE up.parent = 0;
    -- every column the guard reads, as it is now (a partition has its table's names and types)
    SELECT c.name, c.want, c.role, format_type(a.atttypid, a.atttypmod) AS have INTO v_bad
    FROM unnest(ARRAY[v_col, v_key_col, v_sketch_col] || v_band_columns || v_prefix_columns,
                ARRAY['bigint', NULL, 'bit(256)'] || array_fill('bigint'::text, ARRAY[cardinality(v_band_columns)])
                    || array_fill('bigint'::text, ARRAY[cardinality(v_prefix_columns)]),
                ARRAY['fingerprint', 'key', 'sketch'] || array_fill('band key'::text, ARRAY[cardinality(v_band_columns)])
                    || array_fill('prefix'::text, ARRAY[cardinality(v_prefix_columns)])) AS c(name, want, role)
    LEFT JOIN pg_attribute AS a ON a.attrelid = v_guarded AND a.attname = c.name AND a.attnum > 0
                               AND NOT a.attisdropped
    WHERE c.name IS NOT NULL
      AND (a.attname IS NULL OR format_type(a.atttypid, a.atttypmod) IS DISTINCT FROM coalesce(c.want, format_type(a.atttypid, a.atttypmod)))
    LIMIT 1;
    IF FOUND AND v_bad.have IS NULL AND v_bad.role = 'prefix' THEN
        RAISE EXCEPTION 'the simpg guard on %.% uses prefix column %, which is gone',
            v_guarded, quote_ident(v_col), quote_ident(v_bad.name)
            USING ERRCODE = 'SPG01',
                  HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)), repair or re-create the '
                                'index, then create the guard again', v_guarded, v_col);
    ELSIF FOUND AND v_bad.have IS NULL THEN
        RAISE EXCEPTION 'the simpg guard on %.% reads % column %, which is gone (renamed or dropped)',
            v_guarded, quote_ident(v_col), v_bad.role, quote_ident(v_bad.name)
            USING ERRCODE = 'SPG01',
                  HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)) and create it again on the '
                                'columns as they are named now', v_guarded, v_col);
    ELSIF FOUND THEN
        RAISE EXCEPTION 'the simpg guard on %.% needs % column % to be %, got %',
            v_guarded, quote_ident(v_col), v_bad.role, quote_ident(v_bad.name), v_bad.want, v_bad.have
            USING ERRCODE = 'datatype_mismatch',
                  HINT = format('drop the guard (SELECT simpg.drop_guard(%L, %L)) and create it again',
                                v_guarded, v_col);
    END IF;
    -- field selection and output functions only: no cast, no operator of a column's type
    v_read := format('SELECT ($1).%I, %s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], format(''%%s'', ($1).%I)',
                     v_col, CASE WHEN v_sketch_col IS NULL THEN 'NULL::bit(256)' ELSE format('($1).%I', v_sketch_col) END,
                     (SELECT string_agg(format('($1).%I', c), ', ' ORDER BY n)
                      FROM unnest(v_band_columns) WITH ORDINALITY AS u(c, n)),
                     (SELECT string_agg(format('($1).%I', c), ', ' ORDER BY n)
                      FROM unnest(v_prefix_columns) WITH ORDINALITY AS u(c, n)),
                     v_key_col);
    EXECUTE v_read INTO v_fp, v_sketch, v_bands, v_prefixes, v_key USING NEW;
    IF v_fp IS NULL THEN
        RETURN NULL;  -- nothing to guard
    END IF;
    IF v_sketch_col IS NOT NULL AND v_sketch IS NULL THEN
        RETURN NULL;  -- no sketch: nothing can confirm a near-duplicate of it
    END IF;
    IF TG_OP = 'UPDATE' THEN  -- built-in types: bigint's and bit's IS DISTINCT FROM
        EXECUTE format('SELECT ($1).%I IS DISTINCT FROM ($2).%I%s', v_col, v_col,
                       (SELECT string_agg(format(' OR ($1).%I IS DISTINCT FROM ($2).%I', c, c), '')
                        FROM unnest(v_sketch_col || v_band_columns) AS c WHERE c IS NOT NULL))
            INTO v_changed USING NEW, OLD;
        IF NOT v_changed THEN
            RETURN NULL;  -- none of the guarded columns changed
        END IF;
    END IF;
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot see concurrent writers at REPEATABLE READ', v_guarded,
            quote_ident(v_col)
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'write at READ COMMITTED or SERIALIZABLE';
    END IF;
    IF row_security_active(v_guarded) THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot check this write by role %: row-level security hides rows of % from it',
            v_guarded, quote_ident(v_col), quote_ident(current_user), v_guarded
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'write as a role that row-level security does not apply to (the table''s owner, or a role '
                         'with BYPASSRLS), or drop the guard: its promise needs every row';
    END IF;
    IF EXISTS (SELECT FROM pg_inherits AS h JOIN pg_class AS c ON c.oid = h.inhparent
               WHERE h.inhparent = v_guarded AND c.relkind <> 'p') THEN
        RAISE EXCEPTION 'the simpg guard on %.% cannot guard a table with inheritance children, whose writes it never sees',
            v_guarded, quote_ident(v_col)
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'use declarative partitioning (PARTITION BY), or drop the guard';
    END IF;
    IF NOT has_any_column_privilege(v_guarded, 'INSERT, UPDATE') THEN  -- a write into a partition
        RAISE EXCEPTION 'the simpg guard on %.% locks for writers of %, and role % may not write it',
            v_guarded, quote_ident(v_col), v_guarded, quote_ident(current_user)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('grant INSERT or UPDATE on %s to the role, or write through it', v_guarded);
    END IF;
    FOR t IN 0 .. cardinality(v_prefix_columns) - 1 LOOP
        v_prefix := v_prefixes[t + 1];
        v_mask := -1::bigint << (64 - v_prefix_bits[t + 1]);  -- as simpg.prefix_lo / prefix_hi
        v_slots := v_slots || (hashint8extended(v_prefix & v_mask, t) & 65535)::integer;
        v_lows := v_lows || (v_prefix & v_mask);
    END LOOP;
    -- a row sharing a band key is a candidate too; its slot is as simpg.guard_lock_keys'
    FOR i IN 1 .. cardinality(v_band_columns) LOOP
        CONTINUE WHEN v_bands[i] IS NULL;
        v_slots := v_slots || (hashint8extended(v_bands[i], 65536 - i) & 65535)::integer;
    END LOOP;
    -- in ascending order, the order of simpg.guard_lock_keys: every writer takes them alike.
    -- A slot's row is made by the first writer that needs it; another inserting it at the
    -- same time waits for that one's end, then finds it.
    v_slots := ARRAY(SELECT DISTINCT s FROM unnest(v_slots) AS s ORDER BY s);
    INSERT INTO simpg.guard_locks (guarded_table, slot)
    SELECT v_guarded, s FROM unnest(v_slots) AS s ORDER BY s
    ON CONFLICT DO NOTHING;
    PERFORM FROM simpg.guard_locks AS l WHERE l.guarded_table = v_guarded AND l.slot = ANY (v_slots)
    ORDER BY l.slot FOR UPDATE;
    GET DIAGNOSTICS v_locked = ROW_COUNT;
    IF v_locked <> cardinality(v_slots) THEN  -- a row deleted by the table's owner meanwhile
        RAISE EXCEPTION 'the simpg guard on %.% locked % of its % rows of simpg.guard_locks', v_guarded,
            quote_ident(v_col), v_locked, cardinality(v_slots)
            USING ERRCODE = 'serialization_failure', HINT = 'retry the transaction';
    END IF;
    -- a new statement after the locks: at READ COMMITTED, a new snapshot. The look is the
    -- guarded table's, all its partitions included; its condition is every lookup's
    -- (simpg.lookup_where), with the ranges of the new row's stored prefixes. A band key
    -- that is NULL matches nothing.
    EXECUTE format('SELECT format(''%%s'', t.%I) AS key, simpg.hamming(t.%I, $1) AS distance FROM %s AS t '
                   'WHERE %s AND format(''%%s'', t.%I) IS DISTINCT FROM $3 '
                   'ORDER BY 2, 1 LIMIT 1',
                   v_key_col, v_col, v_guarded,
                   simpg.lookup_where(v_col, v_prefix_columns, '$1', '$2', lows => '$6', prefix_bits => v_prefix_bits,
                                      sketch_column => v_sketch_col,
                                      sketch => CASE WHEN v_sketch_col IS NOT NULL THEN '$4' END,
                                      max_sketch => CASE WHEN v_sketch_col IS NOT NULL THEN '$5' END,
                                      band_columns => v_band_columns, band_keys => '$7'),
                   v_key_col)
        INTO v_hit USING v_fp, v_k, v_key, v_sketch, v_max_sketch, v_lows, v_bands;
    IF v_hit.key IS NOT NULL THEN
        RAISE EXCEPTION 'near-duplicate row in %: its % is within % bits of a stored row''s%', v_guarded,
            quote_ident(v_col), v_k,
            CASE WHEN v_sketch_col IS NULL THEN ''
                 ELSE format('%s, and its %s within %s bits',
                             CASE WHEN v_band_columns <> '{}' THEN ' or shares a band key with it' ELSE '' END,
                             quote_ident(v_sketch_col), v_max_sketch) END
            USING ERRCODE = 'exclusion_violation',
                  CONSTRAINT = TG_NAME,
                  DETAIL = format('Key (%s)=(%s) is within %s bits of the new row, key (%s)=(%s).',
                                  v_key_col, v_hit.key, v_hit.distance, v_key_col, v_key),
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
-- Refused on a partition (guard its partitioned table, whose trigger PostgreSQL copies to
-- every partition) and when row-level security applies to the caller (its pair count, as
-- every guarded write's look, must see every row).
--
-- With sketch_column (bit(256), simpg.fingerprint.sketch), two rows count only when their
-- sketches also differ in at most max_sketch_distance bits (default simpg.max_sketch_distance(), the
-- MAX_SKETCH_DISTANCE of SimHashColumn.duplicates); with bands (by default whenever a
-- sketch confirms: simpg.with_bands), rows sharing a band key (bigint columns
-- <sketch_column>_b0 .. _b3, simpg.fingerprint.sketch_and_bands) and confirmed so count
-- too, however far their fingerprints: the decision simpg dedup makes.
CREATE FUNCTION simpg.create_guard(rel regclass, col name DEFAULT NULL, k integer DEFAULT NULL,
                                   key_column name DEFAULT NULL, sketch_column name DEFAULT NULL,
                                   max_sketch_distance integer DEFAULT NULL, bands boolean DEFAULT NULL)
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
    v_root regclass;
BEGIN
    -- a partition's writes are its partitioned table's: guard that, which sees them all
    SELECT a.relid INTO v_root FROM pg_partition_ancestors(rel) AS a
    WHERE NOT (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = a.relid);
    IF v_root IS NOT NULL AND v_root <> rel THEN
        RAISE EXCEPTION 'table % is a partition of %: create the simpg guard on %', rel, v_root, v_root
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'a guard on a partitioned table guards every partition, and looks in all of them';
    END IF;
    -- the pair count below, and every write's look, must see every row
    IF row_security_active(rel) THEN
        RAISE EXCEPTION 'cannot create a simpg guard on % as role %: row-level security hides rows of it from the role',
            rel, quote_ident(current_user)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'a guard promises that no two rows of the whole table are near; create it as a role that '
                         'row-level security does not apply to (the table''s owner without FORCE ROW LEVEL SECURITY)';
    END IF;
    PERFORM simpg.check_radius(v_k, v_row.k,
                               format('the simpg index on %s.%s', rel, quote_ident(v_row.fingerprint_column)));
    IF sketch_column IS NULL AND (max_sketch_distance IS NOT NULL OR bands) THEN
        RAISE EXCEPTION 'a guard on %.% takes %, got %, only with a sketch_column to confirm by', rel,
            quote_ident(v_row.fingerprint_column),
            CASE WHEN bands THEN 'bands' ELSE 'max_sketch_distance' END,
            CASE WHEN bands THEN 'true' ELSE max_sketch_distance::text END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sketch_column IS NOT NULL THEN
        v_max_sketch := simpg.check_max_sketch_distance(coalesce(max_sketch_distance, simpg.max_sketch_distance()));
        IF simpg.with_bands(sketch_column, bands) THEN  -- the names simpg.psycopg._common.band_columns gives
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
                     v_max_sketch, v_band_columns <> '{}');
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
                                                 sketch_column, v_max_sketch, v_band_columns <> '{}') END);
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
    v_layout simpg.indexes;
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
        -- jsonb_populate_record makes each value with its type's input function (no cast),
        -- as the INSERT's own literals would; the key is printed by its output function
        -- built-in: input functions only, and what any INSERT into rel runs (its triggers, defaults)
        EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_record(NULL::%s, $1) '
                       'RETURNING format(''%%s'', %I)',
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
    v_layout := simpg.checked_layout(rel, v_guard.k, v_guard.fingerprint_column);
    EXECUTE format('SELECT format(''%%s'', t.%I), simpg.hamming(t.%I, $1) FROM %s AS t WHERE %s ORDER BY 2, 1 LIMIT 1',
                   v_guard.key_column, v_guard.fingerprint_column, rel,
                   simpg.lookup_where(v_guard.fingerprint_column, v_layout.prefix_columns, '$1', '$2', v_layout.k,
                                      v_layout.levels, sketch_column => v_guard.sketch_column,
                                      sketch => CASE WHEN v_guard.sketch_column IS NOT NULL THEN '$3' END,
                                      max_sketch => CASE WHEN v_guard.sketch_column IS NOT NULL THEN '$4' END,
                                      band_columns => coalesce(v_guard.band_columns, '{}'), band_keys => '$5'))
        INTO key, distance
        USING (new_row ->> v_guard.fingerprint_column)::bigint, v_guard.k, (new_row ->> v_guard.sketch_column)::bit(256),
              v_guard.max_sketch_distance,
              ARRAY(SELECT (new_row ->> c)::bigint FROM unnest(v_guard.band_columns) WITH ORDINALITY AS u(c, n) ORDER BY n);
    inserted := false;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION simpg.insert_or_get(regclass, jsonb, name) IS
    'Insert a row into a guarded table, or return the stored row within k it would duplicate: (inserted, key, distance)';
