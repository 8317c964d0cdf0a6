// The failover test's load: clients that each create a pet, place an order for it and deliver
// the order, in a loop, every write with an Idempotency-Key, retrying a 503 (and a 409
// idempotency_key_in_use) with the same key and body until it is answered, as a careful client
// does. It records every response and every acknowledged write, for the checks afterwards.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { type ApiEvent, listEvents } from './webhooks.js';

/** A request answering later than this counts as hung (the service's request timeout is 10 s). */
export const HANG_MS = 12_000;
/** Between a refused write and its retry. */
const RETRY_PAUSE_MS = 100;

export type Op = 'create' | 'place' | 'deliver';

export interface Outcome {
  op: Op;
  status: number;
  code?: string;
  retryAfter: string | null;
  error?: string;
  startedAt: number;
  endedAt: number;
}

export interface Acknowledged {
  op: Op;
  account: number;
  /** The pet's id (create), the order's (place, deliver). */
  id: number;
  name?: string;
  petId?: number;
}

export interface Account {
  accountId: string;
  key: string;
}

export class FailoverLoad {
  readonly outcomes: Outcome[] = [];
  readonly acknowledged: Acknowledged[] = [];
  /** Every pet name sent (acknowledged or not): none may be stored twice. */
  readonly names: string[] = [];
  private running = true;
  private readonly loops: Promise<void>[];
  private readonly prefix = randomUUID().slice(0, 8);

  constructor(
    private readonly url: string,
    private readonly accounts: Account[],
    clients: number,
  ) {
    this.loops = Array.from({ length: clients }, (_, i) => this.loop(i));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Writes answered with something other than 2xx. */
  refused(): Outcome[] {
    return this.outcomes.filter((o) => o.status < 200 || o.status > 299);
  }

  /** Answers the contract does not allow here: anything but 2xx, 409 idempotency_key_in_use and 503 with Retry-After. */
  unexpected(): Outcome[] {
    const retryAfter = (o: Outcome) => /^[1-9][0-9]*$/.test(o.retryAfter ?? '');
    return this.refused().filter((o) =>
      !((o.status === 503 && o.code === 'service_unavailable' && retryAfter(o)) ||
        (o.status === 409 && o.code === 'idempotency_key_in_use' && o.op !== 'deliver' && retryAfter(o))));
  }

  private async call(op: Op, path: string, key: string, idempotencyKey: string, body?: unknown) {
    const startedAt = Date.now();
    try {
      const res = await fetch(this.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(body ?? {}),
        signal: AbortSignal.timeout(HANG_MS),
      });
      const answer = (await res.json().catch(() => undefined)) as { id?: number; code?: string } | undefined;
      const outcome: Outcome = { op, status: res.status, retryAfter: res.headers.get('retry-after'), startedAt, endedAt: Date.now() };
      if (answer?.code) outcome.code = answer.code;
      this.outcomes.push(outcome);
      return { outcome, answer };
    } catch (error) {
      const outcome: Outcome = { op, status: 0, retryAfter: null, error: `${String(error)}${(error as Error).cause ? ` (${String((error as Error).cause)})` : ''}`, startedAt, endedAt: Date.now() };
      this.outcomes.push(outcome);
      return { outcome, answer: undefined };
    }
  }

  /** Sends until a 2xx (or the load stops): the same key and body every time. */
  private async write(op: Op, path: string, key: string, body?: unknown): Promise<{ id?: number } | undefined> {
    const idempotencyKey = randomUUID();
    for (;;) {
      const { outcome, answer } = await this.call(op, path, key, idempotencyKey, body);
      if (outcome.status >= 200 && outcome.status < 300) return answer;
      // Anything else is a failure the checks report; a careful client retries it all the same.
      if (!this.running) return undefined;
      await sleep(RETRY_PAUSE_MS);
    }
  }

  private async loop(client: number): Promise<void> {
    const account = client % this.accounts.length;
    const key = this.accounts[account]!.key;
    for (let n = 0; this.running; n += 1) {
      const name = `${this.prefix}-c${client}-${n}`;
      this.names.push(name);
      const pet = await this.write('create', '/v1/pets', key, { name, categoryId: 1, status: 'available' });
      if (!pet) return;
      this.acknowledged.push({ op: 'create', account, id: pet.id!, name });
      const order = await this.write('place', '/v1/store/orders', key, { petId: pet.id });
      if (!order) return;
      this.acknowledged.push({ op: 'place', account, id: order.id!, petId: pet.id! });
      if (!(await this.write('deliver', `/v1/store/orders/${order.id}/deliver`, key))) return;
      this.acknowledged.push({ op: 'deliver', account, id: order.id! });
    }
  }
}

/**
 * Every acknowledged write is in the database (each pet once, with its name; each order with
 * its pet; each delivered order delivered) and has its event; no pet name is stored twice.
 * Returns how many writes and events were checked.
 */
export async function verifyWrites(db: pg.Client, baseUrl: string, accounts: Account[], loads: FailoverLoad[]): Promise<{ writes: number; events: number }> {
  const pets = await db.query<{ account_id: string; id: number; name: string }>('SELECT account_id, id::int AS id, name FROM pets');
  const orders = await db.query<{ account_id: string; id: number; pet_id: number; status: string }>('SELECT account_id, id::int AS id, pet_id::int AS pet_id, status FROM orders');
  const petsByName = new Map<string, Array<{ account_id: string; id: number }>>();
  for (const row of pets.rows) petsByName.set(row.name, [...(petsByName.get(row.name) ?? []), row]);
  const order = new Map(orders.rows.map((row) => [`${row.account_id}/${row.id}`, row]));
  const events = await Promise.all(accounts.map((a) => listEvents(baseUrl, a.key)));
  const eventKeys = events.map((list) => new Set(list.map((e: ApiEvent) => `${e.type}/${e.data.object.id}`)));
  let writes = 0;
  for (const load of loads) {
    for (const name of load.names) assert.ok((petsByName.get(name)?.length ?? 0) <= 1, `pet ${name} stored once at most`);
    for (const ack of load.acknowledged) {
      const accountId = accounts[ack.account]!.accountId;
      const seen = eventKeys[ack.account]!;
      if (ack.op === 'create') {
        assert.deepEqual(petsByName.get(ack.name!)?.map((p) => [p.account_id, p.id]), [[accountId, ack.id]], `acknowledged pet ${ack.name} stored once`);
        assert.ok(seen.has(`pet.created/${ack.id}`), `pet.created of pet ${ack.id}`);
      } else {
        const row = order.get(`${accountId}/${ack.id}`);
        assert.ok(row, `acknowledged order ${ack.id} of account ${ack.account} stored`);
        if (ack.op === 'place') {
          assert.equal(row.pet_id, ack.petId);
          assert.ok(seen.has(`order.placed/${ack.id}`), `order.placed of order ${ack.id}`);
        } else {
          assert.equal(row.status, 'delivered', `acknowledged delivery of order ${ack.id}`);
          assert.ok(seen.has(`order.delivered/${ack.id}`), `order.delivered of order ${ack.id}`);
        }
      }
      writes += 1;
    }
  }
  return { writes, events: events.reduce((sum, list) => sum + list.length, 0) };
}
