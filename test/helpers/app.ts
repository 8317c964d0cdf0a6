// Builds the real app on a real store and serves it over real HTTP on a free port.
// Every response the server sends for a documented operation, whoever asked, is checked against
// the served OpenAPI documents (served-responses.ts): a problem fails the `request` call that got
// the response, else the test that was running (sharedApp: afterEach), else the app's cleanup.
import assert from 'node:assert/strict';
import { after, afterEach, type TestContext } from 'node:test';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type Clock, systemClock } from '../../src/clock.js';
import { type Config, type Environment, loadConfig } from '../../src/config.js';
import { buildApp, workerDepsOf } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createWakeups } from '../../src/runtime/wakeups.js';
import { startWorkers } from '../../src/runtime/workers.js';
import type { WebhookResolver } from '../../src/webhooks/sender.js';
import type { Deliver } from '../../src/services/message-worker.js';
import type { Services } from '../../src/services/index.js';
import { createStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { type Backend, sqliteBackend } from './backends.js';
import { createOpenApiChecker, type OpenApiDocument } from './openapi.js';
import { checkServedResponses, type ServedResponses } from './served-responses.js';
import { TEST_PG_CONNECT_TIMEOUT_MS } from './connect-timeout.js';

export interface RequestOptions {
  key?: string | undefined;
  body?: unknown;
  /** Sent as is (a string or bytes), with no Content-Type unless given in headers. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export interface TestApp {
  url: string;
  app: FastifyInstance;
  store: Store;
  services: Services;
  config: Config;
  /** Every log line the app wrote (JSON strings). */
  logs: string[];
  /** The check of every served response against the documents (how many were checked; problems not yet reported). */
  served: ServedResponses;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** A new account with an active key for the app's environment. */
  createAccount(name?: string, environment?: Environment): Promise<{ accountId: string; key: string; keyId: string }>;
}

export interface StartOptions {
  backend?: Backend;
  clock?: Clock;
  env?: Record<string, string>;
  /** Reuse an existing database URL instead of a fresh one. */
  databaseUrl?: string;
  /** Sees each log line before it is kept; throwing makes that log call throw. */
  onLog?: (line: string) => void;
  /** What delivering a message means (default: the app's own). */
  deliver?: Deliver;
  /** Resolves webhook host names (default: the system resolver). */
  webhookResolver?: WebhookResolver;
}

export async function startApp(t: TestContext | { after(fn: () => unknown): void }, options: StartOptions = {}): Promise<TestApp> {
  const backend = options.backend ?? sqliteBackend;
  const database = options.databaseUrl ? undefined : await backend.createMigratedDatabase();
  const config = loadConfig({
    PETSTORE_DATABASE_URL: options.databaseUrl ?? database!.url,
    PETSTORE_LOG_LEVEL: 'info',
    PETSTORE_PG_CONNECT_TIMEOUT_MS: TEST_PG_CONNECT_TIMEOUT_MS,
    PORT: '0',
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const lines = chunk.toString('utf8').split('\n').filter(Boolean);
      logs.push(...lines);
      // done() first: the stream stays usable after the throw reaches the logger's caller.
      done();
      for (const line of lines) options.onLog?.(line);
    },
  });
  const store = await createStore(config);
  await store.migrate();
  const logger = createLogger(config.logging, sink);
  const wakeups = createWakeups();
  const clock = options.clock ?? systemClock;
  const app = await buildApp({ config, store, logger, wakeups, clock });
  const workers = startWorkers({
    ...workerDepsOf(app),
    config,
    wakeups,
    clock,
    ...(options.deliver ? { deliver: options.deliver } : {}),
    // Tests send traffic only to 127.0.0.1: a webhook host name resolves only when the test says how.
    webhookResolver: options.webhookResolver ?? (async (name) => { throw Object.assign(new Error(`test resolver: ${name} is not resolvable in tests`), { code: 'ENOTFOUND' }); }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const services = app.services;

  let served: ServedResponses | undefined; // once the documents are read
  t.after(async () => {
    await app.close();
    await workers.stop();
    await store.close();
    await database?.drop();
    failOn(served?.take() ?? [], 'responses no test reported');
  });

  // Every response is checked against the document that describes its path.
  const doc = (await (await fetch(`${url}/v1/openapi.json`)).json()) as OpenApiDocument;
  const exampleDoc = (await (await fetch(`${url}/example/v1/openapi.json`)).json()) as OpenApiDocument;
  const checkV1 = createOpenApiChecker(doc);
  const checkExample = createOpenApiChecker(exampleDoc, '/example/v1');
  const checkerFor = (path: string) => (path.startsWith('/example/v1/') ? checkExample : checkV1);
  const watching = (served = checkServedResponses(app.server, {
    covers: (method, path) => checkerFor(path).operation(method, path) !== undefined,
    problems: (res) => [...checkerFor(res.path).errorModelProblems(res), ...checkerFor(res.path).documentProblems(res)],
  }));

  return {
    url,
    app,
    store,
    services,
    config,
    logs,
    served: watching,
    async request(method, path, { key, body, rawBody, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      const h = init.headers as Record<string, string>;
      if (key !== undefined) h.authorization = `Bearer ${key}`;
      if (body !== undefined) {
        h['content-type'] ??= 'application/json';
        init.body = JSON.stringify(body);
      } else if (rawBody !== undefined) {
        init.body = rawBody;
      }
      const res = await fetch(url + path, init);
      const text = await res.text();
      let parsed: unknown = undefined;
      if ((res.headers.get('content-type') ?? '').startsWith('application/json') && text !== '') parsed = JSON.parse(text);
      // The server-side check saw this response; the client-side one also covers undocumented paths
      // (every error is an Error). The same problem seen by both is reported once.
      const checker = checkerFor(path);
      const seen = { method, path, status: res.status, contentType: res.headers.get('content-type'), body: parsed, text };
      failOn([...new Set([...watching.take(), ...checker.errorModelProblems(seen), ...checker.documentProblems(seen)])], `${method} ${path}`);
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async createAccount(name = 'Test account', environment = config.environment) {
      const account = await services.accounts.create(name);
      const key = await services.apiKeys.create(account.id, environment);
      return { accountId: account.id, key: key.key, keyId: key.id };
    },
  };
}

/** Fails with every problem (one per line) against the served OpenAPI documents, if there are any. */
function failOn(problems: string[], context: string): void {
  assert.ok(problems.length === 0, `${problems.length} response(s) do not match the served OpenAPI document (${context}):\n${problems.join('\n')}`);
}

/** One app shared by the tests of a suite: started on first use, closed after the suite (call inside describe). */
export function sharedApp(options: StartOptions = {}): () => Promise<TestApp> {
  const cleanups: Array<() => unknown> = [];
  let started: Promise<TestApp> | undefined;
  let ready: TestApp | undefined;
  // A response checked during a test (a bare fetch, the client) fails that test.
  afterEach(() => failOn(ready?.served.take() ?? [], 'during this test'));
  after(async () => {
    if (!started) return;
    await started.catch(() => undefined);
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => (started ??= startApp({ after: (fn: () => unknown) => cleanups.push(fn) }, options).then((app) => (ready = app)));
}

/** sharedApp plus one account with a key, made once for the suite (call inside describe). */
export function sharedAppWithKey(options: StartOptions = {}): () => Promise<{ app: TestApp; key: string }> {
  const getApp = sharedApp(options);
  let ready: Promise<{ app: TestApp; key: string }> | undefined;
  return () =>
    (ready ??= (async () => {
      const app = await getApp();
      const { key } = await app.createAccount();
      return { app, key };
    })());
}
