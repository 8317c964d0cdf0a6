// Webhook endpoints and deliveries (experimental): thin handlers over services.webhooks.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { EmptyBody, PAGE_LIMIT_DEFAULT, pageQuery, ref } from '../../schemas/index.js';
import {
  CreatedWebhookEndpoint,
  DeliveryIdParams,
  DeliveryStatus,
  EVENT_SCHEMAS,
  EndpointIdParams,
  NewWebhookEndpoint,
  RotatedSecret,
  WebhookDeliveries,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpoints,
  WebhookEndpointUpdate,
} from '../../schemas/events.js';
import type { Services } from '../../services/index.js';
import { accountId, auditContextOf, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, nextPageLink, noContent, pageLinkHeaders, rateLimitHeaders, stability, success } from '../responses.js';

const ENDPOINTS_PATH = '/v1/webhook-endpoints';

const notFound = (what: string) => errorResponse(`No ${what} with this id in your account (\`not_found\`).`, rateLimitHeaders);
const badId = errorResponse('An id is empty, longer than 64 characters, or has characters other than letters, digits and `_` (`invalid_request`).', rateLimitHeaders);
const bodyErrors = (fields: string) =>
  errorResponse(
    `${fields} (\`invalid_request\`); the URL is not https, has credentials, or names a loopback, private, link-local or other ` +
      'internal address (`invalid_webhook_url`, the message says which); the body is not JSON (`invalid_json`) or not sent as ' +
      'application/json (`invalid_content_type`).',
    rateLimitHeaders,
  );
/** The 400 of the actions that take no body (or `{}`). */
const emptyBodyErrors = errorResponse('An id is invalid or a body other than `{}` was sent (`invalid_request`), or the body is not JSON (`invalid_json`) or not application/json (`invalid_content_type`).', rateLimitHeaders);
const tooLarge = errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders);

const ABOUT =
  'Each event is POSTed to every enabled endpoint whose `eventTypes` include its kind, signed per Standard Webhooks ' +
  '(`webhook-id`, `webhook-timestamp`, `webhook-signature`), retried on failure for about three days; see /docs/webhooks. Experimental.';

/**
 * The deliveries, as OpenAPI 3.1 `webhooks` written in a 3.0 document (`x-webhooks`, which
 * renderers read): one POST per event kind, with the Standard Webhooks headers.
 */
