// An MCP server over the API's tools (tools.ts), with the official SDK's low-level Server (the
// input schemas are the documents' JSON Schemas, not zod). Used by POST /mcp (Streamable HTTP,
// one stateless server per request) and by `petstore mcp` (stdio).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Api, ApiTool } from './api.js';

export function createMcpServer(tools: readonly ApiTool[], api: Api): Server {
  const server = new Server({ name: 'petstore', version: '1.0.0' }, { capabilities: { tools: {} } });
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map(({ name, description, inputSchema, annotations }) => ({ name, description, inputSchema, annotations })),
  }));
  // extra.signal aborts when the call is cancelled or the transport closes (the client went away).
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool) {
      return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify({ status: 404, code: 'not_found', message: `No tool ${request.params.name}. List the tools with tools/list.` }) }] };
    }
    return tool.call(request.params.arguments ?? {}, api, extra.signal);
  });
  return server;
}
