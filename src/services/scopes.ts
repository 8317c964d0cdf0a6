// A key's scopes as a bit mask (one bit per scope, in SCOPES order): the per-request check is
// one AND. `…:write` grants its `…:read` too; a full-access key holds every bit.
import { SCOPES, type Scope } from '../schemas/api-keys.js';

export const SCOPE_BIT = Object.fromEntries(SCOPES.map((scope, i) => [scope, 1 << i])) as Record<Scope, number>;
/** Every bit: what a full-access key (scopes absent) is granted. */
export const FULL_ACCESS = (1 << SCOPES.length) - 1;

export const isScope = (value: string): value is Scope => Object.hasOwn(SCOPE_BIT, value);

/** The mask a key with these scopes is granted (null: full access). */
export function grantsOf(scopes: readonly Scope[] | null): number {
  if (scopes === null) return FULL_ACCESS;
  let mask = 0;
  for (const scope of scopes) {
    mask |= SCOPE_BIT[scope];
    if (scope.endsWith(':write')) {
      const read = `${scope.slice(0, -':write'.length)}:read`;
      if (isScope(read)) mask |= SCOPE_BIT[read];
    }
  }
  return mask;
}

/** The scopes in SCOPES order, without repeats. */
export function normalizeScopes(scopes: readonly Scope[]): Scope[] {
  const set = new Set(scopes);
  return SCOPES.filter((scope) => set.has(scope));
}

/**
 * Whether a key holding `held` may make a key with `wanted`: every scope wanted (with what it
 * implies) is granted to the holder. A full-access key only from a full-access key: a restricted
 * key holding every scope of today would otherwise mint one that gains tomorrow's.
 */
export function mayGrant(held: readonly Scope[] | null, wanted: readonly Scope[] | null): boolean {
  if (held === null) return true;
  if (wanted === null) return false;
  return (grantsOf(wanted) & ~grantsOf(held)) === 0;
}

/** The scopes (space-separated, as RFC 6750's scope attribute) of `wanted` that `held` lacks: what the 403 names. Full access: every scope. */
export function missingScopes(held: readonly Scope[] | null, wanted: readonly Scope[] | null): string {
  if (wanted === null || held === null) return SCOPES.join(' ');
  const missing = grantsOf(wanted) & ~grantsOf(held);
  return SCOPES.filter((scope) => (SCOPE_BIT[scope] & missing) !== 0).join(' ');
}
