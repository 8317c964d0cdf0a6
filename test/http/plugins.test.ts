// The app's plugins declare what they depend on, and Fastify enforces it: a plugin registered
// before its dependencies refuses to load, naming what is missing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Writable } from 'node:stream';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { createInstance } from '../../src/http/instance.js';
import { corePlugin } from '../../src/http/plugins/core.js';
import { metricsPlugin, servicesPlugin, storePlugin } from '../../src/http/plugins/foundation.js';
import { apiPlugin } from '../../src/http/plugins/routes.js';
import { createLogger } from '../../src/logger.js';
import { createWakeups } from '../../src/runtime/wakeups.js';
import { createStore } from '../../src/store/index.js';

const silent = () => createLogger({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() }));

describe('plugin dependencies', () => {
  test('when the services plugin is registered without the store plugin, then the app refuses to start naming petstore-store', async () => {
    const config = loadConfig({ PETSTORE_DATABASE_URL: ':memory:' });
    const { app } = createInstance(config.http, silent());
    await assert.rejects(
      async () => {
        await app.register(servicesPlugin, { clock: systemClock, environment: config.environment, webhooks: config.webhooks, wakeups: createWakeups() });
      },
      /The dependency 'petstore-store' of plugin 'petstore-services' is not registered/,
    );
    await app.close();
  });

  test('when the API plugin is registered with only some of its dependencies, then it names the first missing one', async () => {
    const config = loadConfig({ PETSTORE_DATABASE_URL: ':memory:' });
    const store = await createStore(config);
    await store.migrate();
    const { app } = createInstance(config.http, silent());
    await app.register(corePlugin, { bodyLimit: config.http.bodyLimit });
    await app.register(metricsPlugin, {});
    await app.register(storePlugin, { store, events: true, wakeups: createWakeups() });
    await assert.rejects(async () => {
      await app.register(apiPlugin, { clock: systemClock, events: config.events, wakeups: createWakeups() });
    }, /The dependency 'petstore-openapi' of plugin 'petstore-api' is not registered/);
    await app.close();
    await store.close();
  });
});
