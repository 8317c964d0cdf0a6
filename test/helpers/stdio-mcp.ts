// `petstore mcp` (the built CLI) as a desktop client starts it: the SDK's StdioClientTransport
// runs the command with its arguments and the SDK's default environment, against a built server
// on a fresh SQLite file with one account and key.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createAccountWithKey, type ServerProcess, startServerProcess } from './process.js';

const BIN = path.resolve('bin/petstore.js');

export interface StdioMcp {
  server: ServerProcess;
  key: string;
  transport: StdioClientTransport;
  client: Client;
  /** What the mcp process wrote to stderr so far. */
  stderr(): string;
  close(): Promise<void>;
}

export async function startStdioMcp(name: string): Promise<StdioMcp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const env = { PETSTORE_DATABASE_URL: path.join(dir, 'petstore.db') };
  const server = await startServerProcess(env);
  const { key } = await createAccountWithKey(env);
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--api-key', key, '--base-url', `${server.url}/v1`], stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return {
    server,
    key,
    transport,
    client,
    stderr: () => stderr,
    async close() {
      await client.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
