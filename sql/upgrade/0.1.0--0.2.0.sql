-- simpg 0.1.0 -> 0.2.0, the part written by hand (see CHANGELOG.md and docs/security.md).
-- The update script simpg--0.1.0--0.2.0.sql is this part followed by every object of the
-- 0.2.0 install script (every function as CREATE OR REPLACE: once the schema is simpg's
-- alone, that replaces only simpg's own), built by the Makefile and by
-- simpg.schema.upgrade_script, so an updated install equals a fresh one (test_install
-- compares them).
--
-- 0.1.0 kept its catalog in a table under row-level security, with an event trigger
-- whose SECURITY DEFINER function cleaned it, in a schema that belonged to the role that
-- ran CREATE EXTENSION. 0.2.0 reads its catalog from the system catalogs and owns its
-- schema. This part takes the schema over, moves the fingerprint configs into the
-- prefix columns' comments, and drops every 0.1.0 object that 0.2.0 defines anew.

SET LOCAL search_path = pg_catalog, pg_temp;

-- Take schema simpg over: it must hold nothing but simpg's own objects (the extension's
-- members, or for a plain install the installing role's simpg objects), and nothing in it
-- may belong to a role that could have planted it. This runs before any statement that
-- calls or replaces an object of the schema: under 0.1.0 the installer owned schema simpg
-- and the extension, so she could swap a member for a function of her own (ALTER
-- EXTENSION ... DROP/ADD) for this script, run by a superuser, to call, or keep as its
-- owner through CREATE OR REPLACE. With the extension every object must belong to a
-- superuser (0.1.0's script ran as one); a plain install is updated by the role that owns
-- it and everything in it, since any other role would run that role's code.
-- The list of catalogs is written here again (90_audit.sql has it too): this check runs
-- before anything in schema simpg may be trusted, so it calls no function of simpg's.
DO $$
DECLARE
    v_schema oid := pg_catalog.to_regnamespace('simpg');
    v_extension oid := (SELECT e.oid FROM pg_catalog.pg_extension AS e WHERE e.extname = 'simpg');
    v_foreign text;
    v_owned text;
    v_grantee oid;
    v_function regprocedure;
BEGIN
    IF v_schema IS NULL THEN
        RAISE EXCEPTION 'schema simpg does not exist' USING ERRCODE = 'invalid_schema_name';
    END IF;
    IF v_extension IS NOT NULL
       AND (SELECT e.extnamespace FROM pg_catalog.pg_extension AS e WHERE e.oid = v_extension) <> v_schema THEN
        RAISE EXCEPTION 'schema simpg is not the schema of extension simpg' USING ERRCODE = 'invalid_schema_name';
    END IF;
    -- every object of the schema (the schema too) and every member of the extension:
    -- whether it is a member, and whether its owner may be trusted
    WITH objects AS (
        SELECT x.classid, x.objid, x.owner,
               pg_catalog.pg_describe_object(x.classid, x.objid, 0) AS description,
               EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                       WHERE d.classid = x.classid AND d.objid = x.objid AND d.deptype = 'e'
                         AND d.refobjid = v_extension) AS member
        FROM (SELECT 'pg_class'::regclass AS classid, c.oid AS objid, c.relowner AS owner, c.relnamespace AS nsp
              FROM pg_catalog.pg_class AS c WHERE c.relkind IN ('r', 'v', 'm', 'S', 'f', 'p')
              UNION ALL SELECT 'pg_proc'::regclass, p.oid, p.proowner, p.pronamespace FROM pg_catalog.pg_proc AS p
              UNION ALL SELECT 'pg_type'::regclass, t.oid, t.typowner, t.typnamespace FROM pg_catalog.pg_type AS t
                        WHERE t.typelem = 0  -- a composite type is the member, not its pg_class row
                          AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = t.typrelid) = 'c')
              UNION ALL SELECT 'pg_operator'::regclass, o.oid, o.oprowner, o.oprnamespace FROM pg_catalog.pg_operator AS o
              UNION ALL SELECT 'pg_opfamily'::regclass, f.oid, f.opfowner, f.opfnamespace FROM pg_catalog.pg_opfamily AS f
              UNION ALL SELECT 'pg_opclass'::regclass, c.oid, c.opcowner, c.opcnamespace FROM pg_catalog.pg_opclass AS c
              UNION ALL SELECT 'pg_collation'::regclass, c.oid, c.collowner, c.collnamespace FROM pg_catalog.pg_collation AS c
              UNION ALL SELECT 'pg_conversion'::regclass, c.oid, c.conowner, c.connamespace FROM pg_catalog.pg_conversion AS c
              UNION ALL SELECT 'pg_ts_config'::regclass, c.oid, c.cfgowner, c.cfgnamespace FROM pg_catalog.pg_ts_config AS c
              UNION ALL SELECT 'pg_ts_dict'::regclass, d.oid, d.dictowner, d.dictnamespace FROM pg_catalog.pg_ts_dict AS d
              UNION ALL SELECT 'pg_statistic_ext'::regclass, s.oid, s.stxowner, s.stxnamespace FROM pg_catalog.pg_statistic_ext AS s
              UNION ALL SELECT 'pg_event_trigger'::regclass, e.oid, e.evtowner, NULL FROM pg_catalog.pg_event_trigger AS e
              UNION ALL SELECT 'pg_foreign_server'::regclass, s.oid, s.srvowner, NULL FROM pg_catalog.pg_foreign_server AS s
              UNION ALL SELECT 'pg_namespace'::regclass, n.oid, n.nspowner, n.oid FROM pg_catalog.pg_namespace AS n
             ) AS x
        WHERE x.nsp = v_schema
           OR EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                      WHERE d.classid = x.classid AND d.objid = x.objid AND d.deptype = 'e'
                        AND d.refobjid = v_extension)
    )
    SELECT string_agg(o.description, ', ' ORDER BY o.description)
               FILTER (WHERE v_extension IS NOT NULL AND NOT o.member AND o.classid <> 'pg_namespace'::regclass),
           string_agg(pg_catalog.format('%s (owned by %s)', o.description, pg_catalog.pg_get_userbyid(o.owner)),
                      ', ' ORDER BY o.description)
               FILTER (WHERE CASE WHEN v_extension IS NULL
                                  THEN o.owner <> (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user)
                                  ELSE o.classid <> 'pg_namespace'::regclass
                                       AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS r
                                                       WHERE r.oid = o.owner AND r.rolsuper) END)
    INTO v_foreign, v_owned
    FROM objects AS o;
    IF v_foreign IS NOT NULL THEN
        RAISE EXCEPTION 'schema simpg holds objects that are not simpg''s: %', v_foreign
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'move or drop them, then update simpg';
    END IF;
    IF v_owned IS NOT NULL AND v_extension IS NOT NULL THEN
        RAISE EXCEPTION 'simpg cannot be updated: objects of extension simpg belong to roles that are not superusers: %', v_owned
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'a superuser should drop them (ALTER EXTENSION simpg DROP ..., then DROP ...), or drop extension simpg and create it again';
    ELSIF v_owned IS NOT NULL THEN
        RAISE EXCEPTION 'simpg cannot be updated by %: its plain install holds objects of other roles: %', current_user, v_owned
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'run the update as the role that owns schema simpg and its objects: any other role would run that role''s code';
    END IF;
    -- functions that 0.2.0 replaces keep their owner through CREATE OR REPLACE: give those
    -- of another superuser (who installed 0.1.0) to the role updating, as the final
    -- check of this script (90_audit.sql) requires
    FOR v_function IN
        SELECT p.oid::regprocedure FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = v_schema AND p.proowner <> (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user)
    LOOP
        EXECUTE pg_catalog.format('ALTER ROUTINE %s OWNER TO %I', v_function, current_user);
    END LOOP;
    EXECUTE pg_catalog.format('ALTER SCHEMA simpg OWNER TO %I', current_user);
    FOR v_grantee IN
        SELECT DISTINCT a.grantee
        FROM pg_catalog.pg_namespace AS n, pg_catalog.aclexplode(n.nspacl) AS a
        WHERE n.oid = v_schema AND a.grantee <> n.nspowner
    LOOP
        IF v_grantee = 0 THEN
            REVOKE ALL ON SCHEMA simpg FROM PUBLIC;
        ELSE
            EXECUTE pg_catalog.format('REVOKE ALL ON SCHEMA simpg FROM %I', pg_catalog.pg_get_userbyid(v_grantee));
        END IF;
    END LOOP;
