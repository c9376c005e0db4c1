-- range shard functions
--
-- The range distribution of a sharded index (Google's design, seeds 001/003): for each
-- permuted table t of the layout the coordinator holds a table <table>_<col>_r<t>
-- (p bigint, key bigint, fp bigint), p = simpg.permute(fp, k, levels, t), PARTITION BY
-- RANGE (p), whose partitions are postgres_fdw foreign tables, one per shard, over equal
-- ranges of the signed 64-bit value. The bits that choose a shard are the top bits of
-- p, which are always inside table t's prefix, so the rows sharing a lookup's prefix lie
-- in one shard: a lookup reads exactly one partition per permuted table, whatever the
-- number of shards (the hash distribution of 75_shards.sql asks every shard).
--
-- The user's base table (ordinary or partitioned, on the coordinator) keeps its rows;
-- statement-level AFTER triggers with transition tables keep the T permuted tables in
-- step (one INSERT ... SELECT per permuted table per statement, which postgres_fdw
-- sends in batches of batch_size rows). The triggers are also the registry: their
-- arguments (fingerprint column, key column, k, levels, schema and name stem of the
-- permuted tables) are the layout, read by simpg.range_layout. Like simpg.indexes,
-- nothing is stored in a table of simpg's: the registry goes with the base table.
--
-- As for hash shards, postgres_fdw runs no DDL on a shard: simpg.range_shard_ddl writes
-- the shard's tables and B-trees and a client runs them there (simpg shard create
-- --distribution range does).

-- trigger_args: a trigger's arguments (pg_trigger.tgargs, each ended by a zero byte).
CREATE FUNCTION simpg.trigger_args(args bytea) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_out text[] := '{}';
    v_start integer := 0;
BEGIN
    FOR i IN 0 .. length(args) - 1 LOOP
        IF get_byte(args, i) = 0 THEN
            v_out := v_out || convert_from(substring(args FROM v_start + 1 FOR i - v_start), getdatabaseencoding());
            v_start := i + 1;
        END IF;
    END LOOP;
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION simpg.trigger_args(bytea) IS
    'Internal: the arguments of a trigger (pg_trigger.tgargs) as text';

-- range_shard_bounds: the shard ranges of the permuted values for shards shards: shard
-- i (from 0) holds lo <= p < hi, lo NULL for the first (MINVALUE) and hi NULL for the
-- last (MAXVALUE). The cuts are equal splits of the signed range, rounded to a multiple
-- of 2^(64 - b), b the layout's smallest prefix: every prefix range (the values that
-- share b or more leading bits) then lies in one shard. With a power of two the ranges
-- are exactly equal.
-- Contract: 1 <= shards <= 2^b, else raises naming both.
CREATE FUNCTION simpg.range_shard_bounds(k integer, levels integer[], shards integer)
    RETURNS TABLE (shard_number integer, lo bigint, hi bigint)
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_bits integer;
    v_cuts bigint[] := '{}';
BEGIN
    IF k IS NULL OR levels IS NULL OR shards IS NULL THEN
        RAISE EXCEPTION 'k, levels and shards must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT min(simpg.prefix_bits(k, levels, t)) INTO v_bits
    FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t;
    IF shards < 1 OR shards::numeric > 2::numeric ^ v_bits THEN
        RAISE EXCEPTION 'shards=% is too many for layout k=% blocks=%: log2(shards) must be at most its smallest prefix, % bits (at most % shards)',
            shards, k, array_to_string(levels, 'x'), v_bits, least(2::numeric ^ v_bits, 2147483647)::bigint
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'use fewer shards, or a layout with longer prefixes (fewer blocks)';
    END IF;
    FOR i IN 1 .. shards - 1 LOOP
        v_cuts := v_cuts || (-(2::numeric ^ 63)
                             + floor(i * 2::numeric ^ v_bits / shards) * 2::numeric ^ (64 - v_bits))::bigint;
    END LOOP;
    FOR i IN 0 .. shards - 1 LOOP
        shard_number := i;
        lo := CASE WHEN i > 0 THEN v_cuts[i] END;
        hi := CASE WHEN i < shards - 1 THEN v_cuts[i + 1] END;
        RETURN NEXT;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.range_shard_bounds(integer, integer[], integer) IS
    'Range distribution: the range of permuted values each of shards shards holds (lo inclusive, hi exclusive, NULL unbounded)';

