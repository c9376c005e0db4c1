-- shard functions
--
-- Shards on several servers with PostgreSQL's own sharding: a partitioned table on a
-- coordinator whose partitions are postgres_fdw foreign tables, each the table of a
-- shard server that has simpg and an index of the same layout. No router of simpg's:
-- PostgreSQL routes writes to the partitions and runs lookups on every shard at once
-- (asynchronous foreign scans).
--
-- The layout is registered once, on the coordinator: simpg.create_index on the
-- partitioned parent gives it (and every foreign partition, which inherits them) the
-- generated prefix columns. A foreign table stores nothing, so they are computed where
-- the rows are: postgres_fdw sends DEFAULT for a generated column on INSERT, and the
-- shard's own generated columns (its simpg index, made by the statements of
-- simpg.shard_ddl) compute them. A lookup through the parent sends each shard the
-- prefix ranges and the distance filter (simpg.hamming and simpg.sketch_distance are SQL
-- functions that PostgreSQL inlines into bit_count(a # b), which postgres_fdw ships on
-- either install path); each shard answers from its own B-trees.
--
-- postgres_fdw runs no DDL on the remote side, so a shard's table and index are made
-- by statements that simpg.shard_ddl writes and a client runs on the shard (the
-- `simpg shard create` command, or psql): they run with the shard's own rights, need
-- no dblink, and can be read first. simpg.check_shards then reads each shard's
-- simpg.indexes through postgres_fdw, so the coordinator can tell that every shard has
-- the parent's layout: a shard indexed with another layout would answer with other
-- permutations under the same column names and silently miss rows.
--
-- Nothing here needs postgres_fdw at install time: the functions look it up when they run.

-- shard_ddl: the statements that make a shard's table for the partitioned table rel,
-- to run on the shard (which has simpg installed): CREATE TABLE with rel's columns
-- (no defaults: the coordinator computes them before routing a row), its partition key
-- as PRIMARY KEY when that is one column (each key value goes to one shard, so keys
-- unique on every shard are unique everywhere), then simpg.create_index with rel's
-- layout and fingerprint config.
-- Contract: rel is partitioned, owned by the caller, with one simpg index (or col
-- naming one); remote_schema and remote_table default to rel's schema and name.
-- Columns of types the shard lacks (an enum, a domain) must be made there first.
CREATE FUNCTION simpg.shard_ddl(rel regclass, remote_schema name DEFAULT NULL,
                                remote_table name DEFAULT NULL, col name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_target text;
    v_columns text;
    v_key text;
BEGIN
    v_row := simpg.sharded_layout(rel, col);
    SELECT format('%I.%I', coalesce(remote_schema, n.nspname), coalesce(remote_table, c.relname))
    INTO v_target
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = rel;
    -- every column but rel's prefix columns: those are the shard's simpg index. Other
    -- generated columns keep their expressions: postgres_fdw sends DEFAULT for them.
    SELECT string_agg(format('%I %s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                             CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                                  THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END,
                             CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                             CASE WHEN a.attgenerated = 's'
                                  THEN format(' GENERATED ALWAYS AS (%s) STORED', pg_get_expr(d.adbin, d.adrelid))
                                  ELSE '' END),
                      ', ' ORDER BY a.attnum)
    INTO v_columns
    FROM pg_attribute AS a
    JOIN pg_type AS t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
      AND a.attname <> ALL (v_row.prefix_columns);
    SELECT format(', PRIMARY KEY (%I)', a.attname) INTO v_key
    FROM pg_partitioned_table AS p
    JOIN pg_attribute AS a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
    WHERE p.partrelid = rel AND p.partnatts = 1 AND p.partattrs[0] <> 0;
    RETURN NEXT format('CREATE TABLE %s (%s%s)', v_target, v_columns, coalesce(v_key, ''));
    RETURN NEXT format('SELECT simpg.create_index(%L::regclass, %L::name, %s::integer, %s::integer, %s::integer, %s::text)',
                       v_target, v_row.fingerprint_column, v_row.k, v_row.levels[1],
                       coalesce(v_row.levels[2]::text, 'NULL'), coalesce(quote_literal(v_row.fingerprint_config), 'NULL'));
END
$$;

COMMENT ON FUNCTION simpg.shard_ddl(regclass, name, name, name) IS
    'Statements to run on a shard server: its table for the partitioned table rel, and a simpg index of rel''s layout';

-- sharded_layout: the simpg.indexes row of a partitioned table that shards are made
-- for. Contract: raises unless rel is a partitioned table owned by the caller with a
-- (single, or named by col) simpg index.
CREATE FUNCTION simpg.sharded_layout(rel regclass, col name DEFAULT NULL) RETURNS simpg.indexes
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = rel) IS DISTINCT FROM 'p' THEN
        RAISE EXCEPTION 'table % is not partitioned; shards are the partitions of a partitioned table', rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'create it with PARTITION BY HASH (key), then simpg.create_index on it';
    END IF;
    IF NOT simpg.owns(rel) THEN
        RAISE EXCEPTION 'must be owner of table %', rel USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN simpg.index_layout(rel, col);
END
$$;

COMMENT ON FUNCTION simpg.sharded_layout(regclass, name) IS
    'The simpg index of a partitioned table that shards are made for; raises unless there is one and the caller owns the table';

-- shard_server_problem: why the caller must not send credentials or rows through the
-- foreign server server, NULL when it may. Only through a server the caller itself owns
-- (srvowner = current_user, not a role it is a member of): its owner reads the options of
-- every user mapping on it, passwords included (pg_user_mappings), and points it anywhere
-- with ALTER SERVER; and only through the caller's own user mapping (umuser =
-- current_user), never a PUBLIC one that postgres_fdw would fall back to (need_mapping
-- false: the caller is about to make its own). options ('key=value', from the caller's
-- connection string) must match the server's: each one given, and host, hostaddr, port,
-- dbname and service also when absent (a server that names another database than the
-- connection string would take the shard's rows there). Reads the catalogs only.
CREATE FUNCTION simpg.shard_server_problem(server name, options text[] DEFAULT NULL, need_mapping boolean DEFAULT true,
                                           OUT problem text, OUT detail text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_server record;
    v_key text;
    v_want text;
    v_have text;
BEGIN
    SELECT s.oid, s.srvowner, s.srvoptions, w.fdwname INTO v_server
    FROM pg_foreign_server AS s JOIN pg_foreign_data_wrapper AS w ON w.oid = s.srvfdw WHERE s.srvname = server;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'foreign server % does not exist', quote_ident(server)
            USING ERRCODE = 'undefined_object',
                  HINT = 'CREATE SERVER ... FOREIGN DATA WRAPPER postgres_fdw and a user mapping first';
    END IF;
    IF v_server.srvowner <> (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user) THEN
        problem := 'server not owned';
        detail := format('foreign server %I belongs to role %I, not to %I: its owner could read the password of a user mapping on it and point it at another database; use a server of your own (another name)',
                         server, pg_get_userbyid(v_server.srvowner), current_user);
        RETURN;
    END IF;
    IF v_server.fdwname <> 'postgres_fdw' THEN
        problem := 'not postgres_fdw';
        detail := format('server %I uses foreign data wrapper %I; shards need postgres_fdw', server, v_server.fdwname);
        RETURN;
    END IF;
    FOR v_key IN SELECT DISTINCT x.key
                 FROM (SELECT split_part(o, '=', 1) AS key FROM unnest(options) AS o
                       UNION ALL SELECT unnest(ARRAY['host', 'hostaddr', 'port', 'dbname', 'service'])) AS x
                 WHERE options IS NOT NULL ORDER BY x.key LOOP
        SELECT substr(o, length(v_key) + 2) INTO v_want FROM unnest(options) AS o WHERE o LIKE v_key || '=%' LIMIT 1;
        SELECT substr(o, length(v_key) + 2) INTO v_have FROM unnest(v_server.srvoptions) AS o
        WHERE o LIKE v_key || '=%' LIMIT 1;
        IF v_want IS DISTINCT FROM v_have THEN
            problem := 'options differ';
            detail := format('foreign server %I has %s %s, the connection string %s', server, v_key,
                             coalesce(quote_literal(v_have), 'none'), coalesce(quote_literal(v_want), 'none'));
            RETURN;
        END IF;
    END LOOP;
    IF need_mapping AND NOT EXISTS (SELECT FROM pg_user_mappings AS u
                                    WHERE u.srvid = v_server.oid
                                      AND u.umuser = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user)) THEN
        problem := 'no user mapping';
        detail := format('foreign server %I has no user mapping for %I (a PUBLIC mapping is not used): CREATE USER MAPPING FOR CURRENT_USER SERVER %I',
                         server, current_user, server);
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.shard_server_problem(name, text[], boolean) IS
    'Internal: why a foreign server must not carry the caller''s shards (not its own, no own user mapping, other options); NULL when it may';

-- check_shard_server: raise unless the caller may use foreign server server for shards
-- (simpg.shard_server_problem), naming the server and, when it is not the caller's, its
-- owner. Every path that writes a user mapping or attaches a shard goes through it.
CREATE FUNCTION simpg.check_shard_server(server name, options text[] DEFAULT NULL, need_mapping boolean DEFAULT true)
    RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_found record;
BEGIN
    IF server IS NULL THEN
        RAISE EXCEPTION 'server must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO v_found FROM simpg.shard_server_problem(server, options, need_mapping);
    IF v_found.problem IS NOT NULL THEN
        RAISE EXCEPTION 'foreign server % cannot carry shards: %', quote_ident(server), v_found.detail
            USING ERRCODE = CASE v_found.problem WHEN 'server not owned' THEN 'insufficient_privilege'
                                                 WHEN 'no user mapping' THEN 'insufficient_privilege'
                                                 WHEN 'not postgres_fdw' THEN 'wrong_object_type'
                                                 ELSE 'invalid_parameter_value' END;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.check_shard_server(name, text[], boolean) IS
    'Raise unless a foreign server is the caller''s own postgres_fdw server with its own user mapping (and the given options)';

-- remote_index_problems: what is wrong with the shard table remote_schema.remote_table on
-- foreign server server for the simpg index layout of rel, read from the shard's
-- simpg.indexes through postgres_fdw (a temporary foreign table, dropped before
-- returning). One row per problem, none when the shard has exactly rel's layout:
-- those of simpg.shard_server_problem ('server not owned', 'no user mapping', 'not
-- postgres_fdw': the server is then not used at all), 'unreachable' (the connection failed; detail has postgres_fdw's
-- message, which names the server), 'simpg missing' (no simpg.indexes there), 'error'
-- (another error while reading it), 'no simpg index', 'layout differs', 'missing b-tree'.
CREATE FUNCTION simpg.remote_index_problems(rel regclass, server name, remote_schema name,
                                            remote_table name, col name DEFAULT NULL)
    RETURNS TABLE (problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes := simpg.sharded_layout(rel, col);
    v_target text := format('%I.%I', remote_schema, remote_table);
    v_found record;
    v_seen boolean := false;
    v_detail text;
BEGIN
    -- nothing goes through a server or user mapping that is not the caller's own
    SELECT * INTO problem, detail FROM simpg.shard_server_problem(server);
    IF problem IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    BEGIN
        IF pg_catalog.to_regclass('pg_temp.simpg_remote_indexes') IS NOT NULL THEN
            DROP FOREIGN TABLE pg_temp.simpg_remote_indexes;
        END IF;
        -- the view's regclass and name columns as text: regclass names the shard's table
        -- as the shard sees it (postgres_fdw's sessions run with search_path pg_catalog,
        -- so it is schema-qualified)
        EXECUTE format('CREATE FOREIGN TABLE pg_temp.simpg_remote_indexes (indexed_table text, fingerprint_column text, '
                       'k integer, levels integer[], prefix_columns text[], index_names text[]) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)', server, 'simpg', 'indexes');
        -- compared here, not in a WHERE clause: postgres_fdw would send it to the shard,
        -- which has no regclass = text
        FOR v_found IN SELECT * FROM pg_temp.simpg_remote_indexes LOOP
            CONTINUE WHEN v_found.indexed_table <> v_target OR v_found.fingerprint_column <> v_row.fingerprint_column;
            v_seen := true;
            IF v_found.k <> v_row.k OR v_found.levels <> v_row.levels
               OR v_found.prefix_columns <> v_row.prefix_columns::text[] THEN
                problem := 'layout differs';
                detail := format('%s.%I on server %I has k=%s blocks=%s with columns %s; %s has k=%s blocks=%s with columns %s',
                                 v_target, v_row.fingerprint_column, server, v_found.k,
                                 array_to_string(v_found.levels, 'x'), v_found.prefix_columns, rel,
                                 v_row.k, array_to_string(v_row.levels, 'x'), v_row.prefix_columns);
                RETURN NEXT;
            ELSIF array_position(v_found.index_names, NULL) IS NOT NULL THEN
                problem := 'missing b-tree';
                detail := format('%s.%I on server %I lacks B-trees (answers stay exact, but read the whole shard); run simpg.repair there',
                                 v_target, v_row.fingerprint_column, server);
                RETURN NEXT;
            END IF;
        END LOOP;
        DROP FOREIGN TABLE pg_temp.simpg_remote_indexes;
    EXCEPTION
        WHEN sqlclient_unable_to_establish_sqlconnection OR connection_exception OR connection_failure THEN
            GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
            problem := 'unreachable';
            detail := SQLERRM || coalesce(': ' || nullif(rtrim(v_detail, E'\n'), ''), '');
            RETURN NEXT;
            RETURN;
        WHEN undefined_table OR invalid_schema_name THEN
            problem := 'simpg missing';
            detail := format('server %I has no simpg.indexes (%s); install simpg there', server, SQLERRM);
            RETURN NEXT;
            RETURN;
        WHEN OTHERS THEN
            problem := 'error';
            detail := format('reading simpg.indexes on server %I: %s', server, SQLERRM);
            RETURN NEXT;
            RETURN;
    END;
    IF NOT v_seen THEN
        problem := 'no simpg index';
        detail := format('server %I has no simpg index on %s.%I (run the statements of simpg.shard_ddl(%L) there)',
                         server, v_target, v_row.fingerprint_column, rel::text);
        RETURN NEXT;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.remote_index_problems(regclass, name, name, name, name) IS
    'Internal: problems of a shard table''s simpg index against a partitioned table''s layout, read through postgres_fdw';

-- shards: the foreign partitions of rel, at every level, with their server and the
-- table each one reads (postgres_fdw's schema_name and table_name options, defaulting to
-- the foreign table's own), and whether postgres_fdw scans it asynchronously
-- (async_capable of the foreign table, else of the server). Reads the catalogs only.
CREATE FUNCTION simpg.shards(rel regclass)
    RETURNS TABLE (shard regclass, server name, remote_schema name, remote_table name,
                   bound text, async_capable boolean)
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.oid::regclass, s.srvname,
           coalesce((SELECT substr(o, length('schema_name=') + 1) FROM unnest(f.ftoptions) AS o
                     WHERE o LIKE 'schema_name=%'),
                    n.nspname)::name,
           coalesce((SELECT substr(o, length('table_name=') + 1) FROM unnest(f.ftoptions) AS o
                     WHERE o LIKE 'table_name=%'), c.relname)::name,
           pg_get_expr(c.relpartbound, c.oid),
           coalesce((SELECT substr(o, length('async_capable=') + 1) FROM unnest(f.ftoptions) AS o
                     WHERE o LIKE 'async_capable=%'),
                    (SELECT substr(o, length('async_capable=') + 1) FROM unnest(s.srvoptions) AS o
                     WHERE o LIKE 'async_capable=%'), 'false')::boolean
    FROM pg_partition_tree(rel) AS m
    JOIN pg_class AS c ON c.oid = m.relid AND c.relkind = 'f'
    JOIN pg_namespace AS n ON n.oid = c.relnamespace
    JOIN pg_foreign_table AS f ON f.ftrelid = c.oid
    JOIN pg_foreign_server AS s ON s.oid = f.ftserver
    ORDER BY m.level, c.oid::regclass::text
$$;

COMMENT ON FUNCTION simpg.shards(regclass) IS
    'Foreign partitions of a partitioned table: server, remote table, partition bound, asynchronous scans';

-- check_shards: every problem of rel's shards, one row each; no rows means each
-- foreign partition reaches a shard table with exactly rel's simpg index layout and
-- is scanned asynchronously. Problems: those of simpg.remote_index_problems, 'not async'
-- (lookups would visit the shards one after the other), and 'no shards'.
-- Contract: reads every shard's simpg.indexes through postgres_fdw, with the caller's
-- user mappings; a shard that cannot be reached is a problem row, not an error.
CREATE FUNCTION simpg.check_shards(rel regclass, col name DEFAULT NULL)
    RETURNS TABLE (shard regclass, server name, problem text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_shard record;
    v_problem record;
    v_any boolean := false;
BEGIN
    PERFORM simpg.sharded_layout(rel, col);
    FOR v_shard IN SELECT * FROM simpg.shards(rel) LOOP
        v_any := true;
        shard := v_shard.shard;
        server := v_shard.server;
        IF NOT v_shard.async_capable THEN
            problem := 'not async';
            detail := format('%s is not scanned asynchronously: ALTER FOREIGN TABLE %s OPTIONS (ADD async_capable %L)',
                             v_shard.shard, v_shard.shard, 'true');
            RETURN NEXT;
        END IF;
        FOR v_problem IN SELECT * FROM simpg.remote_index_problems(rel, v_shard.server, v_shard.remote_schema,
                                                                   v_shard.remote_table, col) LOOP
            problem := v_problem.problem;
            detail := v_problem.detail;
            RETURN NEXT;
        END LOOP;
    END LOOP;
    IF NOT v_any THEN
        shard := NULL;
        server := NULL;
        problem := 'no shards';
        detail := format('%s has no foreign partitions', rel);
        RETURN NEXT;
    END IF;
END
$$;

COMMENT ON FUNCTION simpg.check_shards(regclass, name) IS
    'Problems of a partitioned table''s foreign partitions: shards unreachable, without simpg, or with another layout; none when all is well';

-- attach_shard: make a shard table a hash partition of rel on the coordinator:
-- CREATE FOREIGN TABLE ... PARTITION OF rel FOR VALUES WITH (MODULUS modulus,
-- REMAINDER remainder) SERVER server, scanned asynchronously (async_capable),
-- fetched 10,000 rows per round trip (fetch_size; postgres_fdw's default of 100 makes
-- a whole-table read, such as SimHashColumn.pairs, a round trip per 100 rows), and written
-- 1,000 rows per round trip by INSERT (batch_size; the default of 1 made an INSERT of
-- 20,000 rows through the coordinator take 60 s instead of 0.9 s).
-- Contract: rel is hash-partitioned, owned by the caller, with a simpg index; the
-- shard table (remote_schema.remote_table, default rel's schema and name) already
-- has exactly rel's layout, which is read through postgres_fdw before anything is
-- created: any problem raises, naming the server. The partition is named
-- partition_name (default: rel's name, '_', the server's) in rel's schema.
-- For range or list partitioning, create the foreign partition yourself (the same
-- options) and run simpg.check_shards.
CREATE FUNCTION simpg.attach_shard(rel regclass, server name, modulus integer, remainder integer,
                                   remote_schema name DEFAULT NULL, remote_table name DEFAULT NULL,
                                   partition_name name DEFAULT NULL)
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row simpg.indexes;
    v_strategy "char";
    v_schema name;
    v_name name;
    v_problem record;
    v_partition regclass;
BEGIN
    IF server IS NULL OR modulus IS NULL OR remainder IS NULL THEN
        RAISE EXCEPTION 'server, modulus and remainder must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v_row := simpg.sharded_layout(rel);
    SELECT p.partstrat INTO v_strategy FROM pg_partitioned_table AS p WHERE p.partrelid = rel;
    IF v_strategy <> 'h' THEN
        RAISE EXCEPTION 'table % is not hash-partitioned; create its foreign partitions yourself and run simpg.check_shards', rel
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF modulus < 1 OR remainder < 0 OR remainder >= modulus THEN
        RAISE EXCEPTION 'remainder must be from 0 to modulus - 1, got modulus % and remainder %', modulus, remainder
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT n.nspname, c.relname INTO v_schema, v_name
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = rel;
    remote_schema := coalesce(remote_schema, v_schema);
    remote_table := coalesce(remote_table, v_name);
    FOR v_problem IN SELECT * FROM simpg.remote_index_problems(rel, server, remote_schema, remote_table) LOOP
        RAISE EXCEPTION 'shard % cannot be attached to %: % (%)', quote_ident(server), rel,
            v_problem.problem, v_problem.detail
            USING ERRCODE = CASE WHEN v_problem.problem = 'unreachable' THEN 'sqlclient_unable_to_establish_sqlconnection'
                                 WHEN v_problem.problem IN ('server not owned', 'no user mapping') THEN 'insufficient_privilege'
                                 ELSE 'invalid_object_definition' END,
                  HINT = CASE v_problem.problem
                      WHEN 'unreachable' THEN 'check that the shard is up and the server''s options and user mapping'
                      WHEN 'server not owned' THEN 'create a foreign server of your own, under another name (simpg shard create does)'
                      WHEN 'no user mapping' THEN 'CREATE USER MAPPING FOR CURRENT_USER on the server (simpg shard create does)'
                      WHEN 'layout differs' THEN 'drop the shard''s index (simpg.drop_index there) and run the statements of simpg.shard_ddl'
                      WHEN 'missing b-tree' THEN 'run simpg.repair on the shard'
                      ELSE 'run the statements of simpg.shard_ddl on the shard first (simpg shard create does)' END;
    END LOOP;
    partition_name := coalesce(partition_name, simpg.object_name(v_name, '_' || server));
    EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES WITH (MODULUS %s, REMAINDER %s) '
                   'SERVER %I OPTIONS (schema_name %L, table_name %L, async_capable %L, fetch_size %L, batch_size %L)',
                   v_schema, partition_name, rel, modulus, remainder, server,
                   remote_schema, remote_table, 'true', '10000', '1000');
    v_partition := format('%I.%I', v_schema, partition_name)::regclass;
    RETURN v_partition;
END
$$;

COMMENT ON FUNCTION simpg.attach_shard(regclass, name, integer, integer, name, name, name) IS
    'Attach a shard server''s table (checked to have the same simpg layout) as a foreign hash partition, scanned asynchronously';
