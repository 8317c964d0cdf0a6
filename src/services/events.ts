// The event log: listing, reading and pruning events. Events are appended by the services that
// make the changes, in their transactions; here they are read, filtered and paged.
import { InvalidRequestError, NotFoundError } from '../errors.js';
import { EVENT_TYPES, eventBit, type EventType } from '../schemas/events.js';
import type { EventRepository, StoredEvent } from '../store/events.js';
import { type CursorCodec, pageBounds, pageOf } from './cursor.js';

/**
 * The event's JSON, as the API returns it and deliveries send and sign it: built from the
 * stored data text, so both are the same bytes whichever store and process made them.
 */
export const eventJson = (e: StoredEvent) =>
  `{"id":${JSON.stringify(e.id)},"type":"${e.type}","createdAt":"${e.createdAt}","sequence":${e.seq},"data":${e.data}}`;

/** Every type filter (a non-empty set of kinds) as a cursor "status": the mask, in decimal. */
export const EVENT_FILTERS = Array.from({ length: 2 ** EVENT_TYPES.length - 1 }, (_, i) => String(i + 1));

/** The mask of a `type` query value (one kind or a comma-separated list); 400 on an unknown kind. */
export function parseTypeFilter(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  let mask = 0;
  for (const part of raw.split(',')) {
    const type = part.trim();
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      throw new InvalidRequestError(
        `Unknown event type "${type}" in type=${raw}. Use one or more of ${EVENT_TYPES.join(', ')}, separated by commas.`,
      );
    }
    mask |= eventBit(type as EventType);
  }
  return mask;
}

export interface EventPage {
  /** The page as a JSON array text. */
  json: string;
  nextCursor: string | undefined;
}

export function createEventService(deps: { events: Pick<EventRepository, 'list' | 'get' | 'prune'>; cursors: CursorCodec<string> }) {
  const { events, cursors } = deps;
  return {
    async list(accountId: string, query: { limit: number; type?: string | undefined; after?: number | undefined; cursor?: string | undefined }): Promise<EventPage> {
      if (query.after !== undefined && query.cursor !== undefined) {
        throw new InvalidRequestError('Send either `after` (to start after a sequence) or `cursor` (to continue a listing), not both.');
      }
      const typeMask = parseTypeFilter(query.type);
      const page = { limit: query.limit, status: typeMask === undefined ? undefined : String(typeMask), cursor: query.cursor };
      const bounds = pageBounds(cursors, accountId, page);
      const rows = await events.list({ accountId, typeMask, limit: bounds.limit, afterSeq: query.cursor === undefined ? (query.after ?? 0) : bounds.afterId });
      const { items, nextCursor } = pageOf(cursors, accountId, page, rows, (e) => e.seq);
      return { json: `[${items.map(eventJson).join(',')}]`, nextCursor };
    },

    async get(accountId: string, id: string): Promise<string> {
      const event = await events.get(accountId, id);
      if (!event) throw new NotFoundError(`No event with id ${id}. List your events with GET /v1/events (events are kept for a limited time).`);
      return eventJson(event);
    },

    async prune(now: number, retentionDays: number): Promise<number> {
      return events.prune(new Date(now - retentionDays * 86_400_000).toISOString());
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
