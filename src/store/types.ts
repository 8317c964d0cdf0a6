// The persistence contract. Services depend on this interface only; each backend
// (sqlite/, postgres/) implements it and must pass the same contract test suite.
import type { Environment } from '../config.js';
import type { NewPet, Order, OrderStatus, Pet, PetStatus } from '../schemas/index.js';
import type { Message, MessageStatus } from '../schemas/messages.js';
import type { EventRepository } from './events.js';
import type { WebhookRepository } from './webhooks.js';

export interface Account {
  id: string;
  name: string;
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  environment: Environment;
  /** SHA-256 of the full secret, hex. The secret itself is never stored. */
  keyHash: string;
  /** Non-secret tail shown in listings so operators can tell keys apart. */
  hint: string;
  createdAt: string;
  revokedAt: string | null;
}

/** A subscription to API key changes (Store.watchApiKeys). */
export interface ApiKeyWatch {
  /** True while every change is being heard. */
  live(): boolean;
  close(): Promise<void>;
}

export interface ListPetsQuery {
  accountId: string;
  limit: number;
  status?: PetStatus | undefined;
  /** Keyset position: only pets with id greater than this. */
  afterId?: number | undefined;
}

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/** What a request with an Idempotency-Key finds when it claims the key. */
export type IdempotencyClaim =
  /** The caller owns the key now and must create the pet (or release the key on failure). */
  | { outcome: 'claimed' }
  /** A request with this key completed: replay what it created (a pet or an order; the request hash tells which). */
  | { outcome: 'completed'; requestHash: string; resourceId: number }
  /** A request with this key is still running. */
  | { outcome: 'in_flight'; requestHash: string };

export interface IdempotencyClaimInput {
  accountId: string;
  key: string;
  requestHash: string;
  /** Epoch ms. */
  now: number;
  /** Keys older than this many ms are forgotten and may be reused. */
  ttlMs: number;
  /** An in-flight claim older than this many ms is presumed dead (its process crashed) and may be taken over. */
  leaseMs: number;
}

export interface ListOrdersQuery {
  accountId: string;
  limit: number;
  status?: OrderStatus | undefined;
  /** Keyset position: only orders with id greater than this. */
  afterId?: number | undefined;
}

export type PlaceOrderResult =
  | { outcome: 'placed'; order: Order }
  | { outcome: 'pet_not_found' }
  /** The pet exists but is not `available` (undefined: it has no status). */
  | { outcome: 'pet_not_available'; petStatus: PetStatus | undefined }
  /** With an idempotency key: another request completed the key meanwhile; nothing was written. */
  | { outcome: 'idempotency_race' };

/** A compare-and-set on an order and its pet, decided by the service's state machine. */
export interface OrderMove {
  from: OrderStatus;
  to: OrderStatus;
  /** The pet's status while the order is `from`, and after the move. */
  petFrom: PetStatus;
  petTo: PetStatus;
}

export type MoveOrderResult =
  | { outcome: 'moved'; order: Order }
  /** The order was not in `move.from`: nothing changed; this is the order as it is. */
  | { outcome: 'not_moved'; order: Order }
  | { outcome: 'not_found' };

/** Orders (src/store/<backend>/orders.ts). Every call is scoped by account. */
export interface OrderRepository {
  /**
   * In one transaction: the pet must be the account's and `available`; it becomes `pending` and
   * an order `placed` is created with the account's next order id. With `idempotencyKey` (a key
   * the caller claimed), the key is completed with the order in the same transaction.
   */
  placeOrder(accountId: string, petId: number, createdAt: string, idempotencyKey?: string): Promise<PlaceOrderResult>;
  getOrder(accountId: string, id: number): Promise<Order | undefined>;
  /** Orders of one account in ascending id order, at most `limit`. */
  listOrders(query: ListOrdersQuery): Promise<readonly Order[]>;
  /** Moves the order and its pet together, if the order is in `move.from`. */
  moveOrder(accountId: string, id: number, move: OrderMove, updatedAt: string): Promise<MoveOrderResult>;
}

export interface ListMessagesQuery {
  accountId: string;
  limit: number;
  status?: MessageStatus | undefined;
  /** Keyset position: only messages after this one (the account's sequence number). */
  afterSeq?: number | undefined;
}

/** A message with its place in the account's sequence (what cursors and jobs refer to). */
export type StoredMessage = Message & { seq: number };

/** A unit of background work, leased to one worker at a time (src/store/<backend>/messages.ts). */
export interface Job {
  id: number;
  kind: 'message.deliver' | 'webhook.deliver';
  accountId: string;
  /** What the job is about, within the account (a message's seq). */
  ref: number;
  /** Attempts so far, this one included. */
  attempts: number;
}

export interface MessageQueueStats {
  /** Messages still queued. */
  depth: number;
  /** createdAt of the oldest queued message (ISO), if any. */
  oldestCreatedAt: string | undefined;
}

