// How the event log is kept in rows, on both backends (the tables have the same columns): a
// row holds a run of consecutive events of one account, one kind and one commit, or one event.
// Encoding (ids, runs, pet runs) and decoding (listing, lookup by id) are written here once;
// the backends hold only the SQL (src/store/<backend>/events.ts).
import { randomFillSync } from 'node:crypto';
import { type EventType, typesOf } from '../schemas/events.js';
import type { NewPet, Pet } from '../schemas/index.js';
import type { EventRepository, NewEvent, StoredEvent } from './events.js';
import { activeTraceparent } from '../tracing/switch.js';

/**
 * A row of the event log: a run of `span` consecutive events of one account, one kind and one
 * commit (a group commit's pet.created events), or one event. A run is one row, not `span`:
 * each row costs the change's write a heap and a key insert, inside the batch that holds the
 * account's lock. The first event's id is `id`; the others' random digits are `more_ids`, 20
 * each; `data` is the event's data, a JSON array of the run's, or a pet run (petRunData). Rows
 * made before runs are single events.
 */
export interface EventRow {
  seq: number;
  span: number;
  id: string;
  more_ids: string | null;
  type: EventType;
  created_at: string;
  data: string;
  /** The traceparent of the request that made each event (migration 14); written, read only by deliveries. */
  trace?: string | null;
}

/** The most events one row holds (a group commit writes bigger batches as several rows). */
export const MAX_RUN = 256;

export const EVENT_COLUMNS = 'seq, span, id, more_ids, type, created_at, data';

/**
 * A row's trace column for its events' traceparents: NULL when none has one (tracing off),
 * else one entry per event, comma-separated, empty for an event without one.
 */
export function traceColumn(traces: ReadonlyArray<string | undefined>): string | null {
  return traces.every((trace) => trace === undefined) ? null : traces.map((trace) => trace ?? '').join(',');
}

/** The traceparent of event `k` (0-based) of a row's trace column. */
export function traceAt(column: string | null | undefined, k: number): string | undefined {
  if (!column) return undefined;
  return column.split(',')[k] || undefined;
}

/** SQL (both backends): the seq of `account`'s event-log row holding its event `seq`, if any. */
export const runOf = (account: string, seq: string) =>
  `(SELECT x.seq FROM events x WHERE x.account_id = ${account} AND x.seq <= ${seq} ORDER BY x.seq DESC LIMIT 1)`;

// 20 random hex digits, from a pool of random bytes refilled 4 KiB at a time: a randomUUID per
// id would cost each change's write several times more.
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
/** SQL true for ids not made by eventId(): the partial index's condition, which lookups repeat verbatim. */
export const LEGACY_EVENT_ID = "substr(id, 1, 6) <> 'evt_00'";

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
export const idIn = (row: Pick<EventRow, 'seq' | 'id' | 'more_ids'>, seq: number): string =>
  seq === row.seq ? row.id : 'evt_' + seq.toString(16).padStart(12, '0') + row.more_ids!.slice((seq - row.seq - 1) * 20, (seq - row.seq) * 20);

