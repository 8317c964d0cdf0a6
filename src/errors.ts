// The error model: every failure the API can report is one of these classes,
// each with a stable machine-readable `code` and the HTTP status it maps to (ERROR_STATUS).
// The codes are part of the public contract (documented in the OpenAPI document).

export const ERROR_CODES = {
  invalid_request: 'The request has a missing, unknown or invalid parameter or body field.',
  invalid_json: 'The request body is not valid JSON (or not valid UTF-8).',
  invalid_content_type: 'The request has a body but its Content-Type is not application/json.',
  unsupported_content_encoding: 'The request body has a Content-Encoding (gzip, br…): send it uncompressed.',
  invalid_cursor: 'The pagination cursor is malformed, tampered with, or was issued for another filter.',
  unauthorized: 'The API key is missing, malformed, unknown, revoked, expired, or for another environment.',
  insufficient_scope: 'The API key is valid but restricted: it lacks the scope this operation needs (named in the message and in WWW-Authenticate).',
  not_found: 'The resource or route does not exist (or belongs to another account).',
  method_not_allowed: 'The route exists but does not support this HTTP method.',
  gone: 'The operation was removed after its sunset date.',
  payload_too_large: 'The request body is larger than the limit.',
  headers_too_large: 'The request headers are larger than the limit (16 KiB).',
  uri_too_long: 'The request URL is longer than the limit (about 16 KiB with the headers).',
  request_timeout: 'The client sent the request too slowly.',
  idempotency_key_reused: 'The Idempotency-Key was already used with a different request body.',
  idempotency_key_in_use: 'A request with the same Idempotency-Key is still being processed.',
  pet_not_available: 'The pet cannot be ordered: its status is not `available`.',
  invalid_transition: 'The order cannot make this move from its current status.',
  pet_has_open_order: 'The pet has a placed order: its status belongs to the order, and it cannot be deleted, until the order is delivered or cancelled.',
  precondition_failed: 'A precondition failed: If-Match names none of the resource\'s current ETags (it changed since you read it, or does not exist), or a change\'s If-None-Match names its current ETag (or is * while it exists). Read it again and retry.',
  category_name_taken: 'Another of your categories already has this name (compared case-insensitively).',
  category_in_use: 'The category still has pets: move or delete them first.',
  invalid_webhook_url: 'The webhook URL is not an https URL on a public address (the message says what to change).',
  webhook_endpoint_limit: 'The account already has the most webhook endpoints it may have (16): delete one first.',
  webhook_endpoint_disabled: 'The webhook endpoint is disabled: enable it (PATCH `disabled: false`) before retrying a delivery.',
  rate_limited: 'Too many requests for this API key; retry after the indicated delay.',
  internal_error: 'An unexpected error occurred on the server.',
  service_unavailable: 'A dependency (the database) is unavailable; retry after the indicated delay.',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The HTTP status of each code: the one table ApiError, raw socket replies and /docs/errors read. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_content_type: 400,
  unsupported_content_encoding: 415,
  invalid_cursor: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  gone: 410,
  payload_too_large: 413,
  headers_too_large: 431,
  uri_too_long: 414,
  request_timeout: 408,
  idempotency_key_reused: 422,
  idempotency_key_in_use: 409,
  pet_not_available: 409,
  invalid_transition: 409,
  pet_has_open_order: 409,
  precondition_failed: 412,
  category_name_taken: 409,
  category_in_use: 409,
  invalid_webhook_url: 400,
  webhook_endpoint_limit: 409,
  webhook_endpoint_disabled: 409,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const satisfies Record<ErrorCode, number>;

export class ApiError extends Error {
  override name = 'ApiError';
  /** Extra response headers (WWW-Authenticate, Retry-After, Allow, ...). */
  readonly headers: Record<string, string>;
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
    this.headers = headers;
  }
}

