#!/bin/sh
# Install simpg's extension files into a PostgreSQL server's extension folder, so that
# CREATE EXTENSION simpg works there. What docker/Dockerfile runs, and what
# tests/integration/test_docker.py runs against the test servers.
#
# Usage: install-extension.sh [SQL_DIR]
#   SQL_DIR    simpg's sql/ folder (default: the one next to this script's folder)
# Environment:
#   PG_CONFIG  pg_config of the target server (default: pg_config on PATH)
#   DESTDIR    prefix for staged installs, as with make install
#
# Writes simpg.control, simpg--<version>.sql (sql/functions/*.sql joined in name
# order, byte for byte what `simpg install-extension` and `make install` write), the
# update scripts to <version> (built from sql/upgrade/), and the install and update
# scripts of earlier versions.
set -eu
LC_ALL=C  # glob order = byte order, as Python's sorted()
export LC_ALL

here=$(cd "$(dirname "$0")" && pwd)
sql_dir=${1:-$here/../sql}
pg_config=${PG_CONFIG:-pg_config}

if [ ! -f "$sql_dir/simpg.control" ]; then
    echo "install-extension.sh: no simpg.control in $sql_dir" >&2
    exit 1
fi
version=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$sql_dir/simpg.control")
if [ -z "$version" ]; then
    echo "install-extension.sh: no default_version in $sql_dir/simpg.control" >&2
    exit 1
fi
sharedir=$("$pg_config" --sharedir)
target="${DESTDIR:-}$sharedir/extension"
mkdir -p "$target"

# Join the parts as the Makefile and simpg.schema.extension_script do (plain cat, name
# order), into a temporary file first so a server never reads half a script.
tmp="$target/.simpg--$version.sql.$$"
cat "$sql_dir"/functions/*.sql > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$target/simpg--$version.sql"

# The update scripts to this version, built as the Makefile and
# simpg.schema.upgrade_script build them: psql's guard, the hand-written part in
# sql/upgrade/, then every part but the header with each function as CREATE OR REPLACE.
for hand in "$sql_dir"/upgrade/*--"$version".sql; do
    [ -e "$hand" ] || continue
    step=$(basename "$hand" .sql)
    tmp="$target/.simpg--$step.sql.$$"
    {
        printf '%s\n' '-- complain if script is sourced in psql, rather than via ALTER EXTENSION' \
            "\\echo Use \"ALTER EXTENSION simpg UPDATE TO '$version'\" to load this file. \\quit" ''
        cat "$hand"
        printf '\n'
        for part in "$sql_dir"/functions/*.sql; do
            [ "$(basename "$part")" = 00_header.sql ] || cat "$part"
        done | sed -e 's/^CREATE FUNCTION simpg\./CREATE OR REPLACE FUNCTION simpg./'
    } > "$tmp"
    chmod 644 "$tmp"
    mv "$tmp" "$target/simpg--$step.sql"
done

cp "$sql_dir/simpg.control" "$target/simpg.control"
chmod 644 "$target/simpg.control"
# the install scripts (and secondary control files) and update scripts of earlier
# versions, as released
for script in "$sql_dir"/simpg--*.sql "$sql_dir"/simpg--*.control; do
    [ -e "$script" ] || continue
    case "$(basename "$script")" in
        "simpg--$version.sql" | simpg--*--"$version".sql) continue ;;  # built above
    esac
    cp "$script" "$target/"
    chmod 644 "$target/$(basename "$script")"
done
echo "installed simpg $version extension files into $target"
