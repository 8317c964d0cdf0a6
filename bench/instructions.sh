#!/usr/bin/env bash
# Instructions per request (valgrind's callgrind), for two builds: a count, not a time, so other
# work on the machine does not move it (timed ratios do by ±20 % on a shared 2-core VM).
#   bench/instructions.sh <before checkout> [after checkout (default: this one)]
# STORE=postgres serves a fresh PostgreSQL database (PETSTORE_TEST_POSTGRES_URL's server)
# instead; RESTRICTED=pets:read,pets:write measures the after build a second time with a key
# restricted to those scopes (the scope check counted too).
# Each build serves a fresh SQLite file or database under callgrind; after a warm-up (JIT tiers
# settle), the counters are zeroed, N requests are sent one at a time (bench/requests.mjs), and
# the counters dumped: three repeats per scenario. Both checkouts must be built.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(cd "$1" && pwd)
after=$(cd "${2:-.}" && pwd)
REQUESTS=$(pwd)/bench/requests.mjs
WARMUP=${WARMUP:-15000}
work=$(mktemp -d /tmp/petstore-instructions-XXXXXX)
port=$((18000 + RANDOM % 2000)) # two of these may run at once
trap 'pkill -f "callgrind-out-file=$work" 2>/dev/null || true' EXIT

# Instructions counted while "$@" runs, for server $pid.
counted() {
  local pid=$1; shift
  callgrind_control -z "$pid" >/dev/null 2>&1
  "$@" >/dev/null || echo "requests failed: $*" >&2
  callgrind_control -d "$pid" >/dev/null 2>&1
  grep -h '^summary:' "$(ls -t "$work"/out."$pid".* | head -1)" | awk '{print $2}'
}

pg_admin=${PETSTORE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
runs=("before:$before:" "after:$after:")
[ -n "${RESTRICTED:-}" ] && runs+=("after-restricted:$after:$RESTRICTED")
for run in "${runs[@]}"; do
  IFS=: read -r name root scopes <<<"$run"
  if [ "${STORE:-sqlite}" = postgres ]; then
    database=petstore_instructions_$(date +%s%N)
    psql -q "$pg_admin" -c "CREATE DATABASE $database"
    db="${pg_admin%/*}/$database"
  else
    db="$work/$name.db"
  fi
  # Under callgrind a connection takes far longer to open than the default 2 s allows.
  export PETSTORE_DATABASE_URL=$db PETSTORE_LOG_LEVEL=warn PETSTORE_PG_CONNECT_TIMEOUT_MS=120000 \
    PETSTORE_RATE_LIMIT_PER_SECOND=1000000 PETSTORE_RATE_LIMIT_BURST=1000000
  node "$root/bin/petstore.js" migrate >/dev/null
  account=$(node "$root/bin/petstore.js" accounts create --name bench --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).id')
  key=$(node "$root/bin/petstore.js" keys create --account "$account" ${scopes:+--scopes "$scopes"} --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).key')
  PORT=$port valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" node "$root/bin/petstore.js" serve >"$work/$name.log" 2>&1 &
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 1; done
  pid=$(pgrep -f "callgrind-out-file=$work/out" | head -1)
  url=http://127.0.0.1:$port
  send() { node "$REQUESTS" "$url" "$key" "$@"; }
  send create 200
  for scenario in list20 get-by-id inventory; do send "$scenario" "$WARMUP"; done
  send create 2000
  send patch 2000
  for i in 1 2 3; do
    for scenario in list20 get-by-id inventory; do echo "$name $scenario $(( $(counted "$pid" send "$scenario" 1000) / 1000 ))"; done
    for scenario in create patch; do echo "$name $scenario $(( $(counted "$pid" send "$scenario" 500) / 500 ))"; done
  done
  kill "$pid"; wait 2>/dev/null || true
  if [ "${STORE:-sqlite}" = postgres ]; then psql -q "$pg_admin" -c "DROP DATABASE $database WITH (FORCE)"; fi
done | tee "$work/results.txt"
echo "instructions per request; raw files in $work"
