import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createOpenAiTranscriber } from '../../lib/adapters/transcriber/openai';
import { replayReadModels } from '../../services/query-api/replay';
import { startFakeOpenAiServer } from '../fixtures/fake-openai-server';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';

/** GET /search over the SearchIndex, and replay of every read model and the index (issue: read side, rules 4 and 6). */
describe('GET /v1/search and replay (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let openai: Awaited<ReturnType<typeof startFakeOpenAiServer>>;
  const ids: Record<string, string> = {};

  const search = async (query: string, token = h.drive.token) => {
    const res = await h.http.get(`/v1/search?${query}`).set(h.auth(token));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.results as Record<string, any>[];
  };
  const importProject = async (body: Record<string, unknown>, token = h.drive.token) => {
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth(token)).send(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id, undefined, 20_000, token);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
    return res.body.project_id as string;
  };

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'search-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 4), 'clip.mp4': await makeTestMedia(dir, 'mp4', 1) });
    openai = await startFakeOpenAiServer();
    const transcriber = createOpenAiTranscriber({ url: openai.url, ffmpegPath: resolveFfmpegPaths().ffmpeg, retryBaseMs: 10 });
    h = await startHarness({ transcriber });
    ids.interview = await importProject({
      project_name: 'Interview',
      folder_name: 'Clients/Acme',
      add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') }, 'b-roll.mp4': { url: media.url('file', 'clip.mp4') } },
      add_compositions: [{ name: 'Rough cut', clips: [{ media: 'b-roll.mp4' }, { media: 'voice.wav' }] }],
    });
    ids.interviewNotes = await importProject({
      project_name: 'Interview notes',
      add_media: { 'notes.mp4': { url: media.url('file', 'clip.mp4') } },
    });
    ids.foreign = await importProject(
      { project_name: 'Interview elsewhere', add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } },
      h.other.token,
    );
    await waitFor(async () => ((await search('query=w3')).length > 0 ? true : null), { what: 'the transcript indexed' });
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await openai?.close();
  });

  it('finds a word that appears only in a transcript, with its snippet and the composition that plays it', async () => {
    const results = await search('query=w2');
    assert.equal(results.length, 1, JSON.stringify(results));
    const [hit] = results;
    assert.equal(hit.type, 'audio');
    assert.equal(hit.name, 'voice.wav');
    assert.equal(hit.location, 'project');
    assert.equal(hit.project_id, ids.interview);
    assert.match(hit.asset_id, /^[0-9a-f-]{36}$/);
    assert.ok(Math.abs(hit.duration - 4) < 0.1);
    assert.match(hit.snippet, /<mark>w2<\/mark>/);
    assert.ok(hit.snippet.length < 200, hit.snippet);
    const detail = (await h.http.get(`/v1/projects/${ids.interview}`).set(h.auth())).body;
    const rough = detail.compositions.find((c: { name: string }) => c.name === 'Rough cut');
    assert.equal(hit.composition_id, rough.id, 'the composition whose clips play that media');
    assert.equal((await search('query=w2&match=name')).length, 0, 'match=name looks at names only');
  });

  it('finds projects, folders, media and compositions by name, exact names first, in the token’s drive only', async () => {
    const results = await search('query=interview');
    assert.deepEqual(
      results.filter((r) => r.type === 'project').map((r) => r.name),
      ['Interview', 'Interview notes'],
      'the exact name first; another drive’s "Interview elsewhere" never',
    );
    assert.equal(results[0].name, 'Interview');
    assert.deepEqual(Object.keys(results[0]).sort(), ['name', 'project_id', 'type', 'updated_at']);
    assert.deepEqual(
      (await search('query=acme&type=project_folder')).map((r) => [r.type, r.name, r.path]),
      [['project_folder', 'Acme', 'Clients/Acme']],
    );
    assert.deepEqual(
      (await search('query=roll&type=video')).map((r) => r.name),
      ['b-roll.mp4'],
    );
    assert.deepEqual(
      (await search('query=rough&type=composition')).map((r) => [r.type, r.name, r.project_id]),
      [['composition', 'Rough cut', ids.interview]],
    );
    assert.deepEqual(await search('query=elsewhere'), []);
    const theirs = await search('query=elsewhere&type=project', h.other.token);
    assert.deepEqual(
      theirs.map((r) => r.project_id),
      [ids.foreign],
    );
  });

  it('filters by type, match and update time, sorts newest or oldest, and limits', async () => {
    const videos = await search('query=mp4&type=video&type=audio');
    assert.ok(videos.length >= 2 && videos.every((r) => r.type === 'video'), JSON.stringify(videos));
    const newest = await search('query=interview&type=project&sort=newest');
    assert.deepEqual(
      newest.map((r) => r.name),
      ['Interview notes', 'Interview'],
    );
    const oldest = await search('query=interview&type=project&sort=oldest');
    assert.deepEqual(
      oldest.map((r) => r.name),
      ['Interview', 'Interview notes'],
    );
    const cut = newest[1].updated_at as string;
    assert.deepEqual(
      (await search(`query=interview&type=project&updated_after=${encodeURIComponent(cut)}`)).map((r) => r.name),
      ['Interview notes'],
    );
    assert.deepEqual(
      (await search(`query=interview&type=project&updated_before=${encodeURIComponent(newest[0].updated_at)}`)).map((r) => r.name),
      ['Interview'],
    );
    assert.equal((await search('query=interview&limit=1')).length, 1);
  });

  it('refuses bad parameters with 400 naming them', async () => {
    for (const [query, message] of [
      ['', /query is required/],
      ['query=', /query/],
      ['query=%22%22', /query/],
      ['query=a&type=movie', /type/],
      ['query=a&match=body', /match/],
      ['query=a&sort=best', /sort/],
      ['query=a&limit=101', /limit/],
      ['query=a&limit=0', /limit/],
      ['query=a&updated_after=soon', /updated_after/],
      ['query=a&query=b', /query/],
    ] as [string, RegExp][]) {
      const res = await h.http.get(`/v1/search?${query}`).set(h.auth());
      assert.equal(res.status, 400, `${query}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.match(res.body.message, message, query);
    }
    assert.deepEqual(
      await search(`query=${encodeURIComponent('NEAR(x y) OR "unbalanced * -w1 $where')}`),
      [],
      'engine syntax is plain words',
    );
  });

  it('answers every read endpoint the same before and after a replay', async () => {
    const endpoints = [
      '/v1/projects?limit=100',
      '/v1/projects?sort=name&direction=asc',
      `/v1/projects/${ids.interview}`,
      `/v1/projects/${ids.interviewNotes}`,
      '/v1/jobs?limit=100',
      '/v1/search?query=interview',
      '/v1/search?query=w1',
      '/v1/search?query=acme',
    ];
    const answers = async () => Promise.all(endpoints.map(async (path) => (await h.http.get(path).set(h.auth())).body));
    // Reading a project's detail records a view (once a minute): let those land before comparing
    // (both read projects listed as viewed; a busy machine may take longer than one poll for it).
    const viewed = (answer: unknown) =>
      [ids.interview, ids.interviewNotes].every((id) =>
        (answer as { data: { id: string; last_viewed_at?: string }[] }).data.some((p) => p.id === id && p.last_viewed_at),
      );
    let before = await answers();
    await waitFor(
      async () => {
        const now = await answers();
        const stable = JSON.stringify(now) === JSON.stringify(before) && viewed(now[0]);
        before = now;
        return stable ? true : null;
      },
      { what: 'the views projected', intervalMs: 200 },
    );
    const jobs = (before[4] as { data: { job_id: string }[] }).data;
    const jobAnswers = async () => Promise.all(jobs.map(async (j) => (await h.http.get(`/v1/jobs/${j.job_id}`).set(h.auth())).body));
    const jobsBefore = await jobAnswers();
    const replayed = await replayReadModels({ store: h.store, read: h.read, search: { index: h.search, blobs: h.processorDeps.blobs } });
    assert.ok(replayed.events > 20, `${replayed.events} events replayed`);
    assert.deepEqual(await answers(), before);
    assert.deepEqual(await jobAnswers(), jobsBefore);
  });
});
