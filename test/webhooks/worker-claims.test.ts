// The webhook worker claims in proportion to the work, not to the attempts: with one endpoint
// at its limit, a claim skips it and (in both stores) scans every due job of it for nothing, so
// claiming after each attempt made a backlog drain quadratic (bench/webhooks.ts: 323/s for
// 10 000 events on SQLite). Here a store in memory counts the claims, and the scans they skip.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { createWebhookWorker, type Send } from '../../src/services/webhook-worker.js';
import type { AttemptRecord, ClaimedDelivery, WebhookRepository } from '../../src/store/webhooks.js';

const BACKLOG = 2000;
const ENDPOINT_LIMIT = 16;

it('when one endpoint has a backlog, then every event is attempted once and claims that skip the endpoint stay few', { timeout: 30_000 }, async () => {
  const due = Array.from({ length: BACKLOG }, (_, i) => i + 1);
  let claims = 0;
  let skippingClaims = 0;
  const recorded: AttemptRecord[] = [];
  const delivery = (seq: number): ClaimedDelivery => ({
    jobId: seq, deliveryId: `whd_${seq}`, leasedUntil: Date.now() + 60_000, accountId: 'acc', endpointId: 'we_1', eventSeq: seq, attempts: 0, singleAttempt: false, url: 'http://receiver.test/',
    disabled: false, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3xRhQ0k5Dj0=', previousSecret: undefined, previousSecretExpiresAt: undefined,
    event: { seq, id: `evt_${seq}`, type: 'pet.created', createdAt: '2026-11-23T12:00:00.000Z', data: '{}' },
  });
  const webhooks: Pick<WebhookRepository, 'fanOut' | 'claim' | 'record' | 'renewLease' | 'release'> = {
    async fanOut() {
      return 0;
    },
    async claim(_now: number, _leaseMs: number, max: number, busy: readonly string[], busyAccounts: readonly string[] = []) {
      claims++;
      // The endpoint (or its account) skipped: the stores walk all its due jobs to find none.
      if (busy.includes('we_1') || busyAccounts.includes('acc')) {
        skippingClaims++;
        return [];
      }
      return due.splice(0, max).map(delivery);
    },
    async renewLease() {
      return true;
    },
    async release(leases) {
      due.unshift(...leases.map((l) => l.jobId));
    },
    async record(records: readonly AttemptRecord[]) {
      recorded.push(...records);
    },
  };
  // Answers on a later turn, like a fast receiver.
  const send: Send = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    return { kind: 'response', status: 204 };
  };
  const worker = createWebhookWorker({
    webhooks,
    clock: { now: () => Date.now() },
    log: { warn: () => {} } as unknown as FastifyBaseLogger,
    send,
    counters: { attempt: () => {}, endpointDisabled: () => {} },
    options: { schedule: [0], timeoutMs: 1000, concurrency: 64, endpointConcurrency: ENDPOINT_LIMIT, accountConcurrency: ENDPOINT_LIMIT },
  });
  worker.start();
  const deadline = Date.now() + 20_000;
  while (recorded.length < BACKLOG) {
    assert.ok(Date.now() < deadline, `${recorded.length} of ${BACKLOG} recorded`);
    await sleep(5);
  }
  await worker.stop();
  assert.deepEqual(recorded.map((r) => r.eventSeq).sort((a, b) => a - b), Array.from({ length: BACKLOG }, (_, i) => i + 1), 'each event attempted and recorded once');
  assert.ok(recorded.every((r) => r.outcome === 'succeeded'));
  // About one claim per CLAIM_MAX (16) attempts, plus the polls (every 200 ms) while it drains.
  assert.ok(claims < BACKLOG / 4, `${claims} claims for ${BACKLOG} attempts`);
  assert.ok(skippingClaims < BACKLOG / 16, `${skippingClaims} claims skipped the only endpoint`);
});
