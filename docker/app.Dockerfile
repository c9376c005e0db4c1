# The simpg Python package (with the example app's Flask), the Alembic migrations and
# the example web app: one image for the compose file's `migrate` (one-shot) and `app`
# services. Debian's python3 in a virtual environment, the packages from PyPI.
#   docker build -f docker/app.Dockerfile -t simpg-app .
# BASE is any Debian bookworm image (as for docker/debian.Dockerfile).
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/simpg \
    && useradd --create-home --uid 10001 simpg
ENV PATH=/opt/simpg/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY sql/ sql/
COPY simpg/ simpg/
# this checkout, with the dependency ranges of its pyproject.toml. Behind a proxy that
# re-signs TLS, pip needs its CA: mount it into the build and name it, e.g.
#   podman build --volume /etc/ssl/certs/ca-certificates.crt:/run/ca.crt:ro --build-arg PIP_CERT=/run/ca.crt ...
ARG PIP_CERT
# hadolint ignore=DL3013
RUN pip install --no-cache-dir ".[examples]"
COPY migrations/ migrations/
COPY examples/ examples/

USER 10001
EXPOSE 8000
# examples/webapp/app.py's create_app(), on all interfaces (a container's port is its only door)
CMD ["flask", "--app", "examples/webapp/app.py", "run", "--host", "0.0.0.0", "--port", "8000"]