END
$$;
GRANT USAGE ON SCHEMA simpg TO PUBLIC;

-- The extension as a fresh 0.2.0 install has it: schema simpg one of its members, and
-- its own namespace not simpg. 0.1.0's control file named schema simpg, so CREATE
-- EXTENSION made it apart from the members; pg_dump then writes CREATE SCHEMA simpg and
-- ALTER SCHEMA simpg OWNER TO <the bootstrap superuser>, which an owner's restore cannot
-- run. As a member it goes with the extension; pg_catalog, as the namespace pg_dump
-- names in CREATE EXTENSION ... WITH SCHEMA, always exists (the script makes simpg).
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension AS e WHERE e.extname = 'simpg') THEN
        UPDATE pg_catalog.pg_extension SET extnamespace = 'pg_catalog'::regnamespace WHERE extname = 'simpg';
        ALTER EXTENSION simpg ADD SCHEMA simpg;  -- refused while the schema holds the extension
    END IF;
END
$$;

-- The fingerprint configs move to the comment of each index's first prefix column,
-- where 0.2.0's catalog reads them.
DO $$
DECLARE
    v_row record;
BEGIN
    FOR v_row IN
        SELECT i.indexed_table, i.prefix_columns[1] AS prefix_column, i.fingerprint_config
        FROM simpg.indexes AS i
        WHERE i.fingerprint_config IS NOT NULL
          AND EXISTS (SELECT FROM pg_catalog.pg_attribute AS a
                      WHERE a.attrelid = i.indexed_table AND a.attname = i.prefix_columns[1] AND NOT a.attisdropped)
    LOOP
        EXECUTE pg_catalog.format('COMMENT ON COLUMN %s.%I IS %L', v_row.indexed_table, v_row.prefix_column,
                                  'simpg fingerprint_config: ' || v_row.fingerprint_config);
    END LOOP;
