#!/usr/bin/env node
// A long property-based fuzzing run of every operation in the OpenAPI document
// (test/fuzz.test.ts): `npm run fuzz`, or `node scripts/fuzz-long.mjs [runs]`.
// Defaults to 100 000 requests against SQLite, and a tenth of that against PostgreSQL when
// PETSTORE_TEST_POSTGRES_URL is set. FUZZ_SEED=<n> replays a failing run (the seed is printed).
import { spawnSync } from 'node:child_process';

const runs = process.argv[2] ?? process.env.FUZZ_RUNS ?? '100000';
if (!/^[1-9][0-9]*$/.test(runs)) {
  console.error(`usage: node scripts/fuzz-long.mjs [runs]   (got "${runs}")`);
  process.exit(2);
}
const started = Date.now();
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', 'test/fuzz.test.ts'], {
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: runs, PETSTORE_LOG_LEVEL: process.env.PETSTORE_LOG_LEVEL ?? 'silent' },
});
console.log(`fuzz: ${runs} runs in ${((Date.now() - started) / 1000).toFixed(1)} s, exit ${result.status}`);
process.exit(result.status ?? 1);
