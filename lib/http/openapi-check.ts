import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { OpenApiDocument } from './openapi';

/**
 * Checks answers against the OpenAPI document: the operation found by method and path template,
 * the status documented, a JSON body valid against the documented schema. What the tests use so
 * that the document cannot drift from the service; the schemas are the document's own components.
 */

export type ResponseCheck = { method: string; path: string; status: number; contentType?: string; body?: unknown };

export type DocumentChecker = {
  /** Why the answer is not what the document says (null: it is), naming the operation. */
  problem(answer: ResponseCheck): string | null;
  /** The `{method} {template}` the request matches, or null. */
  operationOf(method: string, path: string): string | null;
};

type Template = { template: string; pattern: RegExp; methods: Record<string, Record<string, unknown>> };

export function documentChecker(doc: OpenApiDocument, prefix = '/v1'): DocumentChecker {
  const ajv = new Ajv({ strict: false, allErrors: false, allowUnionTypes: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (ref: string) => {
    let v = validators.get(ref);
    if (!v) validators.set(ref, (v = ajv.compile({ $ref: `openapi${ref}` })));
    return v;
  };
  // Literal paths before templated ones: /jobs/import/project_media is not /jobs/{job_id}/...
  const templates: Template[] = Object.entries(doc.paths)
    .map(([template, methods]) => ({ template, methods, pattern: patternOf(template) }))
    .sort((a, b) => literalness(b.template) - literalness(a.template));
  const find = (method: string, path: string) => {
    const rel = path.split('?', 1)[0];
    if (!rel.startsWith(prefix)) return null;
    const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    const hit = templates.find((t) => t.pattern.test(rel.slice(prefix.length)) && t.methods[m]);
    return hit ? { template: hit.template, method: m, op: hit.methods[m] } : null;
  };
  return {
    operationOf(method, path) {
      const hit = find(method, path);
      return hit && `${hit.method.toUpperCase()} ${hit.template}`;
    },
    problem({ method, path, status, contentType, body }) {
      const hit = find(method, path);
      // Paths outside the API (the web pages, /healthz) are not the document's.
      if (!hit) return path.startsWith(prefix + '/') && status !== 404 ? `${method} ${path}: no operation documents it` : null;
      const name = `${method} ${hit.template}`;
      const responses = hit.op.responses as Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
      const documented = responses[String(status)];
      if (!documented) return `${name} answered ${status}, which is not documented (documented: ${Object.keys(responses).join(', ')})`;
      if (method.toUpperCase() === 'HEAD' || !contentType?.includes('json')) return null;
      const ref = documented.content?.['application/json']?.schema?.$ref;
      if (!ref) return null;
      const validate = validatorOf(ref);
      if (validate(body)) return null;
      const e = validate.errors?.[0];
      return `${name} ${status}: the body does not match ${ref}: ${e?.instancePath || '(root)'} ${e?.message} ${JSON.stringify(e?.params)}`;
    },
  };
}

/** The router is not strict: a trailing slash reaches the same route (test/integration/edge.test.ts). */
function patternOf(template: string): RegExp {
  const escaped = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
  return new RegExp(`^${escaped}/?$`);
}

const literalness = (template: string) => template.split('/').filter((s) => s && !s.startsWith('{')).length;
