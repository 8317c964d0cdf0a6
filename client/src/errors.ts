// Every failed call rejects with a PetstoreError: the server's own {code, message, status}
// for a non-2xx answer, or one of the client's codes when no usable answer arrived.
import type { components as ExampleComponents } from './generated/example.js';
import type { components } from './generated/petstore.js';

/**
 * The codes the Petstore API and the messaging example API document on their `Error` schemas
 * (generated from the two served documents; each has its own enum).
 */
export type ServerErrorCode = components['schemas']['Error']['code'] | ExampleComponents['schemas']['Error']['code'];

/**
 * The client's own codes, for calls that got no usable answer (`status` is then 0 unless noted):
 * - `timeout`: no complete answer within `timeoutMs` (per attempt), or a message still `queued`
 *   when the `timeoutMs` of `messages.waitUntilDone` has passed;
 * - `network_error`: the connection failed or broke before a complete answer;
 * - `unexpected_response`: an answer the client cannot read, such as a non-JSON body, or an
 *   error status without an `Error` body (a proxy's HTML page); `status` is the answer's status;
 * - `invalid_signature`: `verifyWebhook` refused a delivery (missing headers, a timestamp out of
 *   tolerance, or no signature matching the body under the secret); never sent by the server.
 */
export type ClientErrorCode = 'timeout' | 'network_error' | 'unexpected_response' | 'invalid_signature';

export type PetstoreErrorCode = ServerErrorCode | ClientErrorCode;

export interface PetstoreErrorInit {
  status: number;
  code: PetstoreErrorCode;
  message: string;
  requestId?: string | undefined;
  retryAfter?: number | undefined;
  scope?: string | undefined;
  cause?: unknown;
}

export class PetstoreError extends Error {
  override readonly name = 'PetstoreError';
  /** The HTTP status, or 0 when no answer arrived (`timeout`, `network_error`). */
  readonly status: number;
  readonly code: PetstoreErrorCode;
  /** The answer's `X-Request-Id`: quote it to support. */
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying, from `Retry-After` (429, 503, 409 `idempotency_key_in_use`). */
  readonly retryAfter: number | undefined;
  /**
   * On a 403 `insufficient_scope`: the scope the key lacks (from `WWW-Authenticate`'s `scope`,
   * space-separated when several), e.g. `pets:write`. Use a key that has it.
   */
  readonly scope: string | undefined;

  constructor(init: PetstoreErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.scope = init.scope;
  }
}
