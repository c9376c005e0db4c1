-- simpg: exact near-duplicate search with 64-bit SimHash, in pure SQL and PL/pgSQL.
-- Installed by CREATE EXTENSION simpg, or run as a plain script by `simpg install`
-- on servers whose extension directory cannot be written (managed PostgreSQL).
-- Every object is written as simpg.<name> (pgmq's scheme), so both paths give the same objects.

\echo Use "CREATE EXTENSION simpg" to load this file. \quit
