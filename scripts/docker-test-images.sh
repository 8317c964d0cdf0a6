#!/usr/bin/env bash
# The images test/container.test.ts runs: the stand-in base images (scripts/docker-standins.sh)
# and this checkout's Dockerfile built on the Node stand-in, tagged $1 (default petstore-api:test).
# .ci/run starts it in the background while `npm ci` runs; the test runs it again and, waiting on
# the same lock, finds everything built (Docker's build cache). Prints KEY=value lines: NODE_IMAGE,
# POSTGRES_IMAGE, REDIS_IMAGE, HAPROXY_IMAGE, PETSTORE_IMAGE.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-$(command -v /usr/bin/docker || command -v docker)}
export DOCKER_BUILDKIT=1
tag=${1:-petstore-api:test}

standins=$(bash scripts/docker-standins.sh)
echo "$standins"
node_image=$(echo "$standins" | sed -n 's/^NODE_IMAGE=//p')

# The npm registry may sit behind a TLS proxy whose authority only this machine trusts.
cafile=$(npm config get cafile 2>/dev/null || true)
secret=()
if [ -n "$cafile" ] && [ -f "$cafile" ]; then secret=(--secret "id=npm_ca,src=$cafile"); fi

exec 9>/tmp/petstore-docker-standins.lock
flock 9
started=$SECONDS
"$DOCKER" build -q --build-arg "NODE_IMAGE=$node_image" "${secret[@]}" -t "$tag" . >/dev/null 2>"${TMPDIR:-/tmp}/petstore-docker-build.$$.log" \
  || { tail -40 "${TMPDIR:-/tmp}/petstore-docker-build.$$.log" >&2; rm -f "${TMPDIR:-/tmp}/petstore-docker-build.$$.log"; exit 1; }
rm -f "${TMPDIR:-/tmp}/petstore-docker-build.$$.log"
echo "docker-test-images: built $tag in $((SECONDS - started)) s" >&2
echo "PETSTORE_IMAGE=$tag"
