import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ServiceUnavailableError } from '../../errors.js';
import type { Store } from '../../store/types.js';
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
    return store.secretsWarning ? { status: 'ready', details: [store.secretsWarning] } : { status: 'ready' };
  });
};
