import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { openSse } from '../fixtures/sse';

/**
 * The compose deployment's split: command-api, two query-api replicas (each projector member
 * holding some of the topic's partitions), the relay, the processors and the webhook dispatcher,
 * each its own process, with Kafka (the mock cluster, or KAFKA_BROKERS) between them and shared
 * SQLite files standing in for EventStoreDB and MongoDB. Read-your-writes must hold across them
 * (lib/app/shared-consistency.ts): a write answered by command-api is seen by the next read on
 * either replica, and a job read as stopped on one replica comes with its project as the job
 * left it on the other.
 */
describe('e2e: read-your-writes across separate command-api and query-api replicas', function () {
  this.timeout(180_000);
  const kafka = kafkaSuite();
  before(kafka.before);
  after(kafka.after);

  let env: Record<string, string>;
  const services: ServiceProcess[] = [];
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let writer: ReturnType<typeof apiClient>;
  let readers: ReturnType<typeof apiClient>[];
  let replicas: ServiceProcess[];
  let token: string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-media-'));
    media = await startMediaServer({ 'talk.wav': await makeTestMedia(dir, 'wav', 2) });
    await buildOnce();
    env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')),
      KAFKA_BROKERS: kafka.peer().brokers.join(','),
      KAFKA_TOPIC: `e2e-split-${randomUUID()}`,
      KAFKA_PARTITIONS: '4',
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      RATE_LIMIT_PER_MINUTE: '100000',
    };
    const start = async (entry: string, readyWhen?: RegExp) => {
      const svc = await startService(env, entry, readyWhen ? { readyWhen } : {});
      services.push(svc);
      return svc;
    };
    await start('services/relay/main.js', /relay following/);
    await start('services/processors/main.js');
    await start('services/webhook-dispatcher/main.js', /"msg":"subscribed"/);
    const command = await start('services/command-api/main.js');
    const first = await start('services/query-api/main.js');
    await waitFor(() => /"msg":"partitions assigned"/.test(first.output()), {
      timeoutMs: 30_000,
      what: 'the first replica to hold partitions',
    });
    const second = await joinGroup(kafka.peer(), env, 'services/query-api/main.js', 'the projections group');
    services.push(second);
    const drive = await admin(env, 'drive', 'create', '--name', 'Split drive', '--media-seconds', '100000');
    writer = apiClient(command, drive.token);
    readers = [apiClient(first, drive.token), apiClient(second, drive.token)];
    replicas = [first, second];
    token = drive.token;
    receiver = await startWebhookReceiver({ secret: drive.webhook_secret });
  });

  after(async () => {
    for (const svc of services) svc.killAll('SIGTERM');
    await Promise.all(services.map((svc) => svc.exited));
    await receiver?.close();
    await media?.close();
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') for (const svc of services) printWarnings(svc, 10);
  });

  it('holds the partitions of the projections group between the two replicas', () => {
    const held = services
      .filter((svc) => svc.output().includes('"service":"query-api"'))
      .map((svc) => {
        const lines = svc
          .output()
          .split('\n')
          .filter((l) => l.includes('"msg":"partitions assigned"'));
        return JSON.parse(lines.at(-1) ?? '{"partitions":[]}').partitions as number[];
      });
    assert.equal(held.length, 2);
    assert.ok(
      held.every((p) => p.length > 0),
      `each replica holds partitions: ${JSON.stringify(held)}`,
    );
  });

  it('DELETE then GET reads cancelled, and POST then GET /projects lists the project, on either replica, every time', async () => {
    const stale = await staleReadsAfterWrites(writer, 100, (i) => readers[i % 2]);
    assert.deepEqual(stale, []);
  });

  it("streams a job's events from either replica until it ends: a cancel reaches both, woken by the recorded marks", async () => {
    const created = await writer.post('/jobs/import/project_media', {
      project_name: 'Streamed on both',
      add_media: { 'later.wav': { content_type: 'audio/wav', file_size: 1000 } },
    });
    assert.equal(created.status, 201);
    const { job_id } = (await created.json()) as { job_id: string };
    const streams = await Promise.all(
      replicas.map((svc) => openSse(`${svc.base}/v1/jobs/${job_id}/events`, { Authorization: `Bearer ${token}` })),
    );
    for (const stream of streams) {
      assert.equal(stream.status, 200, JSON.stringify(stream.body));
      assert.equal((JSON.parse((await stream.nextEvent())!.data) as { job_state: string }).job_state, 'queued');
    }
    assert.equal((await writer.delete(`/jobs/${job_id}`)).status, 204);
    for (const stream of streams) {
      const rest = await stream.rest();
      assert.deepEqual(
        rest.map((e) => (JSON.parse(e.data) as { job_state: string }).job_state),
        ['cancelled'],
      );
    }
  });

  it('a job read as stopped on one replica comes with its project as the job left it on the other', async () => {
    const jobs = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const res = await writer.post('/jobs/import/project_media', {
          project_name: `Split ${i}`,
          add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
          callback_url: receiver.url(`/hook/${i}`),
        });
        assert.equal(res.status, 201, await res.clone().text());
        return (await res.json()) as { job_id: string; project_id: string };
      }),
    );
    for (const [i, { job_id, project_id }] of jobs.entries()) {
      const [poller, other] = [readers[i % 2], readers[(i + 1) % 2]];
      await waitFor(async () => ((await (await poller.get(`/jobs/${job_id}`)).json()) as { job_state: string }).job_state === 'stopped', {
        timeoutMs: 60_000,
        intervalMs: 20,
        what: `job ${job_id} to stop`,
      });
      const project = (await (await other.get(`/projects/${project_id}`)).json()) as {
        media_files: Record<string, unknown>;
        compositions: unknown[];
      };
      assert.ok('talk.wav' in project.media_files, `job ${i}: the other replica shows the imported file: ${JSON.stringify(project)}`);
      assert.ok(project.compositions.length > 0, `job ${i}: and the composition`);
    }
    // Every stopped job's webhook went out, signed, once its effects were projected.
    const hooks = await receiver.waitFor(jobs.length, 30_000);
    assert.ok(hooks.every((h) => h.verified));
    // Each replica's projector reports its lag and its batches, as the all-in-one worker's does.
    const metrics = await Promise.all(replicas.map(async (svc) => (await fetch(`${svc.base}/metrics`)).text()));
    for (const text of metrics) {
      assert.match(text, /^projection_lag_seconds_count\{read_model="jobs"\} [1-9]/m);
      assert.match(text, /^projector_batch_events_count [1-9]/m);
    }
  });
});
