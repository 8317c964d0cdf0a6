// Changes to pets (PATCH, DELETE) are seen at once by every process serving the same store: a
// second `petstore serve` on the same SQLite file, the other worker of `serve --workers 2`, a
// second instance on the same PostgreSQL database. Each iteration reads everything first (so
// the reader holds cache entries that the change makes stale), changes one pet through the
// writer, then at once (no sleep) reads it all back through the reader and compares it with a
// model of the account kept by the test.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import { type Backend, type BackendDatabase, postgresAdminUrl, postgresBackend, sqliteBackend } from './helpers/backends.js';
import { createAccountWithKey, type ServerProcess, startServerProcess } from './helpers/process.js';

type Status = 'available' | 'pending' | 'sold';
type Pet = { id: number; name: string; categoryId: number; status?: Status };
type Patch = { name?: string; categoryId?: number; status?: Status | null };

const ITERATIONS = 100;
const STATUSES: readonly Status[] = ['available', 'pending', 'sold'];
const CATEGORIES = [10, 20, 30] as const;
const PETS = 8;
const ENV = { PETSTORE_RATE_LIMIT_PER_SECOND: '1000000', PETSTORE_RATE_LIMIT_BURST: '1000000', PETSTORE_LOG_LEVEL: 'info' };

/** Where requests go: a server and a keep-alive connection of our own to it (to a cluster, one worker's). */
interface Client {
  server: ServerProcess;
  agent: http.Agent;
}

/** The two ends of the test: where changes are sent and where they are read. */
interface Ends {
  writer: Client;
  reader: Client;
  key: string;
}

type Response = { status: number; headers: http.IncomingHttpHeaders; body: unknown; id: string };

