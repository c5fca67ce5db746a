import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive } from '../../lib/app/admin';
import * as processors from '../../services/processors';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { startHarness, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';
import pino from 'pino';

/** The job engine under load: decoupled from delivery, fair across drives, fenced, exact balances. */
describe('job engine (HTTP, embedded adapters)', function () {
  this.timeout(90_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'media-'));
    const [short, long] = await Promise.all([makeTestMedia(dir, 'wav', 1), makeTestMedia(dir, 'wav', 20)]);
    media = await startMediaServer({ 'short.wav': short, 'long.wav': long });
    // Two slots: one drive may hold one of them while another drive waits.
    h = await startHarness({ concurrency: 2, rateLimitPerMinute: 100_000 });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  const post = (token: string, body: Record<string, unknown>) => h.http.post('/v1/jobs/import/project_media').set(h.auth(token)).send(body);
  const accept = async (token: string, body: Record<string, unknown>) => {
    const res = await post(token, body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.job_id as string;
  };
  const state = async (jobId: string, token = h.drive.token) => (await h.http.get(`/v1/jobs/${jobId}`).set(h.auth(token))).body;
  type Result = { status: string; media_seconds_used: number; media_status: Record<string, unknown>; created_compositions: unknown[] };
  const resultOf = (job: Record<string, unknown>) => job.result as Result;

  it('a slow job in one project does not delay a fast job in another, and one drive never holds every slot', async () => {
    const busy = await createDrive(h.admin, { name: 'Busy drive' });
    // Drive B: three slow imports (the slow path trickles a 20 s WAV for several seconds each).
    const slow = await Promise.all(
      [1, 2, 3].map((i) =>
        accept(busy.token, { project_name: `Slow ${i}`, add_media: { 'long.wav': { url: media.url('slow', 'long.wav') } } }),
      ),
    );
    await waitFor(async () => (await state(slow[0], busy.token)).job_state === 'running', { timeoutMs: 10_000 });
    // Drive A: fast imports in other projects start and finish while B's slow ones still run.
    const fast = await Promise.all(
      [1, 2, 3].map((i) =>
        accept(h.drive.token, { project_name: `Fast ${i}`, add_media: { 'short.wav': { url: media.url('file', 'short.wav') } } }),
      ),
    );
    for (const id of fast) assert.equal((await h.waitForJob(id, undefined, 20_000)).job_state, 'stopped');
    const stillRunning = await Promise.all(slow.map(async (id) => (await state(id, busy.token)).job_state));
    assert.ok(
      stillRunning.some((s) => s !== 'stopped'),
      `drive A's jobs finished before drive B's slow ones: ${stillRunning.join(', ')}`,
    );
    for (const id of slow) await h.waitForJob(id, undefined, 60_000, busy.token);
  });

  it('two workers delivered one job: one attempt runs, the other waits on the claim', async () => {
    const second = await processors.start({ ...h.processorDeps, workerId: 'second-worker' });
    try {
      const ids = await Promise.all(
        [1, 2, 3].map((i) =>
          accept(h.drive.token, { project_name: `Twice ${i}`, add_media: { 'short.wav': { url: media.url('file', 'short.wav') } } }),
        ),
      );
      for (const id of ids) {
        const job = await h.waitForJob(id);
        assert.equal(resultOf(job).status, 'success');
        const events = await h.store.readStream(`job-${id}`);
        assert.equal(events.filter((e) => e.type === 'JobStarted').length, 1, `job ${id} ran one attempt`);
        assert.equal(events.filter((e) => e.type === 'JobStopped').length, 1);
      }
    } finally {
      await second.stop();
    }
  });

  it('50 concurrent imports in one drive all succeed, and the balance ends exactly at the start minus what they used', async () => {
    const start = 1000;
    const drive = await createDrive(h.admin, { name: 'Busy budget', mediaSeconds: start });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post(drive.token, { project_name: `Burst ${i}`, add_media: { [`clip-${i}.wav`]: { url: media.url('file', 'short.wav') } } }),
      ),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(50).fill(201),
    );
    let used = 0;
    for (const r of responses) {
      const job = await h.waitForJob(r.body.job_id, undefined, 60_000, drive.token);
      assert.equal(resultOf(job).status, 'success', JSON.stringify(resultOf(job)));
      used += resultOf(job).media_seconds_used;
    }
    assert.ok(used > 45, `each file is about a second long (used ${used})`);
    // The drive stream is not touched per file: it stays at its creation.
    assert.equal((await h.store.readStream(`drive-${drive.drive_id}`)).length, 1);
    const left = await waitFor(
      async () => {
        const l = (await h.balance.show(drive.drive_id)).media_seconds.left!;
        return Math.abs(l - (start - used)) < 1e-6 ? l : null;
      },
      { timeoutMs: 10_000, what: 'the balance to reach start minus used' },
    );
    assert.ok(Math.abs(left - (start - used)) < 1e-6);
  });

  it('refuses an import with 402 when the drive has no media seconds left', async () => {
    const drive = await createDrive(h.admin, { name: 'Empty drive', mediaSeconds: 0 });
    const res = await post(drive.token, { project_name: 'Nope', add_media: { 'a.wav': { url: media.url('file', 'short.wav') } } });
    assert.equal(res.status, 402);
    assert.equal(res.body.error, 'payment_required');
  });

  it('takes media references that are object property names at face value', async () => {
    // (`__proto__` never gets this far: the body parser refuses it as prototype poisoning, a 400.)
    const refs = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'];
    const add_media = Object.fromEntries(refs.map((r) => [r, { url: media.url('file', 'short.wav') }]));
    const jobId = await accept(h.drive.token, {
      project_name: 'Prototype names',
      add_media,
      add_compositions: [{ name: 'All', clips: refs.map((media) => ({ media })) }],
    });
    const job = await h.waitForJob(jobId);
    assert.equal(resultOf(job).status, 'success', JSON.stringify(resultOf(job)));
    assert.deepEqual(Object.keys(resultOf(job).media_status).sort(), [...refs].sort());
    assert.equal(resultOf(job).created_compositions.length, 1);

    const unknown = await post(h.drive.token, {
      project_name: 'Unknown clip',
      add_media: { 'a.wav': { url: media.url('file', 'short.wav') } },
      add_compositions: [{ name: 'X', clips: [{ media: 'constructor' }] }],
    });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.message, /add_compositions\[0\]\.clips\[0\]\.media/);
  });

  it('skips an event type it does not know: imports keep completing', async () => {
    const stranger = { id: randomUUID(), data: { note: 'from a newer version' }, metadata: { partition_key: 'x' } };
    const jobId = await accept(h.drive.token, { project_name: 'Foreign', add_media: { 'a.wav': { url: media.url('file', 'short.wav') } } });
    await h.store.append(`job-${jobId}`, [{ ...stranger, type: 'JobAuditedByNewerVersion' }], 'any');
    await h.store.append(`project-${randomUUID()}`, [{ ...stranger, id: randomUUID(), type: 'ProjectArchived' }], 'no_stream');
    const job = await h.waitForJob(jobId);
    assert.equal(resultOf(job).status, 'success');
    const after = await accept(h.drive.token, { project_name: 'After', add_media: { 'a.wav': { url: media.url('file', 'short.wav') } } });
    assert.equal(resultOf(await h.waitForJob(after)).status, 'success');
    assert.deepEqual(await h.deadLetters.list(), [], 'an unknown type is skipped, not poison');
  });

  it("a drive's backlog of 12,000 queued imports does not hold back another drive's import", async function () {
    // Past the 10,000 events a consumer group once kept in flight: the other drive's job sat
    // behind the backlog in the log, never reaching the fair pool, for as long as the backlog lasted.
    this.timeout(180_000);
    const hanging = createServer(() => undefined); // accepts, never answers: each backlog job holds its slot
    const sockets = new Set<import('node:net').Socket>();
    hanging.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
    const port = (hanging.address() as AddressInfo).port;
    try {
      const flood = await createDrive(h.admin, { name: 'Flood drive' });
      let next = 0;
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          for (let i = next++; i < 12_000; i = next++) {
            await accept(flood.token, { project_name: `Backlog ${i}`, add_media: { 'a.wav': { url: `http://127.0.0.1:${port}/a.wav` } } });
          }
        }),
      );
      const mine = await accept(h.drive.token, { project_name: 'Mine', add_media: { 'a.wav': { url: media.url('file', 'short.wav') } } });
      const job = await h.waitForJob(mine, undefined, 60_000);
      assert.equal(resultOf(job).status, 'success');
    } finally {
      for (const s of sockets) s.destroy();
      hanging.close();
    }
  });
});

