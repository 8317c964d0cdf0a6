// The example API's messages (spec 4.4): accept now (202 + Location), deliver later, poll.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { idempotencyKeyValue, PAGE_LIMIT_DEFAULT, ref } from '../../schemas/index.js';
import { ListMessagesQuery, Message, MessageIdParams, Messages, NewMessage, SendMessageHeaders } from '../../schemas/messages.js';
import type { Services } from '../../services/index.js';
import type { StoredMessage } from '../../store/types.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, idempotentReplayedHeader, nextPageLink, pageLinkHeaders, rateLimitHeaders, retryAfterHeader, success } from '../responses.js';

export const EXAMPLE_BASE_PATH = '/example/v1';
const MESSAGES_PATH = `${EXAMPLE_BASE_PATH}/messages`;

/** Example bodies for the reference: a message in each status, with only the fields it has then. */
const EXAMPLE_ID = 'msg_3kTbYc9QpL0aW7nXe2RfVh5M';
const queuedExample = { id: EXAMPLE_ID, message: 'Hello from the Petstore quickstart!', status: 'queued', createdAt: '2026-11-23T10:15:30.000Z' };
const deliveredExample = { ...queuedExample, status: 'delivered', deliveredAt: '2026-11-23T10:15:30.012Z' };
const failedExample = { ...queuedExample, status: 'failed', failureReason: 'Not delivered after 5 attempts: the recipient did not answer' };

/** The public shape: the account's sequence number is for cursors only. */
const publicMessage = ({ seq: _seq, ...message }: StoredMessage) => message;

export const messageRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const messages = services.messages;

  app.post(
    MESSAGES_PATH,
    {
      schema: {
        operationId: 'sendMessage',
        ...requiresScope('messages:write'),
        tags: ['messages'],
        summary: 'Send a message',
        description:
          'Accepts the message for delivery and answers at once with **202 Accepted**: the message is durably stored and ' +
          '`queued`, not delivered yet. Poll `GET /messages/{id}` (the `Location` header) until `status` is `delivered` or ' +
          '`failed`; delivery normally takes under a second. Send an `Idempotency-Key` header to make retries safe.',
        body: ref(NewMessage),
        headers: SendMessageHeaders,
        response: {
          202: success(
            'Accepted and queued: the body is the message as stored, `status` is `queued`.',
            ref(Message),
            {
              ...rateLimitHeaders,
              Location: { type: 'string', description: 'The message\'s status resource: `/example/v1/messages/{id}`. Poll it.' },
              ...idempotentReplayedHeader,
            },
            { queued: { summary: 'Accepted, not delivered yet', value: queuedExample } },
          ),
          400: errorResponse(
            'The body is missing, or `message` is missing, not a string, empty, blank, longer than 2000 characters or has control ' +
              'characters, or there are unknown fields (`invalid_request`); the body is not JSON (`invalid_json`) or not sent as ' +
              'application/json (`invalid_content_type`).',
            rateLimitHeaders,
          ),
          409: errorResponse('A request with the same Idempotency-Key is still running (`idempotency_key_in_use`).', { ...rateLimitHeaders, ...retryAfterHeader }),
          413: errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders),
          422: errorResponse('The Idempotency-Key was already used with a different body or operation (`idempotency_key_reused`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const header = request.headers['idempotency-key'];
      const account = accountId(request);
      const { message, replayed } = header === undefined
        ? { message: await messages.send(account, request.body.message), replayed: false }
        : await messages.sendIdempotent(account, request.body.message, idempotencyKeyValue(header));
      if (replayed) reply.header('idempotent-replayed', 'true');
      // The 202 describes the message as accepted: queued (it may be delivered by now; GET tells).
      const accepted = { ...publicMessage(message), status: 'queued' as const };
      delete accepted.deliveredAt;
      delete accepted.failureReason;
      return reply.status(202).header('location', `${MESSAGES_PATH}/${message.id}`).send(accepted);
    },
  );

  app.get(
    `${MESSAGES_PATH}/:id`,
    {
      schema: {
        operationId: 'getMessage',
        ...requiresScope('messages:read'),
        tags: ['messages'],
        summary: 'Get a message',
        description: 'The message as it is now: `queued`, then `delivered` (with `deliveredAt`) or `failed` (with `failureReason`). Another account\'s message answers 404, like an unknown id.',
        params: MessageIdParams,
        response: {
          200: success('The message.', ref(Message), rateLimitHeaders, {
            delivered: { summary: 'Delivered (`deliveredAt` is set)', value: deliveredExample },
            queued: { summary: 'Not delivered yet: ask again shortly', value: queuedExample },
            failed: { summary: 'Failed after its retries (`failureReason` says why)', value: failedExample },
          }),
          404: errorResponse('No message with this id in your account (`not_found`).', rateLimitHeaders),
          400: errorResponse('The id is empty or longer than 64 characters (`invalid_request`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request) => publicMessage(await messages.get(accountId(request), request.params.id)),
  );

  app.get(
    MESSAGES_PATH,
    {
      schema: {
        operationId: 'listMessages',
        ...requiresScope('messages:read'),
        tags: ['messages'],
        summary: 'List messages',
        description: 'The account\'s messages, oldest first, optionally by `status`, paged like the Petstore\'s `GET /pets` (`Link: <…>; rel="next"`, signed cursor).',
        querystring: ListMessagesQuery,
        response: {
          200: success('A page of messages (a bare JSON array).', ref(Messages), pageLinkHeaders(MESSAGES_PATH), {
            page: { summary: 'Oldest first', value: [deliveredExample, { ...queuedExample, id: 'msg_Z8pQ2vLr5TgY1cWm7HkN0sDb', createdAt: '2026-11-23T10:15:31.000Z' }] },
          }),
          400: errorResponse('A query parameter is invalid (`invalid_request`) or the cursor is malformed, tampered with or for another filter (`invalid_cursor`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, status, cursor } = request.query;
      const page = await messages.list(accountId(request), { limit, status, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(MESSAGES_PATH, limit, status, page.nextCursor));
      return page.messages.map(publicMessage);
    },
  );
};
