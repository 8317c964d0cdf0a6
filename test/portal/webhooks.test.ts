// /docs/webhooks works as pasted: a fresh server started with the settings of the page's
// `npm start` block, the receiver block saved as receiver.mjs, and every shell block run in order
// in one bash (as in a reader's terminal: the receiver runs in its background). The real server
// delivers to that receiver, which must verify and print each event; then the test sends the
// receiver forged deliveries (signed by the standardwebhooks package) that it must refuse. The
// generated tables follow the code, and the README's "Events and webhooks" blocks are the page's.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Ajv } from 'ajv';
import { Webhook } from 'standardwebhooks';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '../../src/config.js';
import { EVENT_TYPES } from '../../src/schemas/events.js';
import { codeBlocks, markdown } from '../../src/http/portal/markdown.js';
import { PAGES_DIR } from '../../src/http/portal/plugin.js';
import { freePort, type ServerProcess, startServerProcess } from '../helpers/process.js';

const DOCUMENTED_URL = 'http://127.0.0.1:8080';
const DOCUMENTED_RECEIVER = 'http://127.0.0.1:3000';
const DONE = '__webhooks_block_done__';
const SOURCE = readFileSync(path.join(PAGES_DIR, 'webhooks.md'), 'utf8');

interface Fence {
  lang: string;
  code: string;
}

const fences: Fence[] = markdown.parse(SOURCE, {}).filter((t) => t.type === 'fence').map((t) => ({ lang: t.info.trim(), code: t.content }));

const decodeHtml = (html: string) =>
  html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

