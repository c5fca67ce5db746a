import type { Word } from '../../edl';
import type { TimeRange } from '../edits';
import { mergeRanges, totalSeconds } from '../timeline';
import {
  compositionArgument,
  normalWord,
  nowLastsAfterCut,
  plural,
  secondsText,
  targetOf,
  ToolInputError,
  wordsOf,
  type AgentTool,
} from './tool';

/**
 * Removing words from the transcript: each removed word's own span [start, end) is cut, nothing
 * around it, so the time removed is exactly the words' length and the pause before and after
 * the word stays.
 *
 * Filler words: "um", "uh", "erm", "ah" (with letters held: "umm", "uhh", "ahh") and the phrases
 * "you know" and "I mean". Repeated words: a word said again right after itself ("the the"); the
 * earlier ones go, the last stays.
 */

const FILLER_WORD = /^(u+m+|u+h+|e+r+m+|a+h+)$/;
const FILLER_PHRASES: readonly (readonly string[])[] = [
  ['you', 'know'],
  ['i', 'mean'],
];

export function fillerSpans(words: readonly Word[]): number[][] {
  const tokens = words.map((w) => normalWord(w.text));
  const spans: number[][] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (FILLER_WORD.test(tokens[i])) {
      spans.push([i]);
      continue;
    }
    const phrase = FILLER_PHRASES.find((p) => p.every((t, k) => tokens[i + k] === t));
    if (phrase) {
      spans.push(phrase.map((_, k) => i + k));
      i += phrase.length - 1;
    }
  }
  return spans;
}

/** Indexes of words said again right after themselves: all but the last of each run. */
export function repeatedWords(words: readonly Word[]): number[] {
  const tokens = words.map((w) => normalWord(w.text));
  return tokens.flatMap((t, i) => (t !== '' && t === tokens[i + 1] ? [i] : []));
}

/** Indexes of the words equal to one of `listed` (each a word or a phrase of words). */
function listedWords(words: readonly Word[], listed: readonly string[]): number[][] {
  if (listed.length === 0) return [];
  const tokens = words.map((w) => normalWord(w.text));
  const phrases = listed.map((p) => p.split(/\s+/).map(normalWord).filter(Boolean)).filter((p) => p.length > 0);
  const spans: number[][] = [];
  for (let i = 0; i < tokens.length; i++) {
    const phrase = phrases.find((p) => p.every((t, k) => tokens[i + k] === t));
    if (phrase) {
      spans.push(phrase.map((_, k) => i + k));
      i += phrase.length - 1;
    }
  }
  return spans;
}

const spanRanges = (words: readonly Word[], indexes: readonly number[]): TimeRange[] =>
  mergeRanges(indexes.map((i) => ({ from: words[i].start, to: words[i].end })));

export const removeWords: AgentTool = {
  schema: {
    name: 'remove_words',
    description:
      'Removes words from the composition by cutting their time: filler words (um, uh, erm, ah, "you know", "I mean"), ' +
      'words repeated right after themselves ("the the": the earlier ones go), and/or the listed words or phrases.',
    parameters: {
      type: 'object',
      properties: {
        fillers: { type: 'boolean', description: 'Remove filler words.' },
        repeated: { type: 'boolean', description: 'Remove repeated words.' },
        words: {
          type: 'array',
          items: { type: 'string', minLength: 1, maxLength: 200 },
          maxItems: 100,
          description: 'Words or phrases to remove.',
        },
        composition: compositionArgument,
      },
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const listed = (args.words as string[] | undefined) ?? [];
    if (!args.fillers && !args.repeated && listed.length === 0)
      throw new ToolInputError('say which words to remove: fillers, repeated, or words');
    const words = wordsOf(model, target);
    const spans = [
      ...(args.fillers ? fillerSpans(words) : []),
      ...(args.repeated ? repeatedWords(words).map((i) => [i]) : []),
      ...listedWords(words, listed),
    ];
    const removed = [...new Set(spans.flat())].sort((a, b) => a - b);
    const kind = [args.fillers && 'filler', args.repeated && 'repeated', listed.length > 0 && 'listed'].filter(Boolean).join(' and ');
    if (removed.length === 0) return { changes: [], summary: `Found no ${kind} words in ${target.name}; nothing changed` };
    const count = new Set(spans.map((s) => s.join(','))).size; // "um um" is two fillers and one repeat, not three
    const ranges = spanRanges(words, removed);
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'cut', ranges } }],
      summary: `Removed ${plural(count, `${kind} word`)} (${secondsText(totalSeconds(ranges))}) from ${target.name}; ${nowLastsAfterCut(target, ranges)}`,
    };
  },
};