/** The example API's messages, and the durable job queue that delivers them. */
export interface MessageRepository {
  /**
   * In one transaction: the message (the account's next seq, status `queued`), its delivery job
   * (due at `now`), and, with `idempotencyKey` (claimed by the caller), the key's completion.
   * Undefined (nothing written) when another request completed the key meanwhile.
   */
  enqueueMessage(accountId: string, message: { id: string; message: string; createdAt: string }, now: number, idempotencyKey?: string): Promise<StoredMessage | undefined>;
  getMessage(accountId: string, id: string): Promise<StoredMessage | undefined>;
  getMessageBySeq(accountId: string, seq: number): Promise<StoredMessage | undefined>;
  /** Messages of one account, oldest first, at most `limit`. */
  listMessages(query: ListMessagesQuery): Promise<readonly StoredMessage[]>;
  /**
   * Leases up to `max` due jobs of `kind` until `now + leaseMs` and counts an attempt on each.
   * Jobs leased by someone else are skipped (PostgreSQL: SKIP LOCKED; SQLite: the write lock).
   */
  claimJobs(kind: Job['kind'], now: number, leaseMs: number, max: number): Promise<Job[]>;
  /**
   * The jobs' messages are delivered and the jobs done, all in one transaction (one commit for
   * a whole batch). A message no longer queued is left as it is (its job is still removed): the
   * status moves once, whoever tries. Returns how many messages moved.
   */
  completeMessageDeliveries(jobs: readonly Job[], deliveredAt: string): Promise<number>;
  /** Gives the job back, due again at `retryAt` (epoch ms), with the reason kept for the record. */
  retryJob(job: Job, error: string, retryAt: number): Promise<void>;
  /** The message failed (with the reason) and its job is done, together, if it was still queued. */
  failMessage(job: Job, reason: string): Promise<boolean>;
  messageQueueStats(): Promise<MessageQueueStats>;
}

export interface Store extends OrderRepository, MessageRepository {
  readonly kind: 'sqlite' | 'postgres';
  /** The account's event log (src/store/<backend>/events.ts); events are appended by the changes themselves. */
  readonly events: EventRepository;
  /** Webhook endpoints and deliveries (src/store/<backend>/webhooks.ts). */
  readonly webhooks: WebhookRepository;
  /** Connection pool usage, for backends that pool connections. */
  poolStats?(): PoolStats;
  /**
   * A number that changes whenever another connection or process commits (SQLite's
   * data_version), so in-process caches can tell they may be stale. Cheap: no disk access.
   */
  externalChangeCounter?(): number;
  /**
   * Subscribes to changes of API keys committed by any process (PostgreSQL: LISTEN/NOTIFY).
   * `onChange(keyId)` after a key changed; `onChange(undefined)` when changes may have been
   * missed (the listening connection was lost, or has just been re-established): forget all.
   * Remembered keys are only trustworthy while `live()`.
   */
  watchApiKeys?(onChange: (keyId: string | undefined) => void): ApiKeyWatch;
  /**
   * The pet if the store's in-memory read cache holds it (checked against other processes'
   * commits, so exact), else undefined: a synchronous answer for the HTTP fast path.
   */
  cachedPet?(accountId: string, id: number): Pet | undefined;
  /** The same for a page of listPets. */
  cachedPage?(query: ListPetsQuery): readonly Pet[] | undefined;
  /** Applies pending migrations; safe to call from several processes at once. */
  migrate(): Promise<number[]>;
  /** Pending migration versions, without applying them. */
  pendingMigrations(): Promise<number[]>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;

  /** Returns the stored value, or stores and returns `create()` when absent (first writer wins). */
  getOrCreateSetting(key: string, create: () => string): Promise<string>;

  createAccount(account: Account): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;

  createApiKey(key: ApiKeyRecord): Promise<ApiKeyRecord>;
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(accountId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked (idempotent); undefined when no such key. */
  revokeApiKey(id: string, revokedAt: string): Promise<ApiKeyRecord | undefined>;

  createPet(accountId: string, pet: NewPet, createdAt: string): Promise<Pet>;
  getPet(accountId: string, id: number): Promise<Pet | undefined>;
  /** Pets of one account in ascending id order, at most `limit`. */
  listPets(query: ListPetsQuery): Promise<readonly Pet[]>;

  /** Atomically claims an idempotency key of an account, or reports who holds it. */
  claimIdempotencyKey(claim: IdempotencyClaimInput): Promise<IdempotencyClaim>;
  /**
   * Creates the pet and marks the claimed key completed with it, in one transaction.
   * Returns undefined (and creates nothing) when the key was completed by another request meanwhile.
   */
  createPetWithIdempotencyKey(accountId: string, pet: NewPet, createdAt: string, key: string): Promise<Pet | undefined>;
  /**
   * Marks an in-flight claim as still alive at `now` (epoch ms; never moves it back). A claim
   * not renewed for the lease is presumed dead and may be taken over by a retry.
   */
  renewIdempotencyKey(accountId: string, key: string, now: number): Promise<void>;
  /** Forgets an in-flight claim so the client can retry (after a failure). */
  releaseIdempotencyKey(accountId: string, key: string): Promise<void>;
  /** Deletes keys created before `before` (epoch ms); returns how many. */
  purgeIdempotencyKeys(before: number): Promise<number>;
}
