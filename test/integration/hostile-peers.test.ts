import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHarness, type Harness } from '../fixtures/harness';
import { startHostileMediaServer, type HostilePath } from '../fixtures/hostile-media-server';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { failOnUncaughtException, waitFor } from '../fixtures/wait';

/**
 * Media servers that break HTTP must fail their own file and nothing else: no crash, no stuck
 * job, and the API keeps answering while they misbehave.
 */
describe('Import from misbehaving media servers (HTTP, embedded adapters)', function () {
  this.timeout(30_000);
  const DOWNLOAD_TIMEOUT_MS = 1500;
  let dir: string;
  let h: Harness;
  let good: Awaited<ReturnType<typeof startMediaServer>>;
  let hostile: Awaited<ReturnType<typeof startHostileMediaServer>>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hostile-'));
    const wav = await makeTestMedia(dir, 'wav', 8); // 256 KB: past the 64 KiB that undici 7 crashed on
    good = await startMediaServer({ 'tone.wav': wav });
    hostile = await startHostileMediaServer({ 'tone.wav': wav });
    h = await startHarness({ downloadTimeoutMs: DOWNLOAD_TIMEOUT_MS });
  });
  after(async () => {
    await h?.close();
    await hostile?.close();
    await good?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  failOnUncaughtException();

  /** Runs an import while polling GET /v1/status every 100 ms; returns the stopped job and every status code seen. */
  async function importWhilePolling(addMedia: Record<string, { url: string }>) {
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send({ project_name: 'Hostile', add_media: addMedia });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const statuses: number[] = [];
    let running = true;
    const polling = (async () => {
      while (running) {
        statuses.push((await h.http.get('/v1/status').set(h.auth())).status);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      return { job: await h.waitForJob(res.body.job_id, undefined, 25_000), statuses };
    } finally {
      running = false;
      await polling;
    }
  }

  it('fails each broken download on its own, imports the rest, and keeps answering', async () => {
    const expected: [HostilePath, RegExp | 'success'][] = [
      ['close-after-body', 'success'],
      ['close-no-length', 'success'],
      ['short-length', /closed the connection after 400 of 1000 bytes/],
      ['long-length', /sent more bytes than the 100 its Content-Length declared/],
      ['reset', /reset the connection/],
      ['forever', /took longer than 1\.5 s/],
      ['trickle', /took longer than 1\.5 s/],
      ['no-headers', /took longer than 1\.5 s/],
      ['redirect-loop', /redirected more than 5 times/],
      ['garbage', /did not answer with valid HTTP/],
    ];
    const addMedia = Object.fromEntries([
      ['good.wav', { url: good.url('file', 'tone.wav') }],
      ...expected.map(([path]) => [`${path}.wav`, { url: hostile.url(path, 'tone.wav') }]),
    ]);

    const { job, statuses } = await importWhilePolling(addMedia);

    const result = job.result as Record<string, any>;
    assert.equal(job.job_state, 'stopped');
    assert.equal(result.status, 'partial', JSON.stringify(result));
    assert.equal(result.media_status['good.wav'].status, 'success');
    for (const [path, outcome] of expected) {
      const file = result.media_status[`${path}.wav`];
      if (outcome === 'success') {
        assert.equal(file.status, 'success', `${path}: ${JSON.stringify(file)}`);
        assert.ok(Math.abs(file.duration_seconds - 8) < 0.1, `${path} imported whole: ${file.duration_seconds} s`);
        continue;
      }
      assert.equal(file.status, 'failed', path);
      assert.match(file.error_message, outcome, path);
      assert.match(file.error_message, /127\.0\.0\.1|download/, `${path} names the host or the download`);
      assert.ok(!file.error_message.includes(h.dir) && !file.error_message.includes(dir), `${path} leaks a local path`);
    }
    assert.ok(statuses.length >= 20, `polled ${statuses.length} times`);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      'GET /v1/status answered 200 throughout',
    );
    await waitFor(() => hostile.openSockets() === 0, { what: 'every connection to be closed' });
  });

  it('stops a download that exceeds the time limit and says so', async () => {
    const started = Date.now();
    const { job, statuses } = await importWhilePolling({ 'slow.wav': { url: hostile.url('trickle') } });
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'error', JSON.stringify(result));
    assert.equal(result.media_status['slow.wav'].status, 'failed');
    assert.match(result.media_status['slow.wav'].error_message, /^the download took longer than 1\.5 s and was stopped$/);
    assert.ok(Date.now() - started < 6000, `stopped after ${Date.now() - started} ms`);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
    );
  });
});
