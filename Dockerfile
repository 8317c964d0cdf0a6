# The Petstore API as a container image. Build, run and compose: docs/operations.md#containers.
#   docker build -t petstore-api .
#   docker run -d -p 8080:8080 -v petstore-data:/data petstore-api
# No `# syntax=` line on purpose: the builder's own Dockerfile frontend (BuildKit, Docker ≥ 20.10)
# handles the secret mount below, and a syntax image would have to be pulled from a registry.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles from source when no prebuilt binary can be downloaded.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 make g++ >/dev/null \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json client/
# Dependencies in their own layer (rebuilt only when the lockfile changes). npm_ca, optional: the
# certificate authority of a TLS-intercepting proxy between the build and the npm registry; a
# secret mount is never written to a layer. The node headers of the image (official images have
# them) spare node-gyp a download. Install scripts run only for better-sqlite3 (allowScripts).
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export npm_config_cafile=/run/secrets/npm_ca NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    if [ -d /usr/local/include/node ]; then export npm_config_nodedir=/usr/local; fi; \
    npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 \
 && npm cache clean --force
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY scripts/build-portal.mjs scripts/bundle.mjs scripts/
COPY src src
COPY client client
# Then production dependencies only; of better-sqlite3 only its compiled module and its JS; of
# dist/ what runs (the bundle bin/petstore.js loads, the portal's assets): not tsc's tree, nor
# source maps (2.3 MB; the image does not run with --enable-source-maps).
RUN npm run build && find dist -mindepth 1 -maxdepth 1 ! -name bundle ! -name portal -exec rm -rf {} + \
 && find dist -name '*.map' -delete \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/@petstore node_modules/.bin node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
 && mv node_modules/better-sqlite3/build/Release/better_sqlite3.node /tmp/ \
 && rm -rf node_modules/better-sqlite3/build && mkdir -p node_modules/better-sqlite3/build/Release \
 && mv /tmp/better_sqlite3.node node_modules/better-sqlite3/build/Release/ \
 && rm -rf node_modules/.package-lock.json \
 && find node_modules -type d -empty -delete

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    PETSTORE_DATABASE_URL=/data/petstore.db \
    PETSTORE_SHUTDOWN_TIMEOUT_MS=8000
WORKDIR /app
# Owned by root, read-only to the service's user: the code cannot be changed by the process.
COPY --from=build /app/package.json ./
COPY --from=build /app/bin bin
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/src/http/portal/pages src/http/portal/pages
# `docker exec <container> petstore …` runs the CLI on the same settings and data.
RUN ln -s /app/bin/petstore.js /usr/local/bin/petstore \
 && mkdir -p /data && chown 1000:1000 /data && chmod 700 /data
# Numeric, so that runAsNonRoot-style checks can verify it (1000 is `node` in the official images).
USER 1000:1000
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=10s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`, { signal: AbortSignal.timeout(2500) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself (petstore serve handles it: drains, exits 0).
CMD ["node", "bin/petstore.js", "serve"]
