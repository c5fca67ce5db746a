import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { updateDrive } from '../../lib/app/admin';
import { handleCommand } from '../../lib/app/command-handler';
import { compositionDecider } from '../../lib/domain/composition';
import type { Word } from '../../lib/domain/edl';
import { streams } from '../../lib/domain/ids';
import { jobDecider, type PublishRequest } from '../../lib/domain/job';
import { SLUG } from '../../lib/domain/publication';
import { PUBLICATIONS, type PublicationDoc } from '../../lib/read-models/publications';
import { startHarness, WEB_URL, BASE_URL, type Harness } from '../fixtures/harness';
import { startMediaServer } from '../fixtures/media-server';
import { seedTranscribedProject } from '../fixtures/seed-project';
import { waitFor } from '../fixtures/wait';
import { bandLevel, processesMentioning } from '../fixtures/media-measure';

const run = promisify(execFile);
const { ffmpeg, ffprobe } = resolveFfmpegPaths();

async function probe(path: string) {
  const { stdout } = await run(ffprobe, ['-v', 'error', '-show_streams', '-show_format', '-of', 'json', path]);
  return JSON.parse(stdout) as {
    streams: { codec_type: string; codec_name: string; width?: number; height?: number; duration?: string; r_frame_rate?: string }[];
    format: { duration: string; format_name: string };
  };
}

/**
 * Issue 21 on the engine: publish jobs render compositions with real ffmpeg, record the render on
 * the publication before the job stops, and hand out signed download URLs the query API serves.
 * Jobs are queued as the command API's accept queues them (its own rules are tested in
 * publish-accept.test.ts); here is what the processor makes of them.
 */
