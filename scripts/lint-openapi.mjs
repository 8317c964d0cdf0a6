#!/usr/bin/env node
// Writes the served OpenAPI documents (the Petstore's and the example API's) to files and lints
// each with Spectral (spectral:oas).
// Usage: node scripts/lint-openapi.mjs [out.json]   (needs `npm run build` first; out.json gets the Petstore's)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-openapi-'));
const out = process.argv[2] ?? path.join(dir, 'openapi.json');
const { loadConfig } = await import('../dist/config.js');
const { buildApp } = await import('../dist/http/app.js');
const { createLogger } = await import('../dist/logger.js');
const { createStore } = await import('../dist/store/index.js');
const { createWakeups } = await import('../dist/runtime/wakeups.js');

const config = loadConfig({ ...process.env, PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), PETSTORE_LOG_LEVEL: 'silent' });
const store = await createStore(config);
await store.migrate();
const app = await buildApp({ config, store, logger: createLogger(config.logging), wakeups: createWakeups() });
const documents = [
  { url: '/v1/openapi.json', file: out },
  { url: '/example/v1/openapi.json', file: path.join(dir, 'example-openapi.json') },
];
for (const { url, file } of documents) {
  const res = await app.inject({ method: 'GET', url });
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`);
  writeFileSync(file, res.body);
}
await app.close();
await store.close();

const spectral = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'node_modules', '.bin', 'spectral');
let failed = false;
for (const { url, file } of documents) {
  console.log(`${url}:`);
  const result = spawnSync(spectral, ['lint', file, '--ruleset', '.spectral.yaml', '--fail-severity', 'warn'], { stdio: 'inherit' });
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
