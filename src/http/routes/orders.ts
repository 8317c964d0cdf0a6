// Orders (experimental): thin handlers over services.orders. The document marks every operation
// x-stability: experimental, and listOrders x-hideTryItPanel (the spec: its test panel is disabled).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  EmptyBody,
  idempotencyKeyValue,
  ListOrdersQuery,
  NewOrder,
  Order,
  OrderIdParams,
  Orders,
  PAGE_LIMIT_DEFAULT,
  PlaceOrderHeaders,
  ref,
} from '../../schemas/index.js';
import type { Services } from '../../services/index.js';
import type { OrderAction } from '../../services/orders.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, idempotentReplayedHeader, hideTryItPanel, nextPageLink, pageLinkHeaders, rateLimitHeaders, retryAfterHeader, stability, success } from '../responses.js';

const ORDERS_PATH = '/v1/store/orders';

const LIFECYCLE =
  'Lifecycle: `placeOrder` needs an `available` pet and makes it `pending` (order `placed`); `deliverOrder` makes the ' +
  'order `delivered` and the pet `sold`; `cancelOrder` makes it `cancelled` and the pet `available` again. The order and ' +
  'its pet always change together. Experimental: this may still change.';

const notFound = (what: string) => errorResponse(`No ${what} with this id in your account (\`not_found\`).`, rateLimitHeaders);
const badRequest = (what: string) => errorResponse(`${what} (\`invalid_request\`).`, rateLimitHeaders);

type App = Parameters<FastifyPluginAsyncTypebox>[0];
type OrderService = Services['orders'];

export const orderRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const orders = services.orders;
  // One function per operation, registered in the order the served document lists them.
  listOrders(app, orders);
  placeOrder(app, orders);
  getOrder(app, orders);
  transition(app, orders, 'deliver', 'deliverOrder', 'Deliver an order', 'Marks a `placed` order `delivered` and its pet `sold`, together.');
  transition(app, orders, 'cancel', 'cancelOrder', 'Cancel an order', 'Marks a `placed` order `cancelled` and its pet `available` again, together.');
};

function listOrders(app: App, orders: OrderService): void {
  app.get(
    ORDERS_PATH,
    {
      schema: {
        operationId: 'listOrders',
        ...requiresScope('orders:read'),
        tags: ['animals'],
        summary: 'List orders',
        description:
          'Returns a page of the account\'s orders in ascending `id` order, optionally filtered by `status`, paged like ' +
          '`GET /pets` (`Link: <…>; rel="next"`, signed cursor bound to your account and the filter). ' + LIFECYCLE,
        ...stability('experimental'),
        ...hideTryItPanel,
        querystring: ListOrdersQuery,
        response: {
          200: success('A page of orders (a bare JSON array).', ref(Orders), pageLinkHeaders(ORDERS_PATH)),
          400: errorResponse(
            'A query parameter is invalid (`invalid_request`) or the cursor is malformed, tampered with, from another account or for another filter (`invalid_cursor`).',
            rateLimitHeaders,
          ),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, status, cursor } = request.query;
      const page = await orders.list(accountId(request), { limit, status, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(ORDERS_PATH, limit, status, page.nextCursor));
      return page.orders;
    },
  );
}

function placeOrder(app: App, orders: OrderService): void {
  app.post(
    ORDERS_PATH,
    {
      schema: {
        operationId: 'placeOrder',
        ...requiresScope('orders:write'),
        tags: ['animals'],
        summary: 'Place an order for a pet',
        description:
          'Orders one of your pets. The pet must be `available`; in the same transaction it becomes `pending`. Of concurrent ' +
          'orders for one pet exactly one succeeds; the others get 409 `pet_not_available`. The 201 is sent once the order is ' +
          'durably stored. Send an `Idempotency-Key` header to make retries safe. ' + LIFECYCLE,
        ...stability('experimental'),
        body: ref(NewOrder),
        headers: PlaceOrderHeaders,
        response: {
          201: success('Order placed (or, with a reused Idempotency-Key, the first response replayed).', ref(Order), {
            ...rateLimitHeaders,
            Location: { type: 'string', description: 'The new order: `/v1/store/orders/{orderId}`.' },
            ...idempotentReplayedHeader,
          }),
          400: errorResponse(
            'The body is missing, or `petId` is missing or not an integer from 1 to 9007199254740991, or there are unknown fields ' +
              '(`invalid_request`); the body is not JSON (`invalid_json`) or not sent as application/json (`invalid_content_type`).',
            rateLimitHeaders,
          ),
          404: notFound('pet'),
          409: errorResponse(
            'The pet is not `available` (`pet_not_available`; the message names its status), or a request with the same ' +
              'Idempotency-Key is still running (`idempotency_key_in_use`, with `Retry-After`).',
            { ...rateLimitHeaders, ...retryAfterHeader },
          ),
          413: errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders),
          422: errorResponse('The Idempotency-Key was already used with a different body or operation (`idempotency_key_reused`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const header = request.headers['idempotency-key'];
      const account = accountId(request);
      const { petId } = request.body;
      const { order, replayed } = header === undefined
        ? { order: await orders.place(account, petId), replayed: false }
        : await orders.placeIdempotent(account, petId, idempotencyKeyValue(header));
      if (replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(201).header('location', `${ORDERS_PATH}/${order.id}`).send(order);
    },
  );
}

function getOrder(app: App, orders: OrderService): void {
  app.get(
    `${ORDERS_PATH}/:orderId`,
    {
      schema: {
        operationId: 'getOrder',
        ...requiresScope('orders:read'),
        tags: ['animals'],
        summary: 'Get an order',
        description: 'The order as it is now. An order of another account answers 404, like a missing one.',
        ...stability('experimental'),
        params: OrderIdParams,
        response: {
          200: success('The order.', ref(Order), rateLimitHeaders),
          400: badRequest('`orderId` is not an integer from 1 to 9007199254740991'),
          404: notFound('order'),
          ...commonErrors(),
        },
      },
    },
    async (request) => orders.get(accountId(request), request.params.orderId),
  );
}

/** deliverOrder and cancelOrder: the same move from `placed`, to another status. */
function transition(app: App, orders: OrderService, action: OrderAction, operationId: string, summary: string, effect: string): void {
  app.post(
    `${ORDERS_PATH}/:orderId/${action}`,
    {
      schema: {
        operationId,
        ...requiresScope('orders:write'),
        tags: ['animals'],
        summary,
        description:
          `${effect} Only a \`placed\` order can move. Asking again once it is done answers 200 with the order unchanged ` +
          '(safe to retry); any other move answers 409 `invalid_transition`, naming the current status. No body is needed; ' +
          'if one is sent it must be `{}`.',
        ...stability('experimental'),
        params: OrderIdParams,
        body: EmptyBody,
        response: {
          200: success('The order after the move (or unchanged, when it was already done).', ref(Order), rateLimitHeaders),
          400: errorResponse(
            '`orderId` is not an integer from 1 to 9007199254740991 or a body other than `{}` was sent (`invalid_request`); ' +
              'a body that is not JSON (`invalid_json`) or not sent as application/json (`invalid_content_type`).',
            rateLimitHeaders,
          ),
          404: notFound('order'),
          409: errorResponse('The order is in a status this move cannot start from (`invalid_transition`).', rateLimitHeaders),
          413: errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request) => orders.act(accountId(request), request.params.orderId, action),
  );
}
