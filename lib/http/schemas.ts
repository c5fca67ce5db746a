import Ajv, { type ErrorObject, type FormatDefinition } from 'ajv';
import addFormats from 'ajv-formats';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_SCHEMA_DIR } from '../paths';
import { invalidInput } from '../domain/errors';

/**
 * The API's JSON Schemas (schemas/api/), compiled once. Bodies are validated strictly. Query
 * strings arrive as text: their values are read the way the query schema types them (decimal
 * digits for an integer, one value unless the schema takes an array), then validated strictly.
 */

export type Validator = ((data: unknown) => boolean) & { readonly errors?: ErrorObject[] | null };

export interface SchemaRegistry {
  /** Throws `invalid_input` naming the first offending field. */
  assertBody(schemaId: string, value: unknown): void;
  /** Converts to the schema's types and fills defaults in place, then validates like `assertBody`. */
  assertQuery(schemaId: string, value: Record<string, unknown>): void;
  /** For tests and tools: the validator of a response schema (a plain predicate, not a type guard). */
  validator(schemaId: string): Validator;
}

export function loadSchemas(dir = API_SCHEMA_DIR): SchemaRegistry {
  const schemas = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
  const strict = withKeywords(new Ajv({ schemas, allErrors: false, strict: true, strictRequired: false, allowUnionTypes: true }));
  const queries = withKeywords(new Ajv({ schemas, allErrors: false, strict: true, strictRequired: false, useDefaults: true }));
  const get = (ajv: Ajv, id: string) => {
    const v = ajv.getSchema(id);
    if (!v) throw new Error(`unknown schema ${id}`);
    return v;
  };
  // Compile everything now: a broken schema stops start-up, not a request.
  for (const s of schemas) get(strict, s.$id);
  const queryTypes = new Map<string, Map<string, QueryParam>>();
  return {
    assertBody(id, value) {
      const v = get(strict, id);
      if (v(value)) return;
      const first = v.errors?.[0];
      // A body of the wrong kind at its top (an array): said as the other kinds are (lib/http/well-formed.ts).
      if (first?.keyword === 'type' && first.instancePath === '' && Array.isArray(value)) {
        throw invalidInput('request body must be a JSON object, not an array');
      }
      throw invalidInput(describeError(first, 'body', v.schema));
    },
    assertQuery(id, value) {
      const v = get(queries, id);
      let params = queryTypes.get(id);
      if (!params) queryTypes.set(id, (params = queryParams(v.schema)));
      readQuery(params, value);
      if (!v(value)) throw invalidInput(describeError(v.errors?.[0], 'query', v.schema));
    },
    validator: (id) => {
      const v = get(strict, id);
      return Object.defineProperty((data: unknown): boolean => v(data) === true, 'errors', { get: () => v.errors });
    },
  };
}

/**
 * `x-message` (an annotation, as OpenAPI allows `x-` keys in a schema): what a value refused by
 * that schema or anything under it must be, in words, where ajv's own ("must be equal to
 * constant", "has an invalid format") would not tell a client what to send. The 400 then says
 * "<field> <x-message>".
 */
const MESSAGE = 'x-message';

function withKeywords(ajv: Ajv): Ajv {
  ajv.addKeyword({ keyword: MESSAGE, schemaType: 'string' });
  return withFormats(ajv);
}

/**
 * ajv-formats' date-time is RFC 3339, which allows a leap second (`23:59:60`) that `Date` cannot
 * read: such a value passed validation and then threw in `toISOString()`. Every date-time the API
 * takes must also be a `Date`.
 */
function withFormats(ajv: Ajv): Ajv {
  addFormats(ajv);
  const rfc3339 = ajv.formats['date-time'] as FormatDefinition<string> & { validate: (s: string) => boolean };
  return ajv.addFormat('date-time', {
    ...rfc3339,
    validate: (s: string) => rfc3339.validate(s) && Number.isFinite(Date.parse(s)),
  });
}

