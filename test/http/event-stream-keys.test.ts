// GET /v1/events/stream lives no longer than its key, on every store: revoked here or on another
// instance (heard as the key cache hears it; on PostgreSQL also a revocation whose notice was lost,
// once the listener reconnects), rolled to expire now, or reaching its expiresAt, an open stream
// ends within about a second with a last comment saying why, and the key is refused after. HEAD
// answers GET's status and headers (refusals too) at once, with no body and no stream slot.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import pg from 'pg';
import { KEY_CHANGES_CHANNEL } from '../../src/store/postgres/key-changes.js';
import { sharedApp, startApp, type TestApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { openSse, type SseStream, waitFor } from '../helpers/sse.js';

const env = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000', PETSTORE_EVENT_STREAM_HEARTBEAT_MS: '300' };
const STREAM = '/v1/events/stream';
/** "Within a second", with room for a loaded machine. */
const END_WITHIN_MS = 1_500;

/** A second key of the owner's account that may read events: the one the stream uses. */
async function readerKey(app: TestApp, ownerKey: string, body: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const res = await app.request('POST', '/v1/api-keys', { key: ownerKey, body: { scopes: ['events:read'], ...body } });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string; key: string };
}

/** Reads the stream to its end within timeoutMs (heartbeats or not); the last comment, and when the end came. */
async function endOf(stream: SseStream, timeoutMs: number): Promise<{ comment: string | undefined; at: number }> {
  const deadline = Date.now() + timeoutMs;
  let comment: string | undefined;
  for (;;) {
    const frame = await stream.next(Math.max(1, deadline - Date.now()));
    if (frame === undefined) return { comment, at: Date.now() };
    if (frame.comment) comment = frame.comment;
    if (Date.now() > deadline) {
      stream.close();
      throw new Error(`the stream did not end within ${timeoutMs} ms`);
    }
  }
}

/** An open stream, past its first comment; closed after the test whatever happens. */
async function openStream(t: TestContext, app: TestApp, key: string): Promise<SseStream> {
  const stream = await openSse(`${app.url}${STREAM}`, key);
  t.after(() => stream.close());
  assert.equal(stream.status, 200);
  assert.match((await stream.next())?.comment ?? '', /^after \d+/);
  return stream;
}

