-- simpg: exact near-duplicate search with 64-bit SimHash, in pure SQL and PL/pgSQL.
-- Installed by CREATE EXTENSION simpg, or run as a plain script by `simpg install`
-- (or `simpg sql | psql`) on servers whose extension directory cannot be written.
-- Every object is written as simpg.<name> (pgmq's scheme), so both paths give the same
-- objects. docs/security.md states the threat model this script is written for.

\echo Use "CREATE EXTENSION simpg" to load this file. \quit

-- Every name below resolves in pg_catalog (and, written out, in simpg) only: an operator
-- or function another role put in public is never bound into a body created here.
-- LOCAL: CREATE EXTENSION runs in a transaction and would keep a plain SET afterwards;
-- the plain script runs in one too (`simpg sql` prints BEGIN ... COMMIT around it).
SET LOCAL search_path = pg_catalog, pg_temp;

-- Schema simpg is made here, so that it belongs to whoever runs this script: the
-- bootstrap superuser for CREATE EXTENSION (trusted or not; it is then a member of the
-- extension), the installing role for the plain script. A schema simpg that exists
-- already is refused, since its owner could have put look-alike objects in it. The one
-- exception is the extension's own, empty schema (CREATE EXTENSION simpg SCHEMA simpg,
-- as pg_dump writes it for an install upgraded from 0.1.0, whose control file named
-- the schema): it is taken over, grants and all.
DO $$
DECLARE
    v_schema oid := pg_catalog.to_regnamespace('simpg');
    v_objects bigint;
    v_grantee oid;
BEGIN
    IF v_schema IS NULL THEN
        CREATE SCHEMA simpg;
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension AS e
                   WHERE e.extname = 'simpg' AND e.extnamespace = v_schema) THEN
        RAISE EXCEPTION 'schema simpg already exists; drop it (or rename it) and install simpg again'
            USING ERRCODE = 'duplicate_schema';
    END IF;
    SELECT (SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_type WHERE typnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_operator WHERE oprnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_opfamily WHERE opfnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_collation WHERE collnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_conversion WHERE connamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_ts_config WHERE cfgnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_ts_dict WHERE dictnamespace = v_schema)
         + (SELECT count(*) FROM pg_catalog.pg_statistic_ext WHERE stxnamespace = v_schema)
      INTO v_objects;
    IF v_objects > 0 THEN
        RAISE EXCEPTION 'schema simpg already holds % objects; simpg installs only into a new or empty schema', v_objects
            USING ERRCODE = 'duplicate_schema';
    END IF;
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
