import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Type, types } from 'avsc';
import type { EventMetadata, StoredEvent } from '../../ports/event-store';

/**
 * Avro codec for log messages (STYLE §8). The wire format is Avro single-object encoding:
 * 0xC3 0x01, the CRC-64-AVRO fingerprint of the writer schema (8 bytes, little-endian), then
 * the binary body. Readers look the writer schema up by fingerprint and resolve it to the
 * current schema of the event type, so events written by an older service stay readable.
 */

export interface EventCodec {
  encode(event: StoredEvent): Buffer;
  decode(buf: Buffer): StoredEvent;
}

const MARKER = Buffer.from([0xc3, 0x01]);
const HEADER_BYTES = MARKER.length + 8;

// ---------------------------------------------------------------- CRC-64-AVRO

// avsc only fingerprints with node's crypto hashes (md5, sha256), not the Rabin CRC the
// single-object spec requires, so it is computed here as the Avro spec describes.
const EMPTY = 0xc15d213aa4d7a795n;
const TABLE = Array.from({ length: 256 }, (_, i) => {
  let fp = BigInt(i);
  for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (EMPTY & -(fp & 1n));
  return fp;
});

/** The 64-bit Rabin fingerprint (CRC-64-AVRO) of some bytes, as an unsigned bigint. */
export function crc64Avro(bytes: Uint8Array): bigint {
  let fp = EMPTY;
  for (const b of bytes) fp = (fp >> 8n) ^ TABLE[Number((fp ^ BigInt(b)) & 0xffn)];
  return fp;
}

/**
 * Parsing Canonical Form. avsc's `schema()` without `exportAttrs` already emits it: full names,
 * only name/type/fields/symbols/items/values/size in that order, primitives as bare strings,
 * no logical types, docs, defaults or aliases.
 */
export const canonicalForm = (type: Type): string => JSON.stringify(type.schema());

export const fingerprintOf = (type: Type): bigint => crc64Avro(Buffer.from(canonicalForm(type), 'utf8'));

// ---------------------------------------------------------------- json logical type

/** Free-form objects travel as JSON text inside an Avro string. */
class JsonType extends types.LogicalType {
  protected override _fromValue(val: string): unknown {
    return JSON.parse(val);
  }
  protected override _toValue(val: unknown): string | undefined {
    return JSON.stringify(val); // undefined for undefined/functions: avsc reports the value invalid
  }
  protected override _resolve(writer: Type): ((val: unknown) => unknown) | undefined {
    if (Type.isType(writer, 'logical:json')) return (val) => val; // already parsed by the writer type
    if (Type.isType(writer, 'string')) return (val) => JSON.parse(String(val));
    return undefined;
  }
}

// ---------------------------------------------------------------- schema registry

type Resolver = ReturnType<Type['createResolver']>;
type Writer = { readonly eventType: string; readonly type: Type; readonly resolver: Resolver | null };

/** The Avro record of a log message: the port's StoredEvent in snake_case. */
type AvroEvent = {
  id: string;
  type: string;
  stream_id: string;
  revision: number;
  position: string;
  created_at: string;
  metadata: EventMetadata;
  data: Record<string, unknown>;
};

const parseSchemaFile = (file: string): Type =>
  Type.forSchema(JSON.parse(readFileSync(file, 'utf8')), { logicalTypes: { json: JsonType } });

const avscFiles = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.avsc'))
        .map((f) => join(dir, f))
    : [];

/** The event type a schema file describes: its record name, which must match the file name. */
function eventTypeOf(type: Type, file: string): string {
  const name = (type.name ?? '').split('.').pop() ?? '';
  if (basename(file).split('.')[0] !== name) throw new Error(`schema ${file} describes record "${type.name}", not what its file name says`);
  return name;
}

function loadRegistry(schemaDir: string) {
  const current = new Map<string, Type>();
  const writers = new Map<bigint, Writer>();
  for (const file of avscFiles(schemaDir)) {
    const type = parseSchemaFile(file);
    const eventType = eventTypeOf(type, file);
    current.set(eventType, type);
    writers.set(fingerprintOf(type), { eventType, type, resolver: null });
  }
  if (current.size === 0) throw new Error(`no Avro event schemas (*.avsc) in ${schemaDir}`);
  for (const file of avscFiles(join(schemaDir, 'history'))) {
    const type = parseSchemaFile(file);
    const eventType = eventTypeOf(type, file);
    const reader = current.get(eventType);
    if (!reader) throw new Error(`history schema ${file} has no current schema for "${eventType}"`);
    const fingerprint = fingerprintOf(type);
    // A history file identical (in canonical form) to the current schema needs no resolver.
    if (!writers.has(fingerprint)) writers.set(fingerprint, { eventType, type, resolver: reader.createResolver(type) });
  }
  return { current, writers };
}

