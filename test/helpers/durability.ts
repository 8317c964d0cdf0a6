// Shared by the crash (durability) and shutdown suites: a store with an account and a key,
// the built server as a child process whose log is read line by line, a POST /v1/pets load
// over node:http that records what happened to every request, and the checks made after a
// restart (every acknowledged pet present exactly as returned, nothing else, store intact).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { NewPet, Pet } from '../../src/schemas/index.js';
import { createServices } from '../../src/services/index.js';
import { createStore } from '../../src/store/index.js';
import type { Backend } from './backends.js';
import { storeConfig } from './store-config.js';

const BIN = path.resolve('bin/petstore.js');

export interface Fixture {
  backend: Backend['name'];
  /** PETSTORE_DATABASE_URL */
  url: string;
  accountId: string;
  key: string;
  /** More accounts in the same store, each with a production key (createFixture's `others`). */
  others: Array<{ accountId: string; key: string }>;
  /** Environment for `petstore serve`: this store, rate limits lifted, request logging on. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** A fresh, migrated store with one account (plus `others` more) and a production key each, made through the services. */
export async function createFixture(backend: Backend, others = 0): Promise<Fixture> {
  const database = await backend.createMigratedDatabase();
  const store = await createStore(storeConfig(database.url, { pgPoolMax: 2 }));
  try {
    await store.migrate();
    const services = await createServices({ store, clock: { now: () => Date.now() }, environment: 'production' });
    const account = await services.accounts.create(`Durability ${backend.name}`);
    const { key } = await services.apiKeys.create(account.id, 'production');
    const more: Fixture['others'] = [];
    for (let i = 0; i < others; i++) {
      const other = await services.accounts.create(`Durability ${backend.name} ${i + 2}`);
      more.push({ accountId: other.id, key: (await services.apiKeys.create(other.id, 'production')).key });
    }
    return {
      backend: backend.name,
      url: database.url,
      accountId: account.id,
      key,
      others: more,
      env: {
        PETSTORE_DATABASE_URL: database.url,
        PETSTORE_ENV: 'production',
        PETSTORE_LOG_LEVEL: 'info',
        PETSTORE_RATE_LIMIT_PER_SECOND: '1000000',
        PETSTORE_RATE_LIMIT_BURST: '1000000',
      },
      drop: () => database.drop(),
    };
  } finally {
    await store.close();
  }
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the process exited. */
  at: number;
}

export interface ServerChild {
  url: string;
  child: ChildProcess;
  /**
   * X-Request-Id of every request the server accepted: Node's HTTP server had parsed its
   * headers and handed it to the app (diagnostics channel http.server.request.start, reported
   * on stderr by a preload in the child; independent of the app's logging).
   */
  acceptedRequestIds: Set<string>;
  /** Log messages (`msg`) in order, for diagnostics. */
  messages: string[];
  exited: Promise<Exit>;
  /** Kills the process unless it already exited. */
  kill(signal: NodeJS.Signals): void;
}

const ACCEPTED = 'petstore-test accepted ';
// Writes to a pipe are synchronous on Linux: a line is out before the process can die.
const TRACE_ACCEPTED = `data:text/javascript,${encodeURIComponent(
  "import dc from 'node:diagnostics_channel';" +
    `dc.subscribe('http.server.request.start', ({ request }) => process.stderr.write('${ACCEPTED}' + request.headers['x-request-id'] + '\\n'));`,
)}`;

/**
 * Starts `petstore serve` (the built dist/) on a free port. Its output is read line by line
 * (not accumulated and re-scanned: a loaded server writes thousands of lines).
 */
/** Servers started and not yet exited, with their database: killAndDrop ends them all. */
const live = new Map<ChildProcess, string | undefined>();

export async function startServer(env: Record<string, string>): Promise<ServerChild> {
  const child = spawn(process.execPath, ['--import', TRACE_ACCEPTED, BIN, 'serve'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.set(child, env.PETSTORE_DATABASE_URL);
  child.once('exit', () => live.delete(child));
  const acceptedRequestIds = new Set<string>();
  const messages: string[] = [];
  let stderr = '';
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.startsWith(ACCEPTED)) acceptedRequestIds.add(line.slice(ACCEPTED.length));
    else stderr += `${line}\n`;
  });
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
  );
  let onListening: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => (onListening = resolve));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let entry: { msg?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      messages.push(line);
      return;
    }
    if (typeof entry.msg === 'string') {
      messages.push(entry.msg);
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(entry.msg);
      if (match?.[1]) onListening(match[1]);
    }
  });
  let timer: NodeJS.Timeout | undefined;
  const url = await Promise.race([
    listening,
    exited.then((exit) => {
      throw new Error(`server exited (${exit.code ?? exit.signal}) before listening: ${messages.join('\n')}${stderr}`);
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Not left behind: a live child would keep the test process from ever exiting.
        child.kill('SIGKILL');
        reject(new Error(`server did not listen within 60 s: ${messages.join('\n')}${stderr}`));
      }, 60_000);
    }),
  ]).finally(() => clearTimeout(timer));
  return {
    url,
    child,
    acceptedRequestIds,
    messages,
    exited,
    kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

/**
 * A test's cleanup: SIGKILL the server still running, if any, and any other on the fixture's
 * database (one a timed-out test was still starting would otherwise listen on, and keep the test
 * process from ever exiting), then drop the fixture's database.
 */
export async function killAndDrop(fixture: Fixture, server: ServerChild | undefined): Promise<void> {
  server?.kill('SIGKILL');
  const others = [...live].filter(([, url]) => url === fixture.url).map(([child]) => child);
  for (const child of others) child.kill('SIGKILL');
  await Promise.all([server?.exited, ...others.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined))]);
  await fixture.drop();
}