/** Request ids tell which process (or worker) answered, from its log lines. */
let sequence = 0;
function request({ server, agent }: Client, method: string, path: string, key: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
  const id = `cache-${process.pid}-${++sequence}`;
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'x-request-id': id, ...options.headers };
  if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) });
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, server.url), { method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown), id }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no response within 10 s`)));
    req.end(payload);
  });
}

const nextLink = (res: Response) => /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))?.[1];

function ok(res: Response, status: number, what: string): void {
  assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
}

/** The model's pets matching the filter, in id order. */
function expected(model: Map<number, Pet>, filter: { status?: Status; categoryId?: number } = {}): Pet[] {
  return [...model.values()]
    .filter((p) => (filter.status === undefined || p.status === filter.status) && (filter.categoryId === undefined || p.categoryId === filter.categoryId))
    .sort((a, b) => a.id - b.id);
}

/** Every listing, page walk, inventory and category read through `reader` agrees with the model. */
async function checkViews(ends: Ends, model: Map<number, Pet>, when: string): Promise<void> {
  const { reader, key } = ends;
  const list = async (path: string) => {
    const res = await request(reader, 'GET', path, key);
    ok(res, 200, `GET ${path} ${when}`);
    return res;
  };
  assert.deepEqual((await list('/v1/pets')).body, expected(model), `GET /v1/pets ${when}`);
  const walked: Pet[] = [];
  for (let next: string | undefined = '/v1/pets?limit=3'; next; ) {
    const res = await list(next);
    walked.push(...(res.body as Pet[]));
    next = nextLink(res);
  }
  assert.deepEqual(walked, expected(model), `pages of 3 ${when}`);
  for (const status of STATUSES) assert.deepEqual((await list(`/v1/pets?status=${status}`)).body, expected(model, { status }), `status=${status} ${when}`);
  for (const categoryId of CATEGORIES) {
    assert.deepEqual((await list(`/v1/pets?categoryId=${categoryId}`)).body, expected(model, { categoryId }), `categoryId=${categoryId} ${when}`);
    const both = await list(`/v1/pets?categoryId=${categoryId}&status=available`);
    assert.deepEqual(both.body, expected(model, { categoryId, status: 'available' }), `categoryId=${categoryId}&status=available ${when}`);
  }
  const all = expected(model);
  const count = (status: Status | undefined) => all.filter((p) => p.status === status).length;
  const inventory = { available: count('available'), pending: count('pending'), sold: count('sold'), withoutStatus: count(undefined), total: all.length };
  assert.deepEqual((await list('/v1/store/inventory')).body, inventory, `inventory ${when}`);
  const categories = CATEGORIES.map((id) => ({ id, name: `Category ${id}`, petCount: all.filter((p) => p.categoryId === id).length }));
  assert.deepEqual((await list('/v1/categories')).body, categories, `GET /v1/categories ${when}`);
  for (const category of categories) assert.deepEqual((await list(`/v1/categories/${category.id}`)).body, category, `category ${category.id} ${when}`);
}

/** Iteration i's change to a pet: the fields it sets, or 'delete'. */
function changeFor(i: number, pet: Pet): Patch | 'delete' {
  // A status other than the pet's, cycling through all four (none included).
  const options = [...STATUSES, null];
  const turn = Math.floor(i / 6);
  const status = options[turn % 4] === (pet.status ?? null) ? options[(turn + 1) % 4]! : options[turn % 4]!;
  const categoryId = CATEGORIES[(CATEGORIES.indexOf(pet.categoryId as (typeof CATEGORIES)[number]) + 1) % CATEGORIES.length]!;
  switch (i % 6) {
    case 0: return { name: `Renamed ${i}` };
    case 1: return { status };
    case 2: return { categoryId };
    case 3: return { name: `All ${i}`, categoryId, status };
    case 4: return 'delete';
    default: return { name: `Moved ${i}`, categoryId };
  }
}

function applied(pet: Pet, patch: Patch): Pet {
  const next: Pet = { id: pet.id, name: patch.name ?? pet.name, categoryId: patch.categoryId ?? pet.categoryId };
  const status = patch.status === undefined ? pet.status : patch.status ?? undefined;
  if (status !== undefined) next.status = status;
  return next;
}

async function createPet(ends: Ends, model: Map<number, Pet>, n: number): Promise<void> {
  const status = [...STATUSES, undefined][n % 4];
  const body = { name: `Pet ${n}`, categoryId: CATEGORIES[n % 3]!, ...(status ? { status } : {}) };
  const res = await request(ends.writer, 'POST', '/v1/pets', ends.key, { body });
  ok(res, 201, 'createPet');
  model.set((res.body as Pet).id, res.body as Pet);
}

interface Outcome {
  /** Iterations whose first read was answered by another process (or worker) than the change. */
  crossed: number;
  /** Reads answered by the reader's fast path (from its cache on SQLite, its store on PostgreSQL). */
  fastPath: number;
}

async function fastPathAnswers(server: ServerProcess): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const match = /^petstore_fast_path_responses_total (\d+)$/m.exec(text);
  assert.ok(match, 'the fast path counter is exposed');
  return Number(match[1]);
}

/** Runs the iterations; returns how often the change and the read after it were answered by different processes. */
async function exercise(ends: Ends): Promise<Outcome> {
  const { writer, reader, key } = ends;
  for (const id of CATEGORIES) ok(await request(writer, 'PUT', `/v1/categories/${id}`, key, { body: { name: `Category ${id}` } }), 201, `PUT category ${id}`);
  const model = new Map<number, Pet>();
  let created = 0;
  while (created < PETS) await createPet(ends, model, created++);
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const ids = [...model.keys()].sort((a, b) => a - b);
    const before = model.get(ids[i % ids.length]!)!;
    const path = `/v1/pets/${before.id}`;
    // Warm: the reader caches the pet and every view as they are now.
    const warm = await request(reader, 'GET', path, key);
    ok(warm, 200, `GET ${path} before change ${i}`);
    assert.deepEqual(warm.body, before);
    const oldTag = String(warm.headers.etag);
    await checkViews(ends, model, `before change ${i}`);

    const change = changeFor(i, before);
    const when = `after change ${i} (${JSON.stringify(change)} of ${JSON.stringify(before)})`;
    let write;
    if (change === 'delete') {
      write = await request(writer, 'DELETE', path, key);
      ok(write, 204, `DELETE ${path}`);
      model.delete(before.id);
    } else {
      write = await request(writer, 'PATCH', path, key, { body: change });
      ok(write, 200, `PATCH ${path}`);
      model.set(before.id, applied(before, change));
      assert.deepEqual(write.body, model.get(before.id), `PATCH answer ${when}`);
      assert.notEqual(write.headers.etag, oldTag, `a changed pet has a new ETag ${when}`);
    }

    // At once, through the reader: the plain GET may come from its cache (the fast path); the
    // conditional one goes through Fastify.
    const read = await request(reader, 'GET', path, key);
    pairs.push([write.id, read.id]);
    const conditional = await request(reader, 'GET', path, key, { headers: { 'if-none-match': oldTag } });
    if (change === 'delete') {
      for (const res of [read, conditional]) {
        ok(res, 404, `GET ${path} ${when}`);
        assert.equal((res.body as { code: string }).code, 'not_found');
      }
      await createPet(ends, model, created++);
    } else {
      ok(read, 200, `GET ${path} ${when}`);
      assert.deepEqual(read.body, model.get(before.id), `GET ${path} ${when}`);
      assert.equal(read.headers.etag, write.headers.etag, `GET ${path} sends the PATCH's ETag ${when}`);
      ok(conditional, 200, `GET ${path} with If-None-Match: the old ETag ${when}: the pet changed, no 304`);
      assert.deepEqual(conditional.body, model.get(before.id));
      assert.equal(conditional.headers.etag, write.headers.etag);
    }
    await checkViews(ends, model, when);
  }
  return { crossed: crossings(new Set([writer.server, reader.server]), pairs), fastPath: await fastPathAnswers(reader.server) };
}

