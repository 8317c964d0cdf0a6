#!/usr/bin/env node
// Runs the bundled CLI (dist/bundle/, built by `npm ci` / `npm run build`).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/bundle/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('petstore: dist/ is missing; run `npm run build` (npm ci does it for you).\n');
  process.exit(1);
}
const { run } = await import(entry.href);
await run(process.argv.slice(2));
