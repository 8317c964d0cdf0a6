// Events and webhook endpoints (experimental): the event log (GET /v1/events) and the signed
// deliveries that push the same events (Standard Webhooks). One schema per shape, as elsewhere.
import Type, { type Static } from 'typebox';
import { Id, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PetStatus, ref, TEXT_PATTERN, Timestamp } from './index.js';

// Append only: a kind's index here is its bit in the masks stored with webhook endpoints and cursors.
export const EVENT_KIND_BITS = ['pet.created', 'pet.status_changed', 'order.placed', 'order.delivered', 'order.cancelled', 'pet.updated', 'pet.deleted'] as const;
export type EventType = (typeof EVENT_KIND_BITS)[number];
/** Every kind, in the order documents and answers list them (by resource). */
export const EVENT_TYPES = [
  'pet.created',
  'pet.status_changed',
  'pet.updated',
  'pet.deleted',
  'order.placed',
  'order.delivered',
  'order.cancelled',
] as const satisfies readonly EventType[];

export const EventType = Type.Enum(EVENT_TYPES, {
  $id: 'EventType',
  type: 'string',
  description:
    '`pet.created`: a pet was added (`data.object` is the Pet). `pet.updated`: a pet was changed by `updatePet` (`data.object` ' +
    'is the Pet after the change, `data.previousAttributes` the changed fields\' values before). `pet.status_changed`: a pet\'s ' +
    'status changed, by an order or by `updatePet` (`data.object` is the Pet after the change, `data.previousStatus` its status ' +
    'before, `null` when it had none). `pet.deleted`: a pet was deleted (`data.object` is the Pet as it was). `order.placed`, `order.delivered`, ' +
    '`order.cancelled`: an order was placed or moved (`data.object` is the Order after the change).',
});

const EVENT_ID_EXAMPLE = 'evt_1f0c6b2a9d7e4c3b8a5f2e1d0c9b8a7f';

const eventFields = (type: EventType, description: string, data: ReturnType<typeof Type.Object>) =>
  Type.Object(
    {
      id: Type.String({
        description: 'Opaque, unique identifier: `evt_` and 32 hex characters, 80 bits of them random; do not parse it. Also the `webhook-id` of every delivery of this event.',
        examples: [EVENT_ID_EXAMPLE],
      }),
      type: Type.Literal(type, { description: 'What happened.' }),
      createdAt: Timestamp('When the change was committed.'),
      sequence: Type.Integer({
        format: 'int64',
        minimum: 1,
        description:
          'Position in your account\'s event log: ascending in commit order, from 1. Deliveries can arrive out of order (retries ' +
          'overtake); keep the highest sequence you processed per object to drop stale ones, and resume `GET /events?after=` from it.',
      }),
      data,
    },
    { $id: eventSchemaId(type), additionalProperties: false, description },
  );

function eventSchemaId(type: EventType): string {
  return `${type.split(/[._]/).map((part) => part[0]!.toUpperCase() + part.slice(1)).join('')}Event`;
}

const objectData = (object: 'Pet' | 'Order') =>
  Type.Object(
    { object: Type.Unsafe({ $ref: `${object}#`, description: `The ${object.toLowerCase()} as the API returns it after the change.` }) },
    { additionalProperties: false },
  );

