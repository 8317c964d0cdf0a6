#!/usr/bin/env bash
# Measures two builds with one harness in one sitting, in the order A B B A, so drift during
# the run counts against neither: `bench/side-by-side.sh <before checkout> [bench args]`, e.g.
#   git worktree add ../before <commit> && (cd ../before && npm ci && npm run build)
#   bench/side-by-side.sh ../before --only list20,get-by-id,create --store postgres
# Both checkouts must be built. Each run's table is saved in bench/results/side-by-side/.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(cd "$1" && pwd); shift
after=$(pwd)
out=bench/results/side-by-side
mkdir -p "$out"
i=0
for root in "$before" "$after" "$after" "$before"; do
  i=$((i + 1))
  name=$([ "$root" = "$before" ] && echo before || echo after)
  echo "== run $i: $name ($root)"
  PETSTORE_BENCH_SERVICE_ROOT="$root" node --expose-gc --import tsx bench/run.ts "$@" | tee "$out/$i-$name.txt"
done