/** How many (change, read) pairs of request ids were answered by different pids, from the log lines. */
function crossings(servers: Set<ServerProcess>, pairs: Array<[string, string]>): number {
  const pidOf = new Map<string, unknown>();
  for (const server of servers) {
    for (const line of server.logs()) if (line.msg === 'request completed') pidOf.set(line.reqId as string, line.pid);
  }
  return pairs.filter(([w, r]) => {
    assert.ok(pidOf.has(w) && pidOf.has(r), `both requests ${w} and ${r} were logged`);
    return pidOf.get(w) !== pidOf.get(r);
  }).length;
}

/** Stops the server (and, for a cluster, its workers) after the test. */
function stopAfter(t: TestContext, server: ServerProcess): ServerProcess {
  t.after(async () => {
    const workers = server.logs().filter((l) => l.msg === 'worker listening' && l.pid === server.child.pid).map((l) => l.workerPid as number);
    await server.stop('SIGKILL');
    for (const pid of workers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone with the primary
      }
    }
  });
  return server;
}

async function fresh(t: TestContext, backend: Backend): Promise<BackendDatabase> {
  const database = await backend.createDatabase();
  t.after(() => database.drop());
  return database;
}

/** A keep-alive connection of its own (one at a time): to a cluster, it stays with one worker. */
function client(t: TestContext, server: ServerProcess): Client {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  return { server, agent };
}

/** Two processes (instances) on one store, a connection to each and an account's key, given to `run`. */
async function twoProcesses<T>(t: TestContext, backend: Backend, run: (first: Client, second: Client, key: string) => Promise<T>): Promise<T> {
  const database = await fresh(t, backend);
  const env = { ...ENV, PETSTORE_DATABASE_URL: database.url };
  const first = stopAfter(t, await startServerProcess(env, [], { timeoutMs: 60_000 }));
  const second = stopAfter(t, await startServerProcess(env, [], { timeoutMs: 60_000 }));
  const { key } = await createAccountWithKey(env);
  return run(client(t, first), client(t, second), key);
}

/** Changes through the first process, reads through the second. */
const writeThenRead = (writer: Client, reader: Client, key: string) => exercise({ writer, reader, key });

/**
 * Two processes take turns changing the same pets, each with If-Match: first the tag from before
 * the other's last change (412: that is stale), then the current one (200, the change applied
 * over the other's). Each process has read and written these pets itself, so a PATCH that
 * started from a copy of its own older than the other process's change would show here: a stale
 * tag matching, or a change applied over the pet as it was before.
 */
