# The simpg Python package with the Alembic migrations and the example web app:
# one image for the compose file's `migrate` (one-shot) and `app` services.
#   docker build -f docker/app.Dockerfile -t simpg-app .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY sql/ sql/
COPY simpg/ simpg/
RUN pip install --no-cache-dir . \
    && useradd --create-home --uid 10001 simpg
COPY migrations/ migrations/
COPY examples/ examples/

USER 10001
EXPOSE 8000
CMD ["python", "-m", "examples.webapp"]
