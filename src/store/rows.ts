// Row shapes and mappers shared by both backends: the tables have the same columns, so a
// row reads the same way from SQLite and PostgreSQL.
import type { NewPet, Pet, PetStatus } from '../schemas/index.js';
import { EVENT_TYPES } from '../schemas/events.js';
import { randomFillSync } from 'node:crypto';
import type { ApiKeyRecord, ClaimedDelivery, StoredDelivery, StoredEvent, StoredWebhookEndpoint, WebhookStats } from './types.js';

export interface PetRow {
  id: number;
  name: string;
  category_id: number;
  status: PetStatus | null;
}

export interface KeyRow {
  id: string;
  account_id: string;
  environment: 'production' | 'staging';
  key_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** `status` NULL becomes an absent property, never `null`. */
export function toPet(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id };
  if (row.status !== null) pet.status = row.status;
  return pet;
}

export function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    environment: row.environment,
    keyHash: row.key_hash,
    hint: row.hint,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** An idempotency key still in flight: completed with nothing yet (SQL, both backends). */
export const KEY_IN_FLIGHT = 'pet_id IS NULL AND order_id IS NULL AND message_seq IS NULL';
/** What a completed idempotency key created: a pet id, an order id or a message seq (the request hash tells which). */
export const KEY_RESULT = 'COALESCE(pet_id, order_id, message_seq)';

/**
 * A row of the event log: a run of `span` consecutive events of one account, one kind and one
 * commit (a group commit's pet.created events), or one event. A run is one row, not `span`:
 * each row costs the change's write a heap and a key insert, inside the batch that holds the
 * account's lock. The first event's id is `id`; the others' random digits are `more_ids`, 20
 * each; `data` is the event's data, a JSON array of the run's, or a pet run (runData). Rows
 * made before runs are single events.
 */
export interface EventRow {
  seq: number;
  span: number;
  id: string;
  more_ids: string | null;
  type: StoredEvent['type'];
  created_at: string;
  data: string;
}

/** The most events one row holds (a group commit writes bigger batches as several rows). */
export const MAX_RUN = 256;

export const EVENT_COLUMNS = 'seq, span, id, more_ids, type, created_at, data';

/** SQL (both stores): the seq of `account`'s event-log row holding its event `seq`, if any. */
export const runOf = (account: string, seq: string) =>
  `(SELECT x.seq FROM events x WHERE x.account_id = ${account} AND x.seq <= ${seq} ORDER BY x.seq DESC LIMIT 1)`;

const PET_RUN = '{"firstPetId":';
/**
 * The events' data of a row (EventRow), in sequence order: a single event's; a JSON array of
 * them; or a pet run (petRunData), whose pet.created objects are rebuilt exactly as
 * petCreatedEvent writes them (key order id, name, categoryId, status).
 */
export function runData(row: Pick<EventRow, 'span' | 'data'>): string[] {
  if (row.data.startsWith(PET_RUN)) {
    const { firstPetId, pets } = JSON.parse(row.data) as { firstPetId: number; pets: Array<Omit<Pet, 'id'>> };
    return pets.map((pet, k) => JSON.stringify({ object: { id: firstPetId + k, ...pet } }));
  }
  if (row.span === 1) return [row.data];
  return (JSON.parse(row.data) as unknown[]).map((data) => JSON.stringify(data));
}

/** The id of event `seq` of a row (see EventRow). */
const idIn = (row: Pick<EventRow, 'seq' | 'id' | 'more_ids'>, seq: number): string =>
  seq === row.seq ? row.id : 'evt_' + seq.toString(16).padStart(12, '0') + row.more_ids!.slice((seq - row.seq - 1) * 20, (seq - row.seq) * 20);

/** Whether a row holds event `seq`. */
const holds = (row: Pick<EventRow, 'seq' | 'span'>, seq: number) => seq >= row.seq && seq < row.seq + row.span;
/** Event `seq` of a row that holds it, given the row's decoded data (runData). */
const eventAt = (row: EventRow, seq: number, data: readonly string[]): StoredEvent => ({
  seq, id: idIn(row, seq), type: row.type, createdAt: row.created_at, data: data[seq - row.seq]!,
});

/** The events of a row, those after `afterSeq` only. */
export function toEvents(row: EventRow, afterSeq = 0): StoredEvent[] {
  if (row.seq + row.span - 1 <= afterSeq) return [];
  const data = runData(row);
  const events: StoredEvent[] = [];
  for (let seq = Math.max(row.seq, afterSeq + 1); seq < row.seq + row.span; seq++) events.push(eventAt(row, seq, data));
  return events;
}

