// GET /v1/pets and GET /v1/pets/{petId}, answered before Fastify when the whole answer is
// already in memory.
//
// Fastify's request machinery (request and reply objects, router, hook chain, serializer
// lookup) costs more than everything these routes do themselves (issue 5's profile). So the
// commonest case, a valid cached key asking for a cached page or pet with tokens left in its
// bucket, is answered here (in the same event-loop turn) with the same bytes and headers the
// route sends. Every other request, and every error, goes to Fastify unchanged: there is one error
// model and one validation path, and this code only ever answers 200, logged as Fastify's
// onResponse hook logs it.
// test/http/fast-path.test.ts checks that both paths send the same response and log line.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { type CompletedRequest, createRequestLineWriter, writesAt } from '../logger.js';
import { PAGE_LIMIT_DEFAULT, PET_STATUSES, type PetStatus } from '../schemas/index.js';
import type { Services } from '../services/index.js';
import type { PageQuery } from '../services/pets.js';
import type { RateLimiter } from '../services/rate-limit.js';
import { GET_PET_SUNSET_AT, getPetDeprecationHeaders } from './deprecation.js';
import { parseBearer } from './plugins/auth.js';
import type { ResponseRecorder } from './plugins/metrics.js';
import { rateLimitHeaderValues } from './plugins/rate-limit.js';
import type { PetWire } from './routes/pets.js';
import { nextPageLink } from './responses.js';

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
  /**
   * The store keeps no read cache (PostgreSQL): a canonical listPets or getPet is read from it
   * here (one pipelined query) instead of through Fastify, whose machinery costs more than the
   * rest. A pet that is not there is Fastify's to answer (404, with the error model).
   */
  readFromStore?: boolean;
}

const PET_PREFIX = '/v1/pets/';
const LIST_PATH = '/v1/pets';
// Only the canonical spelling of each parameter (what our own Link headers and clients
// send); anything else (percent-encoding, repeats, unknown names, a petId Fastify would
// coerce) is Fastify's to validate or refuse.
const CANONICAL_ID = /^[1-9][0-9]{0,15}$/;
const CANONICAL_LIMIT = /^[1-9][0-9]?$|^100$/;
const STATUSES: ReadonlySet<string> = new Set<PetStatus>(PET_STATUSES);
const CURSOR = /^[A-Za-z0-9_-]{1,512}$/;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A page or a pet as sent: the JSON body, and for a page the Link header if a next page exists. */
interface SentPage {
  body: string;
  link: string | undefined;
}

type Taken = { kind: 'getPet'; id: number } | { kind: 'listPets'; query: PageQuery };

interface Pending {
  req: IncomingMessage;
  res: ServerResponse;
  taken: Taken;
  authorization: string;
  givenRequestId: string | undefined;
  start: number;
}

/** The list query of a canonical `limit`/`status`/`cursor` query string, else undefined. */
function listQuery(search: string): PageQuery | undefined {
  const query: PageQuery = { limit: PAGE_LIMIT_DEFAULT };
  let seen = 0;
  for (const pair of search.split('&')) {
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (name === 'limit' && !(seen & 1) && CANONICAL_LIMIT.test(value)) {
      query.limit = Number(value);
      seen |= 1;
    } else if (name === 'status' && !(seen & 2) && STATUSES.has(value)) {
      query.status = value as PetStatus;
      seen |= 2;
    } else if (name === 'cursor' && !(seen & 4) && CURSOR.test(value)) {
      query.cursor = value;
      seen |= 4;
    } else {
      return undefined;
    }
  }
  return query;
}