/** What the client saw for one request. */
export type Outcome =
  | { kind: 'response'; status: number; contentType: string | null; connection: string | undefined; text: string; body: unknown }
  | {
      kind: 'error';
      code: string;
      message: string;
      /** The TCP connection was established (new or reused) before the failure. */
      connected: boolean;
      /** Response bytes had started to arrive. */
      responseStarted: boolean;
    };

export interface PostOptions {
  agent: http.Agent | false;
  requestId: string;
  /** Sent in two parts: headers and the first half of the body at once, the rest when this resolves. */
  holdBody?: Promise<void>;
  timeoutMs?: number;
}

/** POST /v1/pets over node:http; never rejects. */
export function postPet(baseUrl: string, key: string, pet: NewPet, options: PostOptions): Promise<Outcome> {
  const body = Buffer.from(JSON.stringify(pet));
  return new Promise((resolve) => {
    let settled = false;
    let connected = false;
    let responseStarted = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const fail = (error: NodeJS.ErrnoException) =>
      settle({ kind: 'error', code: error.code ?? error.name, message: error.message, connected, responseStarted });
    const req = http.request(`${baseUrl}/v1/pets`, {
      method: 'POST',
      agent: options.agent,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
        'x-request-id': options.requestId,
      },
    });
    req.setTimeout(options.timeoutMs ?? 15_000, () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    req.on('error', fail);
    req.on('response', (res) => {
      responseStarted = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', fail);
      res.on('aborted', () => fail(Object.assign(new Error('response aborted'), { code: 'ECONNRESET' })));
      res.on('end', () => {
        if (!res.complete) return fail(Object.assign(new Error('response incomplete'), { code: 'INCOMPLETE' }));
        const text = Buffer.concat(chunks).toString('utf8');
        const contentType = res.headers['content-type'] ?? null;
        let parsed: unknown;
        try {
          parsed = contentType?.startsWith('application/json') ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        settle({ kind: 'response', status: res.statusCode ?? 0, contentType, connection: res.headers.connection, text, body: parsed });
      });
    });
    if (options.holdBody) {
      const half = Math.floor(body.length / 2);
      req.flushHeaders();
      req.write(body.subarray(0, half));
      void options.holdBody.then(() => req.end(body.subarray(half)));
    } else {
      req.end(body);
    }
  });
}

export interface Sent {
  pet: NewPet;
  outcome: Outcome;
}

export interface Load {
  /** Every request sent so far, by request id (= pet name), with what came back. */
  sent: Map<string, Sent>;
  inFlight(): number;
  /** Resolves when the first 201 arrived. */
  firstCreated: Promise<void>;
  /** Asks the workers to stop after their current request. */
  stop(): void;
  /** Resolves when every worker stopped. */
  done: Promise<void>;
}

const STATUSES = [undefined, 'available', 'pending', 'sold'] as const;

export function petFor(name: string, n: number): NewPet {
  const status = STATUSES[n % STATUSES.length];
  return status ? { name, categoryId: 1 + (n % 997), status } : { name, categoryId: 1 + (n % 997) };
}

/**
 * `concurrency` workers POST distinct pets (name = request id = `${prefix}-${worker}-${n}`)
 * back to back. A worker stops when asked, or after a connection error that `stopOn` accepts.
 */
export function startLoad(
  baseUrl: string,
  key: string,
  options: { concurrency: number; prefix: string; agent: http.Agent | false; stopOn(outcome: Outcome): boolean; sent?: Map<string, Sent> },
): Load {
  const sent = options.sent ?? new Map<string, Sent>();
  let inFlight = 0;
  let stopped = false;
  let onCreated: () => void = () => {};
  const firstCreated = new Promise<void>((resolve) => (onCreated = resolve));
  const worker = async (w: number) => {
    for (let n = 0; !stopped; n++) {
      const name = `${options.prefix}-${w}-${n}`;
      const pet = petFor(name, n + w);
      inFlight++;
      const outcome = await postPet(baseUrl, key, pet, { agent: options.agent, requestId: name });
      inFlight--;
      sent.set(name, { pet, outcome });
      if (outcome.kind === 'response' && outcome.status === 201) onCreated();
      if (options.stopOn(outcome)) return;
    }
  };
  const done = Promise.all(Array.from({ length: options.concurrency }, (_, w) => worker(w))).then(() => undefined);
  return { sent, inFlight: () => inFlight, firstCreated, stop: () => (stopped = true), done };
}

/** Every item of a paged listing (`limit=100`, Link rel="next"). */
export async function listAll<T>(baseUrl: string, key: string, path: string): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined = path;
  while (next) {
    const res = await fetch(baseUrl + next, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal(res.status, 200, `GET ${next}: ${res.status}`);
    items.push(...((await res.json()) as T[]));
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return items;
}

/** Every pet of the account, through GET /v1/pets and its Link rel="next". */
export const listAllPets = (baseUrl: string, key: string): Promise<Pet[]> => listAll<Pet>(baseUrl, key, '/v1/pets?limit=100');

export interface Verified {
  /** Pets listed after the restart. */
  stored: number;
  /** Requests answered 201: each one's pet is stored exactly as returned. */
  acknowledged: number;
  /** Requests that got no response but whose pet was committed (allowed). */
  committedWithoutResponse: number;
  /** Requests that got no response and whose pet was not committed (allowed). */
  notCommitted: number;
  /** The highest pet id stored (0 when none). */
  maxId: number;
}

/**
 * After a restart: every 201 pet is listed exactly as returned; every listed pet is one we
 * sent, stored with the fields we sent, and either acknowledged or left without a response
 * (never one answered with an error); ids and names are unique.
 */
export async function verifyPets(baseUrl: string, key: string, sent: Map<string, Sent>): Promise<Verified> {
  const listed = await listAllPets(baseUrl, key);
  const byId = new Map(listed.map((p) => [p.id, p]));
  assert.equal(byId.size, listed.length, 'pet ids are unique');
  const byName = new Map(listed.map((p) => [p.name, p]));
  assert.equal(byName.size, listed.length, 'no request created two pets (names are unique)');
  let acknowledged = 0;
  let committedWithoutResponse = 0;
  let notCommitted = 0;
  for (const [name, { pet, outcome }] of sent) {
    const stored = byName.get(name);
    if (outcome.kind === 'response' && outcome.status === 201) {
      acknowledged++;
      const returned = outcome.body as Pet;
      assert.deepEqual({ ...returned, id: 0 }, { id: 0, ...pet }, `201 body of ${name} echoes what was sent`);
      assert.deepEqual(byId.get(returned.id), returned, `acknowledged pet ${name} (id ${returned.id}) is stored exactly as returned`);
    } else if (outcome.kind === 'response') {
      assert.equal(stored, undefined, `${name} was answered ${outcome.status} but a pet was stored`);
    } else if (stored) {
      committedWithoutResponse++;
      assert.deepEqual({ ...stored, id: 0 }, { id: 0, ...pet }, `unacknowledged ${name} is stored as sent`);
    } else {
      notCommitted++;
    }
  }
  for (const pet of listed) assert.ok(sent.has(pet.name), `stored pet ${pet.name} was sent by this test`);
  return { stored: listed.length, acknowledged, committedWithoutResponse, notCommitted, maxId: Math.max(0, ...byId.keys()) };
}

/**
 * The store's own consistency check. SQLite: PRAGMA integrity_check and foreign_key_check on a
 * separate read-only connection. PostgreSQL: amcheck on the pets indexes (heapallindexed).
 * Both: the row count and distinct ids agree with what the API listed.
 */
export async function checkStoreIntegrity(fixture: Fixture, expectedPets: number): Promise<string> {
  if (fixture.backend === 'sqlite') {
    const db = new Database(fixture.url, { readonly: true, fileMustExist: true });
    try {
      const integrity = db.pragma('integrity_check', { simple: true });
      assert.equal(integrity, 'ok', `PRAGMA integrity_check: ${String(integrity)}`);
      assert.deepEqual(db.pragma('foreign_key_check'), [], 'PRAGMA foreign_key_check');
      const counts = db.prepare<[], { n: number; d: number }>("SELECT count(*) AS n, count(DISTINCT account_id || '/' || id) AS d FROM pets").get()!;
      assert.deepEqual(counts, { n: expectedPets, d: expectedPets }, 'pets rows and distinct (account, id) pairs match the API');
      return 'integrity_check ok, foreign_key_check empty';
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: fixture.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number; d: number }>('SELECT count(*)::int AS n, count(DISTINCT (account_id, id))::int AS d FROM pets');
    assert.deepEqual(rows[0], { n: expectedPets, d: expectedPets }, 'pets rows and distinct (account, id) pairs match the API');
    const available = await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'amcheck'");
    if (available.rowCount === 0) return 'counts consistent (amcheck not available)';
    await client.query('CREATE EXTENSION IF NOT EXISTS amcheck');
    const checked = await client.query(
      "SELECT bt_index_check(indexrelid, true) FROM pg_index WHERE indrelid = 'pets'::regclass",
    );
    return `counts consistent, amcheck bt_index_check(heapallindexed) ok on ${checked.rowCount} pets indexes`;
  } finally {
    await client.end();
  }
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: unknown;
}

/** A request written by hand, to pipeline several on one connection. */
export function rawPostPet(key: string, requestId: string, pet: NewPet): { head: string; body: string } {
  const body = JSON.stringify(pet);
  const head =
    `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
    `X-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return { head, body };
}

/** Parses the complete HTTP/1.1 responses (Content-Length framed) at the start of `data`; a truncated one is left out. */
export function parseResponses(data: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = data;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return responses;
    const [statusLine = '', ...lines] = rest.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length) || rest.length < end + 4 + length) return responses;
    const text = rest.subarray(end + 4, end + 4 + length).toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    responses.push({ status: Number(statusLine.split(' ')[1]), headers, text, body });
    rest = rest.subarray(end + 4 + length);
  }
}

/** A JSON request that never throws: a dead server is `undefined`. */
export async function call(url: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown } | undefined> {
  try {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.json() };
  } catch {
    return undefined;
  }
}
