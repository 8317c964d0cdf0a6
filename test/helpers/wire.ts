// HTTP at the wire level, for hostile-input and fuzz tests: requests that fetch() would
// normalise or refuse to send (duplicate headers, raw bytes, chunked bodies, no Host, slow
// clients), and responses read completely so a dropped or truncated answer is detected.
import { type Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface WireResponse {
  status: number;
  /** Lower-case header names; repeated headers joined with ", " (set-cookie excepted). */
  headers: Record<string, string>;
  body: Buffer;
  text: string;
  /** The parsed body when the response is JSON, else undefined. */
  json: unknown;
}

export interface WireRequest {
  method: string;
  /** The request-target, sent exactly as given (node:http only refuses spaces and control bytes). */
  target: string;
  /** Header pairs in order; repeats allowed. Host is added unless `noHost`. */
  headers?: Array<[string, string]>;
  body?: Uint8Array | undefined;
  /** Send the body in pieces with Transfer-Encoding: chunked instead of Content-Length. */
  chunked?: boolean;
  noHost?: boolean;
}

function parseJson(headers: Record<string, string>, text: string): unknown {
  if (!(headers['content-type'] ?? '').startsWith('application/json') || text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function flattenHeaders(raw: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    out[name] = out[name] === undefined ? raw[i + 1]! : `${out[name]}, ${raw[i + 1]!}`;
  }
  return out;
}

export class NoResponseError extends Error {
  override name = 'NoResponseError';
}

/** A kept-alive connection was reset as the request was sent on it: retry on a new connection. */
export class StaleConnectionError extends NoResponseError {
  override name = 'StaleConnectionError';
}

/**
 * Sends one request with node:http and resolves with the complete response. Rejects with
 * NoResponseError when the connection fails or closes before a complete response arrived.
 */
export function send(
  url: string,
  request: WireRequest,
  options: { agent?: Agent | false; timeoutMs?: number } = {},
): Promise<WireResponse> {
  const { hostname, port } = new URL(url);
  const headers: string[] = [];
  if (!request.noHost) headers.push('Host', `${hostname}:${port}`);
  for (const [name, value] of request.headers ?? []) headers.push(name, value);
  const body = request.body;
  if (body !== undefined) {
    if (request.chunked) headers.push('Transfer-Encoding', 'chunked');
    else if (!(request.headers ?? []).some(([name]) => name.toLowerCase() === 'content-length')) {
      headers.push('Content-Length', String(body.byteLength));
    }
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const req = httpRequest(
      { host: hostname, port: Number(port), method: request.method, path: request.target, headers, agent: options.agent ?? false, setHost: false },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('error', (err) => finish(() => reject(new NoResponseError(`response broken: ${err.message}`))));
        res.on('end', () => {
          if (!res.complete) {
            finish(() => reject(new NoResponseError('response truncated: the connection closed mid-body')));
            return;
          }
          const flat = flattenHeaders(res.rawHeaders);
          const buffer = Buffer.concat(parts);
          const text = buffer.toString('utf8');
          finish(() => resolve({ status: res.statusCode ?? 0, headers: flat, body: buffer, text, json: parseJson(flat, text) }));
        });
      },
    );
    const timer = setTimeout(() => {
      finish(() => reject(new NoResponseError(`no response within ${options.timeoutMs ?? 10_000} ms`)));
      req.destroy();
    }, options.timeoutMs ?? 10_000);
    // An early answer (401, 413) may arrive while the body is still being written; a write
    // error after that is expected and ignored because the promise has already settled.
    req.on('error', (err: NodeJS.ErrnoException) => {
      const message = `connection failed: ${err.code ?? ''} ${err.message}`;
      finish(() => reject(req.reusedSocket && err.code === 'ECONNRESET' ? new StaleConnectionError(message) : new NoResponseError(message)));
    });
    if (body === undefined) {
      req.end();
    } else if (request.chunked) {
      const third = Math.ceil(body.byteLength / 3);
      for (let offset = 0; offset < body.byteLength; offset += Math.max(third, 1)) {
        req.write(body.subarray(offset, offset + Math.max(third, 1)));
      }
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** Parses the first HTTP/1.1 response in `raw`; undefined when it is incomplete. A response to HEAD has no body. */
export function parseRawResponse(raw: Buffer, options: { head?: boolean } = {}): WireResponse | undefined {
  // Interim answers (100 Continue) come first: skip them.
  while (/^HTTP\/1\.[01] 1\d\d /.test(raw.subarray(0, 13).toString('latin1'))) {
    const interimEnd = raw.indexOf('\r\n\r\n');
    if (interimEnd < 0) return undefined;
    raw = raw.subarray(interimEnd + 4);
  }
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
  if (!status) return undefined;
  const pairs: string[] = [];
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    pairs.push(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  const headers = flattenHeaders(pairs);
  let body: Buffer;
  const rest = raw.subarray(end + 4);
  if (options.head) {
    body = Buffer.alloc(0);
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (rest.length < length) return undefined;
    body = rest.subarray(0, length);
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', offset);
      if (lineEnd < 0) return undefined;
      const size = parseInt(rest.subarray(offset, lineEnd).toString('latin1'), 16);
      if (Number.isNaN(size)) return undefined;
      if (size === 0) break;
      if (rest.length < lineEnd + 2 + size) return undefined;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      offset = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else {
    body = rest;
  }
  const text = body.toString('utf8');
  return { status: Number(status[1]), headers, body, text, json: parseJson(headers, text) };
}

/** Opens a TCP connection to the app. */
export function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Writes raw bytes on a new connection and resolves with everything the server sent until it
 * closed the connection. With `halfClose`, the client then closes its sending side: Node's
 * HTTP server treats that as an abort and may drop the answer to a request still in flight,
 * so only use it to simulate a client that goes away.
 */
export async function sendRaw(url: string, bytes: Uint8Array | string, options: { timeoutMs?: number; halfClose?: boolean } = {}): Promise<Buffer> {
  const socket = await openSocket(url);
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new NoResponseError(`the server did not close the connection within ${options.timeoutMs ?? 10_000} ms`));
    }, options.timeoutMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => parts.push(chunk));
    socket.on('error', () => undefined); // a reset after the answer is fine; what was received counts
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(parts));
    });
    socket.write(bytes);
    if (options.halfClose) socket.end();
  });
}

/** Like sendRaw (send `Connection: close` so the server ends the exchange), but parses the first response; rejects when there is no complete one. */
export async function exchangeRaw(url: string, bytes: Uint8Array | string, options: { timeoutMs?: number; head?: boolean } = {}): Promise<WireResponse> {
  const raw = await sendRaw(url, bytes, options);
  const response = parseRawResponse(raw, options);
  if (!response) throw new NoResponseError(`no complete HTTP response; received ${JSON.stringify(raw.toString('latin1').slice(0, 300))}`);
  return response;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
