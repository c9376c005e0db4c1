#!/bin/sh
# Entrypoint of docker/debian.Dockerfile's image: what the official postgres image's
# entrypoint does for the variables the compose file sets.
#
# On the first start (no $PGDATA/PG_VERSION): initdb with $POSTGRES_USER (default postgres)
# as the superuser and $POSTGRES_PASSWORD (required) as its password; TCP connections
# need that password (scram-sha-256), the container's own socket is trusted; then
# $POSTGRES_DB (default $POSTGRES_USER) is created and /docker-entrypoint-initdb.d/*.sql
# run in it, on a server that listens on the socket only. Every start then runs the
# server as this process (PID 1), with the command's arguments:
#   docker run ... simpg-postgres:15-debian postgres -c shared_buffers=1GB
# $PGPORT sets the port of the server and of pg_isready alike (host networking).
set -eu

if [ "${1#-}" != "$1" ]; then
    set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
    exec "$@"
fi
if [ "$(id -u)" = 0 ]; then
    echo "docker-entrypoint.sh: refusing to run the server as root (the image runs as postgres)" >&2
    exit 1
fi

: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
export PGDATA

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "docker-entrypoint.sh: POSTGRES_PASSWORD is empty: set the superuser's password" >&2
        exit 1
    fi
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256
    rm -f "$pwfile"
    # other containers and the host reach the server over TCP, with the password
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"

    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w -t 60 start
    if [ "$POSTGRES_DB" != postgres ]; then
        psql -X -q -v ON_ERROR_STOP=1 -v db="$POSTGRES_DB" -U "$POSTGRES_USER" -d postgres <<'SQL'
CREATE DATABASE :"db";
SQL
    fi
    for script in /docker-entrypoint-initdb.d/*.sql; do
        [ -e "$script" ] || continue
        echo "docker-entrypoint.sh: running $script"
        psql -X -q -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -f "$script"
    done
    pg_ctl -D "$PGDATA" -m fast -w -t 60 stop
    echo "docker-entrypoint.sh: initialised $PGDATA"
fi

exec "$@"
