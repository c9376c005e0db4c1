-- simpg: exact near-duplicate search with 64-bit SimHash, in pure SQL and PL/pgSQL.
-- Installed by CREATE EXTENSION simpg, or run as a plain script by `simpg install`
-- on servers whose extension directory cannot be written (managed PostgreSQL).
-- Every object is written as simpg.<name> (pgmq's scheme), so both paths give the same objects.

\echo Use "CREATE EXTENSION simpg" to load this file. \quit

-- Refuse a schema simpg that another (non-superuser) role made first: its owner could
-- add look-alike functions there. session_user: a trusted CREATE EXTENSION runs this
-- script as the bootstrap superuser, for the calling role.
DO $$
DECLARE
    v_owner name;
BEGIN
    SELECT r.rolname INTO v_owner
    FROM pg_catalog.pg_namespace AS n JOIN pg_catalog.pg_roles AS r ON r.oid = n.nspowner
    WHERE n.nspname = 'simpg' AND r.rolname NOT IN (current_user, session_user) AND NOT r.rolsuper;
    IF FOUND THEN
        RAISE EXCEPTION 'schema simpg already exists and belongs to role %; drop it, or install simpg as that role', v_owner
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
