import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { createDrive, createToken } from '../../lib/app/admin';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { captionsOf, failPublish, finishPublish, makeRender, startPublish, type Published } from '../fixtures/publications';
import { seedTranscribedProject } from '../fixtures/seed-project';
import { waitFor } from '../fixtures/wait';

/**
 * GET /v1/published_projects/{slug} (issue 21) through real HTTP: publications written as the
 * publish processor writes them (tests/fixtures/publications.ts), with real ffmpeg renders and
 * WebVTT captions in the blob store; every access rule, the 409s, the per-user limit, and project
 * detail's `publishes`.
 */
describe('published projects: GET /v1/published_projects/{slug}', function () {
  this.timeout(120_000);
  let h: Harness;
  let dir: string;
  let video: string;
  let audio: string;
  /** The partner drive that publishes: the publisher, a colleague; another partner drive; a drive without partner access. */
  const who = {} as Record<'publisher' | 'colleague' | 'otherPartner' | 'noPartner', { token: string; userId: string; driveId: string }>;
  let projectId: string;
  const publisher = () => ({ user_id: who.publisher.userId, first_name: 'Ada', last_name: 'Lovelace' });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'published-'));
    [video, audio] = await Promise.all([makeRender(dir, 'Video', 4), makeRender(dir, 'Audio', 3)]);
    h = await startHarness({ processors: false });
    const partner = await createDrive(h.admin, { name: 'Partner drive', partner: true });
    const first = await createToken(h.admin, { driveId: partner.drive_id });
    const colleague = await createToken(h.admin, { driveId: partner.drive_id });
    const other = await createDrive(h.admin, { name: 'Other partner', partner: true });
    const otherToken = await createToken(h.admin, { driveId: other.drive_id });
    const plainToken = await createToken(h.admin, { driveId: h.drive.drive_id });
    who.publisher = { token: first.token, userId: first.user_id, driveId: partner.drive_id };
    who.colleague = { token: colleague.token, userId: colleague.user_id, driveId: partner.drive_id };
    who.otherPartner = { token: otherToken.token, userId: otherToken.user_id, driveId: other.drive_id };
    who.noPartner = { token: plainToken.token, userId: plainToken.user_id, driveId: h.drive.drive_id };
    ({ projectId } = await seedTranscribedProject(h, {
      words: [],
      duration: 4,
      driveId: partner.drive_id,
      compositionName: 'Main cut',
    }));
  });
  after(() => h?.close());

  const get = (slug: string, token: string | null = who.publisher.token) => {
    const req = h.http.get(`/v1/published_projects/${slug}`);
    return token === null ? req : req.set(h.auth(token));
  };
  /** Until the API's snapshot of the read store shows what a test just projected (a few ms at most). */
  const eventually = (slug: string, status: number, token?: string) =>
    waitFor(
      async () => {
        const res = await get(slug, token);
        return res.status === status ? res : null;
      },
      { timeoutMs: 5000, what: `${status} for ${slug}` },
    );
  const publish = (
    o: { accessLevel?: 'public' | 'unlisted' | 'drive' | 'private'; mediaType?: 'Video' | 'Audio'; compositionId?: string } = {},
  ) => startPublish(h, { projectId, driveId: who.publisher.driveId, publisher: publisher(), ...o });
  const rendered = async (
    o: Parameters<typeof publish>[0] & { title?: string } = {},
  ): Promise<Published & { captions: string; title: string }> => {
    const p = await publish(o);
    const mediaType = o.mediaType ?? 'Video';
    const seconds = mediaType === 'Video' ? 4 : 3;
    const captions = captionsOf(seconds);
    const title = o.title ?? 'Interview: part 1/2';
    await finishPublish(h, p, { file: mediaType === 'Video' ? video : audio, mediaType, title, seconds, captions });
    return { ...p, captions, title };
  };

  describe('a rendered publication', () => {
    it('answers the metadata, the complete subtitles and a signed download URL of the render', async () => {
      const p = await rendered({ accessLevel: 'public' });
      const res = await eventually(p.slug, 200);
      const body = res.body;
      assert.deepEqual(Object.keys(body).sort(), [
        'download_url',
        'download_url_expires_at',
        'metadata',
        'privacy',
        'project_id',
        'publish_type',
        'subtitles',
      ]);
      assert.equal(body.project_id, projectId);
      assert.equal(body.publish_type, 'video');
      assert.equal(body.privacy, 'public');
      assert.equal(body.subtitles, p.captions);
      assert.deepEqual(body.metadata, {
        title: p.title,
        duration_seconds: 4,
        duration_formatted: '00:00:04',
        published_at: body.metadata.published_at,
        published_by: { first_name: 'Ada', last_name: 'Lovelace' },
      });
      assert.match(body.metadata.published_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

      // The URL is the API's signed download: it expires when the body says, and serves the render's bytes.
      const url = new URL(body.download_url);
      assert.equal(`${url.origin}`, 'http://api.test');
      assert.match(url.pathname, /^\/v1\/downloads\/[A-Za-z0-9_-]+$/);
      assert.equal(Number(url.searchParams.get('expires')) * 1000, Date.parse(body.download_url_expires_at));
      assert.equal(url.searchParams.get('filename'), 'Interview part 1 2.mp4');
      const file = await h.http
        .get(url.pathname + url.search)
        .buffer(true)
        .parse(binary);
      assert.equal(file.status, 200);
      assert.equal(file.headers['content-type'], 'video/mp4');
      assert.deepEqual(file.body, readFileSync(video));
      assert.match(file.headers['content-disposition'], /^attachment; filename="Interview part 1 2\.mp4"/);
    });

    it('answers an audio publication as publish_type audio with an .m4a download', async () => {
      const p = await rendered({ mediaType: 'Audio', accessLevel: 'unlisted', title: 'Podcast' });
      const { body } = await eventually(p.slug, 200);
      assert.equal(body.publish_type, 'audio');
      assert.equal(body.privacy, 'unlisted');
      assert.equal(body.metadata.duration_formatted, '00:00:03');
      assert.equal(new URL(body.download_url).searchParams.get('filename'), 'Podcast.m4a');
      assert.equal(new URL(body.download_url).searchParams.get('type'), 'audio/mp4');
    });
  });

  describe('states: 409 conflict until a render is served', () => {
    it('is processing while the first job renders, then published', async () => {
      const p = await publish();
      const res = await eventually(p.slug, 409);
      assert.deepEqual(res.body, { error: 'conflict', message: res.body.message, state: 'processing' });
      await finishPublish(h, p, { file: video, mediaType: 'Video', title: 'Done', seconds: 4, captions: captionsOf(4) });
      assert.equal((await eventually(p.slug, 200)).body.metadata.title, 'Done');
    });

    it('is failed when the first job was cancelled, or stopped with an error, without a render', async () => {
      for (const how of ['cancelled', 'error'] as const) {
        const p = await publish();
        await eventually(p.slug, 409);
        await failPublish(h, p, how);
        const res = await waitFor(
          async () => {
            const r = await get(p.slug);
            return r.body.state === 'failed' ? r : null;
          },
          { what: `failed after ${how}` },
        );
        assert.equal(res.status, 409);
        assert.equal(res.body.error, 'conflict');
      }
    });

    it('serves the previous render while a republish runs and after one fails; the new one once recorded, under the same slug', async () => {
      const first = await rendered({ title: 'Take 1' });
      const again = await publish({ compositionId: first.compositionId });
      assert.equal(again.slug, first.slug);
      assert.equal((await eventually(first.slug, 200)).body.metadata.title, 'Take 1');
      await finishPublish(h, again, { file: video, mediaType: 'Video', title: 'Take 2', seconds: 4, captions: captionsOf(4) });
      await waitFor(async () => (await get(first.slug)).body.metadata?.title === 'Take 2', { what: 'the second render served' });
      const third = await publish({ compositionId: first.compositionId });
      await failPublish(h, third, 'error');
      const res = await get(first.slug);
      assert.equal(res.status, 200);
      assert.equal(res.body.metadata.title, 'Take 2');
    });
  });

  describe('access', () => {
    let slugs: Record<'public' | 'unlisted' | 'drive' | 'private', string>;
    before(async () => {
      const levels = ['public', 'unlisted', 'drive', 'private'] as const;
      const made = await Promise.all(levels.map((accessLevel) => rendered({ accessLevel })));
      slugs = Object.fromEntries(levels.map((l, i) => [l, made[i].slug])) as typeof slugs;
      for (const slug of Object.values(slugs)) await eventually(slug, 200);
    });

    it('follows the matrix: public and unlisted for any partner, drive for its members, private for its publisher', async () => {
      const expected: Record<keyof typeof slugs, Record<'publisher' | 'colleague' | 'otherPartner', number>> = {
        public: { publisher: 200, colleague: 200, otherPartner: 200 },
        unlisted: { publisher: 200, colleague: 200, otherPartner: 200 },
        drive: { publisher: 200, colleague: 200, otherPartner: 403 },
        private: { publisher: 200, colleague: 403, otherPartner: 403 },
      };
      for (const [level, row] of Object.entries(expected)) {
        for (const [caller, status] of Object.entries(row)) {
          const res = await get(slugs[level as keyof typeof slugs], who[caller as keyof typeof row].token);
          assert.equal(res.status, status, `${caller} reading a ${level} publication`);
          if (status === 403) {
            assert.equal(res.body.error, 'forbidden');
            assert.doesNotMatch(JSON.stringify(res.body), /Interview/, 'a refusal names nothing of the publication');
          }
        }
      }
    });

    it('refuses a drive without partner access with 403, whatever the page', async () => {
      for (const slug of [slugs.public, randomBytes(12).toString('base64url')]) {
        const res = await get(slug, who.noPartner.token);
        assert.equal(res.status, 403);
        assert.equal(res.body.error, 'forbidden');
        assert.match(res.body.message, /partner access/);
      }
    });

    it('answers 401 without a token or with a bad one', async () => {
      for (const res of [await get(slugs.public, null), await get(slugs.public, 'mps_nope_nope')]) {
        assert.equal(res.status, 401);
        assert.equal(res.body.error, 'unauthorized');
      }
    });

    it('answers 404 not_found for an unknown or malformed slug', async () => {
      for (const slug of [randomBytes(12).toString('base64url'), 'short', 'A'.repeat(17), '%2e%2e', encodeURIComponent('<script>')]) {
        const res = await get(slug);
        assert.equal(res.status, 404, slug);
        assert.equal(res.body.error, 'not_found');
      }
    });
  });

  describe('project detail publishes', () => {
    it("lists the project's published pages newest first, with share URL, state and name; not one never rendered", async () => {
      const seeded = await seedTranscribedProject(h, {
        words: [],
        duration: 4,
        driveId: who.publisher.driveId,
        compositionName: 'Rough cut',
      });
      const on = {
        projectId: seeded.projectId,
        driveId: who.publisher.driveId,
        publisher: publisher(),
        compositionId: seeded.compositionId,
      };
      const done = await startPublish(h, { ...on, accessLevel: 'public' });
      await finishPublish(h, done, { file: video, mediaType: 'Video', title: 'Final title', seconds: 4, captions: captionsOf(4) });
      const failed = await startPublish(h, { ...on, mediaType: 'Audio', accessLevel: 'private' });
      await failPublish(h, failed, 'cancelled');
      const running = await startPublish(h, { ...on, compositionId: randomUUID(), accessLevel: 'drive' });
      // A republish of the published page: listed throughout, its last render served meanwhile.
      const again = await startPublish(h, { ...on, accessLevel: 'public' });
      assert.equal(again.slug, done.slug);

      // Each publication is projected (startPublish and failPublish wait for it). The failed first
      // publish and the one still rendering its first time were never published: not listed.
      const res = await h.http.get(`/v1/projects/${seeded.projectId}`).set(h.auth(who.publisher.token));
      const items = res.body.publishes as Record<string, unknown>[];
      assert.deepEqual(
        items.map((i) => [i.slug, i.state, i.media_type, i.access_level, i.name]),
        [[done.slug, 'published', 'Video', 'public', 'Final title']],
      );
      assert.ok(running.slug && failed.slug);
      for (const [i, p] of [done].entries()) {
        assert.equal(items[i].share_url, `${WEB_URL}/s/${p.slug}`);
        assert.equal(items[i].composition_id, p.compositionId);
        assert.deepEqual(Object.keys(items[i]).sort(), [
          'access_level',
          'composition_id',
          'media_type',
          'name',
          'published_at',
          'share_url',
          'slug',
          'state',
          'updated_at',
        ]);
      }
      assert.match(String(items[0].published_at), /Z$/);
      assert.ok(h.schemas.validator('project')(res.body), JSON.stringify(h.schemas.validator('project').errors));
    });
  });
});

