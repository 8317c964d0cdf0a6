// A newcomer's path, as pasted: the README's blocks, then the portal's guides (quickstart, orders,
// webhooks), each run in order in one terminal session against one fresh store, with `npm start`
// running "in another terminal" (this test's server process). When a block restarts the server with
// settings (`VAR=… npm start`), the test stops it and starts it so, on the same store; files a
// block says to save (`// receiver.mjs: …`) are saved in the terminal's folder. Every block must
// succeed, print what its `# {…}` comments document, and the webhook receiver must verify the
// deliveries; the TypeScript example runs with tsx.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Block, documentedOutputs, jsonLines, markdownBlocks, matchesDocumented, servedBlocks, Terminal } from '../helpers/doc-blocks.js';
import { freePort, type ServerProcess, startServerProcess } from '../helpers/process.js';

/** The addresses the blocks are written for: `npm start`'s and the receiver's defaults. */
const DOCUMENTED_URL = 'http://127.0.0.1:8080';
const DOCUMENTED_RECEIVER = 'http://127.0.0.1:3000';
/** The guides a newcomer follows, in the portal's order, whose blocks build on each other. */
const GUIDES = ['quickstart', 'orders', 'webhooks'];
/** Generous, beside other suites on a loaded 2-core machine: not a speed assertion. */
const START_MS = 60_000;

/** `VAR=value … npm start`: the settings to restart the server with, else undefined. */
function restartEnv(block: Block): Record<string, string> | undefined {
  const match = /^((?:[A-Z_]+=\S+ )+)npm start\n$/.exec(block.code);
  return match ? Object.fromEntries(match[1]!.trim().split(' ').map((pair) => pair.split('=', 2) as [string, string])) : undefined;
}

/** A js or ts block that starts `// <file>: …` is saved as that file. */
const fileName = (block: Block) => (['js', 'ts'].includes(block.lang) ? /^\/\/ ([\w.-]+\.(?:mjs|js|ts)): /.exec(block.code)?.[1] : undefined);

interface Session {
  /** Each run block and what it printed. */
  ran: Array<{ block: Block; output: string }>;
  terminal: Terminal;
  server: ServerProcess;
  saved: string[];
}

/** One reader: a fresh store and folder, the server as `npm start` runs it, every block in order. */
class Reader {
  readonly dir: string;
  readonly #env: Record<string, string>;
  server!: ServerProcess;
  terminal!: Terminal;
  receiverPort = 0;

  constructor(name: string) {
    // A folder of its own for the files the blocks save, with the clone's node_modules: npx
    // petstore, tsx and @petstore/client resolve as in the clone's folder.
    mkdirSync(path.resolve('.tmp'), { recursive: true });
    this.dir = mkdtempSync(path.join(path.resolve('.tmp'), `newcomer-${name}-`));
    symlinkSync(path.resolve('node_modules'), path.join(this.dir, 'node_modules'));
    this.#env = { PETSTORE_DATABASE_URL: path.join(this.dir, 'petstore.db') };
  }

