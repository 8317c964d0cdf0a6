// The package as users get it: `npm pack` in client/, the tarball installed offline into an
// empty project, an example using every method type-checked there (browser and Node settings),
// and the README's "Use it from TypeScript" example compiled and run against a real server.
// Packs dist/ as built (`npm test` builds first), without running the build again: other test
// files import the same dist/ at the same time.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { sharedAppWithKey } from '../helpers/app.js';

const run = promisify(execFile);
const ROOT = path.resolve('.');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** Code using every public method and type; the @ts-expect-error lines prove the types are precise. */
const EVERY_METHOD = `
import {
  type ClientErrorCode, DEFAULT_BASE_URL, type ListAllMessagesParams, type ListAllOrdersParams, type ListAllPetsParams,
  type ListMessagesParams, type ListOrdersParams, type ListPetsParams, type Message, type Messages, type MessageStatus, type NewOrder,
  type NewPet, type Order, type Orders, type OrderStatus, type Page, type Pet, type Pets, Petstore, PetstoreError, type PetstoreErrorCode,
  type PetstoreOptions, type PetStatus, type ServerErrorCode, type WaitOptions, type WriteOptions,
  type Event, type EventType, type Events, type ListEventsParams, type ListAllEventsParams, type WebhookEndpoints, type WebhookEndpoint,
  type CreatedWebhookEndpoint, type NewWebhookEndpoint, type WebhookEndpointUpdate, type RotatedSecret, type WebhookDelivery,
  type WebhookDeliveryStatus, type ListWebhookEndpointsParams, type ListWebhookDeliveriesParams, verifyWebhook, type VerifyWebhookOptions,
  type WebhookHeaders, DEFAULT_WEBHOOK_TOLERANCE_SECONDS, type PetPatch, type ConditionalOptions, etagOf, type Categories,
  type Category, type ListCategoriesParams, type InventoryResource, type Inventory,
} from '@petstore/client';

const options: PetstoreOptions = {
  apiKey: 'psk_test_x',
  baseUrl: DEFAULT_BASE_URL,
  exampleApiUrl: 'http://127.0.0.1:8080/example/v1',
  maxRetries: 3,
  timeoutMs: 5000,
  fetch: (input, init) => fetch(input, init),
};
const petstore = new Petstore(options);
const urls: string[] = [petstore.baseUrl, petstore.exampleApiUrl];

export async function everyMethod(): Promise<number> {
  const newPet: NewPet = { name: 'Rex', categoryId: 1, status: 'available' };
  const write: WriteOptions = { idempotencyKey: 'import-1' };
  const created: Pet = await petstore.pets.create(newPet, write);
  const again: Pet = await petstore.pets.create({ name: 'Tom', categoryId: 2 });
  const params: ListPetsParams = { limit: 20, status: 'sold', cursor: 'abc' };
  const page: Page<Pet> = await petstore.pets.list(params);
  const next: string | undefined = page.nextCursor;
  const first: Pet[] = (await petstore.pets.list()).data;
  const all: ListAllPetsParams = { status: 'pending', limit: 100 };
  let count = 0;
  for await (const pet of petstore.pets.listAll(all)) count += pet.id;
  for await (const pet of petstore.pets.listAll()) count += pet.categoryId;
  const one: Pet = await petstore.pets.get(created.id);
  const status: PetStatus | undefined = one.status;

  const orders: Orders = petstore.orders;
  const pets: Pets = petstore.pets;
  const newOrder: NewOrder = { petId: created.id };
  const placed: Order = await orders.place(newOrder, write);
  const other: Order = await petstore.orders.place({ petId: again.id });
  const orderParams: ListOrdersParams = { limit: 20, status: 'placed', cursor: 'abc' };
  const orderPage: Page<Order> = await petstore.orders.list(orderParams);
  const firstOrders: Order[] = (await petstore.orders.list()).data;
  const allOrders: ListAllOrdersParams = { status: 'delivered', limit: 100 };
  for await (const order of petstore.orders.listAll(allOrders)) count += order.petId;
  for await (const order of petstore.orders.listAll()) count += order.id;
  const got: Order = await petstore.orders.get(placed.id);
  const delivered: Order = await petstore.orders.deliver(placed.id);
  const cancelled: Order = await petstore.orders.cancel(other.id);
  const orderStatuses: OrderStatus[] = [got.status, delivered.status, cancelled.status];
  const times: string[] = [got.createdAt, got.updatedAt];
  const orderCodes: ServerErrorCode[] = ['pet_not_available', 'invalid_transition'];
  count += orderPage.data.length + firstOrders.length + orderStatuses.length + times.length + orderCodes.length + (pets === petstore.pets ? 1 : 0);

  const messages: Messages = petstore.messages;
  const sent: Message = await messages.send('Hello!', write);
  const plain: Message = await petstore.messages.send('Hi');
  const wait: WaitOptions = { timeoutMs: 10_000, intervalMs: 100 };
  const done: Message = await petstore.messages.waitUntilDone(sent.id, wait);
  const settled: Message = await petstore.messages.waitUntilDone(plain.id);
  const fetched: Message = await petstore.messages.get(done.id);
  const messageParams: ListMessagesParams = { limit: 20, status: 'delivered', cursor: 'abc' };
  const messagePage: Page<Message> = await petstore.messages.list(messageParams);
  const firstMessages: Message[] = (await petstore.messages.list()).data;
  const allMessages: ListAllMessagesParams = { status: 'failed', limit: 100 };
  for await (const message of petstore.messages.listAll(allMessages)) count += message.message.length;
  for await (const message of petstore.messages.listAll()) count += message.id.length;
  const messageStatuses: MessageStatus[] = [done.status, settled.status, fetched.status];
  const outcome: Array<string | undefined> = [done.deliveredAt, settled.failureReason, fetched.createdAt];
  count += messagePage.data.length + firstMessages.length + messageStatuses.length + outcome.length;
  const events: Events = petstore.events;
  const eventParams: ListEventsParams = { limit: 20, type: ['pet.created', 'order.placed'], after: 41, cursor: 'abc' };
  const eventPage: Page<Event> = await events.list(eventParams);
  const allEvents: ListAllEventsParams = { type: 'pet.status_changed', after: 0 };
  for await (const event of petstore.events.listAll(allEvents)) {
    // The union narrows on type: only pet.status_changed has data.previousStatus.
    if (event.type === 'pet.status_changed') count += (event.data.previousStatus?.length ?? 0) + event.data.object.id;
    else if (event.type === 'order.placed') count += event.data.object.petId;
  }
  const oneEvent: Event = await petstore.events.get(eventPage.data[0]!.id);
  const kinds: EventType[] = [oneEvent.type];
  const hooks: WebhookEndpoints = petstore.webhookEndpoints;
  const newEndpoint: NewWebhookEndpoint = { url: 'https://hooks.example.com/petstore', eventTypes: ['pet.created'], description: 'Sync' };
  const endpoint: CreatedWebhookEndpoint = await hooks.create(newEndpoint);
  const secret: string = endpoint.secret;
  const endpointPage: Page<WebhookEndpoint> = await hooks.list({ limit: 10, cursor: 'abc' } satisfies ListWebhookEndpointsParams);
  const gotEndpoint: WebhookEndpoint = await hooks.get(endpoint.id);
  const changes: WebhookEndpointUpdate = { eventTypes: null, description: null, disabled: true, url: 'https://hooks.example.com/v2' };
  const updated: WebhookEndpoint = await hooks.update(gotEndpoint.id, changes);
  const rotated: RotatedSecret = await hooks.rotateSecret(updated.id);
  const deliveryParams: ListWebhookDeliveriesParams = { status: 'failed', limit: 5, cursor: 'abc' };
  const deliveries: Page<WebhookDelivery> = await hooks.deliveries(updated.id, deliveryParams);
  const retried: WebhookDelivery = await hooks.retryDelivery(updated.id, deliveries.data[0]!.id);
  const deliveryStatus: WebhookDeliveryStatus = retried.status;
  const removed: void = await hooks.delete(updated.id);
  const headers: WebhookHeaders = { 'Webhook-Id': 'evt_1', 'webhook-timestamp': '1', 'webhook-signature': ['v1,x'], other: undefined };
  const verify: VerifyWebhookOptions = { headers, body: new Uint8Array(), secret, toleranceSeconds: DEFAULT_WEBHOOK_TOLERANCE_SECONDS };
  const verified: Event = await verifyWebhook(verify);
  const fromHeaders: Event = await verifyWebhook({ headers: new Headers(), body: '{}', secret: rotated.secret });
  count += kinds.length + endpointPage.data.length + secret.length + deliveryStatus.length + verified.sequence + fromHeaders.sequence + String(removed).length;
  const patch: PetPatch = { name: 'Rex', status: null, categoryId: 2 };
  const conditional: ConditionalOptions = { ifMatch: etagOf(created) ?? '*' };
  const patched: Pet = await petstore.pets.update(created.id, patch, conditional);
  const tag: string | undefined = etagOf(patched);
  const deleted: void = await petstore.pets.delete(again.id, { ifMatch: tag });
  const categories: Categories = petstore.categories;
  const named: Category = await categories.put(2, 'Cats');
  const gotCategory: Category = await petstore.categories.get(named.id);
  const categoryParams: ListCategoriesParams = { limit: 10, cursor: 'abc' };
  const categoryPage: Page<Category> = await categories.list(categoryParams);
  for await (const category of categories.listAll({ limit: 100 })) count += category.petCount + (category.name?.length ?? 0);
  const noCategory: void = await categories.delete(gotCategory.id);
  const inventoryResource: InventoryResource = petstore.inventory;
  const inventory: Inventory = await inventoryResource.get();
  count += inventory.available + inventory.pending + inventory.sold + inventory.withoutStatus + inventory.total + categoryPage.data.length;
  count += String(deleted).length + String(noCategory).length;
  // @ts-expect-error: name cannot be null in a patch
  await petstore.pets.update(created.id, { name: null });
  // @ts-expect-error: not an event kind
  await petstore.events.list({ type: 'pet.adopted' });
  // @ts-expect-error: listAll takes no cursor
  petstore.events.listAll({ cursor: 'abc' });
  // @ts-expect-error: url is required
  await petstore.webhookEndpoints.create({ eventTypes: ['pet.created'] });
  // @ts-expect-error: the body must be the raw text or bytes, not a parsed object
  await verifyWebhook({ headers, body: { type: 'pet.created' }, secret });
  // @ts-expect-error: only pet.status_changed has previousStatus
  if (oneEvent.type === 'pet.created') count += oneEvent.data.previousStatus;
  const signatureCode: ClientErrorCode = 'invalid_signature';
  count += signatureCode.length;
  try {
    await petstore.pets.get(again.id);
  } catch (error) {
    if (!(error instanceof PetstoreError)) throw error;
    const code: PetstoreErrorCode = error.code;
    const server: ServerErrorCode = 'idempotency_key_in_use';
    const client: ClientErrorCode = 'network_error';
    const fields: [number, string, string | undefined, number | undefined] = [error.status, error.message, error.requestId, error.retryAfter];
    // @ts-expect-error: not a documented code
    if (error.code === 'no_such_code') return 0;
    console.log(code, server, client, fields);
  }
  // @ts-expect-error: status is one of available, pending, sold
  await petstore.pets.create({ name: 'Rex', categoryId: 1, status: 'lost' });
  // @ts-expect-error: categoryId is required
  await petstore.pets.create({ name: 'Rex' });
  // @ts-expect-error: listAll takes no cursor
  petstore.pets.listAll({ cursor: 'abc' });
  // @ts-expect-error: an order's status is placed, delivered or cancelled
  await petstore.orders.list({ status: 'sold' });
  // @ts-expect-error: petId is required
  await petstore.orders.place({});
  // @ts-expect-error: listAll takes no cursor
  petstore.orders.listAll({ cursor: 'abc' });
  // @ts-expect-error: deliver takes the order id only (no body)
  await petstore.orders.deliver(placed.id, {});
  // @ts-expect-error: a message's status is queued, delivered or failed
  await petstore.messages.list({ status: 'placed' });
  // @ts-expect-error: send takes the text, not a NewMessage body
  await petstore.messages.send({ message: 'Hi' });
  // @ts-expect-error: a message id is a string (msg_…)
  await petstore.messages.get(42);
  // @ts-expect-error: listAll takes no cursor
  petstore.messages.listAll({ cursor: 'abc' });
  // @ts-expect-error: waitUntilDone's options are timeoutMs and intervalMs
  await petstore.messages.waitUntilDone(sent.id, { timeout: 5 });
  // @ts-expect-error: apiKey is required
  new Petstore({ baseUrl: DEFAULT_BASE_URL });
  return count + first.length + (next?.length ?? 0) + (status?.length ?? 0) + urls.length;
}
`;

