#!/usr/bin/env bash
# Instructions per request (valgrind's callgrind), for two builds: a count, not a time, so other
# work on the machine does not move it (timed ratios do by ±20 % on a shared 2-core VM).
#   bench/instructions.sh <before checkout> [after checkout (default: this one)]
# Each build serves a fresh SQLite file under callgrind; after a warm-up (JIT tiers settle), the
# counters are zeroed, N requests are sent at one connection, and the counters dumped: three
# repeats per scenario. Both checkouts must be built.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(cd "$1" && pwd)
after=$(cd "${2:-.}" && pwd)
AUTOCANNON=$(pwd)/node_modules/.bin/autocannon
WARMUP=${WARMUP:-15000}
work=$(mktemp -d /tmp/petstore-instructions-XXXXXX)
port=18556
trap 'pkill -f "callgrind-out-file=$work" 2>/dev/null || true' EXIT

# Instructions counted while "$@" runs, for server $pid.
counted() {
  local pid=$1; shift
  callgrind_control -z "$pid" >/dev/null 2>&1
  "$@" >/dev/null 2>&1
  callgrind_control -d "$pid" >/dev/null 2>&1
  grep -h '^summary:' "$(ls -t "$work"/out."$pid".* | head -1)" | awk '{print $2}'
}

for root in "$before" "$after"; do
  name=$([ "$root" = "$before" ] && echo before || echo after)
  db="$work/$name.db"
  export PETSTORE_DATABASE_URL=$db PETSTORE_LOG_LEVEL=warn
  account=$(node "$root/bin/petstore.js" accounts create --name bench --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).id')
  key=$(node "$root/bin/petstore.js" keys create --account "$account" --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).key')
  PORT=$port valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" node "$root/bin/petstore.js" serve >"$work/$name.log" 2>&1 &
  for _ in $(seq 1 180); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 1; done
  pid=$(pgrep -f "callgrind-out-file=$work/out" | head -1)
  auth=(-H "Authorization: Bearer $key")
  url=http://127.0.0.1:$port
  create=(-m POST -H 'content-type: application/json' -b '{"name":"Rex","categoryId":1,"status":"available"}')
  "$AUTOCANNON" -c 1 -a 200 "${auth[@]}" "${create[@]}" "$url/v1/pets" >/dev/null 2>&1
  "$AUTOCANNON" -c 1 -a "$WARMUP" "${auth[@]}" "$url/v1/pets?limit=20" >/dev/null 2>&1
  "$AUTOCANNON" -c 1 -a "$WARMUP" "${auth[@]}" "$url/v1/pets/7" >/dev/null 2>&1
  "$AUTOCANNON" -c 1 -a 2000 "${auth[@]}" "${create[@]}" "$url/v1/pets" >/dev/null 2>&1
  for i in 1 2 3; do
    echo "$name list20 $(( $(counted "$pid" "$AUTOCANNON" -c 1 -a 1000 "${auth[@]}" "$url/v1/pets?limit=20") / 1000 ))"
    echo "$name get-by-id $(( $(counted "$pid" "$AUTOCANNON" -c 1 -a 1000 "${auth[@]}" "$url/v1/pets/7") / 1000 ))"
    echo "$name create $(( $(counted "$pid" "$AUTOCANNON" -c 1 -a 500 "${auth[@]}" "${create[@]}" "$url/v1/pets") / 500 ))"
  done
  kill "$pid"; wait 2>/dev/null || true
done | tee "$work/results.txt"
echo "instructions per request; raw files in $work"
