import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import supertest from 'supertest';
import { createSqliteEventStore, type SqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createDrive, createToken, updateDrive } from '../../lib/app/admin';
import type { Balances } from '../../lib/app/balances';
import { handleCommand } from '../../lib/app/command-handler';
import { createAuthenticator } from '../../lib/app/tenancy';
import { buildCatalog } from '../../lib/domain/agent/catalog';
import { deliveryDecider } from '../../lib/domain/delivery';
import { streams } from '../../lib/domain/ids';
import { loadSchemas } from '../../lib/http/schemas';
import type { Clock } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';
import { signedUploadUrl } from '../../services/command-api/from-config';
import { createApp } from '../../services/command-api/app';
import { waitFor } from '../fixtures/wait';

/**
 * Idempotency-Key on the creating POSTs (DESIGN §8, Stripe's semantics), through the command
 * API's HTTP app on a real SQLite event store: the same key and body within 24 hours answer the
 * first response again (`Idempotent-Replayed: true`) and create nothing; another body is 422; a
 * request still in flight with the key is 409; keys are per token and survive a restart.
 */

const IMPORT = '/v1/jobs/import/project_media';
const body = (name = 'Interview') => ({ project_name: name, add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } } });
const schemas = loadSchemas();

/** A clock the test moves. */
const testClock = (start = Date.parse('2026-03-01T12:00:00.000Z')) => {
  let t = start;
  return { now: () => new Date(t), advance: (ms: number) => void (t += ms) } satisfies Clock & { advance(ms: number): void };
};

