// The real app (in this process) with real HAProxy (deploy/haproxy.cfg) in front of it, for the
// suites that test what the proxy's configuration does, and a GET sent exactly as written.
import http from 'node:http';
import { after, before } from 'node:test';
import { startApp, type StartOptions, type TestApp } from './app.js';
import { type Haproxy, startHaproxy } from './haproxy.js';

/** Starts the app and HAProxy before the suite's tests and stops both after them; read `app` and `lb` inside tests. */
export function haproxyInFront(options: StartOptions = {}): { readonly app: TestApp; readonly lb: Haproxy } {
  const state = {} as { app: TestApp; lb: Haproxy };
  const cleanups: Array<() => unknown> = [];
  before(async () => {
    state.app = await startApp({ after: (fn: () => unknown) => cleanups.push(fn) }, options);
    const address = new URL(state.app.url).host;
    state.lb = await startHaproxy([address, address, address]);
    await state.lb.waitForStatus('a', 'UP', 10_000);
  });
  after(async () => {
    await state.lb?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  return state;
}

/** GET `path` as written (fetch would resolve dot segments), from `localAddress` when given. */
export function rawGet(base: string, path: string, options: { localAddress?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, method: 'GET', agent: false, localAddress: options.localAddress, headers: options.headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}
