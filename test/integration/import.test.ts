import assert from 'node:assert/strict';
import { waitFor } from '../fixtures/wait';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive } from '../../lib/app/admin';
import { loadState } from '../../lib/app/command-handler';
import { projectDecider } from '../../lib/domain/project';
import { folderIdOf } from '../../lib/app/folders';
import { streams } from '../../lib/domain/ids';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';

describe('POST /v1/jobs/import/project_media (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'media-'));
    const [wav, mp4, png] = await Promise.all([makeTestMedia(dir, 'wav', 2), makeTestMedia(dir, 'mp4', 1), makeTestMedia(dir, 'png')]);
    const text = join(dir, 'notes.txt');
    writeFileSync(text, 'just words, not media');
    media = await startMediaServer({ 'voice.wav': wav, 'clip.mp4': mp4, 'still.png': png, 'notes.txt': text });
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  const importBody = (extra: Record<string, unknown> = {}) => ({
    project_name: 'Interview',
    add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') }, 'clip.mp4': { url: media.url('file', 'clip.mp4') } },
    add_compositions: [{ name: 'Main', clips: [{ media: 'voice.wav' }, { media: 'clip.mp4' }] }],
    ...extra,
  });

  it('accepts an import with 201, serves the job at once, and stops it with a success result', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send(importBody({ callback_url: 'https://hooks.example.com/x' }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.ok(h.schemas.validator('import-response')(res.body), JSON.stringify(h.schemas.validator('import-response').errors));
    assert.equal(res.body.drive_id, h.drive.drive_id);
    assert.match(res.body.project_url, new RegExp(`^${WEB_URL}/${res.body.project_id}/[0-9a-f]{5}$`));

    const first = await h.http.get(`/v1/jobs/${res.body.job_id}`).set(h.auth());
    assert.equal(first.status, 200, 'readable the moment the 201 was returned');
    assert.ok(['queued', 'running', 'stopped'].includes(first.body.job_state));

    const job = await h.waitForJob(res.body.job_id);
    const validate = h.schemas.validator('job');
    assert.ok(validate(job), JSON.stringify(validate.errors));
    assert.equal(job.job_state, 'stopped');
    assert.equal(job.job_type, 'import/project_media');
    assert.ok(job.stopped_at);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.equal(result.media_status['voice.wav'].status, 'success');
    assert.ok(Math.abs(result.media_status['voice.wav'].duration_seconds - 2) < 0.1);
    assert.ok(Math.abs(result.media_status['clip.mp4'].duration_seconds - 1) < 0.2);
    assert.ok(Math.abs(result.media_seconds_used - 3) < 0.3);
    assert.equal(result.created_compositions.length, 1);
    assert.equal(result.created_compositions[0].name, 'Main');
    const compositionId: string = result.created_compositions[0].id;
    assert.match(compositionId, /^[0-9a-f-]{36}$/);
    assert.equal(job.project_url, `${WEB_URL}/${res.body.project_id}/${compositionId.replace(/-/g, '').slice(0, 5)}`);
    assert.equal(job.project_url, res.body.project_url, 'the 201 named the composition the job made');

    // What a render needs is stored with each file (issue 21): picture size, rate and rotation, sound rate and channels.
    const { state } = await loadState(h.store, streams.project(res.body.project_id), projectDecider);
    assert.ok(state.exists);
    const properties = (ref: string) => {
      const { width, height, frame_rate, rotation, sample_rate, channels } = state.media.get(ref)!;
      return { width, height, frame_rate, rotation, sample_rate, channels };
    };
    assert.deepEqual(properties('clip.mp4'), { width: 160, height: 120, frame_rate: 10, rotation: 0, sample_rate: 16_000, channels: 1 });
    assert.deepEqual(properties('voice.wav'), {
      width: null,
      height: null,
      frame_rate: null,
      rotation: null,
      sample_rate: 16_000,
      channels: 1,
    });
  });

  it('takes compositions as the public API does: the name optional ("Composition N"), fps taken and ignored', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Unnamed compositions',
        add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
        add_compositions: [
          { name: 'Named', clips: [{ media: 'voice.wav' }] },
          { clips: [{ media: 'voice.wav' }], fps: 29.97, width: 1280, height: 720 },
        ],
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.deepEqual(
      (result.created_compositions as { name: string }[]).map((c) => c.name),
      ['Named', 'Composition 2'],
    );
  });

  it("refuses a clip of one of the project's images (400 naming the clip): an image cannot be a clip", async () => {
    const first = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'Stills', add_media: { 'still.png': { url: media.url('file', 'still.png') } } });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(((await h.waitForJob(first.body.job_id)).result as { status: string }).status, 'success');
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_id: first.body.project_id, add_compositions: [{ name: 'Only a still', clips: [{ media: 'still.png' }] }] });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.message, 'add_compositions[0].clips[0].media: "still.png" is an image, and an image cannot be a clip');
  });

  it('names each new project and its import job with a time-ordered UUID (v7), so the stores append instead of scattering', async () => {
    const V7 = '[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';
    const accepted: { job_id: string; project_id: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({ project_name: `Ordered ${i}`, add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.match(res.body.job_id, new RegExp(`^project-media-import-${V7}$`));
      assert.match(res.body.project_id, new RegExp(`^${V7}$`));
      accepted.push(res.body);
    }
    for (const key of ['job_id', 'project_id'] as const) {
      const ids = accepted.map((a) => a[key]);
      assert.deepEqual([...ids].sort(), ids, `${key}s sort in the order they were made`);
    }
  });

  it('reports partial when one file fails, with that file failed and its error message', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Mixed',
        add_media: {
          'still.png': { url: media.url('file', 'still.png') },
          'gone.wav': { url: media.missing },
          'notes.txt': { url: media.url('file', 'notes.txt') },
        },
      });
    assert.equal(res.status, 201);
    const job = await h.waitForJob(res.body.job_id);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'partial');
    assert.equal(result.media_status['still.png'].status, 'success');
    assert.equal(result.media_status['still.png'].duration_seconds, 0);
    assert.equal(result.media_status['gone.wav'].status, 'failed');
    assert.match(result.media_status['gone.wav'].error_message, /404/);
    assert.equal(result.media_status['notes.txt'].status, 'failed');
    assert.match(result.media_status['notes.txt'].error_message, /media/);
  });

  it('says which clips a composition was made without (an image of the request, a file that failed), and which it could not make', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Left out',
        add_media: {
          'voice.wav': { url: media.url('file', 'voice.wav') },
          'still.png': { url: media.url('file', 'still.png') },
          'gone.wav': { url: media.missing },
        },
        add_compositions: [
          { name: 'Talk', clips: [{ media: 'voice.wav' }, { media: 'still.png' }, { media: 'gone.wav' }] },
          { name: 'Whole', clips: [{ media: 'voice.wav' }] },
          { name: 'Stills only', clips: [{ media: 'still.png' }] },
        ],
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'partial');
    assert.deepEqual(
      result.created_compositions.map((c: Record<string, unknown>) => ({ ...c, id: typeof c.id })),
      [
        {
          id: 'string',
          name: 'Talk',
          left_out: [
            { media: 'still.png', reason: 'image' },
            { media: 'gone.wav', reason: 'not_imported' },
          ],
        },
        { id: 'string', name: 'Whole' },
      ],
    );
    assert.deepEqual(result.skipped_compositions, [{ name: 'Stills only', left_out: [{ media: 'still.png', reason: 'image' }] }]);
    const detail = await h.http.get(`/v1/projects/${res.body.project_id}`).set(h.auth());
    assert.deepEqual(
      detail.body.compositions.map((c: { name: string; duration?: number }) => [c.name, c.duration]),
      [
        ['Left out', 0],
        ['Talk', 2],
        ['Whole', 2],
      ],
    );
  });

  it('without a transcriber, its progress never says it transcribes (downloading, probing, composing)', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'Untranscribed', add_media: { 'voice.wav': { url: media.url('slow', 'voice.wav') } } });
    const job = await h.waitForJob(res.body.job_id);
    assert.equal((job.result as Record<string, any>).media_status['voice.wav'].transcript, 'skipped');
    const labels = (await h.store.readStream(streams.job(res.body.job_id)))
      .filter((e) => e.type === 'JobProgressed')
      .map((e) => String(e.data.label));
    assert.ok(labels.includes('downloading voice.wav') && labels.includes('composing'), JSON.stringify(labels));
    assert.deepEqual(
      labels.filter((l) => l.startsWith('transcribing')),
      [],
    );
  });

  it('stops with status error when no file imports', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'Broken', add_media: { 'a.wav': { url: media.missing } } });
    const job = await h.waitForJob(res.body.job_id);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'error');
    assert.ok(result.error_message);
    assert.equal(result.media_seconds_used, 0);
  });

  it('honours the drive media-seconds balance: a file that does not fit fails, and what imports is charged', async () => {
    const drive = await createDrive(h.admin, { name: 'Small drive', mediaSeconds: 3 });
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(drive.token))
      .send({
        project_name: 'Budget',
        add_media: { 'one.wav': { url: media.url('file', 'voice.wav') }, 'two.wav': { url: media.url('file', 'voice.wav') } },
      });
    const job = await h.waitForJob(res.body.job_id, undefined, 20_000, drive.token);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'partial', JSON.stringify(result));
    assert.equal(result.media_status['one.wav'].status, 'success');
    assert.match(result.media_status['two.wav'].error_message, /not enough media seconds/);
    // Charged on the job's own stream, never on the drive's (the drive stream is no hot spot).
    assert.equal((await h.store.readStream(`drive-${drive.drive_id}`)).filter((e) => e.type === 'MediaSecondsCharged').length, 0);
    const charges = (await h.store.readStream(`job-${res.body.job_id}`)).filter((e) => e.type === 'MediaSecondsCharged');
    assert.equal(charges.length, 1);
    assert.ok(Math.abs((charges[0].data.seconds as number) - 2) < 0.1);
    const left = await waitFor(async () => {
      const l = (await h.balance.show(drive.drive_id)).media_seconds.left;
      return l !== null && l < 3 ? l : null;
    });
    assert.ok(Math.abs(left - 1) < 0.1, `balance left ${left}`);
    const refused = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(drive.token))
      .send({ project_name: 'More', add_media: { 'three.wav': { url: media.url('file', 'voice.wav') } } });
    assert.equal(refused.status, 201, 'one second is left: accepted, refused per file');
  });

  it('creates the nested folders folder_name needs, each once, and keeps existing ones', async () => {
    const post = (name: string, folder: string) =>
      h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({ project_name: name, folder_name: folder, add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } });
    const [a, b] = [await post('Acme call', 'Clients/Acme/2026'), await post('Beta call', 'Clients/Beta')];
    assert.equal(a.status, 201, JSON.stringify(a.body));
    assert.equal(b.status, 201, JSON.stringify(b.body));
    const folder = async (path: string) =>
      (await h.store.readStream(streams.folder(folderIdOf(h.drive.drive_id, path)))).map((e) => e.data);
    assert.equal((await folder('Clients')).length, 1, 'the shared parent is created once');
    assert.deepEqual(
      (await folder('Clients/Acme/2026')).map((d) => [d.name, d.parent_path]),
      [['2026', 'Clients/Acme']],
    );
    assert.equal((await folder('Clients/Beta')).length, 1);
    assert.equal((await folder('Clients/Beta/2026')).length, 0);
    const { state } = await loadState(h.store, streams.project(a.body.project_id), projectDecider);
    assert.ok(state.exists);
    assert.equal(state.project.folder_path, 'Clients/Acme/2026');
  });
});
