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
    ['--scopes names an unknown scope', ['keys', 'create', '--account', 'a', '--scopes', 'pets:read,pets:delete'], 2, /unknown: pets:delete/],
    ['--expires-in is not a duration', ['keys', 'create', '--account', 'a', '--expires-in', 'soon'], 2, /--expires-in must be a duration/],
    ['--expires-in is zero', ['keys', 'create', '--account', 'a', '--expires-in', '0d'], 2, /--expires-in must be more than 0/],
    ['keys roll has no key id', ['keys', 'roll'], 2, /<keyId> is required/],
    ['keys roll names an unknown key', ['keys', 'roll', 'key_nope'], 1, /No API key with id "key_nope"/],
    ['keys roll overlaps more than 7 days', ['keys', 'roll', 'key_nope', '--expires-in', '8d'], 2, /at most 7d/],
    ['secrets rotate-key has no new key', ['secrets', 'rotate-key'], 2, /rotate-key re-seals under PETSTORE_SECRET_KEY: set it to the new key/],
  ];
  for (const [label, args, code, message] of failures) {
    test(`when ${label}, then it exits ${code} with the reason on stderr and nothing on stdout`, async (t) => {
      const result = await cli(args, tempDb(t));
      assert.equal(result.code, code, result.stderr);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    });
  }

  for (const args of [[], ['serve'], ['migrate'], ['accounts', 'create'], ['keys', 'create'], ['keys', 'list'], ['keys', 'roll'], ['keys', 'revoke'], ['secrets', 'seal']]) {
    test(`when "${['petstore', ...args, '--help'].join(' ')}" runs, then it prints usage and exits 0`, async (t) => {
      const result = await cli([...args, '--help'], tempDb(t));
      assert.equal(result.code, 0);
      assert.match(result.stdout, /^Usage: petstore/);
    });
  }

  test('when keys are created with scopes, an expiry and a name, listed, rolled and revoked, then each shows them and the audit log names the CLI', async (t) => {
    const env = tempDb(t);
    const account = await cliJson<{ id: string }>(['accounts', 'create', '--name', 'Scoped'], env);
    type Made = Key & { name: string | null; scopes: string[] | null; expiresAt: string | null; lastUsedAt: string | null };
    const before = Date.now();
    const made = await cliJson<Made>(['keys', 'create', '--account', account.id, '--scopes', 'orders:read,pets:read', '--expires-in', '30d', '--name', 'Reporting'], env);
    assert.deepEqual(made.scopes, ['pets:read', 'orders:read']);
    assert.equal(made.name, 'Reporting');
    assert.equal(made.accountId, account.id);
    const expires = Date.parse(made.expiresAt!);
    assert.ok(expires >= before + 30 * 86_400_000 && expires <= Date.now() + 30 * 86_400_000, made.expiresAt!);
    const admin = await cliJson<Made>(['keys', 'create', '--account', account.id, '--scopes', 'keys:read'], env);
    const text = await cli(['keys', 'list', '--account', account.id], env);
    assert.match(text.stdout, /"Reporting"  pets:read,orders:read  created \S+  expires \S+  last used never/);
    const rolled = await cliJson<Made>(['keys', 'roll', made.id, '--expires-in', '1h'], env);
    assert.deepEqual(rolled.scopes, made.scopes);
    assert.equal(rolled.name, 'Reporting');
    assert.equal(rolled.expiresAt, made.expiresAt, 'a roll keeps the expiry');
    assert.match(rolled.key ?? '', /^psk_live_/);
    const listed = await cliJson<Made[]>(['keys', 'list', '--account', account.id], env);
    const old = listed.find((k) => k.id === made.id)!;
    assert.ok(Math.abs(Date.parse(old.expiresAt!) - (Date.now() + 3_600_000)) < 60_000, `the old key ends in an hour: ${old.expiresAt}`);
    assert.equal((await cli(['keys', 'roll', made.id, '--expires-in', '2x'], env)).code, 2);
    await cliJson(['keys', 'revoke', rolled.id], env);
    const server = await startServerProcess(env);
    t.after(() => server.stop());
    const log = (await (await fetch(`${server.url}/v1/audit-log`, { headers: { authorization: `Bearer ${admin.key}` } })).json()) as Array<{ action: string; actor: unknown; target: { id: string }; requestId: unknown; clientAddress: unknown }>;
    assert.deepEqual(log.map((e) => [e.action, e.target.id]), [['api_key.created', made.id], ['api_key.created', admin.id], ['api_key.rolled', made.id], ['api_key.revoked', rolled.id]]);
    for (const e of log) assert.deepEqual([e.actor, e.requestId, e.clientAddress], [{ type: 'cli' }, null, null]);
  });

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
