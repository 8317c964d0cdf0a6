// /mcp: the API as MCP tools over Streamable HTTP (stateless: each POST is answered on its own),
// for AI agents. Authenticated by the same bearer key; each tool call is an ordinary request to
// this app with that key (app.inject) from the client's own address, so the key's scopes,
// account and rate limit, the audit log and the failed-authentication limit apply as they are.
import type { Readable } from 'node:stream';
import { InvalidRequestError } from '../../errors.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Api, answerHeaders, type ApiRequest, type ApiTool } from '../../mcp/api.js';
import { toolsOf } from '../../mcp/tools.js';
import type { ApiKeyService } from '../../services/api-keys.js';
import { anyKey, type AuthFailureLimit, createAuthHook } from '../plugins/auth.js';

// The MCP SDK loads at the first /mcp request, not with every server (a fifth of a start-up).
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('../../mcp/server.js')]> | undefined;
const loadSdk = () => (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../../mcp/server.js')]));

async function textOf(body: Readable): Promise<string> {
  let text = '';
  for await (const chunk of body) text += String(chunk);
  return text;
}

/** The API inside this process, called as the /mcp request's client: its key and its address. */
function apiFor(app: FastifyInstance, request: FastifyRequest): Api {
  const inject = (call: ApiRequest, payloadAsStream: boolean) =>
    app.inject({
      method: call.method as 'GET',
      url: call.path,
      headers: { ...call.headers, authorization: request.headers.authorization! },
      // request.ip is the client as this server sees it (trusted proxies honoured), not the inject's 127.0.0.1.
      remoteAddress: request.ip,
      ...(call.body !== undefined ? { payload: call.body } : {}),
      payloadAsStream,
    });
  return {
    async send(call) {
      const answer = await inject(call, false);
      return { status: answer.statusCode, text: answer.body, headers: answerHeaders((name) => answer.headers[name]?.toString()) };
    },
    async open(call, signal) {
      const answer = await inject(call, true);
      // Destroying the in-process response is its client going away: the stream ends and frees its slot.
      const close = () => answer.raw.res.destroy();
      if (signal.aborted) close();
      else signal.addEventListener('abort', close, { once: true });
      if (answer.statusCode !== 200) return { status: answer.statusCode, text: await textOf(answer.stream()) };
      return { status: 200, chunks: answer.stream() };
    },
  };
}

/** JSON-RPC messages one POST may carry (batches are from protocol versions before 2025-06-18). */
const MAX_BATCH = 10;

export function mcpRoutes(app: FastifyInstance, deps: { apiKeys: ApiKeyService; authFailureLimit: AuthFailureLimit; documents: () => Array<Record<string, unknown>> }): void {
  let tools: ApiTool[] | undefined;
  const toolsNow = () =>
    (tools ??= toolsOf(deps.documents().map((document, i) => ({ document, basePath: i === 0 ? '/v1' : '/example/v1' }))));

  // The API's own authentication (401, and 429 for an address that keeps failing); any valid key
  // passes, since each tool call is checked for its scope by the API itself.
  const onRequest = createAuthHook(deps.apiKeys, deps.authFailureLimit);
  app.post('/mcp', { schema: { hide: true, ...anyKey }, onRequest }, async (request, reply) => {
    // Protocol messages take no rate-limit token: a batch of them must not be a way around it.
    if (Array.isArray(request.body) && request.body.length > MAX_BATCH) {
      throw new InvalidRequestError(`An MCP batch holds at most ${MAX_BATCH} messages (this one ${request.body.length}): send the rest in further requests.`);
    }
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadSdk();
    const server = createMcpServer(toolsNow(), apiFor(app, request));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    // Fastify writes nothing for a hijacked reply: the headers every answer carries (X-Request-Id,
    // nosniff, and no-store, since answers hold new keys and webhook secrets) go on it here.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
    // The client went away (or the answer is sent): a call in progress is cancelled, closing what it opened.
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
  // Stateless: GET (a server-sent stream) and DELETE (a session) answer 405 by the app's own rule.
}
