import Router from '@koa/router';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Context } from 'koa';
import { buildOpenApiDocument } from '../../lib/http/openapi';

/**
 * The API's description, with no token: `GET /v1/openapi.json` (the OpenAPI 3.1 document, with an
 * ETag), and the reference page `GET /docs` rendered by Swagger UI from the installed
 * swagger-ui-dist (no CDN). The page reads its own copy of the document at `/docs/openapi.json`
 * so that it needs no origin but its own, whatever BASE_URL is.
 */

/** Swagger UI's files the page loads, by the name it is served under. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/**
 * Scripts and styles from this origin only, no inline script. Swagger UI sets style attributes
 * and draws its icons from data: URLs; it fetches the document from this origin.
 */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Media Project Service API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// An own file rather than an inline script, so that the CSP needs no 'unsafe-inline' for scripts.
const INIT = `window.ui = SwaggerUIBundle({ url: '/docs/openapi.json', dom_id: '#swagger-ui', deepLinking: true });\n`;

export function createApiDocsRoutes(options: { version: string }): Router {
  const json = JSON.stringify(buildOpenApiDocument({ version: options.version }));
  const etag = `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`;
  const dist = dirname(require.resolve('swagger-ui-dist/package.json'));
  const assets = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(join(dist, name)) }]));
  const router = new Router({ sensitive: true });

  const document = (ctx: Context) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.etag = etag;
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = json;
    // Koa answers 304 from the ETag itself when the request is fresh.
    if (ctx.fresh) ctx.status = 304;
  };
  router.get('/v1/openapi.json', document);
  router.get('/docs/openapi.json', document);
  router.get('/docs', (ctx) => {
    ctx.set({ 'Content-Security-Policy': DOCS_CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' });
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' });
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = INIT;
  });
  router.get('/docs/:asset', (ctx, next) => {
    const asset = assets.get(ctx.params.asset);
    if (!asset) return next();
    ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=86400' });
    ctx.type = asset.type;
    ctx.body = asset.body;
  });
  return router;
}
