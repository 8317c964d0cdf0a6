// What `npm ci` leaves a newcomer: no EBADENGINE on a supported Node (every package the
// lockfile installs accepts the Node lines package.json supports), and `npx petstore` running
// the project's own bin at once (not a copy of the project made in npx's cache first).
import assert from 'node:assert/strict';
import { realpathSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import semver from 'semver';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> };
const ours = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;

test('when the lockfile is read, then every package accepts the running Node and each supported line (no EBADENGINE on npm ci)', () => {
  const lines = [process.versions.node, '20.19.0', '22.12.0', '24.0.0'].filter((version) => semver.satisfies(version, ours));
  assert.ok(lines.includes(process.versions.node), `package.json's engines (${ours}) accept the running Node ${process.versions.node}`);
  const refused = Object.entries(lock.packages).flatMap(([name, { engines }]) =>
    lines.filter((version) => engines?.node !== undefined && !semver.satisfies(version, engines.node)).map((version) => `${name || '(root)'} needs node ${engines!.node}, not ${version}`),
  );
  assert.deepEqual(refused, []);
});

test('when npm ci has run, then node_modules/.bin/petstore is the project\'s own bin (npx finds it without copying the project)', () => {
  assert.equal(realpathSync(path.join('node_modules', '.bin', 'petstore')), realpathSync(path.join('bin', 'petstore.js')));
});
