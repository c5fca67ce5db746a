import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../lib/adapters/system/clock';
import { createDrive } from '../../lib/app/admin';
import { createAuthenticator } from '../../lib/app/tenancy';
import { handleCommand } from '../../lib/app/command-handler';
import { projectDecider } from '../../lib/domain/project';
import { streams } from '../../lib/domain/ids';
import type { ProjectCommand } from '../../lib/domain/project';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';

/** GET /projects and GET /projects/{id} over the projects and compositions read models (issue: read side, rules 2 and 3). */
describe('GET /v1/projects and /v1/projects/{id} (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();

  /** A project written through the domain, at a chosen time, by a chosen user. */
  async function seed(name: string, minute: number, extra: { folder?: string; by?: string; drive?: string } = {}) {
    const id = randomUUID();
    const command: ProjectCommand = {
      type: 'CreateProject',
      project: {
        project_id: id,
        drive_id: extra.drive ?? h.drive.drive_id,
        name,
        folder_path: extra.folder ?? null,
        team_access: 'none',
        created_by: extra.by ?? me,
        job_id: null,
      },
      now: at(minute),
    };
    await handleCommand(h.store, streams.project(id), projectDecider, command, { newId: randomUUID, metadata: { partition_key: id } });
    return id;
  }
  const list = async (query: string, token = h.drive.token) => {
    const res = await h.http.get(`/v1/projects${query}`).set(h.auth(token));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { data: { id: string; name: string }[]; pagination: { next_cursor?: string } };
  };
  const names = async (query: string) => (await list(query)).data.map((p) => p.name);
  /** Every page of a query, following next_cursor. */
  async function walk(query: string, between?: () => Promise<void>) {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const page = await list(`${query}&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.data.map((p) => p.id));
      cursor = page.pagination.next_cursor;
      if (!cursor) return seen;
      await between?.();
    }
    throw new Error('more than 100 pages');
  }

  const ids = new Map<string, string>();
  let me: string;
  before(async () => {
    h = await startHarness();
    me = (await createAuthenticator({ store: h.store, clock: systemClock })(`Bearer ${h.drive.token}`)).userId;
    const dir = mkdtempSync(join(tmpdir(), 'projects-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 1) });
    const other = randomUUID();
    ids.set('Alpha', await seed('Alpha', 1));
    ids.set('beta', await seed('beta', 2, { folder: 'Clients' }));
    ids.set('Gamma', await seed('Gamma', 3, { folder: 'Clients/Acme' }));
    ids.set('delta', await seed('delta', 4, { folder: 'Clients/Acme', by: other }));
    ids.set('Epsilon alpha', await seed('Epsilon alpha', 5, { by: other }));
    ids.set('Zeta', await seed('Zeta', 6));
    ids.set('other drive alpha', await seed('other drive alpha', 7, { drive: h.other.drive_id }));
    await waitFor(async () => ((await list('?limit=100')).data.length === 6 ? true : null), { what: 'the projects projected' });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  it('lists the drive’s projects newest first, 20 at most unless told, with the summary fields', async () => {
    const body = await list('');
    assert.deepEqual(
      body.data.map((p) => p.name),
      ['Zeta', 'Epsilon alpha', 'delta', 'Gamma', 'beta', 'Alpha'],
    );
    assert.deepEqual(body.pagination, {});
    assert.deepEqual(Object.keys(body.data.find((p) => p.name === 'Gamma')!).sort(), [
      'created_at',
      'folder_path',
      'id',
      'name',
      'updated_at',
    ]);
    assert.equal((body.data.find((p) => p.name === 'Alpha') as Record<string, unknown>).folder_path, undefined, 'absent at the root');
  });

  it('sorts by name (ignoring case), created_at and updated_at in both directions', async () => {
    assert.deepEqual(await names('?sort=name&direction=asc'), ['Alpha', 'beta', 'delta', 'Epsilon alpha', 'Gamma', 'Zeta']);
    assert.deepEqual(await names('?sort=name&direction=desc'), ['Zeta', 'Gamma', 'Epsilon alpha', 'delta', 'beta', 'Alpha']);
    assert.deepEqual(await names('?sort=created_at&direction=asc'), ['Alpha', 'beta', 'Gamma', 'delta', 'Epsilon alpha', 'Zeta']);
    assert.deepEqual(await names('?sort=updated_at&direction=desc'), ['Zeta', 'Epsilon alpha', 'delta', 'Gamma', 'beta', 'Alpha']);
  });

  it('filters by name (substring, any case), folder (directly in it), creator (uuid or me) and time ranges', async () => {
    assert.deepEqual(await names('?name=ALPHA&sort=name&direction=asc'), ['Alpha', 'Epsilon alpha']);
    assert.deepEqual(await names('?folder_path=Clients'), ['beta'], 'only directly in the deepest folder');
    assert.deepEqual(await names('?folder_path=Clients/Acme&sort=name&direction=asc'), ['delta', 'Gamma']);
    assert.deepEqual(await names('?created_by=me&sort=name&direction=asc'), ['Alpha', 'beta', 'Gamma', 'Zeta']);
    const someone = (await list('?name=delta')).data[0];
    assert.ok(someone);
    assert.deepEqual(
      await names(
        `?created_by=${encodeURIComponent(String((await h.read.get('projects', someone.id))!.created_by))}&sort=name&direction=asc`,
      ),
      ['delta', 'Epsilon alpha'],
    );
    assert.deepEqual(await names(`?created_after=${at(2)}&created_before=${at(5)}&sort=created_at&direction=asc`), ['Gamma', 'delta']);
    assert.deepEqual(await names(`?updated_after=${at(5)}`), ['Zeta']);
    assert.deepEqual(await names(`?updated_before=${at(2)}`), ['Alpha']);
  });

  it('walks every page of every sort, each project exactly once, even while projects are being created', async () => {
    for (const sort of ['name', 'created_at', 'updated_at', 'last_viewed_at']) {
      for (const direction of ['asc', 'desc']) {
        const before = new Set((await list('?limit=100')).data.map((p) => p.id));
        let n = 0;
        const seen = await walk(`?sort=${sort}&direction=${direction}`, async () => {
          await seed(`walk ${sort} ${direction} ${n++}`, 30 + n);
        });
        assert.equal(new Set(seen).size, seen.length, `${sort} ${direction}: a project came twice`);
        for (const id of before) assert.ok(seen.includes(id), `${sort} ${direction}: ${id} was missed`);
      }
    }
  });

  it('records last_viewed_at when the detail is read, once a minute per project and user, and sorts by it', async () => {
    const gamma = ids.get('Gamma')!;
    const beta = ids.get('beta')!;
    for (const id of [gamma, beta, gamma]) assert.equal((await h.http.get(`/v1/projects/${id}`).set(h.auth())).status, 200);
    await waitFor(
      async () => {
        const page = await list('?sort=last_viewed_at&direction=desc&limit=2');
        return page.data.map((p) => p.id).join() === [beta, gamma].join() ? true : null;
      },
      { what: 'views projected' },
    );
    const views = (await h.store.readStream(streams.project(gamma))).filter((e) => e.type === 'ProjectViewed');
    assert.equal(views.length, 1, 'the second read within a minute records nothing');
    const summary = (await list('?sort=last_viewed_at&direction=desc&limit=1')).data[0] as Record<string, unknown>;
    assert.match(String(summary.last_viewed_at), /^\d{4}-/);
    const never = (await list('?sort=last_viewed_at&direction=asc&limit=1')).data[0] as Record<string, unknown>;
    assert.equal(never.last_viewed_at, undefined, 'never-viewed projects come first ascending');
  });

  it('refuses bad parameters with 400 naming them', async () => {
    const cases: [string, RegExp][] = [
      ['?sort=size', /sort/],
      ['?direction=up', /direction/],
      ['?limit=0', /limit/],
      ['?limit=101', /limit/],
      ['?limit=ten', /limit/],
      ['?created_after=yesterday', /created_after/],
      ['?updated_before=2026-13-01T00:00:00Z', /updated_before/],
      ['?created_by=bob', /created_by/],
      ['?folder_path=/Clients', /folder_path/],
      ['?colour=red', /colour/],
      ['?sort=name&sort=created_at', /sort/],
      ['?cursor=garbage', /cursor/],
    ];
    for (const [query, message] of cases) {
      const res = await h.http.get(`/v1/projects${query}`).set(h.auth());
      assert.equal(res.status, 400, `${query}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.message, message, query);
    }
    const cursor = (await list('?sort=name&limit=1')).pagination.next_cursor!;
    const res = await h.http.get(`/v1/projects?sort=created_at&limit=1&cursor=${cursor}`).set(h.auth());
    assert.equal(res.status, 400);
    assert.match(res.body.message, /cursor belongs to sort=name/);
    // A cursor of the jobs list is not one of projects; a forged one whose time is not a time is no cursor.
    const jobsCursor = Buffer.from(JSON.stringify(['created_at', 'desc', '2026-01-01T00:00:00.000Z', 'x', 'jobs'])).toString('base64url');
    const other = await h.http.get(`/v1/projects?limit=1&cursor=${jobsCursor}`).set(h.auth());
    assert.equal(other.status, 400, JSON.stringify(other.body));
    assert.match(other.body.message, /cursor belongs to another list/);
    for (const forged of [
      ['created_at', 'desc', 'not-a-date', 'x'],
      ['created_at', 'desc', 5, 'x', 'projects'],
    ]) {
      const cursor = Buffer.from(JSON.stringify(forged)).toString('base64url');
      const sort = forged[0];
      const bad = await h.http.get(`/v1/projects?limit=1&sort=${sort}&cursor=${cursor}`).set(h.auth());
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.match(bad.body.message, /cursor is not a cursor this API returned/);
    }
  });

  it('answers the detail as the spec shapes it, from an import with media and compositions', async () => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({
        project_name: 'Detail',
        folder_name: 'Clients/Acme',
        add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'voice.wav' }, { media: 'voice.wav' }] }],
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await h.waitForJob(res.body.job_id);
    const detail = await waitFor(
      async () => {
        const d = await h.http.get(`/v1/projects/${res.body.project_id}`).set(h.auth());
        return d.status === 200 && d.body.compositions.length === 2 ? (d.body as Record<string, any>) : null;
      },
      { what: 'the project projected' },
    );
    assert.deepEqual(Object.keys(detail).sort(), [
      'compositions',
      'created_at',
      'drive_id',
      'folder_path',
      'id',
      'media_files',
      'name',
      'publishes',
      'updated_at',
    ]);
    assert.equal(detail.id, res.body.project_id);
    assert.equal(detail.drive_id, h.drive.drive_id);
    assert.equal(detail.folder_path, 'Clients/Acme');
    assert.deepEqual(Object.keys(detail.media_files), ['voice.wav']);
    assert.equal(detail.media_files['voice.wav'].type, 'audio');
    assert.ok(Math.abs(detail.media_files['voice.wav'].duration - 1) < 0.1);
    assert.deepEqual(detail.publishes, []);
    assert.deepEqual(
      detail.compositions.map((c: { name: string; media_type: string }) => [c.name, c.media_type]),
      [
        ['Detail', 'audio'],
        ['Main', 'audio'],
      ],
    );
    assert.equal(detail.compositions[0].duration, 0, 'the placeholder is empty');
    assert.ok(Math.abs(detail.compositions[1].duration - 2) < 0.2, 'two clips of one second');
    assert.ok(detail.updated_at >= detail.created_at);
  });

  it('answers 400 for a malformed id, 404 for an unknown one and 403 for another drive’s, never its data', async () => {
    const malformed = await h.http.get('/v1/projects/not-a-uuid').set(h.auth());
    assert.equal(malformed.status, 400);
    assert.match(malformed.body.message, /project_id/);
    assert.equal((await h.http.get(`/v1/projects/${randomUUID()}`).set(h.auth())).status, 404);
    const foreign = await h.http.get(`/v1/projects/${ids.get('other drive alpha')}`).set(h.auth());
    assert.equal(foreign.status, 403);
    assert.doesNotMatch(JSON.stringify(foreign.body), /other drive alpha/);
    assert.ok((await names('?name=other&limit=100')).length === 0, 'the list never shows another drive’s projects');
    const third = await createDrive(h.admin, { name: 'Third' });
    assert.deepEqual((await list('', third.token)).data, []);
  });
});
