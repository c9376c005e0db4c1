-- audit: the last statement of the install and of every update script
--
-- Whatever ran before, the script ends only if schema simpg is simpg's alone: every
-- object in it, and every member of the extension wherever it lives, belongs to the role
-- that ran the script (the bootstrap superuser for CREATE EXTENSION, trusted or not; the
-- installing role for a plain install), and no grant gives another role more than
-- USAGE, EXECUTE or SELECT, nor the right to grant (but for the column grants of the
-- guard's lock rows, which row-level security confines to tables the role may write).
-- Otherwise the transaction is rolled back, so no install or update can leave an object
-- another role could change under a superuser who calls it (docs/security.md). The check is written for the catalogs, not
-- for simpg's objects, so it holds for objects a later version adds.
DO $$
DECLARE
    v_me oid := (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user);
    v_schema oid := pg_catalog.to_regnamespace('simpg');
    v_extension oid := (SELECT e.oid FROM pg_catalog.pg_extension AS e WHERE e.extname = 'simpg');
    v_problems text;
BEGIN
    WITH objects AS (
        SELECT x.classid, x.objid, x.owner, x.acl
        FROM (SELECT 'pg_class'::regclass AS classid, c.oid AS objid, c.relowner AS owner, c.relacl AS acl,
                     c.relnamespace AS nsp
              FROM pg_catalog.pg_class AS c
              UNION ALL SELECT 'pg_proc'::regclass, p.oid, p.proowner, p.proacl, p.pronamespace FROM pg_catalog.pg_proc AS p
              UNION ALL SELECT 'pg_type'::regclass, t.oid, t.typowner, t.typacl, t.typnamespace FROM pg_catalog.pg_type AS t
              UNION ALL SELECT 'pg_operator'::regclass, o.oid, o.oprowner, NULL, o.oprnamespace FROM pg_catalog.pg_operator AS o
              UNION ALL SELECT 'pg_opfamily'::regclass, f.oid, f.opfowner, NULL, f.opfnamespace FROM pg_catalog.pg_opfamily AS f
              UNION ALL SELECT 'pg_opclass'::regclass, c.oid, c.opcowner, NULL, c.opcnamespace FROM pg_catalog.pg_opclass AS c
              UNION ALL SELECT 'pg_collation'::regclass, c.oid, c.collowner, NULL, c.collnamespace FROM pg_catalog.pg_collation AS c
              UNION ALL SELECT 'pg_conversion'::regclass, c.oid, c.conowner, NULL, c.connamespace FROM pg_catalog.pg_conversion AS c
              UNION ALL SELECT 'pg_ts_config'::regclass, c.oid, c.cfgowner, NULL, c.cfgnamespace FROM pg_catalog.pg_ts_config AS c
              UNION ALL SELECT 'pg_ts_dict'::regclass, d.oid, d.dictowner, NULL, d.dictnamespace FROM pg_catalog.pg_ts_dict AS d
              UNION ALL SELECT 'pg_statistic_ext'::regclass, s.oid, s.stxowner, NULL, s.stxnamespace FROM pg_catalog.pg_statistic_ext AS s
              UNION ALL SELECT 'pg_event_trigger'::regclass, e.oid, e.evtowner, NULL, NULL FROM pg_catalog.pg_event_trigger AS e
              UNION ALL SELECT 'pg_foreign_server'::regclass, s.oid, s.srvowner, s.srvacl, NULL FROM pg_catalog.pg_foreign_server AS s
              UNION ALL SELECT 'pg_namespace'::regclass, n.oid, n.nspowner, n.nspacl, n.oid FROM pg_catalog.pg_namespace AS n
             ) AS x
        WHERE x.nsp = v_schema
           OR EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                      WHERE d.classid = x.classid AND d.objid = x.objid AND d.deptype = 'e' AND d.refobjid = v_extension)
    )
    SELECT string_agg(p.problem, '; ' ORDER BY p.problem) INTO v_problems
    FROM (SELECT pg_catalog.format('%s is owned by %s', pg_catalog.pg_describe_object(o.classid, o.objid, 0),
                                   pg_catalog.pg_get_userbyid(o.owner)) AS problem
          FROM objects AS o WHERE o.owner <> v_me
          UNION ALL
          SELECT pg_catalog.format('%s grants %s%s to %s', pg_catalog.pg_describe_object(o.classid, o.objid, 0),
                                   a.privilege_type, CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END,
                                   CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END)
          FROM objects AS o, pg_catalog.aclexplode(o.acl) AS a
          WHERE a.grantee <> o.owner
            AND (a.privilege_type NOT IN ('USAGE', 'EXECUTE', 'SELECT') OR a.is_grantable)
          UNION ALL
          -- column grants: the same, but for the guard's lock rows (55_guard.sql), which
          -- every role inserts and locks (FOR UPDATE needs UPDATE on a column) only for
          -- tables it may write, as row-level security on simpg.guard_locks decides
          SELECT pg_catalog.format('column %s of %s grants %s%s to %s', t.attname, t.attrelid::regclass,
                                   a.privilege_type, CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END,
                                   CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END)
          FROM pg_catalog.pg_attribute AS t
          JOIN pg_catalog.pg_class AS c ON c.oid = t.attrelid,
               pg_catalog.aclexplode(t.attacl) AS a
          WHERE c.relnamespace = v_schema AND a.grantee <> c.relowner
            AND (a.is_grantable
                 OR a.privilege_type NOT IN ('SELECT', 'INSERT', 'UPDATE')
                 OR (a.privilege_type <> 'SELECT'
                     AND (c.relname <> 'guard_locks' OR NOT c.relrowsecurity
                          OR (a.privilege_type = 'UPDATE' AND t.attname <> 'slot'))))) AS p;
    IF v_problems IS NOT NULL THEN
        RAISE EXCEPTION 'simpg refuses to finish its install: schema simpg must belong to % alone, but %', current_user, v_problems
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'a role planted or granted these objects; a superuser should drop them, then install or update simpg again';
    END IF;
END
$$;