-- range_layout: the range distribution registered on rel (the arguments of its
-- INSERT trigger), with its permuted tables in table order (NULL where one is missing).
-- Contract: raises unless rel has range shards on col (or exactly one column, when col
-- is NULL). Needs no rights on rel beyond reading the catalogs.
CREATE FUNCTION simpg.range_layout(rel regclass, col name DEFAULT NULL,
                                   OUT fingerprint_column name, OUT key_column name, OUT k integer,
                                   OUT levels integer[], OUT tables regclass[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_args text[];
    v_found integer;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT count(*) INTO v_found
    FROM pg_trigger AS g
    WHERE g.tgrelid = rel AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
      AND g.tgtype & 4 <> 0  -- the INSERT trigger
      AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member'  -- a partition's is not a registry
      AND (col IS NULL OR (simpg.trigger_args(g.tgargs))[1] = col);
    IF v_found = 0 THEN
        RAISE EXCEPTION 'table % has no range shards%', rel, coalesce(' on column ' || quote_ident(col), '')
            USING ERRCODE = 'undefined_object',
                  HINT = 'set them up with simpg.create_range_index (simpg shard create --distribution range)';
    ELSIF v_found > 1 THEN
        RAISE EXCEPTION 'table % has range shards on several columns; name one as col', rel
            USING ERRCODE = 'ambiguous_parameter';
    END IF;
    SELECT simpg.trigger_args(g.tgargs) INTO v_args
    FROM pg_trigger AS g
    WHERE g.tgrelid = rel AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
      AND g.tgtype & 4 <> 0 AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member'
      AND (col IS NULL OR (simpg.trigger_args(g.tgargs))[1] = col);
    fingerprint_column := v_args[1];
    key_column := v_args[2];
    k := v_args[3]::integer;
    levels := v_args[4]::integer[];
    SELECT array_agg(to_regclass(format('%I.%I', v_args[5], simpg.object_name(v_args[6], t::text))) ORDER BY t)
    INTO tables
    FROM generate_series(0, simpg.table_count(k, levels) - 1) AS t;
END
$$;

COMMENT ON FUNCTION simpg.range_layout(regclass, name) IS
    'The range shards of a table: fingerprint and key columns, layout, and its permuted tables in table order';

-- complete_range_layout: range_layout, for what needs every permuted table: raises when
-- one of them is gone from the coordinator.
CREATE FUNCTION simpg.complete_range_layout(rel regclass, col name DEFAULT NULL,
                                            OUT fingerprint_column name, OUT key_column name, OUT k integer,
                                            OUT levels integer[], OUT tables regclass[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT * INTO fingerprint_column, key_column, k, levels, tables FROM simpg.range_layout(rel, col);
    IF array_position(tables, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'table % lacks some of its permuted tables on the coordinator', rel
            USING ERRCODE = 'undefined_table', HINT = 'simpg.drop_range_index, then simpg.create_range_index';
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.complete_range_layout(regclass, name) IS
    'Internal: simpg.range_layout, raising when a permuted table is missing';

-- range_radius: the radius a range lookup on rel uses: k, or the layout's radius when
-- k is NULL. Contract: raises for k negative or above the layout's radius.
CREATE FUNCTION simpg.range_radius(rel regclass, fingerprint_column name, radius integer, k integer)
    RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_k integer := coalesce(k, radius);
BEGIN
    -- it runs at every lookup: the message (rel's name read from the catalog) is
    -- written only when radius_error finds a fault, the check itself is check_radius's
    IF simpg.radius_error(v_k, radius, '') IS NULL THEN
        RETURN v_k;
    END IF;
    RETURN simpg.check_radius(v_k, radius, format('the range shards of %s.%s', rel, quote_ident(fingerprint_column)));
END
$$;

COMMENT ON FUNCTION simpg.range_radius(regclass, name, integer, integer) IS
    'Internal: the radius of a range lookup, k or the layout''s; raises if k is negative or above the layout''s';

-- range_members: every table below rel (its partitions at every level, or inheritance
-- children), by name. Their rows are rel's rows, but a statement on one of them fires
-- no statement trigger of rel's, and attaching, detaching or dropping one fires none.
CREATE FUNCTION simpg.range_members(rel regclass) RETURNS regclass[]
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE down AS (
        SELECT h.inhrelid FROM pg_inherits AS h WHERE h.inhparent = rel
        UNION ALL
        SELECT h.inhrelid FROM pg_inherits AS h JOIN down AS d ON h.inhparent = d.inhrelid)
    SELECT coalesce(array_agg(d.inhrelid::regclass ORDER BY d.inhrelid::regclass::text), '{}') FROM down AS d
$$;

COMMENT ON FUNCTION simpg.range_members(regclass) IS
    'Internal: the partitions (at every level) or inheritance children of a table';

-- range_members_record: what rel's triggers record of its members (the 7th argument of
-- its range triggers): md5 of their names. Names, not oids, so that a dump restores it.
CREATE FUNCTION simpg.range_members_record(rel regclass) RETURNS text
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    RETURN md5(array_to_string(simpg.range_members(rel)::text[], ','));

COMMENT ON FUNCTION simpg.range_members_record(regclass) IS
    'Internal: the record of a table''s partitions that its range triggers keep (md5 of their names)';

-- range_out_of_step: why the permuted tables of rel.col may not hold exactly rel's
-- rows, NULL when they do as far as the catalogs tell. The writes that fire no trigger
-- of rel's are caught here: rel made a partition or child of another table (writes
-- through that one), a partition created, attached, detached or dropped since the
-- triggers were installed (the record of simpg.range_members_record), or a partition
-- (or rel) without its four enabled range triggers. Reads the catalogs only.
CREATE FUNCTION simpg.range_out_of_step(rel regclass, col name) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parent regclass;
    v_col text := encode(convert_to(col, getdatabaseencoding()), 'escape') || '\000';  -- col as the first argument
    v_args text;
    v_layout text;
    v_members regclass[];
    v_triggers bigint;
BEGIN
    SELECT h.inhparent::regclass INTO v_parent FROM pg_inherits AS h WHERE h.inhrelid = rel LIMIT 1;
    IF FOUND THEN
        RETURN format('%s is now a partition or child of %s: writes through %s do not reach its range shards',
                      rel, v_parent, v_parent);
    END IF;
    -- the arguments as escaped text (a zero byte shows as \000): cheaper than
    -- simpg.trigger_args at every lookup. The registry: rel's INSERT trigger on col.
    SELECT encode(g.tgargs, 'escape') INTO v_args
    FROM pg_trigger AS g
    WHERE g.tgrelid = rel AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure AND g.tgtype & 4 <> 0
      AND left(encode(g.tgargs, 'escape'), length(v_col)) = v_col
      AND split_part(encode(g.tgargs, 'escape'), '\000', 7) <> 'member';
    v_layout := array_to_string((string_to_array(v_args, '\000'))[1:6], '\000') || '\000';
    v_members := simpg.range_members(rel);
    IF coalesce(nullif(split_part(v_args, '\000', 7), ''), md5('')) <> md5(array_to_string(v_members::text[], ',')) THEN
        RETURN format('the partitions of %s changed since its range triggers were installed (a partition created, attached, detached or dropped, or a child table): their rows are not known to be in the range shards',
                      rel);
    END IF;
    -- four enabled triggers (insert, update, delete, truncate) naming the permuted tables
    -- on rel and on each partition
    SELECT count(*) INTO v_triggers FROM pg_trigger AS g
    WHERE g.tgrelid = ANY (rel || v_members) AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
      AND g.tgenabled <> 'D' AND left(encode(g.tgargs, 'escape'), length(v_layout)) = v_layout;
    IF v_triggers <> 4 * (1 + cardinality(v_members)) THEN
        RETURN format('%s or one of its partitions lacks some of its enabled range triggers: writes there may not have reached the range shards',
                      rel);
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.range_out_of_step(regclass, name) IS
    'Internal: why a table''s range shards may not hold its rows (partitions changed, triggers missing); NULL when in step';

-- range_in_step: raise unless simpg.range_out_of_step finds nothing; true. Every lookup
-- of the range distribution runs it first: a lookup never answers from permuted tables
-- that may have missed writes.
CREATE FUNCTION simpg.range_in_step(rel regclass, col name) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_problem text := simpg.range_out_of_step(rel, col);
BEGIN
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'range shards of %.% are not in step with it: %', rel, quote_ident(col), v_problem
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('SELECT simpg.range_fill(%L) refills the shards and installs the triggers on every partition',
                                rel::text);
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION simpg.range_in_step(regclass, name) IS
    'Internal: raise unless a table''s range shards are known to hold exactly its rows (run before each range lookup)';

-- range_shards_write: the trigger that keeps the permuted tables in step with the rel
-- table, one statement per permuted table per statement on the base table. Arguments:
-- fingerprint column, key column, k, levels, schema and name stem of the permuted
-- tables, and on rel the record of its partitions (simpg.range_members_record), on a
-- partition 'member'. Each partition carries the same triggers as rel: a statement on
-- the partition fires only its own, a statement on rel only rel's, so every write is
-- counted once. Rows whose key and fingerprint did not change are left alone; NULL
-- fingerprints are not stored. Old entries are deleted by key among the partitions
-- their permuted values are in (plan-time pruning on constant arrays), in chunks of
-- 10,000 rows; new ones are inserted by INSERT ... SELECT, which postgres_fdw batches.
-- TRUNCATE (BEFORE) of rel truncates the permuted tables (postgres_fdw truncates the
-- shards' tables); of a partition, deletes its own rows' entries (TRUNCATE of rel fires
-- rel's first, then its partitions', which find the permuted tables empty).
-- A partition's trigger raises once the table is no longer under the base table whose
-- triggers name the same permuted tables (detached: its rows are not rel's any more),
-- and every trigger raises if the key or fingerprint column changed type (its values
-- would go through a cast that is not the built-in one).
-- Runs with the rights of the role that writes the base table: it needs INSERT and
-- DELETE (TRUNCATE) on the permuted tables and a user mapping for every shard.
CREATE FUNCTION simpg.range_shards_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_col name := TG_ARGV[0];
    v_key name := TG_ARGV[1];
    v_k integer := TG_ARGV[2]::integer;
    v_levels integer[] := TG_ARGV[3]::integer[];
    v_member boolean := TG_NARGS > 6 AND TG_ARGV[6] = 'member';
    v_tables text[];
    v_old text;
    v_new text;
    v_chunk record;
    v_p bigint[];
    v_types regtype[];
    v_any boolean;
BEGIN
    SELECT array_agg(a.atttypid::regtype ORDER BY a.attname = v_key) INTO v_types
    FROM pg_attribute AS a
    WHERE a.attrelid = TG_RELID AND a.attname IN (v_col, v_key) AND a.attnum > 0 AND NOT a.attisdropped;
    IF v_types IS DISTINCT FROM ARRAY['bigint'::regtype, v_types[2]]
       OR v_types[2] NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'range shards of %: column % must be bigint and key column % smallint, integer or bigint, found %',
            TG_RELID::regclass, quote_ident(v_col), quote_ident(v_key), coalesce(v_types::text, 'none')
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'simpg.drop_range_index, then simpg.create_range_index with the new types';
    END IF;
    IF v_member AND NOT EXISTS (
        WITH RECURSIVE up AS (
            SELECT h.inhparent FROM pg_inherits AS h WHERE h.inhrelid = TG_RELID
            UNION ALL
            SELECT h.inhparent FROM pg_inherits AS h JOIN up AS u ON h.inhrelid = u.inhparent)
        SELECT FROM up JOIN pg_trigger AS g ON g.tgrelid = up.inhparent
        WHERE g.tgfoid = 'simpg.range_shards_write()'::regprocedure AND g.tgname = TG_NAME
          AND (simpg.trigger_args(g.tgargs))[1:6] = TG_ARGV[0:5]
          AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member') THEN
        RAISE EXCEPTION 'table % is no longer a partition of the table whose range shards its trigger % writes', TG_RELID::regclass, TG_NAME
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('DROP TRIGGER %I ON %s (simpg.range_fill of the base table drops it too)', TG_NAME, TG_RELID::regclass);
    END IF;
    SELECT array_agg(format('%I.%I', TG_ARGV[4], simpg.object_name(TG_ARGV[5], t::text)) ORDER BY t) INTO v_tables
    FROM generate_series(0, simpg.table_count(v_k, v_levels) - 1) AS t;
    IF TG_OP = 'TRUNCATE' AND NOT v_member THEN
        EXECUTE 'TRUNCATE ' || array_to_string(v_tables, ', ');
        RETURN NULL;
    END IF;
    -- the (key, fingerprint) entries that go away and those that come
    IF TG_OP = 'TRUNCATE' THEN  -- a partition's own rows, still there (BEFORE TRUNCATE)
        -- built-in: these casts are of a smallint, integer or bigint key (checked above)
        v_old := format('SELECT o.%1$I::bigint AS key, o.%2$I AS fp FROM ONLY %3$s AS o WHERE o.%2$I IS NOT NULL',
                        v_key, v_col, TG_RELID::regclass);
    ELSE
        -- built-in: as above
        v_old := format('SELECT o.%1$I::bigint AS key, o.%2$I AS fp FROM simpg_old AS o WHERE o.%2$I IS NOT NULL', v_key, v_col);
    END IF;
    -- built-in: as above
    v_new := format('SELECT n.%1$I::bigint AS key, n.%2$I AS fp FROM simpg_new AS n WHERE n.%2$I IS NOT NULL', v_key, v_col);
    IF TG_OP = 'UPDATE' THEN  -- rows whose key and fingerprint stay are left alone
        SELECT format('(%s) EXCEPT (%s)', v_old, v_new), format('(%s) EXCEPT (%s)', v_new, v_old) INTO v_old, v_new;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        -- nothing to delete when rel's own TRUNCATE emptied the permuted tables just before
        EXECUTE format('SELECT EXISTS (SELECT FROM %s)', v_tables[1]) INTO v_any;
        IF NOT v_any THEN
            RETURN NULL;
        END IF;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE', 'TRUNCATE') THEN
        FOR v_chunk IN EXECUTE format('SELECT array_agg(c.key) AS keys, array_agg(c.fp) AS fps FROM '
                                      '(SELECT e.key, e.fp, (row_number() OVER () - 1) / 10000 AS g FROM (%s) AS e) AS c '
                                      'GROUP BY c.g', v_old) LOOP
            FOR t IN 0 .. cardinality(v_tables) - 1 LOOP
                -- constants in the text: permute folds to shifts and masks
                EXECUTE format('SELECT array_agg(simpg.permute(f, %s, %L::integer[], %s)) FROM unnest($1) AS f',
                               v_k, v_levels, t) INTO v_p USING v_chunk.fps;
                -- EXECUTE's parameters are constants to the planner: only the shards that
                -- hold one of the values are asked, each with one DELETE
                EXECUTE format('DELETE FROM %s AS r WHERE r.p = ANY ($1) AND r.key = ANY ($2)', v_tables[t + 1])
                    USING v_p, v_chunk.keys;
            END LOOP;
        END LOOP;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        FOR t IN 0 .. cardinality(v_tables) - 1 LOOP
            EXECUTE format('INSERT INTO %s (p, key, fp) SELECT simpg.permute(e.fp, %s, %L::integer[], %s), e.key, e.fp '
                           'FROM (%s) AS e', v_tables[t + 1], v_k, v_levels, t, v_new);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION simpg.range_shards_write() IS
    'Trigger of the range distribution: keeps the permuted tables of a base table in step with its inserts, updates, deletes and truncates';

-- range_install_triggers: (re)install the range triggers of rel for the layout args
-- (fingerprint column, key column, k, levels, schema and stem of the permuted tables):
-- drops every range trigger that names those permuted tables on rel and on the tables
-- the caller owns (former partitions too), then creates rel's (with the record of its
-- partitions) and the same on each partition. Contract: the caller owns rel and its
-- partitions; the caller keeps the permuted tables in step (create_range_index on an
-- empty registry, range_fill by refilling them under a lock).
CREATE FUNCTION simpg.range_install_triggers(rel regclass, args text[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_old record;
    v_rel regclass;
    v_args text;
    v_name name;
BEGIN
    FOR v_old IN SELECT g.tgrelid::regclass AS rel, g.tgname FROM pg_trigger AS g
                 WHERE g.tgfoid = 'simpg.range_shards_write()'::regprocedure
                   AND (simpg.trigger_args(g.tgargs))[1:6] = args[1:6]
                   AND (g.tgrelid = rel OR simpg.owns(g.tgrelid)) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', v_old.tgname, v_old.rel);
    END LOOP;
    FOREACH v_rel IN ARRAY rel || simpg.range_members(rel) LOOP
        v_args := (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args[1:6]) AS a)
                  || ', ' || quote_literal(CASE WHEN v_rel = rel THEN simpg.range_members_record(rel) ELSE 'member' END);
        v_name := 'simpg_range_' || args[1];
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS simpg_new '
                       'FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_insert'), v_rel, v_args);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS simpg_old NEW TABLE AS simpg_new '
                       'FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_update'), v_rel, v_args);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS simpg_old '
                       'FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_delete'), v_rel, v_args);
        -- BEFORE: a partition's trigger reads the rows that go
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION simpg.range_shards_write(%s)',
                       simpg.object_name(v_name, '_truncate'), v_rel, v_args);
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.range_install_triggers(regclass, text[]) IS
    'Internal: (re)install the range triggers on a base table and every partition of it, with the record of its partitions';