type QueryParam = { type?: string; items?: QueryParam };

/** The declared types of a flat query schema's parameters, in a Map: a query key is user input. */
function queryParams(schema: unknown): Map<string, QueryParam> {
  const properties = (schema as { properties?: Record<string, QueryParam> }).properties ?? {};
  return new Map(Object.entries(properties));
}

/**
 * Reads query text into the declared types. Stricter than ajv's `coerceTypes`, which takes
 * `Infinity`, `1e400`, `0x10` and `1e1` as numbers: an integer is decimal digits, a number
 * decimal digits with an optional fraction. Anything else stays text for the schema to refuse,
 * naming the parameter.
 */
function readQuery(params: Map<string, QueryParam>, query: Record<string, unknown>): void {
  for (const [key, raw] of Object.entries(query)) {
    const param = params.get(key);
    if (!param) continue;
    if (param.type === 'array') {
      query[key] = (Array.isArray(raw) ? raw : [raw]).map((x) => readScalar(param.items, x));
    } else if (Array.isArray(raw)) {
      throw invalidInput(`${fieldPath('', key)} must be given once`);
    } else {
      query[key] = readScalar(param, raw);
    }
  }
}

const INTEGER = /^-?\d{1,15}$/;
const NUMBER = /^-?\d{1,15}(?:\.\d{1,15})?$/;

function readScalar(param: QueryParam | undefined, raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  switch (param?.type) {
    case 'integer':
      return INTEGER.test(raw) ? Number(raw) : raw;
    case 'number':
      return NUMBER.test(raw) ? Number(raw) : raw;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : raw;
    default:
      return raw;
  }
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** "/add_media/a b.mp4/url" → `add_media["a b.mp4"].url`: a path a user can find in the body they sent. */
export function fieldPath(instancePath: string, extra?: string): string {
  const segments = instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) segments.push(extra);
  return segments.reduce((path, seg) => {
    if (/^\d+$/.test(seg)) return `${path}[${seg}]`;
    if (IDENT.test(seg)) return path ? `${path}.${seg}` : seg;
    return `${path}[${JSON.stringify(seg)}]`;
  }, '');
}

function describeError(error: ErrorObject | undefined, whole: string, root?: unknown): string {
  if (!error) return `${whole} is invalid`;
  const message = messageOn(root, error.schemaPath);
  // Inside `propertyNames`, ajv names the key it refused.
  const key = (error as { propertyName?: string }).propertyName;
  if (message !== undefined) return `${fieldPath(error.instancePath, key) || whole} ${message}`;
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${fieldPath(error.instancePath, String(p.missingProperty))} is required`;
    case 'additionalProperties':
      return `${fieldPath(error.instancePath, String(p.additionalProperty))} is not a known field`;
    case 'propertyNames':
      return `${fieldPath(error.instancePath, String(p.propertyName))}: the key is not a valid name`;
    case 'enum':
      return `${fieldPath(error.instancePath) || whole} must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'pattern':
      return `${fieldPath(error.instancePath) || whole} has an invalid format`;
    default:
      return `${fieldPath(error.instancePath) || whole} ${error.message ?? 'is invalid'}`;
  }
}

/** The deepest `x-message` on the way from the root schema down `schemaPath` ("#/properties/a/anyOf/0/const"); undefined if none. */
function messageOn(root: unknown, schemaPath: string): string | undefined {
  if (!schemaPath.startsWith('#/')) return undefined; // in another document (a $ref)
  let node = root as Record<string, unknown> | undefined;
  let found: string | undefined;
  for (const segment of schemaPath.slice(2).split('/')) {
    if (typeof node?.[MESSAGE] === 'string') found = node[MESSAGE] as string;
    const next = node?.[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (next === null || typeof next !== 'object') break;
    node = next as Record<string, unknown>;
  }
  return found;
}