async function takeTurns(ends: { a: Client; b: Client; key: string }): Promise<number> {
  const model = new Map<number, Pet>();
  const tags = new Map<number, { stale?: string; current: string }>();
  for (let n = 0; n < 3; n++) {
    const res = await request(ends.a, 'POST', '/v1/pets', ends.key, { body: { name: `Pet ${n}`, categoryId: CATEGORIES[n]!, status: 'available' } });
    ok(res, 201, 'createPet');
    model.set((res.body as Pet).id, res.body as Pet);
    tags.set((res.body as Pet).id, { current: String(res.headers.etag) });
  }
  let refused = 0;
  for (let i = 0; i < 36; i++) {
    const id = [...model.keys()][i % model.size]!;
    const path = `/v1/pets/${id}`;
    const by = Math.floor(i / model.size) % 2 === 0 ? ends.a : ends.b;
    const before = model.get(id)!;
    // Each turn changes the pet (a no-op PATCH would keep its tag).
    const otherCategory = CATEGORIES[(CATEGORIES.indexOf(before.categoryId as (typeof CATEGORIES)[number]) + 1) % CATEGORIES.length]!;
    const patches: Patch[] = [{ name: `Turn ${i}` }, { status: before.status === 'pending' ? 'sold' : 'pending' }, { categoryId: otherCategory }];
    const patch = patches[i % 3]!;
    const tag = tags.get(id)!;
    if (tag.stale !== undefined) {
      const stale = await request(by, 'PATCH', path, ends.key, { body: patch, headers: { 'if-match': tag.stale } });
      ok(stale, 412, `PATCH ${path} with the tag from before the other process's change (turn ${i})`);
      assert.equal((stale.body as { code: string }).code, 'precondition_failed');
      refused++;
    }
    const res = await request(by, 'PATCH', path, ends.key, { body: patch, headers: { 'if-match': tag.current } });
    ok(res, 200, `PATCH ${path} with the current tag (turn ${i})`);
    model.set(id, applied(before, patch));
    assert.deepEqual(res.body, model.get(id), `PATCH ${path} applied over the other process's change (turn ${i}: ${JSON.stringify(patch)})`);
    tags.set(id, { stale: tag.current, current: String(res.headers.etag) });
  }
  return refused;
}

describe('pet changes are seen at once by every process on the store', { concurrency: true }, () => {
  test(`when two serve processes share one SQLite file and one changes or deletes pets ${ITERATIONS} times, then the other never serves a stale pet, page, inventory or category`, { timeout: 300_000 }, async (t) => {
    const outcome = await twoProcesses(t, sqliteBackend, writeThenRead);
    assert.equal(outcome.crossed, ITERATIONS, 'every read went to the other process');
    assert.ok(outcome.fastPath > 0, 'the reader answered from its cache (the fast path)');
    t.diagnostic(`${outcome.fastPath} reads answered from the reader's cache by the fast path`);
  });

  test('when two serve processes on one SQLite file take turns patching the same pets, then each PATCH starts from the other\'s change and a tag from before it is refused', { timeout: 120_000 }, async (t) => {
    const refused = await twoProcesses(t, sqliteBackend, (a, b, key) => takeTurns({ a, b, key }));
    assert.equal(refused, 33, 'every turn after a pet\'s first was tried with the stale tag first');
  });

  test(`when serve --workers 2 changes pets on one worker ${ITERATIONS} times, then the other worker never serves a stale pet, page, inventory or category`, { timeout: 300_000 }, async (t) => {
    const database = await fresh(t, sqliteBackend);
    const env = { ...ENV, PETSTORE_DATABASE_URL: database.url };
    const cluster = stopAfter(t, await startServerProcess(env, ['--workers', '2']));
    const { key } = await createAccountWithKey(env);
    // Two connections: the primary hands them to the workers in turn, one each.
    const outcome = await exercise({ writer: client(t, cluster), reader: client(t, cluster), key });
    assert.equal(outcome.crossed, ITERATIONS, 'every read after a change went to the other worker');
    assert.ok(outcome.fastPath > 0, 'the reading worker answered from its cache (the fast path)');
    t.diagnostic(`${outcome.fastPath} reads answered from a worker's cache by the fast path`);
  });

  test(
    `when two instances share one PostgreSQL database and one changes or deletes pets ${ITERATIONS} times, then the other never serves a stale pet, page, inventory or category`,
    { timeout: 300_000, skip: postgresAdminUrl ? false : 'set PETSTORE_TEST_POSTGRES_URL to run it' },
    async (t) => {
      const outcome = await twoProcesses(t, postgresBackend, writeThenRead);
      assert.equal(outcome.crossed, ITERATIONS, 'every read went to the other instance');
      assert.ok(outcome.fastPath > 0, 'the reader answered pages and pets read by its fast path');
      t.diagnostic(`${outcome.fastPath} reads answered by the reader's fast path (from the store)`);
    },
  );
});
