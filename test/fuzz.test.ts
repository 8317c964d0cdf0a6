// Property-based fuzzing of every operation in the served OpenAPI document, over real HTTP.
// What is generated and what every response must satisfy: see test/helpers/fuzz.ts.
//
//   npm run fuzz  (node scripts/fuzz-long.mjs [runs])   a long run: 100 000 requests by default
//   FUZZ_SEED=1234 FUZZ_RUNS=… node scripts/test.mjs fuzz   replays a run (the seed is printed on failure)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { startApp, type StartOptions } from './helpers/app.js';
import { postgresAdminUrl, postgresBackend } from './helpers/backends.js';
import { createFuzzContext, requestPlans, runPlan, summarize } from './helpers/fuzz.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);
const POSTGRES_RUNS = Math.max(100, Math.round(RUNS / 10));
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
// Rate limits out of the way: the fuzzer sends thousands of requests with two keys, and
// thousands with wrong or missing ones from one address (the failed-authentication limit).
// A raw request the server is still waiting on is cut off (408) after 2 s rather than 10.
// No webhook worker: generated endpoint URLs name hosts on the internet, and tests send nothing there.
const env = {
  PETSTORE_RATE_LIMIT_PER_SECOND: '1000000',
  PETSTORE_RATE_LIMIT_BURST: '1000000',
  PETSTORE_AUTH_FAILURE_LIMIT_PER_SECOND: '1000000',
  PETSTORE_AUTH_FAILURE_LIMIT_BURST: '1000000',
  PETSTORE_REQUEST_TIMEOUT_MS: '2000',
  PETSTORE_WEBHOOK_WORKER: 'false',
};

async function fuzz(
  t: { after(fn: () => unknown): void; diagnostic(message: string): void },
  runs: number,
  options: StartOptions & { includeKnownBugs?: boolean },
): Promise<void> {
  const app = await startApp(t, { ...options, env: { ...env, ...options.env } });
  const ctx = await createFuzzContext(app);
  t.after(() => ctx.agent.destroy());
  const plans = requestPlans(ctx.doc, { includeKnownBugs: options.includeKnownBugs ?? false, bodyLimit: app.config.http.bodyLimit });
  const started = Date.now();
  try {
    await fc.assert(
      fc.asyncProperty(plans, (plan) => runPlan(ctx, plan)),
      { numRuns: runs, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
    // Thousands of requests with keys in Authorization (valid, revoked, other environment,
    // bad checksum, as Basic): none of them may have reached the logs.
    const logs = app.logs.join('\n');
    for (const key of Object.values(ctx.keys)) assert.equal(logs.includes(key.slice(9, 39)), false, 'no key material in the logs');
  } finally {
    t.diagnostic(`${summarize(ctx.stats)}; ${Date.now() - started} ms`);
    const labels = [...ctx.stats.byLabel.entries()].sort(([, a], [, b]) => b - a);
    t.diagnostic(`by generator (${labels.length} kinds): ${labels.slice(0, 20).map(([label, n]) => `${label}×${n}`).join(', ')}, …`);
  }
}

describe('fuzzing every operation of the OpenAPI document', () => {
  test(`when ${RUNS} generated requests (valid, boundary, mutated, garbage, raw-wire) hit the SQLite app, then none gets a 5xx or a dropped connection, every error is an Error body, every success matches the document, and nothing leaks between accounts`, { timeout: Math.max(120_000, RUNS * 50) }, async (t) => {
    await fuzz(t, RUNS, {});
  });

  test(`when ${POSTGRES_RUNS} generated requests hit the PostgreSQL app, then the same properties hold`, { skip: postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL', timeout: Math.max(120_000, POSTGRES_RUNS * 100) }, async (t) => {
    await fuzz(t, POSTGRES_RUNS, { backend: postgresBackend });
  });

  test(
    'when the generated requests include the input classes of known bugs (malformed percent-encoding, path parameters over 200 characters, an unknown Expect, no Host, CONNECT), then the same properties hold',
    {
      timeout: 120_000,
    },
    async (t) => {
      await fuzz(t, 200, { includeKnownBugs: true });
    },
  );
});