export function webhooksExtension() {
  const header = (name: string, description: string, example: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string', example } });
  return Object.fromEntries(
    EVENT_SCHEMAS.map((schema) => {
      const type = (schema.properties.type as { const: string }).const;
      const { $id, description } = schema as unknown as { $id: string; description: string };
      return [
        type,
        {
          post: {
            summary: `${type} delivery`,
            description: `${description} Sent to every enabled endpoint whose \`eventTypes\` include \`${type}\`. Answer any 2xx within 15 s; anything else is retried (see /docs/webhooks).`,
            'x-stability': 'experimental',
            parameters: [
              header('webhook-id', 'The event id: the same on every attempt. Deduplicate on it.', 'evt_1f0c6b2a9d7e4c3b8a5f2e1d0c9b8a7f'),
              header('webhook-timestamp', 'Unix seconds of this attempt. Refuse deliveries more than 5 minutes off.', '1795432530'),
              header('webhook-signature', '`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under each live secret, space-separated.', 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='),
            ],
            requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${$id}` } } } },
            responses: {
              '2XX': { description: 'Received: no more attempts.' },
              '410': { description: 'Gone: the endpoint is disabled at once, nothing more is sent.' },
              default: { description: 'Anything else (or no answer): retried on the schedule; 429 and 503 may send `Retry-After`.' },
            },
          },
        },
      ];
    }),
  );
}

const ListEndpointsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: PAGE_LIMIT_DEFAULT, description: 'Maximum number of endpoints to return.' })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: <…>; rel="next"` header of the previous page.' })),
  },
  { additionalProperties: false },
);
const ListDeliveriesQuery = pageQuery('deliveries', ref(DeliveryStatus));

type App = Parameters<FastifyPluginAsyncTypebox>[0];
type WebhookService = Services['webhooks'];

export const webhookRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const webhooks = services.webhooks;
  // One function per operation, registered in the order the served document lists them.
  createWebhookEndpoint(app, webhooks);
  listWebhookEndpoints(app, webhooks);
  getWebhookEndpoint(app, webhooks);
  updateWebhookEndpoint(app, webhooks);
  deleteWebhookEndpoint(app, webhooks);
  rotateWebhookEndpointSecret(app, webhooks);
  listWebhookDeliveries(app, webhooks);
  retryWebhookDelivery(app, webhooks);
};

function createWebhookEndpoint(app: App, webhooks: WebhookService): void {
  app.post(
    ENDPOINTS_PATH,
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        ...requiresScope('webhooks:write'),
        tags: ['animals'],
        summary: 'Register a webhook endpoint',
        description:
          'Registers a URL to receive events. The answer holds the signing `secret`, **shown only now**. `eventTypes` absent: ' +
          'every kind, including kinds added later. At most 16 endpoints per account. ' + ABOUT,
        ...stability('experimental'),
        body: ref(NewWebhookEndpoint),
        response: {
          201: success('Registered. Store the `secret` now: it is not shown again (rotate it to get a new one).', ref(CreatedWebhookEndpoint), {
            ...rateLimitHeaders,
            Location: { type: 'string', description: 'The new endpoint: `/v1/webhook-endpoints/{endpointId}`.' },
          }),
          400: bodyErrors('The body is missing, `url` is missing or longer than 2048 characters, `eventTypes` is empty, repeats or has an unknown kind, `description` is invalid, or there are unknown fields'),
          409: errorResponse('The account already has 16 endpoints (`webhook_endpoint_limit`).', rateLimitHeaders),
          413: tooLarge,
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const created = await webhooks.create(accountId(request), request.body, auditContextOf(request));
      return reply.status(201).header('location', `${ENDPOINTS_PATH}/${created.id}`).send(created);
    },
  );
}

function listWebhookEndpoints(app: App, webhooks: WebhookService): void {
  app.get(
    ENDPOINTS_PATH,
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        ...requiresScope('webhooks:read'),
        tags: ['animals'],
        summary: 'List webhook endpoints',
        description: 'Your endpoints, oldest first, paged like `GET /pets`. Secrets are never listed. Experimental.',
        ...stability('experimental'),
        querystring: ListEndpointsQuery,
        response: {
          200: success('A page of endpoints (a bare JSON array).', ref(WebhookEndpoints), pageLinkHeaders(ENDPOINTS_PATH)),
          400: errorResponse('A query parameter is invalid (`invalid_request`) or the cursor is malformed or tampered with (`invalid_cursor`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, cursor } = request.query;
      const page = await webhooks.list(accountId(request), { limit, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(ENDPOINTS_PATH, limit, undefined, page.nextCursor));
      return page.endpoints;
    },
  );
}

function getWebhookEndpoint(app: App, webhooks: WebhookService): void {
  app.get(
    `${ENDPOINTS_PATH}/:endpointId`,
    {
      schema: {
        operationId: 'getWebhookEndpoint',
        ...requiresScope('webhooks:read'),
        tags: ['animals'],
        summary: 'Get a webhook endpoint',
        description: 'The endpoint as it is now (without its secret). Experimental.',
        ...stability('experimental'),
        params: EndpointIdParams,
        response: { 200: success('The endpoint.', ref(WebhookEndpoint), rateLimitHeaders), 400: badId, 404: notFound('webhook endpoint'), ...commonErrors() },
      },
    },
    async (request) => webhooks.get(accountId(request), request.params.endpointId),
  );
}

function updateWebhookEndpoint(app: App, webhooks: WebhookService): void {
  app.patch(
    `${ENDPOINTS_PATH}/:endpointId`,
    {
      schema: {
        operationId: 'updateWebhookEndpoint',
        ...requiresScope('webhooks:write'),
        tags: ['animals'],
        summary: 'Change a webhook endpoint',
        description:
          'Changes `url`, `eventTypes` (`null`: every kind), `description` (`null` removes it) or `disabled`; fields not sent stay ' +
          'as they are. Disabling stops deliveries: events meanwhile are not delivered to it, and its pending deliveries fail. ' +
          'Enabling clears a `disabledReason` the service set. Experimental.',
        ...stability('experimental'),
        params: EndpointIdParams,
        body: ref(WebhookEndpointUpdate),
        response: {
          200: success('The endpoint after the change.', ref(WebhookEndpoint), rateLimitHeaders),
          400: bodyErrors('The body is missing or empty, a field is invalid, or there are unknown fields'),
          404: notFound('webhook endpoint'),
          413: tooLarge,
          ...commonErrors(),
        },
      },
    },
    async (request) => webhooks.update(accountId(request), request.params.endpointId, request.body, auditContextOf(request)),
  );
}

function deleteWebhookEndpoint(app: App, webhooks: WebhookService): void {
  app.delete(
    `${ENDPOINTS_PATH}/:endpointId`,
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        ...requiresScope('webhooks:write'),
        tags: ['animals'],
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint with its deliveries; nothing more is sent to it, including pending retries. Experimental.',
        ...stability('experimental'),
        params: EndpointIdParams,
        response: {
          204: noContent('Deleted.', rateLimitHeaders),
          400: badId,
          404: notFound('webhook endpoint'),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      await webhooks.remove(accountId(request), request.params.endpointId, auditContextOf(request));
      return reply.status(204).send();
    },
  );
}

function rotateWebhookEndpointSecret(app: App, webhooks: WebhookService): void {
  app.post(
    `${ENDPOINTS_PATH}/:endpointId/rotate-secret`,
    {
      schema: {
        operationId: 'rotateWebhookEndpointSecret',
        ...requiresScope('webhooks:write'),
        tags: ['animals'],
        summary: 'Rotate a webhook endpoint\'s secret',
        description:
          'Makes a new signing secret, **shown only now**. Until `previousSecretExpiresAt` (24 hours by default) each delivery ' +
          'carries two signatures, one per secret, so receivers can switch at their pace; then only the new one. Rotating again ' +
          'within that time drops the oldest secret at once. No body is needed; if one is sent it must be `{}`. Experimental.',
        ...stability('experimental'),
        params: EndpointIdParams,
        body: EmptyBody,
        response: {
          200: success('The new secret.', ref(RotatedSecret), rateLimitHeaders),
          400: emptyBodyErrors,
          404: notFound('webhook endpoint'),
          413: tooLarge,
          ...commonErrors(),
        },
      },
    },
    async (request) => webhooks.rotateSecret(accountId(request), request.params.endpointId, auditContextOf(request)),
  );
}

function listWebhookDeliveries(app: App, webhooks: WebhookService): void {
  app.get(
    `${ENDPOINTS_PATH}/:endpointId/deliveries`,
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        ...requiresScope('webhooks:read'),
        tags: ['animals'],
        summary: 'List an endpoint\'s deliveries',
        description:
          'One delivery per event sent (or to be sent) to this endpoint, oldest event first, optionally by `status`, paged like ' +
          '`GET /pets`. The receivers\' response bodies are never stored or shown. Experimental.',
        ...stability('experimental'),
        params: EndpointIdParams,
        querystring: ListDeliveriesQuery,
        response: {
          200: success('A page of deliveries (a bare JSON array).', ref(WebhookDeliveries), pageLinkHeaders(`${ENDPOINTS_PATH}/{endpointId}/deliveries`)),
          400: errorResponse('An id or query parameter is invalid (`invalid_request`) or the cursor is malformed, tampered with or for another filter (`invalid_cursor`).', rateLimitHeaders),
          404: notFound('webhook endpoint'),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { endpointId } = request.params;
      const { limit = PAGE_LIMIT_DEFAULT, status, cursor } = request.query;
      const page = await webhooks.deliveries(accountId(request), endpointId, { limit, status, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(`${ENDPOINTS_PATH}/${endpointId}/deliveries`, limit, status, page.nextCursor));
      return page.deliveries;
    },
  );
}

function retryWebhookDelivery(app: App, webhooks: WebhookService): void {
  app.post(
    `${ENDPOINTS_PATH}/:endpointId/deliveries/:deliveryId/retry`,
    {
      schema: {
        operationId: 'retryWebhookDelivery',
        ...requiresScope('webhooks:write'),
        tags: ['animals'],
        summary: 'Retry a delivery now',
        description:
          'Queues the delivery for an attempt now. A pending one has its next attempt brought forward (the schedule goes on ' +
          'after it); a succeeded or failed one gets one more attempt, outside the schedule. The endpoint must be enabled. ' +
          'No body is needed; if one is sent it must be `{}`. Experimental.',
        ...stability('experimental'),
        params: DeliveryIdParams,
        body: EmptyBody,
        response: {
          202: success('Queued: the delivery is `pending`, due now.', ref(WebhookDelivery), rateLimitHeaders),
          400: emptyBodyErrors,
          404: errorResponse('No webhook endpoint, or no delivery of it, with this id in your account (`not_found`).', rateLimitHeaders),
          409: errorResponse('The endpoint is disabled (`webhook_endpoint_disabled`): enable it first.', rateLimitHeaders),
          413: tooLarge,
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { endpointId, deliveryId } = request.params;
      return reply.status(202).send(await webhooks.retryDelivery(accountId(request), endpointId, deliveryId));
    },
  );
}
