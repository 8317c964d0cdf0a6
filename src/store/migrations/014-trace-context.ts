// The trace context of the request that made an event or queued a message (a W3C traceparent),
// so a webhook delivery or a message's delivery links back to it, from any instance and after
// any restart. NULL when tracing was off. An event row holding a run keeps one entry per event,
// comma-separated (an entry empty for an event without one).
import type { Migration } from './migration.js';

export const traceContext: Migration = {
  version: 14,
  name: 'trace context',
  sqlite: `
    ALTER TABLE events ADD COLUMN trace TEXT;
    ALTER TABLE messages ADD COLUMN trace TEXT;
  `,
  postgres: `
    ALTER TABLE events ADD COLUMN trace text;
    ALTER TABLE messages ADD COLUMN trace text;
  `,
};
