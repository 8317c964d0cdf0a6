// /docs/agents works as pasted, against a fresh built server: the page names both ways to connect
// (Streamable HTTP at /mcp with the bearer key, `petstore mcp` over stdio); its JS block, saved as
// agent.mjs in this folder as the page says, runs and prints the tools and the account's pets; its
// desktop config, started by the SDK's StdioClientTransport as a desktop client would (from another
// folder, with only the SDK's default environment), serves the tools; its flags and URLs are the
// CLI's (`petstore mcp --help`) and the server's. ~5 s.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { PAGES_DIR } from '../../src/http/portal/plugin.js';
import { type Block, markdownBlocks, servedBlocks } from '../helpers/doc-blocks.js';
import { cli, createAccountWithKey, httpRequest, type ServerProcess, startServerProcess } from '../helpers/process.js';

/** The address the page is written for (`npm start`'s default). */
const DOCUMENTED_URL = 'http://127.0.0.1:8080';
/** The config's stand-ins for the reader's own values. */
const PLACEHOLDER_CHECKOUT = '/path/to/petstore-api';
const PLACEHOLDER_KEY = 'psk_live_…';

const blocks = markdownBlocks(readFileSync(path.join(PAGES_DIR, 'agents.md'), 'utf8'));
const only = (lang: string): Block => {
  const found = blocks.filter((b) => b.lang === lang);
  assert.equal(found.length, 1, `one ${lang} block`);
  return found[0]!;
};

describe('/docs/agents', () => {
  let dir: string;
  let server: ServerProcess;
  let key: string;
  let html: string;
  let operations: string[];
  let pets: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'petstore-agents-doc-'));
    const env = { PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db') };
    server = await startServerProcess(env);
    ({ key } = await createAccountWithKey(env));
    const created = await httpRequest(server.url, 'POST', '/v1/pets', { key, body: { name: 'Agent Rex', categoryId: 1, status: 'available' } });
    assert.equal(created.status, 201);
    const res = await fetch(`${server.url}/docs/agents`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    html = await res.text();
    operations = [];
    for (const docPath of ['/v1/openapi.json', '/example/v1/openapi.json']) {
      const doc = (await httpRequest(server.url, 'GET', docPath)).body as { paths: Record<string, Record<string, { operationId?: string }>> };
      for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) if (op.operationId) operations.push(op.operationId);
    }
    // What GET /v1/pets?limit=5 answers, as the page says the example prints it.
    const listed = await fetch(`${server.url}/v1/pets?limit=5`, { headers: { authorization: `Bearer ${key}` } });
    pets = await listed.text();
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('when the page is served, then it shows its blocks and names both ways to connect: /mcp with the bearer key, and petstore mcp over stdio', async () => {
    assert.deepEqual(servedBlocks(html), blocks);
    const text = html.replace(/<[^>]+>/g, '');
    assert.match(text, /Streamable HTTP at \/mcp/);
    assert.ok(text.includes(`${DOCUMENTED_URL}/mcp`) && text.includes('Authorization: Bearer'), 'the remote URL and its header');
    assert.match(text, /petstore mcp/);
    assert.ok(only('js').code.includes(`new URL('${DOCUMENTED_URL}/mcp')`), 'the example connects to the URL the page names');
    const config = JSON.parse(only('json').code) as { mcpServers: Record<string, { command: string; args: string[] }> };
    assert.deepEqual(Object.keys(config.mcpServers), ['petstore']);
    // The page's claim about /mcp without a valid key, on this server's route.
    const refused = await httpRequest(server.url, 'POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    assert.equal(refused.status, 401);
    assert.equal((refused.body as { code: string }).code, 'unauthorized');
  });

  test("when the config's flags are compared with `petstore mcp --help`, then each is the command's, and its base URL is the command's default", async () => {
    const { args } = (JSON.parse(only('json').code) as { mcpServers: { petstore: { args: string[] } } }).mcpServers.petstore;
    const help = await cli(['mcp', '--help'], {}, { timeoutMs: 20_000 });
    assert.equal(help.code, 0, help.stderr);
    assert.equal(args[1], 'mcp');
    const flags = args.filter((a) => a.startsWith('--'));
    assert.deepEqual(flags, ['--api-key', '--base-url']);
    for (const flag of flags) assert.ok(help.stdout.includes(flag), `${flag} in:\n${help.stdout}`);
    const baseUrl = args[args.indexOf('--base-url') + 1];
    assert.equal(baseUrl, `${DOCUMENTED_URL}/v1`);
    assert.ok(help.stdout.includes(`(default ${baseUrl})`), `the default base URL:\n${help.stdout}`);
  });

  test('when the JS block is saved as agent.mjs in this folder and run with KEY set, then it prints the tool names and the pets as GET /v1/pets?limit=5 returns them', async (t) => {
    // In the repository, as the page says, so that the SDK resolves (the project's dependency).
    mkdirSync(path.resolve('.tmp'), { recursive: true });
    const here = mkdtempSync(path.join(path.resolve('.tmp'), 'agent-'));
    t.after(() => rmSync(here, { recursive: true, force: true }));
    writeFileSync(path.join(here, 'agent.mjs'), only('js').code.replaceAll(DOCUMENTED_URL, server.url));
    const child = spawn(process.execPath, ['agent.mjs'], { cwd: here, env: { ...process.env, KEY: key }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code] = (await once(child, 'close')) as [number | null];
    clearTimeout(timer);
    assert.equal(code, 0, `agent.mjs:\n${stdout}\n${stderr}`);
    const [names, listed, ...rest] = stdout.trimEnd().split('\n');
    assert.deepEqual(names!.split(' ').sort(), [...operations].sort());
    assert.equal(listed, pets);
    assert.match(listed!, /"name":"Agent Rex"/);
    assert.deepEqual(rest, []);
  });

  test('when the desktop config is started as a desktop client starts it (another folder, the SDK\'s default environment), then it serves the tools with the key', async () => {
    const { command, args } = (JSON.parse(only('json').code) as { mcpServers: { petstore: { command: string; args: string[] } } }).mcpServers.petstore;
    assert.ok(args[0]!.startsWith(`${PLACEHOLDER_CHECKOUT}/`) && args.includes(PLACEHOLDER_KEY), `the placeholders a reader fills in: ${args.join(' ')}`);
    const filled = args.map((arg) => arg.replace(PLACEHOLDER_CHECKOUT, process.cwd()).replace(PLACEHOLDER_KEY, key).replace(DOCUMENTED_URL, server.url));
    const transport = new StdioClientTransport({ command, args: filled, cwd: dir, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const client = new Client({ name: 'desktop-like', version: '1.0.0' });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      assert.equal(tools.length, operations.length, stderr);
      const getPet = tools.find((tool) => tool.name === 'getPet');
      assert.match(getPet?.description ?? '', /DEPRECATED\. It will be removed on \d{4}-\d{2}-\d{2}/, 'the page: deprecated operations say so, with their removal date');
      const result = (await client.callTool({ name: 'listPets', arguments: { limit: 5 } })) as { content: Array<{ text: string }> };
      assert.equal(result.content[0]!.text, pets);
    } finally {
      await client.close();
    }
  });
});
