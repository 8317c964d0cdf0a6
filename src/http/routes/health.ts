import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ServiceUnavailableError } from '../../errors.js';
import type { Store } from '../../store/types.js';
import { DEPRECATION_DOC_PATH } from '../deprecation.js';
import { HealthBody } from '../responses.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ store: Store }> = async (app, { store }) => {
  // Liveness: the process answers. No store call, so a database outage never restarts pods.
  app.get('/healthz', { schema: { response: { 200: HealthBody } } }, async () => ({ status: 'ok' }));

  // Readiness: the store answers; load balancers stop routing here while it does not.
  app.get('/readyz', { schema: { response: { 200: HealthBody } } }, async (request) => {
    try {
      await store.ping();
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed');
      throw new ServiceUnavailableError('The database is not reachable.');
    }
    return { status: 'ready' };
  });

  app.get(DEPRECATION_DOC_PATH, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .send(
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>Petstore API deprecations</title>' +
          '<h1>Deprecations</h1><h2 id="getPet">GET /v1/pets/{petId}</h2>' +
          '<p>Deprecated since 21 November 2026. Removed on <strong>5 December 2030</strong> (Sunset: Thu, 05 Dec 2030 00:00:00 GMT); ' +
          'from then on it answers <code>410</code> with code <code>gone</code>.</p>' +
          '<p>Replacement: <code>GET /v1/pets</code> with the <code>status</code> filter.</p></html>',
      ),
  );
};
