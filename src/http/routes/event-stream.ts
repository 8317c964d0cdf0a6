// GET /v1/events/stream (experimental): the event log as Server-Sent Events. The route opens the
// subscription (limits, start) through the service and hands the response to src/http/sse.ts.
// HEAD answers GET's status and headers and ends at once.
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { StreamEventsHeaders, StreamEventsQuery } from '../../schemas/events.js';
import type { EventStreams } from '../../services/event-stream.js';
import { STREAMS_PER_KEY } from '../../services/event-stream.js';
import { authOf, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, hideTryItPanel, rateLimitHeaders, stability } from '../responses.js';
import { pumpEvents } from '../sse.js';

export const EVENT_STREAM_PATH = '/v1/events/stream';

const streamExample =
  'id: 42\nevent: pet.created\ndata: {"id":"evt_00000000002a1f0c6b2a9d7e4c3b8a5f","type":"pet.created","createdAt":"2026-11-23T10:15:30.000Z","sequence":42,"data":{"object":{"id":7,"name":"Rex","categoryId":1,"status":"available"}}}\n\n:\n\n';

export interface EventStreamRouteOptions {
  streams: EventStreams;
  heartbeatMs: number;
  bufferBytes: number;
}

/** Takes the response from Fastify and writes a stream's 200 head: the app's headers and the stream's own. */
function writeStreamHead(request: FastifyRequest, reply: FastifyReply): ServerResponse {
  reply.hijack();
  reply.raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-request-id': request.id,
    // Proxies that buffer responses (nginx) must pass each event on at once.
    'x-accel-buffering': 'no',
  });
  return reply.raw;
}

export const eventStreamRoutes: FastifyPluginAsyncTypebox<EventStreamRouteOptions> = async (app, { streams, heartbeatMs, bufferBytes }) => {
  // Shutdown: every stream ends after what it sent, before the server waits for connections.
  app.addHook('preClose', async () => streams.closeAll());

  app.get(
    EVENT_STREAM_PATH,
    {
      schema: {
        operationId: 'streamEvents',
        ...requiresScope('events:read'),
        tags: ['animals'],
        summary: 'Stream events',
        description:
          'Your account\'s events as they are committed, as [Server-Sent Events](https://html.spec.whatwg.org/multipage/server-sent-events.html): ' +
          'each is `id: <sequence>`, `event: <type>` and `data: <the Event JSON, as getEvent answers it>`, in `sequence` order, within a second of its ' +
          `commit. Resume with \`Last-Event-ID\` (or \`after\`): nothing is skipped or repeated. A comment line (\`:\`) comes every ${heartbeatMs / 1000} s ` +
          'when nothing else does. A client that stops reading is disconnected once its unsent events pass a limit; at most ' +
          `${STREAMS_PER_KEY} streams per API key are open at once (\`rate_limited\` beyond). On shutdown the stream ends after its last complete event: ` +
          'reconnect with the last id. When its key is revoked or expires, the stream ends with a comment naming why (`: unauthorized: …`); ' +
          'open a new one with a valid key and the last id. Experimental: this may still change.',
        ...stability('experimental'),
        ...hideTryItPanel,
        querystring: StreamEventsQuery,
        headers: StreamEventsHeaders,
        response: {
          200: {
            description: 'The stream (it stays open).',
            headers: rateLimitHeaders,
            content: { 'text/event-stream': { schema: { type: 'string' }, example: streamExample } },
          },
          400: errorResponse('`type` names an unknown kind, or `after` or `Last-Event-ID` is not a non-negative integer (`invalid_request`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      if (request.method === 'HEAD') {
        // GET's status and headers, refusals included, without opening a stream or taking a slot.
        streams.check({ keyId: auth.keyId, type: request.query.type });
        writeStreamHead(request, reply);
        reply.raw.end();
        return;
      }
      const header = request.headers['last-event-id'];
      const afterSeq = header !== undefined ? Number(header) : request.query.after;
      const sub = await streams.open({ accountId: auth.accountId, keyId: auth.keyId, keyExpiresAtMs: auth.expiresAtMs, type: request.query.type, afterSeq });
      const res = writeStreamHead(request, reply);
      // Sent at once, so the client (and any proxy) sees the stream open; retry: reconnect after 1 s.
      res.write(`: after ${sub.lastSeq}\nretry: 1000\n\n`);
      request.log.info({ lastSeq: sub.lastSeq }, 'event stream opened');
      await pumpEvents(res, sub, { heartbeatMs, bufferBytes, log: request.log });
    },
  );
};
