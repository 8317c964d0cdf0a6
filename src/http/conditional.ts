// Conditional requests (RFC 9110 §13) for every resource with an ETag (pets, categories), in
// one place: parsing If-Match and If-None-Match, evaluating them in the RFC's order (§13.2.2:
// If-Match first, compared strongly; then If-None-Match, compared weakly), and how they are
// documented. A read (GET, HEAD) is evaluated here: 304 when If-None-Match matches, 412 when
// If-Match does not. A change (PATCH, PUT, DELETE) gets a Precondition for its service to ask
// against the resource as locked in its transaction: 412 when either condition is false.
// Preconditions count only where the answer would otherwise be a success (§13.2.1): a missing
// pet is 404 whatever the headers say.
import Type from 'typebox';
import { InvalidRequestError, PreconditionFailedError } from '../errors.js';
import type { Precondition } from '../services/preconditions.js';
import { errorResponse, type HeaderSpec, rateLimitHeaders } from './responses.js';

/** `*` (any current representation) or the entity-tags listed, as sent (W/ kept). */
type EntityTags = '*' | readonly string[];

/** The two headers, as a request's (validated) headers hold them. */
export interface ConditionalHeaders {
  'if-match'?: string | undefined;
  'if-none-match'?: string | undefined;
}

interface Conditions {
  ifMatch: EntityTags | undefined;
  ifNoneMatch: EntityTags | undefined;
}

// One element of an entity-tag list: optional W/, a quoted string of visible characters other
// than `"` (a comma included), then a comma or the end. Empty elements are allowed (RFC 9110 §5.6.1).
const LIST_ELEMENT = /[ \t]*((?:W\/)?"[\x21\x23-\x7e\x80-\xff]*")?[ \t]*(,|$)/y;

/** The entity-tags of an If-Match or If-None-Match value (`*`, or a comma-separated list). */
function entityTags(header: string, name: string): EntityTags {
  const value = header.trim();
  if (value === '*') return '*';
  const malformed = () =>
    new InvalidRequestError(`The ${name} header is not "*" or a list of entity-tags ("…" as sent in ETag). Send the ETag value of your last read.`);
  const tags: string[] = [];
  let at = 0;
  while (at < value.length) {
    LIST_ELEMENT.lastIndex = at;
    const element = LIST_ELEMENT.exec(value);
    if (element === null) throw malformed();
    if (element[1] !== undefined) tags.push(element[1]);
    at = element[2] === '' ? value.length : LIST_ELEMENT.lastIndex;
  }
  if (tags.length === 0) throw malformed();
  return tags;
}

/**
 * The conditions sent, or undefined for none. A malformed If-Match is refused (400): ignoring it
 * would let the request through unconditionally. A malformed If-None-Match is refused on a
 * change for the same reason, and ignored on a read, where the full answer is always safe.
 */
function conditionsOf(headers: ConditionalHeaders, read: boolean): Conditions | undefined {
  const ifMatch = headers['if-match'];
  const ifNoneMatch = headers['if-none-match'];
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  let noneMatch: EntityTags | undefined;
  try {
    noneMatch = ifNoneMatch === undefined ? undefined : entityTags(ifNoneMatch, 'If-None-Match');
  } catch (error) {
    if (!read) throw error;
  }
  return { ifMatch: ifMatch === undefined ? undefined : entityTags(ifMatch, 'If-Match'), ifNoneMatch: noneMatch };
}

