// What `npm ci` leaves a newcomer: no EBADENGINE on a supported Node (every package the
// lockfile installs accepts the Node lines package.json supports), and `npx petstore` running
// the project's own bin at once (not a copy of the project made in npx's cache first).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
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

test('when `npx petstore --help` runs in this folder, then it runs the linked bin at once: nothing is installed into npx\'s cache', (t) => {
  const cache = mkdtempSync(path.join(os.tmpdir(), 'petstore-npx-cache-'));
  t.after(() => rmSync(cache, { recursive: true, force: true }));
  // An empty npm cache: a copy of the project (what npm 11 makes when the folder's package.json
  // declares the command as its bin) would appear under <cache>/_npx.
  const run = spawnSync('npx', ['--offline', 'petstore', '--help'], { encoding: 'utf8', env: { ...process.env, npm_config_cache: cache }, timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^Usage: petstore/);
  assert.equal(existsSync(path.join(cache, '_npx')), false, 'npx installed the project into its cache');
});
