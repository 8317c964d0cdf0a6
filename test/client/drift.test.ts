// No drift, ever: the client's generated types (client/src/generated/) must be exactly what
// client/scripts/generate-types.ts makes from the documents the real server serves now. Any
// change to the API's schemas fails here until `npm run generate -w client` is run and committed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { DOCUMENTS, readGenerated } from '../../client/scripts/generate-types.js';
import { sharedApp, type TestApp } from '../helpers/app.js';

const run = promisify(execFile);
const REGENERATE = 'run `npm run build && npm run generate -w client` and commit client/src/generated/';

/** The first line that differs, shown short (the files are long), or undefined when equal. */
function firstDifference(checkedIn: string, served: string): string | undefined {
  if (checkedIn === served) return undefined;
  const a = checkedIn.split('\n');
  const b = served.split('\n');
  const line = a.findIndex((text, i) => text !== b[i]);
  const at = line === -1 ? a.length : line;
  return `line ${at + 1}: checked in ${JSON.stringify(a[at] ?? '(end of file)')}, served ${JSON.stringify(b[at] ?? '(end of file)')}`;
}

describe('the client\'s generated types against the documents the real server serves', () => {
  const getApp = sharedApp();
  let app: TestApp;
  const out = mkdtempSync(path.join(os.tmpdir(), 'petstore-drift-'));
  let fresh: Map<string, string>;

  before(async () => {
    app = await getApp();
    // A file for a document the server does not serve (any more) must not survive a run.
    writeFileSync(path.join(out, 'retired.ts'), '// from an older server\n');
    // The checked-in script itself, as a developer runs it (async: the server is in this process).
    await run(process.execPath, ['--import', 'tsx', 'client/scripts/generate-types.ts', '--server', app.url, '--out', out]);
    fresh = readGenerated(out);
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  test('when the types are regenerated from the served documents, then they equal the checked-in files exactly', () => {
    const checkedIn = readGenerated(path.resolve('client/src/generated')); // from the root, as tests run
    assert.deepEqual([...checkedIn.keys()], [...fresh.keys()], `the generated files differ from the served documents: ${REGENERATE}`);
    for (const [name, contents] of fresh) {
      const difference = firstDifference(checkedIn.get(name) ?? '', contents);
      assert.equal(difference, undefined, `client/src/generated/${name} differs from the served document (${difference}): ${REGENERATE}`);
    }
  });

  test('when a document is served, then it has a file, and when it is not (404, like the example API today), then it has none', async () => {
    for (const doc of DOCUMENTS) {
      const response = await fetch(`${app.url}${doc.path}`);
      await response.arrayBuffer();
      assert.ok(response.status === 200 || (doc.optional && response.status === 404), `${doc.path}: ${response.status}`);
      assert.equal(fresh.has(doc.file), response.status === 200, `${doc.path} answered ${response.status}; ${doc.file} ${fresh.has(doc.file) ? 'was' : 'was not'} generated`);
    }
    assert.equal(fresh.has('retired.ts'), false);
  });
});
