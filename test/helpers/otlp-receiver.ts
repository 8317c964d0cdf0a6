// A real OTLP/HTTP trace receiver for the tests: POST /v1/traces in http/protobuf or http/json,
// decoded into plain spans. The protobuf side is a small wire-format reader for the fields of
// ExportTraceServiceRequest the tests look at (@opentelemetry/otlp-transformer only encodes
// requests; it has no decoder for them).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  links: Array<{ traceId: string; spanId: string }>;
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** The base URL (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the requests received. */
  contentTypes: string[];
  /** Resolves with the spans once `match` finds one (rejects after timeoutMs). */
  waitFor(match: (span: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

// Protobuf wire format: varints, fixed64, length-delimited fields.
interface Field {
  no: number;
  wire: number;
  value: bigint | Buffer;
}

function* fields(buf: Buffer): Generator<Field> {
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) {
      yield { no, wire, value: buf.subarray(at, at + 8) };
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      yield { no, wire, value: buf.subarray(at, at + length) };
      at += length;
    } else if (wire === 5) {
      yield { no, wire, value: buf.subarray(at, at + 4) };
      at += 4;
    } else throw new Error(`protobuf: wire type ${wire} not expected`);
  }
}

const bytesOf = (f: Field) => f.value as Buffer;

function anyValue(buf: Buffer): AttributeValue {
  for (const f of fields(buf)) {
    if (f.no === 1) return bytesOf(f).toString('utf8');
    if (f.no === 2) return (f.value as bigint) !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.value as bigint));
    if (f.no === 4) return bytesOf(f).readDoubleLE(0);
  }
  return '';
}

function keyValue(buf: Buffer): [string, AttributeValue] {
  let key = '';
  let value: AttributeValue = '';
  for (const f of fields(buf)) {
    if (f.no === 1) key = bytesOf(f).toString('utf8');
    if (f.no === 2) value = anyValue(bytesOf(f));
  }
  return [key, value];
}

function protoSpan(buf: Buffer, resource: Record<string, AttributeValue>): ReceivedSpan {
  const span: ReceivedSpan = { traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, attributes: {}, links: [], status: 0, resource };
  for (const f of fields(buf)) {
    if (f.no === 1) span.traceId = bytesOf(f).toString('hex');
    else if (f.no === 2) span.spanId = bytesOf(f).toString('hex');
    else if (f.no === 4) span.parentSpanId = bytesOf(f).toString('hex');
    else if (f.no === 5) span.name = bytesOf(f).toString('utf8');
    else if (f.no === 6) span.kind = Number(f.value as bigint);
    else if (f.no === 9) {
      const [k, v] = keyValue(bytesOf(f));
      span.attributes[k] = v;
    } else if (f.no === 13) {
      const link = { traceId: '', spanId: '' };
      for (const l of fields(bytesOf(f))) {
        if (l.no === 1) link.traceId = bytesOf(l).toString('hex');
        if (l.no === 2) link.spanId = bytesOf(l).toString('hex');
      }
      span.links.push(link);
    } else if (f.no === 15) {
      for (const s of fields(bytesOf(f))) if (s.no === 3) span.status = Number(s.value as bigint);
    }
  }
  return span;
}

/** ExportTraceServiceRequest → spans (resource_spans 1 → resource 1 / scope_spans 2 → spans 2). */
export function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    const resource: Record<string, AttributeValue> = {};
    const scopes: Buffer[] = [];
    for (const f of fields(bytesOf(rs))) {
      if (f.no === 1) for (const a of fields(bytesOf(f))) if (a.no === 1) Object.assign(resource, Object.fromEntries([keyValue(bytesOf(a))]));
      if (f.no === 2) scopes.push(bytesOf(f));
    }
    for (const scope of scopes) for (const f of fields(scope)) if (f.no === 2) spans.push(protoSpan(bytesOf(f), resource));
  }
  return spans;
}

type JsonValue = { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number };
type JsonAttributes = Array<{ key: string; value: JsonValue }> | undefined;
const jsonAttributes = (list: JsonAttributes): Record<string, AttributeValue> =>
  Object.fromEntries(
    (list ?? []).map(({ key, value }) => [key, value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? ''))]),
  );

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: JsonAttributes;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number };
}

/** The OTLP/JSON encoding (ids as hex strings). */
export function decodeJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8')) as {
    resourceSpans: Array<{ resource?: { attributes?: JsonAttributes }; scopeSpans: Array<{ spans: JsonSpan[] }> }>;
  };
  return request.resourceSpans.flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        status: s.status?.code ?? 0,
        resource,
      })),
    );
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = req.headers['content-type'] ?? '';
      contentTypes.push(type);
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      try {
        spans.push(...(type.startsWith('application/json') ? decodeJson(body) : decodeProtobuf(body)));
      } catch (error) {
        res.writeHead(400).end(String(error));
        return;
      }
      // An empty ExportTraceServiceResponse in the request's encoding.
      if (type.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    async waitFor(match, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = spans.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`OTLP receiver: no matching span after ${timeoutMs} ms; got ${spans.map((s) => s.name).join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
