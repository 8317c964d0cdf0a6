// Webhook endpoints and their deliveries: registration (URL policy, the 16-endpoint limit, the
// secret shown once), changes, secret rotation with an overlap, and delivery listing and retry.
// Attempts themselves are made by webhook-worker.ts.
import type { Clock } from '../clock.js';
import { InvalidWebhookUrlError, NotFoundError, WebhookEndpointDisabledError, WebhookEndpointLimitError } from '../errors.js';
import {
  DELIVERY_ERRORS,
  type DeliveryError,
  type DeliveryStatus,
  EVENT_TYPES,
  eventBit,
  type EventType,
  type NewWebhookEndpoint,
  WEBHOOK_ENDPOINTS_MAX,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointUpdate,
  typesOf,
} from '../schemas/events.js';
import { randomBase62 } from './ids.js';
import type { AlsoInTransaction, StoredDelivery, StoredWebhookEndpoint, WebhookEndpointPatch, WebhookRepository } from '../store/webhooks.js';
import type { AuditLogRepository } from '../store/audit-log.js';
import { type AuditContext, auditEntry, CLI_ACTOR } from './audit.js';
import type { AuditAction } from '../schemas/audit.js';
import { newWebhookSecret } from '../webhooks/signing.js';
import { type CursorCodec, pageBounds, pageOf, type PageRequest } from './cursor.js';

/** Every kind, including kinds added later. */
export const ALL_EVENTS_MASK = -1;

/** The registration-time URL check: the normalized URL (the one called) when acceptable, else why not (and how to fix it). */
export type UrlCheck = (url: string) => { url: string } | { reason: string };

/** The URL as called: stored URLs are normalized since registration; older rows may not be. */
function calledUrl(stored: string): string {
  try {
    return new URL(stored).href;
  } catch {
    return stored;
  }
}

export const maskOf = (types: readonly EventType[] | null | undefined) =>
  types == null ? ALL_EVENTS_MASK : types.reduce((mask, type) => mask | eventBit(type), 0);

export function publicEndpoint(e: StoredWebhookEndpoint): WebhookEndpoint {
  const endpoint: WebhookEndpoint = {
    id: e.id,
    url: calledUrl(e.url),
    eventTypes: e.eventMask === ALL_EVENTS_MASK ? [...EVENT_TYPES] : typesOf(e.eventMask),
    allEventTypes: e.eventMask === ALL_EVENTS_MASK,
    disabled: e.disabled,
    createdAt: e.createdAt,
  };
  if (e.description !== undefined) endpoint.description = e.description;
  if (e.disabledReason !== undefined) endpoint.disabledReason = e.disabledReason;
  return endpoint;
}

// What rows written before lastError held only a category said, by their wording (sender.ts,
// webhook-worker.ts of that time): their detail is never shown.
const LEGACY_ERRORS: Array<[RegExp, DeliveryError]> = [
  [/^connection refused by policy/, 'address_not_allowed'],
  [/^DNS: /, 'dns_failure'],
  [/^no response within/, 'timeout'],
  [/^TLS: /, 'tls_error'],
  [/^invalid HTTP response: HPE_HEADER_OVERFLOW/, 'response_too_large'],
  [/^invalid HTTP response/, 'invalid_response'],
  [/^The receiver answered/, 'http_status'],
  [/^The endpoint was disabled/, 'endpoint_disabled'],
];

export function deliveryError(stored: string): DeliveryError {
  if ((DELIVERY_ERRORS as readonly string[]).includes(stored)) return stored as DeliveryError;
  return LEGACY_ERRORS.find(([pattern]) => pattern.test(stored))?.[1] ?? 'connection_failed';
}

export function publicDelivery(d: StoredDelivery): WebhookDelivery {
  const delivery: WebhookDelivery = { id: d.id, eventId: d.eventId, eventType: d.eventType, status: d.status, attempts: d.attempts };
  if (d.lastAttemptAt !== undefined) delivery.lastAttemptAt = d.lastAttemptAt;
  if (d.lastResponseStatus !== undefined) delivery.lastResponseStatus = d.lastResponseStatus;
  if (d.lastError !== undefined) delivery.lastError = deliveryError(d.lastError);
  if (d.nextAttemptAt !== undefined) delivery.nextAttemptAt = d.nextAttemptAt;
  return delivery;
}