export const PetCreatedEvent = eventFields('pet.created', 'A pet was created. `data.object` is the new Pet.', objectData('Pet'));
export const PetStatusChangedEvent = eventFields(
  'pet.status_changed',
  'A pet\'s status changed (placing, delivering or cancelling an order, or `updatePet`). `data.object` is the Pet after the change.',
  Type.Object(
    {
      object: Type.Unsafe({ $ref: 'Pet#', description: 'The pet as the API returns it after the change.' }),
      previousStatus: Type.Union([ref(PetStatus), Type.Null()], { description: 'The status before the change; `null` when the pet had none (only `updatePet` sets a status on such a pet).' }),
    },
    { additionalProperties: false },
  ),
);
export const PetUpdatedEvent = eventFields(
  'pet.updated',
  'A pet was changed by `updatePet`. `data.object` is the Pet after the change; `data.previousAttributes` holds the changed fields\' values before it.',
  Type.Object(
    {
      object: Type.Unsafe({ $ref: 'Pet#', description: 'The pet as the API returns it after the change.' }),
      previousAttributes: Type.Object(
        {
          name: Type.Optional(Type.String({ description: 'The name before, when it changed.' })),
          categoryId: Type.Optional(Type.Integer({ format: 'int64', minimum: 1, description: 'The category before, when it changed.' })),
          status: Type.Optional(Type.Union([ref(PetStatus), Type.Null()], { description: 'The status before, when it changed; `null` when the pet had none.' })),
        },
        { additionalProperties: false, description: 'Only the fields that changed, with their values before the change.' },
      ),
    },
    { additionalProperties: false },
  ),
);
export const PetDeletedEvent = eventFields('pet.deleted', 'A pet was deleted. `data.object` is the Pet as it was.', objectData('Pet'));
export const OrderPlacedEvent = eventFields('order.placed', 'An order was placed (its pet became `pending`). `data.object` is the Order.', objectData('Order'));
export const OrderDeliveredEvent = eventFields('order.delivered', 'An order was delivered (its pet became `sold`). `data.object` is the Order.', objectData('Order'));
export const OrderCancelledEvent = eventFields('order.cancelled', 'An order was cancelled (its pet became `available`). `data.object` is the Order.', objectData('Order'));

export const EVENT_SCHEMAS = [PetCreatedEvent, PetStatusChangedEvent, PetUpdatedEvent, PetDeletedEvent, OrderPlacedEvent, OrderDeliveredEvent, OrderCancelledEvent] as const;

export const Event = Type.Union(EVENT_SCHEMAS.map((schema) => ref(schema)), {
  $id: 'Event',
  description:
    'Something that happened in your account, written in the same transaction as the change itself: no change without its ' +
    'event, no event without its change. `type` tells which shape `data` has. The body of every webhook delivery is an Event.',
});
export type Event =
  | Static<typeof PetCreatedEvent>
  | Static<typeof PetUpdatedEvent>
  | Static<typeof PetStatusChangedEvent>
  | Static<typeof PetDeletedEvent> | Static<typeof OrderPlacedEvent> | Static<typeof OrderDeliveredEvent> | Static<typeof OrderCancelledEvent>;

export const Events = Type.Array(ref(Event), { $id: 'Events', description: 'A page of events, oldest first (ascending `sequence`).' });

/** Ids are letters, digits and `_`: anything else (a NUL byte, say) is refused before any query. */
const ID_PATTERN = '^[A-Za-z0-9_]+$';

export const EventIdParams = Type.Object(
  { eventId: Type.String({ minLength: 1, maxLength: 64, pattern: ID_PATTERN, description: 'The event id (`evt_…`).' }) },
  { additionalProperties: false },
);

export const ListEventsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT, description: 'Maximum number of events to return.' })),
    type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: `Only events of these kinds: one kind or a comma-separated list (${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}).`,
        examples: ['order.placed,order.delivered'],
      }),
    ),
    after: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'Only events with a greater `sequence`: the last one you processed, to resume from there. Not together with `cursor`.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: <…>; rel="next"` header of the previous page. Do not build or edit it.' }),
    ),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;

export const StreamEventsQuery = Type.Object(
  {
    type: ListEventsQuery.properties.type,
    after: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'Start after this `sequence` (`0`: every event kept). Without it (and without `Last-Event-ID`) the stream starts with the next event committed.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const StreamEventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,15}$',
      description: 'The `id:` of the last event received: the stream resumes after it (browsers send it when they reconnect). Takes precedence over `after`.',
    }),
  ),
});

// ---- webhook endpoints ----

export const WEBHOOK_URL_MAX_LENGTH = 2048;
export const WEBHOOK_DESCRIPTION_MAX_LENGTH = 500;
export const WEBHOOK_ENDPOINTS_MAX = 16;

const EventTypes = (description: string) =>
  Type.Array(ref(EventType), { minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true, description });

