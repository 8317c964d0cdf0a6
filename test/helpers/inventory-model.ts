// A model of what accounts hold (pets, deleted ids, orders, category names) and a seeded random
// walk of changes over HTTP: each step's answer is checked against the model, then every
// account's inventory, categories and pet list, and the acting account's single pets (404 for
// deleted ones) and categories. A failure names the seed (PETSTORE_TEST_SEED=<seed> replays
// it), the step and the steps before it.
import assert from 'node:assert/strict';
import { assertError, type Category, type Inventory, type Order, type Pet, type PetApi, type Status } from './pet-changes.js';

type OrderState = { petId: number; status: Order['status'] };

interface ModelAccount {
  api: PetApi;
  pets: Map<number, Pet>;
  deleted: Set<number>;
  lastPetId: number;
  orders: Map<number, OrderState>;
  names: Map<number, string>;
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STATUSES: Array<Status | undefined> = ['available', 'pending', 'sold', undefined];
const CATEGORY_IDS = [1, 2, 3, 4, 5, 6];
// Case variants on purpose: names compare case-insensitively.
const NAMES = ['Dogs', 'dogs', 'Cats', 'CATS', 'Birds', 'Fish'];

export async function runModelSteps(apis: PetApi[], { steps }: { steps: number }): Promise<void> {
  const seed = Number(process.env.PETSTORE_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const accounts: ModelAccount[] = apis.map((api) => ({ api, pets: new Map(), deleted: new Set(), lastPetId: 0, orders: new Map(), names: new Map() }));

  const petCount = (account: ModelAccount, categoryId: number) => [...account.pets.values()].filter((p) => p.categoryId === categoryId).length;
  const categoryExists = (account: ModelAccount, id: number) => account.names.has(id) || petCount(account, id) > 0;
  const hasPlaced = (account: ModelAccount, petId: number) => [...account.orders.values()].some((o) => o.petId === petId && o.status === 'placed');
  /** A pet id to act on: mostly a live one, sometimes one with a placed order or a deleted one. */
  const petId = (account: ModelAccount): number | undefined => {
    const deleted = [...account.deleted];
    const live = [...account.pets.keys()];
    const held = live.filter((id) => hasPlaced(account, id));
    if (deleted.length > 0 && (live.length === 0 || random() < 0.15)) return pick(deleted);
    if (held.length > 0 && random() < 0.25) return pick(held);
    return live.length > 0 ? pick(live) : undefined;
  };

  const actions: Array<[number, (account: ModelAccount, other: ModelAccount) => Promise<string>]> = [
    [4, async (account) => {
      const status = pick(STATUSES);
      const body = { name: `P${Math.floor(random() * 1000)}`, categoryId: pick(CATEGORY_IDS), ...(status ? { status } : {}) };
      const created = await account.api.createOk(body);
      const expected: Pet = { id: ++account.lastPetId, ...body };
      assert.deepEqual(created, expected);
      account.pets.set(created.id, created);
      return `create ${JSON.stringify(body)}`;
    }],
    [5, async (account) => {
      const id = petId(account);
      if (id === undefined) return 'patch (no pet)';
      const patch: Record<string, unknown> = {};
      if (random() < 0.4) patch.name = `N${Math.floor(random() * 1000)}`;
      if (random() < 0.4) patch.categoryId = pick(CATEGORY_IDS);
      if (random() < 0.6) patch.status = pick(STATUSES) ?? null;
      const res = await account.api.patch(id, patch);
      const before = account.pets.get(id);
      if (!before) assertError(res, 404, 'not_found');
      else if ('status' in patch && (patch.status ?? undefined) !== before.status && hasPlaced(account, id)) assertError(res, 409, 'pet_has_open_order');
      else {
        const { status: _old, ...rest } = before;
        const status = 'status' in patch ? (patch.status as Status | null) ?? undefined : before.status;
        const after: Pet = { ...rest, ...(patch.name ? { name: patch.name as string } : {}), ...(patch.categoryId ? { categoryId: patch.categoryId as number } : {}), ...(status ? { status } : {}) };
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, after);
        account.pets.set(id, after);
      }
      return `patch ${id} ${JSON.stringify(patch)} → ${res.status}`;
    }],
    [2, async (account) => {
      const id = petId(account);
      if (id === undefined) return 'delete (no pet)';
      const res = await account.api.remove(id);
      if (!account.pets.has(id)) assertError(res, 404, 'not_found');
      else if (hasPlaced(account, id)) assertError(res, 409, 'pet_has_open_order');
      else {
        assert.equal(res.status, 204, res.text);
        account.pets.delete(id);
        account.deleted.add(id);
      }
      return `delete ${id} → ${res.status}`;
    }],
    [3, async (account) => {
      // Mostly an available pet, so that orders are placed often enough to matter.
      const available = [...account.pets.values()].filter((p) => p.status === 'available').map((p) => p.id);
      const id = available.length > 0 && random() < 0.75 ? pick(available) : petId(account);
      if (id === undefined) return 'place (no pet)';
      const res = await account.api.place(id);
      const pet = account.pets.get(id);
      if (!pet) assertError(res, 404, 'not_found');
      else if (pet.status !== 'available') assertError(res, 409, 'pet_not_available');
      else {
        assert.equal(res.status, 201, res.text);
        const order = res.body as Order;
        assert.deepEqual([order.id, order.petId, order.status], [account.orders.size + 1, id, 'placed']);
        account.orders.set(order.id, { petId: id, status: 'placed' });
        account.pets.set(id, { ...pet, status: 'pending' });
      }
      return `place ${id} → ${res.status}`;
    }],
    [3, async (account) => {
      if (account.orders.size === 0) return 'move (no order)';
      const placed = [...account.orders.entries()].filter(([, o]) => o.status === 'placed');
      const [orderId, order] = placed.length > 0 && random() < 0.8 ? pick(placed) : pick([...account.orders.entries()]);
      const action = random() < 0.5 ? 'deliver' : 'cancel';
      const target = action === 'deliver' ? 'delivered' : 'cancelled';
      const res = await account.api.act(orderId, action);
      if (order.status === 'placed' || order.status === target) {
        assert.equal(res.status, 200, res.text);
        assert.equal((res.body as Order).status, target);
      } else assertError(res, 409, 'invalid_transition');
      if (order.status === 'placed') {
        order.status = target;
        const pet = account.pets.get(order.petId)!;
        account.pets.set(pet.id, { ...pet, status: action === 'deliver' ? 'sold' : 'available' });
      }
      return `${action} order ${orderId} → ${res.status}`;
    }],
    [1, async (account) => {
      const id = pick(CATEGORY_IDS);
      const name = pick(NAMES);
      const res = await account.api.putCategory(id, { name });
      const taken = [...account.names].some(([other, n]) => other !== id && n.toLowerCase() === name.toLowerCase());
      if (taken) assertError(res, 409, 'category_name_taken');
      else {
        assert.equal(res.status, categoryExists(account, id) ? 200 : 201, res.text);
        account.names.set(id, name);
        assert.deepEqual(res.body, { id, name, petCount: petCount(account, id) });
      }
      return `put category ${id} ${name} → ${res.status}`;
    }],
    [1, async (account) => {
      const id = pick(CATEGORY_IDS);
      const res = await account.api.deleteCategory(id);
      if (!categoryExists(account, id)) assertError(res, 404, 'not_found');
      else if (petCount(account, id) > 0) assertError(res, 409, 'category_in_use');
      else {
        assert.equal(res.status, 204, res.text);
        account.names.delete(id);
      }
      return `delete category ${id} → ${res.status}`;
    }],
    [1, async (account, other) => {
      // The other account's pets and categories, where this account has none of that id: 404.
      const foreign = [...other.pets.keys()].filter((id) => id > account.lastPetId);
      const category = CATEGORY_IDS.find((id) => categoryExists(other, id) && !categoryExists(account, id));
      if (category !== undefined) assertError(await account.api.category(category), 404, 'not_found');
      if (foreign.length === 0) return `probe category ${category ?? '-'}`;
      const id = pick(foreign);
      assertError(await account.api.get(id), 404, 'not_found');
      assertError(await account.api.patch(id, { name: 'Stolen' }), 404, 'not_found');
      assertError(await account.api.remove(id), 404, 'not_found');
      return `probe pet ${id}, category ${category ?? '-'}`;
    }],
  ];
  const weights = actions.reduce((sum, [w]) => sum + w, 0);
  const chooseAction = () => {
    let r = random() * weights;
    for (const [w, action] of actions) if ((r -= w) < 0) return action;
    return actions[0]![1];
  };

  const history: string[] = [];
  for (let step = 1; step <= steps; step++) {
    const index = Math.floor(random() * accounts.length);
    const account = accounts[index]!;
    try {
      history.push(`${step} [${index === 0 ? 'A' : 'B'}] ${await chooseAction()(account, accounts[(index + 1) % accounts.length]!)}`);
      // The other account gets the cheap reads: enough to see a change leak across accounts.
      for (const each of accounts) await checkAccount(each, CATEGORY_IDS, each === account);
    } catch (error) {
      const err = error as Error;
      err.message = `seed ${seed} (PETSTORE_TEST_SEED=${seed} replays it), step ${step}; last steps:\n${history.slice(-8).join('\n')}\n${err.message}`;
      throw err;
    }
  }
}

/** The account's reads against the model: lists and counts; with `everyOne`, each pet and category too. */
async function checkAccount(account: ModelAccount, categoryIds: number[], everyOne: boolean): Promise<void> {
  const live = [...account.pets.values()].sort((a, b) => a.id - b.id);
  const expected: Inventory = { available: 0, pending: 0, sold: 0, withoutStatus: 0, total: live.length };
  for (const pet of live) expected[pet.status ?? 'withoutStatus'] += 1;
  assert.deepEqual(await account.api.inventory(), expected, 'inventory');

  const categories: Category[] = [];
  for (const id of [...new Set([...categoryIds, ...account.names.keys()])].sort((a, b) => a - b)) {
    const count = live.filter((p) => p.categoryId === id).length;
    const name = account.names.get(id);
    if (name !== undefined || count > 0) categories.push({ id, ...(name !== undefined ? { name } : {}), petCount: count });
  }
  assert.deepEqual(await account.api.categories(), categories, 'listCategories');
  assert.deepEqual(await account.api.pets(), live, 'listPets');
  if (!everyOne) return;
  for (const id of categoryIds) {
    const category = categories.find((c) => c.id === id);
    const res = await account.api.category(id);
    if (category) assert.deepEqual(res.body, category, `getCategory ${id}`);
    else assertError(res, 404, 'not_found');
  }

  for (const pet of live) assert.deepEqual((await account.api.get(pet.id)).body, pet, `getPet ${pet.id}`);
  for (const id of account.deleted) assertError(await account.api.get(id), 404, 'not_found');
}
