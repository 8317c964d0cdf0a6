// OpenAPI response objects for routes. Fastify serializes each status with its schema,
// and @fastify/swagger publishes description, headers and content as written here.
import Type from 'typebox';
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from '../errors.js';
import { ErrorBody, ref } from '../schemas/index.js';

export type HeaderSpec = Record<string, { type: 'string'; description: string }>;

export const json = <S>(schema: S) => ({ 'application/json': { schema } });

/**
 * A success response. `examples` (name → body) replace the example the reference would build from
 * the schema's properties, where that one would mix fields no real answer has together.
 */
export function success<S>(description: string, schema: S, headers: HeaderSpec = {}, examples?: Record<string, { summary: string; value: unknown }>) {
  const entries = Object.entries(examples ?? {});
  const media =
    entries.length === 0
      ? { schema }
      : entries.length === 1
        ? { schema, example: entries[0]![1].value }
        : { schema, examples: examples! };
  return { description, ...(Object.keys(headers).length ? { headers } : {}), content: { 'application/json': media } };
}

/**
 * A response with no body (a 204). `type: 'null'` is how @fastify/swagger publishes a response
 * without `content`; without it, the response object itself would be published as an
 * application/json schema, and generated clients would wait for a body that never comes.
 * Typed `undefined`, so the handler answers with `reply.send()` (no payload reaches onSend hooks).
 */
export function noContent(description: string, headers: HeaderSpec = {}) {
  return Type.Unsafe<undefined>({ type: 'null', description, ...(Object.keys(headers).length ? { headers } : {}) });
}

const exampleOf = (code: ErrorCode) => ({ code, message: ERROR_CODES[code], status: ERROR_STATUS[code] });

/**
 * An error response. Its description names the codes it can carry (`not_found`); each becomes
 * an example body, so the reference shows the real code and status rather than a generic one.
 */
export function errorResponse(description: string, headers: HeaderSpec = {}) {
  const codes = [...new Set([...description.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!))].filter(
    (name): name is ErrorCode => Object.hasOwn(ERROR_CODES, name),
  );
  const media = { schema: ref(ErrorBody) };
  const content =
    codes.length === 0
      ? { 'application/json': media }
      : codes.length === 1
        ? { 'application/json': { ...media, example: exampleOf(codes[0]!) } }
        : { 'application/json': { ...media, examples: Object.fromEntries(codes.map((code) => [code, { value: exampleOf(code) }])) } };
  return { description, ...(Object.keys(headers).length ? { headers } : {}), content };
}

export const wwwAuthenticateHeader: HeaderSpec = {
  'WWW-Authenticate': {
    type: 'string',
    description: 'RFC 6750 challenge: `Bearer realm="petstore"`, plus `error="invalid_token"` when a key was sent but refused.',
  },
};

export const insufficientScopeHeader: HeaderSpec = {
  'WWW-Authenticate': {
    type: 'string',
    description: 'RFC 6750 §3.1 challenge: `Bearer realm="petstore", error="insufficient_scope", scope="<the scope needed>"`.',
  },
};

/** On a create's replay (same Idempotency-Key and body). */
export const idempotentReplayedHeader: HeaderSpec = {
  'Idempotent-Replayed': { type: 'string', description: '`true` when this is a replay of an earlier request with the same Idempotency-Key.' },
};

export const retryAfterHeader: HeaderSpec = {
  'Retry-After': { type: 'string', description: 'Seconds to wait before retrying.' },
};

/** draft-ietf-httpapi-ratelimit-headers-09, on every response after authentication. */
export const rateLimitHeaders: HeaderSpec = {
  'RateLimit-Policy': {
    type: 'string',
    description: 'The per-key quota: `"default";q=<requests>;w=<seconds>` (a token bucket of q requests refilled over w seconds).',
  },
  RateLimit: {
    type: 'string',
    description: 'What is left: `"default";r=<requests remaining>;t=<seconds until the quota is full again>`.',
  },
};

/** Responses every authenticated operation can produce. */
export function commonErrors(extraHeaders: HeaderSpec = {}) {
  return {
    401: errorResponse('The API key is missing or invalid (`unauthorized`). Send `Authorization: Bearer <API_KEY>`.', {
      ...wwwAuthenticateHeader,
      ...extraHeaders,
    }),
    403: errorResponse('The API key is restricted and lacks the scope this operation needs (`insufficient_scope`); the message and `WWW-Authenticate` name it.', {
      ...insufficientScopeHeader,
      ...extraHeaders,
    }),
    429: errorResponse('Too many requests for this API key (`rate_limited`). Retry after `Retry-After` seconds.', {
      ...retryAfterHeader,
      ...rateLimitHeaders,
      ...extraHeaders,
    }),
    500: errorResponse('Unexpected server error (`internal_error`). No internals are disclosed; quote X-Request-Id to support.', {
      ...rateLimitHeaders,
      ...extraHeaders,
    }),
    503: errorResponse('The database is unreachable (`service_unavailable`). Retry after `Retry-After` seconds.', {
      ...retryAfterHeader,
      ...extraHeaders,
    }),
  };
}

export const HealthBody = Type.Object({
  status: Type.String(),
  /** What an operator should know although the instance is ready (webhook secrets stored plain). */
  details: Type.Optional(Type.Array(Type.String())),
});

/** Stability marker for an operation's schema; operations without it are stable. */
export type Stability = 'experimental' | 'beta';
export const stability = (level: Stability) => ({ 'x-stability': level });

/**
 * RFC 8288 `Link` to the next page of a listing, root-relative, keeping `limit` and the
 * listing's filter (`status` by default; `type` for events).
 */
export function nextPageLink(path: string, limit: number, filter: string | undefined, cursor: string, filterName = 'status'): string {
  const next = new URLSearchParams({ limit: String(limit), ...(filter ? { [filterName]: filter } : {}), cursor });
  return `<${path}?${next.toString()}>; rel="next"`;
}

/** The response headers of a listing's 200: rate limit, and the Link to the next page. */
export function pageLinkHeaders(path: string) {
  return {
    ...rateLimitHeaders,
    Link: {
      type: 'string' as const,
      description: `RFC 8288 link to the next page: \`<${path}?limit=20&cursor=…>; rel="next"\` (root-relative; keeps \`limit\` and \`status\`). Absent on the last page.`,
    },
  };
}

/** The reference (/docs) shows the operation without a send control ("try it"). */
export const hideTryItPanel = { 'x-hideTryItPanel': true } as const;
