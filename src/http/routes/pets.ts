// Thin handlers: validated input in, service call, shaped output. No business rules here.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { Clock } from '../../clock.js';
import { GoneError } from '../../errors.js';
import {
  CreatePetHeaders,
  idempotencyKeyValue,
  ListPetsQuery,
  NewPet,
  PAGE_LIMIT_DEFAULT,
  Pet,
  PetIdParams,
  Pets,
  ref,
} from '../../schemas/index.js';
import type { Services } from '../../services/index.js';
import type { PetPage } from '../../services/pets.js';
import { GET_PET_SUNSET_AT, getPetDeprecationExtensions, getPetDeprecationHeaders } from '../deprecation.js';
import { petEtag } from '../../services/pet-changes.js';
import { etagHeader, notModified, preconditionFailedResponse, readConditionHeaders } from '../conditional.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import type { Metrics } from '../plugins/metrics.js';
import { commonErrors, errorResponse, idempotentReplayedHeader, noContent, pageLinkHeaders, rateLimitHeaders, retryAfterHeader, success } from '../responses.js';

const linkHeader = pageLinkHeaders('/v1/pets');

const deprecationHeaders = {
  ...rateLimitHeaders,
  Deprecation: { type: 'string' as const, description: 'RFC 9745: when the operation was deprecated, as `@<unix seconds>`.' },
  Sunset: { type: 'string' as const, description: 'RFC 8594: removal date, `Thu, 05 Dec 2030 00:00:00 GMT`. From then on: 410.' },
  Link: {
    type: 'string' as const,
    description: 'The successor (`</v1/pets>; rel="successor-version"`) and the deprecation notice (`rel="deprecation"`).',
  },
};

/**
 * What the pet routes share with the GET /v1/pets/{petId} fast path (src/http/fast-path.ts):
 * the bytes of shared (frozen) pages and pets, serialized once by each route's response
 * schema (a caching store hands out the same objects for the same query), and getPet's
 * deprecated-call counter per account.
 */
export function createPetWire(metrics: Metrics) {
  const deprecatedCallCounters = new Map<string, { inc(): void }>();
  return {
    pages: new WeakMap<PetPage, { body: string; link: string | undefined }>(),
    pets: new WeakMap<Pet, string>(),
    deprecatedCallsOf(account: string): { inc(): void } {
      let counter = deprecatedCallCounters.get(account);
      if (!counter) {
        counter = metrics.deprecatedCallsOf('getPet', account);
        deprecatedCallCounters.set(account, counter);
      }
      return counter;
    },
  };
}

export type PetWire = ReturnType<typeof createPetWire>;

