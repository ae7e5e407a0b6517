# Slim, non-root image. Default command: the renderer. Precompute and workers via the command:
#   docker run IMAGE welcomemat precompute /data/campaign.yaml /data/accounts.jsonl
#   docker run IMAGE welcomemat worker
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# gcc only in the build stage, for any dependency without a wheel for this platform.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY welcomemat welcomemat
COPY precompute precompute
COPY server server
COPY outbound outbound
COPY cli cli
COPY templates templates
COPY zones zones
COPY examples examples
# Editable, at the path the runtime image uses: the renderer finds templates/ beside server/.
RUN python -m venv /opt/venv && /opt/venv/bin/pip install -e .

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 WELCOMEMAT_HOME=/var/lib/welcomemat
RUN useradd --system --uid 10001 --home-dir /app welcomemat \
    && mkdir -p /var/lib/welcomemat && chown welcomemat /var/lib/welcomemat
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app
USER welcomemat
EXPOSE 8000
CMD ["welcomemat", "serve", "--host", "0.0.0.0", "--port", "8000"]
