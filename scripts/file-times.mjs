// A node:test reporter that prints the slowest test files at the end of a run (the sum of
// their top-level tests' durations): where the suite's time goes, to keep CI within budget.
/** The test's own path: scripts/test.mjs runs the files tsc compiled into .test-dist/. */
const source = (file) => file.replace(process.cwd() + '/', '').replace(/^\.test-dist\/(.*)\.js$/, '$1.ts');

export default async function* fileTimes(events) {
  const perFile = new Map();
  for await (const event of events) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0) {
      const file = event.data.file ?? '(unknown)';
      perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  const rows = [...perFile].sort((a, b) => b[1] - a[1]).slice(0, 25);
  yield `slowest test files (seconds, sum of top-level tests):\n`;
  for (const [file, ms] of rows) yield `  ${(ms / 1000).toFixed(1).padStart(7)}  ${source(file)}\n`;
}