export class InvalidRequestError extends ApiError {
  constructor(message: string) { super('invalid_request', message); }
}
export class InvalidJsonError extends ApiError {
  constructor(message: string) { super('invalid_json', message); }
}
export class InvalidContentTypeError extends ApiError {
  constructor(message: string) { super('invalid_content_type', message); }
}
export class UnsupportedContentEncodingError extends ApiError {
  constructor(encoding: string) {
    super('unsupported_content_encoding', `Content-Encoding "${headerSafe(encoding).slice(0, 40)}" is not accepted: send the body uncompressed, without a Content-Encoding header.`, {
      'accept-encoding': 'identity',
    });
  }
}
export class InvalidCursorError extends ApiError {
  constructor(message: string) { super('invalid_cursor', message); }
}
/** Header values must be visible ASCII; quotes and backslashes would end the quoted-string. */
const headerSafe = (text: string) => text.replace(/[^\x20-\x7e]|["\\`]/g, '');

export class UnauthorizedError extends ApiError {
  /** tokenPresented: RFC 6750 says error="invalid_token" only when a token was sent. */
  constructor(message: string, tokenPresented: boolean) {
    const challenge = tokenPresented
      ? `Bearer realm="petstore", error="invalid_token", error_description="${headerSafe(message)}"`
      : 'Bearer realm="petstore"';
    super('unauthorized', message, { 'www-authenticate': challenge });
  }
}
export class InsufficientScopeError extends ApiError {
  /** `scope`: what is needed, space-separated when several (RFC 6750 §3's scope attribute). */
  constructor(
    readonly scope: string,
    message = `This API key lacks the ${scope.includes(' ') ? 'scopes' : 'scope'} "${scope}" this operation needs. Use a key that has it (or a full-access key); see GET /v1/api-keys.`,
  ) {
    super('insufficient_scope', message, { 'www-authenticate': `Bearer realm="petstore", error="insufficient_scope", scope="${headerSafe(scope)}"` });
  }
}
export class NotFoundError extends ApiError {
  constructor(message: string) { super('not_found', message); }
}
export class MethodNotAllowedError extends ApiError {
  constructor(method: string, url: string, allowed: string[]) {
    super('method_not_allowed', `${method} is not supported on ${url}. Allowed methods: ${allowed.join(', ')}.`, {
      allow: allowed.join(', '),
    });
  }
}
export class GoneError extends ApiError {
  constructor(message: string) { super('gone', message); }
}
export class PayloadTooLargeError extends ApiError {
  constructor(limit: number) {
    super('payload_too_large', `The request body is larger than ${limit} bytes. Send a smaller body.`);
  }
}
export class IdempotencyKeyReusedError extends ApiError {
  constructor() {
    super('idempotency_key_reused',
      'This Idempotency-Key was already used with a different request body. Use a new key for a new request.');
  }
}
export class IdempotencyKeyInUseError extends ApiError {
  constructor() {
    super('idempotency_key_in_use',
      'A request with this Idempotency-Key is still in progress. Retry after it completes.', { 'retry-after': '1' });
  }
}
export class PetNotAvailableError extends ApiError {
  constructor(petId: number, status: string | undefined) {
    super('pet_not_available',
      `Pet ${petId} is ${status === undefined ? 'not available: it has no status' : `${status}, not available`}. Only pets with status "available" can be ordered.`);
  }
}
export class InvalidTransitionError extends ApiError {
  constructor(orderId: number, status: string, action: string) {
    super('invalid_transition',
      `Order ${orderId} is ${status}: it cannot be ${action}. Only placed orders can be delivered or cancelled.`);
  }
}
export class PetHasOpenOrderError extends ApiError {
  constructor(petId: number, what: 'status' | 'delete') {
    super('pet_has_open_order',
      what === 'status'
        ? `Pet ${petId} has a placed order: its status follows the order. Deliver or cancel the order (POST /v1/store/orders/{orderId}/deliver or /cancel) instead; name and categoryId may still be changed.`
        : `Pet ${petId} has a placed order and cannot be deleted. Deliver or cancel the order first (POST /v1/store/orders/{orderId}/deliver or /cancel).`);
  }
}
/** Why a precondition failed: If-Match names another tag, or the resource does not exist; If-None-Match matched on a change. */
export type PreconditionFailure = 'changed' | 'missing' | 'exists';
const PRECONDITION_MESSAGES: Record<PreconditionFailure, (what: string) => string> = {
  changed: (what) => `${what} has changed since you read it: If-Match does not match its current ETag. GET it again, then retry with the new ETag.`,
  missing: (what) => `${what} does not exist, so If-Match (which asks for a current one) cannot match. Send the request without If-Match, or with If-None-Match: * to create it only if it still does not exist.`,
  exists: (what) =>
    `${what} exists and If-None-Match names its current ETag (or is *), so nothing changed: that header asks to apply the change only if it does not. Send If-Match with its current ETag (GET it) to change it instead.`,
};
export class PreconditionFailedError extends ApiError {
  constructor(what: string, failure: PreconditionFailure = 'changed') {
    super('precondition_failed', PRECONDITION_MESSAGES[failure](what));
  }
}
export class CategoryNameTakenError extends ApiError {
  constructor(name: string) {
    super('category_name_taken', `Another of your categories is already named ${JSON.stringify(name)} (names compare case-insensitively). Choose another name, or rename that category first.`);
  }
}
export class CategoryInUseError extends ApiError {
  constructor(categoryId: number) {
    super('category_in_use', `Category ${categoryId} still has pets (see its petCount). Move them to another category (PATCH /v1/pets/{petId}) or delete them first.`);
  }
}
export class InvalidWebhookUrlError extends ApiError {
  constructor(reason: string) { super('invalid_webhook_url', `The webhook URL is refused: ${reason}`); }
}
export class WebhookEndpointLimitError extends ApiError {
  constructor(max: number) {
    super('webhook_endpoint_limit', `Your account already has ${max} webhook endpoints, the most it may have. Delete one (DELETE /v1/webhook-endpoints/{endpointId}) or reuse one (PATCH its url or eventTypes).`);
  }
}
export class WebhookEndpointDisabledError extends ApiError {
  constructor(id: string) {
    super('webhook_endpoint_disabled', `Webhook endpoint ${id} is disabled: nothing is sent to it. Enable it first (PATCH /v1/webhook-endpoints/${id} with {"disabled": false}), then retry.`);
  }
}
export class RateLimitedError extends ApiError {
  constructor(retryAfterSeconds: number, headers: Record<string, string>, what = 'Rate limit exceeded for this API key.') {
    super('rate_limited',
      `${what} Retry after ${retryAfterSeconds} second(s).`,
      // Not `{ ...headers, 'retry-after': … }`: on Node 20 that gives every 429 a hidden class of its own.
      Object.assign({}, headers, { 'retry-after': String(retryAfterSeconds) }));
  }
}
export class ServiceUnavailableError extends ApiError {
  constructor(message = 'The service is temporarily unavailable. Retry shortly.', retryAfterSeconds = 2) {
    super('service_unavailable', message, { 'retry-after': String(retryAfterSeconds) });
  }
}
export class InternalError extends ApiError {
  constructor() { super('internal_error', 'An unexpected error occurred. It has been logged; retry or contact support with the X-Request-Id.'); }
}

export { CommitOutcomeUnknownError, StoreUnavailableError } from './store/errors.js';
