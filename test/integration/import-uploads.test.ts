import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import { loadState } from '../../lib/app/command-handler';
import { projectDecider } from '../../lib/domain/project';
import { streams } from '../../lib/domain/ids';
import { keptLogLines } from '../fixtures/log-lines';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';

/** Direct uploads through the signed upload_url, mixed with URL items (issue: import, rule 1). */
describe('import with direct uploads (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let wav: string;
  let mp3: string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uploads-'));
    let long: string;
    [wav, mp3, long] = await Promise.all([makeTestMedia(dir, 'wav', 2), makeTestMedia(dir, 'mp3', 3), makeTestMedia(dir, 'wav', 20)]);
    media = await startMediaServer({ 'voice.mp3': mp3, 'long.wav': long });
    h = await startHarness({ uploadTtlMs: 60 * 60 * 1000 });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  /** The path and query of a signed URL: the harness serves it through supertest. */
  const local = (url: string) => {
    const u = new URL(url);
    return `${u.pathname}${u.search}`;
  };
  const accept = async (body: Record<string, unknown>) => {
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.ok(h.schemas.validator('import-response')(res.body), JSON.stringify(h.schemas.validator('import-response').errors));
    return res.body as {
      job_id: string;
      project_id: string;
      upload_urls?: Record<string, { upload_url: string; asset_id: string; artifact_id: string }>;
    };
  };
  const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

  it('answers upload_urls only for upload items, mixes them with URL items, and processes the upload once it arrives', async () => {
    const bytes = readFileSync(wav);
    const accepted = await accept({
      project_name: 'Uploads',
      add_media: {
        'up.wav': { content_type: 'audio/wav', file_size: bytes.length, language: 'en' },
        'voice.mp3': { url: media.url('file', 'voice.mp3') },
      },
      add_compositions: [{ name: 'Both', clips: [{ media: 'up.wav' }, { media: 'voice.mp3' }] }],
    });
    assert.deepEqual(Object.keys(accepted.upload_urls ?? {}), ['up.wav']);
    const { upload_url, asset_id, artifact_id } = accepted.upload_urls!['up.wav'];
    assert.notEqual(asset_id, artifact_id);
    assert.ok(upload_url.startsWith('http://api.test/v1/uploads/'), upload_url);

    // Waiting for its upload, the job stays queued; the URL item is not lost meanwhile.
    await new Promise((r) => setTimeout(r, 300));
    const waiting = await h.http.get(`/v1/jobs/${accepted.job_id}`).set(h.auth());
    assert.equal(waiting.body.job_state, 'queued');
    assert.equal(waiting.body._uploads_until, undefined, 'internal read-model fields are never rendered');

    const put = await h.http.put(local(upload_url)).set('Content-Type', 'application/octet-stream').send(bytes);
    assert.equal(put.status, 200, JSON.stringify(put.body));

    const job = await h.waitForJob(accepted.job_id);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.ok(Math.abs(result.media_status['up.wav'].duration_seconds - 2) < 0.1);
    assert.ok(Math.abs(result.media_status['voice.mp3'].duration_seconds - 3) < 0.2);

    const { state } = await loadState(h.store, streams.project(accepted.project_id), projectDecider);
    assert.ok(state.exists);
    const file = state.media.get('up.wav')!;
    assert.equal(file.media_type, 'audio');
    assert.equal(file.size_bytes, bytes.length);
    assert.equal(sha(readFileSync(h.processorDeps.blobs.localPath(file.blob_key!))), sha(bytes), 'the stored bytes are the uploaded ones');

    assert.deepEqual(
      readdirSync(join(h.dir, 'uploads')).filter((f) => f.startsWith(asset_id)),
      [],
      'nothing of the upload stays in staging once the job has used it, not even its completion mark',
    );

    // The job's record answers instead of the mark: complete, and never stored over the imported file.
    const again = await h.http.put(local(upload_url)).set('Content-Type', 'application/octet-stream').send(bytes);
    assert.equal(again.status, 409, 'a PUT to an upload already complete is refused');
    assert.equal(again.body.state, 'complete');
    const status = await h.http.put(local(upload_url)).set('Content-Range', `bytes */${bytes.length}`);
    assert.deepEqual([status.status, status.body], [200, { asset_id, size: bytes.length }]);
    assert.deepEqual(
      readdirSync(join(h.dir, 'uploads')).filter((f) => f.startsWith(asset_id)),
      [],
    );
  });

  it('resumes an upload sent in three chunks, reporting progress with 308 and Range, and stores exactly the original bytes', async () => {
    const bytes = readFileSync(mp3);
    const accepted = await accept({
      project_name: 'Chunks',
      add_media: { 'big.mp3': { content_type: 'audio/mpeg', file_size: bytes.length } },
    });
    const path = local(accepted.upload_urls!['big.mp3'].upload_url);
    const put = (range: string, body: Buffer) =>
      h.http.put(path).set('Content-Type', 'application/octet-stream').set('Content-Range', range).send(body);
    const total = bytes.length;
    const cuts = [0, Math.floor(total / 3), Math.floor((2 * total) / 3), total];

    const first = await put(`bytes ${cuts[0]}-${cuts[1] - 1}/${total}`, bytes.subarray(cuts[0], cuts[1]));
    assert.equal(first.status, 308);
    assert.equal(first.headers.range, `bytes=0-${cuts[1] - 1}`);
    // Bytes are arriving: the job reads as running, its progress by the bytes of this one file.
    const uploading = await h.waitForJob(accepted.job_id, (j) => j.job_state === 'running');
    assert.deepEqual(uploading.progress && { ...(uploading.progress as object), last_update_at: 'T' }, {
      label: 'uploading big.mp3',
      percent: Math.floor((100 * cuts[1]) / total),
      last_update_at: 'T',
    });
    assert.ok(h.schemas.validator('job')(uploading), JSON.stringify(h.schemas.validator('job').errors));
    const status = await put(`bytes */${total}`, Buffer.alloc(0));
    assert.equal(status.status, 308);
    assert.equal(status.headers.range, `bytes=0-${cuts[1] - 1}`);
    assert.equal((await put(`bytes ${cuts[1]}-${cuts[2] - 1}/${total}`, bytes.subarray(cuts[1], cuts[2]))).status, 308);
    assert.equal((await put(`bytes ${cuts[2]}-${total - 1}/${total}`, bytes.subarray(cuts[2]))).status, 200);

    const job = await h.waitForJob(accepted.job_id);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
    const { state } = await loadState(h.store, streams.project(accepted.project_id), projectDecider);
    assert.ok(state.exists);
    const stored = readFileSync(h.processorDeps.blobs.localPath(state.media.get('big.mp3')!.blob_key!));
    assert.equal(sha(stored), sha(bytes));
  });

  it('refuses a tampered URL, a body larger than file_size and a body that is not octet-stream', async () => {
    const bytes = readFileSync(wav);
    const accepted = await accept({
      project_name: 'Refusals',
      add_media: { 'a.wav': { content_type: 'audio/wav', file_size: bytes.length } },
    });
    const url = new URL(accepted.upload_urls!['a.wav'].upload_url);
    const tampered = new URL(url);
    tampered.searchParams.set('file_size', String(bytes.length * 2));
    const r1 = await h.http
      .put(local(tampered.toString()))
      .set('Content-Type', 'application/octet-stream')
      .send(Buffer.concat([bytes, bytes]));
    assert.equal(r1.status, 403, JSON.stringify(r1.body));
    const r2 = await h.http
      .put(local(url.toString()))
      .set('Content-Type', 'application/octet-stream')
      .send(Buffer.concat([bytes, bytes]));
    assert.equal(r2.status, 413, JSON.stringify(r2.body));
    assert.match(r2.body.message, /file_size/);
    const r3 = await h.http.put(local(url.toString())).set('Content-Type', 'application/json').send('{}');
    assert.ok([400, 415].includes(r3.status), `${r3.status} ${JSON.stringify(r3.body)}`);
    // The upload is still possible after the refusals.
    const ok = await h.http.put(local(url.toString())).set('Content-Type', 'application/octet-stream').send(bytes);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(((await h.waitForJob(accepted.job_id)).result as any).status, 'success');
  });
  describe('a cancelled import leaves nothing of its uploads', () => {
    const staged = (assetId: string) => readdirSync(join(h.dir, 'uploads')).filter((f) => f.startsWith(assetId));
    const blobOf = (jobId: string, ref: string) =>
      h.store.readStream(`job-${jobId}`).then((events) => {
        const received = events.find((e) => e.type === 'UploadReceived' && e.data.ref === ref);
        assert.ok(received, `the upload of ${ref} was recorded`);
        return h.processorDeps.blobs.localPath(received.data.blob_key as string);
      });

    it('cancelled while it waits: the arrived file and the staged bytes go, and a later PUT is refused with 409', async () => {
      const bytes = readFileSync(wav);
      const accepted = await accept({
        project_name: 'Cancelled while waiting',
        add_media: {
          'whole.wav': { content_type: 'audio/wav', file_size: bytes.length },
          'half.wav': { content_type: 'audio/wav', file_size: bytes.length },
        },
      });
      const [whole, half] = [accepted.upload_urls!['whole.wav'], accepted.upload_urls!['half.wav']];
      const octets = (url: string) => h.http.put(local(url)).set('Content-Type', 'application/octet-stream');
      assert.equal((await octets(whole.upload_url).send(bytes)).status, 200);
      const cut = Math.floor(bytes.length / 2);
      const first = await octets(half.upload_url)
        .set('Content-Range', `bytes 0-${cut - 1}/${bytes.length}`)
        .send(bytes.subarray(0, cut));
      assert.equal(first.status, 308);
      const file = await blobOf(accepted.job_id, 'whole.wav');
      assert.ok(existsSync(file));
      assert.equal(staged(half.asset_id).length, 1, 'the first half is staged');

      assert.equal((await h.http.delete(`/v1/jobs/${accepted.job_id}`).set(h.auth())).status, 204);
      await waitFor(() => !existsSync(file) && staged(half.asset_id).length === 0, {
        timeoutMs: 5000,
        what: 'the uploads of the cancelled job to be removed',
      });

      const rest = await octets(half.upload_url)
        .set('Content-Range', `bytes ${cut}-${bytes.length - 1}/${bytes.length}`)
        .send(bytes.subarray(cut));
      assert.equal(rest.status, 409, JSON.stringify(rest.body));
      assert.equal(rest.body.state, 'cancelled');
      assert.match(rest.body.message, /cancelled and takes no more uploads/);
      const again = await octets(half.upload_url).send(bytes);
      assert.equal(again.status, 409, 'a whole-file PUT too');
      assert.deepEqual(staged(half.asset_id), [], 'nothing of the refused PUTs is stored');
    });

    it('cancelled while it runs: the attempt removes the uploaded file its project had not taken in yet', async () => {
      const bytes = readFileSync(wav);
      const accepted = await accept({
        project_name: 'Cancelled while running',
        add_media: {
          'slow.wav': { url: media.url('slow', 'long.wav') },
          'up.wav': { content_type: 'audio/wav', file_size: bytes.length },
        },
      });
      const { upload_url, asset_id } = accepted.upload_urls!['up.wav'];
      assert.equal((await h.http.put(local(upload_url)).set('Content-Type', 'application/octet-stream').send(bytes)).status, 200);
      const file = await blobOf(accepted.job_id, 'up.wav');
      // Every upload arrived, so the job runs: it is downloading the slow URL item first.
      await h.waitForJob(accepted.job_id, (j) => String((j.progress as { label?: string } | undefined)?.label).includes('slow.wav'));
      assert.ok(existsSync(file));

      assert.equal((await h.http.delete(`/v1/jobs/${accepted.job_id}`).set(h.auth())).status, 204);
      await waitFor(() => !existsSync(file), { timeoutMs: 5000, what: 'the uploaded file of the cancelled job to be removed' });
      assert.deepEqual(staged(asset_id), [], 'the completion mark goes too');
      const later = await h.http.put(local(upload_url)).set('Content-Type', 'application/octet-stream').send(bytes);
      assert.deepEqual([later.status, later.body.state], [409, 'complete'], 'a later PUT is refused as complete, from the job');
      assert.ok(!existsSync(file), 'and stores nothing');
      const { state } = await loadState(h.store, streams.project(accepted.project_id), projectDecider);
      assert.ok(state.exists);
      assert.equal(state.media.size, 0, 'the project took in neither file');
    });
  });
});