/** Event `seq` of a row; undefined when the row does not hold it. */
export function eventIn(row: EventRow, seq: number): StoredEvent | undefined {
  return holds(row, seq) ? eventAt(row, seq, runData(row)) : undefined;
}

/** Rows of the log in order to a page of events: those after `afterSeq`, at most `limit`. */
export const eventPage = (rows: readonly EventRow[], afterSeq: number, limit: number): StoredEvent[] =>
  rows.flatMap((row) => toEvents(row, afterSeq)).slice(0, limit);

export interface EndpointRow {
  seq: number;
  id: string;
  url: string;
  event_mask: number;
  description: string | null;
  disabled: number | boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  created_at: string;
}

export const ENDPOINT_COLUMNS =
  'seq, id, url, event_mask, description, disabled, disabled_reason, secret, previous_secret, previous_secret_expires_at, created_at';

export const toEndpoint = (row: EndpointRow): StoredWebhookEndpoint => ({
  seq: row.seq,
  id: row.id,
  url: row.url,
  eventMask: row.event_mask,
  description: row.description ?? undefined,
  disabled: Boolean(row.disabled),
  disabledReason: row.disabled_reason ?? undefined,
  secret: row.secret,
  previousSecret: row.previous_secret ?? undefined,
  previousSecretExpiresAt: row.previous_secret_expires_at ?? undefined,
  createdAt: row.created_at,
});

export interface DeliveryRow {
  id: string;
  event_seq: number;
  run_seq: number;
  run_id: string;
  run_more_ids: string | null;
  event_type: StoredEvent['type'];
  status: StoredDelivery['status'];
  attempts: number;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
}

/** Columns of webhook_deliveries d joined with the log's row e holding its event (DELIVERY_EVENT_JOIN). */
export const DELIVERY_COLUMNS =
  'd.id, d.event_seq, e.seq AS run_seq, e.id AS run_id, e.more_ids AS run_more_ids, e.type AS event_type, d.status, d.attempts, d.last_attempt_at, d.last_response_status, d.last_error, d.next_attempt_at';

/** SQL: the join of a delivery d to the event-log row e holding its event. */
export const DELIVERY_EVENT_JOIN = `JOIN events e ON e.account_id = d.account_id AND e.seq = ${runOf('d.account_id', 'd.event_seq')}`;

export const toDelivery = (row: DeliveryRow): StoredDelivery => ({
  id: row.id,
  eventSeq: row.event_seq,
  eventId: idIn({ seq: row.run_seq, id: row.run_id, more_ids: row.run_more_ids }, row.event_seq),
  eventType: row.event_type,
  status: row.status,
  attempts: row.attempts,
  lastAttemptAt: row.last_attempt_at ?? undefined,
  lastResponseStatus: row.last_response_status ?? undefined,
  lastError: row.last_error ?? undefined,
  nextAttemptAt: row.status === 'pending' && row.next_attempt_at !== null ? new Date(row.next_attempt_at).toISOString() : undefined,
});

export interface ClaimedRow {
  job_id: number;
  account_id: string;
  endpoint_id: string;
  event_seq: number;
  attempts: number;
  single_attempt: number | boolean;
  url: string;
  disabled: number | boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  run_seq: number | null;
  run_span: number | null;
  run_id: string | null;
  run_more_ids: string | null;
  event_type: StoredEvent['type'];
  event_created_at: string;
  event_data: string;
}

/** What a claim joins: the delivery d, its endpoint w, the log's row e holding its event, for job j. */
export const CLAIMED_COLUMNS =
  'j.id AS job_id, d.account_id, d.endpoint_id, d.event_seq, d.attempts, d.single_attempt, w.url, w.disabled, w.secret, ' +
  'w.previous_secret, w.previous_secret_expires_at, e.seq AS run_seq, e.span AS run_span, e.id AS run_id, e.more_ids AS run_more_ids, ' +
  'e.type AS event_type, e.created_at AS event_created_at, e.data AS event_data';

/**
 * Claimed rows to deliveries; a row whose delivery or event is gone (finished meanwhile, or
 * pruned) is left out and its job id returned in `orphans`. A run's data is parsed once.
 */
export function toClaimedDeliveries(rows: readonly ClaimedRow[]): { claimed: ClaimedDelivery[]; orphans: number[] } {
  const claimed: ClaimedDelivery[] = [];
  const orphans: number[] = [];
  const runs = new Map<string, string[]>();
  for (const row of rows) {
    const run: EventRow | undefined =
      row.run_seq === null
        ? undefined
        : { seq: row.run_seq, span: row.run_span!, id: row.run_id!, more_ids: row.run_more_ids, type: row.event_type, created_at: row.event_created_at, data: row.event_data };
    if (row.endpoint_id === null || !run || !holds(run, row.event_seq)) {
      orphans.push(row.job_id);
      continue;
    }
    const key = `${row.account_id}\n${run.seq}`;
    let data = runs.get(key);
    if (!data) runs.set(key, (data = runData(run)));
    claimed.push(toClaimed(row, eventAt(run, row.event_seq, data)));
  }
  return { claimed, orphans };
}

