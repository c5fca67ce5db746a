import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createDrive, updateDrive } from '../../lib/app/admin';
import { handleCommand, loadState } from '../../lib/app/command-handler';
import { compositionDecider } from '../../lib/domain/composition';
import type { Clip } from '../../lib/domain/edl';
import type { DomainEvent } from '../../lib/domain/events';
import { shortIdOf, streams } from '../../lib/domain/ids';
import { jobDecider, type PublishRequest } from '../../lib/domain/job';
import type { MediaImported } from '../../lib/domain/project';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';
import { seedEmptyProject } from '../fixtures/seed-project';

const ROOT = join(__dirname, '..', '..');

/**
 * Issue 21, the command side of publishing: `POST /v1/jobs/publish` through real HTTP on the
 * embedded adapters (real SQLite stores). Projects are written as events, the way imports and
 * agent edits leave them; no processor runs, so an accepted job stays `queued` and what it was
 * accepted with is read back from its stream. Users' names come from the admin CLI itself,
 * writing to the same event store as an operator's would.
 */
describe('publish accept (POST /v1/jobs/publish, HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  const T = '2026-01-01T00:00:00.000Z';

  const media = (projectId: string, ref: string, kind: MediaImported['data']['media_type'], tracks: string[] | null = null) => ({
    type: 'MediaImported' as const,
    data: {
      project_id: projectId,
      job_id: 'seed',
      ref,
      asset_id: null,
      media_type: kind,
      duration_seconds: kind === 'image' ? null : 60,
      blob_key: tracks ? null : `seed/${projectId}/${ref}`,
      size_bytes: tracks ? null : 1000,
      has_audio: kind !== 'image',
      has_video: kind === 'video',
      source_url: null,
      language: null,
      tracks: tracks && tracks.map((m, i) => ({ media: m, offset: i })),
      imported_at: T,
    },
  });
  const clips = (ref: string): Clip[] => [
    { media: ref, in: 0, out: 5 },
    { media: ref, in: 10, out: 12 },
  ];

  type Seeded = { projectId: string; ids: Map<string, string> };
  /**
   * A project of `driveId` with a video, a still, two sounds, an audio-only sequence and one with
   * a picture, and the compositions given, in order (a `deleted` one is deleted after creation).
   */
  async function seed(driveId: string, compositions: { name: string; clips: Clip[]; deleted?: boolean }[]): Promise<Seeded> {
    const { projectId, write } = await seedEmptyProject(h, { driveId, name: 'Show', createdBy: randomUUID(), at: T });
    const ids = new Map(compositions.map((c) => [c.name, randomUUID()]));
    const events: DomainEvent[] = [
      media(projectId, 'cam.mp4', 'video'),
      media(projectId, 'still.png', 'image'),
      media(projectId, 'voice.wav', 'audio'),
      media(projectId, 'music.mp3', 'audio'),
      media(projectId, 'pod', 'sequence', ['voice.wav', 'music.mp3']),
      media(projectId, 'show', 'sequence', ['voice.wav', 'cam.mp4']),
      ...compositions.map((c, n) => ({
        type: 'CompositionAdded' as const,
        data: {
          project_id: projectId,
          composition_id: ids.get(c.name)!,
          short_id: shortIdOf(ids.get(c.name)!),
          name: c.name,
          origin: `seed#${n}`,
          created_at: T,
        },
      })),
    ];
    const appended = await h.store.append(
      streams.project(projectId),
      events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data as never, metadata: write.metadata })),
      0,
    );
    assert.ok(appended.ok);
    for (const [n, c] of compositions.entries()) {
      const id = ids.get(c.name)!;
      const composition = { project_id: projectId, composition_id: id, short_id: shortIdOf(id), name: c.name, origin: `seed#${n}` };
      const create = {
        type: 'CreateComposition' as const,
        composition: { ...composition, clips: c.clips, width: 1280, height: 720 },
        now: T,
      };
      await handleCommand(h.store, streams.composition(id), compositionDecider, create, write);
      if (c.deleted) {
        const edit = { type: 'ApplyEdits' as const, edits: [{ kind: 'delete' as const }], planned_on: 0, now: T };
        await handleCommand(h.store, streams.composition(id), compositionDecider, edit, write);
      }
    }
    return { projectId, ids };
  }

  /** Placeholder first, then a deleted composition with clips, then what the tests name. */
  let show: Seeded;
  const id = (name: string) => show.ids.get(name)!;

  before(async () => {
    h = await startHarness({ processors: false });
    show = await seed(h.drive.drive_id, [
      { name: 'Placeholder', clips: [] },
      { name: 'Gone', clips: clips('cam.mp4'), deleted: true },
      { name: 'Talk', clips: [...clips('voice.wav'), ...clips('cam.mp4')] },
      { name: 'Voice', clips: clips('voice.wav') },
      { name: 'Slides', clips: [...clips('music.mp3'), { media: 'still.png', in: 0, out: 4 }] },
      { name: 'Podcast', clips: clips('pod') },
      { name: 'Panel', clips: clips('show') },
      { name: 'Empty', clips: [] },
    ]);
  });
  after(() => h?.close());

  const post = (body: Record<string, unknown>, token = h.drive.token) => h.http.post('/v1/jobs/publish').set(h.auth(token)).send(body);
  const expectError = (
    res: { status: number; body: { error?: string; message?: string } },
    status: number,
    code: string,
    message: RegExp,
  ) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error, code);
    assert.match(res.body.message ?? '', message);
  };
  /** What the job was accepted with, from its stream (no processor runs here). */
  async function accepted(jobId: string): Promise<{ request: PublishRequest; project_url: string; callback_url: string | null }> {
    const { state } = await loadState(h.store, streams.job(jobId), jobDecider);
    assert.ok(state.status === 'queued', `job ${jobId} is ${state.status}`);
    assert.equal(state.job.job_type, 'publish');
    return state.job as unknown as { request: PublishRequest; project_url: string; callback_url: string | null };
  }
  const publish = async (body: Record<string, unknown>, token = h.drive.token) => {
    const res = await post(body, token);
    assert.equal(res.status, 201, res.text);
    return { body: res.body, job: await accepted(res.body.job_id) };
  };
  const eventCount = async () => (await h.store.readAll(null, 1_000_000)).length;

  describe('refusals: each before anything is written', () => {
    let before: number;
    beforeEach(async () => (before = await eventCount()));
    afterEach(async () => assert.equal(await eventCount(), before, 'a refused request wrote nothing'));

    it('400 naming the field for every malformed request', async () => {
      const p = show.projectId;
      const cases: [Record<string, unknown>, RegExp][] = [
        [{}, /project_id is required/],
        [{ project_id: 'not-a-uuid' }, /project_id/],
        [{ project_id: 42 }, /project_id/],
        [{ project_id: p, composition_id: '' }, /composition_id/],
        [{ project_id: p, composition_id: 7 }, /composition_id/],
        [
          { project_id: p, composition_id: 'Talk' },
          /composition_id must be a composition UUID, a short id \(5 hex digits\), or a project URL/,
        ],
        [
          { project_id: p, composition_id: `${WEB_URL}/${randomUUID()}/${shortIdOf(id('Talk'))}` },
          /composition_id names a composition of project/,
        ],
        [{ project_id: p, composition_id: `https://elsewhere.test/${p}/${shortIdOf(id('Talk'))}` }, /composition_id as a URL must be/],
        [{ project_id: p, media_type: 'video' }, /media_type/],
        [{ project_id: p, resolution: '2K' }, /resolution/],
        [{ project_id: p, resolution: 1080 }, /resolution/],
        [{ project_id: p, media_type: 'Audio', resolution: '720p' }, /resolution applies only to media_type Video/],
        [{ project_id: p, access_level: 'everyone' }, /access_level/],
        [{ project_id: p, access_level: 'Public' }, /access_level/],
        [{ project_id: p, callback_url: 'not a url' }, /callback_url/],
        [{ project_id: p, callback_url: 'ftp://example.com/hook' }, /callback_url/],
        [{ project_id: p, callback_url: 'http://10.1.2.3/hook' }, /callback_url: refused/],
        [{ project_id: p, title: 'Mine' }, /title is not a known field/],
      ];
      for (const [body, message] of cases) expectError(await post(body), 400, 'invalid_input', message);
      const malformed = await h.http.post('/v1/jobs/publish').set(h.auth()).set('Content-Type', 'application/json').send('{"project_id":');
      expectError(malformed, 400, 'invalid_input', /JSON/i);
      assert.equal((await h.http.post('/v1/jobs/publish').send({ project_id: p })).status, 401);
    });

    it('404 for a project or composition that does not exist, or a deleted composition; 403 for another drive’s project', async () => {
      const p = show.projectId;
      const unknown = randomUUID();
      expectError(await post({ project_id: unknown }), 404, 'not_found', new RegExp(`project ${unknown} does not exist`));
      expectError(
        await post({ project_id: p, composition_id: unknown }),
        404,
        'not_found',
        /composition_id: composition .* does not exist/,
      );
      const free = [...'0123456789abcdef'].map((c) => c.repeat(5)).find((s) => ![...show.ids.values()].some((i) => shortIdOf(i) === s))!;
      expectError(await post({ project_id: p, composition_id: free }), 404, 'not_found', new RegExp(`short id ${free}`));
      expectError(await post({ project_id: p, composition_id: `${WEB_URL}/${p}/${free}` }), 404, 'not_found', new RegExp(free));
      expectError(
        await post({ project_id: p, composition_id: id('Gone') }),
        404,
        'not_found',
        /composition_id: composition .* was deleted/,
      );
      expectError(await post({ project_id: p }, h.other.token), 403, 'forbidden', /another drive/);
    });

    it('422 unprocessable_entity for a composition without clips, named or the only one, and for Video without video content', async () => {
      const p = show.projectId;
      expectError(await post({ project_id: p, composition_id: id('Empty') }), 422, 'unprocessable_entity', /has no clips/);
      expectError(await post({ project_id: p, composition_id: id('Placeholder') }), 422, 'unprocessable_entity', /has no clips/);
      const bare = await seed(h.drive.drive_id, [{ name: 'Placeholder', clips: [] }]);
      const gone = await seed(h.drive.drive_id, [
        { name: 'Placeholder', clips: [] },
        { name: 'Gone', clips: clips('cam.mp4'), deleted: true },
      ]);
      const none = await seed(h.drive.drive_id, []);
      before = await eventCount();
      for (const project of [bare, gone, none]) {
        expectError(await post({ project_id: project.projectId }), 422, 'unprocessable_entity', /has no composition with clips to publish/);
      }
      for (const name of ['Voice', 'Podcast']) {
        expectError(
          await post({ project_id: p, composition_id: id(name), media_type: 'Video' }),
          422,
          'unprocessable_entity',
          /media_type Video: composition .* has no video content .* publish it as Audio/,
        );
      }
    });

    it('403 forbidden naming the allowed levels when the drive does not permit the access level, asked for or its default', async () => {
      const managed = await createDrive(h.admin, { name: 'Managed' });
      await updateDrive(h.admin, managed.drive_id, { allowed_access_levels: ['drive', 'private'], default_access_level: 'drive' });
      const project = await seed(managed.drive_id, [{ name: 'Talk', clips: clips('cam.mp4') }]);
      before = await eventCount();
      for (const level of ['public', 'unlisted']) {
        expectError(
          await post({ project_id: project.projectId, access_level: level }, managed.token),
          403,
          'forbidden',
          new RegExp(`access_level: "${level}" is not permitted on this drive \\(allowed: drive, private\\)`),
        );
      }
    });
  });

  describe('accepted', () => {
    it('201 {job_id (UUID v7), drive_id, drive_name, project_id, project_url}; GET /v1/jobs/{id} reads queued, job_type publish', async () => {
      const res = await post({ project_id: show.projectId });
      assert.equal(res.status, 201, res.text);
      const validate = h.schemas.validator('publish-response');
      assert.ok(validate(res.body), JSON.stringify(validate.errors));
      assert.deepEqual(Object.keys(res.body).sort(), ['drive_id', 'drive_name', 'job_id', 'project_id', 'project_url']);
      assert.match(res.body.job_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal(res.body.drive_id, h.drive.drive_id);
      assert.equal(res.body.drive_name, 'Test drive');
      assert.equal(res.body.project_id, show.projectId);
      assert.equal(res.body.project_url, `${WEB_URL}/${show.projectId}/${shortIdOf(id('Talk'))}`, 'the chosen composition');

      const job = await waitFor(
        async () => {
          const r = await h.http.get(`/v1/jobs/${res.body.job_id}`).set(h.auth());
          return r.status === 200 ? r.body : null;
        },
        { what: 'the job readable' },
      );
      assert.ok(h.schemas.validator('job')(job));
      assert.equal(job.job_state, 'queued');
      assert.equal(job.job_type, 'publish');
      assert.equal(job.project_url, res.body.project_url);
      const listed = await h.http.get(`/v1/jobs?project_id=${show.projectId}&type=publish`).set(h.auth());
      assert.ok(listed.body.data.some((j: { job_id: string }) => j.job_id === res.body.job_id));
    });

    it('without composition_id: the first composition with clips, skipping the empty placeholder and a deleted one', async () => {
      const { job } = await publish({ project_id: show.projectId });
      assert.equal(job.request.composition_id, id('Talk'));
      assert.equal(job.request.media_type, 'Video');
    });

    it('takes composition_id as a UUID, a short id (any case) or the project URL', async () => {
      const talk = id('Talk');
      for (const ref of [
        talk,
        talk.toUpperCase(),
        shortIdOf(talk),
        shortIdOf(talk).toUpperCase(),
        `${WEB_URL}/${show.projectId}/${shortIdOf(talk)}`,
      ]) {
        const { body, job } = await publish({ project_id: show.projectId, composition_id: ref });
        assert.equal(job.request.composition_id, talk, ref);
        assert.equal(body.project_url, `${WEB_URL}/${show.projectId}/${shortIdOf(talk)}`);
      }
    });

    it('media_type: Video for video, image or a sequence with a picture; Audio when left out without video; Audio always allowed', async () => {
      const cases: [string, string | undefined, string][] = [
        ['Talk', undefined, 'Video'],
        ['Talk', 'Audio', 'Audio'],
        ['Slides', undefined, 'Video'],
        ['Slides', 'Video', 'Video'],
        ['Panel', undefined, 'Video'],
        ['Voice', undefined, 'Audio'],
        ['Voice', 'Audio', 'Audio'],
        ['Podcast', undefined, 'Audio'],
      ];
      for (const [name, asked, published] of cases) {
        const { job } = await publish({ project_id: show.projectId, composition_id: id(name), ...(asked && { media_type: asked }) });
        assert.equal(job.request.media_type, published, `${name} asked ${asked}`);
      }
    });

    it('resolution: kept for Video, null when left out, ignored when the Audio fallback applies', async () => {
      const p = show.projectId;
      assert.equal((await publish({ project_id: p, resolution: '4K' })).job.request.resolution, '4K');
      assert.equal((await publish({ project_id: p, media_type: 'Video', resolution: '480p' })).job.request.resolution, '480p');
      assert.equal((await publish({ project_id: p })).job.request.resolution, null);
      const fallback = await publish({ project_id: p, composition_id: id('Voice'), resolution: '1080p' });
      assert.deepEqual([fallback.job.request.media_type, fallback.job.request.resolution], ['Audio', null]);
    });

    it('access_level: the drive’s default when left out (unlisted unless the admin changed it), else the one asked for', async () => {
      assert.equal((await publish({ project_id: show.projectId })).job.request.access_level, 'unlisted');
      for (const level of ['public', 'unlisted', 'drive', 'private']) {
        assert.equal((await publish({ project_id: show.projectId, access_level: level })).job.request.access_level, level);
      }
      const managed = await createDrive(h.admin, { name: 'Managed 2' });
      await updateDrive(h.admin, managed.drive_id, { allowed_access_levels: ['drive', 'private'], default_access_level: 'private' });
      const project = await seed(managed.drive_id, [{ name: 'Talk', clips: clips('cam.mp4') }]);
      assert.equal((await publish({ project_id: project.projectId }, managed.token)).job.request.access_level, 'private');
      assert.equal(
        (await publish({ project_id: project.projectId, access_level: 'drive' }, managed.token)).job.request.access_level,
        'drive',
      );
    });

    it('keeps callback_url on the job, and the job on the project’s partition', async () => {
      const { body, job } = await publish({ project_id: show.projectId, callback_url: 'http://127.0.0.1:9/hook' });
      assert.equal(job.callback_url, 'http://127.0.0.1:9/hook');
      const [queued] = await h.store.readStream(streams.job(body.job_id));
      assert.equal(queued.type, 'JobQueued');
      assert.equal(queued.metadata.partition_key, show.projectId);
    });

    it('takes an Idempotency-Key: the same request answers the first 201 again and queues nothing more; another request is 422', async () => {
      const body = { project_id: show.projectId, composition_id: id('Voice') };
      const first = await post(body).set('Idempotency-Key', 'publish-key-1');
      const count = await eventCount();
      const again = await post(body).set('Idempotency-Key', 'publish-key-1');
      assert.equal(first.status, 201, first.text);
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.body, first.body);
      assert.equal(await eventCount(), count, 'nothing written by the replay');
      const other = await post({ ...body, media_type: 'Audio' }).set('Idempotency-Key', 'publish-key-1');
      expectError(other, 422, 'unprocessable_entity', /Idempotency-Key/);
    });
  });

  describe('published_by: the user and names of the token (admin CLI)', () => {
    /** The admin CLI as an operator runs it (through tsx), on the harness's own event store. */
    async function adminCli(...args: string[]) {
      try {
        const { stdout, stderr } = await promisify(execFile)(
          process.execPath,
          ['--require', require.resolve('tsx/cjs'), 'bin/admin.ts', ...args],
          {
            cwd: ROOT,
            env: { ...process.env, DATA_DIR: h.dir, LOG_LEVEL: 'silent' },
          },
        );
        return { code: 0, stdout, stderr };
      } catch (err) {
        const failed = err as { code: number; stdout: string; stderr: string };
        return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
      }
    }

    it('token create --first-name --last-name: the publish names the token’s user with them', async () => {
      const made = await adminCli('token', 'create', '--drive', h.drive.drive_id, '--first-name', ' Zoë ', '--last-name', "N'Diaye-Łukasz");
      assert.equal(made.code, 0, made.stderr);
      const token = JSON.parse(made.stdout);
      assert.deepEqual([token.first_name, token.last_name], ['Zoë', "N'Diaye-Łukasz"]);
      const { job } = await publish({ project_id: show.projectId }, token.token);
      assert.deepEqual(job.request.published_by, { user_id: token.user_id, first_name: 'Zoë', last_name: "N'Diaye-Łukasz" });
      const listed = await adminCli('token', 'list', '--drive', h.drive.drive_id);
      const entry = JSON.parse(listed.stdout).find((t: { token_id: string }) => t.token_id === token.token_id);
      assert.deepEqual([entry.first_name, entry.last_name], ['Zoë', "N'Diaye-Łukasz"]);
    });

    it('drive create --first-name --last-name names the first token’s user', async () => {
      const made = await adminCli('drive', 'create', '--name', 'Named', '--first-name', 'Ana', '--last-name', 'Lima');
      assert.equal(made.code, 0, made.stderr);
      const drive = JSON.parse(made.stdout);
      const project = await seed(drive.drive_id, [{ name: 'Talk', clips: clips('cam.mp4') }]);
      const { job } = await publish({ project_id: project.projectId }, drive.token);
      assert.deepEqual([job.request.published_by.first_name, job.request.published_by.last_name], ['Ana', 'Lima']);
    });

    it('a token without names publishes with empty names; a blank name is refused by the CLI, naming the option', async () => {
      const { job } = await publish({ project_id: show.projectId });
      assert.deepEqual([job.request.published_by.first_name, job.request.published_by.last_name], ['', '']);
      assert.match(job.request.published_by.user_id, /^[0-9a-f-]{36}$/);
      const blank = await adminCli('token', 'create', '--drive', h.drive.drive_id, '--first-name', '  ');
      assert.notEqual(blank.code, 0);
      assert.match(blank.stderr, /--first-name/);
      assert.equal(blank.stdout, '');
    });
  });
});
