// Changes to pets survive a crash: while several clients PATCH, DELETE and create pets, the
// server is killed (SIGKILL). After every restart each acknowledged change is stored (a 200's
// pet as returned, or the one change in flight after it; a 204's pet gone), the inventory and
// every category's petCount equal a recount of the listed pets, and the store is intact.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { petEtag } from '../src/services/pet-changes.js';
import { backends } from './helpers/backends.js';
import { checkStoreIntegrity, createFixture, type Fixture, killAndDrop, listAll, listAllPets, type ServerChild, startServer } from './helpers/durability.js';

type Status = 'available' | 'pending' | 'sold';
type Pet = { id: number; name: string; categoryId: number; status?: Status };
type Patch = { name?: string; categoryId?: number; status?: Status | null };
type Category = { id: number; name?: string; petCount: number };

const CLIENTS = 8;
const PETS_PER_CLIENT = 3;
const ROUNDS = 2;
/** Changes acknowledged in a round before the kill (then a random few more). */
const CHANGES_BEFORE_KILL = 60;
const CATEGORIES = [1, 2, 3, 4, 5];
/** Named: they exist with no pets too. The others exist only while pets use them. */
const NAMED = new Set([1, 2]);
const STATUSES: ReadonlyArray<Status | null> = ['available', 'pending', 'sold', null];

/** What a pet is known to be: its last acknowledged state, and the change in flight (no answer) if any. */
interface Known {
  acked: Pet | 'deleted';
  inFlight?: Pet | 'deleted';
}

/** A JSON request that never throws: a dead server is `undefined`; a 204 has no body. */
async function send(url: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  try {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  } catch {
    return undefined;
  }
}

function applied(pet: Pet, patch: Patch): Pet {
  const next: Pet = { id: pet.id, name: patch.name ?? pet.name, categoryId: patch.categoryId ?? pet.categoryId };
  const status = patch.status === undefined ? pet.status : patch.status ?? undefined;
  if (status !== undefined) next.status = status;
  return next;
}

/** A patch of one, two or three fields, varied by n. */
function patchFor(n: number, tag: string): Patch {
  const patch: Patch = {};
  if (n % 3 !== 1) patch.name = `Patched ${tag}`;
  if (n % 2 === 0) patch.categoryId = CATEGORIES[n % CATEGORIES.length]!;
  if (n % 3 !== 0) patch.status = STATUSES[n % STATUSES.length]!;
  return patch;
}

function newPet(n: number, name: string) {
  const status = STATUSES[n % STATUSES.length];
  return { name, categoryId: CATEGORIES[(n * 7) % CATEGORIES.length]!, ...(status ? { status } : {}) };
}

interface Round {
  known: Map<number, Known>;
  /** Creates that got no answer, by name (names are unique): they may or may not be stored. */
  unansweredCreates: Map<string, ReturnType<typeof newPet>>;
  /** Answers no request should get (a 412 would mean an acknowledged state was not what was stored). */
  unexpected: string[];
  acknowledged: number;
}

/**
 * One client: changes its own pets (so that its answers order each pet's changes), with
 * If-Match on the last acknowledged state, until a request gets no answer (the kill).
 */
async function client(url: string, key: string, round: Round, tag: string, owned: number[], onAck: () => void): Promise<void> {
  for (let n = 0; ; n++) {
    const op = owned.length === 0 || n % 6 === 5 ? 'create' : n % 6 === 4 ? 'delete' : 'patch';
    if (op === 'create') {
      const name = `${tag}-${n}`;
      const pet = newPet(n, name);
      round.unansweredCreates.set(name, pet);
      const res = await send(url, key, 'POST', '/v1/pets', pet);
      if (!res) return;
      round.unansweredCreates.delete(name);
      if (res.status !== 201) {
        round.unexpected.push(`POST ${name}: ${res.status} ${JSON.stringify(res.body)}`);
        continue;
      }
      const created = res.body as Pet;
      assert.deepEqual(created, { id: created.id, ...pet });
      round.known.set(created.id, { acked: created });
      owned.push(created.id);
    } else {
      const id = owned[n % owned.length]!;
      const known = round.known.get(id)!;
      const before = known.acked as Pet;
      const ifMatch = { 'if-match': petEtag(before) };
      const patch = patchFor(n, `${tag}-${n}`);
      known.inFlight = op === 'delete' ? 'deleted' : applied(before, patch);
      const res = op === 'delete'
        ? await send(url, key, 'DELETE', `/v1/pets/${id}`, undefined, ifMatch)
        : await send(url, key, 'PATCH', `/v1/pets/${id}`, patch, ifMatch);
      if (!res) return;
      const wanted = op === 'delete' ? 204 : 200;
      if (res.status !== wanted) {
        delete known.inFlight; // refused: nothing changed
        round.unexpected.push(`${op} pet ${id} ${JSON.stringify(patch)}: ${res.status} ${JSON.stringify(res.body)}`);
        continue;
      }
      if (op === 'patch') assert.deepEqual(res.body, known.inFlight, `PATCH answer for pet ${id}`);
      round.known.set(id, { acked: known.inFlight });
      if (op === 'delete') owned.splice(owned.indexOf(id), 1);
    }
    round.acknowledged++;
    onAck();
  }
}

