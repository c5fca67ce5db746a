import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Koa from 'koa';
import pino from 'pino';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { signDownloadUrl } from '../../lib/app/downloads';
import { errorHandler, notFoundFallback, requestContext } from '../../lib/http/middleware';
import type { Clock } from '../../lib/ports/clock';
import { createDownloadRoutes } from '../../services/query-api/downloads';
import { waitFor } from '../fixtures/wait';

/**
 * Signed downloads (issue 21 item 6) over real HTTP from a real blob folder: ranges, conditional
 * requests, HEAD, the file name, refusals of tampered and expired URLs, and clients that go away
 * in the middle of a large file.
 */
describe('downloads: signed URLs served from the blob store', () => {
  const SECRET = 'download-test-secret-0123456789';
  const BASE = '/v1';
  const small = randomBytes(1000);
  const large = randomBytes(24 << 20);
  let now = new Date('2026-11-26T12:00:00Z');
  const clock: Clock = { now: () => now };
  let server: Server;
  let origin: string;
  let blobs: ReturnType<typeof createLocalBlobStore>;

  before(async () => {
    blobs = createLocalBlobStore({ root: mkdtempSync(join(tmpdir(), 'downloads-')) });
    await blobs.put('drive/project/render-small', Readable.from([small]));
    await blobs.put('drive/project/render-large', Readable.from([large]));
    const app = new Koa();
    app.silent = true;
    app.use(requestContext(pino({ level: 'silent' })));
    app.use(errorHandler());
    app.use(createDownloadRoutes({ secret: SECRET, blobs, clock }).routes());
    app.use(notFoundFallback());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  const urlOf = (blob: string, filename = 'Intro.mp4', contentType = 'video/mp4', ttlSeconds = 3600) =>
    signDownloadUrl(`${origin}${BASE}`, SECRET, { blob, filename, contentType }, new Date(now.getTime() + ttlSeconds * 1000));
  const bytes = async (res: Response) => Buffer.from(await res.arrayBuffer());

  it('sends the whole file with its type, length, validators and an attachment name, RFC 6266 for any Unicode', async () => {
    const res = await fetch(urlOf('drive/project/render-small', 'Café – intro "1".mp4'));
    assert.equal(res.status, 200);
    assert.deepEqual(await bytes(res), small);
    assert.equal(res.headers.get('content-type'), 'video/mp4');
    assert.equal(res.headers.get('content-length'), '1000');
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.match(res.headers.get('etag') ?? '', /^"[0-9a-f]+-[0-9a-f]+"$/);
    assert.ok(res.headers.get('last-modified'));
    const disposition = res.headers.get('content-disposition') ?? '';
    // The plain `filename` keeps what ISO-8859-1 has (é) and replaces the rest; `filename*` has it
    // all. Quotes are not kept (Windows refuses them in a file name).
    assert.equal(disposition, `attachment; filename="Café ? intro 1.mp4"; filename*=UTF-8''Caf%C3%A9%20%E2%80%93%20intro%201.mp4`);
  });

  it('names the file whole whatever its name holds: a "/" (not cut at it), a direction override, dots', async () => {
    for (const [filename, served] of [
      ['Q1/Q2 review.mp4', 'Q1 Q2 review.mp4'],
      ['evil_\u202Eexe.mp4', 'evil_ exe.mp4'],
      ['../../etc.mp4', 'etc.mp4'],
    ]) {
      const res = await fetch(urlOf('drive/project/render-small', filename));
      assert.equal(res.status, 200, filename);
      const disposition = res.headers.get('content-disposition') ?? '';
      const extended = /filename\*=UTF-8''(.*)$/.exec(disposition)?.[1];
      const named = extended ? decodeURIComponent(extended) : /filename="(.*)"/.exec(disposition)?.[1];
      assert.equal(named, served, `${JSON.stringify(filename)}: ${disposition}`);
      await res.arrayBuffer();
    }
  });

  it('sends one range as 206 with Content-Range: a span, an open end, a suffix', async () => {
    const url = urlOf('drive/project/render-small');
    for (const [range, start, end] of [
      ['bytes=10-19', 10, 19],
      ['bytes=990-', 990, 999],
      ['bytes=-5', 995, 999],
      ['bytes=900-5000', 900, 999],
    ] as const) {
      const res = await fetch(url, { headers: { range } });
      assert.equal(res.status, 206, range);
      assert.equal(res.headers.get('content-range'), `bytes ${start}-${end}/1000`, range);
      assert.equal(res.headers.get('content-length'), String(end - start + 1), range);
      assert.deepEqual(await bytes(res), small.subarray(start, end + 1), range);
    }
  });

  it('answers 416 to a range outside the file, and the whole file to several ranges or a malformed one', async () => {
    const url = urlOf('drive/project/render-small');
    const outside = await fetch(url, { headers: { range: 'bytes=1000-' } });
    assert.equal(outside.status, 416);
    assert.equal(outside.headers.get('content-range'), 'bytes */1000');
    await outside.arrayBuffer();
    for (const range of ['bytes=0-9,20-29', 'bytes=abc', 'lines=1-2']) {
      const res = await fetch(url, { headers: { range } });
      assert.equal(res.status, 200, range);
      assert.equal((await bytes(res)).length, 1000, range);
    }
  });

  it('answers 304 to its own ETag, and ignores a range of another version (If-Range)', async () => {
    const url = urlOf('drive/project/render-small');
    const etag = (await fetch(url, { method: 'HEAD' })).headers.get('etag')!;
    // fetch adds `Cache-Control: no-cache` to a conditional request unless it has one (the server
    // must then answer in full): a browser revalidating sends max-age=0.
    const cached = await fetch(url, { headers: { 'if-none-match': etag, 'cache-control': 'max-age=0' } });
    assert.equal(cached.status, 304);
    const same = await fetch(url, { headers: { range: 'bytes=0-9', 'if-range': etag } });
    assert.equal(same.status, 206);
    await same.arrayBuffer();
    const other = await fetch(url, { headers: { range: 'bytes=0-9', 'if-range': '"0-0"' } });
    assert.equal(other.status, 200);
    assert.equal((await bytes(other)).length, 1000);
  });

  it('answers HEAD with the headers of the GET and no body', async () => {
    const url = urlOf('drive/project/render-small');
    const whole = await fetch(url, { method: 'HEAD' });
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('content-length'), '1000');
    assert.equal((await bytes(whole)).length, 0);
    const part = await fetch(url, { method: 'HEAD', headers: { range: 'bytes=0-99' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-length'), '100');
  });

  it('refuses a tampered URL and an expired one with 403 and the API error body, and a missing file with 404', async () => {
    const url = new URL(urlOf('drive/project/render-small'));
    const tampered = new URL(url);
    tampered.searchParams.set('filename', 'other.mp4');
    const refusedTamper = await fetch(tampered);
    assert.equal(refusedTamper.status, 403);
    const body = (await refusedTamper.json()) as { error: string; message: string };
    assert.equal(body.error, 'forbidden');
    assert.match(body.message, /not valid/);

    const otherBlob = new URL(urlOf('drive/project/render-large'));
    otherBlob.pathname = url.pathname; // another blob's signature on this path
    assert.equal((await fetch(otherBlob)).status, 403);

    const expiring = urlOf('drive/project/render-small', 'a.mp4', 'video/mp4', 60);
    now = new Date(now.getTime() + 61_000);
    try {
      const expired = await fetch(expiring);
      assert.equal(expired.status, 403);
      assert.match(((await expired.json()) as { message: string }).message, /expired at/);
    } finally {
      now = new Date('2026-11-26T12:00:00Z');
    }
    const gone = await fetch(urlOf('drive/project/never-written'));
    assert.equal(gone.status, 404);
    assert.equal(((await gone.json()) as { error: string }).error, 'not_found');
  });

  it('sends a type that is not a media type as bytes', async () => {
    const res = await fetch(urlOf('drive/project/render-small', 'x.html', 'text/html; charset=utf-8'));
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    await res.arrayBuffer();
  });

  it('streams a large file whole, and closes what clients that leave in the middle held', async () => {
    const url = urlOf('drive/project/render-large');
    const res = await fetch(url);
    const hash = createHash('sha256');
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
    assert.equal(hash.digest('hex'), createHash('sha256').update(large).digest('hex'));

    const openFiles = () => readdirSync('/proc/self/fd').length;
    const before = openFiles();
    await Promise.all(
      Array.from({ length: 30 }, async () => {
        const controller = new AbortController();
        const partial = await fetch(url, { signal: controller.signal });
        const reader = partial.body!.getReader();
        await reader.read();
        controller.abort();
        await reader.read().catch(() => undefined);
      }),
    );
    // Every blob stream the server opened for them is closed again (the sockets too).
    await waitFor(() => openFiles() <= before + 2, { timeoutMs: 10_000, what: 'the aborted downloads to release their files' });
    const after = await fetch(url, { headers: { range: 'bytes=0-3' } });
    assert.deepEqual(await bytes(after), large.subarray(0, 4));
  });
});
