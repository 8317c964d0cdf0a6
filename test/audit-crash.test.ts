// The audit log is atomic with the changes it records, even when the server dies mid-write: a
// real `petstore serve` makes, revokes and rolls keys and makes and deletes webhook endpoints
// under concurrent load and is killed with SIGKILL; then, in the store as the crash left it,
// every change has its entry and every entry its change, with the sequence unbroken.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from './helpers/backends.js';
import { createFixture, killAndDrop, type ServerChild, startServer } from './helpers/durability.js';
import { createStore } from '../src/store/index.js';
import { storeConfig } from './helpers/store-config.js';
import type { AuditRecord } from '../src/store/audit-log.js';

const WEBHOOK_ENV = { PETSTORE_WEBHOOK_ALLOW_HTTP: 'true', PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' };

/** One client's loop of changes until the server stops answering; how many completed (also counted in `progress.done`). */
async function churn(url: string, key: string, stop: { now: boolean }, progress: { done: number }): Promise<number> {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as { id?: string } | undefined };
  };
  let done = 0;
  try {
    while (!stop.now) {
      const made = await call('POST', '/v1/api-keys', { name: 'churn' });
      const id = made.body?.id;
      if (id) await call(done % 2 ? 'DELETE' : 'POST', done % 2 ? `/v1/api-keys/${id}` : `/v1/api-keys/${id}/roll`, done % 2 ? undefined : { expiresInSeconds: 0 });
      const endpoint = await call('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/h' });
      if (endpoint.body?.id) await call('DELETE', `/v1/webhook-endpoints/${endpoint.body.id}`);
      done++;
      progress.done++;
    }
  } catch {
    // The server died: the connection broke.
  }
  return done;
}

for (const backend of backends) {
  describe(`audit log under kill -9 (${backend.name})`, () => {
    it('when the server is killed during changes, then every key and endpoint change has exactly its entry, and no entry lacks its change', async () => {
      const fixture = await createFixture(backend);
      let server: ServerChild | undefined;
      try {
        server = await startServer({ ...fixture.env, ...WEBHOOK_ENV });
        const stop = { now: false };
        const progress = { done: 0 };
        const clients = Array.from({ length: 4 }, () => churn(server!.url, fixture.key, stop, progress));
        // Killed mid-load once some changes are in (a fixed delay was too short on a busy CI machine).
        for (let waited = 0; progress.done < 12 && waited < 30_000; waited += 50) await sleep(50);
        await sleep(200);
        server.kill('SIGKILL');
        await server.exited;
        stop.now = true;
        const completed = (await Promise.all(clients)).reduce((a, b) => a + b, 0);
        assert.ok(completed > 0, 'changes were made before the kill');

        const store = await createStore(storeConfig(fixture.url, { pgPoolMax: 2, readCache: false }));
        try {
          const keys = await store.apiKeys.list(fixture.accountId);
          const log: AuditRecord[] = [];
          for (let after = 0; ; ) {
            const page = await store.auditLog.list({ accountId: fixture.accountId, afterSeq: after, limit: 500 });
            if (page.length === 0) break;
            log.push(...page);
            after = page[page.length - 1]!.seq;
          }
          assert.deepEqual(log.map((e) => e.seq), log.map((_, i) => i + 1), 'the sequence has no gap');
          const entries = (action: string) => new Map(log.filter((e) => e.action === action).map((e) => [e.target.id, e]));
          const created = entries('api_key.created');
          const revoked = entries('api_key.revoked');
          const rolled = entries('api_key.rolled');
          const withoutEntry = keys.filter((k) => !created.has(k.id) && ![...rolled.values()].some((e) => e.newKeyId === k.id));
          assert.equal(withoutEntry.length, 1, 'only the fixture\'s key (made before the server) has no entry');
          for (const id of created.keys()) assert.ok(keys.some((k) => k.id === id), `created entry ${id}: the key exists`);
          for (const k of keys) assert.equal(k.revokedAt !== null, revoked.has(k.id), `key ${k.id}: revoked iff its entry says so`);
          for (const [id, e] of rolled) {
            assert.ok(keys.some((k) => k.id === e.newKeyId), `rolled ${id}: the new key exists`);
            assert.ok(keys.find((k) => k.id === id)?.expiresAt, `rolled ${id}: the old key expires`);
          }
          const rolledKeys = keys.filter((k) => k.expiresAt !== null);
          for (const k of rolledKeys) assert.ok(rolled.has(k.id), `key ${k.id} has an expiry: its roll is recorded`);
          const endpoints = await store.webhooks.listEndpoints({ accountId: fixture.accountId, limit: 100 });
          const made = entries('webhook_endpoint.created');
          const deleted = entries('webhook_endpoint.deleted');
          for (const e of endpoints) assert.ok(made.has(e.id) && !deleted.has(e.id), `endpoint ${e.id}: made, not deleted`);
          for (const id of made.keys()) assert.ok(endpoints.some((e) => e.id === id) !== deleted.has(id), `endpoint ${id}: exists unless deleted`);
          for (const id of deleted.keys()) assert.ok(made.has(id), `deleted endpoint ${id} was made`);
          assert.ok(log.length >= completed, `${log.length} entries for ${completed} completed rounds`);
        } finally {
          await store.close();
        }
      } finally {
        await killAndDrop(fixture, server);
      }
    });
  });
}
