// `petstore mcp --api-key … --base-url …` (the built CLI) over stdio, driven by the official SDK's
// own StdioClientTransport and Client, against the built server over HTTP: the tools are one per
// operation of both served documents; list and create called as tools (create twice with the same
// arguments: one pet); a refused call is a tool error carrying status, code and message; closing
// the client ends the process. One server, one mcp process. ~3 s.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { httpRequest, type ServerProcess } from './helpers/process.js';
import { type StdioMcp, startStdioMcp } from './helpers/stdio-mcp.js';

type CallResult = { isError?: boolean; content: Array<{ type: string; text: string }> };

describe('petstore mcp (stdio)', () => {
  let mcp: StdioMcp;
  let server: ServerProcess;
  let key: string;
  let transport: StdioClientTransport;
  let client: Client;
  const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallResult;

  before(async () => {
    mcp = await startStdioMcp('petstore-stdio-test');
    ({ server, key, transport, client } = mcp);
  });
  after(async () => {
    await mcp?.close();
  });

  test('when the SDK client lists tools, then there is one per operation of both served documents', async () => {
    const { tools } = await client.listTools();
    const operations: string[] = [];
    for (const docPath of ['/v1/openapi.json', '/example/v1/openapi.json']) {
      const doc = (await httpRequest(server.url, 'GET', docPath)).body as { paths: Record<string, Record<string, { operationId?: string }>> };
      for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) if (op.operationId) operations.push(op.operationId);
    }
    assert.ok(operations.includes('sendMessage'), 'the example API\'s operations are counted too');
    assert.equal(tools.length, operations.length, mcp.stderr());
    assert.deepEqual(tools.map((t) => t.name).sort(), operations.sort());
  });

  test('when list and create are called (create twice with the same arguments), then one pet, the API\'s JSON; a refused call is a tool error with its code', async () => {
    const args = { body: { name: 'Stdio Rex', categoryId: 1, status: 'available' } };
    const first = await call('createPet', args);
    assert.equal(first.isError, undefined, first.content[0]?.text);
    const retried = await call('createPet', args);
    assert.equal(retried.content[0]!.text, first.content[0]!.text, 'the repeat gets the first answer');
    const pet = JSON.parse(first.content[0]!.text) as { id: number; name: string };
    assert.equal(pet.name, 'Stdio Rex');

    const listed = await call('listPets', { limit: 10 });
    assert.deepEqual(JSON.parse(listed.content[0]!.text), [pet], 'one pet');
    const direct = await httpRequest(server.url, 'GET', '/v1/pets?limit=10', { key });
    assert.deepEqual(direct.body, [pet], 'the API itself has one pet');

    const refused = await call('getPet', { petId: pet.id + 1000 });
    assert.equal(refused.isError, true);
    const error = JSON.parse(refused.content[0]!.text) as { status: number; code: string; message: string };
    assert.deepEqual(Object.keys(error), ['status', 'code', 'message']);
    assert.equal(error.status, 404);
    assert.equal(error.code, 'not_found');
    assert.ok(error.message.length > 0);
  });

  test('when the client closes stdin, then the process ends by itself at once, with exit code 0', async () => {
    // The SDK keeps its child process private (and forgets it on close): taken before closing.
    const child = (transport as unknown as { _process?: ChildProcess })._process;
    assert.ok(child, 'the transport\'s child process');
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    const started = Date.now();
    await client.close();
    const [code, signal] = await exited;
    // Under 2 s: the SDK waits 2 s for the process to end before it sends SIGTERM.
    assert.ok(Date.now() - started < 1900, `it took ${Date.now() - started} ms to end (the SDK had to signal it)`);
    // 13 would be Node ending the process with the command's run() still pending.
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, mcp.stderr());
  });
});
