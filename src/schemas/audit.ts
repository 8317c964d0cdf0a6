// The audit log as the API shows it.
import Type, { type Static } from 'typebox';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, Timestamp } from './index.js';

/** Every action an entry can record. */
export const AUDIT_ACTIONS = [
  'api_key.created',
  'api_key.rolled',
  'api_key.revoked',
  'api_key.expired_use_refused',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** How long entries are kept. */
export const AUDIT_RETENTION_DAYS = 366;

export const AuditEntry = Type.Object(
  {
    id: Type.String({ description: 'The entry\'s id (`aud_…`).', examples: ['aud_3kQ9xP2mLr7Tt0Ab5Cd8Ef1G'] }),
    sequence: Type.Integer({ format: 'int64', minimum: 1, description: 'Position in your account\'s log: 1, 2, 3, … without gaps. Pass the last one you read as `after`.' }),
    action: Type.Enum(AUDIT_ACTIONS, {
      type: 'string',
      description:
        'What happened: a key created, rolled (the target is the old key, `newKeyId` the new one), revoked, or an expired key\'s ' +
        'use refused (at most once an hour per key); a webhook endpoint created, updated, deleted, or its secret rotated.',
    }),
    actor: Type.Object(
      {
        type: Type.Enum(['api_key', 'cli'], { type: 'string', description: '`api_key`: a request with a key; `cli`: the operator\'s `petstore` command.' }),
        keyId: Type.Optional(Type.String({ description: 'The key that made the request (with `api_key`).' })),
      },
      { additionalProperties: false, description: 'Who made the change.' },
    ),
    target: Type.Object(
      {
        type: Type.Enum(['api_key', 'webhook_endpoint'], { type: 'string', description: 'The kind of thing changed.' }),
        id: Type.String({ description: 'Its id.' }),
      },
      { additionalProperties: false, description: 'What was changed.' },
    ),
    newKeyId: Type.Optional(Type.String({ description: 'With `api_key.rolled`: the new key.' })),
    requestId: Type.Union([Type.String(), Type.Null()], { description: 'The request\'s `X-Request-Id`; `null` from the CLI.' }),
    clientAddress: Type.Union([Type.String(), Type.Null()], { description: 'The address the request came from (as the server saw it, behind a trusted proxy the client\'s); `null` from the CLI.' }),
    createdAt: Timestamp('When the change was committed.'),
  },
  { $id: 'AuditEntry', additionalProperties: false, description: 'One security-relevant change, written in the same transaction as the change; never edited.' },
);
export type AuditEntry = Static<typeof AuditEntry>;

export const AuditEntries = Type.Array(Type.Unsafe<AuditEntry>({ $ref: 'AuditEntry#' }), { $id: 'AuditEntries', description: 'A page of audit entries, oldest first.' });

export const ListAuditLogQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT, description: 'Maximum number of entries to return.' })),
    after: Type.Optional(
      Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Only entries with a greater `sequence`: the last one you read. Not together with `cursor`.' }),
    ),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: <…>; rel="next"` header of the previous page.' })),
  },
  { additionalProperties: false },
);

export const auditSchemas = [AuditEntry, AuditEntries];
