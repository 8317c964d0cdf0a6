// The quickstart works as pasted: every code block of /docs/quickstart runs, in order, in one
// shell (so $KEY from the CLI block carries on, as in a reader's terminal) against a fresh
// server started as `npm start` starts it. And the README says the same thing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { codeBlocks } from '../../src/http/portal/markdown.js';
import { PAGES_DIR } from '../../src/http/portal/plugin.js';
import { jsonLines, matchesDocumented, servedBlocks } from '../helpers/doc-blocks.js';
import { type ServerProcess, startServerProcess } from '../helpers/process.js';

/** The address the blocks are written for (`npm start`'s default). */
const DOCUMENTED_URL = 'http://127.0.0.1:8080';
const DONE = '__quickstart_block_done__';
/** Spec 4.4's messaging example with `{api_url}` and the key filled in: the quickstart sends it as pasted. */
const SPEC_MESSAGING_EXAMPLE =
  'curl -s -X POST http://127.0.0.1:8080/example/v1/messages -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" ' +
  '-d \'{"message": "Hello from the quickstart!"}\'';

type Message = { id: string; message: string; status: string; createdAt: string; deliveredAt?: string };

/** The code blocks as the page shows them. */
const pageBlocks = (html: string) => servedBlocks(html).map((b) => b.code);

/** The README's "Try it" section, up to the next second-level heading. */
function readmeTryIt(): string {
  const readme = readFileSync('README.md', 'utf8');
  const start = readme.indexOf('\n## Try it\n');
  assert.ok(start >= 0, 'the README has a "Try it" section');
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** Runs the blocks in one bash, stopping at the first failing command; returns each finished block's output. */
async function runInOneShell(blocks: string[], env: Record<string, string>): Promise<{ outputs: string[]; code: number | null; stderr: string }> {
  const shell = spawn('bash', ['--noprofile', '--norc'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  shell.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  shell.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  // errexit + pipefail: a failing command anywhere in a block ends the shell there.
  const script = ['set -eo pipefail', ...blocks.map((block) => `${block}\nprintf '\\n${DONE}\\n'`)].join('\n');
  shell.stdin.end(`${script}\n`);
  // Generous: on a loaded CI machine each npx start alone can take seconds.
  const timer = setTimeout(() => shell.kill('SIGKILL'), 150_000);
  const [code] = (await once(shell, 'close')) as [number | null];
  clearTimeout(timer);
  const parts = stdout.split(`\n${DONE}\n`);
  return { outputs: parts.slice(0, -1), code, stderr };
}

describe('quickstart', () => {
  let dir: string;
  let server: ServerProcess;
  /** The outputs of the run in the first test, for the messaging checks. */
  let lastRun: { outputs: string[] } | undefined;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-quickstart-'));
    server = await startServerProcess({ PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db') });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('when every code block of /docs/quickstart is run in order against a fresh server, then each one succeeds', async () => {
    const res = await fetch(`${server.url}/docs/quickstart`);
    assert.equal(res.status, 200);
    const blocks = pageBlocks(await res.text());
    assert.ok(blocks.length >= 5, `the quickstart has code blocks (${blocks.length})`);
    assert.ok(blocks.every((block) => block.includes(DOCUMENTED_URL) || !block.includes('http://')), 'blocks address npm start\'s server');

    const { outputs, code, stderr } = await runInOneShell(
      blocks.map((block) => block.replaceAll(DOCUMENTED_URL, server.url)),
      { PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db') },
    );
    assert.equal(outputs.length, blocks.length, `block ${outputs.length + 1} failed (exit ${code}):\n${blocks[outputs.length]}\n${stderr}`);
    assert.equal(code, 0);
    lastRun = { outputs };

    assert.match(outputs[0]!, /^psk_live_[0-9A-Za-z]+$/m, 'the CLI block printed a key');
    for (const [i, block] of blocks.entries()) {
      const output = outputs[i]!;
      const where = `block ${i + 1}:\n${block}\n--- output:\n${output}`;
      for (const [, status] of output.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)) assert.match(status!, /^2/, where);
      // The outputs a block documents (`# {…}` comments) are what it prints…
      const documented = jsonLines(block.split('\n').filter((l) => l.startsWith('# ')).map((l) => l.slice(2)).join('\n'));
      const printed = jsonLines(output);
      for (const expected of documented) assert.ok(printed.some((p) => matchesDocumented(expected, p)), `${where}\nexpected ${JSON.stringify(expected)}`);
      // …and an error body appears only where the quickstart shows one.
      for (const body of printed) {
        if (typeof body === 'object' && body !== null && 'code' in body && 'status' in body) {
          assert.ok(documented.some((d) => matchesDocumented(d, body)), `${where}\nundocumented error`);
        }
      }
    }
  });

  test('when the messaging blocks have run, then the spec\'s example was accepted as queued and every message sent ends delivered', async () => {
    // Runs after the test above, in the same file: its shell sent the messages with the key it printed.
    const res = await fetch(`${server.url}/docs/quickstart`);
    const blocks = pageBlocks(await res.text());
    const messaging = blocks.flatMap((block, i) => (block.includes('/example/v1/messages') ? [i] : []));
    assert.ok(messaging.length >= 2, 'the quickstart sends a message and polls one');
    assert.ok(blocks[messaging[0]!]!.split('\n').includes(SPEC_MESSAGING_EXAMPLE), `the first messaging block is the spec's example as pasted:\n${blocks[messaging[0]!]}`);
    assert.ok(lastRun, 'the blocks have run');
    const { outputs } = lastRun;

    const accepted = jsonLines(outputs[messaging[0]!]!) as Message[];
    assert.equal(accepted.length, 1, outputs[messaging[0]!]);
    assert.equal(accepted[0]!.status, 'queued');
    assert.equal(accepted[0]!.message, 'Hello from the quickstart!');
    const polled = (jsonLines(outputs[messaging.at(-1)!]!) as Message[]).at(-1);
    assert.equal(polled?.status, 'delivered', `the polling block ends with the message delivered:\n${outputs[messaging.at(-1)!]}`);
    assert.match(polled.deliveredAt ?? '', /^\d{4}-\d{2}-\d{2}T/);

    // The server agrees: the account of the key the CLI block printed has exactly these messages, each delivered.
    const key = /^psk_live_[0-9A-Za-z]+$/m.exec(outputs[0]!)![0];
    let messages: Message[] = [];
    for (const deadline = Date.now() + 5000; ; await sleep(100)) {
      const list = await fetch(`${server.url}/example/v1/messages`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(list.status, 200);
      messages = (await list.json()) as Message[];
      if (messages.every((m) => m.status === 'delivered') || Date.now() > deadline) break;
    }
    assert.deepEqual(messages.map((m) => [m.message, m.status]), [['Hello from the quickstart!', 'delivered'], [polled.message, 'delivered']]);
    assert.equal(messages[0]!.id, accepted[0]!.id);
    assert.equal(messages[1]!.id, polled.id);
  });

  test("when the README's Try it section and the quickstart are compared, then they have the same code blocks", () => {
    const quickstart = codeBlocks(readFileSync(path.join(PAGES_DIR, 'quickstart.md'), 'utf8'));
    assert.deepEqual(codeBlocks(readmeTryIt()), quickstart);
  });
});