describe('job engine: shutdown with jobs waiting for a slot', function () {
  this.timeout(60_000);

  it('stops without a warning per waiting job: they are redelivered after the restart, not failed', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino(
      { level: 'info' },
      {
        write: (chunk: string) =>
          void lines.push(
            ...chunk
              .split('\n')
              .filter(Boolean)
              .map((line) => JSON.parse(line)),
          ),
      },
    );
    const hanging = createServer(() => undefined); // accepts, never answers: each job holds its slot
    const sockets = new Set<import('node:net').Socket>();
    hanging.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
    const h = await startHarness({ concurrency: 2, logger, allowlist: ['127.0.0.1'] });
    try {
      const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/a.wav`;
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await h.http
          .post('/v1/jobs/import/project_media')
          .set(h.auth())
          .send({ project_name: `Waiting ${i}`, add_media: { 'a.wav': { url } } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        ids.push(res.body.job_id);
      }
      await waitFor(() => (h.processors!.pools['import/project_media'].stats().waiting >= 20 ? true : null), {
        what: 'jobs waiting for a slot',
      });
      await h.processors!.stop();
      const retried = lines.filter((l) => l.msg === 'handler failed; will retry');
      assert.equal(retried.length, 0, `${retried.length} "handler failed" warnings at shutdown`);
      // Nothing was failed or stopped by the shutdown: the jobs are still to be done.
      const states = await Promise.all(ids.map(async (id) => (await h.store.readStream(`job-${id}`)).map((e) => e.type)));
      assert.ok(
        states.every((types) => !types.includes('JobStopped') && !types.includes('JobAttemptFailed')),
        JSON.stringify(states),
      );
    } finally {
      for (const s of sockets) s.destroy();
      hanging.close();
      await h.close();
    }
  });
});
