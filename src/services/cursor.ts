// Opaque keyset cursors: version, status filter and last id, authenticated with an
// HMAC bound to the account and the collection (pets, orders). Tampering, truncation, reuse
// across accounts, collections or with a different filter are all detected and rejected.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidCursorError } from '../errors.js';

// Version 1: status and last id. Version 2 adds a category filter (8 bytes), so a cursor is
// bound to both filters; cursors without one stay version 1, as issued before.
const VERSION = 1;
const VERSION_CATEGORY = 2;
const PAYLOAD_LENGTH = 1 + 1 + 8;
const CATEGORY_PAYLOAD_LENGTH = PAYLOAD_LENGTH + 8;
const MAC_LENGTH = 16;

export interface CursorPosition<S extends string> {
  afterId: number;
  status: S | undefined;
  /** The category filter the page was asked with (pets), if any. */
  categoryId?: number | undefined;
}

/** Verified (and issued) cursors remembered, so paging clients re-sending one skip the HMAC. */
const VERIFIED_MAX = 4096;

/**
 * `statuses`: the collection's status filter values, in a fixed order (the cursor stores an
 * index). `collection`: undefined for pets, whose cursors predate collections and keep their
 * MAC; any other collection signs with its own key, so a pets cursor is refused for orders.
 */
export function createCursorCodec<S extends string>(secret: string, statuses: readonly S[], collection?: string) {
  const key = collection === undefined ? secret : createHmac('sha256', secret).update(`cursor:${collection}`).digest();
  const mac = (accountId: string, payload: Buffer) =>
    createHmac('sha256', key).update(accountId).update('\0').update(payload).digest().subarray(0, MAC_LENGTH);
  // A cursor never expires and the secret never changes while we run, so one that verified
  // for (account, status) always will: remembering it is exact. Only successes are kept.
  const verified = new Map<string, number>();
  // Likewise a cursor is a pure function of (account, status, position): the same page asked
  // again (a first page, on PostgreSQL where pages are not cached) signs nothing new.
  const encoded = new Map<string, string>();

  return {
    encode(accountId: string, position: CursorPosition<S>): string {
      const memoKey = `${accountId}\0${position.status ?? ''}\0${position.categoryId ?? ''}\0${position.afterId}`;
      const known = encoded.get(memoKey);
      if (known !== undefined) return known;
      const category = position.categoryId;
      const payload = Buffer.alloc(category === undefined ? PAYLOAD_LENGTH : CATEGORY_PAYLOAD_LENGTH);
      payload.writeUInt8(category === undefined ? VERSION : VERSION_CATEGORY, 0);
      payload.writeUInt8(position.status ? statuses.indexOf(position.status) + 1 : 0, 1);
      payload.writeBigUInt64BE(BigInt(position.afterId), 2);
      if (category !== undefined) payload.writeBigUInt64BE(BigInt(category), PAYLOAD_LENGTH);
      const cursor = Buffer.concat([payload, mac(accountId, payload)]).toString('base64url');
      if (encoded.size >= VERIFIED_MAX) encoded.delete(encoded.keys().next().value!);
      encoded.set(memoKey, cursor);
      return cursor;
    },

    /** The position to continue from; throws InvalidCursorError unless issued to this account for this filter. */
    decode(accountId: string, cursor: string, status: S | undefined, categoryId?: number): number {
      const memoKey = `${accountId}\0${status ?? ''}\0${categoryId ?? ''}\0${cursor}`;
      const known = verified.get(memoKey);
      if (known !== undefined) return known;
      const afterId = verify(accountId, cursor, status, categoryId);
      if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
      verified.set(memoKey, afterId);
      return afterId;
    },
  };

  function verify(accountId: string, cursor: string, status: S | undefined, categoryId: number | undefined): number {
    const raw = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
    const version = raw.length > 0 ? raw.readUInt8(0) : 0;
    const length = version === VERSION ? PAYLOAD_LENGTH : version === VERSION_CATEGORY ? CATEGORY_PAYLOAD_LENGTH : -1;
    // The re-encoding check refuses other spellings of the same bytes (spare base64 bits).
    if (raw.length !== length + MAC_LENGTH || raw.toString('base64url') !== cursor) {
      throw new InvalidCursorError('The cursor is malformed. Use the cursor from the Link header exactly as given, or omit it to start over.');
    }
    const payload = raw.subarray(0, length);
    if (!timingSafeEqual(raw.subarray(length), mac(accountId, payload))) {
      throw new InvalidCursorError('The cursor is not valid for this API key and this list (it was issued for another account, collection or webhook endpoint). Use the cursor from the Link header exactly as given, or omit it to start over.');
    }
    const statusIndex = payload.readUInt8(1);
    const cursorStatus = statusIndex === 0 ? undefined : statuses[statusIndex - 1];
    if (cursorStatus !== status) {
      throw new InvalidCursorError(
        `The cursor was issued for ${cursorStatus ? `status=${cursorStatus}` : 'no status filter'}; keep the same status filter while paging, or omit the cursor to start over.`,
      );
    }
    const cursorCategory = version === VERSION_CATEGORY ? Number(payload.readBigUInt64BE(PAYLOAD_LENGTH)) : undefined;
    if (cursorCategory !== categoryId) {
      throw new InvalidCursorError(
        `The cursor was issued for ${cursorCategory === undefined ? 'no categoryId filter' : `categoryId=${cursorCategory}`}; keep the same categoryId filter while paging, or omit the cursor to start over.`,
      );
    }
    const afterId = payload.readBigUInt64BE(2);
    if (afterId > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidCursorError('The cursor is malformed.');
    return Number(afterId);
  }
}

export type CursorCodec<S extends string> = ReturnType<typeof createCursorCodec<S>>;

export interface PageRequest<S extends string> {
  limit: number;
  status?: S | undefined;
  categoryId?: number | undefined;
  cursor?: string | undefined;
}

/** Where a page starts (after the cursor's id) and how many rows to fetch: one extra tells whether a next page exists, without a COUNT. */
export function pageBounds<S extends string>(codec: CursorCodec<S>, accountId: string, page: PageRequest<S>): { afterId: number; limit: number } {
  return { afterId: page.cursor === undefined ? 0 : codec.decode(accountId, page.cursor, page.status, page.categoryId), limit: page.limit + 1 };
}

/** The page's items and the cursor after them, from the rows pageBounds asked for; `position` is an item's keyset value (its id, by default). */
export function pageOf<T, S extends string>(
  codec: CursorCodec<S>,
  accountId: string,
  page: PageRequest<S>,
  rows: readonly T[],
  position: (item: T) => number = (item) => (item as { id: number }).id,
): { items: T[]; nextCursor: string | undefined } {
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1];
  const nextCursor = rows.length > page.limit && last !== undefined ? codec.encode(accountId, { afterId: position(last), status: page.status, categoryId: page.categoryId }) : undefined;
  return { items, nextCursor };
}
