// A webhook attempt as a client span (tracing on): linked to the request whose change made the
// event, with its traceparent sent to the receiver.
import type { ClaimedDelivery } from '../store/webhooks.js';
import type { TracingHooks } from '../tracing/switch.js';

/** The receiver's host, for the span (never the path or query: they may carry the receiver's tokens). */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

/** What an attempt came to, as far as the span tells (webhook-worker.ts' SendResult). */
type Sent = { kind: 'response'; status: number } | { kind: 'error'; category: string };

export function tracedSend<R extends Sent>(tracing: TracingHooks, d: ClaimedDelivery, headers: Record<string, string>, send: () => Promise<R>): Promise<R> {
  const attributes = {
    'http.request.method': 'POST',
    'server.address': hostOf(d.url),
    'petstore.account_id': d.accountId,
    'petstore.webhook.endpoint_id': d.endpointId,
    'petstore.webhook.delivery_id': d.deliveryId,
    'petstore.event.id': d.event.id,
    'petstore.webhook.attempt': d.attempts + 1,
  };
  return tracing.clientSpan('webhook delivery', d.trace, attributes, headers, send, (result): { attributes: Record<string, string | number>; error: boolean } =>
    result.kind === 'response'
      ? { attributes: { 'http.response.status_code': result.status }, error: result.status >= 300 }
      : { attributes: { 'error.type': result.category }, error: true },
  );
}
