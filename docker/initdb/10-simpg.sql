-- Run once by the postgres image's entrypoint, in $POSTGRES_DB, when the data folder is
-- first initialised. Migrations (op.install_simpg()) find simpg already there.
CREATE EXTENSION IF NOT EXISTS simpg;