describe('published projects: the per-user hourly limit', function () {
  this.timeout(60_000);
  let h: Harness;
  after(() => h?.close());

  it('answers 429 rate_limit_exceeded with Retry-After and the X-RateLimit headers past the limit, per user across tokens', async () => {
    h = await startHarness({ processors: false, publishedProjectsPerHour: 3 });
    const partner = await createDrive(h.admin, { name: 'Partner', partner: true });
    const a = await createToken(h.admin, { driveId: partner.drive_id });
    const sameUser = await createToken(h.admin, { driveId: partner.drive_id, userId: a.user_id });
    const b = await createToken(h.admin, { driveId: partner.drive_id });
    const slug = randomBytes(12).toString('base64url');
    const get = (token: string) => h.http.get(`/v1/published_projects/${slug}`).set(h.auth(token));

    for (const remaining of [2, 1, 0]) {
      const res = await get(a.token);
      assert.equal(res.status, 404); // counted whatever the answer
      assert.equal(res.headers['x-ratelimit-remaining'], String(remaining));
      assert.equal(res.headers['x-ratelimit-consumed'], String(3 - remaining));
    }
    for (const token of [a.token, sameUser.token]) {
      const res = await get(token);
      assert.equal(res.status, 429);
      assert.deepEqual(res.body, { error: 'rate_limit_exceeded', message: res.body.message });
      assert.match(res.body.message, /per hour/);
      assert.ok(Number(res.headers['retry-after']) > 60, `Retry-After ${res.headers['retry-after']} is within the hour`);
      assert.ok(Number(res.headers['retry-after']) <= 3600);
      assert.equal(res.headers['x-ratelimit-remaining'], '0');
      assert.ok(Number(res.headers['x-ratelimit-consumed']) > 3);
    }
    // Another user of the same drive has a budget of their own; other routes are not limited by this one.
    assert.equal((await get(b.token)).status, 404);
    assert.equal((await h.http.get('/v1/status').set(h.auth(a.token))).status, 200);
  });
});

function binary(res: Response, done: (err: Error | null, body: Buffer) => void) {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}