const url = Type.String({
  minLength: 1,
  maxLength: WEBHOOK_URL_MAX_LENGTH,
  description:
    'Where deliveries are POSTed: an absolute `https` URL of at most 2048 characters, on a public address. Loopback, private, ' +
    'link-local and other internal addresses are refused, at registration and again when connecting (`invalid_webhook_url`), ' +
    'and so are control characters. Stored and shown normalized, as it is called (`HTTPS://Example.com/a/../b` is `https://example.com/b`).',
  examples: ['https://hooks.example.com/petstore'],
});
const description = Type.String({
  minLength: 1,
  maxLength: WEBHOOK_DESCRIPTION_MAX_LENGTH,
  pattern: TEXT_PATTERN,
  description: `What the endpoint is for (1 to ${WEBHOOK_DESCRIPTION_MAX_LENGTH} characters), for your own records.`,
  examples: ['Warehouse sync'],
});

export const NewWebhookEndpoint = Type.Object(
  {
    url,
    eventTypes: Type.Optional(EventTypes('The kinds to deliver. Absent: all kinds, including kinds added later.')),
    description: Type.Optional(description),
  },
  { $id: 'NewWebhookEndpoint', additionalProperties: false, description: 'An endpoint to register. Unknown fields are rejected with 400 `invalid_request`.' },
);
export type NewWebhookEndpoint = Static<typeof NewWebhookEndpoint>;

export const WebhookEndpointUpdate = Type.Object(
  {
    url: Type.Optional(url),
    eventTypes: Type.Optional(Type.Union([EventTypes('The kinds to deliver.'), Type.Null()], { description: 'The kinds to deliver; `null`: all kinds.' })),
    // No `examples` inside anyOf: OpenAPI 3.0 allows them only at the top of a schema.
    description: Type.Optional(Type.Union([Type.String({ ...description, examples: undefined }), Type.Null()], { description: 'What the endpoint is for; `null` removes it.' })),
    disabled: Type.Optional(Type.Boolean({ description: '`true` stops deliveries (events meanwhile are not delivered to it); `false` resumes them.' })),
  },
  {
    $id: 'WebhookEndpointUpdate',
    additionalProperties: false,
    minProperties: 1,
    description: 'The fields to change; the others stay as they are. At least one field. Unknown fields are rejected with 400 `invalid_request`.',
  },
);
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>;

const endpointId = Type.String({ description: 'Opaque identifier: `we_` and 24 random characters.', examples: ['we_4fQm2LzT8rVb1nXc6JyK0pHd'] });

export const WebhookEndpoint = Type.Object(
  {
    id: endpointId,
    url: Type.String({ description: 'Where deliveries are POSTed: the registered URL, normalized.' }),
    eventTypes: Type.Array(ref(EventType), { description: 'The kinds delivered to it.' }),
    allEventTypes: Type.Boolean({ description: '`true` when registered without `eventTypes`: every kind, including kinds added later.' }),
    description: Type.Optional(Type.String({ description: 'What the endpoint is for; absent when none was given.' })),
    disabled: Type.Boolean({ description: '`true`: nothing is delivered to it (set by you, or by the service when the receiver answered 410 Gone).' }),
    disabledReason: Type.Optional(Type.String({ description: 'Why the service disabled it; absent when enabled or disabled by you.' })),
    createdAt: Timestamp('When it was registered.'),
  },
  { $id: 'WebhookEndpoint', additionalProperties: false, description: 'Where events are delivered. The signing secret is shown only when created or rotated.' },
);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

const secret = Type.String({
  description:
    'The signing secret: `whsec_` and the base64 of 32 random bytes. Shown only in this answer: store it now. Verify each ' +
    'delivery\'s `webhook-signature` with it (Standard Webhooks).',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3xRhQ0k5Dj0='],
});

export const CreatedWebhookEndpoint = Type.Object(
  { ...WebhookEndpoint.properties, secret },
  { $id: 'CreatedWebhookEndpoint', additionalProperties: false, description: 'The new endpoint, with its signing secret (shown only now).' },
);

export const WebhookEndpoints = Type.Array(ref(WebhookEndpoint), { $id: 'WebhookEndpoints', description: 'A page of webhook endpoints, oldest first.' });

export const RotatedSecret = Type.Object(
  {
    secret,
    previousSecretExpiresAt: Timestamp('Until then deliveries are signed with the previous secret too (two signatures), so receivers can switch without missing one.'),
  },
  { $id: 'RotatedSecret', additionalProperties: false, description: 'The new signing secret (shown only now).' },
);

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const DeliveryStatus = Type.Enum(DELIVERY_STATUSES, {
  $id: 'WebhookDeliveryStatus',
  type: 'string',
  description: '`pending`: not delivered yet (more attempts to come); `succeeded`: a 2xx was received; `failed`: the retry schedule ran out, the receiver answered 410, or the endpoint was disabled.',
});

