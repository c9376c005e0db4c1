-- `make installcheck` (pg_regress): simpg as installed into a running server by
-- `make install`. The thorough tests are tests/ (pytest, pgTAP); this one checks that
-- the installed extension creates, answers a lookup and a report, and drops.
CREATE EXTENSION simpg;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'simpg') AS current
FROM pg_extension WHERE extname = 'simpg';
SELECT simpg.hamming(0, -1) AS all_bits, simpg.hamming(5, 6) AS two_bits;
SELECT simpg.table_count(3, '{5}') AS tables_k3_5_blocks;
CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint NOT NULL);
INSERT INTO docs VALUES (1, 0), (2, 1), (3, 3), (4, 7), (5, -1);
SELECT indexed_table, fingerprint_column, k, levels FROM simpg.create_index('docs', 'simhash', 2, 3);
SELECT id, simhash FROM simpg.near(NULL::docs, 0, 2) ORDER BY id;
SELECT * FROM simpg.pairs('docs', 2) ORDER BY key_a, key_b;
SELECT simpg.drop_index('docs', 'simhash');
SELECT count(*) AS indexes_left FROM simpg.indexes;
DROP TABLE docs;
DROP EXTENSION simpg;