END
$$;

DROP EVENT TRIGGER IF EXISTS simpg_forget_dropped;
DROP FUNCTION simpg.forget_dropped();
-- the functions of the old catalog's row type, then the table (no CASCADE: a view of
-- yours on simpg.indexes stops the update with an error rather than being dropped)
DROP FUNCTION simpg.index_layout(regclass, name), simpg.checked_layout(regclass, integer, name),
    simpg.register_index(regclass, name, integer, integer[], name[], name[], text),
    simpg.create_index(regclass, name, integer, integer, integer, text), simpg.prefix_select(simpg.indexes);
DROP TABLE simpg.indexes;
-- reports that gained parameters (the cluster method, the confirming sketch): CREATE OR
-- REPLACE would add overloads beside them, and calls with the old arguments would become
-- ambiguous
DROP FUNCTION simpg.pairs(regclass, integer, name, name),
    simpg.pairs(anyelement, regclass, integer, name, name),
    simpg.pairs_query(regclass, integer, name, name, regtype),
    simpg.clusters(regclass, integer, name, name),
    simpg.clusters(anyelement, regclass, integer, name, name),
    simpg.clusters_query(regclass, integer, name, name, regtype),
    simpg.cluster_rows_query(regclass, integer, name, text),
    simpg.cluster_sizes(regclass, integer, name), simpg.duplicate_stats(regclass, integer, name);
-- functions whose parameters were renamed (row_count is rows): CREATE OR REPLACE refuses
-- to rename a parameter; default_levels calls plan, so both go in one statement
DROP FUNCTION simpg.default_levels(integer, bigint), simpg.plan(integer, bigint, boolean),
    simpg.default_blocks(integer, bigint);

-- 0.2.0's objects, as its install script makes them:
