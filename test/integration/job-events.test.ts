import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as processors from '../../services/processors';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { openSse, type SseStream } from '../fixtures/sse';
import { waitFor } from '../fixtures/wait';

type Job = Record<string, unknown> & { job_state: string; progress?: { percent: number; label: string } };

/** A harness listening on loopback, so that streams are read over real HTTP (fetch). */
async function listening(h: Harness) {
  await new Promise<void>((resolve) => h.server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
  return {
    events: (jobId: string, headers: Record<string, string> = {}, query = '', token = h.drive.token) =>
      openSse(`${base}/v1/jobs/${jobId}/events${query}`, { Authorization: `Bearer ${token}`, ...headers }),
  };
}

const docOf = (e: { data: string }) => JSON.parse(e.data) as Job;

describe('GET /v1/jobs/{job_id}/events: live job events (SSE over loopback)', function () {
  this.timeout(60_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  const opened: SseStream[] = [];
  const open = (s: SseStream) => (opened.push(s), s);

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'media-'));
    const [short, five] = await Promise.all([makeTestMedia(dir, 'wav', 1), makeTestMedia(dir, 'wav', 5)]);
    media = await startMediaServer({ 'a.wav': short, 'five.wav': five });
  });
  after(async () => media?.close());
  afterEach(() => opened.splice(0).forEach((s) => s.close()));

  const startImport = async (h: Harness, file: 'file' | 'slow', name: string, token = h.drive.token) => {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(token))
      .send({ project_name: 'Events', add_media: { [name]: { url: media.url(file, name) } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.job_id as string;
  };

  describe('a job from queued to stopped (processors started after the stream opened)', () => {
    let h: Harness;
    let api: Awaited<ReturnType<typeof listening>>;
    before(async () => {
      h = await startHarness({ processors: false });
      api = await listening(h);
    });
    after(async () => h?.close());

    it('sends queued, running with progress, then the final document equal to GET, with rising ids, and closes', async () => {
      const jobId = await startImport(h, 'slow', 'five.wav');
      const stream = open(await api.events(jobId));
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(stream.headers.get('x-accel-buffering'), 'no');
      assert.match(stream.headers.get('cache-control') ?? '', /no-cache/);
      assert.equal(stream.headers.get('content-encoding'), null);
      const retry = await stream.next();
      assert.equal(retry?.kind, 'retry');

      const first = await stream.nextEvent();
      assert.ok(first);
      assert.equal(first.event, 'job');
      assert.equal(docOf(first).job_state, 'queued');

      const worker = await processors.start(h.processorDeps);
      try {
        const rest = await stream.rest();
        const all = [first, ...rest];
        const ids = all.map((e) => Number(e.id));
        for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `ids rise: ${ids.join(',')}`);
        const states = all.map((e) => docOf(e).job_state);
        assert.deepEqual([...new Set(states)], ['queued', 'running', 'stopped'], states.join(','));
        const running = all.map(docOf).filter((j) => j.job_state === 'running');
        assert.ok(
          running.some((j) => j.progress && j.progress.percent > 0),
          'progress is streamed',
        );
        // No two events carry the same document.
        assert.equal(new Set(all.map((e) => e.data)).size, all.length);
        const get = await h.http.get(`/v1/jobs/${jobId}`).set(h.auth());
        assert.deepEqual(docOf(all[all.length - 1]), get.body);
        assert.equal(await stream.next(), null, 'the server closed the stream');
        await waitFor(() => h.jobEvents.open() === 0, { what: 'the stream to be released' });
        assert.deepEqual(h.jobEvents.watched(), { jobs: 0, watchers: 0 });
      } finally {
        await worker.stop();
      }
    });
  });

  describe('ended jobs, resume, errors (processors running)', () => {
    let h: Harness;
    let api: Awaited<ReturnType<typeof listening>>;
    before(async () => {
      // Read models trail the store as under load: the stream must still find a job just accepted.
      h = await startHarness({ projectionDelayMs: 150 });
      api = await listening(h);
    });
    after(async () => h?.close());

    it('finds a job created a moment ago (read-your-writes), and follows it to its end', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      const stream = open(await api.events(jobId));
      assert.equal(stream.status, 200, JSON.stringify(stream.body));
      const events = await stream.rest();
      assert.ok(events.length >= 1);
      assert.equal(docOf(events[events.length - 1]).job_state, 'stopped');
    });

    it('a job already stopped: one event, the document GET answers, then the stream closes', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      const done = await h.waitForJob(jobId);
      const stream = open(await api.events(jobId));
      const events = await stream.rest();
      assert.equal(events.length, 1);
      assert.deepEqual(docOf(events[0]), done);
    });

    it('resumes after Last-Event-ID, as a header or as ?last_event_id', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      await h.waitForJob(jobId);
      const [final] = await open(await api.events(jobId)).rest();
      const finalId = Number(final.id);

      // The client has the final document: nothing is sent again, the stream just closes.
      for (const s of [
        await api.events(jobId, { 'Last-Event-ID': String(finalId) }),
        await api.events(jobId, {}, `?last_event_id=${finalId}`),
      ]) {
        open(s);
        assert.equal(s.status, 200);
        assert.deepEqual(await s.rest(), []);
      }
      // An older id: the final document once.
      for (const s of [
        await api.events(jobId, { 'Last-Event-ID': String(finalId - 1) }),
        await api.events(jobId, {}, `?last_event_id=0`),
      ]) {
        open(s);
        const events = await s.rest();
        assert.deepEqual(
          events.map((e) => e.id),
          [String(finalId)],
        );
      }
    });

    it('resumes a running job without sending what the client had', async () => {
      const jobId = await startImport(h, 'slow', 'five.wav');
      const first = open(await api.events(jobId));
      const seen = await first.nextEvent();
      assert.ok(seen);
      first.close();
      const resumed = open(await api.events(jobId, { 'Last-Event-ID': seen.id! }));
      const events = await resumed.rest();
      assert.ok(events.length >= 1);
      assert.ok(
        events.every((e) => Number(e.id) > Number(seen.id)),
        `${events.map((e) => e.id).join(',')} after ${seen.id}`,
      );
      assert.equal(docOf(events[events.length - 1]).job_state, 'stopped');
    });

    it('answers 401 without a token, 404 for unknown or malformed ids, 403 for another drive, 400 for a bad Last-Event-ID', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      const cases: [SseStream, number, string][] = [
        [await openSse(`${'http://127.0.0.1:' + (h.server.address() as AddressInfo).port}/v1/jobs/${jobId}/events`), 401, 'unauthorized'],
        [await api.events('project-media-import-8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10'), 404, 'not_found'],
        [await api.events('nonsense'), 404, 'not_found'],
        [await api.events(jobId, {}, '', h.other.token), 403, 'forbidden'],
        [await api.events(jobId, { 'Last-Event-ID': 'abc' }), 400, 'invalid_input'],
        [await api.events(jobId, {}, '?last_event_id=-1'), 400, 'invalid_input'],
      ];
      for (const [s, status, error] of cases) {
        assert.equal(s.status, status, JSON.stringify(s.body));
        const body = s.body as { error: string; message: string };
        assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
        assert.equal(body.error, error);
      }
      assert.match((cases[4][0].body as { message: string }).message, /Last-Event-ID/);
      assert.match((cases[5][0].body as { message: string }).message, /last_event_id/);
    });
  });

  describe('bounds: streams per token, lifetime, heartbeats, shutdown', () => {
    let h: Harness;
    let api: Awaited<ReturnType<typeof listening>>;
    before(async () => {
      h = await startHarness({ processors: false, jobEvents: { maxStreamsPerToken: 2, heartbeatMs: 50, maxStreamMs: 60_000 } });
      api = await listening(h);
    });
    after(async () => h?.close());

    it('answers 429 rate_limit_exceeded with Retry-After over the per-token bound; a closed client frees its place', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      const [a, b] = [open(await api.events(jobId)), open(await api.events(jobId))];
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      const over = await api.events(jobId);
      assert.equal(over.status, 429);
      assert.equal((over.body as { error: string }).error, 'rate_limit_exceeded');
      assert.ok(Number(over.headers.get('retry-after')) >= 1);
      // Another token of the same drive has its own bound.
      const otherToken = await h.newToken();
      const other = open(await api.events(jobId, {}, '', otherToken.token));
      assert.equal(other.status, 200);
      assert.equal(h.jobEvents.open(), 3);

      a.close();
      await waitFor(() => h.jobEvents.open() === 2, { what: 'the closed client to be released' });
      const again = open(await api.events(jobId));
      assert.equal(again.status, 200);

      for (const s of [b, other, again]) s.close();
      await waitFor(() => h.jobEvents.open() === 0, { what: 'every stream to be released' });
      assert.deepEqual(h.jobEvents.watched(), { jobs: 0, watchers: 0 }, 'no watcher left behind');
    });

    it('answers HEAD with the stream headers and holds nothing open', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      const res = await h.http.head(`/v1/jobs/${jobId}/events`).set(h.auth());
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'], /^text\/event-stream/);
      await waitFor(() => h.jobEvents.open() === 0, { what: 'the HEAD to hold no stream' });
      assert.deepEqual(h.jobEvents.watched(), { jobs: 0, watchers: 0 });
    });

    it('writes keep-alive comments while nothing changes', async () => {
      const jobId = await startImport(h, 'file', 'a.wav');
      const s = open(await api.events(jobId));
      const comments: string[] = [];
      for (let m = await s.next(); m && comments.length < 2; m = await s.next()) if (m.kind === 'comment') comments.push(m.text);
      assert.deepEqual(comments, ['keep-alive', 'keep-alive']);
    });

    it('ends every open stream on shutdown', async () => {
      const idle = await startHarness({ processors: false });
      try {
        const idleApi = await listening(idle);
        const jobId = await startImport(idle, 'file', 'a.wav');
        const s = open(await idleApi.events(jobId));
        assert.equal(docOf((await s.nextEvent())!).job_state, 'queued');
        idle.jobEvents.close();
        assert.equal(await s.nextEvent(), null);
      } finally {
        await idle.close();
      }
    });

    it('ends a stream at its maximum lifetime (the client resumes with Last-Event-ID)', async () => {
      // Heartbeats far apart: the lifetime is kept to the moment, not to the next heartbeat.
      const short = await startHarness({ processors: false, jobEvents: { maxStreamMs: 200, heartbeatMs: 60_000 } });
      try {
        const shortApi = await listening(short);
        const jobId = await startImport(short, 'file', 'a.wav');
        const started = Date.now();
        const s = open(await shortApi.events(jobId));
        const events = await s.rest();
        assert.ok(Date.now() - started < 10_000, `ended after ${Date.now() - started} ms`);
        assert.equal(events.length, 1);
        assert.equal(docOf(events[0]).job_state, 'queued');
        await waitFor(() => short.jobEvents.open() === 0, { what: 'the ended stream to be released' });
      } finally {
        await short.close();
      }
    });
  });
});
