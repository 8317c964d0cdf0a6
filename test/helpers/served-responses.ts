// Sees every response the test server sends, whoever asked (the `request` helper, a bare fetch,
// the client package, a browser), and checks the responses of documented operations against the
// served documents. It sits on the server, ahead of Fastify and the fast path, and checks inside
// `res.end` before the bytes leave: when a client has its answer, any problem is already recorded.
import type { OutgoingHttpHeader, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { CheckedResponse } from './openapi.js';

export interface ResponseRules {
  /** True when `method path` is a documented operation (only those are recorded). */
  covers(method: string, path: string): boolean;
  problems(res: CheckedResponse): string[];
}

export interface ServedResponses {
  /** How many responses of documented operations were checked. */
  readonly checked: number;
  /** The problems found since the last call; they are forgotten once taken. */
  take(): string[];
}

/** Content-Type from writeHead's headers argument: an object, or a flat [name, value, …] list. */
function contentTypeIn(headers: OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined): string | undefined {
  if (headers === undefined) return undefined;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) if (String(headers[i]).toLowerCase() === 'content-type') return String(headers[i + 1]);
    return undefined;
  }
  const name = Object.keys(headers).find((key) => key.toLowerCase() === 'content-type');
  return name === undefined ? undefined : String(headers[name]);
}

function toBuffer(chunk: unknown, encoding: unknown): Buffer | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
  if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return chunk instanceof Uint8Array ? Buffer.from(chunk) : undefined;
}

export function checkServedResponses(server: Server, rules: ResponseRules): ServedResponses {
  let problems: string[] = [];
  let checked = 0;

  const watch = (method: string, path: string, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let writtenContentType: string | undefined;
    const { writeHead, write, end } = res;
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      const headers = args.slice(1).find((arg) => typeof arg === 'object' && arg !== null);
      writtenContentType = contentTypeIn(headers as OutgoingHttpHeaders | undefined) ?? writtenContentType;
      return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as typeof res.writeHead;
    res.write = function (this: ServerResponse, ...args: unknown[]) {
      const chunk = toBuffer(args[0], args[1]);
      if (chunk) chunks.push(chunk);
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof res.write;
    res.end = function (this: ServerResponse, ...args: unknown[]) {
      const chunk = toBuffer(args[0], args[1]);
      if (chunk) chunks.push(chunk);
      try {
        const header = writtenContentType ?? res.getHeader('content-type');
        const contentType = header === undefined ? null : String(header);
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        if (text !== '' && /[/+]json\b/.test(contentType ?? '')) {
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
        }
        checked++;
        problems.push(...rules.problems({ method, path, status: res.statusCode, contentType, body, text }));
      } catch (error) {
        // A checker bug must not break the server under test: it is a problem like any other.
        problems.push(`${method} ${path}: the response check threw: ${String(error)}`);
      }
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as typeof res.end;
  };

  // Ahead of the app's own listener, so even a response written synchronously is seen.
  server.prependListener('request', (req, res) => {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    if (rules.covers(method, path)) watch(method, path, res);
  });

  return {
    get checked() {
      return checked;
    },
    take() {
      const taken = problems;
      problems = [];
      return taken;
    },
  };
}
