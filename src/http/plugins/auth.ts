// Bearer authentication. Runs as an onRequest hook, so it precedes body parsing and
// validation: an unauthenticated caller learns nothing about the request's shape.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { InternalError, UnauthorizedError } from '../../errors.js';
import type { ApiKeyService, AuthContext } from '../../services/api-keys.js';

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

// Callback style, not async: a key verified moments ago is answered from the cache with no
// promise or microtask at all, which is most requests.
export function createAuthHook(apiKeys: ApiKeyService) {
  return function authenticate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    // Authenticated answers are per account: never cache them anywhere.
    reply.header('cache-control', 'no-store');
    const token = bearerToken(request.headers.authorization);
    const cached = apiKeys.authenticateCached(token);
    if (cached) {
      request.auth = cached;
      done();
      return;
    }
    apiKeys.verify(token).then((auth) => {
      request.auth = auth;
      done();
    }, done);
  };
}

/** The authenticated account; only valid on routes behind the auth hook. */
export function accountId(request: FastifyRequest): string {
  if (!request.auth) throw new InternalError();
  return request.auth.accountId;
}
