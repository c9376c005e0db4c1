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
