// Shared by the webhook and event crash suites: a real receiver (node:http on 127.0.0.1 in the
// test process) that records every delivery it gets, the server settings that let deliveries
// reach it, and paged reads of events and deliveries through the API.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { listAll } from './durability.js';

/**
 * `petstore serve` settings for deliveries to a local http receiver, with short leases
 * (2 × 3 s + 10 s) and quick retries. The timeout leaves room for a loaded machine: an attempt
 * that times out is sent again, which would break the exactly-once checks.
 */
export const WEBHOOK_ENV: Record<string, string> = {
  PETSTORE_WEBHOOK_ALLOW_HTTP: 'true',
  PETSTORE_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
  PETSTORE_WEBHOOK_TIMEOUT_MS: '3000',
  PETSTORE_WEBHOOK_RETRY_SCHEDULE: '0,1,1,1',
};

export interface Received {
  id: string;
  body: string;
  timestamp: string;
  signature: string;
  /** The receiver's answer was written out (false while it waits, or when the connection died first). */
  answered: boolean;
}

export interface Receiver {
  url: string;
  /** Every request received (its body read in full), in arrival order. */
  received: Received[];
  /** Distinct webhook-ids received. */
  ids(): Set<string>;
  close(): Promise<void>;
}

/** A receiver that answers `status` after `delayMs` (0: at once). */
export async function startReceiver(options: { delayMs?: number; status?: number } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        id: String(req.headers['webhook-id']),
        body: Buffer.concat(chunks).toString('utf8'),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        answered: false,
      };
      received.push(r);
      res.on('finish', () => (r.answered = true));
      const answer = () => res.writeHead(options.status ?? 204).end();
      if (options.delayMs) setTimeout(answer, options.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    ids: () => new Set(received.map((r) => r.id)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ApiEvent {
  id: string;
  type: string;
  createdAt: string;
  sequence: number;
  data: { object: Record<string, unknown> & { id: number; status?: string }; previousStatus?: string };
}

export const listEvents = (baseUrl: string, key: string) => listAll<ApiEvent>(baseUrl, key, '/v1/events?limit=100');

export interface ApiDelivery {
  id: string;
  eventId: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
}

export const listDeliveries = (baseUrl: string, key: string, endpointId: string, status?: ApiDelivery['status']) =>
  listAll<ApiDelivery>(baseUrl, key, `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100${status ? `&status=${status}` : ''}`);

/** Registers an endpoint for every kind; its id and signing secret. */
export async function registerEndpoint(baseUrl: string, key: string, url: string): Promise<{ id: string; secret: string }> {
  const res = await fetch(`${baseUrl}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  const body = (await res.json()) as { id: string; secret: string };
  assert.equal(res.status, 201, JSON.stringify(body));
  return body;
}

/** POSTs `count` pets, `concurrency` at a time; every one must be created. */
export async function createPets(baseUrl: string, key: string, count: number, concurrency = 16, prefix = 'pet'): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const n = next++;
      const res = await fetch(`${baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `${prefix}-${n}`, categoryId: 1, status: 'available' }),
        signal: AbortSignal.timeout(10_000),
      });
      assert.equal(res.status, 201, await res.text());
      await res.arrayBuffer().catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * What the receiver got, checked against the events: every delivery is signed with `secret`
 * (verified by the standardwebhooks package, not our signer) and its body is the event as
 * GET /v1/events returns it; every event was received; a webhook-id received twice came with
 * the same body both times. Returns how many deliveries were repeats.
 */
export function checkReceived(received: Received[], events: ApiEvent[], secret: string): number {
  const verifier = new Webhook(secret);
  const byId = new Map(events.map((e) => [e.id, e]));
  const bodies = new Map<string, string>();
  let repeats = 0;
  for (const r of received) {
    const event = byId.get(r.id);
    assert.ok(event, `received webhook-id ${r.id} is an event of the account`);
    // Throws on a bad signature (the timestamp is recent: the receiver got it moments ago).
    verifier.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
    assert.deepEqual(JSON.parse(r.body), event, `body of ${r.id} is the event`);
    const seen = bodies.get(r.id);
    if (seen !== undefined) {
      repeats++;
      assert.equal(r.body, seen, `repeat of ${r.id} carries the same body`);
    } else {
      bodies.set(r.id, r.body);
    }
  }
  const missing = events.filter((e) => !bodies.has(e.id)).map((e) => e.sequence);
  assert.deepEqual(missing, [], 'every event was received');
  return repeats;
}
