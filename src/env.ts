// Reads environment variables described by a TypeBox object schema (one property per variable),
// and renders that schema as the README's configuration table. Variables are strings; each
// property's type says how its string reads: integer, boolean (1/true/yes/on, 0/false/no/off),
// enum, comma-separated numbers, or a string, possibly through a codec (a URL, a network list).
import Type, { type StaticDecode, type TObject, type TProperties, type TSchema } from 'typebox';
import Value from 'typebox/value';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

/** What a property may carry besides JSON Schema. */
interface Annotations {
  type?: string;
  description?: string;
  default?: unknown;
  /** The table's Default cell, when the value itself does not say it (absent, derived). */
  docDefault?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  enum?: readonly string[];
  items?: Annotations;
}

const TRUE = /^(1|true|yes|on)$/i;
const FALSE = /^(0|false|no|off)$/i;

/** The typed value of `raw`, or `raw` itself when it cannot be one (the schema check then refuses it). */
function fromString(schema: Annotations, raw: string): unknown {
  switch (schema.type) {
    case 'integer':
    case 'number':
      return Number(raw);
    case 'boolean':
      return TRUE.test(raw) ? true : FALSE.test(raw) ? false : raw;
    case 'array': {
      const parts = raw.split(',').map((part) => part.trim());
      return parts.some((part) => part === '') ? raw : parts.map(Number);
    }
    default:
      return raw;
  }
}

/** Why `raw` is not a value of `schema`, in words an operator can act on. */
function refusal(name: string, schema: Annotations, raw: string): string {
  if (schema.enum) return `${name} must be ${schema.enum.map((v) => `"${v}"`).join(' or ')}, got "${raw}"`;
  switch (schema.type) {
    case 'integer':
      return `${name} must be an integer from ${schema.minimum} to ${schema.maximum}, got "${raw}"`;
    case 'boolean':
      return `${name} must be true or false, got "${raw}"`;
    case 'array': {
      const item = schema.items ?? {};
      return `${name} must be a comma-separated list of ${schema.minItems} to ${schema.maxItems} ${item.description} (${item.minimum} to ${item.maximum} each), got "${raw}"`;
    }
    default:
      return `${name} is invalid, got "${raw}"`;
  }
}

/**
 * The variables of `schema` read from `env`: an unset or blank variable takes its default, every
 * value is checked against its property and decoded (codecs). Throws a ConfigError naming the
 * first invalid variable, in schema order.
 */
export function readEnv<S extends TObject>(schema: S, env: Env): StaticDecode<S> {
  const values: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties as TProperties)) {
    const annotations = property as Annotations;
    const raw = env[name];
    const given = raw !== undefined && raw.trim() !== '';
    if (!given && !('default' in annotations)) continue;
    const value = given ? fromString(annotations, raw) : annotations.default;
    if (!Value.Check(property, value)) throw new ConfigError(refusal(name, annotations, raw ?? ''));
    try {
      values[name] = Type.IsCodec(property) ? Value.Decode(property, value) : value;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new ConfigError(message.startsWith(name) ? message : `${name} ${message}`);
    }
  }
  return values as StaticDecode<S>;
}

function defaultCell(schema: Annotations): string {
  if (schema.docDefault !== undefined) return schema.docDefault;
  if (!('default' in schema)) return '(none)';
  const value = Array.isArray(schema.default) ? schema.default.join(',') : String(schema.default);
  return `\`${value}\``;
}

/** The schema as a Markdown table: Variable, Default, Meaning (the description), in schema order. */
export function envTable(schema: TObject): string {
  const rows = Object.entries(schema.properties as Record<string, TSchema>).map(([name, property]) => {
    const annotations = property as Annotations;
    const meaning = (annotations.description ?? '').replaceAll('|', '\\|');
    return `| \`${name}\` | ${defaultCell(annotations)} | ${meaning} |`;
  });
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';

/** The text between the table markers of a Markdown document (trimmed), or undefined without both markers. */
export function tableBetweenMarkers(markdown: string): string | undefined {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END, start + 1);
  if (start === -1 || end === -1) return undefined;
  return markdown.slice(start + TABLE_START.length, end).trim();
}

/** The document with `table` between its markers; throws when a marker is missing. */
export function replaceTable(markdown: string, table: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END, start + 1);
  if (start === -1 || end === -1) throw new ConfigError(`the document has no ${TABLE_START} … ${TABLE_END} markers`);
  return `${markdown.slice(0, start + TABLE_START.length)}\n${table}\n${markdown.slice(end)}`;
}
