// The quickstart's messages: accepted now, delivered later by the job worker
// (src/services/message-worker.ts). A message is stored with its delivery job before the
// 202 is sent, so an accepted message survives a crash.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { NotFoundError } from '../errors.js';
import type { MessageStatus } from '../schemas/messages.js';
import type { SqlDatabase } from '../store/core/sql.js';
import type { IdempotencyRepository } from '../store/idempotency.js';
import type { TimeOperation } from '../store/instrumented.js';
import type { JobRepository } from '../store/jobs.js';
import type { MessageRepository, StoredMessage } from '../store/messages.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';
import { completeKey, runIdempotent } from './idempotency.js';
import { randomBase62 } from './ids.js';
import { MESSAGE_JOB } from './message-worker.js';

export const newMessageId = () => `msg_${randomBase62(24)}`;

/** An Idempotency-Key's request hash for sendMessage: never equal to a createPet or placeOrder one. */
function requestHash(text: string): string {
  return createHash('sha256').update(JSON.stringify(['sendMessage', text])).digest('hex');
}

const notFound = (id: string) => new NotFoundError(`No message with id ${JSON.stringify(id)}. List your messages with GET /example/v1/messages.`);
const untimed: TimeOperation = (_operation, work) => work();

export interface MessageServiceDeps {
  db: Pick<SqlDatabase, 'transaction'>;
  messages: Pick<MessageRepository, 'get' | 'getBySeq' | 'list' | 'insert'>;
  jobs: Pick<JobRepository, 'add'>;
  /** The Idempotency-Key's claim and upkeep (runIdempotent) and its completion. */
  idempotency: IdempotencyRepository;
  clock: Clock;
  cursors: CursorCodec<MessageStatus>;
  /** Told after a message is queued (the app wakes its worker). */
  queued?: () => void;
  /** Times the enqueue's transaction (the store histogram). */
  timed?: TimeOperation;
}

export function createMessageService(deps: MessageServiceDeps) {
  const { db, messages, jobs, idempotency, clock, cursors } = deps;
  const timed = deps.timed ?? untimed;

  /** The message (the account's next seq, `queued`), its delivery job due now, and the key's completion: all or nothing. */
  async function enqueue(accountId: string, text: string, now: number, key?: string): Promise<StoredMessage> {
    const message = await timed('enqueueMessage', () =>
      db.transaction(async (tx) => {
        const message = await messages.insert(tx, accountId, { id: newMessageId(), message: text, createdAt: new Date(now).toISOString() });
        await jobs.add(tx, MESSAGE_JOB, accountId, message.seq, now);
        await completeKey(idempotency, tx, accountId, key, { messageSeq: message.seq });
        return message;
      }),
    );
    deps.queued?.();
    return message;
  }

  return {
    send(accountId: string, text: string): Promise<StoredMessage> {
      return enqueue(accountId, text, clock.now());
    },

    /** As send, at most once per (account, key); see runIdempotent. */
    async sendIdempotent(accountId: string, text: string, key: string): Promise<{ message: StoredMessage; replayed: boolean }> {
      const { value, replayed } = await runIdempotent({ db, idempotency, clock }, accountId, key, requestHash(text), {
        replay: async (seq) => {
          const first = await messages.getBySeq(accountId, seq);
          if (!first) throw new Error(`idempotency key completed with missing message ${seq}`);
          return first;
        },
        create: (now) => enqueue(accountId, text, now, key),
      });
      return { message: value, replayed };
    },

    async get(accountId: string, id: string): Promise<StoredMessage> {
      const message = await messages.get(accountId, id);
      if (!message) throw notFound(id);
      return message;
    },

    async list(accountId: string, query: PageRequest<MessageStatus>): Promise<{ messages: StoredMessage[]; nextCursor: string | undefined }> {
      const { afterId, limit } = pageBounds(cursors, accountId, query);
      const rows = await messages.list({ accountId, status: query.status, afterSeq: afterId, limit });
      // The cursor's position is the account's sequence number (the public id is random).
      const { items, nextCursor } = pageOf(cursors, accountId, query, rows, (m) => m.seq);
      return { messages: items, nextCursor };
    },
  };
}

export type MessageService = ReturnType<typeof createMessageService>;
