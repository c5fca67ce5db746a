import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createFfprobeProber } from '../../lib/adapters/ffmpeg/prober';
import { AppError } from '../../lib/domain/errors';
import { makeTestMedia } from '../fixtures/media';
import { waitFor } from '../fixtures/wait';

describe('MediaProber: ffprobe', () => {
  let dir: string;
  const prober = () => createFfprobeProber({ ffprobePath: resolveFfmpegPaths().ffprobe });

  before(() => (dir = mkdtempSync(join(tmpdir(), 'probe-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a WAV file as audio of about one second', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'wav'));
    assert.equal(result.type, 'audio');
    assert.equal(result.hasAudio, true);
    assert.equal(result.hasVideo, false);
    assert.ok(Math.abs((result.durationSeconds ?? 0) - 1) < 0.1, `duration ${result.durationSeconds}`);
  });

  it('reads an MP3 file as audio', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'mp3', 2));
    assert.equal(result.type, 'audio');
    assert.ok(Math.abs((result.durationSeconds ?? 0) - 2) < 0.2, `duration ${result.durationSeconds}`);
  });

  it('reads an MP4 with audio and video as video with its size', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'mp4'));
    assert.deepEqual(
      { type: result.type, hasAudio: result.hasAudio, hasVideo: result.hasVideo, width: result.width, height: result.height },
      { type: 'video', hasAudio: true, hasVideo: true, width: 160, height: 120 },
    );
    assert.ok(Math.abs((result.durationSeconds ?? 0) - 1) < 0.1);
  });

  it('reads an MP4 without audio as video', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'silent-mp4'));
    assert.equal(result.type, 'video');
    assert.equal(result.hasAudio, false);
  });

  it('reads a PNG as an image without a duration', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'png'));
    assert.equal(result.type, 'image');
    assert.equal(result.durationSeconds, undefined);
    assert.equal(result.width, 160);
  });

  it('rejects a text file with a non-retriable invalid_input error that hides the server path', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'just some words, not media\n');
    await assert.rejects(prober().probe(path), (err: unknown) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.code, 'invalid_input');
      assert.equal(err.retriable, false);
      assert.match(err.message, /^not a media file ffprobe can read: /);
      assert.ok(!err.message.includes(dir), err.message);
      return true;
    });
  });

  describe('a stuck ffprobe', () => {
    // A stand-in that records its pid and hangs, so the test can see the process really die.
    const hangingProbe = () => {
      const pidFile = join(dir, `pid-${Math.random().toString(36).slice(2)}`);
      const script = join(dir, `hang-${Math.random().toString(36).slice(2)}.sh`);
      writeFileSync(script, `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`);
      chmodSync(script, 0o755);
      const pid = () => waitFor(() => Number(readFileSync(pidFile, 'utf8').trim()), { what: 'the pid file' });
      return { script, pid };
    };
    const isGone = (pid: number) => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    };

    it('is killed when the signal aborts, and the probe rejects with an abort error', async () => {
      const { script, pid } = hangingProbe();
      const controller = new AbortController();
      const probing = createFfprobeProber({ ffprobePath: script }).probe(join(dir, 'any.wav'), { signal: controller.signal });
      const childPid = await pid();
      controller.abort();
      await assert.rejects(probing, { name: 'AbortError' });
      await waitFor(() => isGone(childPid), { what: 'the ffprobe process to exit' });
    });

    it('is killed on timeout', async () => {
      const { script, pid } = hangingProbe();
      const probing = createFfprobeProber({ ffprobePath: script, timeoutMs: 300 }).probe(join(dir, 'any.wav'));
      const childPid = await pid();
      await assert.rejects(probing, { code: 'invalid_input', message: /took longer than/ });
      await waitFor(() => isGone(childPid), { what: 'the ffprobe process to exit' });
    });
  });
});
