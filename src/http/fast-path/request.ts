// Which requests the fast path may answer: a GET of a pet or of a page, in the canonical
// spelling our own Link headers and clients send. Anything else is Fastify's.
import type { IncomingMessage } from 'node:http';
import { PAGE_LIMIT_DEFAULT, PET_STATUSES, type PetStatus } from '../../schemas/index.js';
import type { PageQuery } from '../../services/pets.js';
import { GET_PET_SUNSET_AT } from '../deprecation.js';

const PET_PREFIX = '/v1/pets/';
export const LIST_PATH = '/v1/pets';
// Only the canonical spelling of each parameter; anything else (percent-encoding, repeats,
// unknown names, a petId Fastify would coerce) is Fastify's to validate or refuse.
const CANONICAL_ID = /^[1-9][0-9]{0,15}$/;
const CANONICAL_LIMIT = /^[1-9][0-9]?$|^100$/;
const STATUSES: ReadonlySet<string> = new Set<PetStatus>(PET_STATUSES);
const CURSOR = /^[A-Za-z0-9_-]{1,512}$/;

export type Taken = { kind: 'getPet'; id: number } | { kind: 'listPets'; query: PageQuery };

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
export function take(req: IncomingMessage, now: number): Taken | undefined {
  const url = req.url;
  if (req.method !== 'GET' || url === undefined) return undefined;
  if (url.startsWith(PET_PREFIX)) {
    const idText = url.slice(PET_PREFIX.length);
    // A conditional GET (If-None-Match, If-Match) is Fastify's: it may answer 304 or 412
    // (src/http/conditional.ts). A query string is too: the id pattern refuses it (400 there).
    const headers = req.headers;
    if (!CANONICAL_ID.test(idText) || now >= GET_PET_SUNSET_AT || headers['if-none-match'] !== undefined || headers['if-match'] !== undefined) return undefined;
    const id = Number(idText);
    return Number.isSafeInteger(id) ? { kind: 'getPet', id } : undefined;
  }
  if (url === LIST_PATH) return { kind: 'listPets', query: { limit: PAGE_LIMIT_DEFAULT } };
  if (!url.startsWith(`${LIST_PATH}?`)) return undefined;
  const query = listQuery(url.slice(LIST_PATH.length + 1));
  return query && { kind: 'listPets', query };
}