export function createWebhookService(deps: {
  webhooks: Pick<
    WebhookRepository,
    'createEndpoint' | 'getEndpoint' | 'listEndpoints' | 'updateEndpoint' | 'deleteEndpoint' | 'rotateSecret' | 'listDeliveries' | 'retryDelivery'
  >;
  auditLog: Pick<AuditLogRepository, 'append'>;
  clock: Clock;
  endpointCursors: CursorCodec<string>;
  deliveryCursors: CursorCodec<DeliveryStatus>;
  checkUrl: UrlCheck;
  secretOverlapSeconds: number;
  /** Called when a delivery is due now (the app wakes its worker). */
  due?: () => void;
}) {
  const { webhooks, auditLog, clock, endpointCursors, deliveryCursors, checkUrl } = deps;
  /** The audit entry of a change to endpoint `id`, written in the change's transaction. */
  const audited =
    (accountId: string, context: AuditContext, action: AuditAction, id: string): AlsoInTransaction =>
    (tx) =>
      auditLog.append(tx, accountId, auditEntry(context, action, { type: 'webhook_endpoint', id }, clock.now()));
  const now = () => new Date(clock.now()).toISOString();
  const notFound = (id: string) => new NotFoundError(`No webhook endpoint with id ${id}. List yours with GET /v1/webhook-endpoints.`);
  const checked = (url: string) => {
    const checkedUrl = checkUrl(url);
    if ('reason' in checkedUrl) throw new InvalidWebhookUrlError(checkedUrl.reason);
    return checkedUrl.url;
  };
  const endpointOf = async (accountId: string, id: string) => {
    const endpoint = await webhooks.getEndpoint(accountId, id);
    if (!endpoint) throw notFound(id);
    return endpoint;
  };

  return {
    async create(accountId: string, input: NewWebhookEndpoint, context: AuditContext = CLI_ACTOR): Promise<WebhookEndpoint & { secret: string }> {
      const secret = newWebhookSecret();
      const id = `we_${randomBase62(24)}`;
      const created = await webhooks.createEndpoint(
        accountId,
        { id, url: checked(input.url), eventMask: maskOf(input.eventTypes), description: input.description, secret, createdAt: now() },
        WEBHOOK_ENDPOINTS_MAX,
        audited(accountId, context, 'webhook_endpoint.created', id),
      );
      if (!created) throw new WebhookEndpointLimitError(WEBHOOK_ENDPOINTS_MAX);
      return { ...publicEndpoint(created), secret };
    },

    async get(accountId: string, id: string): Promise<WebhookEndpoint> {
      return publicEndpoint(await endpointOf(accountId, id));
    },

    async list(accountId: string, page: { limit: number; cursor?: string | undefined }) {
      const request = { limit: page.limit, status: undefined, cursor: page.cursor };
      const { afterId, limit } = pageBounds(endpointCursors, accountId, request);
      const rows = await webhooks.listEndpoints({ accountId, limit, afterSeq: afterId });
      const { items, nextCursor } = pageOf(endpointCursors, accountId, request, rows, (e) => e.seq);
      return { endpoints: items.map(publicEndpoint), nextCursor };
    },

    async update(accountId: string, id: string, update: WebhookEndpointUpdate, context: AuditContext = CLI_ACTOR): Promise<WebhookEndpoint> {
      const patch: WebhookEndpointPatch = {};
      if (update.url !== undefined) patch.url = checked(update.url);
      if (update.eventTypes !== undefined) patch.eventMask = maskOf(update.eventTypes);
      if (update.description !== undefined) patch.description = update.description;
      if (update.disabled !== undefined) patch.disabled = update.disabled;
      const updated = await webhooks.updateEndpoint(accountId, id, patch, audited(accountId, context, 'webhook_endpoint.updated', id));
      if (!updated) throw notFound(id);
      return publicEndpoint(updated);
    },

    async remove(accountId: string, id: string, context: AuditContext = CLI_ACTOR): Promise<void> {
      if (!(await webhooks.deleteEndpoint(accountId, id, audited(accountId, context, 'webhook_endpoint.deleted', id)))) throw notFound(id);
    },

    async rotateSecret(accountId: string, id: string, context: AuditContext = CLI_ACTOR): Promise<{ secret: string; previousSecretExpiresAt: string }> {
      const secret = newWebhookSecret();
      const expires = clock.now() + deps.secretOverlapSeconds * 1000;
      if (!(await webhooks.rotateSecret(accountId, id, secret, expires, audited(accountId, context, 'webhook_endpoint.secret_rotated', id)))) throw notFound(id);
      return { secret, previousSecretExpiresAt: new Date(expires).toISOString() };
    },

    async deliveries(accountId: string, endpointId: string, page: PageRequest<DeliveryStatus>) {
      await endpointOf(accountId, endpointId);
      // Signed for the endpoint too: another endpoint's cursor would skip this one's deliveries.
      const scope = `${accountId}\0${endpointId}`;
      const { afterId, limit } = pageBounds(deliveryCursors, scope, page);
      const rows = await webhooks.listDeliveries({ accountId, endpointId, limit, status: page.status, afterSeq: afterId });
      const { items, nextCursor } = pageOf(deliveryCursors, scope, page, rows, (d) => d.eventSeq);
      return { deliveries: items.map(publicDelivery), nextCursor };
    },

    async retryDelivery(accountId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
      const endpoint = await endpointOf(accountId, endpointId);
      if (endpoint.disabled) throw new WebhookEndpointDisabledError(endpointId);
      const delivery = await webhooks.retryDelivery(accountId, endpointId, deliveryId, clock.now());
      if (!delivery) throw new NotFoundError(`No delivery with id ${deliveryId} for endpoint ${endpointId}. List them with GET /v1/webhook-endpoints/${endpointId}/deliveries.`);
      deps.due?.();
      return publicDelivery(delivery);
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
