// Sends one webhook request per call, over node:http/https with keep-alive, and tells the
// delivery worker what happened: a status (3xx included; redirects are never followed, since a
// redirect could point anywhere) or an error: its category (what the endpoint's owner is shown)
// and a short reason for the server's log only (it may name addresses the host resolved to).
//
// SSRF: every connection goes through `lookup` below, which refuses the host when ANY address it
// resolves to is refused by the address policy (so a name that answers with one public and one
// internal address cannot be used to reach the internal one), and each new socket's remote
// address is checked again on 'connect'. Node skips `lookup` for IP-literal hosts, so the URL is
// checked (checkWebhookUrl) before each request as well. A keep-alive socket is reused only for
// the same host and port, and it was checked when it connected; DNS rebinding cannot redirect it.
//
// The receiver's response body is never kept: it is drained and discarded, and the socket is
// destroyed once more than 64 KiB arrives or the attempt's deadline passes.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { DeliveryError } from '../schemas/events.js';
import { checkWebhookUrl, refusedAddressReason, type AllowedNetworks } from './address-policy.js';

export type SendError = { kind: 'error'; category: Exclude<DeliveryError, 'http_status' | 'endpoint_disabled'>; reason: string };
export type SendResult = { kind: 'response'; status: number; retryAfterMs?: number } | SendError;

export type WebhookResolver = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

export interface WebhookSenderOptions {
  /** Accept http: URLs (PETSTORE_WEBHOOK_ALLOW_HTTP, development only). */
  allowHttp: boolean;
  /** Networks re-opened by PETSTORE_WEBHOOK_ALLOWED_NETWORKS. */
  allowed: AllowedNetworks;
  /** Deadline for a whole attempt: DNS, connect, TLS, sending, and the response headers. */
  timeoutMs: number;
  /** Host name resolution; by default dns.promises.lookup (the system resolver, all addresses). */
  resolve?: WebhookResolver;
  /** Sockets per origin (host and port), for each of http and https; default 64. */
  maxSockets?: number;
}

export interface WebhookSender {
  /** POSTs `body` to `url`. Never rejects. */
  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  /** Closes the pooled connections; later sends fail. */
  close(): void;
}

/** Response bytes discarded before the socket is destroyed instead of drained. */
const MAX_DISCARDED_BODY = 64 * 1024;
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;
/** How long an idle keep-alive socket stays pooled. */
const IDLE_SOCKET_MS = 30_000;
export const USER_AGENT = 'Petstore-Webhooks/1';
/** Headers the sender sets itself; a caller's value for one is dropped (framing stays ours). */
const OWN_HEADERS = new Set(['content-type', 'content-length', 'user-agent', 'host', 'transfer-encoding', 'connection']);

class PolicyRefusal extends Error {}
class DnsFailure extends Error {}
class AttemptTimeout extends Error {}

const defaultResolve: WebhookResolver = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

// Retry-After is an HTTP-date in one of three formats (RFC 9110 §5.6.7); anything else is
// ignored rather than guessed at by Date.parse.
const HTTP_DATE = [
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/,
  /^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d{2}-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d{2} \d{2}:\d{2}:\d{2} GMT$/,
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/,
];

/**
 * A Retry-After value in ms from `now`: delta-seconds or an HTTP-date, capped at 24 hours; a
 * date in the past is 0. Undefined when absent or not valid.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const format = HTTP_DATE.findIndex((pattern) => pattern.test(text));
  if (format === -1) return undefined;
  // asctime has no zone but means GMT; the other two say GMT, which Date.parse honours.
  const at = Date.parse(format === 2 ? `${text} GMT` : text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(at - now, 0), MAX_RETRY_AFTER_MS);
}

// EPROTO: OpenSSL's handshake failures (an https URL on a plain-HTTP port: 'wrong version number').
const TLS_CODE = /^(EPROTO$|ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE)/;

const failure = (category: SendError['category'], reason: string): SendError => ({ kind: 'error', category, reason });

/** The category, and a short reason: our own refusals in words, everything else by its error code only. */
function failureFor(error: unknown, timeoutMs: number): SendError {
  if (error instanceof PolicyRefusal) return failure('address_not_allowed', `connection refused by policy: ${error.message}`);
  if (error instanceof AttemptTimeout) return failure('timeout', `no response within ${timeoutMs} ms`);
  if (error instanceof DnsFailure) return failure('dns_failure', `DNS: ${error.message}`);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string') return failure('connection_failed', 'request failed');
  if (TLS_CODE.test(code)) return failure('tls_error', `TLS: ${code}`);
  if (code === 'HPE_HEADER_OVERFLOW') return failure('response_too_large', `invalid HTTP response: ${code}`);
  if (code.startsWith('HPE_')) return failure('invalid_response', `invalid HTTP response: ${code}`);
  return failure('connection_failed', code);
}

/**
 * The `lookup` the sender's sockets use: resolves with `resolve` and fails with a policy refusal
 * when ANY address is refused. net calls it for host names only (not IP literals); with
 * autoSelectFamily (Node 20's default) it asks for all addresses, otherwise for one.
 * Exported for tests, which can check refusals without opening a socket.
 */
