// In-memory cache of SQLite reads (pages, single pets, inventory counters), exact rather than short-lived:
// - a commit by this connection (group commit, idempotent create) invalidates the pages of
//   the accounts it wrote to (and their counters) before any caller hears back;
// - a commit by any other connection or process changes PRAGMA data_version, and the next
//   read after that finds the whole cache cleared.
// - a pet changed or deleted by this connection (a PATCH, a DELETE, an order moving its
//   status) drops that pet and the account's pages, before the caller hears back.
// Nothing else changes a pet, so a cached pet stays right until then.
// Cached values are frozen and shared: callers may memoize what they derive from them
// (the next-page cursor, the serialized JSON) by identity.
import type { Pet } from '../../schemas/index.js';
import type { Inventory } from '../pets.js';

export interface ReadCacheLimits {
  /** Most pages kept (a page holds up to 100 pets, plus one lookahead). */
  pages: number;
  /** Most single pets kept. */
  pets: number;
}

export const DEFAULT_READ_CACHE_LIMITS: ReadCacheLimits = { pages: 256, pets: 10_000 };

/** A page's filters. */
export interface PageFilter {
  status?: string | undefined;
  categoryId?: number | undefined;
}

interface CachedPage {
  rows: readonly Pet[];
  /** The account's write generation when the page was read. */
  generation: number;
}

/** Map with a size bound: the oldest insertion goes first (cheaper than LRU, enough here). */
function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (map.size >= max && !map.has(key)) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

export function freezePet(pet: Pet): Pet {
  return Object.freeze(pet);
}

export function createReadCache(limits: ReadCacheLimits = DEFAULT_READ_CACHE_LIMITS) {
  const pages = new Map<string, CachedPage>();
  const pets = new Map<string, Pet>();
  // Generations are drawn from one counter that only grows, and an account with no entry is at
  // the last clear's: a value read before any bump or clear never equals one read after it.
  let counter = 0;
  let cleared = 0;
  /** The account's last local change (a commit that added, changed or deleted its pets). */
  const generations = new Map<string, number>();
  const current = (accountId: string) => generations.get(accountId) ?? cleared;
  /** The account's counters, valid while its generation is the one they were read at. */
  const inventories = new Map<string, { counts: Inventory; generation: number }>();

  const pageKey = (accountId: string, filter: PageFilter, afterId: number, limit: number) =>
    `${accountId}\u0000${filter.status ?? ''}\u0000${filter.categoryId ?? ''}\u0000${afterId}\u0000${limit}`;
  const petKey = (accountId: string, id: number) => `${accountId}\u0000${id}`;

  return {
    /** Everything may be stale: another connection committed. */
    clear(): void {
      pages.clear();
      pets.clear();
      generations.clear();
      inventories.clear();
      cleared = ++counter;
    },

    /** This connection committed new pets for the account: its pages may now be short. */
    wrote(accountId: string): void {
      generations.set(accountId, ++counter);
    },

    /** This connection changed or deleted one of the account's pets: drop it and the account's pages. */
    petChanged(accountId: string, id: number): void {
      pets.delete(petKey(accountId, id));
      generations.set(accountId, ++counter);
    },

    generation: current,

    getPage(accountId: string, filter: PageFilter, afterId: number, limit: number): readonly Pet[] | undefined {
      const entry = pages.get(pageKey(accountId, filter, afterId, limit));
      return entry && entry.generation === current(accountId) ? entry.rows : undefined;
    },

    /** `generation` must be read before the query ran, so a commit in between leaves the entry stale. */
    setPage(accountId: string, filter: PageFilter, afterId: number, limit: number, rows: Pet[], generation: number): readonly Pet[] {
      for (const pet of rows) freezePet(pet);
      const frozen = Object.freeze(rows);
      setBounded(pages, pageKey(accountId, filter, afterId, limit), { rows: frozen, generation }, limits.pages);
      return frozen;
    },

    getPet(accountId: string, id: number): Pet | undefined {
      return pets.get(petKey(accountId, id));
    },

    /**
     * Only pets that exist: a miss is not cached, since the id may be assigned later. As setPage,
     * `generation` read before the query: a change or clear since then leaves the pet uncached.
     */
    setPet(accountId: string, pet: Pet, generation: number): Pet {
      const frozen = freezePet(pet);
      if (generation === current(accountId)) setBounded(pets, petKey(accountId, pet.id), frozen, limits.pets);
      return frozen;
    },

    getInventory(accountId: string): Inventory | undefined {
      const entry = inventories.get(accountId);
      return entry && entry.generation === current(accountId) ? entry.counts : undefined;
    },

    /** As setPage: `generation` read before the query. Every change of a pet bumps it. */
    setInventory(accountId: string, counts: Inventory, generation: number): Inventory {
      const frozen = Object.freeze({ ...counts });
      setBounded(inventories, accountId, { counts: frozen, generation }, limits.pages);
      return frozen;
    },

    get size(): { pages: number; pets: number } {
      return { pages: pages.size, pets: pets.size };
    },
  };
}

export type ReadCache = ReturnType<typeof createReadCache>;