/** Why an attempt failed, as its owner sees it: a category, never an address, host or port (the detail is in the server's log). */
export const DELIVERY_ERRORS = [
  'address_not_allowed',
  'dns_failure',
  'connection_failed',
  'timeout',
  'tls_error',
  'invalid_response',
  'response_too_large',
  'http_status',
  'endpoint_disabled',
  'signing_failed',
] as const;
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

export const DeliveryError = Type.Enum(DELIVERY_ERRORS, {
  $id: 'WebhookDeliveryError',
  type: 'string',
  description:
    'Why the last attempt failed. `address_not_allowed`: the host resolved to (or is) an address deliveries may not reach; `dns_failure`: the host did not resolve; ' +
    '`connection_failed`: the connection was refused, reset or closed before an answer; `timeout`: no answer in time; `tls_error`: the TLS handshake or certificate failed; ' +
    '`invalid_response`: the answer was not valid HTTP; `response_too_large`: the answer\'s headers were too large; `http_status`: the receiver answered a status that is not 2xx ' +
    '(`lastResponseStatus`; a 3xx is a redirect, never followed); `endpoint_disabled`: the endpoint was disabled before the attempt; ' +
    '`signing_failed`: the service could not open the endpoint\'s signing secret (its operators are told), so nothing was sent; retried on the schedule. ' +
    'Addresses, host names and ports are never shown: the server\'s log has the detail, with the endpoint and delivery ids.',
});

export const WebhookDelivery = Type.Object(
  {
    id: Type.String({ description: 'Opaque identifier: `whd_` and 32 hex characters, 80 bits of them random; do not parse it.', examples: ['whd_9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d'] }),
    eventId: Type.String({ description: 'The event delivered (its `webhook-id`).', examples: [EVENT_ID_EXAMPLE] }),
    eventType: ref(EventType),
    status: ref(DeliveryStatus),
    attempts: Type.Integer({ minimum: 0, description: 'Attempts made so far.' }),
    lastAttemptAt: Type.Optional(Timestamp('When the last attempt was made; absent before the first.')),
    lastResponseStatus: Type.Optional(Type.Integer({ description: 'The HTTP status of the last attempt; absent before the first, or when it got no answer (connection error, timeout).' })),
    lastError: Type.Optional(ref(DeliveryError)),
    nextAttemptAt: Type.Optional(Timestamp('When the next attempt is due; present only while `pending`.')),
  },
  { $id: 'WebhookDelivery', additionalProperties: false, description: 'One event to one endpoint, with its attempts.' },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveries = Type.Array(ref(WebhookDelivery), { $id: 'WebhookDeliveries', description: 'A page of deliveries, oldest event first.' });

export const EndpointIdParams = Type.Object(
  { endpointId: Type.String({ minLength: 1, maxLength: 64, pattern: ID_PATTERN, description: 'The endpoint id (`we_…`).' }) },
  { additionalProperties: false },
);
export const DeliveryIdParams = Type.Object(
  {
    endpointId: Type.String({ minLength: 1, maxLength: 64, pattern: ID_PATTERN, description: 'The endpoint id (`we_…`).' }),
    deliveryId: Type.String({ minLength: 1, maxLength: 64, pattern: ID_PATTERN, description: 'The delivery id (`whd_…`).' }),
  },
  { additionalProperties: false },
);

export const eventSchemas = [
  EventType,
  ...EVENT_SCHEMAS,
  Event,
  Events,
  NewWebhookEndpoint,
  WebhookEndpointUpdate,
  WebhookEndpoint,
  CreatedWebhookEndpoint,
  WebhookEndpoints,
  RotatedSecret,
  DeliveryStatus,
  DeliveryError,
  WebhookDelivery,
  WebhookDeliveries,
];

/** Bit of an event kind in event masks (webhook endpoints' kinds, type filters). */
export const eventBit = (type: EventType) => 1 << EVENT_KIND_BITS.indexOf(type);
/** The kinds a mask selects. */
export const typesOf = (mask: number): EventType[] => EVENT_TYPES.filter((type) => (mask & eventBit(type)) !== 0);
