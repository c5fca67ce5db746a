import { compositionDuration, type Word } from '../../edl';
import { clock, compositionArgument, normalWord, plural, targetOf, ToolInputError, wordsOf, type AgentTool } from './tool';

/** Reading the transcript, and finding a phrase in it. */

/** Where a phrase is said: the first and last word's indexes. Matched word by word, without case and punctuation. */
export function mentionsOf(words: readonly Word[], phrase: string): { first: number; last: number }[] {
  const wanted = phrase.split(/\s+/).map(normalWord).filter(Boolean);
  if (wanted.length === 0) throw new ToolInputError('the phrase has no words');
  const tokens = words.map((w) => normalWord(w.text));
  const found: { first: number; last: number }[] = [];
  for (let i = 0; i + wanted.length <= tokens.length; i++) {
    if (wanted.every((t, k) => tokens[i + k] === t)) found.push({ first: i, last: i + wanted.length - 1 });
  }
  return found;
}

/** At most this many words per read: a long transcript is read in parts, not poured into the model's context. */
const MAX_WORDS = 5000;

export const readTranscript: AgentTool = {
  schema: {
    name: 'read_transcript',
    description:
      'Reads the composition transcript with times in composition seconds: each word as [start, end, text]. ' +
      'Optionally only the words between `from` and `to` seconds.',
    parameters: {
      type: 'object',
      properties: { from: { type: 'number', minimum: 0 }, to: { type: 'number', minimum: 0 }, composition: compositionArgument },
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const from = (args.from as number | undefined) ?? 0;
    const to = (args.to as number | undefined) ?? Infinity;
    const all = wordsOf(model, target).filter((w) => w.end > from && w.start < to);
    const words = all.slice(0, MAX_WORDS);
    const more = all.length > words.length ? `; the first ${MAX_WORDS} are here, read on from ${words[words.length - 1].end} s` : '';
    return {
      changes: [],
      summary: `Read ${plural(all.length, 'word')} of ${target.name} (${clock(compositionDuration(target.clips))})${more}`,
      data: { composition: target.name, duration: compositionDuration(target.clips), words: words.map((w) => [w.start, w.end, w.text]) },
    };
  },
};
