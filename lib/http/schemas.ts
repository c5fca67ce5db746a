import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_SCHEMA_DIR } from '../paths';
import { invalidInput } from '../domain/errors';

/**
 * The API's JSON Schemas (schemas/api/), compiled once. Bodies are validated strictly; query
 * strings with type coercion, since everything in a query string arrives as text.
 */

export type Validator = ((data: unknown) => boolean) & { readonly errors?: ErrorObject[] | null };

export interface SchemaRegistry {
  /** Throws `invalid_input` naming the first offending field. */
  assertBody(schemaId: string, value: unknown): void;
  /** Coerces and fills defaults in place, then validates like `assertBody`. */
  assertQuery(schemaId: string, value: Record<string, unknown>): void;
  /** For tests and tools: the validator of a response schema (a plain predicate, not a type guard). */
  validator(schemaId: string): Validator;
}

export function loadSchemas(dir = API_SCHEMA_DIR): SchemaRegistry {
  const schemas = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
  const strict = addFormats(new Ajv({ schemas, allErrors: false, strict: true, strictRequired: false, allowUnionTypes: true }));
  const coercing = addFormats(
    new Ajv({ schemas, allErrors: false, strict: true, strictRequired: false, coerceTypes: true, useDefaults: true }),
  );
  const get = (ajv: Ajv, id: string) => {
    const v = ajv.getSchema(id);
    if (!v) throw new Error(`unknown schema ${id}`);
    return v;
  };
  // Compile everything now: a broken schema stops start-up, not a request.
  for (const s of schemas) get(strict, s.$id);
  return {
    assertBody(id, value) {
      const v = get(strict, id);
      if (!v(value)) throw invalidInput(describeError(v.errors?.[0], 'body'));
    },
    assertQuery(id, value) {
      const v = get(coercing, id);
      if (!v(value)) throw invalidInput(describeError(v.errors?.[0], 'query'));
    },
    validator: (id) => {
      const v = get(strict, id);
      return Object.defineProperty((data: unknown): boolean => v(data) === true, 'errors', { get: () => v.errors });
    },
  };
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

function describeError(error: ErrorObject | undefined, whole: string): string {
  if (!error) return `${whole} is invalid`;
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