/** Checks what is stored against what was acknowledged; returns the stored pets as now known. */
async function verify(url: string, key: string, round: Round): Promise<Map<number, Known>> {
  const listed = await listAllPets(url, key) as Pet[];
  const byId = new Map(listed.map((p) => [p.id, p]));
  assert.equal(byId.size, listed.length, 'pet ids are unique');
  const next = new Map<number, Known>();
  for (const [id, { acked, inFlight }] of round.known) {
    const stored = byId.get(id) ?? 'deleted';
    const allowed = inFlight === undefined ? [acked] : [acked, inFlight];
    assert.ok(allowed.some((a) => JSON.stringify(a) === JSON.stringify(stored)), `pet ${id} is ${JSON.stringify(stored)}: acknowledged ${JSON.stringify(acked)}, in flight ${JSON.stringify(inFlight)}`);
    if (stored === 'deleted') {
      const res = await send(url, key, 'GET', `/v1/pets/${id}`);
      assert.equal(res?.status, 404, `deleted pet ${id}: GET answers 404`);
      assert.equal((res!.body as { code: string }).code, 'not_found');
    }
    next.set(id, { acked: stored });
  }
  for (const pet of listed) {
    if (round.known.has(pet.id)) continue;
    // A create whose answer was lost in the kill: stored as sent, or not at all.
    const sent = round.unansweredCreates.get(pet.name);
    assert.ok(sent, `stored pet ${JSON.stringify(pet)} was acknowledged or left without an answer`);
    assert.deepEqual(pet, { id: pet.id, ...sent });
    next.set(pet.id, { acked: pet });
  }
  return next;
}

/** The inventory and each category's petCount equal a recount of the listed pets. */
async function checkCounts(url: string, key: string, pets: Pet[]): Promise<void> {
  const count = (status: Status | undefined) => pets.filter((p) => p.status === status).length;
  const inventory = { available: count('available'), pending: count('pending'), sold: count('sold'), withoutStatus: count(undefined), total: pets.length };
  assert.deepEqual((await send(url, key, 'GET', '/v1/store/inventory'))?.body, inventory, 'inventory equals a recount');
  const expected: Category[] = [];
  for (const id of CATEGORIES) {
    const listed = await listAll<Pet>(url, key, `/v1/pets?limit=100&categoryId=${id}`);
    assert.deepEqual(listed, pets.filter((p) => p.categoryId === id), `GET /v1/pets?categoryId=${id}`);
    const res = await send(url, key, 'GET', `/v1/categories/${id}`);
    if (listed.length === 0 && !NAMED.has(id)) {
      assert.equal(res?.status, 404, `category ${id} without pets or a name: ${JSON.stringify(res?.body)}`);
      continue;
    }
    const category = { id, ...(NAMED.has(id) ? { name: `Category ${id}` } : {}), petCount: listed.length };
    assert.deepEqual(res?.body, category, `category ${id}'s petCount equals the pets listed with categoryId=${id}`);
    expected.push(category);
  }
  assert.deepEqual(await listAll<Category>(url, key, '/v1/categories?limit=100'), expected, 'GET /v1/categories');
}

async function setUp(fixture: Fixture, url: string): Promise<Map<number, Known>> {
  for (const id of NAMED) assert.equal((await send(url, fixture.key, 'PUT', `/v1/categories/${id}`, { name: `Category ${id}` }))?.status, 201);
  const known = new Map<number, Known>();
  for (let i = 0; i < CLIENTS * PETS_PER_CLIENT; i++) {
    const res = await send(url, fixture.key, 'POST', '/v1/pets', newPet(i, `Pet ${i}`));
    assert.equal(res?.status, 201);
    known.set((res!.body as Pet).id, { acked: res!.body as Pet });
  }
  return known;
}

describe('SIGKILL while pets are changed, deleted and created', { concurrency: true }, () => {
  for (const backend of backends) {
    it(`${backend.name}: when the server is killed mid-stream ${ROUNDS} times, then every acknowledged change is stored and the inventory and category counts equal a recount`, { timeout: 240_000 }, async (t) => {
      const fixture = await createFixture(backend);
      let server: ServerChild | undefined;
      t.after(() => killAndDrop(fixture, server));
      server = await startServer(fixture.env);
      let known = await setUp(fixture, server.url);

      for (let r = 1; r <= ROUNDS; r++) {
        const round: Round = { known, unansweredCreates: new Map(), unexpected: [], acknowledged: 0 };
        const live = [...known].filter(([, k]) => k.acked !== 'deleted').map(([id]) => id);
        let reached: () => void = () => {};
        const enough = new Promise<void>((resolve) => (reached = resolve));
        const onAck = () => {
          if (round.acknowledged >= CHANGES_BEFORE_KILL) reached();
        };
        const url = server.url;
        const load = Promise.all(
          Array.from({ length: CLIENTS }, (_, c) => client(url, fixture.key, round, `r${r}-c${c}`, live.filter((_, i) => i % CLIENTS === c), onAck)),
        );
        // Stop waiting if every client gave up (they only do when the server is gone).
        await Promise.race([enough, load]);
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 200)));
        server.kill('SIGKILL');
        await server.exited;
        await load;
        assert.deepEqual(round.unexpected, [], 'no change was refused or failed before the kill');
        assert.ok(round.acknowledged >= CHANGES_BEFORE_KILL, `${round.acknowledged} changes acknowledged before the kill`);

        server = await startServer(fixture.env);
        known = await verify(server.url, fixture.key, round);
        const pets = [...known.values()].flatMap((k) => (k.acked === 'deleted' ? [] : [k.acked])).sort((a, b) => a.id - b.id);
        await checkCounts(server.url, fixture.key, pets);
        // Deleted pets keep their rows (their ids are never reused).
        const integrity = await checkStoreIntegrity(fixture, known.size);
        t.diagnostic(`${backend.name} round ${r}: ${round.acknowledged} changes acknowledged before the kill, ${pets.length} pets live, ${known.size - pets.length} deleted; ${integrity}`);
      }
    });
  }
});
