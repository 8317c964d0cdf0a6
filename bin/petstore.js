#!/usr/bin/env node
// Runs the compiled CLI (dist/ is built by `npm ci` / `npm run build`).
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';

// Node 20's V8 has no mid tier (Maglev): a function runs as baseline code until TurboFan takes it,
// which these defaults delay (67 KB of bytecode run, and 500 calls after any inline cache changes).
// Our request paths meet new object shapes often enough to keep many functions waiting: earlier
// tier-up saves 2-11 % of CPU per request on the bench (docs/performance.md). Set before the app's
// code loads, each unless the command line names it (V8 reads - and _ alike); newer lines tier up
// differently (and name these flags otherwise): left as they are.
if (process.versions.node.startsWith('20.')) {
  const given = new Set(process.execArgv.map((arg) => arg.split('=')[0].replaceAll('_', '-')));
  for (const [name, value] of [['--interrupt-budget', 16384], ['--minimum-invocations-after-ic-update', 50]]) {
    if (!given.has(name)) setFlagsFromString(`${name}=${value}`);
  }
}

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('petstore: dist/ is missing; run `npm run build` (npm ci does it for you).\n');
  process.exit(1);
}
const { run } = await import(entry.href);
await run(process.argv.slice(2));
