// The quickstart's messages: accepted now, delivered later by the job worker
// (src/services/message-worker.ts). A message is stored with its delivery job before the
// 202 is sent, so an accepted message survives a crash.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { NotFoundError } from '../errors.js';
import type { MessageStatus } from '../schemas/messages.js';
import type { Store, StoredMessage } from '../store/types.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';
import { runIdempotent } from './idempotency.js';
import { randomBase62 } from './ids.js';

export const newMessageId = () => `msg_${randomBase62(24)}`;

/** An Idempotency-Key's request hash for sendMessage: never equal to a createPet or placeOrder one. */
function requestHash(text: string): string {
  return createHash('sha256').update(JSON.stringify(['sendMessage', text])).digest('hex');
}

const notFound = (id: string) => new NotFoundError(`No message with id ${JSON.stringify(id)}. List your messages with GET /example/v1/messages.`);

export function createMessageService(deps: { store: Store; clock: Clock; cursors: CursorCodec<MessageStatus>; queued?: () => void }) {
  const { store, clock, cursors } = deps;

  async function enqueue(accountId: string, text: string, now: number, key?: string): Promise<StoredMessage | undefined> {
    const message = await store.enqueueMessage(accountId, { id: newMessageId(), message: text, createdAt: new Date(now).toISOString() }, now, key);
    if (message) deps.queued?.();
    return message;
  }

  return {
    async send(accountId: string, text: string): Promise<StoredMessage> {
      const message = await enqueue(accountId, text, clock.now());
      if (!message) throw new Error('enqueueMessage without a key returned nothing');
      return message;
    },

    /** As send, at most once per (account, key); see runIdempotent. */
    async sendIdempotent(accountId: string, text: string, key: string): Promise<{ message: StoredMessage; replayed: boolean }> {
      const { value, replayed } = await runIdempotent({ db: store.db, idempotency: store.idempotency, clock }, accountId, key, requestHash(text), {
        replay: async (seq) => {
          const first = await store.getMessageBySeq(accountId, seq);
          if (!first) throw new Error(`idempotency key completed with missing message ${seq}`);
          return first;
        },
        create: (now) => enqueue(accountId, text, now, key),
      });
      return { message: value, replayed };
    },

    async get(accountId: string, id: string): Promise<StoredMessage> {
      const message = await store.getMessage(accountId, id);
      if (!message) throw notFound(id);
      return message;
    },

    async list(accountId: string, query: PageRequest<MessageStatus>): Promise<{ messages: StoredMessage[]; nextCursor: string | undefined }> {
      const { afterId, limit } = pageBounds(cursors, accountId, query);
      const rows = await store.listMessages({ accountId, status: query.status, afterSeq: afterId, limit });
      // The cursor's position is the account's sequence number (the public id is random).
      const { items, nextCursor } = pageOf(cursors, accountId, query, rows, (m) => m.seq);
      return { messages: items, nextCursor };
    },
  };
}

export type MessageService = ReturnType<typeof createMessageService>;
