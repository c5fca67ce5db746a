import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_SCHEMA_DIR } from '../paths';
import { OPERATIONS, type Operation, type Response } from './openapi-operations';

/**
 * The OpenAPI 3.1 document of the API, built from the operation table (openapi-operations.ts) and
 * the JSON Schemas of schemas/api, which stay the one source of truth: each file becomes a
 * component under its `$id`, its `$defs` components of their own (`<id>.<name>`), and every
 * `$ref` is rewritten to point at them. Nothing is copied by hand.
 */

export type OpenApiDocument = Record<string, unknown> & {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: { schemas: Record<string, Record<string, unknown>> };
};

export const SCHEMA_REF = '#/components/schemas/';

/** The API's version: `GET /v1/status`'s `api_version` and the document's `info.version`. */
export const API_VERSION = '1.2';

/** The error statuses, their codes and what they mean (README "Errors"). */
const ERRORS: Record<number, { code: string; description: string }> = {
  400: { code: 'invalid_input', description: 'The request is malformed or invalid; the message names the field.' },
  401: { code: 'unauthorized', description: 'Missing, malformed, unknown or revoked token.' },
  402: { code: 'payment_required', description: 'The drive has no media seconds left, or too few AI credits.' },
  403: { code: 'forbidden', description: 'The resource belongs to another drive, or the action is not allowed.' },
  404: { code: 'not_found', description: 'No such route, job, project or composition.' },
  409: { code: 'conflict', description: 'The resource is in a state that refuses the request; `state` says which.' },
  413: { code: 'payload_too_large', description: 'The body is over MAX_REQUEST_BYTES (or an upload over its file_size).' },
  415: { code: 'invalid_input', description: 'The body is not of a type the route takes (JSON routes take application/json).' },
  416: { code: 'invalid_input', description: 'The requested range is not satisfiable.' },
  422: { code: 'unprocessable_entity', description: 'The request is well-formed but cannot be carried out.' },
  429: { code: 'rate_limit_exceeded', description: 'Too many requests; come back after `Retry-After` seconds.' },
  500: { code: 'internal_error', description: 'A bug; logged with the request id.' },
  503: { code: 'unavailable', description: 'Storage cannot be written or is busy, or the process is at its limit; retry later.' },
};

/** Every route under the token can answer these. */
const COMMON_ERRORS = [400, 401, 404, 429, 500, 503];

export function buildOpenApiDocument(options: { version: string; schemaDir?: string }): OpenApiDocument {
  const all = componentSchemas(options.schemaDir ?? API_SCHEMA_DIR);
  // A query schema becomes the operation's parameters, not a component of its own.
  const queries = new Set(OPERATIONS.map((o) => o.query).filter(Boolean));
  const schemas = Object.fromEntries(Object.entries(all).filter(([id]) => !queries.has(id)));
  const paths: OpenApiDocument['paths'] = {};
  for (const op of OPERATIONS) {
    for (const id of referencedSchemas(op)) if (!all[id]) throw new Error(`${op.id}: unknown schema ${id}`);
    (paths[op.path] ??= {})[op.method] = operationObject(op, all);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Media Project Service API',
      version: options.version,
      summary: 'Import media, edit by prompt or text, publish and export: a job-based API compatible with the Descript API v1.',
      description:
        'All paths are relative to the base URL, which ends in `/v1`. Jobs are asynchronous: a POST answers 201 with a `job_id`; ' +
        'poll `GET /jobs/{job_id}`, follow `GET /jobs/{job_id}/events`, or pass a `callback_url`.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/v1', description: 'This service' }],
    security: [{ bearer: [] }],
    tags: [...new Set(OPERATIONS.flatMap((o) => o.tags))].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'A personal API token (`npm run admin -- token create`), scoped to one drive.',
        },
      },
      headers: {
        'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
        'X-RateLimit-Remaining': { description: 'Requests left in the window.', schema: { type: 'integer', minimum: 0 } },
        'X-RateLimit-Consumed': { description: 'Requests used in the window.', schema: { type: 'integer', minimum: 0 } },
      },
    },
  } as OpenApiDocument;
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  jobs: 'Asynchronous jobs: import, agent, publish; their state, events and webhooks.',
  projects: 'Projects, compositions, transcripts and agent conversations.',
  exports: 'Files made from a composition, answered at once.',
  drive: 'The token, its drive and the agent catalog.',
  partner: 'Partner access: Edit-in links and published projects.',
  files: 'Signed upload and download URLs (their own credential, no token).',
  meta: 'This document.',
};

