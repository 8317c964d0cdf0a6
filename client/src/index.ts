// @petstore/client: the typed Petstore API client. Everything public is exported here.
export { Petstore, type PetstoreOptions, DEFAULT_BASE_URL } from './petstore.js';
export { PetstoreError, type PetstoreErrorInit, type PetstoreErrorCode, type ServerErrorCode, type ClientErrorCode } from './errors.js';
export type { Page, WriteOptions, Fetch } from './core.js';
export {
  type Pets,
  type Pet,
  type NewPet,
  type PetStatus,
  type PetPatch,
  type ConditionalOptions,
  type ListPetsParams,
  type ListAllPetsParams,
} from './resources/pets.js';
export { etagOf } from './etags.js';
export { type Categories, type Category, type CategoryConditions, type ListCategoriesParams, type InventoryResource, type Inventory } from './resources/categories.js';
export {
  type Orders,
  type Order,
  type NewOrder,
  type OrderStatus,
  type ListOrdersParams,
  type ListAllOrdersParams,
} from './resources/orders.js';
export {
  type Messages,
  type Message,
  type MessageStatus,
  type ListMessagesParams,
  type ListAllMessagesParams,
  type WaitOptions,
} from './resources/messages.js';
export { type Events, type ListEventsParams, type ListAllEventsParams } from './resources/events.js';
export type { StreamEventsParams } from './event-stream.js';
export {
  type WebhookEndpoints,
  type WebhookEndpoint,
  type CreatedWebhookEndpoint,
  type NewWebhookEndpoint,
  type WebhookEndpointUpdate,
  type RotatedSecret,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type ListWebhookEndpointsParams,
  type ListWebhookDeliveriesParams,
} from './resources/webhook-endpoints.js';
export {
  type ApiKeys,
  type ApiKey,
  type ApiKeyScope,
  type CreatedApiKey,
  type NewApiKey,
  type RollApiKeyOptions,
  type ListApiKeysParams,
  type AuditLog,
  type AuditEntry,
  type ListAuditLogParams,
  type ListAllAuditLogParams,
} from './resources/api-keys.js';
export {
  verifyWebhook,
  type VerifyWebhookOptions,
  type WebhookHeaders,
  type Event,
  type EventType,
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
} from './webhooks.js';