function tsconfig(settings: Record<string, unknown>, files: string[]): string {
  return JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noUncheckedIndexedAccess: true, ...settings },
    files,
  });
}

/** The first ```ts block of the README's "Use it from TypeScript" section. */
function readmeExample(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.split('\n## Use it from TypeScript\n')[1]?.split('\n## ')[0];
  const code = section && /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(code, 'README.md has a "Use it from TypeScript" section with a ```ts block');
  return code;
}

describe('the packed @petstore/client, installed into an empty project', () => {
  const getApp = sharedAppWithKey();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-client-pack-'));
  const project = path.join(dir, 'project');
  let packed: string[];
  after(() => rmSync(dir, { recursive: true, force: true }));

  before(async () => {
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: path.join(ROOT, 'client') });
    const [info] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packed = info!.files.map((f) => f.path).sort();
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    // Offline: the tarball must need nothing from a registry.
    await run('npm', ['install', path.join(dir, info!.filename), '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project });
  });

  test('when packed, then the tarball holds the built ESM and .d.ts files and the package metadata, and no runtime dependency', () => {
    assert.ok(packed.includes('dist/index.js') && packed.includes('dist/index.d.ts'), packed.join(', '));
    assert.ok(packed.includes('dist/generated/petstore.d.ts') && packed.includes('dist/generated/example.d.ts'));
    assert.ok(packed.includes('dist/resources/messages.js') && packed.includes('dist/resources/messages.d.ts'));
    assert.deepEqual(packed.filter((file) => !file.startsWith('dist/')), ['README.md', 'package.json']);
    assert.ok(packed.every((file) => !file.startsWith('dist/') || /\.(js|d\.ts)$/.test(file)), packed.join(', '));
    const installed = JSON.parse(readFileSync(path.join(project, 'node_modules', '@petstore', 'client', 'package.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(installed.name, '@petstore/client');
    assert.equal(installed.dependencies, undefined, 'no runtime dependency');
    const pets = readFileSync(path.join(project, 'node_modules', '@petstore', 'client', 'dist', 'resources', 'pets.d.ts'), 'utf8');
    // The doc comment right before get(): deprecated, with the sunset and the successor.
    const getDoc = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*get\(id: number\): Promise<Pet>;/.exec(pets)?.[1] ?? '';
    assert.match(getDoc.replace(/\s*\*\s*/g, ' '), /@deprecated .*5 December 2030.*\{@link Pets\.list\} with the `status` filter/);
    // Orders are experimental (x-stability): the class and each of its methods say so where editors show it.
    const experimental = [
      { file: 'orders.d.ts', names: ['class Orders', 'list(', 'listAll(', 'place(', 'get(', 'deliver(', 'cancel('] },
      { file: 'events.d.ts', names: ['class Events', 'list(', 'listAll(', 'get('] },
      { file: 'webhook-endpoints.d.ts', names: ['class WebhookEndpoints'] },
      { file: 'categories.d.ts', names: ['class Categories', 'class InventoryResource'] },
      { file: 'pets.d.ts', names: ['update(', 'delete('] },
    ];
    for (const { file, names } of experimental) {
      const text = readFileSync(path.join(project, 'node_modules', '@petstore', 'client', 'dist', 'resources', file), 'utf8');
      for (const name of names) {
        const doc = new RegExp(`/\\*\\*((?:(?!\\*/)[\\s\\S])*)\\*/\\s*(?:export declare )?${name.replace('(', '\\(')}`).exec(text)?.[1] ?? '';
        assert.match(doc, /@experimental/, `${name} in ${file}`);
      }
    }
  });

  test('when an example using every method is type-checked against the installed package, then tsc --noEmit passes with browser and with Node settings', async () => {
    writeFileSync(path.join(project, 'every-method.ts'), EVERY_METHOD);
    writeFileSync(path.join(project, 'tsconfig.browser.json'), tsconfig({ lib: ['ES2022', 'DOM'], types: [], noEmit: true }, ['every-method.ts']));
    const node = { lib: ['ES2022'], types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], noEmit: true };
    writeFileSync(path.join(project, 'tsconfig.node.json'), tsconfig(node, ['every-method.ts']));
    for (const config of ['tsconfig.browser.json', 'tsconfig.node.json']) {
      await run(process.execPath, [TSC, '-p', config], { cwd: project }).catch((error: { stdout?: string }) => {
        assert.fail(`${config}: ${error.stdout ?? String(error)}`);
      });
    }
  });

  test('when the README example is compiled and run against a real server, then it creates, lists, orders, sends a message and reports an error as shown', async () => {
    const { app, key } = await getApp();
    writeFileSync(path.join(project, 'readme-example.ts'), readmeExample());
    const node = { lib: ['ES2022'], types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], outDir: 'out' };
    writeFileSync(path.join(project, 'tsconfig.readme.json'), tsconfig(node, ['readme-example.ts']));
    await run(process.execPath, [TSC, '-p', 'tsconfig.readme.json'], { cwd: project }).catch((error: { stdout?: string }) => {
      assert.fail(`the README example does not compile: ${error.stdout ?? String(error)}`);
    });
    const { stdout } = await run(process.execPath, ['out/readme-example.js'], {
      cwd: project,
      env: { ...process.env, PETSTORE_API_KEY: key, PETSTORE_URL: `${app.url}/v1` },
    });
    const lines = stdout.trim().split('\n');
    const id = /^created pet (\d+)$/.exec(lines[0] ?? '')?.[1];
    assert.ok(id, stdout);
    assert.deepEqual(lines.slice(1, 3), ['first page: 1 pet(s), more: false', `pet ${id}: Rex`]);
    assert.match(lines[3] ?? '', new RegExp(`^order \\d+ for pet ${id}: placed, then delivered$`));
    assert.match(lines[4] ?? '', /^message msg_[0-9A-Za-z]{24}: queued, then delivered at \d{4}-\d{2}-\d{2}T[\d:.]+Z$/);
    assert.match(lines[5] ?? '', /^400 invalid_request: .+ \(request [0-9a-f-]{36}\)$/);
    assert.equal(lines.length, 6, stdout);
  });
});
