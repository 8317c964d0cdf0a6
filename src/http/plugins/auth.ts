// Bearer authentication. Runs as an onRequest hook, so it precedes body parsing and
// validation: an unauthenticated caller learns nothing about the request's shape.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { InsufficientScopeError, InternalError, RateLimitedError, UnauthorizedError } from '../../errors.js';
import { SCOPES, type Scope } from '../../schemas/api-keys.js';
import type { ApiKeyService, AuthContext } from '../../services/api-keys.js';
import type { AuditContext } from '../../services/audit.js';
import type { AuthFailureGuard } from '../../services/auth-failures.js';
import type { RateLimitDecision } from '../../services/rate-limit.js';
import { FULL_ACCESS, SCOPE_BIT } from '../../services/scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

/** The token of a well-formed `Authorization: Bearer <token>` header, else undefined. */
export function parseBearer(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/** The token of an `Authorization: Bearer <token>` header, or UnauthorizedError saying what is wrong. */
export function bearerToken(header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw new UnauthorizedError('An API key is required. Send it as `Authorization: Bearer <API_KEY>`.', false);
  }
  const token = parseBearer(header);
  if (!token) {
    throw new UnauthorizedError('The Authorization header must have the form `Bearer <API_KEY>`.', false);
  }
  return token;
}

/** The route schema's extension naming the scope an operation needs (declared next to each route). */
export const REQUIRED_SCOPE = 'x-required-scope';

/** Spread into a route's schema: the scope its operation needs (the document states it, the auth hook enforces it). */
export const requiresScope = (scope: Scope) => ({ [REQUIRED_SCOPE]: scope });

const ANY_KEY = '*';

/** Spread into a route's schema: any valid key may call it, since what it does is checked call by call (/mcp). */
export const anyKey = { [REQUIRED_SCOPE]: ANY_KEY };

/** The scope the matched route declares; undefined when it declares none (only full-access keys may call it). */
function requiredScope(request: FastifyRequest): Scope | typeof ANY_KEY | undefined {
  return (request.routeOptions.schema as Record<string, Scope | typeof ANY_KEY | undefined> | undefined)?.[REQUIRED_SCOPE];
}

/**
 * Refuses a key without the scope the route needs: 403 insufficient_scope, before anything
 * about the request (its body, the resource) is looked at, so it tells nothing about them.
 */
export function authorize(request: FastifyRequest, auth: AuthContext): void {
  if (auth.grants === FULL_ACCESS) return;
  const scope = requiredScope(request);
  if (scope === undefined) {
    if (request.routeOptions.url === undefined) return; // no route: the 404 tells nothing
    throw new InsufficientScopeError(SCOPES.join(' '), 'This operation needs a full-access API key (one without scopes).');
  }
  if (scope !== ANY_KEY && (auth.grants & SCOPE_BIT[scope]) === 0) throw new InsufficientScopeError(scope);
}

/** Counts failed authentications per client address (services/auth-failures.ts); metrics count its refusals. */
export interface AuthFailureLimit {
  guard: AuthFailureGuard;
  refused: () => void;
}

const tooMany = (decision: RateLimitDecision) =>
  new RateLimitedError(decision.retryAfterSeconds, {}, 'Too many failed authentications from your address (wrong, revoked or missing API keys).');

// Callback style, not async: a key verified moments ago is answered from the cache with no
// promise or microtask at all, which is most requests. Authentication (401) comes first, then
// the scope (403). A key not known to be valid counts against its address first (429 when
// over the limit, before any lookup).
export function createAuthHook(apiKeys: ApiKeyService, limit: AuthFailureLimit) {
  const { guard } = limit;
  function verify(request: FastifyRequest, token: string, done: HookHandlerDoneFunction): void {
    apiKeys.verify(token, { requestId: request.id, clientAddress: request.ip }).then((auth) => {
      guard.settled(token, true);
      request.auth = auth;
      try {
        authorize(request, auth);
      } catch (error) {
        done(error as Error);
        return;
      }
      done();
    }, (error: unknown) => {
      if (error instanceof UnauthorizedError) guard.settled(token, false);
      done(error as Error);
    });
  }
  function afterAttempt(request: FastifyRequest, decision: RateLimitDecision, done: HookHandlerDoneFunction): void {
    if (!decision.allowed) {
      limit.refused();
      done(tooMany(decision));
      return;
    }
    let token: string;
    try {
      token = bearerToken(request.headers.authorization);
    } catch (error) {
      done(error as Error);
      return;
    }
    verify(request, token, done);
  }
  return function authenticate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    // Authenticated answers are per account: never cache them anywhere.
    reply.header('cache-control', 'no-store');
    const token = parseBearer(request.headers.authorization);
    const cached = token === undefined ? undefined : apiKeys.authenticateCached(token);
    if (cached) {
      request.auth = cached;
      authorize(request, cached);
      done();
      return;
    }
    if (token !== undefined && guard.isKnownValid(token)) {
      verify(request, token, done);
      return;
    }
    const decision = guard.attempt(request.ip);
    if ('then' in decision) decision.then((d) => afterAttempt(request, d, done), done);
    else afterAttempt(request, decision, done);
  };
}

/** Who the audit log names for a change this request makes: its key, request id and client address. */
export function auditContextOf(request: FastifyRequest): AuditContext {
  return { actor: { type: 'api_key', keyId: authOf(request).keyId }, requestId: request.id, clientAddress: request.ip };
}

/** The authenticated key; only valid on routes behind the auth hook. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new InternalError();
  return request.auth;
}

/** The authenticated account; only valid on routes behind the auth hook. */
export function accountId(request: FastifyRequest): string {
  if (!request.auth) throw new InternalError();
  return request.auth.accountId;
}
