// The tool for an operation that answers a stream (GET /v1/events/stream). A stream never ends
// by itself and a tool call must, so the tool opens it, keeps what arrives until events come (at
// most `maxEvents`) or `waitSeconds` pass, closes it, and returns the events with the cursor to
// continue from. The stream is closed when the call returns and when it is cancelled (the MCP
// client went away), so a call never keeps one of the key's stream slots.
import { ApiError, InvalidRequestError } from '../errors.js';
import { type SseFrame, sseParser } from '../http/sse-frames.js';
import { type Api, type ApiTool, resultOf, type ToolResult } from './api.js';

type Json = Record<string, unknown>;

interface Bound {
  default: number;
  min: number;
  max: number;
  integer: boolean;
}
export const WAIT_SECONDS: Bound = { default: 10, min: 0.1, max: 30, integer: false };
export const MAX_EVENTS: Bound = { default: 20, min: 1, max: 100, integer: true };

/** Whether the operation's 200 answer is a stream (text/event-stream). */
export function isStreaming(op: Json): boolean {
  const ok = (op.responses as Record<string, { content?: Json }> | undefined)?.['200'];
  return ok?.content?.['text/event-stream'] !== undefined;
}

/** What tools.ts knows of the operation: its name, description, parameters and how arguments make its request. */
export interface StreamOperation {
  name: string;
  description: string;
  title: string;
  properties: Json;
  required: string[];
  request(args: Record<string, unknown>): { url: string; headers: Record<string, string> };
}

const USAGE =
  'As a tool it waits instead of staying open: it returns as soon as events arrive (at most `maxEvents`), or after `waitSeconds` with none, ' +
  'as `{"events": [Event, …], "after": <sequence>}`: the events in `sequence` order, and the `after` to pass to the next call, so nothing ' +
  'is skipped or repeated. Without `after` (or `last-event-id`) it waits for the next event committed. `"ended"` is there when the server ' +
  'ended the stream, saying why (shutdown; the key revoked or expired).';

const boundSchema = (b: Bound, description: string) => ({ type: b.integer ? 'integer' : 'number', minimum: b.min, maximum: b.max, default: b.default, description });

export function streamTool(op: StreamOperation): ApiTool {
  return {
    name: op.name,
    description: `${op.description}\n\n${USAGE}`,
    inputSchema: {
      type: 'object',
      properties: {
        ...op.properties,
        waitSeconds: boundSchema(WAIT_SECONDS, `How long to wait for events, in seconds (default ${WAIT_SECONDS.default}, from ${WAIT_SECONDS.min} to ${WAIT_SECONDS.max}). The call returns as soon as events arrive.`),
        maxEvents: boundSchema(MAX_EVENTS, `The most events to return (default ${MAX_EVENTS.default}, at most ${MAX_EVENTS.max}); the rest come with the next call.`),
      },
      ...(op.required.length ? { required: op.required } : {}),
      additionalProperties: false,
    },
    annotations: { title: op.title, readOnlyHint: true, idempotentHint: true },
    async call(args, api, signal) {
      let waitSeconds: number;
      let maxEvents: number;
      try {
        waitSeconds = bounded(args, 'waitSeconds', WAIT_SECONDS);
        maxEvents = bounded(args, 'maxEvents', MAX_EVENTS);
      } catch (error) {
        if (error instanceof ApiError) return resultOf({ status: error.status, text: JSON.stringify({ code: error.code, message: error.message }) });
        throw error;
      }
      const { url, headers } = op.request(args);
      const done = new AbortController();
      const timer = setTimeout(() => done.abort(), waitSeconds * 1000);
      try {
        let answer: Awaited<ReturnType<Api['open']>>;
        try {
          answer = await api.open({ method: 'GET', path: url, headers }, AbortSignal.any([done.signal, signal]));
        } catch (error) {
          // The wait ended before the stream even opened (over HTTP: the fetch aborted): nothing arrived.
          if (!done.signal.aborted) throw error;
          return resultOfStream({ events: [], after: askedAfter(args), ended: undefined });
        }
        if (!('chunks' in answer)) return resultOf(answer);
        const got = await collect(answer.chunks, maxEvents);
        // Closed before even the stream's first line: the cursor is still the one asked for.
        got.after ??= askedAfter(args);
        return resultOfStream(got);
      } finally {
        clearTimeout(timer);
        // Closes the stream (if it is still open): its slot is free again.
        done.abort();
      }
    },
  };
}

function bounded(args: Record<string, unknown>, name: string, b: Bound): number {
  const value = args[name];
  if (value === undefined) return b.default;
  if (typeof value !== 'number' || !(value >= b.min && value <= b.max) || (b.integer && !Number.isInteger(value))) {
    throw new InvalidRequestError(`${name} must be ${b.integer ? 'an integer' : 'a number'} from ${b.min} to ${b.max} (default ${b.default}), not ${JSON.stringify(value)}.`);
  }
  return value;
}

/** The position the call asked to start after (`last-event-id` first, as the stream takes it), if any. */
function askedAfter(args: Record<string, unknown>): number | undefined {
  const asked = args['last-event-id'] ?? args.after;
  return asked === undefined || asked === null || asked === '' || !Number.isSafeInteger(Number(asked)) ? undefined : Number(asked);
}

interface Collected {
  /** Each event's data: the Event JSON as getEvent answers it. */
  events: string[];
  after: number | undefined;
  /** The server's last comment, when it ended the stream. */
  ended: string | undefined;
}

/** Reads frames until events arrived (keeping at most maxEvents) or the chunks stop (closed at the deadline or by the server). */
async function collect(chunks: AsyncIterable<Uint8Array>, maxEvents: number): Promise<Collected> {
  const got: Collected = { events: [], after: undefined, ended: undefined };
  const parse = sseParser();
  let comment: string | undefined;
  try {
    for await (const chunk of chunks) {
      for (const frame of parse(chunk)) comment = take(got, frame, maxEvents) ?? comment;
      if (got.events.length > 0) return got;
    }
    got.ended = comment;
  } catch {
    // Closed at the deadline, or the call was cancelled: what arrived is the answer.
  }
  return got;
}

/** Takes one frame: an event (while fewer than maxEvents), or the opening `after N`; returns another comment. */
function take(got: Collected, { id, data, comment: raw }: SseFrame, maxEvents: number): string | undefined {
  if (id !== undefined && data !== undefined) {
    if (got.events.length < maxEvents) {
      got.events.push(data);
      got.after = Number(id);
    }
    return undefined;
  }
  const comment = raw?.trim();
  const start = /^after (\d+)$/.exec(comment ?? '');
  if (start) got.after ??= Number(start[1]);
  return start || !comment ? undefined : comment;
}

function resultOfStream({ events, after, ended }: Collected): ToolResult {
  const fields = [`"events":[${events.join(',')}]`];
  if (after !== undefined) fields.push(`"after":${after}`);
  if (ended !== undefined) fields.push(`"ended":${JSON.stringify(ended)}`);
  return { content: [{ type: 'text', text: `{${fields.join(',')}}` }] };
}
