import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, startService } from '../fixtures/service-process';
import { readCmx3600, readOtio } from '../fixtures/timeline-readers';
import { waitFor } from '../fixtures/wait';

/**
 * Timeline export (issue 22 item 6) in the real process as `npm start` runs it: a real MP4
 * imported over HTTP (ffmpeg probes it, the blob store keeps it), then its composition exported as
 * an EDL, and as a bundle whose media is the imported file byte for byte.
 */
describe('e2e: timeline export', function () {
  this.timeout(120_000);
  let dir: string;
  let mp4: string;
  let wav: string;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'e2e-timeline-'));
    mp4 = await makeTestMedia(dir, 'mp4', 4);
    wav = await makeTestMedia(dir, 'wav', 3);
    media = await startMediaServer({ 'clip.mp4': mp4, 'mic.wav': wav });
    await buildOnce();
  });
  after(async () => media?.close());

  /** The import's answer, then its job once stopped with success. */
  async function importAndWait(client: ReturnType<typeof apiClient>, res: Response) {
    assert.equal(res.status, 201);
    const { job_id, project_id } = (await res.json()) as { job_id: string; project_id: string };
    const job = await waitFor(
      async () => {
        const j = (await (await client.get(`/jobs/${job_id}`)).json()) as Record<string, any>;
        return j.job_state === 'stopped' ? j : null;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'the import to stop' },
    );
    assert.equal(job.result.status, 'success', JSON.stringify(job.result));
    return { project_id, job };
  }

  it('exports an imported video as an EDL and as a ZIP with the video in it', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Timeline drive');
      const client = apiClient(svc, drive.token);
      const res = await client.post('/jobs/import/project_media', {
        project_name: 'Cuts',
        add_media: { 'Studio/clip.mp4': { url: media.url('file', 'clip.mp4') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'Studio/clip.mp4' }] }],
      });
      const { project_id, job } = await importAndWait(client, res);

      const edl = await client.post('/export/timeline', { project_id, format: 'edl' });
      assert.equal(edl.status, 200, await edl.clone().text());
      assert.equal(edl.headers.get('x-composition-id'), job.result.created_compositions[0].id);
      const read = readCmx3600(await edl.text(), 25);
      assert.deepEqual(read.clips, [{ lane: 0, file: 'Studio_clip.mp4', sourceIn: 0, sourceOut: 100, recordIn: 0, recordOut: 100 }]);
      assert.deepEqual(read.events[0].channels, 'AA/V');

      const zip = await client.post('/export/timeline?with_media=true', { project_id, format: 'fcpxml' });
      assert.equal(zip.status, 200, await zip.clone().text());
      assert.equal(zip.headers.get('content-type'), 'application/zip');
      const path = join(dir, 'bundle.zip');
      writeFileSync(path, Buffer.from(await zip.arrayBuffer()));
      const unzip = spawnSync('unzip', ['-t', path], { encoding: 'utf8' });
      if (unzip.error) return console.warn('      unzip is not installed: the bundle is not read back');
      assert.equal(unzip.status, 0, unzip.stdout);
      const out = join(dir, 'out');
      assert.equal(spawnSync('unzip', ['-q', path, '-d', out]).status, 0);
      assert.ok(readFileSync(join(out, 'Studio_clip.mp4')).equals(readFileSync(mp4)), 'the imported file, byte for byte');
      assert.match(readFileSync(join(out, 'Main.fcpxml'), 'utf8'), /<media-rep kind="original-media" src="Studio_clip\.mp4"\/>/);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  });

  it('exports an imported multitrack sequence with each track on its lane, at the camera’s probed rate, and bundles both files', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Sequence drive');
      const client = apiClient(svc, drive.token);
      const res = await client.post('/jobs/import/project_media', {
        project_name: 'Interview',
        add_media: {
          'cam.mp4': { url: media.url('file', 'clip.mp4') },
          'mic.wav': { url: media.url('file', 'mic.wav') },
          both: { tracks: [{ media: 'cam.mp4' }, { media: 'mic.wav', offset: 0.5 }] },
        },
        add_compositions: [{ name: 'Main', clips: [{ media: 'both' }] }],
      });
      const { project_id } = await importAndWait(client, res);

      const otio = await client.post('/export/timeline', { project_id, format: 'otio' });
      assert.equal(otio.status, 200, await otio.clone().text());
      const text = await otio.text();
      // testsrc at 10 fps: the timeline takes the camera's probed rate; the microphone has none and takes it too.
      assert.equal(JSON.parse(text).global_start_time.rate, 10);
      assert.deepEqual(readOtio(text, 'Audio').clips, [
        { lane: 0, file: 'cam.mp4', sourceIn: 0, sourceOut: 40, recordIn: 0, recordOut: 40 },
        { lane: 1, file: 'mic.wav', sourceIn: 0, sourceOut: 30, recordIn: 5, recordOut: 35 },
      ]);
      assert.deepEqual(
        readOtio(text, 'Video').clips.map((c) => [c.lane, c.file]),
        [[0, 'cam.mp4']],
      );
      const edl = await client.post('/export/timeline', { project_id, format: 'edl' });
      assert.equal(edl.status, 200, await edl.clone().text());
      assert.deepEqual(
        readCmx3600(await edl.text(), 10).events.map((e) => [e.file, e.channels]),
        [
          ['cam.mp4', 'A/V'],
          ['mic.wav', 'A2'],
        ],
      );

      const zip = await client.post('/export/timeline?with_media=true', { project_id, format: 'fcpxml' });
      assert.equal(zip.status, 200, await zip.clone().text());
      const path = join(dir, 'sequence.zip');
      writeFileSync(path, Buffer.from(await zip.arrayBuffer()));
      const out = join(dir, 'sequence');
      const unzip = spawnSync('unzip', ['-q', path, '-d', out]);
      if (unzip.error) return console.warn('      unzip is not installed: the bundle is not read back');
      assert.equal(unzip.status, 0);
      assert.ok(readFileSync(join(out, 'cam.mp4')).equals(readFileSync(mp4)), 'the camera, byte for byte');
      assert.ok(readFileSync(join(out, 'mic.wav')).equals(readFileSync(wav)), 'the microphone, byte for byte');
      assert.match(readFileSync(join(out, 'Main.fcpxml'), 'utf8'), /<asset-clip ref="r\d+" lane="-1" offset="5\/10s" name="mic\.wav"/);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  });
});
