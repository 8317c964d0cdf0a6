// Standard Webhooks signatures: `v1,` + base64(HMAC-SHA256(secret, `${id}.${timestamp}.${body}`)),
// one per live secret, space-separated. Secrets are `whsec_` + base64 of 32 random bytes; the
// HMAC key is the decoded bytes (what the standardwebhooks and svix verifiers use).
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export const newWebhookSecret = () => SECRET_PREFIX + randomBytes(32).toString('base64');

const keyOf = (secret: string) => Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The webhook-signature header value: one signature per secret, space-separated. */
export const signatureHeader = (secrets: readonly string[], id: string, timestamp: number, body: string) =>
  secrets.map((secret) => sign(secret, id, timestamp, body)).join(' ');

/** The Standard Webhooks headers of one delivery of an event (its id, the send time in seconds, the signatures). */
export const deliveryHeaders = (secrets: readonly string[], eventId: string, timestamp: number, body: string) => ({
  'webhook-id': eventId,
  'webhook-timestamp': String(timestamp),
  'webhook-signature': signatureHeader(secrets, eventId, timestamp, body),
});