/** What a request asks for, when it is one the fast path may answer. */
function take(req: IncomingMessage, now: number): Taken | undefined {
  const url = req.url;
  if (req.method !== 'GET' || url === undefined) return undefined;
  if (url.startsWith(PET_PREFIX)) {
    const idText = url.slice(PET_PREFIX.length);
    if (!CANONICAL_ID.test(idText) || now >= GET_PET_SUNSET_AT) return undefined;
    const id = Number(idText);
    return Number.isSafeInteger(id) ? { kind: 'getPet', id } : undefined;
  }
  if (url === LIST_PATH) return { kind: 'listPets', query: { limit: PAGE_LIMIT_DEFAULT } };
  if (!url.startsWith(`${LIST_PATH}?`)) return undefined;
  const query = listQuery(url.slice(LIST_PATH.length + 1));
  return query && { kind: 'listPets', query };
}

/** The onResponse hook's "request completed" line, with the fields taken as Fastify takes them. */
function logCompleted(write: (request: CompletedRequest) => void, reqId: string, req: IncomingMessage, responseTime: number): void {
  const headers = req.headers;
  write({
    reqId,
    method: req.method,
    url: req.url,
    version: headers['accept-version'],
    host: headers.host ?? headers[':authority'] ?? '',
    remoteAddress: req.socket.remoteAddress,
    remotePort: req.socket.remotePort,
    statusCode: 200,
    responseTime,
  });
}

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
  const { services, rateLimiter: limiter, clock, wire, record, answered, requestId, closing, log, readFromStore = false } = deps;
  const { takeNow } = limiter;
  if (!takeNow) return () => false;
  const rateLimit = rateLimitHeaderValues(limiter);
  const recordPet = record.fixed('GET', '/v1/pets/:petId', 200);
  const recordList = record.fixed('GET', '/v1/pets', 200);
  const deprecation = getPetDeprecationHeaders;
  const writeRequestLine = createRequestLineWriter(log);
  let pending: Pending[] = [];
  let fallbackOf: Handler = () => undefined;

  /**
   * Answers from memory and returns true, or returns false having written nothing, or (on a
   * store without a cache) the account whose page or pet is to be read from the store.
   */
  function answer(item: Pending): boolean | { accountId: string; keyId: string } {
    const { taken, authorization } = item;
    if (closing()) return false;
    const token = parseBearer(authorization);
    const auth = token === undefined ? undefined : services.apiKeys.authenticateCached(token);
    if (!auth) return false;
    if (readFromStore) return auth;
    let body: string | undefined;
    let link: string | undefined;
    if (taken.kind === 'getPet') {
      const pet = services.pets.getCached(auth.accountId, taken.id);
      body = pet && wire.pets.get(pet);
    } else {
      // A bad cursor throws InvalidCursorError: Fastify, asked to answer, throws it again.
      const page = services.pets.listCached(auth.accountId, taken.query);
      const sent = page && wire.pages.get(page);
      body = sent?.body;
      link = sent?.link;
    }
    if (body === undefined) return false;
    return send(item, auth, body, link);
  }

  /** Takes a token and writes the 200 (true), or returns false having written nothing. */
  function send({ req, res, taken, givenRequestId, start }: Pending, auth: { accountId: string; keyId: string }, body: string, link: string | undefined): boolean {
    // A refusal takes no token, so Fastify's hook, asking again, refuses it too (429).
    const decision = takeNow!.call(limiter, auth.keyId);
    if (!decision.allowed) return false;
    const reqId = requestId(givenRequestId);
    // The same headers, in the same order, as the routes and their hooks set them.
    const headers = [
      'x-request-id', reqId,
      'x-content-type-options', 'nosniff',
      'cache-control', 'no-store',
      'ratelimit-policy', rateLimit.policy,
      'ratelimit', rateLimit.of(decision),
    ];
    if (link !== undefined) headers.push('link', link);
    headers.push('content-type', 'application/json; charset=utf-8');
    if (taken.kind === 'getPet') {
      wire.deprecatedCallsOf(auth.accountId).inc();
      headers.push('deprecation', deprecation.deprecation, 'sunset', deprecation.sunset, 'link', deprecation.link);
    }
    headers.push('content-length', String(Buffer.byteLength(body)));
    res.writeHead(200, headers);
    res.end(body);
    const ms = performance.now() - start;
    (taken.kind === 'getPet' ? recordPet : recordList)(ms);
    answered.count++;
    if (writesAt(log, 'info')) logCompleted(writeRequestLine, reqId, req, ms);
    return true;
  }

  /**
   * A page read from the store, then answered like a cached one. Anything unusual (the store
   * failing, a bad cursor, shutdown meanwhile, no token left) goes to Fastify before a token
   * is taken or a byte written, so Fastify answers it with its own checks and error model.
   */
  async function answerFromStore(item: Pending, auth: { accountId: string; keyId: string }, read: Promise<SentPage>): Promise<void> {
    let done = false;
    try {
      const { body, link } = await read;
      if (closing() || item.res.destroyed) return;
      done = send(item, auth, body, link);
    } catch (error) {
      if (item.res.headersSent) {
        log.error({ err: error }, 'fast path failed after answering');
        return;
      }
    } finally {
      if (!done && !item.res.headersSent) fallbackOf(item.req, item.res);
    }
  }

  /**
   * One store read for all the identical requests of one flush, by `key`. All of them arrived
   * before the query is sent, so its answer is as fresh as each one's own would be (a client's
   * committed create is seen by its later read). Each request still takes its own token, and
   * falls back to Fastify on its own if the read fails (a missing pet rejects).
   */
  function shared(reads: Map<string, Promise<SentPage>>, key: string, read: () => Promise<SentPage>): Promise<SentPage> {
    let answer = reads.get(key);
    if (answer === undefined) {
      answer = read();
      reads.set(key, answer);
    }
    return answer;
  }

  // The route's serializer writes a Pet's fields in schema order and nothing else; the store's
  // Pets hold exactly those, in that order, so JSON.stringify writes the same bytes
  // (test/http/fast-path-postgres.test.ts compares the two paths byte for byte).
  const readPage = (reads: Map<string, Promise<SentPage>>, accountId: string, query: PageQuery) =>
    shared(reads, `${accountId}\0${query.limit}\0${query.status ?? ''}\0${query.cursor ?? ''}`, () =>
      services.pets.list(accountId, query).then((page) => ({
        body: JSON.stringify(page.pets),
        link: page.nextCursor ? nextPageLink(LIST_PATH, query.limit, query.status, page.nextCursor) : undefined,
      })),
    );
  const readPet = (reads: Map<string, Promise<SentPage>>, accountId: string, id: number) =>
    shared(reads, `${accountId}\0#${id}`, () => services.pets.get(accountId, id).then((pet) => ({ body: JSON.stringify(pet), link: undefined })));

  function flush(): void {
    const batch = pending;
    pending = [];
    let reads: Map<string, Promise<SentPage>> | undefined;
    // One synchronous run: the store asks its change check once for the whole batch.
    for (const item of batch) {
      let done = false;
      try {
        const answered = answer(item);
        // On a store without a cache, the account to read for comes back.
        if (typeof answered === 'object') {
          reads ??= new Map();
          const { taken } = item;
          const read = taken.kind === 'listPets' ? readPage(reads, answered.accountId, taken.query) : readPet(reads, answered.accountId, taken.id);
          void answerFromStore(item, answered, read);
          continue;
        }
        done = answered === true;
      } catch (error) {
        // Thrown before anything was written (a bad cursor, a store failure): Fastify
        // answers, with the error model and its own try. After the answer was written (the
        // log line failing, say), there is nothing left to answer.
        if (item.res.headersSent) {
          log.error({ err: error }, 'fast path failed after answering');
          continue;
        }
      }
      if (!done) fallbackOf(item.req, item.res);
    }
  }

  return function fastPath(req, res, fallback) {
    const taken = take(req, clock.now());
    if (!taken || closing()) return false;
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
    fallbackOf = fallback;
    if (pending.push({ req, res, taken, authorization, givenRequestId, start: performance.now() }) === 1) setImmediate(flush);
    return true;
  };
}
