// `petstore.events`: the account's event log (`listEvents`, `getEvent`), oldest first. The same
// events are pushed to webhook endpoints; the log is how a receiver catches up (`after`).
import type { Core, Page } from '../core.js';
import { type StreamEventsParams, streamEvents } from '../event-stream.js';
import type { operations } from '../generated/petstore.js';
import type { Event, EventType } from '../webhooks.js';

/** The query of `listEvents`, with `type` as one kind or a list (sent comma-separated). */
export type ListEventsParams = Omit<NonNullable<operations['listEvents']['parameters']['query']>, 'type'> & {
  type?: EventType | readonly EventType[] | undefined;
};
/** As {@link ListEventsParams}, without the cursor: `limit` is the size of each page fetched. */
export type ListAllEventsParams = Omit<ListEventsParams, 'cursor'>;

const EVENTS = '/events';

/** @experimental `x-stability: experimental` in the API document: the shape may still change. */
export class Events {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * One page of events, oldest first (ascending `sequence`); pass `nextCursor` back as `cursor`
   * for the next. `after`: only events with a greater `sequence` (the last one you processed).
   * @experimental `x-stability: experimental` in the API document: the shape may still change.
   */
  list(params: ListEventsParams = {}): Promise<Page<Event>> {
    const { type } = params;
    const types = typeof type === 'string' || type === undefined ? type : type.join(',');
    return this.#core.page<Event>(EVENTS, { limit: params.limit, type: types, after: params.after, cursor: params.cursor });
  }

  /**
   * Every event (optionally of some kinds, after a `sequence`), oldest first, page after page as you iterate.
   * @experimental
   */
  async *listAll(params: ListAllEventsParams = {}): AsyncGenerator<Event, void, undefined> {
    // `after` starts the listing only: the cursor carries the position (the server refuses both).
    let page = await this.list(params);
    yield* page.data;
    while (page.nextCursor !== undefined) {
      page = await this.list({ limit: params.limit, type: params.type, cursor: page.nextCursor });
      yield* page.data;
    }
  }

  /**
   * The events as they are committed (GET /events/stream, Server-Sent Events), in `sequence`
   * order, for as long as you iterate: a lost connection is reopened from the last event
   * received, so nothing is skipped or repeated. Refusals (401, 403, 400) throw; `signal` ends it.
   * @experimental
   */
  stream(params: StreamEventsParams = {}): AsyncGenerator<Event, void, undefined> {
    return streamEvents(this.#core, `${EVENTS}/stream`, params);
  }

  /**
   * One event by id (`evt_…`, the `webhook-id` of its deliveries).
   * @experimental
   */
  async get(id: string): Promise<Event> {
    return (await this.#core.request<Event>({ method: 'GET', path: `${EVENTS}/${encodeURIComponent(id)}` })).body;
  }
}

