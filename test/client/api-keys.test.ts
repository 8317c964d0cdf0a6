// @petstore/client's apiKeys and auditLog (experimental) against the real server on each store:
// every method, paging, a lost answer not repeated for create and roll, and PetstoreError.scope
// on a 403 insufficient_scope.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { ApiKey } from '@petstore/client';
import { sharedApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { loseAnswer, newAccountClient, petstoreError, recordingClient } from './helpers.js';

for (const backend of backends) {
  describe(`@petstore/client apiKeys and auditLog against the real server (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env: { PETSTORE_RATE_LIMIT_PER_SECOND: '100000', PETSTORE_RATE_LIMIT_BURST: '100000' } });
    let app: TestApp;
    before(async () => {
      app = await getApp();
    });

    test('when keys are created, listed, read, rolled and revoked, then each method answers as documented and the audit log has each change', async () => {
      const { key, keyId } = await app.createAccount();
      const { petstore } = recordingClient(app.url, key);
      const made = await petstore.apiKeys.create({ name: 'reports', scopes: ['orders:read'] });
      assert.match(made.key, /^psk_live_/);
      assert.deepEqual(made.scopes, ['orders:read']);
      const { key: _secret, ...metadata } = made;
      assert.deepEqual(await petstore.apiKeys.get(made.id), metadata);
      const all: ApiKey[] = [];
      for await (const key of petstore.apiKeys.listAll({ limit: 1 })) all.push(key);
      assert.deepEqual(all.map((k) => k.id), [keyId, made.id]);
      assert.deepEqual((await petstore.apiKeys.list({ limit: 1 })).data.map((k) => k.id), [keyId]);
      const rolled = await petstore.apiKeys.roll(made.id, { expiresInSeconds: 0 });
      assert.equal(rolled.name, 'reports');
      await petstore.apiKeys.revoke(rolled.id);
      assert.ok((await petstore.apiKeys.get(rolled.id)).revokedAt);
      const actions = [];
      for await (const entry of petstore.auditLog.listAll({ limit: 2 })) actions.push(entry.action);
      assert.deepEqual(actions, ['api_key.created', 'api_key.rolled', 'api_key.revoked']);
      assert.deepEqual((await petstore.auditLog.list({ after: 2 })).data.map((e) => e.sequence), [3]);
    });

    test('when a restricted key calls an operation it lacks the scope of, then PetstoreError has status 403, code insufficient_scope and the scope', async () => {
      const { petstore } = await newAccountClient(app);
      const readOnly = await petstore.apiKeys.create({ scopes: ['pets:read'] });
      const restricted = recordingClient(app.url, readOnly.key).petstore;
      const error = await petstoreError(restricted.pets.create({ name: 'Rex', categoryId: 1 }));
      assert.equal(error.status, 403);
      assert.equal(error.code, 'insufficient_scope');
      assert.equal(error.scope, 'pets:write');
      assert.equal((await petstoreError(restricted.apiKeys.list())).scope, 'keys:read');
      assert.equal((await petstoreError(petstore.pets.get(987654))).scope, undefined, 'other errors carry none');
    });

    test('when the answer to a create or a roll is lost, then the call fails without a second attempt (a repeat would make another key)', async () => {
      const { key } = await app.createAccount();
      const lost = loseAnswer();
      const { petstore, attempts } = recordingClient(app.url, key, { maxRetries: 3, onAnswer: lost.onAnswer });
      const made = await petstore.apiKeys.create();
      lost.armOnce();
      await petstoreError(petstore.apiKeys.roll(made.id));
      assert.equal(attempts.filter((a) => a.url.endsWith('/roll')).length, 1);
      lost.armOnce();
      await petstoreError(petstore.apiKeys.create());
      assert.equal(attempts.filter((a) => a.method === 'POST' && a.url.endsWith('/api-keys')).length, 2);
    });
  });
}
