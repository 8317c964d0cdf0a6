// Conditional requests (RFC 9110 §13) on single pets: the ETag header, If-Match (strong
// comparison, for PATCH and DELETE) and If-None-Match (weak comparison, for GET).
import { InvalidRequestError } from '../errors.js';
import type { IfMatch } from '../services/pet-changes.js';

// An entity-tag: optional W/, then a quoted string of visible characters other than `"`.
const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

/** The entity-tags of an If-Match or If-None-Match value (`*`, or a comma-separated list). */
function entityTags(header: string, name: string): IfMatch {
  const value = header.trim();
  if (value === '*') return '*';
  const tags = value.split(',').map((tag) => tag.trim()).filter((tag) => tag !== '');
  if (tags.length === 0 || !tags.every((tag) => ENTITY_TAG.test(tag))) {
    throw new InvalidRequestError(`The ${name} header is not "*" or a list of entity-tags ("…" as sent in ETag). Send the ETag value of your last read.`);
  }
  return tags;
}

/** The If-Match condition, if the header was sent. Weak tags never match (strong comparison). */
export function ifMatchOf(header: string | undefined): IfMatch | undefined {
  return header === undefined ? undefined : entityTags(header, 'If-Match');
}

/**
 * True when If-None-Match names `etag` (weak comparison: W/ is ignored on both) or is `*`. A
 * malformed value is ignored (the full answer is always a safe reply to a GET); a malformed
 * If-Match is refused instead, since ignoring it would let an unsafe change through.
 */
export function noneMatchFails(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  let tags: IfMatch;
  try {
    tags = entityTags(header, 'If-None-Match');
  } catch {
    return false;
  }
  if (tags === '*') return true;
  const opaque = etag.replace(/^W\//, '');
  return tags.some((tag) => tag.replace(/^W\//, '') === opaque);
}

export const etagHeader = {
  ETag: {
    type: 'string' as const,
    description: 'Strong entity-tag of the pet as sent: it changes whenever the pet changes. Send it in `If-Match` to change the pet only if nobody else has.',
  },
};

export const ifMatchDescription = (what: string) =>
  `Only ${what} if its current ETag is one of these (strong comparison), or \`*\` (any existing pet); otherwise 412 \`precondition_failed\` and nothing changes.`;
