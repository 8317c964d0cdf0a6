// `petstore.webhookEndpoints`: where events are delivered, their secrets and their deliveries.
// The server has no Idempotency-Key on these operations, so the creating and rotating calls are
// not retried after a lost answer (a repeat would make a second endpoint, or a second rotation
// that drops the secret of the first); PATCH, DELETE and retries of a delivery are repeatable.
import type { Core, Page } from '../core.js';
import type { components, operations } from '../generated/petstore.js';

export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
/** The endpoint as created, with its signing `secret` (`whsec_…`): shown only in this answer. */
export type CreatedWebhookEndpoint = components['schemas']['CreatedWebhookEndpoint'];
export type NewWebhookEndpoint = components['schemas']['NewWebhookEndpoint'];
export type WebhookEndpointUpdate = components['schemas']['WebhookEndpointUpdate'];
/** The new secret and until when the previous one still signs deliveries too. */
export type RotatedSecret = components['schemas']['RotatedSecret'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type WebhookDeliveryStatus = components['schemas']['WebhookDeliveryStatus'];
export type ListWebhookEndpointsParams = NonNullable<operations['listWebhookEndpoints']['parameters']['query']>;
export type ListWebhookDeliveriesParams = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;

const ENDPOINTS = '/webhook-endpoints';
const endpointPath = (id: string) => `${ENDPOINTS}/${encodeURIComponent(id)}`;

/** @experimental `x-stability: experimental` in the API document: the shape may still change. */
export class WebhookEndpoints {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Registers an endpoint (`createWebhookEndpoint`); the answer's `secret` is shown only now.
   * Not retried after a network error or timeout: list the endpoints to see whether it was made.
   */
  async create(endpoint: NewWebhookEndpoint): Promise<CreatedWebhookEndpoint> {
    return (await this.#core.request<CreatedWebhookEndpoint>({ method: 'POST', path: ENDPOINTS, body: endpoint, repeatable: false })).body;
  }

  /** One page of endpoints, oldest first (without secrets); pass `nextCursor` back as `cursor` for the next. */
  list(params: ListWebhookEndpointsParams = {}): Promise<Page<WebhookEndpoint>> {
    return this.#core.page<WebhookEndpoint>(ENDPOINTS, { limit: params.limit, cursor: params.cursor });
  }

  async get(id: string): Promise<WebhookEndpoint> {
    return (await this.#core.request<WebhookEndpoint>({ method: 'GET', path: endpointPath(id) })).body;
  }

  /** Changes the fields given (`eventTypes: null`: every kind; `description: null` removes it; `disabled`). */
  async update(id: string, changes: WebhookEndpointUpdate): Promise<WebhookEndpoint> {
    return (await this.#core.request<WebhookEndpoint>({ method: 'PATCH', path: endpointPath(id), body: changes })).body;
  }

  /** Deletes the endpoint with its deliveries (204). A retry after a lost answer may fail with 404 `not_found`. */
  async delete(id: string): Promise<void> {
    await this.#core.request<undefined>({ method: 'DELETE', path: endpointPath(id) });
  }

  /**
   * A new signing secret, shown only now; until `previousSecretExpiresAt` deliveries carry a
   * signature under each secret. Not retried after a network error or timeout (see above).
   */
  async rotateSecret(id: string): Promise<RotatedSecret> {
    return (await this.#core.request<RotatedSecret>({ method: 'POST', path: `${endpointPath(id)}/rotate-secret`, repeatable: false })).body;
  }

  /** One page of the endpoint's deliveries, oldest event first, optionally by `status`. */
  deliveries(id: string, params: ListWebhookDeliveriesParams = {}): Promise<Page<WebhookDelivery>> {
    return this.#core.page<WebhookDelivery>(`${endpointPath(id)}/deliveries`, { limit: params.limit, status: params.status, cursor: params.cursor });
  }

  /** Queues an attempt of the delivery now (202): the answer is the delivery, `pending`. */
  async retryDelivery(id: string, deliveryId: string): Promise<WebhookDelivery> {
    const path = `${endpointPath(id)}/deliveries/${encodeURIComponent(deliveryId)}/retry`;
    return (await this.#core.request<WebhookDelivery>({ method: 'POST', path })).body;
  }
}