// ---------------------------------------------------------------- validation messages

const kindOf = (val: unknown): string => (val === null ? 'null' : Array.isArray(val) ? 'array' : typeof val);

/** "data.percent (expected int, got string)". */
function typeProblem(path: string[], val: unknown, type: Type): string {
  const at = path.length > 0 ? path.join('.') : '(event)';
  const expected = type instanceof types.UnwrappedUnionType ? type.types.map((t) => t.typeName).join(' | ') : type.typeName;
  return `${at} (expected ${expected.replace('logical:', '')}, got ${kindOf(val)})`;
}

/** "data.extra (not in the schema)": a field avsc would silently drop on encode. */
function undeclaredFields(path: string[], val: unknown, type: Type): string[] {
  if (!(type instanceof types.RecordType) || val === null || typeof val !== 'object') return [];
  const declared = new Set(type.fields.map((f) => f.name));
  return Object.keys(val)
    .filter((k) => !declared.has(k))
    .map((k) => `${[...path, k].join('.')} (not in the schema)`);
}

function assertValid(type: Type, record: AvroEvent): void {
  if (type.isValid(record, { noUndeclaredFields: true })) return;
  // Two passes because avsc stops at a record with undeclared fields without checking its fields.
  const problems = new Set<string>();
  type.isValid(record, { errorHook: (path, val, t) => problems.add(typeProblem(path, val, t)) });
  type.isValid(record, {
    noUndeclaredFields: true,
    errorHook: (path, val, t) => undeclaredFields(path, val, t).forEach((p) => problems.add(p)),
  });
  throw new Error(`event ${record.type} ${record.id} does not match its Avro schema: ${[...problems].join(', ')}`);
}

// ---------------------------------------------------------------- codec

/** avsc decodes records into generated classes; the rest of the service expects plain objects. */
function toPlain(val: unknown): unknown {
  if (Array.isArray(val)) return val.map(toPlain);
  if (val !== null && typeof val === 'object') return Object.fromEntries(Object.entries(val).map(([k, v]) => [k, toPlain(v)]));
  return val;
}

const toAvro = (e: StoredEvent): AvroEvent => ({
  id: e.id,
  type: e.type,
  stream_id: e.streamId,
  revision: e.revision,
  position: e.position,
  created_at: e.createdAt,
  metadata: e.metadata,
  data: e.data,
});

const fromAvro = (r: AvroEvent): StoredEvent => ({
  id: r.id,
  type: r.type,
  streamId: r.stream_id,
  revision: r.revision,
  position: r.position,
  createdAt: r.created_at,
  metadata: r.metadata,
  data: toPlain(r.data) as Record<string, unknown>,
});

/** Loads every schema in `schemaDir` (and `schemaDir/history`) once; throws on a bad schema. */
export function createAvroCodec(options: { schemaDir: string }): EventCodec {
  const { current, writers } = loadRegistry(options.schemaDir);
  const headers = new Map<string, Buffer>();
  for (const [fingerprint, w] of writers) {
    if (w.resolver) continue;
    const header = Buffer.alloc(HEADER_BYTES);
    MARKER.copy(header);
    header.writeBigUInt64LE(fingerprint, MARKER.length);
    headers.set(w.eventType, header);
  }

  return {
    encode(event) {
      const type = current.get(event.type);
      if (!type) throw new Error(`no Avro schema for event type "${event.type}" in ${options.schemaDir}`);
      const record = toAvro(event);
      assertValid(type, record);
      return Buffer.concat([headers.get(event.type)!, type.toBuffer(record)]);
    },
    decode(buf) {
      if (buf.length < HEADER_BYTES || buf[0] !== MARKER[0] || buf[1] !== MARKER[1]) {
        throw new Error('not an Avro single-object message (missing the C3 01 marker)');
      }
      const fingerprint = buf.readBigUInt64LE(MARKER.length);
      const writer = writers.get(fingerprint);
      if (!writer)
        throw new Error(
          `unknown Avro writer schema (fingerprint bytes ${buf.subarray(MARKER.length, HEADER_BYTES).toString('hex')}): not in ${options.schemaDir}`,
        );
      const body = buf.subarray(HEADER_BYTES);
      const reader = current.get(writer.eventType)!;
      const record: AvroEvent = writer.resolver ? reader.fromBuffer(body, writer.resolver) : reader.fromBuffer(body);
      return fromAvro(record);
    },
  };
}
