// The quickstart's example API ({api_url} = /example/v1): its own schemas, published in its own
// OpenAPI document (src/http/example/), not in the Petstore one.
import Type, { type Static } from 'typebox';
import { idempotencyHeaders, pageQuery, ref, TEXT_PATTERN, Timestamp } from './index.js';

export const MESSAGE_MAX_LENGTH = 2000;
export const MESSAGE_STATUSES = ['queued', 'delivered', 'failed'] as const;

export const MessageStatus = Type.Enum(MESSAGE_STATUSES, {
  $id: 'MessageStatus',
  type: 'string',
  description:
    '`queued`: accepted and stored, not delivered yet (the 202 always says so); `delivered`: done (`deliveredAt` is set); ' +
    '`failed`: the service gave up after its retries (`failureReason` says why). `delivered` and `failed` are final.',
});
export type MessageStatus = Static<typeof MessageStatus>;

export const NewMessage = Type.Object(
  {
    message: Type.String({
      minLength: 1,
      maxLength: MESSAGE_MAX_LENGTH,
      pattern: TEXT_PATTERN,
      description: `The text to send: 1 to ${MESSAGE_MAX_LENGTH} characters, not only spaces, no control characters.`,
      examples: ['Hello from the Petstore quickstart!'],
    }),
  },
  { $id: 'NewMessage', additionalProperties: false, description: 'A message to send. Unknown fields are rejected with 400 `invalid_request`.' },
);
export type NewMessage = Static<typeof NewMessage>;

export const Message = Type.Object(
  {
    id: Type.String({ description: 'Opaque, unguessable identifier: `msg_` and 24 random characters.', examples: ['msg_3kTbYc9QpL0aW7nXe2RfVh5M'] }),
    message: Type.String({ description: 'The text, as sent.' }),
    status: ref(MessageStatus),
    createdAt: Timestamp('When the message was accepted.'),
    deliveredAt: Type.Optional(Timestamp('When it was delivered; absent until then.')),
    failureReason: Type.Optional(Type.String({ description: 'Why delivery failed; present only when `status` is `failed`.' })),
  },
  { $id: 'Message', additionalProperties: false, description: 'A message and where it is now. Poll `GET /messages/{id}` until `status` is final.' },
);
export type Message = Static<typeof Message>;

export const Messages = Type.Array(ref(Message), { $id: 'Messages', description: 'A page of messages, oldest first.' });

export const messageSchemas = [MessageStatus, NewMessage, Message, Messages];

export const ListMessagesQuery = pageQuery('messages', ref(MessageStatus));
export const MessageIdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64, description: 'The message id from the 202 answer or its `Location`.' }) },
  { additionalProperties: false },
);
export const SendMessageHeaders = idempotencyHeaders('message');