describe('import with an upload that never arrives', function () {
  this.timeout(30_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'expiry-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 1) });
    h = await startHarness({ uploadTtlMs: 2000, uploadScanMs: 100 });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  it('fails the missing file when its URL expires, ends the job partial, and refuses the expired URL', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Late',
        add_media: { 'late.wav': { content_type: 'audio/wav', file_size: 1000 }, 'voice.wav': { url: media.url('file', 'voice.wav') } },
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id, undefined, 15_000);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'partial', JSON.stringify(result));
    assert.equal(result.media_status['late.wav'].status, 'failed');
    assert.match(result.media_status['late.wav'].error_message, /did not arrive before its URL expired/);
    assert.equal(result.media_status['voice.wav'].status, 'success');

    const url = new URL(res.body.upload_urls['late.wav'].upload_url);
    const late = await h.http.put(`${url.pathname}${url.search}`).set('Content-Type', 'application/octet-stream').send(Buffer.alloc(1000));
    assert.equal(late.status, 403, JSON.stringify(late.body));
    assert.match(late.body.message, /expired/);
  });

  /**
   * A PUT that moved its file into the blob store but whose record never reached the job (the
   * 503 of issue 19, or the command API stopping in between), as the upload store leaves it.
   */
  const finishedButNotRecorded = async (projectId: string, assetId: string, bytes: Buffer) => {
    const uploads = createLocalUploadStore({ root: join(h.dir, 'uploads'), localPath: h.processorDeps.blobs.localPath });
    await uploads.append(assetId, 0, Readable.from([bytes]), { total: bytes.length });
    const blobKey = `${h.drive.drive_id}/${projectId}/${assetId}`;
    await uploads.complete(assetId, blobKey);
    return h.processorDeps.blobs.localPath(blobKey);
  };
  const staging = () => (existsSync(join(h.dir, 'uploads')) ? readdirSync(join(h.dir, 'uploads')) : []);

  it('deletes a file that arrived but was never recorded when the job starts, and leaves nothing in staging', async () => {
    const bytes = Buffer.alloc(1000, 1);
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Unrecorded',
        add_media: { 'lost.wav': { content_type: 'audio/wav', file_size: 1000 }, 'voice.wav': { url: media.url('file', 'voice.wav') } },
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const assetId = res.body.upload_urls['lost.wav'].asset_id as string;
    const file = await finishedButNotRecorded(res.body.project_id, assetId, bytes);
    assert.ok(existsSync(file));

    const job = await h.waitForJob(res.body.job_id, undefined, 15_000);
    assert.equal((job.result as any).media_status['lost.wav'].status, 'failed');
    assert.ok(!existsSync(file), 'the unowned file is gone');
    assert.deepEqual(
      staging().filter((f) => f.startsWith(assetId)),
      [],
      'its staging mark too',
    );
  });

  it('deletes a file that arrived but was never recorded when the job is cancelled', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'Unrecorded, cancelled', add_media: { 'lost.wav': { content_type: 'audio/wav', file_size: 500 } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const assetId = res.body.upload_urls['lost.wav'].asset_id as string;
    const file = await finishedButNotRecorded(res.body.project_id, assetId, Buffer.alloc(500, 2));
    assert.equal((await h.http.delete(`/v1/jobs/${res.body.job_id}`).set(h.auth())).status, 204);
    await waitFor(() => !existsSync(file) && staging().every((f) => !f.startsWith(assetId)), {
      timeoutMs: 5000,
      what: 'the never-recorded file and its mark to go with the cancelled job',
    });
  });

  it('ends the job with error when its only file never arrives', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'Never', add_media: { 'never.wav': { content_type: 'audio/wav', file_size: 1000 } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id, undefined, 15_000);
    assert.equal((job.result as any).status, 'error', JSON.stringify(job.result));
  });
});

