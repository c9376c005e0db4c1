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
# order, byte for byte what `simpg install-extension` and `make install` write),
# every upgrade script and the install scripts of earlier versions.
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

cp "$sql_dir/simpg.control" "$target/simpg.control"
chmod 644 "$target/simpg.control"
# upgrade scripts, and the install scripts (and secondary control files) of earlier
# versions as released
for script in "$sql_dir"/simpg--*.sql "$sql_dir"/simpg--*.control; do
    [ -e "$script" ] || continue
    [ "$(basename "$script")" = "simpg--$version.sql" ] && continue  # made above, from the parts
    cp "$script" "$target/"
    chmod 644 "$target/$(basename "$script")"
done
echo "installed simpg $version extension files into $target"
