#!/usr/bin/env node
// Writes the served OpenAPI document to a file and lints it with Spectral (spectral:oas).
// Usage: node scripts/lint-openapi.mjs [out.json]   (needs `npm run build` first)
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

const config = loadConfig({ ...process.env, PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), PETSTORE_LOG_LEVEL: 'silent' });
const store = await createStore(config);
await store.migrate();
const app = await buildApp({ config, store, logger: createLogger(config) });
const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
writeFileSync(out, res.body);
await app.close();
await store.close();

const spectral = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'node_modules', '.bin', 'spectral');
const result = spawnSync(spectral, ['lint', out, '--ruleset', '.spectral.yaml', '--fail-severity', 'warn'], { stdio: 'inherit' });
process.exit(result.status ?? 1);
