// verifyWebhook: checks a delivery's Standard Webhooks signature and returns its typed Event.
// WebCrypto only (no node:crypto), so it runs in browsers, workers and Node 20 alike.
import { PetstoreError } from './errors.js';
import type { components } from './generated/petstore.js';

/** Something that happened in your account; `type` tells which shape `data` has. */
export type Event = components['schemas']['Event'];
export type EventType = components['schemas']['EventType'];

/** A `Headers` object, or a plain record such as node:http's `req.headers` (names in any case). */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

export interface VerifyWebhookOptions {
  headers: WebhookHeaders;
  /** The raw body exactly as received: a parsed and re-serialized body does not verify. */
  body: string | Uint8Array;
  /** The endpoint's signing secret, `whsec_…`, as shown when it was created or rotated. */
  secret: string;
  /** How far `webhook-timestamp` may be from now, in seconds (default 300): older deliveries are replays. */
  toleranceSeconds?: number;
}

export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;
const SECRET_PREFIX = 'whsec_';

/**
 * Verifies a webhook delivery and returns its body as the typed {@link Event}. Rejects with a
 * `PetstoreError` of code `invalid_signature` (status 0) when a `webhook-*` header is missing,
 * the timestamp is more than `toleranceSeconds` from now, or no `v1,` signature of the header
 * matches the body under `secret` (during a rotation the header carries one per live secret).
 * Deduplicate on `event.id` (the `webhook-id`): a delivery may arrive more than once.
 */
export async function verifyWebhook(options: VerifyWebhookOptions): Promise<Event> {
  const { headers, body, secret, toleranceSeconds = DEFAULT_WEBHOOK_TOLERANCE_SECONDS } = options;
  if (typeof secret !== 'string' || secret === '') throw new TypeError('verifyWebhook: secret must be the endpoint\'s whsec_… secret.');
  if (!(Number.isFinite(toleranceSeconds) && toleranceSeconds >= 0)) throw new TypeError('verifyWebhook: toleranceSeconds must be a number >= 0.');
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw invalid('a webhook-id, webhook-timestamp or webhook-signature header is missing.');
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw invalid(`webhook-timestamp is not unix seconds: ${JSON.stringify(timestamp)}.`);
  const skew = Math.abs(Date.now() / 1000 - Number(timestamp));
  if (skew > toleranceSeconds) throw invalid(`webhook-timestamp is ${Math.round(skew)} s from now, more than ${toleranceSeconds} s.`);

  const bodyBytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const expected = await hmacSha256(decodeBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret), concat(new TextEncoder().encode(`${id}.${timestamp}.`), bodyBytes));
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || value === undefined) continue;
    const bytes = decodeBase64(value);
    // No early exit: every signature is compared in full, in constant time.
    if (bytes !== undefined && constantTimeEqual(bytes, expected)) matched = true;
  }
  if (!matched) throw invalid('no signature matches the body under this secret.');

  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  try {
    return JSON.parse(text) as Event;
  } catch (cause) {
    throw new PetstoreError({ status: 0, code: 'unexpected_response', message: 'verifyWebhook: the signature is valid but the body is not JSON.', cause });
  }
}

function invalid(reason: string): PetstoreError {
  return new PetstoreError({ status: 0, code: 'invalid_signature', message: `verifyWebhook: ${reason}` });
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get(name) ?? undefined;
  const record = headers as Record<string, string | readonly string[] | undefined>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() !== name) continue;
    // node:http joins repeated headers; a list here is joined the same way.
    const joined = typeof value === 'string' ? value : value?.join(', ');
    if (joined !== undefined) return joined;
  }
  return undefined;
}

async function hmacSha256(key: Uint8Array<ArrayBuffer> | undefined, data: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  if (key === undefined || key.length === 0) throw new TypeError('verifyWebhook: secret is not a whsec_ secret (base64 after the prefix).');
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new TypeError('verifyWebhook: WebCrypto (crypto.subtle) is not available here (browsers expose it only in secure contexts).');
  const cryptoKey = await subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await subtle.sign('HMAC', cryptoKey, data));
}

/** Standard base64 (with or without padding) to bytes, or undefined when it is not base64. */
function decodeBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Equal bytes, in a time that depends only on the lengths (which are public: 32 bytes). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}
