// Bearer authentication. Runs as an onRequest hook, so it precedes body parsing and
// validation: an unauthenticated caller learns nothing about the request's shape.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InternalError, UnauthorizedError } from '../../errors.js';
import type { ApiKeyService, AuthContext } from '../../services/api-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

export function createAuthHook(apiKeys: ApiKeyService) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Authenticated answers are per account: never cache them anywhere.
    reply.header('cache-control', 'no-store');
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      throw new UnauthorizedError('An API key is required. Send it as `Authorization: Bearer <API_KEY>`.', false);
    }
    const match = BEARER.exec(header);
    if (!match?.[1]) {
      throw new UnauthorizedError('The Authorization header must have the form `Bearer <API_KEY>`.', false);
    }
    request.auth = await apiKeys.authenticate(match[1]);
  };
}

/** The authenticated account; only valid on routes behind the auth hook. */
export function accountId(request: FastifyRequest): string {
  if (!request.auth) throw new InternalError();
  return request.auth.accountId;
}
