// The event log (experimental): thin handlers over services.events. Pages are sent as the
// stored JSON (the same bytes deliveries sign), which the response schema describes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { PAGE_LIMIT_DEFAULT, ref } from '../../schemas/index.js';
import { Event, EventIdParams, Events, ListEventsQuery } from '../../schemas/events.js';
import type { Services } from '../../services/index.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, nextPageLink, pageLinkHeaders, rateLimitHeaders, stability, success } from '../responses.js';

const EVENTS_PATH = '/v1/events';

/** Sends JSON text as it is: the stored event bytes, which the route's schema describes. */
const sendJsonText = (reply: FastifyReply, text: string) => reply.type('application/json; charset=utf-8').send(text);

const petCreatedExample = {
  id: 'evt_1f0c6b2a9d7e4c3b8a5f2e1d0c9b8a7f',
  type: 'pet.created',
  createdAt: '2026-11-23T10:15:30.000Z',
  sequence: 41,
  data: { object: { id: 7, name: 'Rex', categoryId: 1, status: 'available' } },
};
const statusChangedExample = {
  id: 'evt_5c2d8e1f0a9b4c7d8e2f1a0b9c8d7e6f',
  type: 'pet.status_changed',
  createdAt: '2026-11-23T10:16:02.000Z',
  sequence: 43,
  data: { object: { id: 7, name: 'Rex', categoryId: 1, status: 'pending' }, previousStatus: 'available' },
};

export const eventRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const events = services.events;

  app.get(
    EVENTS_PATH,
    {
      schema: {
        operationId: 'listEvents',
        ...requiresScope('events:read'),
        tags: ['animals'],
        summary: 'List events',
        description:
          'Your account\'s events, **oldest first** (ascending `sequence`), kept for 30 days. Filter by `type` (one kind or a ' +
          'comma-separated list). To catch up after an outage, pass the last `sequence` you processed as `after`; then follow ' +
          '`Link: <…>; rel="next"` (a signed cursor bound to your account and the `type` filter) until it is absent. Every change ' +
          'writes its event in the same transaction, so the log has exactly the changes that happened. Experimental: this may still change.',
        ...stability('experimental'),
        querystring: ListEventsQuery,
        response: {
          200: success('A page of events (a bare JSON array).', ref(Events), pageLinkHeaders(EVENTS_PATH), {
            page: { summary: 'Oldest first', value: [petCreatedExample, statusChangedExample] },
          }),
          400: errorResponse(
            'A query parameter is invalid: `limit` not 1–100, an unknown kind in `type`, `after` not a non-negative integer, or both ' +
              '`after` and `cursor` (`invalid_request`); or the cursor is malformed, tampered with, from another account or for another `type` filter (`invalid_cursor`).',
            rateLimitHeaders,
          ),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, type, after, cursor } = request.query;
      const page = await events.list(accountId(request), { limit, type, after, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(EVENTS_PATH, limit, type, page.nextCursor, 'type'));
      return sendJsonText(reply, page.json);
    },
  );

  app.get(
    `${EVENTS_PATH}/:eventId`,
    {
      schema: {
        operationId: 'getEvent',
        ...requiresScope('events:read'),
        tags: ['animals'],
        summary: 'Get an event',
        description: 'One event, exactly as deliveries send it. Another account\'s event answers 404, like an unknown or pruned one. Experimental.',
        ...stability('experimental'),
        params: EventIdParams,
        response: {
          200: success('The event.', ref(Event), rateLimitHeaders, { 'pet.created': { summary: 'A pet was created', value: petCreatedExample } }),
          400: errorResponse('The id is empty, longer than 64 characters, or has characters other than letters, digits and `_` (`invalid_request`).', rateLimitHeaders),
          404: errorResponse('No event with this id in your account (`not_found`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => sendJsonText(reply, await events.get(accountId(request), request.params.eventId)),
  );
};
