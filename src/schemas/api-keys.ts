// API keys as the API shows them, and the scopes a key can be restricted to.
import Type, { type Static } from 'typebox';
import { Timestamp } from './index.js';

/**
 * Every scope, in a fixed order (a key's grants are a bit mask in this order: append only).
 * `…:write` implies `…:read`. Categories and the inventory are under `pets:`.
 */
export const SCOPES = [
  'pets:read',
  'pets:write',
  'orders:read',
  'orders:write',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'messages:read',
  'messages:write',
  'keys:read',
  'keys:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const API_KEY_NAME_MAX_LENGTH = 100;
/** How long a rolled key keeps working by default, and at most (seconds). */
export const ROLL_OVERLAP_DEFAULT_SECONDS = 86_400;
export const ROLL_OVERLAP_MAX_SECONDS = 604_800;

export const ScopeSchema = Type.Enum(SCOPES, {
  $id: 'Scope',
  type: 'string',
  description: 'What a restricted key may do: `<resource>:read` or `<resource>:write` (which implies `<resource>:read`). Categories and the inventory are under `pets:`.',
});

const Scopes = Type.Array(Type.Unsafe<Scope>({ $ref: 'Scope#' }), { minItems: 1, maxItems: SCOPES.length, uniqueItems: true });

const KeyName = Type.String({ minLength: 1, maxLength: API_KEY_NAME_MAX_LENGTH, pattern: '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001F\\u007F\\uD800-\\uDFFF]+$', description: `A label for people: 1 to ${API_KEY_NAME_MAX_LENGTH} characters, no control characters.`, examples: ['CI deploys'] });

export const NewApiKey = Type.Object(
  {
    name: Type.Optional(KeyName),
    scopes: Type.Optional({ ...Scopes, description: 'The scopes the key is restricted to; absent: full access. A restricted key can only create keys with a subset of its own scopes.' }),
    expiresAt: Type.Optional(Timestamp('When the key stops working: in the future, at most one year from now; absent: never (unless the calling key expires: see the description).')),
  },
  { additionalProperties: false, 'x-body-optional': true, description: 'A key to create. Every field is optional: `{}` (or no body) makes a full-access key that never expires, if the calling key is one.' },
);
export type NewApiKey = Static<typeof NewApiKey>;

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
/** A timestamp that may be null (OpenAPI 3.0 allows no `examples` inside anyOf). */
const NullableTimestamp = (description: string) =>
  Nullable(Type.String({ format: 'date-time', description: 'RFC 3339, UTC, millisecond precision.' }), description);

export const ApiKey = Type.Object(
  {
    id: Type.String({ description: 'The key\'s id (`key_…`); not a secret.', examples: ['key_4Hc9xQ2mLp7Rt0Ab'] }),
    name: Nullable(Type.String(), 'The label given at creation; `null` when none.'),
    scopes: Type.Union([Type.Array(Type.Unsafe<Scope>({ $ref: 'Scope#' })), Type.Null()], { description: 'The scopes the key is restricted to; `null`: full access.' }),
    environment: Type.Enum(['production', 'staging'], { type: 'string', description: 'Where the key works: `production` (`psk_live_…`) or `staging` (`psk_test_…`).' }),
    hint: Type.String({ description: 'The key\'s prefix and last four characters, to tell keys apart.', examples: ['psk_live_…x9Qa'] }),
    createdAt: Timestamp('When the key was created.'),
    expiresAt: NullableTimestamp('When the key stops (or stopped) working; `null`: never.'),
    lastUsedAt: NullableTimestamp('When the key last authenticated a request, to within a minute; `null`: never.'),
    revokedAt: NullableTimestamp('When the key was revoked; `null`: it is not.'),
  },
  { $id: 'ApiKey', additionalProperties: false, description: 'An API key\'s metadata. The secret is never shown again after creation, and its hash never.' },
);
export type ApiKey = Static<typeof ApiKey>;

export const CreatedApiKey = Type.Object(
  {
    ...ApiKey.properties,
    key: Type.String({ description: 'The secret: `Authorization: Bearer <key>`. **Shown only in this answer.**', examples: ['psk_live_…'] }),
  },
  { $id: 'CreatedApiKey', additionalProperties: false, description: 'A new API key with its secret, shown only this once.' },
);
export type CreatedApiKey = Static<typeof CreatedApiKey>;

export const ApiKeys = Type.Array(Type.Unsafe<ApiKey>({ $ref: 'ApiKey#' }), { $id: 'ApiKeys', description: 'A page of API keys, oldest first.' });

export const RollApiKey = Type.Object(
  {
    expiresInSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: ROLL_OVERLAP_MAX_SECONDS,
        default: ROLL_OVERLAP_DEFAULT_SECONDS,
        description: `How long the old key keeps working: seconds from now, 0 (at once) to ${ROLL_OVERLAP_MAX_SECONDS} (7 days); default ${ROLL_OVERLAP_DEFAULT_SECONDS} (24 hours).`,
      }),
    ),
  },
  { additionalProperties: false, 'x-body-optional': true, description: 'How long the old key overlaps with the new one.' },
);
export type RollApiKey = Static<typeof RollApiKey>;

export const KeyIdParams = Type.Object(
  { keyId: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$', description: 'The key\'s id (`key_…`).' }) },
  { additionalProperties: false },
);

/** The shared components (bodies are inline: an optional body's marker must sit at its root). */
export const apiKeySchemas = [ScopeSchema, ApiKey, CreatedApiKey, ApiKeys];