/** Whether a row holds event `seq`. */
export const holds = (row: Pick<EventRow, 'seq' | 'span'>, seq: number) => seq >= row.seq && seq < row.seq + row.span;
/** Event `seq` of a row that holds it, given the row's decoded data (runData). */
export const eventAt = (row: EventRow, seq: number, data: readonly string[]): StoredEvent => ({
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

/** An event to append for an account, stamped with its change's time (its deliveries are due then). */
export interface EventWrite {
  accountId: string;
  event: NewEvent;
  createdAt: string;
  /** The traceparent of the request that made it (tracing on). */
  trace?: string | undefined;
}

/**
 * One append call's events as writes: each with its own traceparent from `traces` when given,
 * else the active context's (the request's).
 */
export function appendWrites(accountId: string, events: readonly NewEvent[], createdAt: string, traces?: ReadonlyArray<string | undefined>): EventWrite[] {
  if (traces) return events.map((event, i) => ({ accountId, event, createdAt, trace: traces[i] }));
  const trace = activeTraceparent();
  return events.map((event) => ({ accountId, event, createdAt, trace }));
}

/** Consecutive writes of one account, in order (each group takes the account's counter once). */
export function* byAccount(writes: readonly EventWrite[]): Generator<{ accountId: string; writes: readonly EventWrite[] }> {
  let start = 0;
  while (start < writes.length) {
    const accountId = writes[start]!.accountId;
    let end = start + 1;
    while (end < writes.length && writes[end]!.accountId === accountId) end++;
    yield { accountId, writes: writes.slice(start, end) };
    start = end;
  }
}

/**
 * One account's events numbered from `seq` as rows (EventRow, without the account): each run of
 * consecutive events of one kind (at most MAX_RUN) is one row, stamped with its first event's time.
 */
export function runRows(seq: number, writes: readonly EventWrite[]): EventRow[] {
  const rows: EventRow[] = [];
  for (let i = 0; i < writes.length; ) {
    const { event, createdAt } = writes[i]!;
    let j = i + 1;
    while (j < writes.length && j - i < MAX_RUN && writes[j]!.event.type === event.type) j++;
    if (j - i === 1) {
      rows.push({ seq, span: 1, id: eventId(seq), more_ids: null, type: event.type, created_at: createdAt, data: event.data, trace: writes[i]!.trace ?? null });
    } else {
      let data = '[' + event.data;
      for (let k = i + 1; k < j; k++) data += ',' + writes[k]!.event.data;
      const trace = traceColumn(writes.slice(i, j).map((write) => write.trace));
      rows.push({ seq, span: j - i, id: eventId(seq), more_ids: randomHex20s(j - i - 1), type: event.type, created_at: createdAt, data: data + ']', trace });
    }
    seq += j - i;
    i = j;
  }
  return rows;
}

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

/** A pet a group commit creates, as its pet.created run needs it. */
export interface NewPetWrite {
  accountId: string;
  pet: NewPet;
  createdAt: string;
  /** The traceparent of the request that created it (tracing on). */
  trace?: string | undefined;
}

/**
 * A group commit's pet.created rows, one per account (its pets in call order; the accounts in
 * order of first appearance), as parallel arrays: account, the first id's random digits, the
 * others' (more_ids, '' for one pet), the run's time (its first pet's) and its data after
 * `{"firstPetId":N` (petRunData). The statement that numbers the pets fills in the rest.
 */
export function petRunParams(batch: readonly NewPetWrite[]): [string[], string[], string[], string[], string[], Array<string | null>] {
  const runs = new Map<string, NewPetWrite[]>();
  for (const item of batch) {
    const run = runs.get(item.accountId);
    if (run) run.push(item);
    else runs.set(item.accountId, [item]);
  }
  const accounts: string[] = [];
  const firstRandoms: string[] = [];
  const moreIds: string[] = [];
  const createdAts: string[] = [];
  const data: string[] = [];
  const traces: Array<string | null> = [];
  for (const [accountId, run] of runs) {
    accounts.push(accountId);
    firstRandoms.push(randomHex20());
    moreIds.push(randomHex20s(run.length - 1));
    createdAts.push(run[0]!.createdAt);
    data.push(petRunData(run.map((item) => item.pet)));
    traces.push(traceColumn(run.map((item) => item.trace)));
  }
  return [accounts, firstRandoms, moreIds, createdAts, data, traces];
}

/** What a backend provides to read its log: the SQL (src/store/<backend>/events.ts). */
export interface EventLogSql {
  append: EventRepository['append'];
  /** The account's rows from the one holding event `afterSeq + 1` on, in order, at most `limit`; only rows of `types` when given. */
  rowsFrom(accountId: string, afterSeq: number, limit: number, types: readonly EventType[] | undefined): Promise<EventRow[]>;
  /** The account's row holding its event `seq`, if any. */
  rowHolding(accountId: string, seq: number): Promise<EventRow | undefined>;
  /** The account's row whose (first) id is `id`, an id made before ids carried sequences. */
  legacyRow(accountId: string, id: string): Promise<EventRow | undefined>;
  prune: EventRepository['prune'];
}

/** The event repository over a backend's SQL: listing and lookups read runs as events. */
export function eventRepository(sql: EventLogSql): EventRepository {
  return {
    append: sql.append,
    prune: sql.prune,
    async list({ accountId, limit, typeMask, afterSeq = 0 }) {
      // From the row holding the first event after afterSeq; each row holds at least one event
      // to show, so `limit` rows fill the page.
      const after = Math.floor(afterSeq);
      return eventPage(await sql.rowsFrom(accountId, after, limit, typeMask === undefined ? undefined : typesOf(typeMask)), after, limit);
    },
    async get(accountId, id) {
      const seq = eventIdSeq(id);
      if (seq === undefined) {
        const row = await sql.legacyRow(accountId, id);
        return row && eventIn(row, row.seq);
      }
      const row = await sql.rowHolding(accountId, seq);
      const event = row && eventIn(row, seq);
      // The sequence alone finds the row: the random digits must match too.
      return event?.id === id ? event : undefined;
    },
  };
}
