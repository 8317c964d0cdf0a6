// GET /v1/pets and GET /v1/pets/{petId}, answered before Fastify when the whole answer is
// already in memory.
//
// Fastify's request machinery (request and reply objects, router, hook chain, serializer
// lookup) costs more than everything these routes do themselves. So the commonest case, a
// valid cached key asking for a cached page or pet with tokens left in its bucket, is answered
// here (in the same event-loop turn) with the same bytes and headers the route sends. Every
// other request, and every error, goes to Fastify unchanged: there is one error model and one
// validation path, and this code only ever answers 200, logged as Fastify's onResponse hook
// logs it. test/http/fast-path.test.ts checks that both paths send the same response and log line.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { type CompletedRequest, createRequestLineWriter, writesAt } from '../logger.js';
import type { Pet } from '../schemas/index.js';
import type { Services } from '../services/index.js';
import type { PageQuery } from '../services/pets.js';
import { petEtag } from '../services/pet-changes.js';
import type { RateLimiter } from '../services/rate-limit.js';
import { getPetDeprecationHeaders as deprecation } from './deprecation.js';
import { LIST_PATH, type Taken, take } from './fast-path/request.js';
import { parseBearer } from './plugins/auth.js';
import type { ResponseRecorder } from './plugins/metrics.js';
import { rateLimitHeaderValues } from './plugins/rate-limit.js';
import { SCOPE_BIT } from '../services/scopes.js';
import type { PetWire } from './routes/pets.js';
import { nextPageLink } from './responses.js';
import { hooks as tracingHooks, type ServerSpan, serverSpanOf } from '../tracing/switch.js';

export interface FastPathDeps {
  services: Services;
  rateLimiter: RateLimiter;
  clock: Clock;
  wire: PetWire;
  record: ResponseRecorder;
  /** Counts the requests this path answered (petstore_fast_path_responses_total). */
  answered: { count: number };
  /** The request id to use given the client's X-Request-Id (or its absence). */
  requestId: (given: string | undefined) => string;
  /** True while shutting down: Fastify's hooks refuse new requests and close connections. */
  closing: () => boolean;
  /** Fastify's logger: its serializers shape the per-request line like the onResponse hook's. */
  log: FastifyBaseLogger;
  /** The client's address as request.ip has it (X-Forwarded-For's behind a trusted proxy). */
  clientAddress: (req: IncomingMessage) => string | undefined;
  /**
   * The store keeps no read cache (PostgreSQL): a canonical listPets or getPet is read from it
   * here (one pipelined query) instead of through Fastify, whose machinery costs more than the
   * rest. A pet that is not there is Fastify's to answer (404, with the error model).
   */
  readFromStore?: boolean;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A page or a pet as sent: the JSON body, and for a page the Link header if a next page exists. */
interface SentPage {
  body: string;
  link: string | undefined;
  /** A pet's ETag (getPet). */
  etag?: string | undefined;
}

interface Pending {
  req: IncomingMessage;
  res: ServerResponse;
  taken: Taken;
  authorization: string;
  givenRequestId: string | undefined;
  start: number;
  /** Fastify's handler, for a request the fast path hands back (under the request's own trace context when sampled). */
  fallback: Handler;
}

/** The onResponse hook's "request completed" line, with the fields taken as Fastify takes them. */
function logCompleted(
  write: (request: CompletedRequest) => void,
  remoteAddress: string | undefined,
  reqId: string,
  req: IncomingMessage,
  responseTime: number,
  trace?: ServerSpan,
): void {
  const headers = req.headers;
  write({
    reqId,
    method: req.method,
    url: req.url,
    version: headers['accept-version'],
    host: headers.host ?? headers[':authority'] ?? '',
    remoteAddress,
    remotePort: req.socket.remotePort,
    statusCode: 200,
    responseTime,
    trace: trace?.ids,
  });
}

type Auth = { accountId: string; keyId: string };
/** Both routes need pets:read: a key without it is Fastify's to refuse (403, the error model). */
const PETS_READ = SCOPE_BIT['pets:read'];
type TakeNow = NonNullable<RateLimiter['takeNow']>;
/** This flush's store reads, by what they read: identical requests share one. */
type Reads = Map<string, Promise<SentPage>>;

/**
 * Returns a handler that takes the request and returns true, or returns false having done
 * nothing. A request it takes is answered in this event-loop turn's check phase, from
 * memory, or handed to `fallback` (Fastify) there.
 *
 * Why wait for the check phase: the caches must reflect every commit made before a request
 * arrived, so "has another process committed?" (one pread, see change-check.ts) must be
 * asked after the request was read. Asked once after every socket read of this turn, it
 * covers all of them, which is exact, and costs one pread per turn instead of per request.
 */
export function createFastPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse, fallback: Handler) => boolean {
  const { takeNow } = deps.rateLimiter;
  if (!takeNow) return () => false;
  return new FastPath(deps, takeNow).handle;
}

