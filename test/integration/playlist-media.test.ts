import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NOT_MEDIA } from '../../lib/adapters/ffmpeg/prober';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';

/**
 * A hostile media server answers with playlists (HLS, ffconcat) that name files on the service's
 * own disk. Whether such a file exists, and what it holds, must not show in the job: every
 * playlist gets the same refusal, with nothing of ffprobe's stderr in it.
 */
describe('Import of playlists that name local files (HTTP, embedded adapters, real ffprobe)', function () {
  this.timeout(30_000);
  let dir: string;
  let h: Harness;
  let server: Server;
  let base: string;
  let localWav: string;
  let missingWav: string;

  const hls = (target: string) => `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:1,\n${target}\n#EXT-X-ENDLIST\n`;
  const ffconcat = (target: string) => `ffconcat version 1.0\nfile '${target}'\n`;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'playlist-'));
    localWav = await makeTestMedia(dir, 'wav', 3);
    missingWav = join(dir, 'not-there.wav');
    const bodies = new Map<string, Buffer>([
      ['/existing.m3u8', Buffer.from(hls(localWav))],
      ['/missing.m3u8', Buffer.from(hls(missingWav))],
      ['/existing-file-url.m3u8', Buffer.from(hls(`file:${localWav}`))],
      ['/existing.ffconcat', Buffer.from(ffconcat(localWav))],
      ['/missing.ffconcat', Buffer.from(ffconcat(missingWav))],
      // A real WAV behind a playlist's extension: the bytes decide what a file is, not its URL.
      ['/really-a-wav.m3u8', readFileSync(localWav)],
      ['/tone.wav', readFileSync(localWav)],
    ]);
    server = createServer((req, res) => {
      const body = bodies.get(req.url ?? '');
      if (!body) return void res.writeHead(404).end();
      const type = req.url!.endsWith('.wav') ? 'audio/wav' : 'application/vnd.apple.mpegurl';
      res.writeHead(200, { 'content-type': type, 'content-length': body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function importUrls(names: string[]) {
    const addMedia = Object.fromEntries(names.map((name) => [name.slice(1), { url: `${base}${name}` }]));
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send({ project_name: 'Playlists', add_media: addMedia });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id);
    return job.result as {
      status: string;
      media_status: Record<string, { status: string; error_message?: string; duration_seconds?: number }>;
    };
  }

  it('refuses a playlist the same way whether the file it names exists or not, leaking nothing', async () => {
    const playlists = ['/existing.m3u8', '/missing.m3u8', '/existing-file-url.m3u8', '/existing.ffconcat', '/missing.ffconcat'];
    const result = await importUrls(playlists);
    const outcomes = playlists.map((p) => result.media_status[p.slice(1)]);
    for (const [i, outcome] of outcomes.entries()) {
      assert.deepEqual(outcome, { status: 'failed', error_message: NOT_MEDIA }, playlists[i]);
    }
    // The media names are the user's own; what the service says is the rest.
    const shown = JSON.stringify({ ...result, media_status: outcomes });
    for (const leak of [dir, 'not-there', 'pcm_s16le', 'PCM', 'hls', 'concat', '0x', 'whitelist', 'Invalid data']) {
      assert.ok(!shown.includes(leak), `the job result shows "${leak}": ${shown}`);
    }
  });

  it('imports a real WAV served under a playlist extension, and stores no blob under a URL extension', async () => {
    const result = await importUrls(['/really-a-wav.m3u8', '/tone.wav']);
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.ok(Math.abs((result.media_status['really-a-wav.m3u8'].duration_seconds ?? 0) - 3) < 0.1);
    const blobs = (readdirSync(join(h.dir, 'blobs'), { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
      .filter((e) => e.isFile())
      .map((e) => e.name);
    assert.ok(blobs.length >= 2, `blobs: ${blobs.join(', ')}`);
    assert.deepEqual(
      blobs.filter((name) => name.includes('.')),
      [],
      'no blob name carries an extension',
    );
  });
});
