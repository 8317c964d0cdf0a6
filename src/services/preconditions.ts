// What a conditional change (RFC 9110 §13) means to a service: a resource's strong entity-tag,
// and the precondition a change is made under, asked against the resource as locked in the
// change's transaction. The HTTP layer builds preconditions from If-Match and If-None-Match
// (src/http/conditional.ts: the RFC's rules and their order); services only ask them.
import { hash } from 'node:crypto';
import type { PreconditionFailedError } from '../errors.js';

/**
 * A request's precondition: given the resource's current entity-tag (undefined when it does not
 * exist), the refusal (412) when the change must not apply, else undefined.
 */
export type Precondition = (currentEtag: string | undefined) => PreconditionFailedError | undefined;

/** A strong entity-tag, quoted: a hash of the fields a representation shows, so equal representations have equal tags. */
export function strongEtag(fields: readonly unknown[]): string {
  return `"${hash('sha256', JSON.stringify(fields), 'base64url').slice(0, 27)}"`;
}
