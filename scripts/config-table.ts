// The README's configuration table, generated from the config schema (src/config.ts).
//   npx tsx scripts/config-table.ts                 prints the table
//   npx tsx scripts/config-table.ts --write FILE    rewrites the table between FILE's
//                                                   <!-- config-table:start --> and <!-- config-table:end --> markers
// test/config-table.test.ts fails when README.md's table differs from this one.
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigSchema } from '../src/config.js';
import { envTable, replaceTable } from '../src/env.js';

const { values, positionals } = parseArgs({ options: { write: { type: 'boolean' } }, allowPositionals: true });
const table = envTable(ConfigSchema);
const file = positionals[0];
if (values.write) {
  if (!file) throw new Error('--write needs the Markdown file to rewrite');
  const before = readFileSync(file, 'utf8');
  const after = replaceTable(before, table);
  if (after !== before) writeFileSync(file, after);
  process.stdout.write(after === before ? `${file}: the table is up to date\n` : `${file}: table rewritten\n`);
} else {
  process.stdout.write(`${table}\n`);
}
