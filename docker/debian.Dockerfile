# PostgreSQL with the simpg extension, from a plain Debian base and Debian's own
# postgresql packages: the image to build where the official postgres image cannot be
# pulled. Same simpg steps as docker/Dockerfile (install-extension.sh, initdb/), same
# environment (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA) and data folder.
#   docker build -f docker/debian.Dockerfile -t simpg-postgres:15-debian .
#   podman build --format docker -f docker/debian.Dockerfile -t simpg-postgres:15-debian .
# BASE is any Debian bookworm image: debian:bookworm-slim, or one made with
# `debootstrap --variant=minbase bookworm` and `podman import` (tests/integration/test_container.py).
# PG_MAJOR is a postgresql-N package of that Debian release (bookworm: 15).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
ARG PG_MAJOR=15

# The postgres user with the official image's uid and gid (999), so that a data volume
# moves between the two images. Debian's postgresql-common would make a cluster "main"
# on install: the entrypoint makes the image's own in $PGDATA on first start instead, as
# the official image does. (Versions are not pinned: the release's updates are wanted.)
# hadolint ignore=DL3008
RUN groupadd --system --gid 999 postgres \
    && useradd --system --gid postgres --uid 999 --home-dir /var/lib/postgresql --shell /bin/bash postgres \
    && mkdir -p /etc/postgresql-common/createcluster.d \
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/simpg.conf \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "postgresql-${PG_MAJOR}" \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/run/postgresql /var/lib/postgresql/data /docker-entrypoint-initdb.d \
    && chown postgres:postgres /var/run/postgresql /var/lib/postgresql/data \
    && chmod 3777 /var/run/postgresql \
    && chmod 700 /var/lib/postgresql/data
ENV PATH=/usr/lib/postgresql/${PG_MAJOR}/bin:$PATH \
    PGDATA=/var/lib/postgresql/data

COPY sql/ /tmp/simpg/sql/
COPY docker/install-extension.sh /tmp/simpg/install-extension.sh
RUN sh /tmp/simpg/install-extension.sh /tmp/simpg/sql \
    && rm -rf /tmp/simpg

# CREATE EXTENSION simpg in $POSTGRES_DB on first start
COPY docker/initdb/10-simpg.sql /docker-entrypoint-initdb.d/10-simpg.sql

COPY docker/debian-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
# the server never runs as root (999 = postgres, made above)
USER 999:999
VOLUME /var/lib/postgresql/data
EXPOSE 5432
# fast shutdown: SIGTERM would wait for every client to disconnect
STOPSIGNAL SIGINT
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=12 \
    CMD ["sh", "-c", "pg_isready -U \"${POSTGRES_USER:-postgres}\" -d \"${POSTGRES_DB:-postgres}\""]
ENTRYPOINT ["sh", "/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