export function createPolicyLookup(resolve: WebhookResolver, allowed: AllowedNetworks): net.LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        if (found.length === 0) return callback(new DnsFailure('no addresses'), '');
        for (const { address } of found) {
          const reason = refusedAddressReason(address, allowed);
          if (reason !== undefined) return callback(new PolicyRefusal(reason), '');
        }
        const want = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
        const usable = found
          .map(({ address }) => ({ address, family: net.isIP(address) }))
          .filter(({ family }) => want === 0 || family === want);
        const first = usable[0];
        if (first === undefined) return callback(new DnsFailure(`no IPv${want} address`), '');
        if (options.all) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (error: unknown) => {
        const code = (error as NodeJS.ErrnoException | undefined)?.code;
        callback(new DnsFailure(typeof code === 'string' ? code : 'lookup failed'), '');
      },
    );
  };
}

export function createWebhookSender(opts: WebhookSenderOptions): WebhookSender {
  const resolve = opts.resolve ?? defaultResolve;
  const policy = { allowHttp: opts.allowHttp, allowed: opts.allowed };

  const lookup = createPolicyLookup(resolve, opts.allowed);

  const agentOptions = {
    keepAlive: true,
    maxSockets: opts.maxSockets ?? 64,
    timeout: IDLE_SOCKET_MS,
    lookup,
  };
  const agents = { http: guard(new http.Agent(agentOptions)), https: guard(new https.Agent(agentOptions)) };

  // Defence in depth: whatever the lookup said, the address the socket connected to decides.
  // The listener is added before the request writes anything, so it runs before the headers go
  // (for https, tls has already queued its ClientHello by then: no request bytes).
  function guard<A extends http.Agent>(agent: A): A {
    const create = agent.createConnection.bind(agent);
    agent.createConnection = (options, callback) => {
      const stream: Duplex | null | undefined = create(options, callback);
      if (stream instanceof net.Socket) {
        stream.once('connect', () => {
          const address = stream.remoteAddress ?? 'an unknown address';
          const reason = refusedAddressReason(address, opts.allowed);
          if (reason !== undefined) stream.destroy(new PolicyRefusal(reason));
        });
      }
      return stream;
    };
    return agent;
  }

  let closed = false;

  function send(rawUrl: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    if (closed) return Promise.resolve(failure('connection_failed', 'sender closed'));
    const checked = checkWebhookUrl(rawUrl, policy);
    if (!checked.ok) return Promise.resolve(failure('address_not_allowed', `connection refused by policy: ${checked.reason}`));
    const url = checked.url;
    const payload = Buffer.from(body, 'utf8');
    const outgoing: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (!OWN_HEADERS.has(name.toLowerCase())) outgoing[name] = value;
    }
    outgoing['Content-Type'] = 'application/json';
    outgoing['User-Agent'] = USER_AGENT;
    outgoing['Content-Length'] = String(payload.byteLength);

    return new Promise<SendResult>((settle) => {
      let settled = false;
      const finish = (result: SendResult): void => {
        if (settled) return;
        settled = true;
        settle(result);
      };
      const secure = url.protocol === 'https:';
      let request: http.ClientRequest;
      try {
        const agent = secure ? agents.https : agents.http;
        request = (secure ? https : http).request(url, { method: 'POST', headers: outgoing, agent });
      } catch (error) {
        // Invalid header names or values throw synchronously.
        const code = (error as NodeJS.ErrnoException).code;
        return finish(failure('connection_failed', `invalid request: ${code ?? 'bad header'}`));
      }
      // One deadline for the attempt, from here: waiting for a pooled socket, DNS, connect, TLS,
      // the response headers. After the headers it bounds the body drain, so a receiver that
      // trickles its body cannot hold a socket.
      let result: SendResult | undefined;
      const deadline = setTimeout(() => request.destroy(new AttemptTimeout()), opts.timeoutMs);
      request.on('error', (error) => {
        // After the headers, the status is the result, whatever happens to the body.
        if (result === undefined) finish(failureFor(error, opts.timeoutMs));
      });
      request.once('close', () => {
        clearTimeout(deadline);
        finish(result ?? failure('connection_failed', 'connection closed')); // settles without fail
      });
      request.once('response', (response) => {
        const status = response.statusCode ?? 0;
        const retryAfterMs =
          status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after'], Date.now()) : undefined;
        const answer: SendResult =
          retryAfterMs === undefined ? { kind: 'response', status } : { kind: 'response', status, retryAfterMs };
        result = answer;
        // Settled once the body is gone (drained, cut, or cut by the deadline), so the socket is
        // back in the pool, or destroyed, by the time the caller sends again.
        response.once('close', () => finish(answer));
        response.on('error', () => {}); // a body cut short (by us or the receiver) is not a failure
        let discarded = 0;
        response.on('data', (chunk: Buffer) => {
          discarded += chunk.length;
          if (discarded > MAX_DISCARDED_BODY) request.destroy();
        });
      });
      request.end(payload);
    });
  }

  return {
    send,
    close() {
      closed = true;
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
