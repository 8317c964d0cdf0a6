// The ETag of a pet as the server sent it, kept beside the object the client returned instead of
// in a wrapper, so `pets.create`, `get` and `update` keep returning plain Pets.
const tags = new WeakMap<object, string>();

/** Remembers `etag` (when the answer had one) for `value`, and returns `value`. */
export function tagged<T extends object>(value: T, etag: string | null): T {
  if (etag !== null) tags.set(value, etag);
  return value;
}

/**
 * The strong `ETag` the server sent with this pet (from `pets.create`, `pets.get` or
 * `pets.update`), to pass as `ifMatch` so a change applies only if nobody changed the pet since.
 * `undefined` for an object the client did not return from one of those calls (a list item).
 */
export function etagOf(value: object): string | undefined {
  return tags.get(value);
}
