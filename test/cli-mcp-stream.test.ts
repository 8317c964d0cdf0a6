// `petstore mcp` (the built CLI, stdio) calling streamEvents over HTTP: the call is bounded like
// /mcp's (events with the cursor to continue, or none after waitSeconds), and the stream it opens
// is closed when it returns, so calls beyond the key's stream slots leave them all free. ~3 s.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { httpRequest, type ServerProcess } from './helpers/process.js';
import { openSse } from './helpers/sse.js';
import { type StdioMcp, startStdioMcp } from './helpers/stdio-mcp.js';

type CallResult = { isError?: boolean; content: Array<{ type: string; text: string }> };

describe('petstore mcp (stdio): streamEvents', () => {
  let mcp: StdioMcp;
  let server: ServerProcess;
  let key: string;
  let client: Client;
  const call = async (args: Record<string, unknown>) => {
    const result = (await client.callTool({ name: 'streamEvents', arguments: args })) as CallResult;
    assert.equal(result.isError, undefined, result.content[0]?.text);
    return JSON.parse(result.content[0]!.text) as { events: Array<{ sequence: number }>; after?: number };
  };

  before(async () => {
    mcp = await startStdioMcp('petstore-stdio-stream-test');
    ({ server, key, client } = mcp);
  });
  after(async () => {
    await mcp?.close();
  });

  test('when streamEvents is called over stdio more often than a key has stream slots, then each returns within its wait with the cursor, and every slot is free after', { timeout: 20_000 }, async () => {
    const created = await httpRequest(server.url, 'POST', '/v1/pets', { key, body: { name: 'Stdio', categoryId: 1 } });
    assert.equal(created.status, 201);
    const first = await call({ after: 0, waitSeconds: 5 });
    assert.deepEqual(first.events.map((e) => e.sequence), [1]);
    assert.equal(first.after, 1);
    for (let i = 0; i < 6; i++) {
      const started = Date.now();
      assert.deepEqual(await call({ after: 1, waitSeconds: 0.2 }), { events: [], after: 1 });
      assert.ok(Date.now() - started < 2_000, `returned after ${Date.now() - started} ms`);
    }
    // The server frees a slot when it sees the connection close: give it a moment, then take all five.
    await sleep(200);
    const streams = await Promise.all(Array.from({ length: 5 }, () => openSse(`${server.url}/v1/events/stream`, key)));
    for (const stream of streams) stream.close();
    assert.deepEqual(streams.map((s) => s.status), [200, 200, 200, 200, 200]);
  });
});