describe('publish jobs: renders, publications, downloads', function () {
  this.timeout(180_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let projectId: string;
  let mainId: string;

  /** 4 s of 1280x720 at 30 fps whose sound is 440 Hz for 2 s, then 880 Hz. */
  async function toneVideo(dir: string): Promise<string> {
    const file = join(dir, 'tone.mp4');
    await run(ffmpeg, [
      ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=30:duration=4'],
      ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=2'],
      ...['-f', 'lavfi', '-i', 'sine=frequency=880:sample_rate=48000:duration=2'],
      ...['-filter_complex', '[1:a][2:a]concat=n=2:v=0:a=1[a]', '-map', '0:v', '-map', '[a]'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', file],
    ]);
    return file;
  }

  async function queuePublish(request: Partial<PublishRequest> & { composition_id: string }, project = projectId): Promise<string> {
    const jobId = randomUUID();
    const full: PublishRequest = {
      media_type: 'Video',
      resolution: null,
      access_level: 'unlisted',
      published_by: { user_id: 'u-1', first_name: 'Ada', last_name: 'Lovelace' },
      ...request,
    };
    const job = {
      job_id: jobId,
      job_type: 'publish' as const,
      drive_id: h.drive.drive_id,
      project_id: project,
      project_url: `${WEB_URL}/${project}`,
      created_by: 'u-1',
      callback_url: null,
      request: full,
    };
    await handleCommand(
      h.store,
      streams.job(jobId),
      jobDecider,
      { type: 'QueueJob', job, now: new Date().toISOString() },
      {
        newId: randomUUID,
        metadata: { partition_key: project, drive_id: h.drive.drive_id },
      },
    );
    return jobId;
  }

  /** GETs a download URL the job handed out, through the query API; writes the body to a file. */
  async function download(url: string, ext: string): Promise<{ file: string; res: Awaited<ReturnType<Harness['http']['get']>> }> {
    assert.ok(url.startsWith(`${BASE_URL}/downloads/`), url);
    const res = await h.http
      .get(url.slice(new URL(BASE_URL).origin.length))
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => done(null, Buffer.concat(chunks)));
      });
    const file = join(mkdtempSync(join(tmpdir(), 'published-')), `out.${ext}`);
    writeFileSync(file, res.body as Buffer);
    return { file, res };
  }

  const publicationOf = async (slugOrComposition: { slug?: string; composition_id?: string }) =>
    (await h.read.find(PUBLICATIONS, slugOrComposition as Record<string, string>))[0] as PublicationDoc | undefined;

  const renderBlobs = () => {
    const dir = join(h.dir, 'blobs', h.drive.drive_id, projectId);
    return readdirSync(dir).filter((f) => f.startsWith('render-') && !f.endsWith('.vtt'));
  };

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'publish-'));
    media = await startMediaServer({ 'tone.mp4': await toneVideo(dir) });
    h = await startHarness();
    await updateDrive(h.admin, h.drive.drive_id, { partner: true }); // the metadata endpoint is partner access
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Tone test',
        add_media: { 'tone.mp4': { url: media.url('file', 'tone.mp4') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'tone.mp4' }] }],
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    projectId = res.body.project_id;
    const job = await h.waitForJob(res.body.job_id);
    assert.equal((job.result as { status: string }).status, 'success', JSON.stringify(job.result));
    mainId = (job.result as { created_compositions: { id: string }[] }).created_compositions[0].id;
    // Cut [1.5, 2.5): the composition is 3 s, and the 880 Hz tone starts at 1.5 s of it.
    await handleCommand(
      h.store,
      streams.composition(mainId),
      compositionDecider,
      { type: 'CutRange', from: 1.5, to: 2.5, now: new Date().toISOString() },
      {
        newId: randomUUID,
        metadata: { partition_key: projectId },
      },
    );
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  let videoShareUrl: string;
  let firstRenderBlob: string;

  it('renders the composition after its cut: duration to the frame, the sound after the cut point, MP4 H.264/AAC at the source size', async () => {
    const jobId = await queuePublish({ composition_id: mainId });
    const job = await h.waitForJob(jobId, undefined, 90_000);
    assert.equal(job.job_state, 'stopped');
    assert.equal(job.job_type, 'publish');
    const validate = h.schemas.validator('job');
    assert.ok(validate(job), JSON.stringify(validate.errors));
    const result = job.result as Record<string, string>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.equal(result.composition_id, mainId);
    assert.equal(result.media_type, 'Video');
    assert.match(result.share_url, new RegExp(`^${WEB_URL}/s/[A-Za-z0-9_-]{16}$`));
    assert.ok(Date.parse(result.download_url_expires_at) > Date.now() + 3000 * 1000, 'expires after DOWNLOAD_URL_TTL (1 h)');
    const signedExpiry = Number(new URL(result.download_url).searchParams.get('expires')) * 1000;
    assert.equal(Date.parse(result.download_url_expires_at), signedExpiry, 'the result names the instant the URL is signed for');
    assert.equal(job.project_url, `${WEB_URL}/${projectId}/${mainId.replace(/-/g, '').slice(0, 5)}`);
    videoShareUrl = result.share_url;

    const { file, res } = await download(result.download_url, 'mp4');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'video/mp4');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="Tone test\.mp4"/);
    const info = await probe(file);
    const video = info.streams.find((s) => s.codec_type === 'video')!;
    const audio = info.streams.find((s) => s.codec_type === 'audio')!;
    assert.equal(video.codec_name, 'h264');
    assert.equal(audio.codec_name, 'aac');
    assert.deepEqual([video.width, video.height], [1280, 720], 'never upscaled past the largest source');
    assert.ok(Math.abs(Number(video.duration) - 3) <= 1 / 30 + 1e-6, `video lasts ${video.duration} s, the composition 3 s`);
    assert.ok(Math.abs(Number(info.format.duration) - 3) < 0.05, `file lasts ${info.format.duration}`);
    // Right after the cut point (1.5 s) the sound is the one after the cut: 880 Hz, not 440 Hz.
    const [high, low] = [await bandLevel(file, 1.6, 0.3, 880), await bandLevel(file, 1.6, 0.3, 440)];
    assert.ok(high > low + 15, `after the cut: 880 Hz at ${high} dB, 440 Hz at ${low} dB`);
    const [highBefore, lowBefore] = [await bandLevel(file, 1.1, 0.3, 880), await bandLevel(file, 1.1, 0.3, 440)];
    assert.ok(lowBefore > highBefore + 15, `before the cut: 440 Hz at ${lowBefore} dB, 880 Hz at ${highBefore} dB`);

    // Readable once the job reads stopped: the publication has its render.
    const doc = await publicationOf({ composition_id: mainId });
    assert.ok(doc, 'the publication is in the read model');
    assert.equal(`${WEB_URL}/s/${doc.slug}`, result.share_url);
    assert.match(doc.slug, SLUG);
    assert.ok(doc.render);
    assert.equal(doc.render.job_id, jobId);
    assert.equal(doc.render.title, 'Tone test');
    assert.equal(doc.render.width, 1280);
    assert.equal(doc.started.access_level, 'unlisted');
    assert.deepEqual(doc.started.published_by, { user_id: 'u-1', first_name: 'Ada', last_name: 'Lovelace' });
    assert.equal(doc.published_at, doc.render.rendered_at);
    firstRenderBlob = doc.render.blob_key;
    assert.equal(renderBlobs().length, 1);
  });

  it('republishes an unchanged composition from the cache: the same share URL and render, no new file, published_at kept', async () => {
    const before = (await publicationOf({ composition_id: mainId }))!;
    const jobId = await queuePublish({ composition_id: mainId, access_level: 'public' });
    const job = await h.waitForJob(jobId, undefined, 30_000);
    const result = job.result as Record<string, string>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.equal(result.share_url, videoShareUrl, 'SPEC: a republish reuses the share URL');
    const after = (await publicationOf({ composition_id: mainId }))!;
    assert.equal(after.render?.blob_key, firstRenderBlob, 'the cached render');
    assert.equal(after.render?.job_id, jobId);
    assert.equal(after.published_at, before.published_at);
    assert.ok(after.updated_at > before.updated_at);
    assert.equal(after.started.access_level, 'public', 'the newest access level');
    assert.equal(renderBlobs().length, 1, 'no second render');
    const progress = job.progress as { percent: number } | undefined;
    assert.ok(progress === undefined || progress.percent <= 100);
  });

  it('republishes an edited composition: the same share URL, a new render of the new clip list', async () => {
    await handleCommand(
      h.store,
      streams.composition(mainId),
      compositionDecider,
      { type: 'CutRange', from: 0, to: 0.5, now: new Date().toISOString() },
      {
        newId: randomUUID,
        metadata: { partition_key: projectId },
      },
    );
    const jobId = await queuePublish({ composition_id: mainId });
    const job = await h.waitForJob(jobId, undefined, 90_000);
    const result = job.result as Record<string, string>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.equal(result.share_url, videoShareUrl);
    const doc = (await publicationOf({ composition_id: mainId }))!;
    assert.notEqual(doc.render?.blob_key, firstRenderBlob);
    assert.ok(Math.abs(doc.render!.duration_seconds - 2.5) <= 1 / 30 + 1e-6, `${doc.render!.duration_seconds}`);
    assert.equal(renderBlobs().length, 2);
  });

  it('publishes Audio of the same composition under a separate share URL, as M4A/AAC without video', async () => {
    const jobId = await queuePublish({ composition_id: mainId, media_type: 'Audio' });
    const job = await h.waitForJob(jobId, undefined, 60_000);
    const result = job.result as Record<string, string>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.equal(result.media_type, 'Audio');
    assert.notEqual(result.share_url, videoShareUrl, 'SPEC: Video and Audio have separate share URLs');
    const { file, res } = await download(result.download_url, 'm4a');
    assert.equal(res.headers['content-type'], 'audio/mp4');
    const info = await probe(file);
    assert.deepEqual(
      info.streams.map((s) => s.codec_type),
      ['audio'],
    );
    assert.equal(info.streams[0].codec_name, 'aac');
    assert.ok(Math.abs(Number(info.format.duration) - 2.5) < 0.05, info.format.duration);
  });

  it('writes captions of the composition as published: cut words absent, cues as WebVTT', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'publish-voice-'));
    const wav = join(dir, 'talk.wav');
    await run(ffmpeg, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=300:sample_rate=16000:duration=6',
      wav,
    ]);
    const blobKey = `${h.drive.drive_id}/seeded/talk.wav`;
    await h.processorDeps.blobs.put(blobKey, (await import('node:fs')).createReadStream(wav));
    const word = (text: string, start: number): Word => ({ text, start, end: start + 0.4, confidence: 1, speaker: null });
    const seeded = await seedTranscribedProject(h, {
      words: [word('hello', 0.2), word('secret', 2.2), word('world', 4.2)],
      duration: 6,
      blobKey,
      name: 'Voice memo',
    });
    await handleCommand(
      h.store,
      streams.composition(seeded.compositionId),
      compositionDecider,
      { type: 'CutRange', from: 2, to: 3, now: new Date().toISOString() },
      {
        newId: randomUUID,
        metadata: { partition_key: seeded.projectId },
      },
    );
    const jobId = await queuePublish({ composition_id: seeded.compositionId, media_type: 'Audio' }, seeded.projectId);
    const job = await h.waitForJob(jobId, undefined, 60_000);
    assert.equal((job.result as { status: string }).status, 'success', JSON.stringify(job.result));
    const doc = (await publicationOf({ composition_id: seeded.compositionId }))!;
    const vtt = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      void h.processorDeps.blobs.open(doc.render!.captions_blob_key).then((r) => {
        assert.ok(r, 'the captions blob exists');
        r.read()
          .on('data', (c: Buffer) => chunks.push(c))
          .on('end', () => resolve(Buffer.concat(chunks).toString()))
          .on('error', reject);
      });
    });
    assert.ok(vtt.startsWith('WEBVTT\n\n'), vtt);
    assert.match(vtt, /hello/);
    assert.match(vtt, /world/);
    assert.doesNotMatch(vtt, /secret/, 'a cut word is not in the captions');
    // "world" was at 4.2 s of the recording: 3.2 s of the composition after the 1 s cut.
    assert.match(vtt, /00:00:03\.200 --> /);
    assert.equal(doc.render!.title, 'Voice memo');
    assert.equal(doc.render!.width, null);
  });

  it('stops with unprocessable_entity for a composition without clips, recording no render', async () => {
    const empty = randomUUID();
    await handleCommand(
      h.store,
      streams.composition(empty),
      compositionDecider,
      {
        type: 'CreateComposition',
        composition: {
          project_id: projectId,
          composition_id: empty,
          short_id: 'zzzzz',
          name: 'Empty',
          clips: [],
          markers: [],
          width: 1920,
          height: 1080,
          origin: 'test#empty',
        },
        now: new Date().toISOString(),
      },
      { newId: randomUUID, metadata: { partition_key: projectId } },
    );
    const jobId = await queuePublish({ composition_id: empty });
    const job = await h.waitForJob(jobId);
    assert.deepEqual(
      { status: (job.result as Record<string, string>).status, code: (job.result as Record<string, string>).error_code },
      { status: 'error', code: 'unprocessable_entity' },
    );
    assert.equal(await publicationOf({ composition_id: empty }), undefined);
  });

  /** A composition of 40 copies of the 4 s source: at 1440p, long enough to be caught rendering. */
  async function longComposition(): Promise<string> {
    const id = randomUUID();
    const clips = Array.from({ length: 40 }, () => ({ media: 'tone.mp4', in: 0, out: 4 }));
    await handleCommand(
      h.store,
      streams.composition(id),
      compositionDecider,
      {
        type: 'CreateComposition',
        composition: {
          project_id: projectId,
          composition_id: id,
          short_id: id.slice(0, 5),
          name: 'Long',
          clips,
          markers: [],
          width: 1920,
          height: 1080,
          origin: `test#${id}`,
        },
        now: new Date().toISOString(),
      },
      { newId: randomUUID, metadata: { partition_key: projectId } },
    );
    return id;
  }
  const rendering = () => processesMentioning('.part').filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(h.dir));

  it('renders in its own pool: an import runs while a render does, and renders wait for PUBLISH_CONCURRENCY (1)', async () => {
    const [first, second] = [
      await queuePublish({ composition_id: await longComposition(), resolution: '1440p' }),
      await queuePublish({ composition_id: await longComposition(), resolution: '1440p' }),
    ];
    await h.waitForJob(first, (j) => (j.progress as { label?: string } | undefined)?.label === 'rendering', 60_000);
    await waitFor(() => (rendering().length > 0 ? true : null), { timeoutMs: 30_000, what: 'ffmpeg rendering' });
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_id: projectId, add_media: { 'again.mp4': { url: media.url('file', 'tone.mp4') } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const imported = await h.waitForJob(res.body.job_id, undefined, 60_000);
    assert.equal((imported.result as { status: string }).status, 'success');
    const [a, b] = [await h.http.get(`/v1/jobs/${first}`).set(h.auth()), await h.http.get(`/v1/jobs/${second}`).set(h.auth())];
    assert.equal(a.body.job_state, 'running', 'the render was still running when the import stopped');
    assert.equal(b.body.job_state, 'queued', 'the second render waits for the first (PUBLISH_CONCURRENCY 1)');
    assert.equal(rendering().length, 1, 'one ffmpeg render at a time');
    for (const id of [second, first]) assert.equal((await h.http.delete(`/v1/jobs/${id}`).set(h.auth())).status, 204);
    await waitFor(() => (rendering().length === 0 ? true : null), { timeoutMs: 5_000, what: 'renders stopped' });
  });

  it('cancels a render: ffmpeg killed, no render file left, the publication without a render', async () => {
    const long = await longComposition();
    const filesBefore = renderBlobs().length;
    const jobId = await queuePublish({ composition_id: long, resolution: '1440p' });
    await h.waitForJob(jobId, (j) => (j.progress as { label?: string } | undefined)?.label === 'rendering', 60_000);
    await waitFor(
      () => (processesMentioning('.part').some((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(h.dir)) ? true : null),
      {
        timeoutMs: 30_000,
        what: 'ffmpeg rendering',
      },
    );
    const doc = await publicationOf({ composition_id: long });
    assert.ok(doc, 'listed from the moment the job started');
    assert.equal(doc.render, null);
    const metadata = () => h.http.get(`/v1/published_projects/${doc.slug}`).set(h.auth());
    const during = await metadata();
    assert.deepEqual([during.status, during.body.error, during.body.state], [409, 'conflict', 'processing'], 'while the first render runs');
    const res = await h.http.delete(`/v1/jobs/${jobId}`).set(h.auth());
    assert.equal(res.status, 204);
    await waitFor(
      () =>
        processesMentioning(h.dir).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ffmpeg')).length === 0
          ? true
          : null,
      { timeoutMs: 2_000, what: 'ffmpeg gone within a second of the cancel being seen (the engine looks every 50 ms here)' },
    );
    const dir = join(h.dir, 'blobs', h.drive.drive_id, projectId);
    // Removed by the renderer once ffmpeg has exited.
    await waitFor(() => (readdirSync(dir).some((f) => f.endsWith('.part')) ? null : true), { timeoutMs: 2_000, what: 'no partial file' });
    assert.equal(renderBlobs().length, filesBefore, 'no render');
    const job = await h.waitForJob(jobId);
    assert.equal(job.job_state, 'cancelled');
    assert.equal((await publicationOf({ composition_id: long }))!.render, null);
    const after = await metadata();
    assert.deepEqual([after.status, after.body.state], [409, 'failed'], 'a cancelled first publish reads failed');
  });
});
