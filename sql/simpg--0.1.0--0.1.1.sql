-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION simpg UPDATE TO '0.1.1'" to load this file. \quit

-- SEE CHANGELOG.md. 0.1.1 changes no objects; this script exists so that
-- ALTER EXTENSION simpg UPDATE is exercised from the first release on.