/** The command API as command-api/main wires it, over `store`, listening on loopback. */
async function startApi(store: EventStore, clock: Clock, balance: { left: number | null } = { left: null }) {
  const app = createApp({
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    authenticate: createAuthenticator({ store, clock: systemClock, cacheTtlMs: 0 }),
    limiter: new RateLimiterMemory({ points: 100_000, duration: 60 }),
    maxRequestBytes: 64 * 1024,
    schemas,
    store,
    clock,
    ids: randomIds,
    webUrl: 'http://web.test',
    urlRefusal: () => null,
    balance: {
      mediaSecondsLeft: async () => balance.left,
      show: () => Promise.reject(new Error('this test sends no agent prompts')),
    } satisfies Pick<Balances, 'mediaSecondsLeft' | 'show'>,
    agentCatalog: buildCatalog(null, null),
    uploadTtlMs: 3 * 3600 * 1000,
    mediaMaxBytes: 1024 * 1024,
    uploadUrl: signedUploadUrl('http://api.test/v1', 'idempotency-test-secret-0123456789'),
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const http = supertest(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return { http, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

type Api = Awaited<ReturnType<typeof startApi>>;

const count = async (store: EventStore, type: string) => (await store.readAll(null, 100_000)).filter((e) => e.type === type).length;

describe('Idempotency-Key on creating POSTs', function () {
  this.timeout(20_000);
  let dir: string;
  let store: SqliteEventStore;
  let clock: ReturnType<typeof testClock>;
  let api: Api;
  let token: string;
  let driveId: string;
  const admin = () => ({ store, clock: systemClock, ids: randomIds });
  const openStore = () => createSqliteEventStore({ path: join(dir, 'events.sqlite'), pollIntervalMs: 20 });
  const post = (key: string | undefined, payload: object = body(), path = IMPORT, as = token) => {
    const req = api.http.post(path).set('Authorization', `Bearer ${as}`);
    if (key !== undefined) req.set('Idempotency-Key', key);
    return req.send(payload);
  };
  const jobs = () => count(store, 'JobQueued');
  let n = 0;
  const newKey = () => `key-${Date.now()}-${++n}`;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idempotency-'));
    store = openStore();
    clock = testClock();
    api = await startApi(store, clock);
    const drive = await createDrive(admin(), { name: 'Drive' });
    token = drive.token;
    driveId = drive.drive_id;
  });
  afterEach(async () => {
    await api.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('changes nothing without the header: each request creates, and no Idempotent-Replayed header', async () => {
    const [a, b] = [await post(undefined), await post(undefined)];
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.job_id, b.body.job_id);
    assert.equal(a.headers['idempotent-replayed'], undefined);
    assert.equal(await jobs(), 2);
  });

  it('answers the same key and body with the first response, byte for byte, marked replayed, and creates one job', async () => {
    const key = newKey();
    const first = await post(key);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers['idempotent-replayed'], undefined, 'a first response is not marked');
    for (let i = 0; i < 2; i++) {
      const again = await post(key);
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.match(again.headers['content-type'], /^application\/json/);
    }
    assert.equal(await jobs(), 1);
    assert.equal(await count(store, 'ProjectCreated'), 1);
  });

  it('takes the same body with other whitespace and key order as the same request', async () => {
    const key = newKey();
    const first = await post(key, { add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } }, project_name: 'Interview' });
    const spaced = JSON.stringify(body(), null, 2);
    const again = await api.http
      .post(IMPORT)
      .set('Authorization', `Bearer ${token}`)
      .set('Idempotency-Key', key)
      .set('Content-Type', 'application/json')
      .send(spaced);
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(await jobs(), 1);
  });

  it('refuses the same key with another body as 422 unprocessable_entity, and creates nothing', async () => {
    const key = newKey();
    assert.equal((await post(key)).status, 201);
    const other = await post(key, body('Another name'));
    assert.equal(other.status, 422);
    assert.equal(other.body.error, 'unprocessable_entity');
    assert.match(other.body.message, /Idempotency-Key/);
    assert.equal(other.headers['idempotent-replayed'], undefined);
    assert.equal(await jobs(), 1);
  });

  it('writes nothing for a refused or replayed request, folders included', async () => {
    const key = newKey();
    assert.equal((await post(key, { ...body(), folder_name: 'Clients/Acme' })).status, 201);
    assert.equal(await count(store, 'FolderCreated'), 2);
    const other = await post(key, { ...body(), folder_name: 'Elsewhere/New' });
    assert.equal(other.status, 422);
    assert.equal((await post(key, { ...body(), folder_name: 'Clients/Acme' })).headers['idempotent-replayed'], 'true');
    assert.equal(await count(store, 'FolderCreated'), 2, 'no folder made for the refused request');
    assert.equal(await jobs(), 1);
  });

  it('refuses the same key on another route as 422', async () => {
    const key = newKey();
    const first = await post(key);
    const other = await post(key, {}, `/v1/jobs/${first.body.job_id}/deliveries`);
    assert.equal(other.status, 422, other.text);
  });

  it('fires 10 requests with one key at once: exactly one job, the others 409 in flight or replays', async () => {
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(key)));
    const firsts = answers.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
    assert.equal(firsts.length, 1, answers.map((r) => `${r.status} ${r.text}`).join('\n'));
    for (const r of answers) {
      if (r === firsts[0]) continue;
      if (r.status === 409) assert.deepEqual(r.body, { error: 'conflict', message: r.body.message, state: 'in_flight' });
      else {
        assert.equal(r.status, 201);
        assert.equal(r.headers['idempotent-replayed'], 'true');
        assert.equal(r.text, firsts[0].text);
      }
    }
    assert.equal(await jobs(), 1);
  });

  it('lets two API processes over one store race on a key: the key stream decides, never two jobs', async () => {
    const second = await startApi(store, clock);
    try {
      const key = newKey();
      const send = (via: Api) => via.http.post(IMPORT).set('Authorization', `Bearer ${token}`).set('Idempotency-Key', key).send(body());
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => send(i % 2 ? second : api)));
      const created = answers.filter((r) => r.status === 201);
      assert.ok(created.length >= 1);
      assert.equal(new Set(created.map((r) => r.body.job_id)).size, 1, 'every 201 names the same job');
      assert.ok(
        answers.every((r) => r.status === 201 || r.status === 409),
        answers.map((r) => `${r.status} ${r.text}`).join('\n'),
      );
      assert.equal(await jobs(), 1);
    } finally {
      await second.close();
    }
  });

  it('answers 409 conflict with state in_flight while the first request with the key runs', async () => {
    let release!: () => void;
    let parked = false;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held: EventStore = {
      ...store,
      append: store.append.bind(store),
      readStream: store.readStream.bind(store),
      readAll: store.readAll.bind(store),
      subscribeAll: store.subscribeAll.bind(store),
      close: async () => undefined,
      appendInOrder: async (appends) => ((parked = true), await gate, store.appendInOrder(appends)),
    };
    const slow = await startApi(held, clock);
    try {
      const key = newKey();
      const send = () => slow.http.post(IMPORT).set('Authorization', `Bearer ${token}`).set('Idempotency-Key', key).send(body());
      const first = send().then((r) => r);
      await waitFor(() => parked, { what: 'the first request at its append' });
      const second = await send();
      assert.equal(second.status, 409);
      assert.deepEqual(second.body, { error: 'conflict', message: second.body.message, state: 'in_flight' });
      assert.match(second.body.message, /in flight/);
      release();
      assert.equal((await first).status, 201);
      const third = await send();
      assert.equal(third.headers['idempotent-replayed'], 'true');
      assert.equal(third.text, (await first).text);
      assert.equal(await jobs(), 1);
    } finally {
      release();
      await slow.close();
    }
  });

  describe('the express lane and Koa honour it alike', () => {
    it('replays through Koa (a query string) what the lane answered, and through the lane what Koa answered', async () => {
      const key = newKey();
      const viaLane = await post(key);
      const viaKoa = await post(key, body(), `${IMPORT}?via=koa`);
      assert.equal(viaKoa.status, 201);
      assert.equal(viaKoa.headers['idempotent-replayed'], 'true');
      assert.equal(viaKoa.text, viaLane.text);

      const key2 = newKey();
      const koaFirst = await post(key2, body(), `${IMPORT}?via=koa`);
      assert.equal(koaFirst.status, 201);
      assert.equal(koaFirst.headers['idempotent-replayed'], undefined);
      const laneAgain = await post(key2);
      assert.equal(laneAgain.headers['idempotent-replayed'], 'true');
      assert.equal(laneAgain.text, koaFirst.text);
      assert.equal(await jobs(), 2);
    });

    it('honours it on a gzip body (Koa), and compares the decoded body', async () => {
      const key = newKey();
      const gz = () =>
        api.http
          .post(IMPORT)
          .set('Authorization', `Bearer ${token}`)
          .set('Idempotency-Key', key)
          .set('Content-Type', 'application/json')
          .set('Content-Encoding', 'gzip')
          // superagent would otherwise send a Buffer as JSON of its bytes
          .serialize((x: unknown) => x as string)
          .send(gzipSync(Buffer.from(JSON.stringify(body()))));
      const first = await gz();
      assert.equal(first.status, 201, first.text);
      const again = await gz();
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.text, first.text);
      const plain = await post(key);
      assert.equal(plain.headers['idempotent-replayed'], 'true', 'the same JSON sent plainly is the same request');
      const other = await post(key, body('Other'), `${IMPORT}?x=1`);
      assert.equal(other.status, 422);
      assert.equal(await jobs(), 1);
    });
  });

  it('keeps keys per token: the same key from another token of the same drive creates a new job', async () => {
    const key = newKey();
    const first = await post(key);
    const { token: other } = await createToken(admin(), { driveId });
    const second = await post(key, body(), IMPORT, other);
    assert.equal(second.status, 201);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.notEqual(second.body.job_id, first.body.job_id);
    assert.equal((await post(key, body(), IMPORT, other)).text, second.text, 'and replays its own');
    assert.equal(await jobs(), 2);
  });

  it('survives a restart: the store closed and opened again still replays', async () => {
    const key = newKey();
    const first = await post(key);
    await api.close();
    await store.close();
    store = openStore();
    api = await startApi(store, clock);
    const again = await post(key);
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal((await post(key, body('Other'))).status, 422);
    assert.equal(await jobs(), 1);
  });

  it('forgets a key after 24 hours: the request then runs again and its answer is recorded anew', async () => {
    const key = newKey();
    const first = await post(key);
    clock.advance(24 * 3600 * 1000 - 1);
    assert.equal((await post(key)).headers['idempotent-replayed'], 'true', 'replayed until the last millisecond');
    clock.advance(1);
    const later = await post(key);
    assert.equal(later.status, 201);
    assert.equal(later.headers['idempotent-replayed'], undefined);
    assert.notEqual(later.body.job_id, first.body.job_id);
    assert.equal((await post(key)).text, later.text, 'the new answer is the one replayed now');
    assert.equal((await post(key, body('Other'))).status, 422);
    clock.advance(24 * 3600 * 1000);
    assert.equal((await post(key, body('Other'))).status, 201, 'after 24 hours another body may use the key');
    assert.equal(await jobs(), 3);
  });

  it('records only 2xx: after an error the same key runs again', async () => {
    const key = newKey();
    const missing = {
      project_id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } },
    };
    const refused = await post(key, missing);
    assert.equal(refused.status, 404);
    assert.equal((await post(key, missing)).status, 404, 'not replayed: run again');
    const created = await post(key, body());
    assert.equal(created.status, 201, 'the key was not taken by the error');
    assert.equal(created.headers['idempotent-replayed'], undefined);
    assert.equal(await jobs(), 1);
  });

  it('replays the first answer even when the request would be refused now (the drive has no media seconds left)', async () => {
    const balance = { left: null as number | null };
    const api2 = await startApi(store, clock, balance);
    try {
      const send = (key: string, payload = body()) =>
        api2.http.post(IMPORT).set('Authorization', `Bearer ${token}`).set('Idempotency-Key', key).send(payload);
      const key = newKey();
      const first = await send(key);
      assert.equal(first.status, 201);
      balance.left = 0;
      const again = await send(key);
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.text, first.text);
      assert.equal((await send(key, body('Other'))).status, 422, 'another body: the key speaks first');
      assert.equal((await send(newKey())).status, 402, 'a new key runs, and is refused');
      assert.equal(await jobs(), 1);
    } finally {
      await api2.close();
    }
  });

  it('refuses a malformed key with 400 invalid_input naming the header, before anything is created', async () => {
    for (const bad of ['', 'k'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const res = await post(bad);
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, /Idempotency-Key/);
    }
    assert.equal((await post('k'.repeat(255))).status, 201, '255 printable characters are a key');
    assert.equal((await post(' !"#~')).status, 201, 'any printable ASCII');
    assert.equal(await jobs(), 2);
  });

  it('refuses the header sent twice (node would join the two keys into one) with 400, in both lanes', async () => {
    for (const path of [IMPORT, `${IMPORT}?via=koa`]) {
      const res = await api.http
        .post(path)
        .set('Authorization', `Bearer ${token}`)
        .set('Idempotency-Key', ['x', 'y'] as unknown as string); // two header lines.send(body());
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.match(res.body.message, /Idempotency-Key header must be one value/);
    }
    assert.equal((await post('x, y')).status, 201, 'one header holding a comma is one key');
    assert.equal(await jobs(), 1);
  });

  it('applies to POST /v1/edit_in_descript/schema: one link per key', async () => {
    const partner = await createDrive(admin(), { name: 'Partner', partner: true });
    await updateDrive(admin(), partner.drive_id, { host_allow_list: ['media.example.com'] });
    const schema = {
      partner_drive_id: partner.drive_id,
      project_schema: { schema_version: '1.0.0', files: [{ uri: 'https://media.example.com/a.wav' }] },
    };
    const key = newKey();
    const first = await post(key, schema, '/v1/edit_in_descript/schema', partner.token);
    assert.equal(first.status, 201, first.text);
    const again = await post(key, schema, '/v1/edit_in_descript/schema', partner.token);
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal(await count(store, 'ImportLinkIssued'), 1);
    const other = await post(
      key,
      { ...schema, project_schema: { ...schema.project_schema, source_id: 'x' } },
      '/v1/edit_in_descript/schema',
      partner.token,
    );
    assert.equal(other.status, 422);
    assert.equal((await post(newKey(), schema, '/v1/edit_in_descript/schema', partner.token)).status, 201);
    assert.equal(await count(store, 'ImportLinkIssued'), 2);
  });

  it('applies to POST /v1/jobs/{job_id}/deliveries: one redelivery per key', async () => {
    const job = await post(undefined, { ...body(), callback_url: 'https://hooks.example.com/jobs' });
    const jobId = job.body.job_id as string;
    await handleCommand(
      store,
      streams.delivery(jobId),
      deliveryDecider,
      {
        type: 'ScheduleDelivery',
        delivery: {
          delivery_id: 'msg_1',
          job_id: jobId,
          drive_id: driveId,
          project_id: job.body.project_id,
          url: 'https://hooks.example.com/jobs',
        },
        now: clock.now().toISOString(),
      },
      { newId: randomIds.uuidv7, metadata: { partition_key: job.body.project_id } },
    );
    const path = `/v1/jobs/${jobId}/deliveries`;
    const key = newKey();
    const first = await post(key, {}, path);
    assert.equal(first.status, 202, first.text);
    const again = await post(key, {}, path);
    assert.equal(again.status, 202);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal(await count(store, 'DeliveryRequested'), 1);
    assert.equal((await post(newKey(), {}, path)).status, 202);
    assert.equal(await count(store, 'DeliveryRequested'), 2);
  });
});
