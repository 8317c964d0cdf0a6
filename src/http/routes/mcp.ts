// /mcp: the API as MCP tools over Streamable HTTP (stateless: each POST is answered on its own),
// for AI agents. Authenticated by the same bearer key; each tool call is an ordinary request to
// this app with that key (app.inject), so the key's scopes, account and rate limit apply as they are.
import type { FastifyInstance } from 'fastify';
import { type ApiTool, toolsOf } from '../../mcp/tools.js';
import type { ApiKeyService } from '../../services/api-keys.js';
import { anyKey, type AuthFailureLimit, createAuthHook } from '../plugins/auth.js';

// The MCP SDK loads at the first /mcp request, not with every server (a fifth of a start-up).
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('../../mcp/server.js')]> | undefined;
const loadSdk = () => (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../../mcp/server.js')]));

export function mcpRoutes(app: FastifyInstance, deps: { apiKeys: ApiKeyService; authFailureLimit: AuthFailureLimit; documents: () => Array<Record<string, unknown>> }): void {
  let tools: ApiTool[] | undefined;
  const toolsNow = () =>
    (tools ??= toolsOf(deps.documents().map((document, i) => ({ document, basePath: i === 0 ? '/v1' : '/example/v1' }))));

  // The API's own authentication (401, and 429 for an address that keeps failing); any valid key
  // passes, since each tool call is checked for its scope by the API itself.
  const onRequest = createAuthHook(deps.apiKeys, deps.authFailureLimit);
  app.post('/mcp', { schema: { hide: true, ...anyKey }, onRequest }, async (request, reply) => {
    const authorization = request.headers.authorization;
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadSdk();
    const server = createMcpServer(toolsNow(), async ({ method, path, headers, body }) => {
      const answer = await app.inject({ method: method as 'GET', url: path, headers: { ...headers, authorization: authorization!, 'x-forwarded-for': request.ip }, ...(body !== undefined ? { payload: body } : {}) });
      return { status: answer.statusCode, text: answer.body };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
  // Stateless: GET (a server-sent stream) and DELETE (a session) answer 405 by the app's own rule.
}