/** Issue 19, finding 3: PUTs racing on one job's stream, and what a single upload logs meanwhile. */
describe('import with many uploads to one job at once', function () {
  this.timeout(120_000);
  let h: Harness;
  let wav: Buffer;
  const kept = keptLogLines<{ level: number; msg: string; err?: { stack?: string } }>();
  const lines = kept.lines;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parallel-'));
    wav = readFileSync(await makeTestMedia(dir, 'wav', 1));
    // Files up to 2 GiB, as configured by default; the request's total is UPLOAD_BYTES_PER_REQUEST's default.
    h = await startHarness({ uploadTtlMs: 60 * 60 * 1000, logger: kept.logger, mediaMaxBytes: 2 * 1024 ** 3 });
  });
  after(async () => h?.close());

  const local = (url: string) => `${new URL(url).pathname}${new URL(url).search}`;
  const octets = (url: string) => h.http.put(local(url)).set('Content-Type', 'application/octet-stream');
  const staged = () => (existsSync(join(h.dir, 'uploads')) ? readdirSync(join(h.dir, 'uploads')) : []);
  const blobsOf = (projectId: string) => {
    const folder = join(h.dir, 'blobs', h.drive.drive_id, projectId);
    return existsSync(folder) ? readdirSync(folder) : [];
  };

  it('answers 100 simultaneous PUTs to one job with 100 × 200, records each file once, and leaves no file unowned', async () => {
    const refs = Array.from({ length: 100 }, (_, i) => `take-${i}.wav`);
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Hundred',
        add_media: Object.fromEntries(refs.map((r) => [r, { content_type: 'audio/wav', file_size: wav.length }])),
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const urls = res.body.upload_urls as Record<string, { upload_url: string; asset_id: string }>;

    const answers = await Promise.all(refs.map((r) => octets(urls[r].upload_url).send(wav)));
    const statuses = answers.map((a) => a.status);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      `every PUT answered 200; the others said ${JSON.stringify(answers.find((a) => a.status !== 200)?.body)}`,
    );

    const received = (await h.store.readStream(`job-${res.body.job_id}`)).filter((e) => e.type === 'UploadReceived');
    assert.equal(received.length, 100, 'each upload recorded once');
    const job = await h.waitForJob(res.body.job_id, undefined, 90_000);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result).slice(0, 500));
    const assets = new Set(refs.map((r) => urls[r].asset_id));
    assert.deepEqual(
      blobsOf(res.body.project_id).filter((f) => assets.has(f) && !received.some((e) => String(e.data.blob_key).endsWith(f))),
      [],
      'no uploaded file is left that its job does not own',
    );
    assert.deepEqual(staged(), [], 'nor anything in staging');
  });

  it('refuses a request whose upload items declare 100 × 2 GiB (400 naming the item that passes the limit)', async () => {
    const refs = Array.from({ length: 100 }, (_, i) => `huge-${i}.mov`);
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Too much',
        add_media: Object.fromEntries(refs.map((r) => [r, { content_type: 'video/quicktime', file_size: 2 * 1024 ** 3 }])),
      });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error, 'invalid_input');
    assert.match(res.body.message, /^add_media\["huge-5\.mov"\]\.file_size: the upload items of this request declare 12884901888 bytes/);
    assert.match(res.body.message, /over the limit of 10737418240 per request/);
  });

  it('logs no warning for one upload whose progress reports race with its own recording', async () => {
    const big = Buffer.concat(Array.from({ length: 40 }, () => wav));
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'One', add_media: { 'one.wav': { content_type: 'audio/wav', file_size: big.length } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    lines.length = 0;
    const put = await octets(res.body.upload_urls['one.wav'].upload_url).send(big);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    await h.waitForJob(res.body.job_id);
    const warnings = lines.filter((l) => l.level >= 40);
    assert.deepEqual(
      warnings.map((l) => `${l.msg}: ${l.err?.stack?.split('\n')[0] ?? ''}`),
      [],
      'expected contention on the job stream is no warning',
    );
  });
});
