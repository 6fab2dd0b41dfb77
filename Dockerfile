# syntax=docker/dockerfile:1
# The docs-admin worker image (docker-compose.yml also runs the CLI starter from it), and, as targets of
# their own, the stand-ins that never ship in the worker image: `emulator` (the admin API emulator) and
# `sso-provider` (the OpenID provider of docker-compose.sso.yml, standing in for a company's IdP).
# `npm run worker` runs src/worker.ts through tsx; here the same modules are compiled by tsc to
# dist/src/ so the runtime image needs no dev dependencies and no TypeScript at start-up. The worker
# still bundles src/workflows (compiled) with Temporal's bundler when it starts.
# Node 24 LTS at the version CI tests (`npm run test:node24`, scripts/node24.ts NODE24.version): move both
# together. A tag, not a digest: Docker Hub rebuilds a tag for Debian fixes, and a digest pinned without
# checking it against the registry would pin nothing anyone verified.
ARG NODE_IMAGE=node:24.22.3-slim

# ---- build: full install, type-check and compile ---------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npx tsc -p tsconfig.json --noEmit false --outDir dist --rootDir . --sourceMap

# ---- prod-deps: runtime dependencies only ------------------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# ---- emulator-build: the admin API emulator alone (emulator/, the API types and the small-server kit) ---
FROM ${NODE_IMAGE} AS emulator-build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.emulator.json ./
COPY emulator ./emulator
COPY src/api/types.ts ./src/api/types.ts
COPY src/shared/agent-job-record.ts ./src/shared/agent-job-record.ts
COPY src/process/small-server.ts ./src/process/small-server.ts
RUN npx tsc -p tsconfig.emulator.json

# ---- emulator: `npm run emulator` compiled (the emulator profile of docker-compose.yml) -----------------
# Node built-ins only: no node_modules in this image.
FROM ${NODE_IMAGE} AS emulator
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY --from=emulator-build /app/dist ./dist
USER node
EXPOSE 4010
CMD ["node", "dist/emulator/main.js"]

# ---- tools-build: what runs beside the worker, compiled alone: the stand-in OpenID provider (sso-provider/)
# and the one-shot secrets job of docker-compose.yml (deploy/secrets/), with the src/ modules they import.
FROM ${NODE_IMAGE} AS tools-build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.tools.json ./
COPY src ./src
COPY sso-provider ./sso-provider
COPY deploy/secrets ./deploy/secrets
RUN npx tsc -p tsconfig.tools.json

# ---- sso-provider: `npm run sso-provider` compiled (docker-compose.yml's sso-provider) -----------------------
FROM ${NODE_IMAGE} AS sso-provider
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=tools-build /app/dist ./dist
COPY package.json ./
# The signing key's folder (a volume in docker-compose.yml), owned by the runtime user.
RUN mkdir -p /var/lib/docs-admin && chown node:node /var/lib/docs-admin
USER node
EXPOSE 8636
CMD ["node", "dist/sso-provider/main.js"]

# ---- secrets: the one-shot `secrets-init` of docker-compose.yml (deploy/secrets/compose-secrets.ts) -------
# openssl makes the deployment's CA and certificates as `npm run cluster -- --tls` does. It runs as root to
# give each service's folder to the services' user (uid 1000); nothing else runs on this image.
FROM ${NODE_IMAGE} AS secrets
RUN apt-get update && apt-get install -y --no-install-recommends openssl && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=tools-build /app/dist ./dist
COPY package.json ./
CMD ["node", "dist/deploy/secrets/compose-secrets.js", "/run/docs-admin/all-secrets"]

# ---- runtime -----------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    METRICS_PORT=9464
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# Where config-file and mirror sinks write (a volume in docker-compose.yml), owned by the runtime user.
RUN mkdir -p /var/lib/docs-admin && chown node:node /var/lib/docs-admin
USER node
EXPOSE 9464

# Healthy once the worker is connected and its Prometheus endpoint answers (it starts after
# Worker.create succeeds). METRICS_PORT=0 disables the endpoint, and with it this check.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const p = process.env.METRICS_PORT || '9464'; if (p === '0') process.exit(0); fetch('http://127.0.0.1:' + p + '/metrics').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# ADMIN_API_KEY_FILE (a Docker or Kubernetes secret) is read by the worker itself, again whenever it
# changes, so the key never sits in the container's environment (`docker inspect`) and a rotated secret
# is used without a restart. exec form: node gets the signals (run with --init / init: true).
# = `npm run worker` (tsx src/worker.ts), compiled.
CMD ["node", "dist/src/worker.js"]