const toClaimed = (row: ClaimedRow, event: StoredEvent): ClaimedDelivery => ({
  jobId: row.job_id,
  accountId: row.account_id,
  endpointId: row.endpoint_id,
  eventSeq: row.event_seq,
  attempts: row.attempts,
  singleAttempt: Boolean(row.single_attempt),
  url: row.url,
  disabled: Boolean(row.disabled),
  secret: row.secret,
  previousSecret: row.previous_secret ?? undefined,
  previousSecretExpiresAt: row.previous_secret_expires_at ?? undefined,
  event,
});

// 20 random hex digits, from a pool of random bytes refilled 4 KiB at a time (a randomUUID per
// id cost ~0.6 µs of each change's write; this, ~0.1 µs).
const pool = Buffer.alloc(4000);
let poolAt = pool.length;
/** `count` × 20 random hex digits, in one string (a run's ids: one read of the pool). */
export const randomHex20s = (count: number): string => {
  let hex = '';
  while (count > 0) {
    if (poolAt === pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const take = Math.min(count, (pool.length - poolAt) / 10);
    hex += pool.toString('hex', poolAt, poolAt + take * 10);
    poolAt += take * 10;
    count -= take;
  }
  return hex;
};
export const randomHex20 = () => randomHex20s(1);

/**
 * An event's id: `evt_`, its sequence in 12 hex digits, then 20 random ones. The log is keyed
 * by (account, sequence) and has no index on ids (every index costs each change's write): a
 * lookup by id reads the sequence from it and checks the whole id against the row's. Ids made
 * before (time in place of the sequence: they never start `evt_00`) have a partial index.
 */
export const eventId = (seq: number) => 'evt_' + seq.toString(16).padStart(12, '0') + randomHex20();
const SEQ_ID = /^evt_00[0-9a-f]{30}$/;
/** The sequence an id made by eventId() carries; undefined for other ids. */
export const eventIdSeq = (id: string): number | undefined => (SEQ_ID.test(id) ? parseInt(id.slice(4, 16), 16) : undefined);
/** SQL true for ids not made by eventId(): the partial index's condition (migration 8), which lookups repeat verbatim. */
export const LEGACY_EVENT_ID = "substr(id, 1, 6) <> 'evt_00'";

/** An event to write in the caller's transaction; `data` is its JSON text. */
export interface NewEvent {
  type: StoredEvent['type'];
  data: string;
}

/** Bit of an event kind in event masks (webhook_endpoints.event_mask, type filters). */
export const eventBit = (type: StoredEvent['type']) => 1 << EVENT_TYPES.indexOf(type);

export const petCreatedEvent = (pet: Pet): NewEvent => ({ type: 'pet.created', data: JSON.stringify({ object: pet }) });
/**
 * The data of a row holding new pets' pet.created events, after `{"firstPetId":N` (which the
 * group commit's statement writes: it alone knows the ids): the pets in id order, without ids.
 */
export function petRunData(pets: readonly NewPet[]): string {
  // By hand, as JSON.stringify would write { name, categoryId, status } (no object per pet).
  let json = ',"pets":[';
  for (let k = 0; k < pets.length; k++) {
    const { name, categoryId, status } = pets[k]!;
    json += `${k === 0 ? '' : ','}{"name":${JSON.stringify(name)},"categoryId":${categoryId}${status === undefined ? '' : `,"status":"${status}"`}}`;
  }
  return json + ']}';
}
/** The kinds a mask selects. */
export const typesOf = (mask: number) => EVENT_TYPES.filter((type) => (mask & eventBit(type)) !== 0);

/** The webhook backlog from its two parts: jobs (count, oldest event time in ms) and events not fanned out yet (count, oldest ISO time). */
export function webhookStatsOf(jobs: number, oldestJobMs: number | null, unfanned: number | null, oldestUnfanned: string | null): WebhookStats {
  const oldest = [oldestJobMs === null ? undefined : new Date(oldestJobMs).toISOString(), oldestUnfanned ?? undefined]
    .filter((t): t is string => t !== undefined)
    .sort()[0];
  return { pending: jobs + (unfanned ?? 0), oldestCreatedAt: oldest };
}
