// The ETag of a pet or category as the server sent it, kept beside the object the client returned instead of
// in a wrapper, so `pets.create`, `get` and `update` keep returning plain Pets.
const tags = new WeakMap<object, string>();

/** Remembers `etag` (when the answer had one) for `value`, and returns `value`. */
export function tagged<T extends object>(value: T, etag: string | null): T {
  if (etag !== null) tags.set(value, etag);
  return value;
}

/**
 * The strong `ETag` the server sent with this pet (from `pets.create`, `pets.get` or
 * `pets.update`) or category (`categories.put`, `categories.get`), to pass as `ifMatch` so a
 * change applies only if nobody changed it since. `undefined` for an object the client did not
 * return from one of those calls (a list item).
 */
export function etagOf(value: object): string | undefined {
  return tags.get(value);
}

/**
 * The headers of a conditional change; such a call is not repeated after a network error (a repeat of a change that applied would fail with 412).
 * `ifMatch: undefined` given on purpose (`etagOf` of a list item, say) throws: sent without it, the change would apply unconditionally.
 */
export function conditional(options: { ifMatch?: string | undefined; ifNoneMatch?: string | undefined }) {
  for (const name of ['ifMatch', 'ifNoneMatch'] as const) {
    if (name in options && options[name] === undefined) {
      throw new TypeError(`${name} is undefined: no ETag is known for this object (etagOf knows the objects create, get, update and put returned, not list items). Get the object first, or leave ${name} out to change it unconditionally.`);
    }
  }
  const { ifMatch, ifNoneMatch } = options;
  if (ifMatch === undefined && ifNoneMatch === undefined) return {};
  const headers: Record<string, string> = {};
  if (ifMatch !== undefined) headers['if-match'] = ifMatch;
  if (ifNoneMatch !== undefined) headers['if-none-match'] = ifNoneMatch;
  return { headers, repeatable: false };
}