  async start(): Promise<void> {
    this.server = await startServerProcess(this.#env, [], { timeoutMs: START_MS });
    this.receiverPort = await freePort();
    this.terminal = new Terminal({ cwd: this.dir, env: { ...this.#env, PORT: String(this.receiverPort) } });
  }

  /** The block on this test's ports. */
  #local(code: string): string {
    return code.replaceAll(DOCUMENTED_URL, this.server.url).replaceAll(DOCUMENTED_RECEIVER, `http://127.0.0.1:${this.receiverPort}`);
  }

  async follow(blocks: Block[]): Promise<Session> {
    const ran: Session['ran'] = [];
    const saved: string[] = [];
    for (const block of blocks) {
      const env = restartEnv(block);
      const file = fileName(block);
      if (env) {
        // "Stop the server (Ctrl-C in its terminal) and start it again so": same store, new settings.
        assert.equal(await this.server.stop('SIGINT'), 0);
        this.server = await startServerProcess({ ...this.#env, ...env }, [], { timeoutMs: START_MS });
      } else if (file) {
        writeFileSync(path.join(this.dir, file), this.#local(block.code));
        saved.push(file);
      } else if (block.lang === 'sh' && !/^npm ci\b/m.test(block.code)) {
        ran.push({ block, output: await this.terminal.paste(this.#local(block.code)) });
      }
    }
    return { ran, terminal: this.terminal, server: this.server, saved };
  }

  async stop(): Promise<void> {
    this.terminal?.close();
    await this.server?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Every run block printed what it documents, no HTTP status but 2xx, and an error body only where documented. */
function assertOutputs(ran: Session['ran']): void {
  for (const { block, output } of ran) {
    const where = `block:\n${block.code}\n--- output:\n${output}`;
    for (const [, status] of output.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)) assert.match(status!, /^2/, where);
    const documented = documentedOutputs(block.code);
    const printed = jsonLines(output);
    for (const expected of documented) assert.ok(printed.some((p) => matchesDocumented(expected, p)), `${where}\nexpected ${JSON.stringify(expected)}`);
    for (const body of printed) {
      if (typeof body === 'object' && body !== null && 'code' in body && 'status' in body) {
        assert.ok(documented.some((d) => matchesDocumented(d, body)), `${where}\nundocumented error`);
      }
    }
  }
}

/** The receiver printed each event of its endpoint once, verified; resolves with their number. */
async function assertReceiverVerified(session: Session): Promise<number> {
  const key = [...session.terminal.output.matchAll(/^psk_live_[0-9A-Za-z]+$/gm)].at(-1)?.[0];
  assert.ok(key, 'a key was printed');
  const endpoint = JSON.parse(/^\{"id":"we_.*$/m.exec(session.terminal.output)?.[0] ?? 'null') as { id: string } | null;
  assert.ok(endpoint, `the registration printed the endpoint:\n${session.terminal.output}`);
  const headers = { authorization: `Bearer ${key}` };
  // Every delivery the endpoint has (later blocks may still be adding some) printed once, verified.
  let deliveries: unknown[] = [];
  for (const deadline = Date.now() + 45_000; ; await sleep(100)) {
    deliveries = (await (await fetch(`${session.server.url}/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=100`, { headers })).json()) as unknown[];
    // Not anchored at a line start: the receiver prints in the background, right after a curl's answer that has no newline.
    const printed = session.terminal.output.match(/verified [a-z_.]+ evt_\w+ \(sequence \d+\)$/gm) ?? [];
    if (deliveries.length >= 3 && printed.length === deliveries.length) break;
    assert.ok(Date.now() < deadline, `the receiver printed ${printed.length} of ${deliveries.length} deliveries:\n${session.terminal.output}`);
  }
  return deliveries.length;
}

describe('a newcomer pasting the documentation in order', () => {
  const readers: Reader[] = [];
  before(async () => {
    readers.push(new Reader('readme'), new Reader('guides'));
    for (const reader of readers) await reader.start();
  });
  after(async () => {
    await Promise.all(readers.map((r) => r.stop()));
  });

  test('when every block of the README is pasted in order in one terminal, then each succeeds, the receiver verifies the deliveries and example.ts runs', async () => {
    const blocks = markdownBlocks(readFileSync('README.md', 'utf8'));
    const session = await readers[0]!.follow(blocks);
    assert.deepEqual(session.saved, ['receiver.mjs', 'example.ts']);
    assert.ok(session.ran.length >= 12, `the README's shell blocks ran (${session.ran.length})`);
    assertOutputs(session.ran);
    assert.ok((await assertReceiverVerified(session)) >= 3);
    const example = session.ran.at(-1)!;
    assert.match(example.block.code, /npx tsx example\.ts/);
    assert.match(example.output, /^created pet \d+$/m);
    assert.match(example.output, /^order \d+ for pet \d+: placed, then delivered$/m);
    assert.match(example.output, /^message msg_\w+: queued, then delivered at /m);
    assert.match(example.output, /^400 invalid_request: /m);
  });

  test('when every block of the quickstart, orders and webhooks guides is pasted in order in one terminal, then each succeeds and the receiver verifies the deliveries', async () => {
    const reader = readers[1]!;
    const blocks: Block[] = [];
    for (const guide of GUIDES) {
      const res = await fetch(`${reader.server.url}/docs/${guide}`);
      assert.equal(res.status, 200);
      blocks.push(...servedBlocks(await res.text()));
    }
    const session = await reader.follow(blocks);
    assert.deepEqual(session.saved, ['receiver.mjs', 'receiver.ts']);
    assertOutputs(session.ran);
    assert.ok((await assertReceiverVerified(session)) >= 3);
  });

  test("when the README's orders section and /docs/orders are compared, then the README's block is the page's first", () => {
    const readme = readFileSync('README.md', 'utf8');
    const start = readme.indexOf('\n## Orders');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const page = markdownBlocks(readFileSync(path.join('src/http/portal/pages/orders.md'), 'utf8')).filter((b) => b.lang === 'sh');
    assert.deepEqual(markdownBlocks(section), [page[0]]);
  });
});