export interface PetRoutesOptions {
  services: Services;
  clock: Clock;
  wire: PetWire;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The Link to the next page of pets, keeping `limit` and both filters. */
export function nextPetsLink(limit: number, status: string | undefined, categoryId: number | undefined, cursor: string): string {
  const next = new URLSearchParams({ limit: String(limit) });
  if (status) next.set('status', status);
  if (categoryId !== undefined) next.set('categoryId', String(categoryId));
  next.set('cursor', cursor);
  return `</v1/pets?${next.toString()}>; rel="next"`;
}

/** The route's compiled serializer for its 200 application/json response schema. */
function serialized(reply: FastifyReply, value: object): string {
  return String(reply.serializeInput(value as Record<string, unknown>, '200', 'application/json'));
}

/** Sends JSON serialized earlier; Fastify passes a string with a JSON type through untouched. */
function sendSerialized(reply: FastifyReply, body: string): FastifyReply {
  return reply.type(JSON_TYPE).send(body);
}

type App = Parameters<FastifyPluginAsyncTypebox>[0];

export const petRoutes: FastifyPluginAsyncTypebox<PetRoutesOptions> = async (app, { services, clock, wire }) => {
  // One function per operation, registered in the order the served document lists them.
  listPets(app, services, wire);
  createPet(app, services);
  getPet(app, services, clock, wire);
};

function listPets(app: App, services: Services, { pages: pageWire }: PetWire): void {
  app.get(
    '/v1/pets',
    {
      schema: {
        operationId: 'listPets',
        ...requiresScope('pets:read'),
        tags: ['animals'],
        summary: 'List all animals',
        description:
          'Returns a page of the account\'s animals in ascending `id` order, optionally filtered by `status` and `categoryId`. ' +
          'When more animals exist, the `Link` header carries `rel="next"`; follow it until it is absent. ' +
          'Pages are keyset-based: every animal that existed when paging started, and still matches the filters, is returned exactly once; ' +
          'one whose status or category changes during a filtered walk may be missed, never repeated.',
        querystring: ListPetsQuery,
        response: {
          200: success('A page of animals (a bare JSON array).', ref(Pets), linkHeader),
          400: errorResponse(
            'A query parameter is invalid (`invalid_request`) or the cursor is malformed or tampered with (`invalid_cursor`).',
            rateLimitHeaders,
          ),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, status, categoryId, cursor } = request.query;
      const page = await services.pets.list(accountId(request), { limit, status, categoryId, cursor });
      let wire = pageWire.get(page);
      if (!wire) {
        const link = page.nextCursor ? nextPetsLink(limit, status, categoryId, page.nextCursor) : undefined;
        wire = { body: serialized(reply, page.pets), link };
        if (Object.isFrozen(page)) pageWire.set(page, wire);
      }
      if (wire.link) reply.header('link', wire.link);
      return sendSerialized(reply, wire.body);
    },
  );
}

/** createPet's 201: the pet, where it lives and its ETag. */
const sendCreated = (reply: FastifyReply, pet: Pet) => reply.status(201).header('location', `/v1/pets/${pet.id}`).header('etag', petEtag(pet)).send(pet);

function createPet(app: App, services: Services): void {
  app.post(
    '/v1/pets',
    {
      schema: {
        operationId: 'createPet',
        ...requiresScope('pets:write'),
        tags: ['animals'],
        summary: 'Add an animal',
        description:
          'Adds an animal to the account. The response body includes the assigned `id`. A 201 is sent only once the animal is durably stored. ' +
          'Send an `Idempotency-Key` header to make retries safe.',
        body: ref(NewPet),
        headers: CreatePetHeaders,
        response: {
          201: success(
            'Animal added (or, with a reused Idempotency-Key, the first response replayed: the pet as it is now). The body includes the assigned `id`.',
            ref(Pet),
            {
              ...rateLimitHeaders,
              Location: { type: 'string', description: 'The new animal: `/v1/pets/{petId}`, where `updatePet` and `deletePet` act on it.' },
              ...idempotentReplayedHeader,
              ...etagHeader,
            },
          ),
          409: errorResponse('A request with the same Idempotency-Key is still running (`idempotency_key_in_use`). Retry after `Retry-After` seconds.', {
            ...rateLimitHeaders,
            ...retryAfterHeader,
          }),
          // A replay answers with the pet as it is now: once deleted, there is none.
          404: errorResponse('With a reused Idempotency-Key: the animal it created has since been deleted (`not_found`).', rateLimitHeaders),
          422: errorResponse('The Idempotency-Key was already used with a different body (`idempotency_key_reused`). Use a new key.', rateLimitHeaders),
          400: errorResponse(
            'The body is missing, not JSON (`invalid_json`), not sent as application/json (`invalid_content_type`), or has a missing, unknown or invalid field (`invalid_request`).',
            rateLimitHeaders,
          ),
          413: errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const header = request.headers['idempotency-key'];
      if (header === undefined) return sendCreated(reply, await services.pets.create(accountId(request), request.body));
      const { pet, replayed } = await services.pets.createIdempotent(accountId(request), request.body, idempotencyKeyValue(header));
      if (replayed) reply.header('idempotent-replayed', 'true');
      return sendCreated(reply, pet);
    },
  );
}

function getPet(app: App, services: Services, clock: Clock, { pets: petWire, deprecatedCallsOf }: PetWire): void {
  app.get(
    '/v1/pets/:petId',
    {
      onSend: (_request, reply, payload, done) => {
        reply.headers(getPetDeprecationHeaders);
        done(null, payload);
      },
      schema: {
        operationId: 'getPet',
        ...requiresScope('pets:read'),
        tags: ['animals'],
        summary: 'Get an animal (deprecated)',
        description:
          'Deprecated: removed on 5 December 2030 (from then on it answers 410 `gone`). Use `GET /pets` with the `status` filter instead. ' +
          'Every response carries `Deprecation`, `Sunset` and `Link` headers. An animal of another account answers 404, like a missing one. ' +
          'The 200 carries the pet\'s `ETag`; with `If-None-Match` naming it, the answer is 304 without a body; with `If-Match` not naming it, 412.',
        deprecated: true,
        ...getPetDeprecationExtensions,
        params: PetIdParams,
        headers: readConditionHeaders('pet'),
        response: {
          200: success('The animal.', ref(Pet), { ...deprecationHeaders, ...etagHeader }),
          304: noContent('Not modified: the pet\'s ETag is one `If-None-Match` names.', { ...deprecationHeaders, ...etagHeader }),
          400: errorResponse('`petId` is not an integer from 1 to 9007199254740991, or `If-Match` is malformed (`invalid_request`).', deprecationHeaders),
          404: errorResponse('No animal with this id in the account (`not_found`).', deprecationHeaders),
          410: errorResponse('The operation was removed at its sunset date (`gone`).', deprecationHeaders),
          412: preconditionFailedResponse('pet', { read: true, headers: deprecationHeaders }),
          ...commonErrors(deprecationHeaders),
        },
      },
    },
    async (request, reply) => {
      deprecatedCallsOf(accountId(request)).inc();
      if (clock.now() >= GET_PET_SUNSET_AT) {
        throw new GoneError('GET /v1/pets/{petId} was removed on 5 December 2030. Use GET /v1/pets with the status filter instead.');
      }
      const pet = await services.pets.get(accountId(request), request.params.petId);
      const etag = petEtag(pet);
      const unchanged = notModified(request.headers, etag, `Pet ${pet.id}`);
      reply.header('etag', etag);
      if (unchanged) return reply.status(304).send();
      let body = petWire.get(pet);
      if (body === undefined) {
        body = serialized(reply, pet);
        if (Object.isFrozen(pet)) petWire.set(pet, body);
      }
      return sendSerialized(reply, body);
    },
  );
}