/** Remembers `read` under `key` and returns it. */
function remember(reads: Reads, key: string, read: Promise<SentPage>): Promise<SentPage> {
  reads.set(key, read);
  return read;
}

// The route's serializer writes a Pet's fields in schema order and nothing else; the store's
// Pets hold exactly those, in that order, so JSON.stringify writes the same bytes (for a page
// too; test/http/fast-path-postgres.test.ts compares the two paths byte for byte).
function sentPet(pet: Pet): SentPage {
  return { body: JSON.stringify(pet), link: undefined, etag: petEtag(pet) };
}

class FastPath {
  private readonly rateLimit: ReturnType<typeof rateLimitHeaderValues>;
  private readonly recordPet: (ms: number, traceId?: string) => void;
  private readonly recordList: (ms: number, traceId?: string) => void;
  private readonly writeRequestLine: (request: CompletedRequest) => void;
  private pending: Pending[] = [];
  private readonly traced = tracingHooks !== undefined;

  constructor(
    private readonly deps: FastPathDeps,
    private readonly takeNow: TakeNow,
  ) {
    this.rateLimit = rateLimitHeaderValues(deps.rateLimiter);
    this.recordPet = deps.record.fixed('GET', '/v1/pets/:petId', 200);
    this.recordList = deps.record.fixed('GET', '/v1/pets', 200);
    this.writeRequestLine = createRequestLineWriter(deps.log);
  }

