import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { joinGroup, kafkaSuite } from '../fixtures/kafka';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import {
  admin,
  apiClient,
  buildOnce,
  printWarnings,
  staleReadsAfterWrites,
  startService,
  type ServiceProcess,
} from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';
import { startWebhookReceiver } from '../fixtures/webhook-receiver';

/**
 * The service in distributed mode with Kafka as its only server: the all-in-one process on its
 * SQLite store and read models, its worker relaying the store to a Kafka topic and running the
 * processors, projections and webhook dispatcher as consumer groups of that topic; later a
 * second processors process joins the import group. Kafka is librdkafka's mock cluster with three
 * brokers (or KAFKA_BROKERS). The scenarios run in order on one deployment.
 */
describe('e2e: distributed mode, Kafka as the log', function () {
  this.timeout(120_000);
  const kafka = kafkaSuite({ brokers: 3 });
  before(kafka.before);
  after(kafka.after);

  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let env: Record<string, string>;
  let svc: ServiceProcess;
  let api: ReturnType<typeof apiClient>;
  let store: ReturnType<typeof createSqliteEventStore>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-media-'));
    const [wav, mp4, long] = await Promise.all([makeTestMedia(dir, 'wav', 2), makeTestMedia(dir, 'mp4', 2), makeTestMedia(dir, 'wav', 10)]);
    media = await startMediaServer({ 'talk.wav': wav, 'video.mp4': mp4, 'long.wav': long });
    await buildOnce();
    env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')),
      KAFKA_BROKERS: kafka.peer().brokers.join(','),
      // The mock cannot delete topics: a topic of this run's own.
      KAFKA_TOPIC: `e2e-${randomUUID()}`,
      KAFKA_PARTITIONS: '4',
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
      RATE_LIMIT_PER_MINUTE: '100000',
      // A member killed below is dropped from its group after this, not kafkajs's 30 s.
      KAFKA_SESSION_TIMEOUT: '10s',
    };
    svc = await startService(env);
    assert.match(svc.output(), /"mode":"distributed"/);
    const drive = await admin(env, 'drive', 'create', '--name', 'Kafka drive', '--credits', '1000');
    api = apiClient(svc, drive.token);
    receiver = await startWebhookReceiver({ secret: drive.webhook_secret });
    store = createSqliteEventStore({ path: join(env.DATA_DIR, 'events.sqlite') });
  });

  after(async () => {
    if (svc) {
      svc.killAll('SIGTERM');
      await svc.exited;
    }
    await store?.close();
    await receiver?.close();
    await media?.close();
  });

  // A failed scenario shows what the service logged at warn and above: the worker is out of sight.
  afterEach(function () {
    if (this.currentTest?.state === 'failed' && svc) printWarnings(svc, 30);
  });

  // ---------------------------------------------------------------- helpers

  const startImport = async (files: Record<string, 'file' | 'slow'>, extra: Record<string, unknown> = {}) => {
    const add_media = Object.fromEntries(Object.entries(files).map(([name, kind]) => [name, { url: media.url(kind, name) }]));
    const res = await api.post('/jobs/import/project_media', { project_name: `Kafka ${randomUUID().slice(0, 8)}`, add_media, ...extra });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { job_id: string }).job_id;
  };
  const jobOf = async (jobId: string) => (await (await api.get(`/jobs/${jobId}`)).json()) as Record<string, any>;
  const waitForState = (jobId: string, state: string, timeoutMs = 30_000) =>
    waitFor(
      async () => {
        const job = await jobOf(jobId);
        return job.job_state === state ? job : null;
      },
      { timeoutMs, intervalMs: 100, what: `job ${jobId} to be ${state}` },
    );
  const eventsOf = async (jobId: string, type: string) => (await store.readStream(`job-${jobId}`)).filter((e) => e.type === type);
  /** The workers that claimed the job, one per attempt. */
  const workersOf = async (jobId: string) => (await eventsOf(jobId, 'JobStarted')).map((e) => String(e.data.worker_id));
  /** Runs `work` with broker `id` of the mock cluster down; brings it back whatever happens. */
  const whileDown = async <T>(id: number, work: () => Promise<T>): Promise<T> => {
    await kafka.peer().ctl(`down ${id}`);
    try {
      return await work();
    } finally {
      await kafka.peer().ctl(`up ${id}`);
    }
  };
  const joinImportGroup = (processEnv: Record<string, string>) =>
    joinGroup(kafka.peer(), processEnv, 'services/processors/main.js', 'the import group');
  const assertStoppedOnce = async (jobIds: string[]) => {
    for (const jobId of jobIds) assert.equal((await eventsOf(jobId, 'JobStopped')).length, 1, `job ${jobId} stops exactly once`);
  };

  // ---------------------------------------------------------------- scenarios

  it('takes imports from POST to stopped through the Kafka topic, each with its result', async () => {
    const posted = Date.now();
    const jobs = await Promise.all([
      startImport({ 'talk.wav': 'file' }),
      startImport({ 'video.mp4': 'file' }),
      startImport({ 'talk.wav': 'file', 'video.mp4': 'file' }),
    ]);
    const done = await Promise.all(jobs.map((jobId) => waitForState(jobId, 'stopped')));
    console.log(`      three imports stopped ${Date.now() - posted} ms after their POST`);
    assert.deepEqual(
      done.map((j) => j.result.status),
      ['success', 'success', 'success'],
      JSON.stringify(done.map((j) => j.result)),
    );
    assert.deepEqual(
      done.map((j) => Math.round(j.result.media_seconds_used)),
      [2, 2, 4],
    );
    // The read models are the worker's projections of the topic.
    const listed = (await (await api.get('/jobs?limit=10')).json()) as { data: { job_id: string }[] };
    assert.deepEqual(listed.data.map((j) => j.job_id).sort(), [...jobs].sort());
    await assertStoppedOnce(jobs);
  });

  it('reads its writes through Kafka: DELETE then GET reads cancelled, POST then GET /projects lists the project, every time', async () => {
    const stale = await staleReadsAfterWrites(api, 30);
    assert.deepEqual(stale, []);
    // Each read waited for the projector's watermark, learnt from the relay's marks, never for the 2 s bound.
    const metrics = await (await fetch(`${svc.base}/metrics`)).text();
    assert.doesNotMatch(metrics, /read_fence_wait_seconds_count\{outcome="timed_out"\} [1-9]/);
  });

  it('cancels a running import: its download stops and it never stops with a result', async () => {
    const jobId = await startImport({ 'long.wav': 'slow' });
    await waitForState(jobId, 'running');
    assert.equal((await api.delete(`/jobs/${jobId}`)).status, 204);
    const job = await waitForState(jobId, 'cancelled');
    assert.equal(job.result, undefined);
    await waitFor(() => media.aborted.some((u) => u.includes('long.wav')), { timeoutMs: 10_000, what: 'the download to be aborted' });
    assert.equal((await eventsOf(jobId, 'JobStopped')).length, 0);
  });

  it("delivers a stopped job's webhook, signed with the drive's secret", async () => {
    const jobId = await startImport({ 'talk.wav': 'file' }, { callback_url: receiver.url('/hook') });
    const [hook] = await receiver.waitFor(1, 30_000);
    assert.ok(hook.verified, 'signed with the drive secret');
    assert.equal(JSON.parse(hook.body.toString('utf8')).job_id, jobId);
    const deliveries = await waitFor(
      async () => {
        const d = (await (await api.get(`/jobs/${jobId}/deliveries`)).json()) as Record<string, any>;
        return d.state === 'delivered' ? d : null;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: 'the delivery to be recorded' },
    );
    assert.equal(deliveries.attempts.length, 1);
  });

  it('shares the import group with a second processors process, and finishes its job after it is killed', async () => {
    const second = await joinImportGroup({ ...env, WORKER_ID: 'second-worker' });
    try {
      // Imports land on both workers (by project, over the 4 partitions).
      const quick: string[] = [];
      await waitFor(
        async () => {
          const batch = await Promise.all([0, 1, 2, 3].map(() => startImport({ 'talk.wav': 'file' })));
          quick.push(...batch);
          await Promise.all(batch.map((jobId) => waitForState(jobId, 'stopped')));
          const workers = new Set((await Promise.all(quick.map(workersOf))).flat());
          return workers.has('second-worker') && workers.size === 2;
        },
        { timeoutMs: 60_000, intervalMs: 0, what: 'imports run by both workers' },
      );
      await assertStoppedOnce(quick);

      // A slow import claimed by the second process, which then dies without leaving the group.
      const slow: string[] = [];
      const victim = await waitFor(
        async () => {
          const jobId = await startImport({ 'long.wav': 'slow' });
          slow.push(jobId);
          const worker = await waitFor(async () => (await workersOf(jobId)).at(0), { timeoutMs: 20_000, what: 'a claim' });
          return worker === 'second-worker' ? jobId : null;
        },
        { timeoutMs: 60_000, intervalMs: 0, what: 'a slow import on the second process' },
      );
      second.killAll('SIGKILL');
      await second.exited;
      const killedAt = Date.now();

      // Once the group's session timeout has dropped it (KAFKA_SESSION_TIMEOUT, 10 s here), its
      // partitions move to the worker, which takes the job over when the lease it held runs out
      // (at most 15 s). With kafkajs's default of 30 s the takeover would come after 30 s.
      await waitFor(async () => (await workersOf(victim)).length === 2, { timeoutMs: 60_000, what: 'the job taken over' });
      const takenOverAfter = Date.now() - killedAt;
      console.log(`      the killed member's job taken over ${takenOverAfter} ms after the kill`);
      assert.ok(takenOverAfter < 28_000, `taken over ${takenOverAfter} ms after the kill`);
      const job = await waitForState(victim, 'stopped', 90_000);
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      const workers = await workersOf(victim);
      assert.equal(workers.length, 2, `one attempt per worker: ${workers.join(', ')}`);
      assert.equal(workers[0], 'second-worker');
      await Promise.all(slow.map((jobId) => waitForState(jobId, 'stopped')));
      await assertStoppedOnce(slow);
    } finally {
      second.killAll('SIGKILL');
    }
  });

  it('loses nothing and handles nothing twice while the broker leading the topic is down and brought back', async function () {
    kafka.requireMock(this);
    const mock = kafka.peer();
    // Every partition of the topic on broker 2 (the mock moves leaders only when told).
    for (let partition = 0; partition < 4; partition++) await mock.ctl(`leader ${env.KAFKA_TOPIC} ${partition} 2`);
    // The members find the new leaders on their next metadata refresh; right after the scenario
    // that killed a member, the group may still be settling: more than the default 30 s once in CI.
    await waitForState(await startImport({ 'talk.wav': 'file' }), 'stopped', 90_000);

    const hooksBefore = receiver.received.length;
    const relayFailures = () => svc.output().match(/publish failed; retrying the same batch/g)?.length ?? 0;
    const failuresBefore = relayFailures();
    const jobs = await whileDown(2, async () => {
      const accepted = await Promise.all(
        [0, 1, 2, 3, 4, 5].map(() => startImport({ 'talk.wav': 'file' }, { callback_url: receiver.url('/hook') })),
      );
      // The outage is felt: the relay cannot publish, and the jobs wait.
      await waitFor(() => relayFailures() > failuresBefore, {
        timeoutMs: 60_000,
        intervalMs: 100,
        what: 'the relay to see the broker down',
      });
      assert.deepEqual(
        await Promise.all(accepted.map(async (jobId) => (await jobOf(jobId)).job_state)),
        accepted.map(() => 'queued'),
      );
      return accepted;
    });
    const done = await Promise.all(jobs.map((jobId) => waitForState(jobId, 'stopped', 90_000)));
    assert.ok(
      done.every((j) => j.result.status === 'success'),
      JSON.stringify(done.map((j) => j.result)),
    );
    await assertStoppedOnce(jobs);
    await receiver.waitFor(hooksBefore + jobs.length, 30_000);
    const hooks = receiver.received.slice(hooksBefore);
    assert.deepEqual(hooks.map((h) => JSON.parse(h.body.toString('utf8')).job_id).sort(), [...jobs].sort(), 'one webhook per job');
    const ids = receiver.received.map((h) => h.headers['webhook-id']);
    assert.equal(new Set(ids).size, ids.length, 'no webhook delivered twice');
  });
});
