// API keys over HTTP (experimental): thin handlers over services.keys. The caller's key bounds
// what it may make (scopes, expiry): the service's rules, not the route's.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import { ApiKey, ApiKeys, CreatedApiKey, KeyIdParams, NewApiKey, RollApiKey } from '../../schemas/api-keys.js';
import { PAGE_LIMIT_DEFAULT, ref } from '../../schemas/index.js';
import type { Services } from '../../services/index.js';
import type { KeyCaller } from '../../services/keys.js';
import { auditContextOf, authOf, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, insufficientScopeHeader, nextPageLink, noContent, pageLinkHeaders, rateLimitHeaders, stability, success } from '../responses.js';

const KEYS_PATH = '/v1/api-keys';

const ABOUT = 'See /docs/keys for scopes, expiry, rolling without downtime and the key format. Experimental.';
const notFound = errorResponse('No API key with this id in your account (`not_found`): another account\'s key id is not found either.', rateLimitHeaders);
const badId = errorResponse('The key id is empty, longer than 64 characters, or has characters other than letters, digits and `_` (`invalid_request`).', rateLimitHeaders);
const tooLarge = errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders);
const escalation = (what: string) =>
  errorResponse(`${what} (\`insufficient_scope\`); or the calling key lacks the operation's own scope (\`insufficient_scope\`). \`WWW-Authenticate\` names the scope.`, { ...insufficientScopeHeader, ...rateLimitHeaders });
const createdHeaders = { ...rateLimitHeaders, Location: { type: 'string' as const, description: 'The new key: `/v1/api-keys/{keyId}`.' } };

const ListKeysQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: PAGE_LIMIT_DEFAULT, description: 'Maximum number of keys to return.' })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: <…>; rel="next"` header of the previous page.' })),
  },
  { additionalProperties: false },
);

type App = Parameters<FastifyPluginAsyncTypebox>[0];
type KeyService = Services['keys'];

/** The caller as the service sees it: its account, and its key's scopes and expiry (the limits on what it may make). */
function callerOf(request: FastifyRequest): KeyCaller {
  const auth = authOf(request);
  return { accountId: auth.accountId, key: { keyId: auth.keyId, scopes: auth.scopes, expiresAt: auth.expiresAt }, audit: auditContextOf(request) };
}

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  // One function per operation, registered in the order the served document lists them.
  createApiKey(app, services.keys);
  listApiKeys(app, services.keys);
  getApiKey(app, services.keys);
  rollApiKey(app, services.keys);
  revokeApiKey(app, services.keys);
};

function createApiKey(app: App, keys: KeyService): void {
  app.post(
    KEYS_PATH,
    {
      schema: {
        operationId: 'createApiKey',
        ...requiresScope('keys:write'),
        tags: ['animals'],
        summary: 'Create an API key',
        description:
          'Makes a key in your account and the calling key\'s environment (a staging key makes staging keys). The answer holds the ' +
          'secret `key`, **shown only now**. `scopes` absent: full access. No escalation: a restricted key can only create keys ' +
          'whose scopes are within its own, and never a full-access key. `expiresAt` must be in the future and at most a year away; ' +
          'a key never outlives the key that made it: a later (or absent) `expiresAt` is **capped** at the calling key\'s expiry. ' + ABOUT,
        ...stability('experimental'),
        body: NewApiKey,
        response: {
          201: success('Created. Store the `key` now: it is not shown again (roll the key to get a new secret).', ref(CreatedApiKey), createdHeaders),
          400: errorResponse(
            'A field is invalid (an unknown or repeated scope, an empty list, a name too long or with control characters, `expiresAt` ' +
              'not an RFC 3339 time, in the past or more than a year away) or unknown (`invalid_request`); the body is not JSON ' +
              '(`invalid_json`) or not application/json (`invalid_content_type`).',
            rateLimitHeaders,
          ),
          413: tooLarge,
          ...commonErrors(),
          403: escalation('The calling key is restricted and asked for a scope it lacks, or for a full-access key'),
        },
      },
    },
    async (request, reply) => {
      const created = await keys.create(callerOf(request), request.body ?? {});
      return reply.status(201).header('location', `${KEYS_PATH}/${created.id}`).send(created);
    },
  );
}

function listApiKeys(app: App, keys: KeyService): void {
  app.get(
    KEYS_PATH,
    {
      schema: {
        operationId: 'listApiKeys',
        ...requiresScope('keys:read'),
        tags: ['animals'],
        summary: 'List API keys',
        description: 'Your account\'s keys, revoked and expired ones too, oldest first, paged like `GET /pets`. Metadata only: never a secret or its hash. ' + ABOUT,
        ...stability('experimental'),
        querystring: ListKeysQuery,
        response: {
          200: success('A page of keys (a bare JSON array).', ref(ApiKeys), pageLinkHeaders(KEYS_PATH)),
          400: errorResponse('A query parameter is invalid (`invalid_request`) or the cursor is malformed or tampered with (`invalid_cursor`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, cursor } = request.query;
      const page = await keys.list(authOf(request).accountId, { limit, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(KEYS_PATH, limit, undefined, page.nextCursor));
      return page.keys;
    },
  );
}

function getApiKey(app: App, keys: KeyService): void {
  app.get(
    `${KEYS_PATH}/:keyId`,
    {
      schema: {
        operationId: 'getApiKey',
        ...requiresScope('keys:read'),
        tags: ['animals'],
        summary: 'Get an API key',
        description: 'The key\'s metadata: name, scopes, expiry, last use (to within a minute), revocation. Never its secret. ' + ABOUT,
        ...stability('experimental'),
        params: KeyIdParams,
        response: { 200: success('The key.', ref(ApiKey), rateLimitHeaders), 400: badId, 404: notFound, ...commonErrors() },
      },
    },
    async (request) => keys.get(authOf(request).accountId, request.params.keyId),
  );
}

function rollApiKey(app: App, keys: KeyService): void {
  app.post(
    `${KEYS_PATH}/:keyId/roll`,
    {
      schema: {
        operationId: 'rollApiKey',
        ...requiresScope('keys:write'),
        tags: ['animals'],
        summary: 'Roll an API key',
        description:
          'Makes a new key with the same name, scopes, environment and expiry (capped at the calling key\'s), its secret **shown ' +
          'only now**, and sets the old key to expire after `expiresInSeconds` (default 86400, 0: at once, at most 604800), on ' +
          'every instance; it never lives longer than it would have. Deploy the new key meanwhile. A restricted key can only roll ' +
          'keys whose scopes are within its own. ' + ABOUT,
        ...stability('experimental'),
        params: KeyIdParams,
        body: RollApiKey,
        response: {
          201: success('The new key. Store the `key` now: it is not shown again.', ref(CreatedApiKey), createdHeaders),
          400: errorResponse(
            'The key id or `expiresInSeconds` is invalid, there are unknown fields, or the key is revoked or expired already ' +
              '(`invalid_request`); the body is not JSON (`invalid_json`) or not application/json (`invalid_content_type`).',
            rateLimitHeaders,
          ),
          404: notFound,
          413: tooLarge,
          ...commonErrors(),
          403: escalation('The calling key is restricted and the key to roll has a scope it lacks, or full access'),
        },
      },
    },
    async (request, reply) => {
      const created = await keys.roll(callerOf(request), request.params.keyId, request.body?.expiresInSeconds);
      return reply.status(201).header('location', `${KEYS_PATH}/${created.id}`).send(created);
    },
  );
}

function revokeApiKey(app: App, keys: KeyService): void {
  app.delete(
    `${KEYS_PATH}/:keyId`,
    {
      schema: {
        operationId: 'revokeApiKey',
        ...requiresScope('keys:write'),
        tags: ['animals'],
        summary: 'Revoke an API key',
        description:
          'Revokes the key: refused on every instance within a second. A key may revoke itself, and the last full-access key of the ' +
          'account may be revoked (`petstore keys create` can always make another). Revoking again changes nothing. ' + ABOUT,
        ...stability('experimental'),
        params: KeyIdParams,
        response: { 204: noContent('Revoked.', rateLimitHeaders), 400: badId, 404: notFound, ...commonErrors() },
      },
    },
    async (request, reply) => {
      await keys.revoke(callerOf(request), request.params.keyId);
      return reply.status(204).send();
    },
  );
}
