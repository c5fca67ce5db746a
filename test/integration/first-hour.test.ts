import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive } from '../../lib/app/admin';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';

/**
 * A new user's first hour (issue 19, finding 8), through HTTP on the embedded adapters: what a
 * first session with curl and a file served on loopback runs into.
 */
describe('the first hour of a new user (HTTP, embedded adapters)', function () {
  this.timeout(120_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let localhostUrl: (name: string) => string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'first-hour-'));
    media = await startMediaServer({
      'voice.wav': await makeTestMedia(dir, 'wav', 1),
      'short.wav': await makeTestMedia(dir, 'wav', 0.4),
      'still.png': await makeTestMedia(dir, 'png'),
    });
    localhostUrl = (name) => media.url('file', name).replace('127.0.0.1', 'localhost');
    // As the README's first session starts it: OUTBOUND_ALLOWLIST=127.0.0.1, TRANSCRIBER unset (none).
    h = await startHarness({ allowlist: ['127.0.0.1'] });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  const post = (body: unknown, token = h.drive.token) =>
    h.http.post('/v1/jobs/import/project_media').set(h.auth(token)).set('Content-Type', 'application/json').send(JSON.stringify(body));

  it("answers 415 naming Content-Type for curl's default form type, not a missing project_name", async () => {
    const body = JSON.stringify({ project_name: 'Form', add_media: { 'a.wav': { url: media.url('file', 'voice.wav') } } });
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send(body);
    assert.equal(res.status, 415, res.text);
    assert.equal(res.body.error, 'invalid_input');
    assert.match(res.body.message, /Content-Type must be application\/json/);
    assert.match(res.body.message, /application\/x-www-form-urlencoded/);
    // Other routes that take a JSON body refuse the same way; a POST without a body is not refused for its type.
    const partner = await h.http.post('/v1/edit_in_descript/schema').set(h.auth()).set('Content-Type', 'text/plain').send('{}');
    assert.equal(partner.status, 415, partner.text);
    const bare = await h.http.post('/v1/jobs/project-media-import-00000000-0000-4000-8000-000000000000/deliveries').set(h.auth());
    assert.notEqual(bare.status, 415, bare.text);
  });

  it('fetches a localhost URL when 127.0.0.1 is allow-listed', async () => {
    const res = await post({ project_name: 'Localhost', add_media: { 'voice.wav': { url: localhostUrl('voice.wav') } } });
    assert.equal(res.status, 201, res.text);
    const job = await h.waitForJob(res.body.job_id);
    const result = job.result as { status: string; media_status: Record<string, unknown> };
    assert.equal(result.status, 'success', JSON.stringify(result));
  });

  it('names OUTBOUND_ALLOWLIST when it refuses an internal address', async () => {
    const res = await post({ project_name: 'Internal', add_media: { 'a.wav': { url: 'http://10.1.2.3/a.wav' } } });
    assert.equal(res.status, 400);
    assert.match(res.body.message, /add_media\["a\.wav"\]\.url/);
    assert.match(res.body.message, /OUTBOUND_ALLOWLIST/);
    const local = await post({ project_name: 'Sub', add_media: { 'a.wav': { url: 'http://app.localhost/a.wav' } } });
    assert.equal(local.status, 400);
    assert.match(local.body.message, /OUTBOUND_ALLOWLIST/);
  });

  it('says transcript "skipped" for each file with audio when no transcriber is configured, and nothing for an image', async () => {
    const res = await post({
      project_name: 'Untranscribed',
      add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') }, 'still.png': { url: media.url('file', 'still.png') } },
    });
    assert.equal(res.status, 201, res.text);
    const job = await h.waitForJob(res.body.job_id);
    const result = job.result as { status: string; media_status: Record<string, Record<string, unknown>> };
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.deepEqual(result.media_status['voice.wav'], { status: 'success', duration_seconds: 1, transcript: 'skipped' });
    assert.deepEqual(result.media_status['still.png'], { status: 'success', duration_seconds: 0 });
    assert.ok(h.schemas.validator('job')(job), JSON.stringify(h.schemas.validator('job').errors));
  });

  it('answers 402 at accept when the drive has less than a second left (0.6 s)', async () => {
    const drive = await createDrive(h.admin, { name: 'One second', mediaSeconds: 1 });
    const first = await post({ project_name: 'Short', add_media: { 'short.wav': { url: media.url('file', 'short.wav') } } }, drive.token);
    assert.equal(first.status, 201, first.text);
    const job = await h.waitForJob(first.body.job_id, undefined, 20_000, drive.token);
    assert.equal((job.result as { status: string }).status, 'success', JSON.stringify(job.result));
    await waitFor(async () => (await h.balance.show(drive.drive_id)).media_seconds.left! < 1, { what: 'the balance to drop under 1 s' });
    const refused = await post({ project_name: 'More', add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } }, drive.token);
    assert.equal(refused.status, 402, refused.text);
    assert.equal(refused.body.error, 'payment_required');
    assert.match(refused.body.message, /0\.6 s/);
  });

  describe('project_url', () => {
    const cases: [string, () => Promise<Record<string, unknown>>][] = [
      ['a new project with a composition', async () => ({ add_compositions: [{ name: 'Main', clips: [{ media: 'voice.wav' }] }] })],
      ['a new project without one (its placeholder)', async () => ({})],
    ];
    for (const [name, extra] of cases) {
      it(`is the same in the 201 and in the job from queued to stopped: ${name}`, async () => {
        const res = await post({
          project_name: `URL ${name}`,
          add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
          ...(await extra()),
        });
        assert.equal(res.status, 201, res.text);
        assert.match(res.body.project_url, new RegExp(`^${WEB_URL}/${res.body.project_id}/[0-9a-f]{5}$`));
        const queued = await h.http.get(`/v1/jobs/${res.body.job_id}`).set(h.auth());
        assert.equal(queued.body.project_url, res.body.project_url);
        const job = await h.waitForJob(res.body.job_id);
        assert.equal(job.project_url, res.body.project_url);
      });
    }

    it('is the same for an import into an existing project that asks for a composition', async () => {
      const made = await post({ project_name: 'Existing', add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } });
      await h.waitForJob(made.body.job_id);
      const res = await post({
        project_id: made.body.project_id,
        add_media: { 'again.wav': { url: media.url('file', 'voice.wav') } },
        add_compositions: [{ name: 'Second', clips: [{ media: 'again.wav' }] }],
      });
      assert.equal(res.status, 201, res.text);
      assert.notEqual(res.body.project_url, made.body.project_url);
      const job = await h.waitForJob(res.body.job_id);
      assert.equal(job.project_url, res.body.project_url);
    });

    it("opens the project page at the 201's URL while the job is still queued", async () => {
      const res = await post({ project_name: 'Early', add_media: { 'x.wav': { content_type: 'audio/wav', file_size: 1000 } } });
      assert.equal(res.status, 201, res.text);
      const page = await h.http.get(new URL(res.body.project_url).pathname).set(h.auth());
      assert.equal(page.status, 200, page.text.slice(0, 300));
      assert.match(page.text, /Early/);
      await h.http.delete(`/v1/jobs/${res.body.job_id}`).set(h.auth()).expect(204);
      const gone = await h.http.get(new URL(res.body.project_url).pathname).set(h.auth());
      assert.equal(gone.status, 404, 'a cancelled job never makes its composition');
    });
  });
});
