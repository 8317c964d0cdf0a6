#!/usr/bin/env node
// Runs the compiled CLI (dist/ is built by `npm ci` / `npm run build`).
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';

// Node 20's V8 has no mid tier (Maglev): a function runs as baseline code until TurboFan takes it,
// which these defaults delay (67 KB of bytecode run, and 500 calls after any inline cache changes).
// Our request paths meet new object shapes often enough to keep many functions waiting: earlier
// tier-up saves 6-17 % of CPU per request (docs/performance.md). Set before the app's code loads;
// newer lines tier up differently (and name these flags otherwise): left as they are.
const tuned = ['--interrupt-budget=16384', '--minimum-invocations-after-ic-update=50'];
if (process.versions.node.startsWith('20.') && !process.execArgv.some((arg) => tuned.some((flag) => arg.startsWith(flag.split('=')[0])))) {
  for (const flag of tuned) setFlagsFromString(flag);
}

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('petstore: dist/ is missing; run `npm run build` (npm ci does it for you).\n');
  process.exit(1);
}
const { run } = await import(entry.href);
await run(process.argv.slice(2));
