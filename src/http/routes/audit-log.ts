// The audit log (experimental): a thin handler over services.audit.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AUDIT_RETENTION_DAYS, AuditEntries, ListAuditLogQuery } from '../../schemas/audit.js';
import { PAGE_LIMIT_DEFAULT, ref } from '../../schemas/index.js';
import type { Services } from '../../services/index.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, nextPageLink, pageLinkHeaders, rateLimitHeaders, stability, success } from '../responses.js';

const AUDIT_PATH = '/v1/audit-log';

export const auditLogRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    AUDIT_PATH,
    {
      schema: {
        operationId: 'listAuditLog',
        ...requiresScope('keys:read'),
        tags: ['animals'],
        summary: 'List the audit log',
        description:
          'One entry per security-relevant change in your account, **oldest first**: keys created, rolled, revoked, an expired ' +
          'key\'s use refused (at most once an hour per key), webhook endpoints created, updated, deleted, their secret rotated. ' +
          'Each is written in the same transaction as its change and never edited; a refused request (400, 403, 404…) writes ' +
          `none. Kept ${AUDIT_RETENTION_DAYS} days. Pass the last \`sequence\` you read as \`after\`, then follow \`Link: <…>; rel="next"\`. Experimental.`,
        ...stability('experimental'),
        querystring: ListAuditLogQuery,
        response: {
          200: success('A page of entries (a bare JSON array).', ref(AuditEntries), pageLinkHeaders(AUDIT_PATH)),
          400: errorResponse(
            'A query parameter is invalid (`limit` not 1–100, `after` not a non-negative integer, both `after` and `cursor`: `invalid_request`) ' +
              'or the cursor is malformed or tampered with (`invalid_cursor`).',
            rateLimitHeaders,
          ),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, after, cursor } = request.query;
      const page = await services.audit.list(accountId(request), { limit, after, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(AUDIT_PATH, limit, undefined, page.nextCursor));
      return page.entries;
    },
  );
};
