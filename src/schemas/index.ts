// Single source of truth for every shape: these TypeBox schemas drive request
// validation, response serialization, the TypeScript types and the OpenAPI document.
import Type, { type Static, type TSchema } from 'typebox';
import { ERROR_CODES } from '../errors.js';

/** Largest id or categoryId the API accepts: JSON numbers beyond it cannot be represented exactly. */
export const MAX_SAFE_ID = Number.MAX_SAFE_INTEGER;
export const NAME_MAX_LENGTH = 255;
export const PAGE_LIMIT_MAX = 100;
export const PAGE_LIMIT_DEFAULT = 20;

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;

export const PetStatus = Type.Enum(PET_STATUSES, {
  $id: 'PetStatus',
  type: 'string',
  description: 'Availability status. `available`: the animal is available; `pending` and `sold` are state names only.',
});
export type PetStatus = Static<typeof PetStatus>;

export const Id = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: MAX_SAFE_ID, description, examples: [1] });

/** A typed `$ref` to a shared schema, so routes reference components instead of inlining them. */
export function ref<T extends TSchema>(schema: T) {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

/**
 * Text a client names things with: not blank; no control characters (NUL included) and no
 * unpaired surrogates, so every accepted value round-trips exactly through SQLite and PostgreSQL.
 */
export const TEXT_PATTERN = '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001F\\u007F\\uD800-\\uDFFF]+$';

export const NewPet = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: NAME_MAX_LENGTH,
      pattern: TEXT_PATTERN,
      description: `The animal's name: 1 to ${NAME_MAX_LENGTH} characters, not only spaces, no control characters.`,
      examples: ['Rex'],
    }),
    categoryId: Id('Identifier of the category the animal belongs to (1 to 9007199254740991).'),
    status: Type.Optional(ref(PetStatus)),
  },
  {
    $id: 'NewPet',
    additionalProperties: false,
    description: 'An animal to add. Unknown fields are rejected with 400 `invalid_request`.',
  },
);
export type NewPet = Static<typeof NewPet>;

export const Pet = Type.Object(
  {
    id: Id(
      'Unique identifier assigned by the service on creation, unique within your account: each account numbers its pets ' +
        '1, 2, 3, … in creation order (gaps are possible; an id is never reused). Another account may have a pet with the ' +
        'same number; ids tell nothing about other accounts.',
    ),
    ...NewPet.properties,
  },
  { $id: 'Pet', additionalProperties: false, description: 'An animal. `status` is omitted when the animal has none.' },
);
export type Pet = Static<typeof Pet>;

export const Pets = Type.Array(ref(Pet), { $id: 'Pets', description: 'A page of animals, in ascending id order.' });
export type Pets = Static<typeof Pets>;

export const ErrorBody = Type.Object(
  {
    code: Type.String({
      description: 'Machine-readable error code, stable across releases.',
      enum: Object.keys(ERROR_CODES),
      'x-enum-descriptions': ERROR_CODES,
    }),
    message: Type.String({ description: 'Human-readable description of what was wrong and how to fix it.' }),
    status: Type.Integer({ description: 'The HTTP status code of the response.' }),
  },
  { $id: 'Error', additionalProperties: false, description: 'Every non-2xx response has this body.' },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const ORDER_STATUSES = ['placed', 'delivered', 'cancelled'] as const;

export const OrderStatus = Type.Enum(ORDER_STATUSES, {
  $id: 'OrderStatus',
  type: 'string',
  description:
    'Where an order is in its lifecycle. `placed`: the pet is reserved (its status is `pending`); `delivered`: the sale is ' +
    'done (the pet is `sold`); `cancelled`: the reservation was released (the pet is `available` again). `delivered` and ' +
    '`cancelled` are final.',
});
export type OrderStatus = Static<typeof OrderStatus>;

export const Timestamp = (description: string) =>
  Type.String({ format: 'date-time', description: `${description} RFC 3339, UTC, millisecond precision.`, examples: ['2026-11-23T10:15:30.000Z'] });

export const NewOrder = Type.Object(
  { petId: Id('The pet to order: one of your pets, currently `available`.') },
  {
    $id: 'NewOrder',
    additionalProperties: false,
    description: 'An order to place. Unknown fields are rejected with 400 `invalid_request`.',
  },
);
export type NewOrder = Static<typeof NewOrder>;

export const Order = Type.Object(
  {
    id: Id('Identifier assigned by the service, numbered per account from 1 like pet ids (unique within your account, never reused).'),
    petId: Id('The ordered pet.'),
    status: ref(OrderStatus),
    createdAt: Timestamp('When the order was placed.'),
    updatedAt: Timestamp('When the order last changed status (equals `createdAt` until then).'),
  },
  { $id: 'Order', additionalProperties: false, description: 'An order for one pet. Experimental: the shape may still change.' },
);
export type Order = Static<typeof Order>;

export const Orders = Type.Array(ref(Order), { $id: 'Orders', description: 'A page of orders, in ascending id order.' });

/** Registered with Fastify (validation, serialization) and published as OpenAPI components. */
export const sharedSchemas = [PetStatus, NewPet, Pet, Pets, OrderStatus, NewOrder, Order, Orders, ErrorBody];

/** The query of a keyset-paginated listing: `limit`, a `status` filter, `cursor`. */
export function pageQuery<S extends TSchema>(things: string, status: S) {
  return Type.Object(
    {
      limit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: PAGE_LIMIT_MAX,
          default: PAGE_LIMIT_DEFAULT,
          description: `Maximum number of ${things} to return.`,
        }),
      ),
      status: Type.Optional(status),
      cursor: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 512,
          description: 'Opaque cursor from the `Link: <…>; rel="next"` header of the previous page. Do not build or edit it.',
        }),
      ),
    },
    { additionalProperties: false },
  );
}

