#!/usr/bin/env bash
# Measures two builds with one harness in one sitting, in the order A B B A, so drift during
# the run counts against neither: `bench/side-by-side.sh <before checkout> [bench args]`, e.g.
#   git worktree add ../before <commit> && (cd ../before && npm ci && npm run build)
#   bench/side-by-side.sh ../before --only list20,get-by-id,create --store postgres
# ROUNDS=3 repeats the order three times; AFTER=<checkout> measures another build than this
# one as "after" (the harness is always this checkout's); RESTRICTED=pets:read,pets:write also
# measures the after build with keys restricted to those scopes, in the order before, after,
# restricted, restricted, after, before. Both checkouts must be built. Each run's table is saved
# in bench/results/side-by-side/; `node bench/side-by-side-summary.mjs` sums them up.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(cd "$1" && pwd); shift
after=$(cd "${AFTER:-.}" && pwd)
out=bench/results/side-by-side
rm -rf "$out" && mkdir -p "$out"
order=(before after after before)
[ -n "${RESTRICTED:-}" ] && order=(before after after-restricted after-restricted after before)
i=0
for _ in $(seq 1 "${ROUNDS:-1}"); do
  for name in "${order[@]}"; do
    i=$((i + 1))
    root=$([ "$name" = before ] && echo "$before" || echo "$after")
    scopes=$([ "$name" = after-restricted ] && echo "$RESTRICTED" || echo "")
    echo "== run $i: $name ($root${scopes:+, keys restricted to $scopes})"
    PETSTORE_BENCH_KEY_SCOPES="$scopes" PETSTORE_BENCH_SERVICE_ROOT="$root" node --expose-gc --import tsx bench/run.ts "$@" | tee "$out/$i-$name.txt"
  done
done
