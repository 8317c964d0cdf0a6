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
export function resultOf({ status, text }: ApiAnswer): ToolResult {
  if (status >= 200 && status < 300) return { content: [{ type: 'text', text: text === '' ? JSON.stringify({ status }) : text }] };
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
