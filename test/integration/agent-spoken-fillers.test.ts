import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { wavDataSeconds } from '../../lib/adapters/ffmpeg/audio';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import type { ProjectModel } from '../../lib/domain/agent/edits';
import { createToolbox } from '../../lib/app/agent-toolbox';
import { compositionDuration, compositionTranscript, ms, type Clip, type Word } from '../../lib/domain/edl';
import { clip, composition, context, MAIN_ID } from '../fixtures/agent-model';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpegPaths();
const quietly = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
const SPEECH = ['-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le'];

/** Said one word at a time, fillers included, so each word's time in the whole is known from the files. */
const SAID = 'So um welcome to the show . Uh today you know we talk about I mean pricing'.split(' ');
const GAP_SECONDS = 0.12;
const SENTENCE_GAP_SECONDS = 0.6;

/**
 * A spoken fixture with "um" and "uh" (issue 20): espeak-ng speaks each word into its own file,
 * and ffmpeg joins them with short silences. pocketsphinx does not recognise espeak-ng's fillers
 * (it hears most of this sentence as "ah"), so the transcript's words take their times from the
 * real files: each word spans its own file's samples in the joined fixture.
 */
async function makeSpokenFixture(dir: string): Promise<{ path: string; words: Word[]; duration: number }> {
  const parts: string[] = [];
  const words: Word[] = [];
  let at = 0;
  const silence = async (seconds: number) => {
    const path = join(dir, `gap-${parts.length}.wav`);
    await run(ffmpeg, [...quietly, '-f', 'lavfi', '-i', `aevalsrc=0:s=16000:d=${seconds}`, ...SPEECH, path]);
    parts.push(path);
    at += await wavDataSeconds(path);
  };
  for (const [i, text] of SAID.entries()) {
    if (text === '.') {
      await silence(SENTENCE_GAP_SECONDS);
      continue;
    }
    const spoken = join(dir, `word-${i}.raw.wav`);
    const path = join(dir, `word-${i}.wav`);
    await run('espeak-ng', ['-w', spoken, text], { timeout: 30_000 });
    await run(ffmpeg, [...quietly, '-i', spoken, ...SPEECH, path]);
    const seconds = await wavDataSeconds(path);
    parts.push(path);
    words.push({ text, start: ms(at), end: ms(at + seconds), confidence: 1, speaker: null });
    at += seconds;
    if (i < SAID.length - 1) await silence(GAP_SECONDS);
  }
  const list = join(dir, 'parts.txt');
  writeFileSync(list, parts.map((p) => `file '${p}'\n`).join(''));
  const path = join(dir, 'spoken.wav');
  await run(ffmpeg, [...quietly, '-f', 'concat', '-safe', '0', '-i', list, '-c', 'copy', path]);
  return { path, words, duration: await wavDataSeconds(path) };
}

/** Publish's way in small: the clips' media ranges, end to end, rendered from the file. */
async function render(source: string, clips: readonly Clip[], out: string): Promise<number> {
  const trims = clips.map((c, i) => `[0:a]atrim=start=${c.in}:end=${c.out},asetpts=PTS-STARTPTS[a${i}]`);
  const joined = `${clips.map((_, i) => `[a${i}]`).join('')}concat=n=${clips.length}:v=0:a=1[out]`;
  await run(ffmpeg, [...quietly, '-i', source, '-filter_complex', [...trims, joined].join(';'), '-map', '[out]', ...SPEECH, out]);
  return wavDataSeconds(out);
}

describe('remove filler words on a spoken fixture (espeak-ng speech, real ffmpeg)', function () {
  this.timeout(120_000);
  let dir: string;
  let fixture: Awaited<ReturnType<typeof makeSpokenFixture>>;

  before(async function () {
    const espeak = await run('espeak-ng', ['--version']).then(
      () => true,
      () => false,
    );
    if (!espeak) {
      console.log('      skipped: espeak-ng not installed');
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'spoken-'));
    fixture = await makeSpokenFixture(dir);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("cuts exactly the fillers' time: the composition and its render are shorter by the sum of their spans", async () => {
    const { words, duration, path } = fixture;
    const model: ProjectModel = {
      project_id: 'p',
      media: [{ ref: 'spoken.wav', duration, has_video: false, words }],
      compositions: [composition({ clips: [clip('spoken.wav', 0, duration)] })],
    };
    const result = createToolbox().run(model, { name: 'remove_words', arguments: { fillers: true } }, context());
    assert.ok(result.ok, JSON.stringify(result));

    const fillers = words.filter((w) => ['um', 'uh', 'you', 'know', 'i', 'mean'].includes(w.text.toLowerCase()));
    assert.equal(fillers.length, 6, 'um, uh, "you know" and "I mean"');
    const fillerSeconds = fillers.reduce((sum, w) => sum + (w.end - w.start), 0);
    const edited = result.model.compositions.find((c) => c.composition_id === MAIN_ID)!;
    assert.equal(compositionDuration(edited.clips), ms(duration - fillerSeconds));
    assert.match(
      result.outcome.summary,
      new RegExp(`^Removed 4 filler words \\(${(Math.round(fillerSeconds * 10) / 10).toFixed(1)} s\\) from Main`),
    );

    const left = compositionTranscript(edited.clips, () => words).map((w) => w.text);
    assert.deepEqual(left, ['So', 'welcome', 'to', 'the', 'show', 'today', 'we', 'talk', 'about', 'pricing']);

    // Rendered, the cut audio is shorter by the same time, to a sample per clip edge.
    const rendered = await render(path, edited.clips, join(dir, 'edited.wav'));
    assert.ok(Math.abs(rendered - (duration - fillerSeconds)) <= (edited.clips.length * 2) / 16_000 + 0.001, `${rendered} s rendered`);
  });
});