-- create_range_index: register the range distribution of rel.col on the coordinator:
-- the permuted tables <table>_<col>_r<t> (p bigint, key bigint, fp bigint) PARTITION BY
-- RANGE (p), in rel's schema, and the triggers that keep them in step (which are the
-- registry). The tables have no partitions yet: simpg.attach_range_shard makes them, and
-- until every shard is attached a write of the base table fails (no partition for the
-- row) rather than lose a row; simpg.range_fill then copies the rows already there.
-- Contract: rel is owned by the caller; col is bigint; key_column (default: rel's
-- single-column primary key) is smallint, integer or bigint, not null and unique;
-- (k, blocks, inner_blocks) is a valid layout, blocks NULL meaning
-- simpg.default_levels(k, rows of rel). Returns the permuted tables in table order.
CREATE FUNCTION simpg.create_range_index(rel regclass, col name, k integer DEFAULT 3, blocks integer DEFAULT NULL,
                                         inner_blocks integer DEFAULT NULL, key_column name DEFAULT NULL)
    RETURNS regclass[]
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_schema name;
    v_name name;
    v_key record;
    v_type regtype;
    v_levels integer[];
    v_stem text;
    v_tables regclass[] := '{}';
    v_table name;
BEGIN
    IF rel IS NULL OR col IS NULL OR k IS NULL THEN
        RAISE EXCEPTION 'table, col and k must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_type := simpg.column_type(rel, col);
    IF v_type <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'column %.% is %, not bigint', rel, quote_ident(col), v_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    SELECT * INTO v_key FROM simpg.report_key(rel, key_column);
    IF v_key.column_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'key column %.% is %; range shards store keys as bigint (smallint, integer or bigint)',
            rel, quote_ident(v_key.column_name), v_key.column_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF EXISTS (SELECT FROM pg_trigger AS g WHERE g.tgrelid = rel
               AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure
               AND (simpg.trigger_args(g.tgargs))[1] = col) THEN
        RAISE EXCEPTION 'table % has range shards on column % already', rel, quote_ident(col)
            USING ERRCODE = 'duplicate_object';
    END IF;
    IF blocks IS NULL THEN
        IF inner_blocks IS NOT NULL THEN
            RAISE EXCEPTION 'inner_blocks needs blocks' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        EXECUTE format('SELECT simpg.default_levels(%s, (SELECT count(*) FROM %s))', k, rel) INTO v_levels;
    ELSE
        v_levels := CASE WHEN inner_blocks IS NULL THEN ARRAY[blocks] ELSE ARRAY[blocks, inner_blocks] END;
    END IF;
    PERFORM simpg.table_count(k, v_levels);  -- raises naming an invalid layout
    SELECT n.nspname, c.relname INTO v_schema, v_name
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = rel;
    v_stem := v_name || '_' || col || '_r';
    FOR t IN 0 .. simpg.table_count(k, v_levels) - 1 LOOP
        v_table := simpg.object_name(v_stem, t::text);
        EXECUTE format('CREATE TABLE %I.%I (p bigint NOT NULL, key bigint NOT NULL, fp bigint NOT NULL) '
                       'PARTITION BY RANGE (p)', v_schema, v_table);
        v_tables := v_tables || format('%I.%I', v_schema, v_table)::regclass;
    END LOOP;
    -- the partitions carry the triggers too: a statement on one fires none of rel's
    PERFORM simpg.range_install_triggers(rel, ARRAY[col, v_key.column_name, k::text, v_levels::text, v_schema, v_stem]);
    RETURN v_tables;