/** The README's "Events and webhooks" section, up to the next second-level heading. */
function readmeSection(): string {
  const readme = readFileSync('README.md', 'utf8');
  const start = readme.indexOf('\n## Events and webhooks (experimental)\n');
  assert.ok(start >= 0, 'the README has an "Events and webhooks" section');
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The page's `VAR=value … npm start` block as an environment. */
function startBlockEnv(): Record<string, string> {
  const starts = fences.filter((f) => f.lang === 'sh' && f.code.includes('npm start'));
  assert.equal(starts.length, 1, 'one block starts the server');
  const match = /^((?:[A-Z_]+=\S+ )+)npm start\n$/.exec(starts[0]!.code);
  assert.ok(match, `the start block is VAR=value … npm start: ${starts[0]!.code}`);
  return Object.fromEntries(match[1]!.trim().split(' ').map((pair) => pair.split('=', 2) as [string, string]));
}

describe('/docs/webhooks', () => {
  let dir: string;
  let server: ServerProcess;
  let shell: ChildProcess | undefined;
  let stdout = '';
  let stderr = '';
  let receiverPort: number;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-webhooks-doc-'));
    server = await startServerProcess({ PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), ...startBlockEnv() });
    receiverPort = await freePort();
  });
  after(async () => {
    // The shell and the receiver it left in the background: one process group.
    if (shell?.pid !== undefined && shell.exitCode === null) process.kill(-shell.pid, 'SIGKILL');
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('when the page is served, then it shows these blocks, and the generated tables list every event kind and every attempt of the schedule', async () => {
    const res = await fetch(`${server.url}/docs/webhooks`);
    assert.equal(res.status, 200);
    const html = await res.text();
    const shown = [...html.matchAll(/<pre><code[^>]*>([^]*?)<\/code><\/pre>/g)].map((m) => decodeHtml(m[1]!));
    assert.deepEqual(shown, fences.map((f) => f.code));
    assert.doesNotMatch(html, /\{\{/);
    const kinds = [...html.matchAll(/<tr id="([a-z_.]+)"><td><code>/g)].map((m) => m[1]);
    assert.deepEqual(kinds, [...EVENT_TYPES]);
    assert.match(html, /<tr id="pet\.status_changed">[^]*?<code>data\.previousStatus<\/code>: PetStatus[^]*?<\/tr>/);
    const schedule = html.split('<table class="retry-schedule">')[1]?.split('</table>')[0] ?? '';
    assert.equal(schedule.match(/<tr><td>\d+<\/td>/g)?.length, DEFAULT_WEBHOOK_RETRY_SCHEDULE.length);
    assert.match(schedule, /<tr><td>3<\/td><td>5 min after attempt 2<\/td><td>5 min<\/td><\/tr>/);
    assert.match(schedule, /<tr><td>10<\/td><td>24 h after attempt 9<\/td><td>3.1 days<\/td><\/tr>/);
  });

  test('when the example delivery body is checked against the served document, then it is an Event', async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as { components: object };
    const ajv = new Ajv({ strict: false, validateFormats: false });
    ajv.addSchema({ components: doc.components }, 'doc');
    const validate = ajv.compile({ $ref: 'doc#/components/schemas/Event' });
    const examples = fences.filter((f) => f.lang === 'json');
    assert.equal(examples.length, 1);
    const example: unknown = JSON.parse(examples[0]!.code);
    assert.ok(validate(example), ajv.errorsText(validate.errors));
    assert.ok(!validate({ ...(example as object), type: 'pet.created' }), 'the check can fail: previousStatus belongs to pet.status_changed only');
  });

  test('when the shell blocks run in order with the receiver saved as pasted, then the server delivers to it and it verifies and prints every event', async () => {
    const receivers = fences.filter((f) => f.lang === 'js');
    assert.equal(receivers.length, 1, 'one receiver block');
    writeFileSync(path.join(dir, 'receiver.mjs'), receivers[0]!.code);
    const blocks = fences.filter((f) => f.lang === 'sh' && !f.code.includes('npm start')).map((f) => f.code);
    assert.ok(blocks.length >= 4, `the page has its shell blocks (${blocks.length})`);
    assert.equal(blocks.filter((b) => b.includes('node receiver.mjs &')).length, 1, 'one block starts the receiver');
    // The same commands on this test's ports, with the receiver file where the test saved it.
    const run = blocks.map((block) =>
      block.replaceAll(DOCUMENTED_URL, server.url).replaceAll(DOCUMENTED_RECEIVER, `http://127.0.0.1:${receiverPort}`).replace('node receiver.mjs', `node ${JSON.stringify(path.join(dir, 'receiver.mjs'))}`),
    );
    const script = ['set -eo pipefail', ...run.map((block) => `${block}\nprintf '\\n${DONE}\\n'`), 'wait'].join('\n');
    shell = spawn('bash', ['--noprofile', '--norc'], {
      env: { ...process.env, PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db'), PORT: String(receiverPort) },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    shell.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    shell.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    shell.stdin!.end(`${script}\n`);
    const finished = () => stdout.split(`\n${DONE}\n`).length - 1;
    for (const deadline = Date.now() + 120_000; finished() < blocks.length; await sleep(50)) {
      assert.equal(shell.exitCode, null, `block ${finished() + 1} failed:\n${blocks[finished()]}\n--- stdout:\n${stdout}\n--- stderr:\n${stderr}`);
      assert.ok(Date.now() < deadline, `the blocks did not finish:\n${stdout}\n${stderr}`);
    }
    const outputs = stdout.split(`\n${DONE}\n`);
    for (const [i, output] of outputs.slice(0, blocks.length).entries()) {
      for (const [, status] of output.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)) assert.match(status!, /^2/, `block ${i + 1}:\n${blocks[i]}\n${output}`);
      assert.doesNotMatch(output, /"code":"[a-z_]+","message"/, `block ${i + 1} printed an error:\n${output}`);
    }

    const key = /^psk_live_[0-9A-Za-z]+$/m.exec(stdout)?.[0];
    assert.ok(key, 'the key block printed a key');
    const endpoint = JSON.parse(/^\{"id":"we_.*$/m.exec(stdout)?.[0] ?? 'null') as { id: string; url: string; secret: string } | null;
    assert.ok(endpoint, `the registration printed the endpoint:\n${stdout}`);
    assert.equal(endpoint.url, `http://127.0.0.1:${receiverPort}/webhooks`);
    assert.match(endpoint.secret, /^whsec_/);
    // The receiver runs in the background: on a loaded machine it may print its line after the last block.
    const listening = new RegExp(`^receiver listening on http://127\\.0\\.0\\.1:${receiverPort}/webhooks$`, 'm');
    for (const deadline = Date.now() + 30_000; !listening.test(stdout) && Date.now() < deadline; ) await sleep(50);
    assert.match(stdout, listening);

    // The log holds the events of the blocks; the receiver printed each one, verified, once.
    const events = (await (await fetch(`${server.url}/v1/events`, { headers: { authorization: `Bearer ${key}` } })).json()) as Array<{ id: string; type: string; sequence: number }>;
    assert.deepEqual(events.map((e) => e.type).sort(), ['order.placed', 'pet.created', 'pet.status_changed']);
    const expected = events.map((e) => `verified ${e.type} ${e.id} (sequence ${e.sequence})`);
    for (const deadline = Date.now() + 10_000; !expected.every((line) => stdout.includes(`${line}\n`)); await sleep(50)) {
      assert.ok(Date.now() < deadline, `the receiver did not print every event:\n${expected.join('\n')}\n--- stdout:\n${stdout}\n--- stderr:\n${stderr}`);
    }
    assert.equal(stdout.match(/verified /g)?.length, 3, 'each event printed once');
    // The server saw the receiver's 204 for each.
    for (const deadline = Date.now() + 10_000; ; await sleep(100)) {
      const res = await fetch(`${server.url}/v1/webhook-endpoints/${endpoint.id}/deliveries?status=succeeded`, { headers: { authorization: `Bearer ${key}` } });
      const succeeded = (await res.json()) as Array<{ lastResponseStatus: number }>;
      if (succeeded.length === 3) {
        assert.deepEqual(succeeded.map((d) => d.lastResponseStatus), [204, 204, 204]);
        break;
      }
      assert.ok(Date.now() < deadline, `deliveries not recorded as succeeded: ${JSON.stringify(succeeded)}`);
    }

    // The receiver refuses what it must: only the delivery signed with its secret, now, as sent, is accepted.
    const receiverUrl = `http://127.0.0.1:${receiverPort}/webhooks`;
    const body = JSON.stringify({ id: 'evt_forged', type: 'pet.created', createdAt: new Date().toISOString(), sequence: 99, data: {} });
    const signed = (secret: string, at: Date, id = 'evt_forged') => ({
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, at, body),
    });
    const post = async (headers: Record<string, string>, payload = body) => (await fetch(receiverUrl, { method: 'POST', headers, body: payload })).status;
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const { 'webhook-signature': _dropped, ...unsigned } = signed(endpoint.secret, new Date());
    assert.equal(await post(signed(endpoint.secret, new Date()), body.replace('99', '98')), 400, 'a tampered body');
    assert.equal(await post(signed(other, new Date())), 400, 'another secret');
    assert.equal(await post(signed(endpoint.secret, new Date(Date.now() - 301_000))), 400, 'more than 5 minutes old');
    assert.equal(await post(unsigned), 400, 'no signature');
    assert.equal(await post({ ...signed(endpoint.secret, new Date()), 'webhook-timestamp': 'soon' }), 400, 'a timestamp that is not a number');
    // Two signatures (a rotation), ours second: accepted.
    const good = signed(endpoint.secret, new Date());
    assert.equal(await post({ ...good, 'webhook-signature': `${signed(other, new Date())['webhook-signature']} ${good['webhook-signature']}` }), 204);
    for (const deadline = Date.now() + 2000; !stdout.includes('verified pet.created evt_forged (sequence 99)\n'); await sleep(20)) {
      assert.ok(Date.now() < deadline, 'the accepted one is printed');
    }
    assert.equal(stdout.match(/evt_forged/g)?.length, 1, 'only the accepted delivery is printed');
  });

  test('when the TypeScript receiver is saved in the repository as pasted, then it type-checks, runs with tsx, accepts signed deliveries once each and refuses forged ones with 400', async (t) => {
    const blocks = fences.filter((f) => f.lang === 'ts');
    assert.equal(blocks.length, 1, 'one TypeScript receiver');
    // In the repository, as the page says, so that @petstore/client resolves (the workspace's).
    mkdirSync(path.resolve('.tmp'), { recursive: true }); // absent in a fresh clone when this file runs alone
    const here = mkdtempSync(path.join(path.resolve('.tmp'), 'receiver-ts-'));
    t.after(() => rmSync(here, { recursive: true, force: true }));
    const file = path.join(here, 'receiver.ts');
    writeFileSync(file, blocks[0]!.code);
    const tsc = spawn(process.execPath, [path.resolve('node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let diagnostics = '';
    tsc.stdout!.on('data', (c: Buffer) => (diagnostics += c.toString()));
    tsc.stderr!.on('data', (c: Buffer) => (diagnostics += c.toString()));
    assert.equal(await new Promise((resolve) => tsc.on('close', resolve)), 0, `tsc:\n${diagnostics}`);

    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const port = await freePort();
    const receiver = spawn(process.execPath, ['--import', 'tsx', file], { env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => receiver.kill('SIGKILL'));
    let out = '';
    receiver.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    receiver.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    for (const deadline = Date.now() + 20_000; !out.includes(`receiver listening on http://127.0.0.1:${port}/webhooks`); await sleep(50)) {
      assert.ok(Date.now() < deadline && receiver.exitCode === null, `the receiver did not start:\n${out}`);
    }
    const body = JSON.stringify({ id: 'evt_ts1', type: 'pet.created', createdAt: new Date().toISOString(), sequence: 7, data: { object: { id: 1, name: 'Rex', categoryId: 1 } } });
    const signed = (key: string, at: Date) => ({
      'content-type': 'application/json',
      'webhook-id': 'evt_ts1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(key).sign('evt_ts1', at, body),
    });
    const post = async (headers: Record<string, string>, payload = body) => (await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers, body: payload })).status;
    assert.equal(await post(signed(secret, new Date())), 204);
    assert.equal(await post(signed(secret, new Date())), 204, 'a repeat is acknowledged');
    assert.equal(await post(signed(secret, new Date()), body.replace('Rex', 'Rax')), 400, 'a tampered body');
    assert.equal(await post(signed(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, new Date())), 400, 'another secret');
    assert.equal(await post(signed(secret, new Date(Date.now() - 301_000))), 400, 'more than 5 minutes old');
    assert.equal(out.match(/^verified pet\.created evt_ts1 \(sequence 7\)$/gm)?.length, 1, `printed once:\n${out}`);
  });

  test("when the README's Events and webhooks section is compared with the page, then each of its blocks is one of the page's (run above)", () => {
    const readme = codeBlocks(readmeSection());
    assert.ok(readme.length >= 3, `the README section has its blocks (${readme.length})`);
    const page = fences.map((f) => f.code);
    for (const block of readme) assert.ok(page.includes(block), `not on /docs/webhooks:\n${block}`);
    assert.ok(readme.some((block) => block.includes('node receiver.mjs &')) && readme.some((block) => block.includes('timingSafeEqual')), 'the whole flow: the receiver and its start');
  });

  test("when the README's configuration table is read, then it has every events and webhooks setting of src/config.ts, the schedule with the default of the code", () => {
    const names = [...new Set([...readFileSync('src/config.ts', 'utf8').matchAll(/\b(PETSTORE_(?:EVENT|WEBHOOK)[A-Z_]*)\b/g)].map((m) => m[1]!))];
    const readme = readFileSync('README.md', 'utf8');
    assert.ok(names.length >= 8, names.join(', '));
    for (const name of names) assert.match(readme, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${name} in the README's configuration table`);
    assert.match(readme, new RegExp(`^\\| \`PETSTORE_WEBHOOK_RETRY_SCHEDULE\` \\| \`${DEFAULT_WEBHOOK_RETRY_SCHEDULE.join(',')}\` \\|`, 'm'));
  });
});
