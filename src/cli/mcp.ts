// `petstore mcp`: the API's tools (src/mcp/tools.ts) over stdio for desktop MCP clients, calling
// the API over HTTP with the given key; the tools come from the server's own served documents.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { answerHeaders, type ApiRequest } from '../mcp/api.js';
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
  const request = ({ method, path, headers, body }: ApiRequest, signal?: AbortSignal) =>
    fetch(origin + path, { method, headers: { ...headers, authorization: `Bearer ${apiKey}` }, ...(body !== undefined ? { body } : {}), ...(signal ? { signal } : {}) });
  const server = createMcpServer(toolsOf(sources), {
    async send(call) {
      const res = await request(call);
      return { status: res.status, text: await res.text(), headers: answerHeaders((name) => res.headers.get(name) ?? undefined) };
    },
    async open(call, signal) {
      // Aborting the fetch closes the connection: the server ends the stream.
      const res = await request(call, signal);
      if (res.status !== 200 || !res.body) return { status: res.status, text: await res.text() };
      return { status: 200, chunks: res.body as unknown as AsyncIterable<Uint8Array> };
    },
  });
  await server.connect(new StdioServerTransport());
  await new Promise<void>((resolve) => {
    server.onclose = resolve;
    // The client closing our stdin is how it ends the session (the SDK's transport does not
    // listen for it): close, so that the command returns 0 instead of Node ending it with 13.
    process.stdin.once('end', () => void server.close());
  });
}
