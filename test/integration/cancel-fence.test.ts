import assert from 'node:assert/strict';
import { createReadStream, mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive } from '../../lib/app/admin';
import { streams } from '../../lib/domain/ids';
import { startHarness, type Harness } from '../fixtures/harness';
import { keptLogLines } from '../fixtures/log-lines';
import { makeTestMedia } from '../fixtures/media';
import { waitFor } from '../fixtures/wait';

/**
 * A job read as `cancelled` changes nothing more (found by a tester: an import cancelled while it
 * fetched its second file added that file, its composition and their charge 100–450 ms after the
 * 204). The attempt here looks for a cancel only once a minute, so what stops it is the fence
 * each of its batches starts with (JobContext.fence): an event on the job stream expecting the
 * revision read, which the cancel moved.
 */
describe('a cancelled job changes nothing after the cancel (the attempt fences its writes)', function () {
  this.timeout(60_000);
  let h: Harness;
  let files: { wav: string };
  let gate: Gate;
  const kept = keptLogLines<{ msg?: string; job_id?: string }>();
  const lines = kept.lines;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fence-'));
    files = { wav: await makeTestMedia(dir, 'wav', 3) };
    gate = await startGate(files.wav);
    h = await startHarness({ cancelPollMs: 60_000, logger: kept.logger });
  });
  after(async () => {
    await h?.close();
    await gate?.close();
  });

  it('an import cancelled while it fetches its second file adds neither that file nor the composition, and charges only the first', async () => {
    const drive = await createDrive(h.admin, { name: 'Fenced', mediaSeconds: 100 });
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(drive.token))
      .send({
        project_name: 'Cancelled midway',
        add_media: { 'a.wav': { url: gate.url('open') }, 'b.wav': { url: gate.url('held') } },
        add_compositions: [{ name: 'Both', clips: [{ media: 'a.wav' }, { media: 'b.wav' }] }],
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const { job_id: jobId, project_id: projectId } = res.body;
    await gate.asked; // a.wav is in; b.wav is being fetched
    const del = await h.http.delete(`/v1/jobs/${jobId}`).set(h.auth(drive.token));
    assert.equal(del.status, 204, JSON.stringify(del.body));
    const cancelled = await h.http.get(`/v1/jobs/${jobId}`).set(h.auth(drive.token));
    assert.equal(cancelled.body.job_state, 'cancelled');
    const before = await h.http.get(`/v1/projects/${projectId}`).set(h.auth(drive.token));
    assert.deepEqual(Object.keys(before.body.media_files), ['a.wav']);

    gate.release(); // b.wav arrives, is probed, and the attempt tries to add it
    await gate.served;
    // The attempt's end, whichever way: met the cancel at a fence, or worked on to the end unaware of it.
    const ended = () => lines.some((l) => l.job_id === jobId && (l.msg === 'job cancelled; work stopped' || l.msg === 'job stopped'));
    await waitFor(ended, { what: "the attempt's end" });
    assert.ok(lines.some((l) => l.job_id === jobId && l.msg === 'job cancelled; work stopped'));

    const project = await h.store.readStream(streams.project(projectId));
    assert.deepEqual(
      project.filter((e) => e.type === 'MediaImported').map((e) => e.data.ref),
      ['a.wav'],
    );
    assert.deepEqual(
      project.filter((e) => e.type === 'CompositionAdded').map((e) => e.data.name),
      ['Cancelled midway'],
      'the placeholder only: the composition the request asked for was not made',
    );
    const after = await h.http.get(`/v1/projects/${projectId}`).set(h.auth(drive.token));
    assert.deepEqual(after.body, { ...before.body, updated_at: after.body.updated_at }, 'the project reads as it did at the cancel');
    assert.equal(after.body.updated_at, before.body.updated_at);
    const shown = (await h.balance.show(drive.drive_id)).media_seconds;
    assert.deepEqual([shown.used, shown.reserved], [3, 0], 'charged for a.wav alone, nothing left reserved');
    const charges = (await h.store.readStream(streams.job(jobId))).filter((e) => e.type === 'MediaSecondsCharged');
    assert.deepEqual(
      charges.map((e) => e.data.ref),
      ['a.wav'],
    );
  });
});

type Gate = {
  url: (name: 'open' | 'held') => string;
  /** Resolves once the held file was asked for. */
  asked: Promise<void>;
  /** Lets the held file go. */
  release: () => void;
  /** Resolves once the held file was sent whole. */
  served: Promise<void>;
  close: () => Promise<void>;
};

/** `/open` serves the WAV at once; `/held` answers only once released. */
async function startGate(file: string): Promise<Gate> {
  let asked!: () => void;
  let release!: () => void;
  let served!: () => void;
  const askedP = new Promise<void>((r) => (asked = r));
  const released = new Promise<void>((r) => (release = r));
  const servedP = new Promise<void>((r) => (served = r));
  const send = (res: ServerResponse, done?: () => void) => {
    res.writeHead(200, { 'content-type': 'audio/wav' });
    createReadStream(file)
      .on('end', () => done?.())
      .pipe(res);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/open') return send(res);
    if (req.url === '/held') {
      asked();
      return void released.then(() => send(res, served));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (name) => `${base}/${name}`,
    asked: askedP,
    release,
    served: servedP,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