/** Each schemas/api file as a component, its `$defs` lifted beside it, every `$ref` pointing into components. */
export function componentSchemas(dir: string): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  for (const file of files) {
    const { $id, $defs, ...schema } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
    if (typeof $id !== 'string') throw new Error(`${file} has no $id`);
    out[$id] = rewriteRefs(schema, $id) as Record<string, unknown>;
    for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, unknown>)) {
      out[`${$id}.${name}`] = rewriteRefs(def, $id) as Record<string, unknown>;
    }
  }
  return out;
}

/** `#/$defs/x` of schema `id` → `id.x`; another file's `$id` → that component. */
function rewriteRefs(node: unknown, id: string): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, id));
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string') {
      const local = /^#\/\$defs\/(.+)$/.exec(value);
      out.$ref = SCHEMA_REF + (local ? `${id}.${local[1]}` : value);
    } else {
      out[key] = rewriteRefs(value, id);
    }
  }
  return out;
}

function referencedSchemas(op: Operation): string[] {
  const ids = [op.query, op.body?.schema, ...Object.values(op.responses).map((r) => r.schema)];
  return ids.filter((x): x is string => typeof x === 'string');
}

function operationObject(op: Operation, schemas: Record<string, Record<string, unknown>>): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(op.responses)) responses[status] = responseObject(response, op);
  const errors = op.security === 'none' ? op.errors : [...new Set([...COMMON_ERRORS, ...op.errors])];
  for (const status of errors.sort((a, b) => a - b)) responses[String(status)] = errorResponse(status, op);
  return {
    operationId: op.id,
    summary: op.summary,
    description: op.description,
    tags: op.tags,
    ...(op.security === 'none' && { security: [] }),
    parameters: parameters(op, schemas),
    ...(op.body && { requestBody: requestBody(op) }),
    responses,
  };
}

function parameters(op: Operation, schemas: Record<string, Record<string, unknown>>): Record<string, unknown>[] {
  const params: Record<string, unknown>[] = [];
  for (const [name, p] of Object.entries(op.pathParams ?? {})) {
    params.push({ name, in: 'path', required: true, description: p.description, schema: p.schema ?? { type: 'string' } });
  }
  if (op.query) {
    const query = schemas[op.query] as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      const array = schema.type === 'array';
      params.push({
        name,
        in: 'query',
        required: (query.required ?? []).includes(name),
        ...(array && { style: 'form', explode: true }),
        schema,
      });
    }
  }
  for (const [name, p] of Object.entries(op.headers ?? {})) {
    params.push({ name, in: 'header', required: p.required ?? false, description: p.description, schema: p.schema ?? { type: 'string' } });
  }
  return params;
}

function requestBody(op: Operation): Record<string, unknown> {
  const body = op.body!;
  const contentType = body.contentType ?? 'application/json';
  const schema = body.schema ? { $ref: SCHEMA_REF + body.schema } : { type: 'string', contentMediaType: contentType };
  return {
    required: body.required ?? true,
    description: body.description,
    content: { [contentType]: { schema, ...(body.example !== undefined && { example: body.example }) } },
  };
}

function responseObject(response: Response, op: Operation): Record<string, unknown> {
  const headers =
    response.headers &&
    Object.fromEntries(Object.entries(response.headers).map(([name, description]) => [name, headerObject(description)]));
  const content = response.schema
    ? { 'application/json': { schema: { $ref: SCHEMA_REF + response.schema }, example: response.example ?? op.example } }
    : response.content &&
      Object.fromEntries(response.content.map((type, i) => [type, mediaObject(type, i === 0 ? response.example : undefined)]));
  return { description: response.description, ...(headers && { headers }), ...(content && { content }) };
}

/** A body that is not one of our schemas: a file or a stream (text), or a JSON document of its own. */
function mediaObject(type: string, example: unknown): Record<string, unknown> {
  const schema = type === 'application/json' ? { type: 'object' } : { type: 'string' };
  return { schema, ...(example !== undefined && { example }) };
}

function headerObject(description: string): Record<string, unknown> {
  return { description, schema: { type: 'string' } };
}

function errorResponse(status: number, op: Operation): Record<string, unknown> {
  const { code, description } = ERRORS[status] ?? { code: 'error', description: 'An error.' };
  const why = op.errorNotes?.[status];
  const rateHeaders = { $ref: '#/components/headers/Retry-After' };
  const headers =
    status === 429
      ? {
          'Retry-After': rateHeaders,
          'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
          'X-RateLimit-Consumed': { $ref: '#/components/headers/X-RateLimit-Consumed' },
        }
      : status === 503
        ? { 'Retry-After': rateHeaders }
        : undefined;
  const example =
    status === 409 ? { error: code, message: why ?? description, state: 'stopped' } : { error: code, message: why ?? description };
  return {
    description: why ? `${description} ${why}` : description,
    ...(headers && { headers }),
    content: { 'application/json': { schema: { $ref: `${SCHEMA_REF}error` }, example } },
  };
}