END
$$;

COMMENT ON FUNCTION simpg.create_range_index(regclass, name, integer, integer, integer, name) IS
    'Range distribution: the permuted tables of a base table (PARTITION BY RANGE of the permuted value) and the triggers that keep them in step';

-- range_registry: the arguments of rel's range INSERT trigger on column col (the
-- registry: fingerprint column, key column, k, levels, schema and stem of the permuted
-- tables, record of the partitions). Contract: rel has range shards on col.
CREATE FUNCTION simpg.range_registry(rel regclass, col name) RETURNS text[]
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    RETURN (SELECT simpg.trigger_args(g.tgargs) FROM pg_catalog.pg_trigger AS g
            WHERE g.tgrelid = rel AND g.tgfoid = 'simpg.range_shards_write()'::pg_catalog.regprocedure
              AND g.tgtype OPERATOR(pg_catalog.&) 4 OPERATOR(pg_catalog.<>) 0
              AND (simpg.trigger_args(g.tgargs))[1] OPERATOR(pg_catalog.=) col
              AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member');

COMMENT ON FUNCTION simpg.range_registry(regclass, name) IS
    'Internal: the arguments of a table''s range INSERT trigger (its range layout and the record of its partitions)';

-- drop_range_index: remove what create_range_index made (the triggers and the permuted
-- tables with their foreign partitions; the shards' tables stay).
CREATE FUNCTION simpg.drop_range_index(rel regclass, col name DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_trigger record;
    v_args text[];
BEGIN
    SELECT * INTO v_layout FROM simpg.range_layout(rel, col);
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_args := simpg.range_registry(rel, v_layout.fingerprint_column);
    -- rel's and its partitions' (and former partitions' the caller owns)
    FOR v_trigger IN SELECT g.tgrelid::regclass AS rel, g.tgname FROM pg_trigger AS g
                     WHERE g.tgfoid = 'simpg.range_shards_write()'::regprocedure
                       AND (simpg.trigger_args(g.tgargs))[1:6] = v_args[1:6]
                       AND (g.tgrelid = rel OR simpg.owns(g.tgrelid)) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', v_trigger.tgname, v_trigger.rel);
    END LOOP;
    FOR i IN 1 .. cardinality(v_layout.tables) LOOP
        IF v_layout.tables[i] IS NOT NULL THEN
            EXECUTE format('DROP TABLE %s', v_layout.tables[i]);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.drop_range_index(regclass, name) IS
    'Range distribution: drop the triggers and the coordinator''s permuted tables (the shards keep theirs)';

-- range_shard_ddl: the statements that make a shard's tables for the range distribution
-- of rel, to run on each shard: CREATE TABLE for every permuted table, then its covering
-- B-tree (p) INCLUDE (key, fp), which answers a lookup from the index alone. For a bulk
-- load run the CREATE TABLEs, COPY, then the CREATE INDEXes. IF NOT EXISTS: running
-- them again after a failure resumes (simpg.attach_range_shard checks what is there).
CREATE FUNCTION simpg.range_shard_ddl(rel regclass, col name DEFAULT NULL, remote_schema name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_names text[];
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(rel, col);
    SELECT array_agg(format('%I.%I', coalesce(remote_schema, n.nspname), c.relname) ORDER BY u.t)
    INTO v_names
    FROM unnest(v_layout.tables) WITH ORDINALITY AS u(permuted, t)
    JOIN pg_class AS c ON c.oid = u.permuted JOIN pg_namespace AS n ON n.oid = c.relnamespace;
    RETURN QUERY SELECT format('CREATE TABLE IF NOT EXISTS %s (p bigint NOT NULL, key bigint NOT NULL, fp bigint NOT NULL)', v)
                 FROM unnest(v_names) AS v;
    RETURN QUERY SELECT format('CREATE INDEX IF NOT EXISTS %I ON %s (p) INCLUDE (key, fp) WITH (fillfactor = 100)',
                               simpg.object_name(c.relname, '_p_idx'), v)
                 FROM unnest(v_names, v_layout.tables) WITH ORDINALITY AS u(v, permuted, t) JOIN pg_class AS c ON c.oid = u.permuted
                 ORDER BY u.t;
END
$$;

COMMENT ON FUNCTION simpg.range_shard_ddl(regclass, name, name) IS
    'Range distribution: the statements to run on a shard server, its permuted tables and their covering B-trees';

-- remote_range_problems: what is wrong with a shard's permuted table
-- remote_schema.remote_table on server, read through postgres_fdw (temporary foreign
-- tables, dropped before returning): those of simpg.shard_server_problem (the server is
-- then not used at all), 'unreachable', 'table missing', 'missing b-tree'
-- (no B-tree on (p) including key and fp: exact but reads the whole table), 'error'.
CREATE FUNCTION simpg.remote_range_problems(server name, remote_schema name, remote_table name)
    RETURNS TABLE (problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_detail text;
BEGIN
    -- nothing goes through a server or user mapping that is not the caller's own
    SELECT * INTO problem, detail FROM simpg.shard_server_problem(server);
    IF problem IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    BEGIN
        IF to_regclass('pg_temp.simpg_remote_range') IS NOT NULL THEN
            DROP FOREIGN TABLE pg_temp.simpg_remote_range;
        END IF;
        IF to_regclass('pg_temp.simpg_remote_btrees') IS NOT NULL THEN
            DROP FOREIGN TABLE pg_temp.simpg_remote_btrees;
        END IF;
        EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_range (p bigint, key bigint, fp bigint) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)', server, remote_schema, remote_table);
        EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_btrees (schemaname name, tablename name, indexdef text) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)', server, 'pg_catalog', 'pg_indexes');
        PERFORM FROM pg_temp.simpg_remote_range LIMIT 1;  -- the table and its columns are there
        IF NOT EXISTS (SELECT FROM pg_temp.simpg_remote_btrees AS i
                       WHERE i.schemaname = remote_schema AND i.tablename = remote_table
                         AND i.indexdef LIKE '%USING btree (p) INCLUDE (key, fp)%') THEN
            problem := 'missing b-tree';
            detail := format('%I.%I on server %I has no B-tree on (p) INCLUDE (key, fp): lookups read the whole table',
                             remote_schema, remote_table, server);
            RETURN NEXT;
        END IF;
        DROP FOREIGN TABLE pg_temp.simpg_remote_range;
        DROP FOREIGN TABLE pg_temp.simpg_remote_btrees;
    EXCEPTION
        WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception OR connection_failure THEN
            GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
            problem := 'unreachable';
            detail := SQLERRM || coalesce(': ' || nullif(rtrim(v_detail, E'\n'), ''), '');
            RETURN NEXT;
        WHEN undefined_table OR invalid_schema_name OR undefined_column THEN
            problem := 'table missing';
            detail := format('server %I has no table %I.%I (p, key, fp): %s (run the statements of simpg.range_shard_ddl there)',
                             server, remote_schema, remote_table, SQLERRM);
            RETURN NEXT;
        WHEN OTHERS THEN
            problem := 'error';
            detail := format('reading %I.%I on server %I: %s', remote_schema, remote_table, server, SQLERRM);
            RETURN NEXT;
    END;
END
$$;

COMMENT ON FUNCTION simpg.remote_range_problems(name, name, name) IS
    'Internal: problems of a shard''s permuted table of the range distribution, read through postgres_fdw';

-- attach_range_shard: make shard number shard_number (from 0) of shards the foreign
-- partition of every permuted table of rel, over its range of permuted values
-- (simpg.range_shard_bounds), scanned asynchronously, fetched 10,000 rows and inserted
-- 1,000 rows per round trip. Each shard table is read first (simpg.remote_range_problems):
-- any problem raises naming the server, and nothing is created. The partitions are
-- named <permuted table>_<server>; the shard's tables remote_schema (default: the
-- permuted tables' schema) with the permuted tables' names.
CREATE FUNCTION simpg.attach_range_shard(rel regclass, server name, shard_number integer, shards integer,
                                         remote_schema name DEFAULT NULL, col name DEFAULT NULL)
    RETURNS regclass[]
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_bound record;
    v_rel record;
    v_problem record;
    v_out regclass[] := '{}';
BEGIN
    IF server IS NULL OR shard_number IS NULL OR shards IS NULL THEN
        RAISE EXCEPTION 'server, shard_number and shards must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT * INTO v_layout FROM simpg.range_layout(rel, col);
    IF shard_number < 0 OR shard_number >= shards THEN
        RAISE EXCEPTION 'shard_number must be from 0 to shards - 1, got shard_number % and shards %', shard_number, shards
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO v_bound FROM simpg.range_shard_bounds(v_layout.k, v_layout.levels, shards) AS b
    WHERE b.shard_number = attach_range_shard.shard_number;
    FOR v_rel IN SELECT u.t, n.nspname, c.relname FROM unnest(v_layout.tables) WITH ORDINALITY AS u(permuted, t)
                 JOIN pg_class AS c ON c.oid = u.permuted JOIN pg_namespace AS n ON n.oid = c.relnamespace ORDER BY u.t LOOP
        FOR v_problem IN SELECT * FROM simpg.remote_range_problems(server, coalesce(remote_schema, v_rel.nspname),
                                                                   v_rel.relname) LOOP
            RAISE EXCEPTION 'shard % cannot be attached to %: % (%)', quote_ident(server), rel,
                v_problem.problem, v_problem.detail
                USING ERRCODE = CASE WHEN v_problem.problem = 'unreachable' THEN 'sqlclient_unable_to_establish_sqlconnection'
                                     WHEN v_problem.problem IN ('server not owned', 'no user mapping') THEN 'insufficient_privilege'
                                     ELSE 'invalid_object_definition' END,
                      HINT = CASE v_problem.problem
                          WHEN 'unreachable' THEN 'check that the shard is up and the server''s options and user mapping'
                          WHEN 'server not owned' THEN 'create a foreign server of your own, under another name (simpg shard create does)'
                          WHEN 'no user mapping' THEN 'CREATE USER MAPPING FOR CURRENT_USER on the server (simpg shard create does)'
                          ELSE 'run the statements of simpg.range_shard_ddl on the shard first (simpg shard create does)' END;
        END LOOP;
    END LOOP;
    FOR v_rel IN SELECT u.t, n.nspname, c.relname, u.permuted FROM unnest(v_layout.tables) WITH ORDINALITY AS u(permuted, t)
                 JOIN pg_class AS c ON c.oid = u.permuted JOIN pg_namespace AS n ON n.oid = c.relnamespace ORDER BY u.t LOOP
        EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%s) TO (%s) SERVER %I '
                       'OPTIONS (schema_name %L, table_name %L, async_capable %L, fetch_size %L, batch_size %L)',
                       v_rel.nspname, simpg.object_name(v_rel.relname, '_' || server), v_rel.permuted,
                       coalesce(v_bound.lo::text, 'MINVALUE'), coalesce(v_bound.hi::text, 'MAXVALUE'), server,
                       coalesce(remote_schema, v_rel.nspname), v_rel.relname, 'true', '10000', '1000');
        v_out := v_out || format('%I.%I', v_rel.nspname, simpg.object_name(v_rel.relname, '_' || server))::regclass;
    END LOOP;
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION simpg.attach_range_shard(regclass, name, integer, integer, name, name) IS
    'Range distribution: attach a shard server''s permuted tables as foreign range partitions of every permuted table';

-- range_fill: (re)fill the permuted tables from the base table: install the range
-- triggers again on rel and every partition it has now (simpg.range_install_triggers:
-- the fix when its partitions changed), TRUNCATE the permuted tables (on the shards,
-- through postgres_fdw), then one INSERT ... SELECT each, under a SHARE lock on the rel
-- table so that no write slips between. Returns the rows each table got.
-- Contract: the caller owns rel (and its partitions).
CREATE FUNCTION simpg.range_fill(rel regclass, col name DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_key record;
    v_rows bigint;
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(rel, col);
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('LOCK TABLE %s IN SHARE MODE', rel);
    -- the key still unique (no inheritance children) and of a built-in integer type
    SELECT * INTO v_key FROM simpg.report_key(rel, v_layout.key_column);
    IF v_key.column_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype)
       OR (SELECT a.atttypid FROM pg_attribute AS a WHERE a.attrelid = rel AND a.attname = v_layout.fingerprint_column
           AND NOT a.attisdropped) IS DISTINCT FROM 'bigint'::regtype THEN
        RAISE EXCEPTION 'range shards of %: column % must be bigint and key column % smallint, integer or bigint',
            rel, quote_ident(v_layout.fingerprint_column), quote_ident(v_layout.key_column)
            USING ERRCODE = 'datatype_mismatch', HINT = 'simpg.drop_range_index, then simpg.create_range_index';
    END IF;
    -- every partition of now gets the triggers, and rel the record of them
    PERFORM simpg.range_install_triggers(rel, simpg.range_registry(rel, v_layout.fingerprint_column));
    EXECUTE 'TRUNCATE ' || array_to_string(v_layout.tables::text[], ', ');
    FOR t IN 0 .. cardinality(v_layout.tables) - 1 LOOP
        EXECUTE format('INSERT INTO %s (p, key, fp) SELECT simpg.permute(b.%I, %s, %L::integer[], %s), b.%I, b.%I '
                       'FROM %s AS b WHERE b.%I IS NOT NULL',
                       v_layout.tables[t + 1], v_layout.fingerprint_column, v_layout.k, v_layout.levels, t,
                       v_layout.key_column, v_layout.fingerprint_column, rel, v_layout.fingerprint_column);
        GET DIAGNOSTICS v_rows = ROW_COUNT;
    END LOOP;
    RETURN v_rows;
END
$$;

COMMENT ON FUNCTION simpg.range_fill(regclass, name) IS
    'Range distribution: empty the permuted tables and fill them again from the base table';

-- range_lower_bound: the lower bound of a range partition's bound text
-- (pg_get_expr of relpartbound), NULL for MINVALUE.
CREATE FUNCTION simpg.range_lower_bound(bound text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (pg_catalog.regexp_match(bound, 'FROM \(''?(-?\d+)''?\)'))[1]::bigint;

COMMENT ON FUNCTION simpg.range_lower_bound(text) IS
    'Internal: the lower bound of a bigint range partition''s bound text; NULL for MINVALUE';

-- range_upper_bound: the upper bound (exclusive) of a range partition's bound text
-- (pg_get_expr of relpartbound); NULL for MAXVALUE.
CREATE FUNCTION simpg.range_upper_bound(bound text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (pg_catalog.regexp_match(bound, ' TO \(''?(-?\d+)''?\)'))[1]::bigint;

COMMENT ON FUNCTION simpg.range_upper_bound(text) IS
    'Internal: the upper bound (exclusive) of a bigint range partition''s bound text; NULL for MAXVALUE';

-- range_scan_targets: what a lookup reads for each of its (table t, values lo .. hi),
-- given as arrays (position i of ts, los and his; tables in table order): the
-- partitions of table t whose ranges meet lo .. hi (one, as the prefix ranges never
-- cross a shard's bounds), named directly. PostgreSQL runs an Append asynchronously
-- only over foreign scans it sees directly, and a partitioned table pruned to one
-- partition is not one: named, the partitions of a lookup are asked at once. Table t
-- itself (pruned by PostgreSQL, its scans one after the other) when its partitions are
-- not all plain range partitions that the caller may read (reading a partition
-- directly needs its own SELECT). One catalog query for all of them.
CREATE FUNCTION simpg.range_scan_targets(tables regclass[], ts integer[], los bigint[], his bigint[])
    RETURNS TABLE (i integer, target regclass)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- PL/pgSQL: the query is planned once per session (a SQL function's at every call)
    RETURN QUERY
    WITH parts AS MATERIALIZED (
        SELECT array_position(tables, h.inhparent::regclass) - 1 AS t, c.oid::regclass AS part,
               simpg.range_lower_bound(b.bound) AS lo, simpg.range_upper_bound(b.bound) AS hi,
               c.relkind <> 'p' AND b.bound LIKE 'FOR VALUES FROM (%) TO (%)' AND has_table_privilege(c.oid, 'SELECT')
                   AS plain
        FROM pg_inherits AS h
        JOIN pg_class AS c ON c.oid = h.inhrelid
        CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) AS b
        WHERE h.inhparent = ANY (tables::oid[])),
    direct AS MATERIALIZED (  -- the tables read through their partitions
        SELECT p.t FROM parts AS p GROUP BY p.t HAVING bool_and(p.plain))
    SELECT q.i::integer, p.part
    FROM unnest(ts, los, his) WITH ORDINALITY AS q(t, lo, hi, i)
    JOIN direct AS d ON d.t = q.t
    JOIN parts AS p ON p.t = q.t AND (p.lo IS NULL OR p.lo <= q.hi) AND (p.hi IS NULL OR p.hi > q.lo)
    UNION ALL
    SELECT q.i::integer, tables[q.t + 1]
    FROM unnest(ts, los, his) WITH ORDINALITY AS q(t, lo, hi, i)
    WHERE NOT EXISTS (SELECT FROM direct AS d WHERE d.t = q.t);
END
$$;

COMMENT ON FUNCTION simpg.range_scan_targets(regclass[], integer[], bigint[], bigint[]) IS
    'Internal: for each (table, lo, hi) of a lookup, the partitions it reads directly, or the table itself';

-- range_shards: the foreign partitions of every permuted table of rel, in table order.
CREATE FUNCTION simpg.range_shards(rel regclass, col name DEFAULT NULL)
    RETURNS TABLE (t integer, shard regclass, server name, remote_schema name, remote_table name,
                   bound text, async_capable boolean)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (u.t - 1)::integer, s.shard, s.server, s.remote_schema, s.remote_table, s.bound, s.async_capable
    FROM unnest((simpg.range_layout(rel, col)).tables) WITH ORDINALITY AS u(permuted, t)
    CROSS JOIN LATERAL simpg.shards(u.permuted) AS s
    ORDER BY u.t, simpg.range_lower_bound(s.bound) NULLS FIRST
$$;

COMMENT ON FUNCTION simpg.range_shards(regclass, name) IS
    'Range distribution: the foreign partitions of every permuted table of a base table';

-- check_range_shards: every problem of rel's range distribution, one row each; no rows
-- means every permuted table has its partitions, every shard table is there with its
-- B-tree, and (verify_rows) every shard holds exactly the rows the base table puts in
-- its range, with p = simpg.permute(fp) on a sample. Problems: 'table missing' (on the
-- coordinator or a shard), 'no shards', 'shards differ' (another set of shards or
-- ranges than the first permuted table's), 'not async', 'unreachable', 'missing b-tree',
-- 'row count differs', 'layout differs', 'trigger missing', 'not in step'
-- (simpg.range_out_of_step: partitions changed, a partition without its triggers). verify_rows reads the rel
-- table once per permuted table and counts each shard's rows there.
CREATE FUNCTION simpg.check_range_shards(rel regclass, col name DEFAULT NULL, verify_rows boolean DEFAULT true)
    RETURNS TABLE (shard regclass, server name, problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_first text;
    v_this text;
    v_part record;
    v_problem record;
    v_unreachable name[] := '{}';
    v_expected bigint;
    v_found bigint;
    v_outside bigint;
    v_wrong bigint;
    v_triggers integer;
BEGIN
    SELECT * INTO v_layout FROM simpg.range_layout(rel, col);
    SELECT count(*) INTO v_triggers FROM pg_trigger AS g
    WHERE g.tgrelid = rel AND g.tgfoid = 'simpg.range_shards_write()'::regprocedure AND g.tgenabled <> 'D'
      AND (simpg.trigger_args(g.tgargs))[1] = v_layout.fingerprint_column
      AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member';
    IF v_triggers <> 4 THEN
        problem := 'trigger missing';
        detail := format('%s has %s of its 4 enabled range triggers (insert, update, delete, truncate): writes would not reach the shards',
                         rel, v_triggers);
        RETURN NEXT;
    ELSE
        detail := simpg.range_out_of_step(rel, v_layout.fingerprint_column);
        IF detail IS NOT NULL THEN
            problem := 'not in step';
            RETURN NEXT;
        END IF;
    END IF;
    FOR i IN 1 .. cardinality(v_layout.tables) LOOP
        shard := NULL;
        server := NULL;
        IF v_layout.tables[i] IS NULL THEN
            problem := 'table missing';
            detail := format('permuted table %s of %s is missing on the coordinator', i - 1, rel);
            RETURN NEXT;
            CONTINUE;
        END IF;
        SELECT string_agg(s.server || ' ' || s.bound, ', ' ORDER BY simpg.range_lower_bound(s.bound) NULLS FIRST) INTO v_this
        FROM simpg.shards(v_layout.tables[i]) AS s;
        IF v_this IS NULL THEN
            problem := 'no shards';
            detail := format('%s has no foreign partitions', v_layout.tables[i]);
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_first := coalesce(v_first, v_this);
        IF v_this <> v_first THEN
            problem := 'shards differ';
            detail := format('%s has shards %s; %s has %s', v_layout.tables[i], v_this, v_layout.tables[1], v_first);
            RETURN NEXT;
        END IF;
        FOR v_part IN SELECT s.*, lower_bound, upper_bound FROM simpg.shards(v_layout.tables[i]) AS s
                      CROSS JOIN LATERAL (SELECT simpg.range_lower_bound(s.bound) AS lower_bound,
                                                 simpg.range_upper_bound(s.bound) AS upper_bound) AS b
                      ORDER BY lower_bound NULLS FIRST LOOP
            shard := v_part.shard;
            server := v_part.server;
            IF NOT v_part.async_capable THEN
                problem := 'not async';
                detail := format('%s is not scanned asynchronously: ALTER FOREIGN TABLE %s OPTIONS (ADD async_capable %L)',
                                 v_part.shard, v_part.shard, 'true');
                RETURN NEXT;
            END IF;
            CONTINUE WHEN v_part.server = ANY (v_unreachable);
            FOR v_problem IN SELECT * FROM simpg.remote_range_problems(v_part.server, v_part.remote_schema,
                                                                       v_part.remote_table) LOOP
                problem := v_problem.problem;
                detail := v_problem.detail;
                RETURN NEXT;
                IF v_problem.problem IN ('unreachable', 'server not owned', 'no user mapping', 'not postgres_fdw') THEN
                    -- not read again: nor its rows counted through it
                    v_unreachable := v_unreachable || v_part.server;
                END IF;
            END LOOP;
            CONTINUE WHEN NOT verify_rows OR v_part.server = ANY (v_unreachable);
            BEGIN
                EXECUTE format('SELECT count(*) FROM %s AS b WHERE b.%I IS NOT NULL '
                               'AND simpg.permute(b.%I, %s, %L::integer[], %s) >= %s AND simpg.permute(b.%I, %s, %L::integer[], %s) < %s',
                               rel, v_layout.fingerprint_column,
                               v_layout.fingerprint_column, v_layout.k, v_layout.levels, i - 1,
                               coalesce(v_part.lower_bound, -9223372036854775808),
                               v_layout.fingerprint_column, v_layout.k, v_layout.levels, i - 1,
                               coalesce(v_part.upper_bound::numeric, 9223372036854775808)) INTO v_expected;
                -- a temporary foreign table: no partition bound that the planner could assume
                IF to_regclass('pg_temp.simpg_remote_range') IS NOT NULL THEN
                    DROP FOREIGN TABLE pg_temp.simpg_remote_range;
                END IF;
                EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_range (p bigint, key bigint, fp bigint) '
                               'SERVER %I OPTIONS (schema_name %L, table_name %L)',
                               v_part.server, v_part.remote_schema, v_part.remote_table);
                EXECUTE format('SELECT count(*), count(*) FILTER (WHERE r.p < %s OR r.p >= %s) FROM pg_temp.simpg_remote_range AS r',
                               coalesce(v_part.lower_bound, -9223372036854775808),
                               coalesce(v_part.upper_bound::numeric, 9223372036854775808))
                    INTO v_found, v_outside;
                EXECUTE format('SELECT count(*) FROM (SELECT r.p, r.fp FROM pg_temp.simpg_remote_range AS r LIMIT 1000) AS s '
                               'WHERE s.p IS DISTINCT FROM simpg.permute(s.fp, %s, %L::integer[], %s)',
                               v_layout.k, v_layout.levels, i - 1) INTO v_wrong;
                DROP FOREIGN TABLE pg_temp.simpg_remote_range;
            EXCEPTION WHEN OTHERS THEN
                problem := 'error';
                detail := format('counting the rows of %s: %s', v_part.shard, SQLERRM);
                RETURN NEXT;
                CONTINUE;
            END;
            IF v_outside > 0 OR v_wrong > 0 THEN
                problem := 'layout differs';
                detail := format('%s on server %s holds %s rows outside its range %s and %s of 1,000 sampled whose p is not simpg.permute(fp, %s, %L, %s)',
                                 v_part.shard, v_part.server, v_outside, v_part.bound, v_wrong,
                                 v_layout.k, v_layout.levels, i - 1);
                RETURN NEXT;
            END IF;
            IF v_found <> v_expected THEN
                problem := 'row count differs';
                detail := format('%s on server %s holds %s rows; %s has %s for its range',
                                 v_part.shard, v_part.server, v_found, rel, v_expected);
                RETURN NEXT;
            END IF;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.check_range_shards(regclass, name, boolean) IS
    'Range distribution: problems of a table''s permuted tables and their shards; none when all is well';

-- range_lookup_where: a lookup's condition on a permuted table (simpg.lookup_where on
-- its column p, alias r), its expressions left as format() arguments: %1$L the
-- fingerprint, %2$L k, %3$L and %4$L the range's ends (format quotes the values: 16
-- quote_literal calls a lookup cost 0.08 ms). The range lookups fill it in for each
-- table and query: one call of lookup_where, not one each.
-- IMMUTABLE (lookup_where's text depends on its arguments alone): the planner folds the
-- call to a constant, so a session's range lookups, whose PL/pgSQL keeps that plan,
-- build it once, not at every lookup.
CREATE FUNCTION simpg.range_lookup_where() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN '(' || simpg.lookup_where('fp', '{p}', '%1$L::bigint', '%2$L::integer', starts => '{%3$L::bigint}',
                                     ends => '{%4$L::bigint}', alias => 'r') || ')';

COMMENT ON FUNCTION simpg.range_lookup_where() IS
    'Internal: a range lookup''s condition on a permuted table, with format() arguments for its literals';

-- range_near_query: the statement simpg.range_near runs, with the constants as typed
-- literals (for EXPLAIN): one arm per permuted table, each reading the rows of its
-- prefix range within k of fp (simpg.lookup_where on the table's column p) from the
-- one partition (shard) that holds it, named
-- directly (range_scan_targets) so that the T foreign scans run at once; postgres_fdw
-- sends each shard the range and the distance filter. A row found through several
-- tables is returned once.
CREATE FUNCTION simpg.range_near_query(rel regclass, fp bigint, k integer DEFAULT NULL, col name DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_k integer;
    v_statement text;
    v_condition text := simpg.range_lookup_where();
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(rel, col);
    v_k := simpg.range_radius(rel, v_layout.fingerprint_column, v_layout.k, k);
    PERFORM simpg.range_in_step(rel, v_layout.fingerprint_column);  -- never answer from stale tables
    IF fp IS NULL THEN
        RAISE EXCEPTION 'fp must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- one arm per permuted table and partition read (range_scan_targets): plain columns,
    -- so that each is a bare foreign scan, run at once with the others
    WITH r AS MATERIALIZED (SELECT x.t, x.lo, x.hi FROM simpg.prefix_ranges(ARRAY[fp], v_layout.k, v_layout.levels) AS x)
    SELECT 'SELECT s.key, min(simpg.hamming(s.fp, ' || quote_literal(fp) || '::bigint)) AS distance FROM ('
        || coalesce(string_agg('SELECT r.key, r.fp FROM ' || g.target::text || ' AS r WHERE '
                               || format(v_condition, fp, v_k, r.lo, r.hi),
                               ' UNION ALL ' ORDER BY r.t, g.target::text),
                    'SELECT NULL::bigint AS key, NULL::bigint AS fp WHERE false')
        || ') AS s GROUP BY s.key ORDER BY distance, s.key'
    INTO v_statement
    FROM simpg.range_scan_targets(v_layout.tables, ARRAY(SELECT r.t FROM r ORDER BY r.t),
                                  ARRAY(SELECT r.lo FROM r ORDER BY r.t), ARRAY(SELECT r.hi FROM r ORDER BY r.t)) AS g
    JOIN r ON r.t = g.i - 1;
    RETURN v_statement;
END
$$;

COMMENT ON FUNCTION simpg.range_near_query(regclass, bigint, integer, name) IS
    'Range distribution: the statement range_near runs, with its constants as literals (for EXPLAIN)';

-- range_near: the keys within k of fp, nearest first (then by key), read from one
-- partition per permuted table.
CREATE FUNCTION simpg.range_near(rel regclass, fp bigint, k integer DEFAULT NULL, col name DEFAULT NULL)
    RETURNS TABLE (key bigint, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY EXECUTE simpg.range_near_query(rel, fp, k, col);
END
$$;

COMMENT ON FUNCTION simpg.range_near(regclass, bigint, integer, name) IS
    'Range distribution: the keys within k of a fingerprint and their distance, nearest first';

-- range_near_many: range_near for many fingerprints, 100 per statement: each permuted
-- table is asked once per statement, with the OR of the queries' lookup conditions
-- (simpg.lookup_where, pruned to the shards that hold their ranges); each row found goes to
-- the queries it is within k of. Rows (query, key, distance), query the 1-based position
-- in fps, by query then nearest first; NULL elements find nothing.
CREATE FUNCTION simpg.range_near_many(rel regclass, fps bigint[], k integer DEFAULT NULL, col name DEFAULT NULL)
    RETURNS TABLE (query integer, key bigint, distance integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_layout record;
    v_k integer;
    v_arms text;
    v_condition text := simpg.range_lookup_where();
BEGIN
    SELECT * INTO v_layout FROM simpg.complete_range_layout(rel, col);
    v_k := simpg.range_radius(rel, v_layout.fingerprint_column, v_layout.k, k);
    PERFORM simpg.range_in_step(rel, v_layout.fingerprint_column);  -- never answer from stale tables
    FOR v_start IN 1 .. coalesce(cardinality(fps), 0) BY 100 LOOP
        -- one arm per permuted table and partition read, asked at once (as in range_near_query),
        -- with the prefix ranges and distance filters of the queries it may hold rows of
        WITH r AS MATERIALIZED (
            SELECT (row_number() OVER (ORDER BY x.t, x.n))::integer AS i, x.t, x.n, (fps[v_start : v_start + 99])[x.n] AS fp,
                   x.lo, x.hi
            FROM simpg.prefix_ranges(fps[v_start : v_start + 99], v_layout.k, v_layout.levels) AS x)
        SELECT string_agg(format('SELECT r.key, r.fp FROM %s AS r WHERE %s', a.target, a.lookups),
                          ' UNION ' ORDER BY a.t, a.target::text)
        INTO v_arms
        FROM (SELECT r.t, g.target,
                     string_agg(format(v_condition, r.fp, v_k, r.lo, r.hi),
                                ' OR ' ORDER BY r.n) AS lookups
              FROM simpg.range_scan_targets(v_layout.tables, ARRAY(SELECT r.t FROM r ORDER BY r.i),
                                            ARRAY(SELECT r.lo FROM r ORDER BY r.i),
                                            ARRAY(SELECT r.hi FROM r ORDER BY r.i)) AS g
              JOIN r ON r.i = g.i
              GROUP BY r.t, g.target) AS a;
        CONTINUE WHEN v_arms IS NULL;  -- only NULL fingerprints
        RETURN QUERY EXECUTE format(
            'SELECT (q.n + $3 - 1)::integer, s.key, simpg.hamming(s.fp, q.fp) AS distance FROM (%s) AS s '
            'JOIN unnest($1::bigint[]) WITH ORDINALITY AS q(fp, n) ON simpg.hamming(s.fp, q.fp) <= $2 '
            'ORDER BY q.n, distance, s.key', v_arms)
            USING fps[v_start : v_start + 99], v_k, v_start;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.range_near_many(regclass, bigint[], integer, name) IS
    'Range distribution: range_near for many fingerprints, each row with the 1-based position of its query';
