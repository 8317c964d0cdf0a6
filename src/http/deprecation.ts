// Lifecycle of the deprecated GET /v1/pets/{petId} (RFC 9745 Deprecation, RFC 8594 Sunset).

/** When the operation was announced deprecated: the first v1 release (2026-11-21T00:00:00Z). */
export const GET_PET_DEPRECATED_AT = Date.UTC(2026, 10, 21);
/** From this instant on the operation answers 410 Gone: 2030-12-05T00:00:00Z. */
export const GET_PET_SUNSET_AT = Date.UTC(2030, 11, 5);

export const DEPRECATION_DOC_PATH = '/docs/deprecations';

export const getPetDeprecationHeaders = {
  deprecation: `@${GET_PET_DEPRECATED_AT / 1000}`,
  sunset: new Date(GET_PET_SUNSET_AT).toUTCString(),
  link: `</v1/pets>; rel="successor-version", <${DEPRECATION_DOC_PATH}>; rel="deprecation"; type="text/html"`,
};

const isoInstant = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/**
 * The same lifecycle in the OpenAPI document, as extensions on getPet: /docs/deprecations and
 * the reference read them from the served document, so they hold for any deprecated operation.
 */
export const getPetDeprecationExtensions = {
  'x-deprecated-since': isoInstant(GET_PET_DEPRECATED_AT),
  'x-sunset': isoInstant(GET_PET_SUNSET_AT),
  'x-successor': { operationId: 'listPets', note: 'with the `status` filter' },
};
