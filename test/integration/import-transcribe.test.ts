import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { loadState } from '../../lib/app/command-handler';
import { projectDecider } from '../../lib/domain/project';
import { loadTranscript } from '../../lib/app/transcripts';
import { compositionDecider } from '../../lib/domain/composition';
import { compositionTranscript, sequenceWords, type Word } from '../../lib/domain/edl';
import { streams } from '../../lib/domain/ids';
import { fakeOpenAiTranscriber, startFakeOpenAiServer } from '../fixtures/fake-openai-server';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { makeMediaSamples, type SampleKind } from '../fixtures/media-files';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';

/**
 * Import through transcription and compositions (issue: import, rules 2–8): a fake
 * OpenAI-compatible server on loopback exercises the real HTTP client.
 */
describe('import: media, transcripts and compositions (HTTP, embedded adapters)', function () {
  this.timeout(90_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let openai: Awaited<ReturnType<typeof startFakeOpenAiServer>>;
  let samples: Map<SampleKind, string>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transcribe-'));
    samples = await makeMediaSamples(dir);
    const hour = join(dir, 'hour.wav');
    // An hour of 8 kHz 8-bit silence: 29 MB that ffmpeg writes without encoding anything.
    const args = ['-loglevel', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-t', '3600', '-c:a', 'pcm_u8', hour];
    const [voice, clip] = await Promise.all([
      makeTestMedia(dir, 'wav', 4),
      makeTestMedia(dir, 'mp4', 3),
      promisify(execFile)(resolveFfmpegPaths().ffmpeg, args),
    ]);
    const files: Record<string, string> = { 'voice.wav': voice, 'clip.mp4': clip, 'hour.wav': hour };
    for (const [kind, path] of samples) files[`sample-${kind}`] = path;
    media = await startMediaServer(files);
    openai = await startFakeOpenAiServer();
    const transcriber = fakeOpenAiTranscriber(openai.url);
    h = await startHarness({ transcriber });
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await openai?.close();
  });
  beforeEach(() => openai.script(['ok']));

  const accept = async (body: Record<string, unknown>) => {
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as { job_id: string; project_id: string; project_url: string };
  };
  const project = async (projectId: string) => {
    const { state } = await loadState(h.store, streams.project(projectId), projectDecider);
    assert.ok(state.exists);
    return state;
  };
  const composition = async (id: string) => {
    const { state } = await loadState(h.store, streams.composition(id), compositionDecider);
    assert.ok(state.exists);
    return state;
  };
  const wordsOf = async (projectId: string) => {
    const state = await project(projectId);
    const words = new Map<string, Word[]>();
    for (const [ref, file] of state.media) {
      if (file.transcript) words.set(ref, await loadTranscript(h.processorDeps.blobs, file.transcript.transcript_key));
    }
    return { state, words };
  };

  it('transcribes each file with speech into a word-timed transcript blob, passing the language on', async () => {
    const accepted = await accept({
      project_name: 'Talk',
      add_media: {
        'voice.wav': { url: media.url('file', 'voice.wav'), language: 'de' },
        'clip.mp4': { url: media.url('file', 'clip.mp4') },
      },
      add_compositions: [{ name: 'Main', clips: [{ media: 'voice.wav' }, { media: 'clip.mp4' }] }],
    });
    const job = await h.waitForJob(accepted.job_id);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));

    const languages = openai.received.map((r) => r.fields.get('language')?.[0] ?? null).sort();
    assert.deepEqual(languages, ['de', null], 'the item language is passed on; without it the server detects');
    assert.ok(openai.received.every((r) => r.fields.get('response_format')?.[0] === 'verbose_json'));
    assert.ok(openai.received.every((r) => r.authorization === 'Bearer sk-test'));

    const { state, words } = await wordsOf(accepted.project_id);
    assert.equal(state.media.get('voice.wav')!.transcript!.language, 'de');
    assert.equal(state.media.get('clip.mp4')!.transcript!.language, 'en', 'the detected language, as an ISO 639-1 code');
    // The fake server says one word per whole second of audio.
    assert.deepEqual(
      words.get('voice.wav')!.map((w) => [w.text, w.start]),
      [0, 1, 2, 3].map((i) => [`w${i}`, i]),
    );
    const events = await h.store.readStream(streams.project(accepted.project_id));
    const transcribed = events.filter((e) => e.type === 'MediaTranscribed');
    assert.equal(transcribed.length, 2);
    assert.match(String(transcribed[0].data.transcript_key), /^transcripts\/[0-9a-f]{64}\.json$/);
  });

  it('starts every new project with an empty placeholder composition, makes the requested ones as streams, and names the first in project_url', async () => {
    const accepted = await accept({
      project_name: 'Edit list',
      add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') }, 'clip.mp4': { url: media.url('file', 'clip.mp4') } },
      add_compositions: [
        { name: 'Audio only', clips: [{ media: 'voice.wav' }] },
        { name: 'Square', width: 1080, height: 1080, clips: [{ media: 'voice.wav' }, { media: 'clip.mp4' }] },
      ],
    });
    const job = await h.waitForJob(accepted.job_id);
    const result = job.result as Record<string, any>;
    assert.deepEqual(
      result.created_compositions.map((c: { name: string }) => c.name),
      ['Audio only', 'Square'],
    );
    const state = await project(accepted.project_id);
    assert.deepEqual(
      state.compositions.map((c) => c.name),
      ['Edit list', 'Audio only', 'Square'],
      'the placeholder comes first and carries the project name',
    );
    const placeholder = await composition(state.compositions[0].composition_id);
    assert.deepEqual(placeholder.clips, []);
    assert.deepEqual([placeholder.width, placeholder.height], [1920, 1080]);

    const first = state.compositions[1];
    assert.equal(job.project_url, `${WEB_URL}/${accepted.project_id}/${first.short_id}`);
    const square = await composition(state.compositions[2].composition_id);
    assert.deepEqual([square.width, square.height], [1080, 1080]);
    assert.deepEqual(
      square.clips.map((c) => c.media),
      ['voice.wav', 'clip.mp4'],
    );
    assert.ok(Math.abs(square.clips[0].out - 4) < 0.1 && square.clips[0].in === 0);

    // The composition's transcript is derived: its clips' words, shifted to composition time.
    const { words } = await wordsOf(accepted.project_id);
    const derived = compositionTranscript(square.clips, (m) => words.get(m));
    const firstOfClip = derived.find((w) => w.start >= square.clips[0].out);
    assert.ok(firstOfClip && Math.abs(firstOfClip.start - square.clips[0].out) < 0.01, JSON.stringify(derived));
  });

  it('adds compositions from media already in the project, and refuses an unknown name with 400', async () => {
    const first = await accept({ project_name: 'Grow', add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } });
    await h.waitForJob(first.job_id);
    const unknown = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_id: first.project_id, add_compositions: [{ name: 'X', clips: [{ media: 'nope.wav' }] }] });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.message, /add_compositions\[0\]\.clips\[0\]\.media/);

    const second = await accept({ project_id: first.project_id, add_compositions: [{ name: 'Reuse', clips: [{ media: 'voice.wav' }] }] });
    const job = await h.waitForJob(second.job_id);
    assert.equal((job.result as any).created_compositions[0].name, 'Reuse', JSON.stringify(job.result));
    const state = await project(first.project_id);
    assert.deepEqual(
      state.compositions.map((c) => c.name),
      ['Grow', 'Reuse'],
      'an import into an existing project makes no second placeholder',
    );
  });

  it('imports the supported formats, images without duration, and fails anything else with a clear message', async () => {
    const kinds: SampleKind[] = ['flac', 'aac-adts', 'mp3', 'mov-hevc', 'png', 'jpeg', 'ogg-opus', 'gif', 'mkv-h264'];
    const present = kinds.filter((k) => samples.has(k));
    const accepted = await accept({
      project_name: 'Formats',
      add_media: Object.fromEntries(present.map((k) => [k, { url: media.url('file', `sample-${k}`) }])),
    });
    const job = await h.waitForJob(accepted.job_id);
    const status = (job.result as any).media_status as Record<
      string,
      { status: string; error_message?: string; duration_seconds?: number }
    >;
    for (const k of present) {
      const refused = ['ogg-opus', 'gif', 'mkv-h264'].includes(k);
      assert.equal(status[k].status, refused ? 'failed' : 'success', `${k}: ${JSON.stringify(status[k])}`);
      if (refused) assert.match(status[k].error_message!, /^unsupported media: .*; supported are WAV, FLAC, AAC, MP3/);
    }
    const state = await project(accepted.project_id);
    assert.equal(state.media.get('png')!.media_type, 'image');
    assert.equal(state.media.get('png')!.duration_seconds, null);
    assert.equal(state.media.get('png')!.transcript, undefined, 'an image is not transcribed');
    assert.equal(state.media.get('mov-hevc')!.media_type, 'video');
  });

  it('fails a file whose transcription fails, not the job', async () => {
    openai.script(['401']);
    const accepted = await accept({
      project_name: 'Refused',
      add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') }, still: { url: media.url('file', 'sample-png') } },
    });
    const job = await h.waitForJob(accepted.job_id);
    const result = job.result as Record<string, any>;
    assert.equal(result.status, 'partial', JSON.stringify(result));
    assert.equal(result.media_status['voice.wav'].status, 'failed');
    assert.match(result.media_status['voice.wav'].error_message, /401/);
    assert.equal(result.media_status.still.status, 'success');
    assert.equal(result.media_seconds_used, 0, 'a failed file is not charged');
  });

  it('gives each track of a multitrack sequence its transcript, each track a speaker', async () => {
    const accepted = await accept({
      project_name: 'Two mics',
      add_media: {
        'host.wav': { url: media.url('file', 'voice.wav') },
        'guest.mp4': { url: media.url('file', 'clip.mp4') },
        pod: { tracks: [{ media: 'host.wav' }, { media: 'guest.mp4', offset: 0.5 }] },
      },
      add_compositions: [{ name: 'Pod', clips: [{ media: 'pod' }] }],
    });
    const job = await h.waitForJob(accepted.job_id);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
    const { state, words } = await wordsOf(accepted.project_id);
    const pod = state.media.get('pod')!;
    const merged = sequenceWords(pod.tracks!, (m) => words.get(m));
    assert.deepEqual(new Set(merged.map((w) => w.speaker)), new Set(['host.wav', 'guest.mp4']));
    assert.ok(
      merged.some((w) => w.speaker === 'guest.mp4' && Math.abs(w.start - 0.5) < 0.01),
      'a track is shifted by its offset',
    );
  });

  it('moves progress through download, probe, transcribe and compose, once the import outlasts the grace', async () => {
    // Trickled (1.6 s): progress in an attempt's first 250 ms is held, and an import done within
    // them writes none (the job runner's unit tests cover the grace itself).
    const accepted = await accept({ project_name: 'Progress', add_media: { 'voice.wav': { url: media.url('slow', 'voice.wav') } } });
    await h.waitForJob(accepted.job_id);
    const progressed = (await h.store.readStream(streams.job(accepted.job_id))).filter((e) => e.type === 'JobProgressed');
    const labels = progressed.map((e) => String(e.data.label));
    for (const label of ['downloading voice.wav', 'probing voice.wav', 'transcribing voice.wav', 'composing']) {
      assert.ok(labels.includes(label), `${label} in ${JSON.stringify(labels)}`);
    }
    const percents = progressed.map((e) => Number(e.data.percent));
    assert.deepEqual(
      percents,
      [...percents].sort((a, b) => a - b),
      'percent only grows',
    );
  });

  it('stops a running import within a second on DELETE, closing its transcription request', async () => {
    openai.script(['slow']);
    const accepted = await accept({ project_name: 'Cancel', add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } });
    await waitFor(async () => openai.received.length > 0 || null, { timeoutMs: 10_000, what: 'the transcription request' });
    const asked = Date.now();
    assert.equal((await h.http.delete(`/v1/jobs/${accepted.job_id}`).set(h.auth())).status, 204);
    await waitFor(async () => ((await openai.connections()) === 0 ? true : null), { timeoutMs: 3000, what: 'the request closed' });
    assert.ok(Date.now() - asked < 1500, `closed after ${Date.now() - asked} ms`);
    await waitFor(async () => (h.processors!.pools['import/project_media'].stats().running === 0 ? true : null), {
      timeoutMs: 3000,
      what: 'the attempt ended',
    });
    const job = await h.waitForJob(accepted.job_id);
    assert.equal(job.job_state, 'cancelled');
    const state = await project(accepted.project_id);
    assert.equal(state.media.size, 0, 'a cancelled file leaves nothing half-added');
  });

  it('keeps events small: a one-hour transcript lives in a blob and no event passes 64 KB', async () => {
    const accepted = await accept({ project_name: 'Hour', add_media: { 'hour.wav': { url: media.url('file', 'hour.wav') } } });
    const job = await h.waitForJob(accepted.job_id, undefined, 80_000);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
    assert.ok(openai.received.length >= 6, `transcribed in chunks (${openai.received.length} requests)`);
    const { words } = await wordsOf(accepted.project_id);
    assert.ok(words.get('hour.wav')!.length >= 3590, `${words.get('hour.wav')!.length} words`);
    for (const stream of [streams.project(accepted.project_id), streams.job(accepted.job_id)]) {
      for (const e of await h.store.readStream(stream)) {
        const size = Buffer.byteLength(JSON.stringify(e));
        assert.ok(size < 64 * 1024, `${e.type} is ${size} bytes`);
      }
    }
  });
});
