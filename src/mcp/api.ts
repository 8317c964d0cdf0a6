// What a tool is and how it reaches the API (tools.ts makes the tools; /mcp and `petstore mcp`
// each give them an Api: in-process requests, or HTTP), and an API answer as a tool result.

export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>;
  isError?: boolean;
  [key: string]: unknown;
}

export interface ApiTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown> & { type: 'object' };
  annotations: { title: string; readOnlyHint: boolean; idempotentHint: boolean };
  /** `signal` aborts when the call is cancelled (the MCP client went away): whatever the call opened must close. */
  call(args: Record<string, unknown>, api: Api, signal: AbortSignal): Promise<ToolResult>;
}

export interface ApiRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface ApiAnswer {
  status: number;
  text: string;
  /** The answer's headers a tool result carries on (see ANSWER_HEADERS); absent ones undefined. */
  headers?: Partial<Record<AnswerHeader, string>>;
}

/** Headers an agent needs to go on: the next page (Link), the ETag for If-Match, and whether a write was a replay. */
export const ANSWER_HEADERS = ['link', 'etag', 'idempotent-replayed'] as const;
export type AnswerHeader = (typeof ANSWER_HEADERS)[number];

/** ANSWER_HEADERS of an answer, read with `get` (fetch's Headers or an inject's headers). */
export function answerHeaders(get: (name: AnswerHeader) => string | undefined): Partial<Record<AnswerHeader, string>> {
  const headers: Partial<Record<AnswerHeader, string>> = {};
  for (const name of ANSWER_HEADERS) {
    const value = get(name);
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/**
 * What a tool result adds after the API's JSON: the cursor of the next page (the list tools take
 * it as `cursor`), the ETag (for `if-match`), and `idempotentReplayed` when a write answered with
 * an earlier call's result. Undefined when there is none of them.
 */
function continuation(headers: ApiAnswer['headers'] = {}): string | undefined {
  const next = /<([^>]*)>\s*;\s*rel="next"/.exec(headers.link ?? '')?.[1];
  const extra = {
    ...(next !== undefined ? { nextCursor: new URL(next, 'http://api').searchParams.get('cursor') ?? undefined } : {}),
    ...(headers.etag !== undefined ? { etag: headers.etag } : {}),
    ...(headers['idempotent-replayed'] === 'true' ? { idempotentReplayed: true } : {}),
  };
  return Object.keys(extra).length > 0 ? JSON.stringify(extra) : undefined;
}

/** A 200 text/event-stream answer, read as it arrives. */
export interface StreamingAnswer {
  status: 200;
  chunks: AsyncIterable<Uint8Array>;
}

/** How a tool calls the API with the caller's key. */
export interface Api {
  /** The whole answer. */
  send(request: ApiRequest): Promise<ApiAnswer>;
  /** A streaming GET: a 200's body as it arrives until `signal` aborts, which closes it (and frees what it held); any other answer whole. */
  open(request: ApiRequest, signal: AbortSignal): Promise<ApiAnswer | StreamingAnswer>;
}

/** The API's JSON as the tool's result; an error answer as a tool error with status, code and message. */
export function resultOf({ status, text, headers }: ApiAnswer): ToolResult {
  if (status >= 200 && status < 300) {
    const extra = continuation(headers);
    const body = { type: 'text' as const, text: text === '' ? JSON.stringify({ status }) : text };
    return { content: extra === undefined ? [body] : [body, { type: 'text', text: extra }] };
  }
  let error: { code?: unknown; message?: unknown } = {};
  try {
    error = JSON.parse(text) as typeof error;
  } catch {
    // not an Error body
  }
  const code = typeof error.code === 'string' ? error.code : 'unexpected_response';
  const message = typeof error.message === 'string' ? error.message : `HTTP ${status}`;
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ status, code, message }) }] };
}
