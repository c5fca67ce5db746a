import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { keptCompositionWords, keptCues } from '../../lib/app/composition-words';
import { eachCue } from '../../lib/domain/transcript/cues';
import { loadTranscript, storeTranscript } from '../../lib/app/transcripts';
import type { Word } from '../../lib/domain/edl';
import type { ProjectWithFiles } from '../../lib/read-models/projects';

/** The export's kept composition words: derived once per clip list and word sources, never stale. */
describe('kept composition words', () => {
  const blobs = createLocalBlobStore({ root: mkdtempSync(join(tmpdir(), 'kept-words-')) });
  const word = (text: string, start: number): Word => ({ text, start, end: start + 0.4, confidence: 1, speaker: null });

  async function project(words: Word[]): Promise<ProjectWithFiles> {
    const stored = await storeTranscript(blobs, words);
    const media = [{ ref: 'talk.wav', transcript_key: stored.key, tracks: null }];
    return { media } as unknown as ProjectWithFiles;
  }

  it('derives once per clip list and transcript; another clip list or transcript derives again', async () => {
    let loads = 0;
    const load = (key: string) => {
      loads++;
      return loadTranscript(blobs, key);
    };
    const wordsOf = keptCompositionWords(blobs, load);
    const p = await project([word('hello', 0), word('cut', 2), word('world', 4)]);
    const clips = [
      { media: 'talk.wav', in: 0, out: 1.5 },
      { media: 'talk.wav', in: 3, out: 6 },
    ];
    const first = await wordsOf(p, clips);
    assert.deepEqual(
      first.map((w) => [w.text, w.start]),
      [
        ['hello', 0],
        ['world', 2.5],
      ],
    );
    assert.equal(await wordsOf(p, [...clips.map((c) => ({ ...c }))]), first, 'the same array for an equal clip list');
    assert.equal(loads, 1);
    const whole = await wordsOf(p, [{ media: 'talk.wav', in: 0, out: 6 }]);
    assert.deepEqual(
      whole.map((w) => w.text),
      ['hello', 'cut', 'world'],
    );
    const retranscribed = await project([word('hi', 0)]);
    assert.deepEqual(
      (await wordsOf(retranscribed, clips)).map((w) => w.text),
      ['hi'],
      'another transcript key is another entry',
    );
  });

  it('keeps the cues of kept words per labelling, once an export has made them all', () => {
    const cuesOf = keptCues();
    const words = Array.from({ length: 40 }, (_, i) => ({ ...word(`w${i}.`, i * 0.5), speaker: i < 20 ? 'Ana' : 'Ben' }));
    const made = [...eachCue(words, { labels: 'changes' })];
    // A first export its client left after one cue keeps nothing: the next one makes them again.
    const partial = cuesOf(words, 'changes')[Symbol.iterator]();
    partial.next();
    partial.return?.();
    assert.ok(!Array.isArray(cuesOf(words, 'changes')));
    assert.deepEqual([...cuesOf(words, 'changes')], made);
    const kept = cuesOf(words, 'changes');
    assert.ok(Array.isArray(kept));
    assert.deepEqual(kept, made);
    assert.equal(cuesOf(words, 'changes'), kept);
    // Another labelling, or other words (an edit derives a new array), are cues of their own.
    assert.deepEqual([...cuesOf(words, 'off')], [...eachCue(words, { labels: 'off' })]);
    assert.notDeepEqual([...cuesOf(words, 'off')], made);
    const edited = words.slice(1);
    assert.deepEqual([...cuesOf(edited, 'changes')], [...eachCue(edited, { labels: 'changes' })]);
  });
});
