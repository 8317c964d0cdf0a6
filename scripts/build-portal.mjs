#!/usr/bin/env node
// Part of `npm run build`: puts every file the developer portal serves under /docs/assets/
// into dist/portal/assets, each with .br and .gz beside it. @fastify/static serves the
// compressed copy the client accepts, so no request pays for compression at run time.
// Sources: Swagger UI's bundle and stylesheet (swagger-ui-dist) and src/http/portal/assets.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = path.join(root, 'dist', 'portal', 'assets');
const swaggerUi = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const own = path.join(root, 'src', 'http', 'portal', 'assets');

const sources = [
  ...['swagger-ui-bundle.js', 'swagger-ui-bundle.js.LICENSE.txt', 'swagger-ui.css'].map((name) => path.join(swaggerUi, name)),
  ...readdirSync(own).map((name) => path.join(own, name)),
];

mkdirSync(out, { recursive: true });
for (const source of sources) {
  const target = path.join(out, path.basename(source));
  const bytes = readFileSync(source);
  // Brotli at quality 11 takes seconds for the bundle: skip files that have not changed.
  const unchanged = existsSync(target) && readFileSync(target).equals(bytes) && existsSync(`${target}.br`) && existsSync(`${target}.gz`);
  if (unchanged) continue;
  copyFileSync(source, target);
  writeFileSync(`${target}.br`, brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }));
  writeFileSync(`${target}.gz`, gzipSync(bytes, { level: 9 }));
}