for (const backend of backends) {
  describe(`event stream and its key (${backend.name})`, () => {
    const getApp = sharedApp({ backend, env });

    test('when the key of an open stream is revoked, then the stream ends within a second with a comment saying so, and the key is refused after', async (t) => {
      const app = await getApp();
      const owner = await app.createAccount();
      const reader = await readerKey(app, owner.key);
      const before = app.services.eventStreams.openCount();
      const stream = await openStream(t, app, reader.key);
      const revokedAt = Date.now();
      assert.equal((await app.request('DELETE', `/v1/api-keys/${reader.id}`, { key: owner.key })).status, 204);
      const end = await endOf(stream, END_WITHIN_MS);
      assert.ok(end.at - revokedAt < END_WITHIN_MS, `ended after ${end.at - revokedAt} ms`);
      assert.match(end.comment ?? '', /^unauthorized: the API key was revoked, so this stream ends/);
      await waitFor(() => app.services.eventStreams.openCount() === before);
      const again = await openSse(`${app.url}${STREAM}`, reader.key);
      assert.equal(again.status, 401);
      assert.equal((again.body as { code: string }).code, 'unauthorized');
    });

    test('when the key is revoked on another instance, then the stream here ends within a second', async (t) => {
      const app = await getApp();
      const other = await startApp(t, { backend, env, databaseUrl: app.config.database.url });
      const owner = await app.createAccount();
      const reader = await readerKey(app, owner.key);
      const stream = await openStream(t, app, reader.key);
      // Another stream of the account, with another key, stays open.
      const bystander = await openStream(t, app, owner.key);
      const revokedAt = Date.now();
      assert.equal((await other.request('DELETE', `/v1/api-keys/${reader.id}`, { key: owner.key })).status, 204);
      const end = await endOf(stream, END_WITHIN_MS);
      assert.ok(end.at - revokedAt < END_WITHIN_MS, `ended after ${end.at - revokedAt} ms`);
      assert.match(end.comment ?? '', /the API key was revoked/);
      assert.equal((await bystander.next(1_000))?.comment, '', 'the other key\'s stream goes on (a heartbeat)');
    });

    test('when the key is revoked unheard (no notice) and the key listener then reconnects, then the stream ends within a second of it', { skip: backend.name !== 'postgres' && 'PostgreSQL only: its LISTEN connection' }, async (t) => {
      const app = await getApp();
      const owner = await app.createAccount();
      const reader = await readerKey(app, owner.key);
      const stream = await openStream(t, app, reader.key);
      const admin = new pg.Client({ connectionString: app.config.database.url });
      await admin.connect();
      t.after(() => admin.end());
      // Triggers off for this session: the revocation sends no NOTIFY, as if the notice were lost.
      await admin.query("SET session_replication_role = 'replica'");
      await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [reader.id]);
      assert.equal((await stream.next(1_000))?.comment, '', 'unheard: the stream goes on (a heartbeat)');
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1', [`LISTEN ${KEY_CHANGES_CHANNEL}`]);
      assert.equal(rows.length, 1, 'one key listener');
      const lostAt = Date.now();
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      const end = await endOf(stream, END_WITHIN_MS);
      assert.ok(end.at - lostAt < END_WITHIN_MS, `ended after ${end.at - lostAt} ms`);
      assert.match(end.comment ?? '', /the API key was revoked/);
    });

    test('when a key reaches its expiresAt, then its stream ends then with a comment naming the instant', async (t) => {
      const app = await getApp();
      const owner = await app.createAccount();
      const expiresAt = new Date(Date.now() + 1_500).toISOString();
      const reader = await readerKey(app, owner.key, { expiresAt });
      const stream = await openStream(t, app, reader.key);
      const end = await endOf(stream, 1_500 + END_WITHIN_MS);
      const late = end.at - Date.parse(expiresAt);
      assert.ok(late >= -50 && late < END_WITHIN_MS, `ended ${late} ms after the expiry`);
      assert.equal(end.comment, `unauthorized: the API key expired at ${expiresAt}, so this stream ends. Open a new stream with another key, with Last-Event-ID: 0`);
      const again = await openSse(`${app.url}${STREAM}`, reader.key);
      assert.equal(again.status, 401);
      assert.equal((again.body as { code: string }).code, 'unauthorized');
    });

    test('when a key is rolled to expire at once, then its open stream ends within a second as expired', async (t) => {
      const app = await getApp();
      const owner = await app.createAccount();
      const reader = await readerKey(app, owner.key);
      const stream = await openStream(t, app, reader.key);
      const rolledAt = Date.now();
      const rolled = await app.request('POST', `/v1/api-keys/${reader.id}/roll`, { key: owner.key, body: { expiresInSeconds: 0 } });
      assert.equal(rolled.status, 201, rolled.text);
      const end = await endOf(stream, END_WITHIN_MS);
      assert.ok(end.at - rolledAt < END_WITHIN_MS, `ended after ${end.at - rolledAt} ms`);
      assert.match(end.comment ?? '', /^unauthorized: the API key expired at /);
    });

    test('when HEAD asks for the stream, then it answers GET\'s status and headers at once, with no body and no stream slot', async (t) => {
      const app = await getApp();
      const owner = await app.createAccount();
      const get = await openStream(t, app, owner.key);
      const open = app.services.eventStreams.openCount();
      const head = await fetch(`${app.url}${STREAM}`, { method: 'HEAD', headers: { authorization: `Bearer ${owner.key}` }, signal: AbortSignal.timeout(2_000) });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      const framing = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);
      const names = (headers: Headers) => [...headers.keys()].filter((name) => !framing.has(name)).sort();
      assert.deepEqual(names(head.headers), names(get.headers));
      for (const name of ['content-type', 'cache-control', 'x-content-type-options', 'x-accel-buffering', 'ratelimit-policy']) {
        assert.equal(head.headers.get(name), get.headers.get(name), name);
      }
      assert.ok(head.headers.get('x-request-id'));
      assert.equal(app.services.eventStreams.openCount(), open, 'HEAD took no slot');
    });

    test('when GET would be refused, then HEAD is refused with the same status and headers (no key 401, unknown type 400, no slot left 429)', async (t) => {
      const app = await getApp();
      const owner = await app.createAccount();
      const head = (query: string, key: string | undefined) =>
        fetch(`${app.url}${STREAM}${query}`, { method: 'HEAD', headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(2_000) });
      const same = async (query: string, key: string | undefined, status: number, code: string, header: string) => {
        const got = await openSse(`${app.url}${STREAM}${query}`, key);
        assert.equal(got.status, status, `GET ${query}`);
        assert.equal((got.body as { code: string }).code, code, `GET ${query}`);
        const headed = await head(query, key);
        assert.equal(headed.status, status, `HEAD ${query}`);
        assert.equal(await headed.text(), '');
        assert.ok(headed.headers.get(header) && got.headers.get(header), `${header} on both`);
      };
      await same('', undefined, 401, 'unauthorized', 'www-authenticate');
      await same('?type=pet.exploded', owner.key, 400, 'invalid_request', 'x-request-id');
      const open = await Promise.all(Array.from({ length: 5 }, () => openStream(t, app, owner.key)));
      await same('', owner.key, 429, 'rate_limited', 'retry-after');
      const count = app.services.eventStreams.openCount();
      open[0]!.close();
      await waitFor(() => app.services.eventStreams.openCount() === count - 1);
      assert.equal((await head('', owner.key)).status, 200);
      assert.equal(app.services.eventStreams.openCount(), count - 1, 'HEAD took no slot');
    });
  });
}
