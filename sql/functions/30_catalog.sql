-- catalog

CREATE TABLE simpg.indexes (
    indexed_table regclass NOT NULL,
    fingerprint_column name NOT NULL,
    k integer NOT NULL CHECK (k BETWEEN 0 AND 16),
    levels integer[] NOT NULL,
    prefix_columns name[] NOT NULL,
    index_names name[] NOT NULL,
    fingerprint_config text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (indexed_table, fingerprint_column),
    CHECK (cardinality(prefix_columns) = cardinality(index_names))
);

COMMENT ON TABLE simpg.indexes IS
    'One row per fingerprint column indexed by simpg: its layout and the objects simpg created';

-- pg_dump keeps the rows of a config table. Only an extension script may mark one,
-- so the plain-script install (no pg_extension row) skips this.
SELECT pg_catalog.pg_extension_config_dump('simpg.indexes', '')
WHERE EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'simpg');

CREATE FUNCTION simpg.owns(rel regclass) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN (SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE')
            FROM pg_catalog.pg_class AS c WHERE c.oid = rel);

COMMENT ON FUNCTION simpg.owns(regclass) IS 'Whether the current role owns (or is a member of the owner of) rel';

-- Everyone may read the catalog; only a table's owner may change its rows.
ALTER TABLE simpg.indexes ENABLE ROW LEVEL SECURITY;
CREATE POLICY indexes_read ON simpg.indexes FOR SELECT USING (true);
CREATE POLICY indexes_insert ON simpg.indexes FOR INSERT WITH CHECK (simpg.owns(indexed_table));
CREATE POLICY indexes_update ON simpg.indexes FOR UPDATE
    USING (simpg.owns(indexed_table)) WITH CHECK (simpg.owns(indexed_table));
CREATE POLICY indexes_delete ON simpg.indexes FOR DELETE USING (simpg.owns(indexed_table));
GRANT USAGE ON SCHEMA simpg TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON simpg.indexes TO PUBLIC;

-- forget_dropped: when a table with a simpg index, its fingerprint column or one of its
-- prefix columns is dropped, the catalog row goes too (no dangling rows).
-- SECURITY DEFINER on purpose, the one exception: after the drop, simpg.owns() cannot
-- see the table any more, so the dropping role's own rights could not pass the RLS
-- policy. It deletes only rows whose objects no longer exist.
CREATE FUNCTION simpg.forget_dropped() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM simpg.indexes AS i
    WHERE i.indexed_table::oid IN (
            SELECT d.objid FROM pg_event_trigger_dropped_objects() AS d
            WHERE d.classid = 'pg_class'::regclass)
      AND (NOT EXISTS (SELECT FROM pg_class AS c WHERE c.oid = i.indexed_table::oid)
           OR EXISTS (SELECT FROM unnest(i.prefix_columns || i.fingerprint_column) AS col
                      WHERE NOT EXISTS (SELECT FROM pg_attribute AS a
                                        WHERE a.attrelid = i.indexed_table::oid
                                          AND a.attname = col AND NOT a.attisdropped)));
END
$$;

COMMENT ON FUNCTION simpg.forget_dropped() IS
    'Event trigger: remove simpg.indexes rows whose table or columns were dropped';

-- Event triggers need a superuser: CREATE EXTENSION runs this as one (also when trusted);
-- a plain install by a non-superuser goes without, and simpg ignores rows of dropped tables.
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        CREATE EVENT TRIGGER simpg_forget_dropped ON sql_drop
            EXECUTE FUNCTION simpg.forget_dropped();
    END IF;
END
$$;
