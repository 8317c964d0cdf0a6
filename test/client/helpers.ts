// What the client tests share: a fetch that records every attempt the client makes (the
// client's own `fetch` option, so the real global fetch still does the HTTP), and clients.
import assert from 'node:assert/strict';
import { Petstore, PetstoreError, type PetstoreOptions } from '@petstore/client';
import type { TestApp } from '../helpers/app.js';

export interface Attempt {
  method: string;
  url: string;
  idempotencyKey: string | null;
  /** Set once the answer's headers arrived. */
  status?: number;
  requestId?: string | null;
  replayed?: string | null;
  retryAfter?: string | null;
  /** The answer's body as text. */
  body?: string;
  /** Set when fetch itself failed (no answer). */
  error?: unknown;
}

export interface Recorder {
  fetch: typeof fetch;
  attempts: Attempt[];
}

/** A fetch that records each attempt; `onAnswer` runs (and is awaited) before the client sees an answer. */
export function recordingFetch(onAnswer?: (attempt: Attempt) => unknown): Recorder {
  const attempts: Attempt[] = [];
  const recording: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    const attempt: Attempt = { method: init?.method ?? 'GET', url: String(input), idempotencyKey: headers.get('idempotency-key') };
    attempts.push(attempt);
    try {
      const response = await fetch(input, init);
      attempt.status = response.status;
      attempt.requestId = response.headers.get('x-request-id');
      attempt.replayed = response.headers.get('idempotent-replayed');
      attempt.retryAfter = response.headers.get('retry-after');
      attempt.body = await response.clone().text();
      await onAnswer?.(attempt);
      return response;
    } catch (error) {
      attempt.error = error;
      throw error;
    }
  };
  return { fetch: recording, attempts };
}

/** An `onAnswer` that, once armed, throws one answer away after the server sent it: the client sees a network error. */
export function loseAnswer() {
  let armed = false;
  return {
    armOnce: () => (armed = true),
    onAnswer: () => {
      if (!armed) return;
      armed = false;
      throw new TypeError('fetch failed: the answer was lost');
    },
  };
}

export type RecordingOptions = Omit<PetstoreOptions, 'apiKey' | 'baseUrl' | 'fetch'> & { onAnswer?: (attempt: Attempt) => unknown };

/** A client of the server at `origin` (`http://127.0.0.1:<port>`) that records its attempts. */
export function recordingClient(origin: string, apiKey: string, options: RecordingOptions = {}): { petstore: Petstore; attempts: Attempt[] } {
  const { onAnswer, ...rest } = options;
  const recorder = recordingFetch(onAnswer);
  return { petstore: new Petstore({ apiKey, baseUrl: `${origin}/v1`, fetch: recorder.fetch, ...rest }), attempts: recorder.attempts };
}

/** A recording client of a new account of `app`, so that a test sees only its own pets and orders. */
export async function newAccountClient(app: TestApp, options: RecordingOptions = {}) {
  const { key, accountId } = await app.createAccount();
  return { ...recordingClient(app.url, key, options), key, accountId };
}

/** The PetstoreError the call rejects with (fails when it fulfils or rejects with anything else). */
export async function petstoreError(promise: Promise<unknown>): Promise<PetstoreError> {
  let error: unknown;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  assert.ok(error instanceof PetstoreError, `expected a PetstoreError, got ${String(error)}`);
  return error;
}

/** A random (v4) UUID, as the client generates for Idempotency-Key and the server for X-Request-Id. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The error matches the answer the server sent for its (only) attempt, field by field. */
export function assertErrorFromAnswer(error: PetstoreError, attempts: Attempt[], status: number, code: string): void {
  assert.equal(attempts.length, 1, `not retried: ${attempts.map((a) => a.status).join(', ')}`);
  const [answer] = attempts;
  const body = JSON.parse(answer!.body!) as { code: string; message: string; status: number };
  assert.equal(error.status, status);
  assert.equal(error.code, code);
  assert.deepEqual({ code: error.code, message: error.message, status: error.status }, body);
  assert.equal(error.requestId, answer!.requestId);
  assert.match(error.requestId ?? '', UUID);
  assert.equal(error.name, 'PetstoreError');
  assert.ok(error instanceof Error);
}
