import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Koa from 'koa';
import pino from 'pino';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import { conflict, type AppError } from '../../lib/domain/errors';
import { createHttpServer } from '../../lib/http/listen';
import { errorHandler, notFoundFallback, requestContext } from '../../lib/http/middleware';
import type { UploadLimits } from '../../services/command-api/upload-limits';
import { createUploadRoutes, uploadUrl, UPLOAD_URL_TTL_MS, type UploadParams } from '../../services/command-api/uploads';
import { failOnUncaughtException, waitFor } from '../fixtures/wait';

type Reply = { status: number; headers: IncomingHttpHeaders; body: any };
type Body = Buffer | Readable | undefined;
const MB = 1024 * 1024;
const OCTETS = { 'Content-Type': 'application/octet-stream' };
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A PUT over a fresh connection; `sent` lets a test hold the request open. */
function put(url: string, headers: Record<string, string | number>, body?: Body): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null });
      });
    });
    req.on('error', reject);
    if (body instanceof Readable) body.pipe(req);
    else req.end(body);
  });
}

describe('Direct uploads: PUT /v1/uploads/:asset_id (signed, resumable)', function () {
  this.timeout(60_000);
  failOnUncaughtException();
  const secret = 'integration-test-secret';
  let dir: string;
  let server: Server;
  let base: string;
  let now: Date;
  let recorded: { params: UploadParams; blobKey: string; size: number }[];
  let failRecording: number;
  let calls: number;
  /** What the job answers when asked whether it takes the upload (null: it does). */
  let jobAnswer: Error | null;
  /** What the job answers when told of a finished upload (null: it records it). */
  let refuseRecording: Error | null;
  const blobs = () => createLocalBlobStore({ root: join(dir, 'blobs') });
  const stagingRoot = () => blobs().localPath('uploads');

  /** The upload routes on a loopback server of their own, with `limits` (the defaults unless told). */
  const startServer = async (limits?: UploadLimits) => {
    const store = blobs();
    const uploads = createLocalUploadStore({ root: stagingRoot(), localPath: store.localPath });
    const routes = createUploadRoutes({
      secret,
      clock: { now: () => now },
      uploads,
      blobKeyFor: (p) => `${p.drive_id}/${p.project_id}/${p.asset_id}.bin`,
      // As the job: told again of an upload it holds, it records nothing new.
      recordUpload: async (params, { blobKey, size }) => {
        calls++;
        if (failRecording-- > 0) throw new Error('event store unreachable');
        if (refuseRecording) throw refuseRecording;
        if (!recorded.some((r) => r.params.asset_id === params.asset_id)) recorded.push({ params, blobKey, size });
      },
      checkJob: async () => {
        if (jobAnswer) throw jobAnswer;
      },
      discardBlob: (key) => store.delete(key),
      limits,
    });
    const app = new Koa();
    app.silent = true;
    app.use(requestContext(pino({ level: 'silent' })));
    app.use(errorHandler());
    app.use(routes.routes());
    app.use(notFoundFallback());
    const listening = createHttpServer(app.callback());
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    return { server: listening, base: `http://127.0.0.1:${(listening.address() as { port: number }).port}/v1` };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'uploads-'));
    ({ server, base } = await startServer());
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  // The 200 MB test's memory sampler, stopped even when that test times out.
  let sampler: NodeJS.Timeout | undefined;
  afterEach(() => clearInterval(sampler));
  beforeEach(() => {
    now = new Date('2025-03-01T10:00:00Z');
    recorded = [];
    failRecording = 0;
    calls = 0;
    jobAnswer = null;
    refuseRecording = null;
  });

  const newUpload = (fileSize: number, overrides: Partial<UploadParams> = {}, at = base) => {
    const params = {
      asset_id: randomUUID(),
      job_id: 'project-media-import-0c9d6f3e-6a57-4f44-9a59-2f3b1a0f2d11',
      drive_id: randomUUID(),
      project_id: randomUUID(),
      media_ref: 'Interview #1 & more.mp4',
      content_type: 'video/mp4',
      file_size: fileSize,
      ...overrides,
    };
    const url = uploadUrl(
      at,
      { ...params, extra: { artifact_id: 'art-1' } },
      { secret, expiresAt: new Date(now.getTime() + UPLOAD_URL_TTL_MS) },
    );
    return { ...params, url, key: `${params.drive_id}/${params.project_id}/${params.asset_id}.bin` };
  };
  const stored = (key: string) =>
    new Promise<string>((resolve, reject) => {
      const hash = createHash('sha256');
      createReadStream(blobs().localPath(key))
        .on('error', reject)
        .on('data', (c) => hash.update(c))
        .on('end', () => resolve(hash.digest('hex')));
    });
  const part = (first: number, last: number, total: number) => ({ ...OCTETS, 'Content-Range': `bytes ${first}-${last}/${total}` });
  const progress = (url: string, total: number) => put(url, { 'Content-Range': `bytes */${total}` });
  const expectError = (res: Reply, status: number, error: string, message: RegExp) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error, error);
    assert.match(res.body.message, message);
  };

  it('stores a one-shot upload byte for byte, records it once, and then reports it complete', async () => {
    const file = randomBytes(3 * MB + 17);
    const u = newUpload(file.length);
    const res = await put(u.url, { ...OCTETS, 'Content-Length': file.length }, file);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { asset_id: u.asset_id, size: file.length });
    assert.equal(await stored(u.key), sha256(file));
    assert.equal(recorded.length, 1);
    const { url: _url, key, ...params } = u;
    assert.deepEqual(recorded[0], { params: { ...params, extra: { artifact_id: 'art-1' } }, blobKey: key, size: file.length });
    assert.equal(existsSync(join(stagingRoot(), `${u.asset_id}.part`)), false);
    const again = await progress(u.url, file.length);
    assert.deepEqual([again.status, again.body], [200, { asset_id: u.asset_id, size: file.length }]);
    assert.equal(recorded.length, 1, 'told again, the job holds it once');
  });

  it('resumes in three parts with status queries between them, skipping re-sent bytes and refusing gaps', async () => {
    const file = randomBytes(5 * MB + 123);
    const total = file.length;
    const u = newUpload(total);
    const first = await progress(u.url, total);
    assert.deepEqual([first.status, first.headers.range], [308, undefined]);

    const one = await put(u.url, part(0, 2 * MB - 1, total), file.subarray(0, 2 * MB));
    assert.deepEqual([one.status, one.headers.range, one.body], [308, `bytes=0-${2 * MB - 1}`, null]);
    const asked = await progress(u.url, total);
    assert.deepEqual([asked.status, asked.headers.range], [308, `bytes=0-${2 * MB - 1}`]);

    const gap = await put(u.url, part(3 * MB, total - 1, total), file.subarray(3 * MB));
    expectError(gap, 409, 'conflict', /has 2097152 bytes.*continue at 2097152/);
    assert.deepEqual([gap.body.state, gap.headers.range], ['incomplete', `bytes=0-${2 * MB - 1}`]);

    // A retry that overlaps what is held (its first answer was lost): only the new bytes count.
    const two = await put(u.url, part(MB, 4 * MB - 1, total), file.subarray(MB, 4 * MB));
    assert.deepEqual([two.status, two.headers.range], [308, `bytes=0-${4 * MB - 1}`]);
    const held = await put(u.url, part(0, MB - 1, total), file.subarray(0, MB));
    assert.deepEqual([held.status, held.headers.range], [308, `bytes=0-${4 * MB - 1}`]);

    const three = await put(u.url, part(4 * MB, total - 1, total), file.subarray(4 * MB));
    assert.deepEqual([three.status, three.body], [200, { asset_id: u.asset_id, size: total }]);
    assert.equal(await stored(u.key), sha256(file));
    assert.equal(recorded.length, 1);
  });

  it('refuses a body larger than file_size (413) and keeps nothing of it', async () => {
    const u = newUpload(MB);
    const declared = await put(u.url, { ...OCTETS, 'Content-Length': MB + 1 }, randomBytes(MB + 1));
    expectError(declared, 413, 'payload_too_large', /file_size of 1048576 bytes/);

    // Without Content-Length the server finds out while reading: it answers and stops reading.
    let generated = 0;
    const endless = Readable.from(
      (function* () {
        for (;;) {
          generated += 64 * 1024;
          yield Buffer.alloc(64 * 1024, 7);
        }
      })(),
    );
    // Keep-alive, so that only the server's own `Connection: close` can end the connection.
    const agent = new Agent({ keepAlive: true });
    const req = request(u.url, { method: 'PUT', headers: OCTETS, agent });
    req.on('error', () => undefined); // the server closes the connection on us: that is the point
    let closed = false;
    req.on('close', () => (closed = true));
    const res = await new Promise<{ statusCode?: number }>((resolve) => {
      req.on('response', resolve);
      endless.pipe(req);
    });
    assert.equal(res.statusCode, 413);
    // Promptly: not left to the server's 5 s keep-alive timeout, with the body stalled meanwhile.
    await waitFor(() => closed, { timeoutMs: 2000, what: 'the server to close the connection' });
    endless.destroy();
    agent.destroy();
    assert.ok(generated < MB + 64 * MB, `the server stopped reading (${generated} bytes generated)`);

    const after = await progress(u.url, MB);
    assert.deepEqual([after.status, after.headers.range], [308, undefined]);
    assert.equal(calls, 0);
  });

  it('refuses a part longer than its Content-Range, keeping the parts before it', async () => {
    const file = randomBytes(2 * MB);
    const u = newUpload(file.length);
    assert.equal((await put(u.url, part(0, MB - 1, file.length), file.subarray(0, MB))).status, 308);
    // Streamed (no Content-Length), so only the bytes themselves show it is too long.
    const long = await put(u.url, part(MB, MB + 9, file.length), Readable.from([file.subarray(MB, MB + 20)]));
    expectError(long, 413, 'payload_too_large', /Content-Range bytes 1048576-1048585/);
    const after = await progress(u.url, file.length);
    assert.equal(after.headers.range, `bytes=0-${MB - 1}`);
  });

  it('keeps a whole-file body that ended short (400 naming file_size) so the rest can follow as a part', async () => {
    const file = randomBytes(2 * MB);
    const u = newUpload(file.length);
    const short = await put(u.url, OCTETS, Readable.from([file.subarray(0, MB)]));
    expectError(
      short,
      400,
      'invalid_input',
      /ended after 1048576 of the file_size of 2097152 bytes: send the rest with Content-Range: bytes 1048576-2097151\/2097152/,
    );
    assert.equal(short.headers.range, `bytes=0-${MB - 1}`);
    const rest = await put(u.url, part(MB, 2 * MB - 1, file.length), file.subarray(MB));
    assert.equal(rest.status, 200);
    assert.equal(await stored(u.key), sha256(file));
  });

  it('refuses tampered and expired URLs with 403 forbidden, and keeps nothing', async () => {
    const u = newUpload(16);
    const body = randomBytes(16);
    const tampered = new URL(u.url);
    tampered.searchParams.set('file_size', '17');
    expectError(await put(tampered.href, OCTETS, body), 403, 'forbidden', /signature does not match/);
    const otherAsset = u.url.replace(u.asset_id, randomUUID());
    expectError(await put(otherAsset, OCTETS, body), 403, 'forbidden', /not valid/);
    expectError(await put(u.url.replace(/signature=[^&]+/, 'signature=abc'), OCTETS, body), 403, 'forbidden', /not valid/);
    expectError(await put(u.url.split('?')[0], OCTETS, body), 403, 'forbidden', /not valid/);

    now = new Date(now.getTime() + UPLOAD_URL_TTL_MS);
    expectError(await put(u.url, OCTETS, body), 403, 'forbidden', /expired at 2025-03-01T13:00:00.000Z/);
    now = new Date(now.getTime() - 1000);
    const status = await progress(u.url, 16);
    assert.deepEqual([status.status, status.headers.range], [308, undefined]);
  });

  it('answers a refused PUT of a small body after reading it, on a connection that stays open (no reset under a client still sending)', async () => {
    const u = newUpload(1_400_000);
    const tampered = new URL(u.url);
    tampered.searchParams.set('file_size', '1400001');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (url: string, bytes: Buffer) =>
      new Promise<{ status: number; connection?: string; reused: boolean; body: string }>((resolve, reject) => {
        const req = request(url, { method: 'PUT', agent, headers: { ...OCTETS, 'content-length': bytes.length } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, reused: req.reusedSocket, body }));
        });
        req.on('error', reject);
        req.end(bytes);
      });
    try {
      const first = await send(tampered.href, randomBytes(1_400_000));
      assert.equal(first.status, 403, first.body);
      assert.notEqual(first.connection, 'close');
      const second = await send(tampered.href, randomBytes(1_400_000));
      assert.deepEqual([second.status, second.reused], [403, true], 'the same connection answers the next request');
    } finally {
      agent.destroy();
    }
  });

  it('refuses a PUT after completion with 409 conflict (state complete), re-sent or not', async () => {
    const file = randomBytes(1000);
    const u = newUpload(file.length);
    assert.equal((await put(u.url, OCTETS, file)).status, 200);
    const again = await put(u.url, OCTETS, file);
    expectError(again, 409, 'conflict', /already complete/);
    assert.equal(again.body.state, 'complete');
    expectError(await put(u.url, part(0, 99, 1000), file.subarray(0, 100)), 409, 'conflict', /already complete/);
    assert.equal(await stored(u.key), sha256(file));
  });

  it('refuses a body not sent as application/octet-stream (415), and a malformed Content-Range (400)', async () => {
    const u = newUpload(10);
    const body = Buffer.from('0123456789');
    expectError(
      await put(u.url, { 'Content-Type': 'video/mp4' }, body),
      415,
      'invalid_input',
      /Content-Type must be application\/octet-stream, not video\/mp4/,
    );
    expectError(await put(u.url, {}, body), 415, 'invalid_input', /Content-Type/);
    expectError(await put(u.url, { ...OCTETS, 'Content-Encoding': 'gzip' }, body), 415, 'invalid_input', /Content-Encoding gzip/);
    for (const range of ['bytes 0-4', 'bytes=0-4/10', 'bytes 5-4/10', 'bytes 0-10/10', 'items 0-4/10']) {
      expectError(await put(u.url, { ...OCTETS, 'Content-Range': range }, body.subarray(0, 5)), 400, 'invalid_input', /Content-Range/);
    }
    expectError(
      await put(u.url, part(0, 4, 11), body.subarray(0, 5)),
      400,
      'invalid_input',
      /Content-Range total 11 differs from the file_size of 10/,
    );
    expectError(await put(u.url, part(0, 4, 10), body), 400, 'invalid_input', /Content-Length 10 does not match Content-Range/);
    const status = await progress(u.url, 10);
    assert.deepEqual([status.status, status.headers.range], [308, undefined]);
  });

  it('resumes from the reported Range after a client disconnects mid-part; a second PUT meanwhile is refused', async () => {
    const file = randomBytes(8 * MB);
    const total = file.length;
    const u = newUpload(total);
    assert.equal((await put(u.url, part(0, MB - 1, total), file.subarray(0, MB))).status, 308);

    const req = request(u.url, { method: 'PUT', headers: { ...part(MB, total - 1, total), 'Content-Length': total - MB }, agent: false });
    req.on('error', () => undefined);
    req.write(file.subarray(MB, 3 * MB));
    const staged = join(stagingRoot(), `${u.asset_id}.part`);
    await waitFor(() => statSync(staged).size === 3 * MB, { what: 'the first 3 MB on disk' });

    // While that part is being received: progress excludes it (after waiting a moment for it to
    // end), and a competing part is refused.
    assert.equal((await progress(u.url, total)).headers.range, `bytes=0-${MB - 1}`);
    const rival = await put(u.url, part(MB, 2 * MB - 1, total), file.subarray(MB, 2 * MB));
    expectError(rival, 409, 'conflict', /still being received/);
    assert.equal(rival.body.state, 'uploading');

    // A client cut off asks at once, while the server still writes what arrived: the answer waits
    // for that, so the bytes are not sent twice.
    req.destroy();
    const reported = await progress(u.url, total);
    assert.equal(reported.headers.range, `bytes=0-${3 * MB - 1}`, 'the cut-off part kept, reported to the first query');
    assert.equal(reported.status, 308);
    const next = Number(/bytes=0-(\d+)/.exec(reported.headers.range as string)![1]) + 1;
    const rest = await put(u.url, part(next, total - 1, total), file.subarray(next));
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.equal(await stored(u.key), sha256(file));
  });

  it('streams a 200 MB body to disk without holding it in memory', async () => {
    const total = 200 * MB;
    const u = newUpload(total);
    const hash = createHash('sha256');
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < total / MB; i++) {
          const chunk = Buffer.allocUnsafe(MB).fill(i % 251);
          chunk.writeUInt32BE(i);
          hash.update(chunk);
          yield chunk;
        }
      })(),
      { highWaterMark: 1 }, // the client side of this test must not buffer either
    );
    // What is retained, not garbage waiting for V8's external-memory threshold (tens of MB).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const used = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const baseline = used();
    let peak = baseline;
    // A full collection per sample: every 250 ms, so that in a mocha process whose heap earlier
    // files grew, collecting does not crowd out the upload itself (a buffered body would still show:
    // it grows for the whole transfer). Cleared on a timeout too, or its collections slow every later test.
    sampler = setInterval(() => (peak = Math.max(peak, used())), 250);
    try {
      const res = await put(u.url, { ...OCTETS, 'Content-Length': total }, source);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    } finally {
      clearInterval(sampler);
    }
    const growth = peak - baseline;
    assert.ok(
      growth < 64 * MB,
      `heap + buffers grew by ${Math.round(growth / MB)} MB for a ${total / MB} MB body (from ${Math.round(baseline / MB)} MB)`,
    );
    assert.equal(await stored(u.key), hash.digest('hex'));
  });

  it('records a completed upload exactly once, even when the final PUT is retried', async () => {
    const file = randomBytes(2 * MB);
    const u = newUpload(file.length);
    assert.equal((await put(u.url, part(0, MB - 1, file.length), file.subarray(0, MB))).status, 308);
    const last = () => put(u.url, part(MB, 2 * MB - 1, file.length), file.subarray(MB));
    assert.equal((await last()).status, 200);
    expectError(await last(), 409, 'conflict', /already complete/);
    assert.equal(recorded.length, 1);
  });

  it('maps a storage fault to a retriable 503 that names no server path', async () => {
    writeFileSync(join(dir, 'not-a-folder'), '');
    const broken = createLocalUploadStore({ root: join(dir, 'not-a-folder', 'uploads'), localPath: blobs().localPath });
    const err = await broken.append(randomUUID(), 0, Readable.from([Buffer.from('abc')]), { total: 3 }).then(
      () => assert.fail('appended into a file'),
      (e: AppError) => e,
    );
    assert.deepEqual([err.code, err.status, err.retriable], ['unavailable', 503, true]);
    assert.equal(err.message, 'media storage is misconfigured (a file stands where a folder should be)');
    assert.match(String((err.cause as Error).message), /not-a-folder/);
  });

  it('refuses a PUT once the job takes no more uploads (409), storing none of it and removing what was staged', async () => {
    const file = randomBytes(1000);
    const u = newUpload(file.length);
    assert.equal((await put(u.url, part(0, 399, 1000), file.subarray(0, 400))).status, 308);
    const staging = join(stagingRoot(), `${u.asset_id}.part`);
    assert.ok(existsSync(staging));

    jobAnswer = conflict('the job is cancelled and takes no more uploads', 'cancelled');
    const rest = await put(u.url, part(400, 999, 1000), file.subarray(400));
    expectError(rest, 409, 'conflict', /cancelled/);
    assert.equal(rest.body.state, 'cancelled');
    assert.ok(!existsSync(staging), 'the staged part is gone');
    expectError(await put(u.url, OCTETS, file), 409, 'conflict', /cancelled/);
    expectError(await progress(u.url, 1000), 409, 'conflict', /cancelled/);
    assert.ok(!existsSync(staging), 'nothing of the refused PUTs was stored');
    assert.equal(calls, 0);
  });

  it('answers 503 when the job cannot be read, keeping what was staged', async () => {
    const file = randomBytes(1000);
    const u = newUpload(file.length);
    assert.equal((await put(u.url, part(0, 399, 1000), file.subarray(0, 400))).status, 308);
    jobAnswer = new Error('event store unreachable');
    expectError(await put(u.url, part(400, 999, 1000), file.subarray(400)), 503, 'unavailable', /retry/);
    jobAnswer = null;
    assert.equal((await progress(u.url, 1000)).headers.range, 'bytes=0-399', 'the first part is still there');
    assert.equal((await put(u.url, part(400, 999, 1000), file.subarray(400))).status, 200);
    assert.equal(await stored(u.key), sha256(file));
  });

  it('removes a finished file whose job refuses it when told (cancelled during the PUT)', async () => {
    const file = randomBytes(MB);
    const u = newUpload(file.length);
    refuseRecording = conflict('the job is cancelled and takes no more uploads', 'cancelled');
    expectError(await put(u.url, OCTETS, file), 409, 'conflict', /cancelled/);
    assert.ok(!existsSync(blobs().localPath(u.key)), 'the file went with the refusal');
    assert.deepEqual(
      readdirSync(stagingRoot()).filter((f) => f.startsWith(u.asset_id)),
      [],
      'its completion mark too',
    );
    // The job refuses from now on, as it did the record.
    jobAnswer = refuseRecording;
    expectError(await progress(u.url, file.length), 409, 'conflict', /cancelled/);
    assert.equal(recorded.length, 0);
  });

  it('fails the final PUT with 503 when recording fails, and records on the retry', async () => {
    const file = randomBytes(MB);
    const u = newUpload(file.length);
    failRecording = 1;
    expectError(await put(u.url, OCTETS, file), 503, 'unavailable', /retry/);
    assert.equal(recorded.length, 0);
    assert.equal(await stored(u.key), sha256(file)); // the bytes are safe meanwhile

    const retried = await put(u.url, OCTETS, file);
    expectError(retried, 409, 'conflict', /already complete/);
    assert.equal(recorded.length, 1);
    assert.equal((await progress(u.url, file.length)).status, 200);
    assert.equal(recorded.length, 1);
  });

  /**
   * A PUT that sends `first` and then nothing until told: its answer (if the server gives one),
   * when its connection closes, and a way to end it.
   */
  const hold = (url: string, headers: Record<string, string | number>, first: Buffer) => {
    const req = request(url, { method: 'PUT', headers, agent: false });
    req.on('error', () => undefined); // the server may close on us: that is what some tests check
    const closed = new Promise<void>((resolve) => req.once('close', () => resolve()));
    const answer = new Promise<Reply>((resolve) =>
      req.once('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null });
        });
      }),
    );
    req.write(first);
    return { answer, closed, destroy: () => req.destroy() };
  };
  const within = <T>(promise: Promise<T>, ms: number, what: string) =>
    Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms))]);
  const stagedBytes = (assetId: string) => {
    const path = join(stagingRoot(), `${assetId}.part`);
    return existsSync(path) ? statSync(path).size : -1;
  };

  describe('bounds (issue 19, finding 2)', () => {
    let idle: Awaited<ReturnType<typeof startServer>>;
    let tight: Awaited<ReturnType<typeof startServer>>;
    const TIGHT: UploadLimits = { perDrive: 2, perProcess: 3, bytesPerDrive: MB, idleTimeoutMs: 60_000 };
    before(async () => {
      idle = await startServer({ perDrive: 8, perProcess: 64, bytesPerDrive: 1024 * MB, idleTimeoutMs: 1000 });
      tight = await startServer(TIGHT);
    });
    after(async () => {
      for (const s of [idle, tight]) s?.server.closeAllConnections();
      await Promise.all([idle, tight].map((s) => s && new Promise((resolve) => s.server.close(resolve))));
    });

    it('closes a PUT whose body sends no byte for the idle deadline (400 with Range), keeping its bytes to resume from', async () => {
      const file = randomBytes(64 * 1024);
      const u = newUpload(file.length, {}, idle.base);
      const stalled = hold(u.url, { ...OCTETS, 'Content-Length': file.length }, file.subarray(0, 1000));
      // The deadline is 1 s; generous bounds for a loaded machine, far below Node's own 60 s.
      const answer = await within(stalled.answer, 15_000, 'answer to the idle PUT');
      expectError(answer, 400, 'invalid_input', /no byte of the request body arrived for 1 s/);
      assert.equal(answer.headers.range, 'bytes=0-999');
      assert.equal(answer.headers.connection, 'close');
      await within(stalled.closed, 5000, 'close of the idle connection');

      const rest = await put(u.url, part(1000, file.length - 1, file.length), file.subarray(1000));
      assert.equal(rest.status, 200, JSON.stringify(rest.body));
      assert.equal(await stored(u.key), sha256(file));
    });

    it('lets the idle deadline of a body it never read pass without an uncaught error (a second PUT while one is receiving)', async () => {
      const file = randomBytes(MB);
      const u = newUpload(file.length, {}, idle.base);
      const first = hold(u.url, { ...OCTETS, 'Content-Length': file.length }, file.subarray(0, 1000));
      await waitFor(() => stagedBytes(u.asset_id) === 1000, { what: 'the first PUT to be receiving' });
      // The store refuses the second while the first appends, before reading its body.
      const second = hold(u.url, { ...OCTETS, 'Content-Length': file.length }, file.subarray(0, 512 * 1024));
      const refused = await within(second.answer, 15_000, 'answer to the second PUT');
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      // Past the 1 s deadline: its destroy with no listener was an uncaught exception (mocha fails this test then).
      await new Promise((r) => setTimeout(r, 2500));
      first.destroy();
      second.destroy();
    });

    it('receives at most 2 PUTs of one drive (429 with Retry-After) and 3 in all (503 with Retry-After), other drives going on', async () => {
      const drive = randomUUID();
      const [a1, a2, a3] = [0, 1, 2].map(() => newUpload(1000, { drive_id: drive }, tight.base));
      const held = [a1, a2].map((u) => hold(u.url, { ...OCTETS, 'Content-Length': 1000 }, Buffer.alloc(10)));
      await waitFor(() => stagedBytes(a1.asset_id) === 10 && stagedBytes(a2.asset_id) === 10, { what: 'both slow PUTs to be receiving' });

      const third = await put(a3.url, { ...OCTETS, 'Content-Length': 1000 }, Buffer.alloc(1000));
      expectError(third, 429, 'rate_limit_exceeded', /2 uploads of this drive are being received \(at most 2 at once\)/);
      assert.deepEqual([third.headers['retry-after'], third.headers['x-ratelimit-remaining']], ['5', '0']);
      assert.equal(stagedBytes(a3.asset_id), -1, 'nothing of it was stored');

      // Another drive still uploads: the third slot of the process.
      const other = newUpload(1000, {}, tight.base);
      assert.equal((await put(other.url, { ...OCTETS, 'Content-Length': 1000 }, Buffer.alloc(1000, 3))).status, 200);
      const b = newUpload(1000, {}, tight.base);
      const bHeld = hold(b.url, { ...OCTETS, 'Content-Length': 1000 }, Buffer.alloc(10));
      await waitFor(() => stagedBytes(b.asset_id) === 10, { what: 'the third slow PUT to be receiving' });
      const c = newUpload(1000, {}, tight.base);
      const full = await put(c.url, { ...OCTETS, 'Content-Length': 1000 }, Buffer.alloc(1000));
      expectError(full, 503, 'unavailable', /receiving 3 uploads, its most at once/);
      assert.equal(full.headers['retry-after'], '5');

      for (const h of [...held, bHeld]) h.destroy();
      await Promise.all([...held, bHeld].map((h) => h.closed));
      // Slots free once the bodies end; a refused upload then goes through.
      const retried = await waitFor(
        async () => {
          const res = await put(a3.url, { ...OCTETS, 'Content-Length': 1000 }, Buffer.alloc(1000));
          return res.status === 200 ? res : null;
        },
        { what: 'the refused PUT to be admitted once the others ended' },
      );
      assert.equal(retried.body.size, 1000);
    });

    it('refuses a PUT whose bytes would take its drive over the bytes allowed in progress (429)', async () => {
      const drive = randomUUID();
      const big = newUpload(800 * 1024, { drive_id: drive }, tight.base);
      const slow = hold(big.url, { ...OCTETS, 'Content-Length': 800 * 1024 }, Buffer.alloc(10));
      await waitFor(() => stagedBytes(big.asset_id) === 10, { what: 'the slow PUT to be receiving' });
      const next = newUpload(400 * 1024, { drive_id: drive }, tight.base);
      const refused = await put(next.url, { ...OCTETS, 'Content-Length': 400 * 1024 }, Buffer.alloc(400 * 1024));
      expectError(refused, 429, 'rate_limit_exceeded', /declare 819200 bytes; 409600 more would pass the 1048576 allowed at once/);
      slow.destroy();
      await slow.closed;
    });
  });
});
