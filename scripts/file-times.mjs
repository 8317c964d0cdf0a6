// A node:test reporter that prints the slowest test files at the end of a run (the sum of
// their top-level tests' durations): where the suite's time goes, to keep CI within budget.
// With PETSTORE_TEST_DURATIONS_OUT set, it also merges every file's seconds into that JSON file
// (scripts/test-durations.json is the committed one: scripts/test.mjs starts the longest first).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

function record(out, perFile) {
  const table = existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : {};
  for (const [file, ms] of perFile) table[file.replace(process.cwd() + '/', '')] = Math.round(ms / 100) / 10;
  const sorted = Object.fromEntries(Object.entries(table).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(out, `${JSON.stringify(sorted, null, 2)}\n`);
}

export default async function* fileTimes(source) {
  const perFile = new Map();
  for await (const event of source) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0) {
      const file = event.data.file ?? '(unknown)';
      perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  if (process.env.PETSTORE_TEST_DURATIONS_OUT) record(process.env.PETSTORE_TEST_DURATIONS_OUT, perFile);
  const rows = [...perFile].sort((a, b) => b[1] - a[1]).slice(0, 25);
  yield `slowest test files (seconds, sum of top-level tests):\n`;
  for (const [file, ms] of rows) yield `  ${(ms / 1000).toFixed(1).padStart(7)}  ${file.replace(process.cwd() + '/', '')}\n`;
}
