import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { cli, cliJson, startServerProcess } from './helpers/process.js';
import { migrations } from '../src/store/migrations/index.js';

function tempDb(t: { after(fn: () => void): void }): Record<string, string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { PETSTORE_DATABASE_URL: path.join(dir, 'nested', 'petstore.db') };
}

type Key = { id: string; key?: string; accountId: string; environment: string; hint: string; revokedAt: string | null; keyHash?: string };

describe('petstore CLI', () => {
  test('when an account and a key are created with --json, then each prints one JSON object with id (and key once)', async (t) => {
    const env = tempDb(t);
    const account = await cliJson<{ id: string; name: string }>(['accounts', 'create', '--name', 'Acme Pets'], env);
    assert.match(account.id, /^acct_[A-Za-z0-9]{16}$/);
    assert.equal(account.name, 'Acme Pets');
    const key = await cliJson<Key>(['keys', 'create', '--account', account.id], env);
    assert.match(key.id, /^key_/);
    assert.match(key.key ?? '', /^psk_live_[A-Za-z0-9]{36}$/);
    assert.equal(key.keyHash, undefined);

    const list = await cliJson<Key[]>(['keys', 'list', '--account', account.id], env);
    assert.equal(list.length, 1);
    assert.equal(list[0]?.id, key.id);
    assert.equal(list[0]?.key, undefined, 'listing never shows the secret');
    assert.equal(JSON.stringify(list).includes(key.key!.slice(9)), false);
    assert.equal(list[0]?.revokedAt, null);

    const revoked = await cliJson<Key>(['keys', 'revoke', key.id], env);
    assert.match(revoked.revokedAt ?? '', /^\d{4}-/);
  });

  test('when a staging key is requested, then it has the psk_test_ prefix', async (t) => {
    const env = tempDb(t);
    const account = await cliJson<{ id: string }>(['accounts', 'create', '--name', 'S'], env);
    const key = await cliJson<Key>(['keys', 'create', '--account', account.id, '--env', 'staging'], env);
    assert.match(key.key ?? '', /^psk_test_/);
    assert.equal(key.environment, 'staging');
  });

  test('when used without --json, then output is human-readable and the key is shown once with a warning', async (t) => {
    const env = tempDb(t);
    const created = await cli(['accounts', 'create', '--name', 'Human'], env);
    assert.equal(created.code, 0);
    const id = /acct_[A-Za-z0-9]+/.exec(created.stdout)?.[0];
    assert.ok(id);
    const key = await cli(['keys', 'create', '--account', id], env);
    assert.match(key.stdout, /psk_live_[A-Za-z0-9]{36}/);
    assert.match(key.stdout, /only time the key is shown/);
  });

  const failures: Array<[string, string[], number, RegExp]> = [
    ['accounts create has no --name', ['accounts', 'create'], 2, /--name is required/],
    ['keys create has no --account', ['keys', 'create'], 2, /--account is required/],
    ['keys create names an unknown account', ['keys', 'create', '--account', 'acct_nope'], 1, /No account with id "acct_nope"/],
    ['keys list names an unknown account', ['keys', 'list', '--account', 'acct_nope'], 1, /No account/],
    ['keys revoke names an unknown key', ['keys', 'revoke', 'key_nope'], 1, /No API key with id "key_nope"/],
    ['keys revoke has no key id', ['keys', 'revoke'], 2, /<keyId> is required/],
    ['the command is unknown', ['frobnicate'], 2, /Unknown command "frobnicate"/],
    ['an option is unknown', ['accounts', 'create', '--nme', 'x'], 2, /Unknown option '--nme'/],
    ['--env is not an environment', ['keys', 'create', '--account', 'a', '--env', 'dev'], 2, /--env must be/],
  ];
  for (const [label, args, code, message] of failures) {
    test(`when ${label}, then it exits ${code} with the reason on stderr and nothing on stdout`, async (t) => {
      const result = await cli(args, tempDb(t));
      assert.equal(result.code, code, result.stderr);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    });
  }

  for (const args of [[], ['serve'], ['migrate'], ['accounts', 'create'], ['keys', 'create'], ['keys', 'list'], ['keys', 'revoke']]) {
    test(`when "${['petstore', ...args, '--help'].join(' ')}" runs, then it prints usage and exits 0`, async (t) => {
      const result = await cli([...args, '--help'], tempDb(t));
      assert.equal(result.code, 0);
      assert.match(result.stdout, /^Usage: petstore/);
    });
  }

  test('when migrate runs twice, then the second run applies nothing', async (t) => {
    const env = tempDb(t);
    assert.deepEqual(await cliJson<{ applied: number[] }>(['migrate'], env), { applied: migrations.map((m) => m.version) });
    assert.deepEqual(await cliJson<{ applied: number[] }>(['migrate'], env), { applied: [] });
  });

  test('when the CLI and a running server share one SQLite file, then a key created or revoked by the CLI takes effect at once', async (t) => {
    const env = tempDb(t);
    await cli(['migrate'], env);
    const server = await startServerProcess(env);
    t.after(() => server.stop());
    const account = await cliJson<{ id: string }>(['accounts', 'create', '--name', 'Live'], env);
    const key = await cliJson<Key>(['keys', 'create', '--account', account.id], env);
    const auth = { authorization: `Bearer ${key.key}` };
    const created = await fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
    });
    assert.equal(created.status, 201);
    await cliJson<Key>(['keys', 'revoke', key.id], env);
    assert.equal((await fetch(`${server.url}/v1/pets`, { headers: auth })).status, 401);
    assert.equal(await server.stop('SIGTERM'), 0, 'SIGTERM exits 0');
  });
});
