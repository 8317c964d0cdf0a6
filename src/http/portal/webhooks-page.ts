// /docs/webhooks: the guide (pages/webhooks.md) with its tables generated from the code that
// decides, so they cannot drift: the event kinds from the event schemas, the retry schedule from
// DEFAULT_WEBHOOK_RETRY_SCHEDULE. The Markdown marks where each goes with a paragraph of its own.
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '../../config.js';
import { EVENT_SCHEMAS } from '../../schemas/events.js';
import { escapeHtml, markdown } from './markdown.js';

export const WEBHOOKS_PLACEHOLDERS = { eventKinds: '{{event-kinds}}', retrySchedule: '{{retry-schedule}}' } as const;

interface DataField {
  $ref?: string;
  anyOf?: DataField[];
  type?: string;
  description?: string;
}

/** A field's shape as a reader names it: `Pet`, `PetStatus or null`. */
function shapeOf(field: DataField): string {
  if (field.$ref) return field.$ref.replace(/#$/, '');
  if (field.anyOf) return field.anyOf.map(shapeOf).join(' or ');
  return field.type ?? 'value';
}

/** One row per event kind: its `type`, what happened, and the fields of its `data`. */
export function eventKindsTable(): string {
  const rows = EVENT_SCHEMAS.map((schema) => {
    const type = (schema.properties.type as { const: string }).const;
    const { description = '' } = schema as { description?: string };
    const fields = Object.entries(schema.properties.data.properties as Record<string, DataField>).map(([name, field]) => {
      return `<code>data.${escapeHtml(name)}</code>: ${escapeHtml(shapeOf(field))}`;
    });
    return `<tr id="${escapeHtml(type)}"><td><code>${escapeHtml(type)}</code></td><td>${markdown.renderInline(description)}</td><td>${fields.join('<br>')}</td></tr>`;
  });
  return (
    '<table class="event-kinds"><thead><tr><th scope="col"><code>type</code></th><th scope="col">What happened</th>' +
    `<th scope="col"><code>data</code></th></tr></thead><tbody>\n${rows.join('\n')}\n</tbody></table>`
  );
}

/** "0 s", "5 s", "5 min", "2 h": the delays as a reader thinks of them. */
export function humanDelay(seconds: number): string {
  if (seconds < 60 || seconds % 60 !== 0) return `${seconds} s`;
  if (seconds < 3600 || seconds % 3600 !== 0) return `${seconds / 60} min`;
  return `${seconds / 3600} h`;
}

/** A rounded duration: "5 s", "35 min", "2.6 h", "3.1 days". */
export function roughDuration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86_400) return `${Number((seconds / 3600).toFixed(1))} h`;
  return `${Number((seconds / 86_400).toFixed(1))} days`;
}

/** Attempt n, its delay after the previous failure, and the time since the event (without jitter). */
export function retryScheduleTable(schedule: readonly number[] = DEFAULT_WEBHOOK_RETRY_SCHEDULE): string {
  let total = 0;
  const rows = schedule.map((delay, i) => {
    total += delay;
    const after = i === 0 ? 'at once' : `${humanDelay(delay)} after attempt ${i}`;
    return `<tr><td>${i + 1}</td><td>${escapeHtml(after)}</td><td>${escapeHtml(roughDuration(total))}</td></tr>`;
  });
  return (
    '<table class="retry-schedule"><thead><tr><th scope="col">Attempt</th><th scope="col">When</th>' +
    `<th scope="col">Since the event (about)</th></tr></thead><tbody>\n${rows.join('\n')}\n</tbody></table>`
  );
}

/** The rendered guide with the generated tables in place of their placeholders. */
export function webhooksMain(source: string): string {
  const html = markdown.render(source);
  const filled = html
    .replace(`<p>${WEBHOOKS_PLACEHOLDERS.eventKinds}</p>`, eventKindsTable())
    .replace(`<p>${WEBHOOKS_PLACEHOLDERS.retrySchedule}</p>`, retryScheduleTable());
  if (filled.includes('{{')) throw new Error('pages/webhooks.md: a generated table is missing or misplaced (a {{…}} placeholder is left).');
  return filled;
}
