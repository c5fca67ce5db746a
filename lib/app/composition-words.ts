import { createHash } from 'node:crypto';
import { compositionTranscript, sequenceWords, type Clip, type Word } from '../domain/edl';
import type { SequenceTrack } from '../domain/import';
import { eachCue, type Cue } from '../domain/transcript/cues';
import type { SpeakerLabels } from '../domain/transcript/document';
import type { BlobStore } from '../ports/blob-store';
import type { ProjectWithFiles } from '../read-models/projects';
import { loadTranscript } from './transcripts';

/** What the words of a clip's media need: its transcript blob, or the tracks of a sequence. */
export type WordSource = { readonly transcript_key: string | null; readonly tracks: readonly SequenceTrack[] | null };

/**
 * The words of a composition in composition time, from its clips' transcripts (a sequence: its
 * tracks', each a speaker). Each transcript blob is read once. The read side passes the project's
 * files from its read model, the write side (edit by text) the project stream's.
 */
export async function wordsOfClips(
  blobs: BlobStore,
  sourceOf: (ref: string) => WordSource | undefined,
  clips: readonly Clip[],
  load: (key: string) => Promise<readonly Word[]> = (key) => loadTranscript(blobs, key),
): Promise<Word[]> {
  const cache = new Map<string, readonly Word[] | undefined>();
  const own = async (ref: string): Promise<readonly Word[] | undefined> => {
    if (!cache.has(ref)) {
      const key = sourceOf(ref)?.transcript_key;
      cache.set(ref, key ? await load(key) : undefined);
    }
    return cache.get(ref);
  };
  const words = new Map<string, readonly Word[]>();
  for (const ref of new Set(clips.map((c) => c.media))) {
    const tracks = sourceOf(ref)?.tracks;
    if (tracks) {
      for (const t of tracks) {
        const w = await own(t.media);
        if (w) words.set(t.media, w);
      }
      words.set(
        ref,
        sequenceWords(tracks, (r) => words.get(r)),
      );
    } else {
      const w = await own(ref);
      if (w) words.set(ref, w);
    }
  }
  return compositionTranscript(clips, (ref) => words.get(ref));
}

/** The words of one of a project document's compositions (the read side: project page, export), its transcripts read by `load`. */
export async function compositionWords(
  blobs: BlobStore,
  project: Pick<ProjectWithFiles, 'media'>,
  clips: readonly Clip[],
  load?: (key: string) => Promise<readonly Word[]>,
): Promise<Word[]> {
  const media = new Map(project.media.map((m) => [m.ref, m]));
  return wordsOfClips(blobs, (ref) => media.get(ref), clips, load);
}

/**
 * `compositionWords` with the derived words kept (up to `maxWords` in all, least recently used
 * out first), by what they are made of: the clips and the word sources of the media they play.
 * An export in a second format, or of an unchanged composition again, derives nothing (an hour
 * with 300 cuts is ~5 ms and a large share of an export's garbage). Callers share the arrays:
 * they must not change them.
 */
export function keptCompositionWords(
  blobs: BlobStore,
  load: (key: string) => Promise<readonly Word[]>,
  maxWords = 200_000,
): (project: Pick<ProjectWithFiles, 'media'>, clips: readonly Clip[]) => Promise<readonly Word[]> {
  const kept = new Map<string, readonly Word[]>();
  let words = 0;
  return async (project, clips) => {
    const media = new Map(project.media.map((m) => [m.ref, m]));
    const sources: Record<string, WordSource | null> = {};
    const note = (ref: string) => {
      if (ref in sources) return;
      const m = media.get(ref);
      sources[ref] = m ? { transcript_key: m.transcript_key, tracks: m.tracks } : null;
      for (const t of m?.tracks ?? []) note(t.media);
    };
    for (const c of clips) note(c.media);
    const key = createHash('sha256')
      .update(JSON.stringify([clips, sources]))
      .digest('base64');
    const hit = kept.get(key);
    if (hit) {
      kept.delete(key);
      kept.set(key, hit);
      return hit;
    }
    const derived = await wordsOfClips(blobs, (ref) => media.get(ref), clips, load);
    if (derived.length > maxWords || kept.has(key)) return derived;
    kept.set(key, derived);
    words += derived.length;
    for (const [oldest, w] of kept) {
      if (words <= maxWords) break;
      kept.delete(oldest);
      words -= w.length;
    }
    return derived;
  };
}

/**
 * The caption cues of kept words (`keptCompositionWords`), per labelling, for as long as the words
 * are kept: an SRT export of an unchanged composition again, at another offset too, makes no cues
 * (an hour's 1,000 cues are most of its time). The first export makes them as it streams; they are
 * kept once it has made them all.
 */
export function keptCues(): (words: readonly Word[], labels: SpeakerLabels) => Iterable<Cue> {
  const kept = new WeakMap<readonly Word[], Map<SpeakerLabels, readonly Cue[]>>();
  function* making(words: readonly Word[], labels: SpeakerLabels): Generator<Cue> {
    const made: Cue[] = [];
    for (const cue of eachCue(words, { labels })) {
      made.push(cue);
      yield cue;
    }
    let byLabels = kept.get(words);
    if (!byLabels) kept.set(words, (byLabels = new Map()));
    byLabels.set(labels, made);
  }
  return (words, labels) => kept.get(words)?.get(labels) ?? making(words, labels);
}
