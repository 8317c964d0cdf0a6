// `petstore mcp`: the API's tools (src/mcp/tools.ts) over stdio for desktop MCP clients, calling
// the API over HTTP with the given key; the tools come from the server's own served documents.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from '../mcp/server.js';
import { type ToolSource, toolsOf } from '../mcp/tools.js';

export async function runMcpStdio(apiKey: string, baseUrl: string): Promise<void> {
  const api = new URL(baseUrl.replace(/\/$/, ''));
  const origin = api.origin;
  const sources: ToolSource[] = [];
  for (const basePath of [api.pathname, api.pathname.replace(/\/v1$/, '/example/v1')]) {
    const res = await fetch(`${origin}${basePath}/openapi.json`);
    if (res.ok) sources.push({ document: (await res.json()) as Record<string, unknown>, basePath });
    else if (sources.length === 0) throw new Error(`GET ${origin}${basePath}/openapi.json answered ${res.status}: is --base-url the API's URL ending in /v1?`);
  }
  const server = createMcpServer(toolsOf(sources), async ({ method, path, headers, body }) => {
    const res = await fetch(origin + path, { method, headers: { ...headers, authorization: `Bearer ${apiKey}` }, ...(body !== undefined ? { body } : {}) });
    return { status: res.status, text: await res.text() };
  });
  await server.connect(new StdioServerTransport());
  await new Promise<void>((resolve) => {
    server.onclose = resolve;
    // The client closing our stdin is how it ends the session (the SDK's transport does not
    // listen for it): close, so that the command returns 0 instead of Node ending it with 13.
    process.stdin.once('end', () => void server.close());
  });
}