  /** The request handler (an arrow, so it is handed out once, already bound). */
  readonly handle = (req: IncomingMessage, res: ServerResponse, fallback: Handler): boolean => {
    const taken = take(req, this.deps.clock.now());
    if (!taken || this.deps.closing()) return false;
    // The raw header list, not req.headers, which Node builds on first use. A body on a GET
    // is Fastify's to drain; a repeated header is Fastify's to interpret.
    let authorization: string | undefined;
    let givenRequestId: string | undefined;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      if (name === 'authorization') {
        if (authorization !== undefined) return false;
        authorization = raw[i + 1];
      } else if (name === 'x-request-id') {
        if (givenRequestId !== undefined) return false;
        givenRequestId = raw[i + 1];
      } else if (name === 'content-length' || name === 'transfer-encoding') {
        return false;
      }
    }
    if (authorization === undefined) return false;
    if (this.pending.push({ req, res, taken, authorization, givenRequestId, start: performance.now(), fallback }) === 1) setImmediate(this.flush);
    return true;
  };

  /** Answers or hands to Fastify every request taken this turn (an arrow: bound once). */
  private readonly flush = (): void => {
    const batch = this.pending;
    this.pending = [];
    let reads: Reads | undefined;
    // One synchronous run: the store asks its change check once for the whole batch.
    for (const item of batch) {
      let done = false;
      try {
        const answered = this.answer(item);
        // On a store without a cache, the account to read for comes back.
        if (typeof answered === 'object') {
          reads ??= new Map();
          void this.answerFromStore(item, answered, this.readFor(reads, item, answered.accountId));
          continue;
        }
        done = answered;
      } catch (error) {
        // Thrown before anything was written (a bad cursor, a store failure): Fastify
        // answers, with the error model and its own try. After the answer was written (the
        // log line failing, say), there is nothing left to answer.
        if (item.res.headersSent) {
          this.deps.log.error({ err: error }, 'fast path failed after answering');
          continue;
        }
      }
      if (!done) item.fallback(item.req, item.res);
    }
  };

  /**
   * Answers from memory and returns true, or returns false having written nothing, or (on a
   * store without a cache) the account whose page or pet is to be read from the store.
   */
  private answer(item: Pending): boolean | Auth {
    const { taken, authorization } = item;
    const { services, closing, wire } = this.deps;
    if (closing()) return false;
    const token = parseBearer(authorization);
    // Expired or revoked keys are not answered from the cache (authenticateCached): Fastify says why.
    const auth = token === undefined ? undefined : services.apiKeys.authenticateCached(token);
    if (!auth || (auth.grants & PETS_READ) === 0) return false;
    if (this.deps.readFromStore) return auth;
    let body: string | undefined;
    let link: string | undefined;
    let etag: string | undefined;
    if (taken.kind === 'getPet') {
      const pet = services.pets.getCached(auth.accountId, taken.id);
      body = pet && wire.pets.get(pet);
      etag = pet && petEtag(pet);
    } else {
      // A bad cursor throws InvalidCursorError: Fastify, asked to answer, throws it again.
      const page = services.pets.listCached(auth.accountId, taken.query);
      const sent = page && wire.pages.get(page);
      body = sent?.body;
      link = sent?.link;
    }
    if (body === undefined) return false;
    return this.send(item, auth, body, link, etag);
  }

  /** Takes a token and writes the 200 (true), or returns false having written nothing. */
  private send({ req, res, taken, givenRequestId, start }: Pending, auth: Auth, body: string, link: string | undefined, etag?: string): boolean {
    const { rateLimiter, wire, log } = this.deps;
    // A refusal takes no token, so Fastify's hook, asking again, refuses it too (429).
    const decision = this.takeNow.call(rateLimiter, auth.keyId);
    if (!decision.allowed) return false;
    const reqId = this.deps.requestId(givenRequestId);
    // The same headers, in the same order, as the routes and their hooks set them.
    const headers = [
      'x-request-id', reqId,
      'x-content-type-options', 'nosniff',
      'cache-control', 'no-store',
      'ratelimit-policy', this.rateLimit.policy,
      'ratelimit', this.rateLimit.of(decision),
    ];
    if (link !== undefined) headers.push('link', link);
    if (etag !== undefined) headers.push('etag', etag);
    headers.push('content-type', 'application/json; charset=utf-8');
    if (taken.kind === 'getPet') {
      wire.deprecatedCallsOf(auth.accountId).inc();
      headers.push('deprecation', deprecation.deprecation, 'sunset', deprecation.sunset, 'link', deprecation.link);
    }
    headers.push('content-length', String(Buffer.byteLength(body)));
    // Read before the answer: once the connection closes, its address is gone.
    const logging = writesAt(log, 'info');
    const address = logging ? this.deps.clientAddress(req) : undefined;
    // Tracing on: the request's server span (started where it entered) learns what Fastify's would.
    const span = this.traced ? serverSpanOf(req) : undefined;
    if (span) {
      span.setRoute(taken.kind === 'getPet' ? '/v1/pets/:petId' : '/v1/pets');
      span.setAccount(auth.accountId);
    }
    res.writeHead(200, headers);
    res.end(body);
    const ms = performance.now() - start;
    (taken.kind === 'getPet' ? this.recordPet : this.recordList)(ms, span?.sampled ? span.ids.trace_id : undefined);
    this.deps.answered.count++;
    if (logging) logCompleted(this.writeRequestLine, address, reqId, req, ms, span);
    return true;
  }

  /**
   * A page read from the store, then answered like a cached one. Anything unusual (the store
   * failing, a bad cursor, shutdown meanwhile, no token left) goes to Fastify before a token
   * is taken or a byte written, so Fastify answers it with its own checks and error model.
   */
  private async answerFromStore(item: Pending, auth: Auth, read: Promise<SentPage>): Promise<void> {
    let done = false;
    try {
      const { body, link, etag } = await read;
      if (this.deps.closing() || item.res.destroyed) return;
      done = this.send(item, auth, body, link, etag);
    } catch (error) {
      if (item.res.headersSent) {
        this.deps.log.error({ err: error }, 'fast path failed after answering');
        return;
      }
    } finally {
      if (!done && !item.res.headersSent) item.fallback(item.req, item.res);
    }
  }

  /** The store read `item` needs, started under its own trace context when sampled (the flush runs in none). */
  private readFor(reads: Reads, item: Pending, accountId: string): Promise<SentPage> {
    const { taken } = item;
    const read = () => (taken.kind === 'listPets' ? this.readPage(reads, accountId, taken.query) : this.readPet(reads, accountId, taken.id));
    const span = this.traced ? serverSpanOf(item.req) : undefined;
    return span ? span.run(read) : read();
  }

  /**
   * One store read for all the identical requests of one flush. All of them arrived before the
   * query is sent, so its answer is as fresh as each one's own would be (a client's committed
   * create is seen by its later read). Each request still takes its own token, and falls back
   * to Fastify on its own if the read fails (a missing pet rejects).
   */
  private readPage(reads: Reads, accountId: string, query: PageQuery): Promise<SentPage> {
    const key = `${accountId}\0${query.limit}\0${query.status ?? ''}\0${query.cursor ?? ''}`;
    const read = reads.get(key);
    if (read !== undefined) return read;
    const sent = this.deps.services.pets.list(accountId, query).then((page) => ({
      body: JSON.stringify(page.pets),
      link: page.nextCursor ? nextPageLink(LIST_PATH, query.limit, query.status, page.nextCursor) : undefined,
    }));
    return remember(reads, key, sent);
  }

  /** One store read for all the identical requests of one flush, as readPage. */
  private readPet(reads: Reads, accountId: string, id: number): Promise<SentPage> {
    const key = `${accountId}\0#${id}`;
    return reads.get(key) ?? remember(reads, key, this.deps.services.pets.get(accountId, id).then(sentPet));
  }
}