const petPageQuery = pageQuery('animals', ref(PetStatus)).properties;
export const ListPetsQuery = Type.Object(
  {
    limit: petPageQuery.limit,
    status: petPageQuery.status,
    // No example: the portal's "Try it out" fills examples in, and a filter filled in hides pets.
    categoryId: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 1,
        maximum: MAX_SAFE_ID,
        description: 'Only animals in this category; combinable with `status`. Cursors are bound to both filters.',
      }),
    ),
    cursor: petPageQuery.cursor,
  },
  { additionalProperties: false },
);
export type ListPetsQuery = Static<typeof ListPetsQuery>;

/** The query of an operation that declares no query parameters: none is allowed (see refuseUndeclaredQuery). */
export const NoQuery = Type.Object({}, { additionalProperties: false });

export const ListOrdersQuery = pageQuery('orders', ref(OrderStatus));
export type ListOrdersQuery = Static<typeof ListOrdersQuery>;

export const OrderIdParams = Type.Object({ orderId: Id('The identifier of the order.') }, { additionalProperties: false });

/** Transitions take no input: no body, or an empty object (x-body-optional: see src/http/validation.ts). */
export const EmptyBody = Type.Object({}, { additionalProperties: false, 'x-body-optional': true, description: 'No fields: send no body, or `{}`.' });

export const PetIdParams = Type.Object({ petId: Id('The identifier of the animal to retrieve.') }, { additionalProperties: false });

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** The Idempotency-Key header of a create (`thing`: what a retry does not create twice). */
export function idempotencyHeaders(thing: string) {
  return Type.Object({
    'idempotency-key': Type.Optional(
      Type.String({
        // A structured-field string with or without its quotes: 1–255 visible ASCII characters.
        pattern: '^(?:"[ !#-\\[\\]-~]{1,255}"|[!#-~][!-~]{0,254})$',
        description:
          'Makes the create safe to retry (draft-ietf-httpapi-idempotency-key-header). 1 to 255 visible ASCII characters, ' +
          'quoted (`"8e03978e-…"`) or not; a UUID is a good choice. Scoped to your account and kept for 24 hours: a retry ' +
          `with the same key and body replays the first response (with \`Idempotent-Replayed: true\`) without creating ` +
          `another ${thing}; the same key with a different body (or on another operation) answers 422 \`idempotency_key_reused\`; ` +
          'a retry while the first request is still running answers 409 `idempotency_key_in_use`. Only successes are ' +
          'remembered: after an error, a retry with the same key runs the request again.',
      }),
    ),
  });
}

export const CreatePetHeaders = idempotencyHeaders('pet');
export type CreatePetHeaders = Static<typeof CreatePetHeaders>;

export const PlaceOrderHeaders = idempotencyHeaders('order');

/** The key inside an Idempotency-Key header value (quotes removed). */
export function idempotencyKeyValue(header: string): string {
  return header.startsWith('"') ? header.slice(1, -1) : header;
}
