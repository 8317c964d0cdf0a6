#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test (Node 20's runner takes no globs), compiled first
// by tsc into .test-dist/ (incremental: seconds when little changed): a file loaded through tsx's
// hooks cost ~0.8 s more CPU, paid by each of the ~115 test processes (docs/performance.md).
// Extra arguments filter files by path substring: `npm test -- idempotency http/auth`.
// To filter by test name instead: `node --import tsx --test --test-name-pattern="cursor" test/http/pets.test.ts`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return find(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const filters = process.argv.slice(2);
const files = find('test')
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(', ')}`);
  process.exit(1);
}
// Suites that build whole clusters (Patroni, containers) run after the others, one at a time:
// beside them on two cores, the others' processes miss their start-up timeouts.
const ALONE = ['test/failover.test.ts', 'test/container.test.ts'];
const posix = (file) => file.split(path.sep).join('/');
const alone = files.filter((file) => ALONE.includes(posix(file)));
// Longest first (the file-times reporter's list from CI): with four files at once, a long one
// that starts among the last stretches the run's tail while the other slots sit idle.
const SLOW_FIRST = [
  'test/load-balancer.test.ts', 'test/cli.test.ts', 'test/tracing.test.ts', 'test/webhooks-crash.test.ts',
  'test/shutdown.test.ts', 'test/idempotency.test.ts', 'test/key-handling.test.ts', 'test/portal/newcomer.test.ts',
  'test/pet-changes-cache.test.ts', 'test/portal/browser.test.ts', 'test/portal/layout.test.ts', 'test/store-contract.test.ts',
  'test/workers.test.ts', 'test/client/retries.test.ts', 'test/http/pets.test.ts', 'test/webhooks/sealed-secrets.test.ts',
];
const rank = (file) => {
  const index = SLOW_FIRST.indexOf(posix(file));
  return index === -1 ? SLOW_FIRST.length : index;
};
const together = files.filter((file) => !alone.includes(file)).sort((a, b) => rank(a) - rank(b));

const OUT = '.test-dist';
const compiled = (file) => path.join(OUT, file.replace(/\.ts$/, '.js'));

function compile() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  // Type errors do not stop the run (as under tsx): `npm run typecheck` reports them.
  spawnSync(process.execPath, [tsc, '-p', 'tsconfig.test.json'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

function run(list, concurrency) {
  if (list.length === 0) return 0;
  const result = spawnSync(
    process.execPath,
    [
      '--enable-source-maps', '--test', `--test-concurrency=${concurrency}`,
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=./scripts/file-times.mjs', '--test-reporter-destination=stderr',
      ...list.map(compiled),
    ],
    { stdio: 'inherit', env: { ...process.env, PETSTORE_LOG_LEVEL: process.env.PETSTORE_LOG_LEVEL ?? 'silent' } },
  );
  return result.status ?? 1;
}

compile();
const first = run(together, process.env.TEST_CONCURRENCY ?? '4');
const then = run(alone, '1');
process.exit(first || then);