const opaque = (tag: string) => tag.replace(/^W\//, '');

/**
 * Which condition is false for the current representation's tag (undefined: there is none), in
 * §13.2.2's order, or undefined when both hold. If-Match: true for `*` when a representation
 * exists, or when a listed tag equals the current one (a W/ tag never does: strong comparison).
 * If-None-Match: false for `*` when one exists, or when a listed tag names it, W/ or not (weak).
 */
function failed({ ifMatch, ifNoneMatch }: Conditions, etag: string | undefined): 'if-match' | 'if-none-match' | undefined {
  if (ifMatch !== undefined && (etag === undefined || (ifMatch !== '*' && !ifMatch.includes(etag)))) return 'if-match';
  if (ifNoneMatch === undefined || etag === undefined) return undefined;
  return ifNoneMatch === '*' || ifNoneMatch.some((tag) => opaque(tag) === opaque(etag)) ? 'if-none-match' : undefined;
}

/**
 * The precondition of a change (PATCH, PUT, DELETE) of `what` ("Pet 5"), for its service to ask
 * against the resource as locked; undefined when neither header was sent. Throws 400 for a
 * malformed header.
 */
export function changePrecondition(headers: ConditionalHeaders, what: string): Precondition | undefined {
  const conditions = conditionsOf(headers, false);
  if (conditions === undefined) return undefined;
  return (etag) => {
    const failure = failed(conditions, etag);
    if (failure === undefined) return undefined;
    return new PreconditionFailedError(what, failure === 'if-none-match' ? 'exists' : etag === undefined ? 'missing' : 'changed');
  };
}

/**
 * Evaluates a read's (GET, HEAD) conditions against the tag of `what` as it is: true when the
 * answer is 304 Not Modified (If-None-Match names it, or is `*`); throws 412 when If-Match does
 * not name it, and 400 when If-Match is malformed.
 */
export function notModified(headers: ConditionalHeaders, etag: string, what: string): boolean {
  const conditions = conditionsOf(headers, true);
  const failure = conditions && failed(conditions, etag);
  if (failure === 'if-match') throw new PreconditionFailedError(what, 'changed');
  return failure === 'if-none-match';
}

/** The ETag response header of `resource` ("pet"), saying what its tag covers. */
export const etagHeaderOf = (resource: string, covers = ''): HeaderSpec => ({
  ETag: {
    type: 'string',
    description: `Strong entity-tag of the ${resource} as sent: it changes whenever the ${resource} changes${covers}. Send it in \`If-Match\` to change the ${resource} only if nobody else has.`,
  },
});

export const etagHeader = etagHeaderOf('pet');

const optional = (description: string) => Type.Optional(Type.String({ description }));

/** The request headers of a conditional read of `resource` (GET). */
export const readConditionHeaders = (resource: string) =>
  Type.Object({
    'if-match': optional(`Answer only if the ${resource}'s current ETag is one of these (strong comparison), or \`*\`; otherwise 412 \`precondition_failed\`.`),
    'if-none-match': optional(`ETags from earlier reads (or \`*\`): 304 without a body while the ${resource}'s ETag is one of them (weak comparison).`),
  });

/**
 * The request headers of a conditional change: `action` ("change the pet") happens only if
 * If-Match holds, then only if If-None-Match does (with `*`: only if there is no `resource` yet).
 */
export const changeConditionHeaders = (action: string, resource: string) =>
  Type.Object({
    'if-match': optional(
      `Only ${action} if its current ETag is one of these (strong comparison), or \`*\` (any existing ${resource}); otherwise 412 \`precondition_failed\` and nothing changes.`,
    ),
    'if-none-match': optional(
      `Only ${action} if its current ETag is none of these (weak comparison); \`*\`: only if no such ${resource} exists yet. Otherwise 412 \`precondition_failed\` and nothing changes.`,
    ),
  });

interface FailedOptions {
  /** A read (GET): only If-Match can fail it. */
  read?: boolean;
  /** The operation may create the resource: If-Match then fails for a missing one too. */
  creates?: boolean;
  headers?: HeaderSpec;
}

/** The 412 of a conditional operation on `resource`. */
export function preconditionFailedResponse(resource: string, { read = false, creates = false, headers = rateLimitHeaders }: FailedOptions = {}) {
  const stale = `\`If-Match\` does not name the ${resource}'s current ETag (it changed since you read it${creates ? ', or does not exist' : ''})`;
  return errorResponse(
    read
      ? `${stale} (\`precondition_failed\`). Read it again without \`If-Match\`, or with its new ETag.`
      : `${stale}, or \`If-None-Match\` names it or is \`*\` while it exists (\`precondition_failed\`): nothing changed. Read it again and retry.`,
    headers,
  );
}
