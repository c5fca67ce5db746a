import type { Word } from '../../edl';
import type { TimeRange } from '../edits';
import { mergeRanges, totalSeconds } from '../timeline';
import { compositionArgument, normalWord, nowLastsAfterCut, plural, secondsText, targetOf, wordsOf, type AgentTool } from './tool';

/**
 * Retakes: a speaker who stumbles starts the sentence again and says it anew. The rule:
 *
 * - A take starts at a word that opens the transcript, follows a word ending a sentence (. ? !),
 *   or follows a pause of at least `PAUSE_SECONDS`.
 * - The take starting at word i (words i … j−1) is retaken by a later take start j when word j
 *   starts within `window_seconds` (default 10) of word i and the later take says the earlier one
 *   again: compared without case and punctuation, the words from j on repeat every word of the
 *   earlier take but perhaps its last (a word broken off), and at least two of them (a single
 *   repeated word is the repeated-words tool's business). So "so the price pri— so the price is
 *   ten" is a retake, while two sentences that merely open alike ("I think we should go. I think
 *   it rains.") are not.
 * - The earlier take, [start of word i, start of word j), is cut; the last take stays. Takes
 *   retaken twice chain: the first and the second go, the third stays.
 */

export const PAUSE_SECONDS = 0.3;
const MIN_MATCHED_WORDS = 2;
const DEFAULT_WINDOW_SECONDS = 10;

const endsSentence = (text: string): boolean => /[.?!]["')\]]*$/.test(text.trim());

/** Indexes of the words a take starts at. */
export function takeStarts(words: readonly Word[]): number[] {
  return words.flatMap((w, i) => (i === 0 || endsSentence(words[i - 1].text) || w.start - words[i - 1].end >= PAUSE_SECONDS ? [i] : []));
}

/** The earlier takes to cut, as [first word of the take, first word of the take that replaces it]. */
export function retakes(words: readonly Word[], windowSeconds = DEFAULT_WINDOW_SECONDS): [number, number][] {
  const tokens = words.map((w) => normalWord(w.text));
  const starts = takeStarts(words);
  const saysAgain = (i: number, j: number): boolean => {
    let matched = 0;
    while (i + matched < j && tokens[i + matched] !== '' && tokens[i + matched] === tokens[j + matched]) matched++;
    return matched >= MIN_MATCHED_WORDS && matched >= j - i - 1;
  };
  const found: [number, number][] = [];
  for (const [k, i] of starts.entries()) {
    for (const j of starts.slice(k + 1)) {
      if (words[j].start - words[i].start > windowSeconds) break; // starts are in time order
      if (saysAgain(i, j)) {
        found.push([i, j]);
        break;
      }
    }
  }
  return found;
}

export const removeRetakes: AgentTool = {
  schema: {
    name: 'remove_retakes',
    description:
      'Removes retakes: where a sentence is started again and said anew within a few seconds, the earlier takes are cut and the last one kept.',
    parameters: {
      type: 'object',
      properties: {
        window_seconds: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 60,
          description: 'How soon a retake follows the take it replaces; default 10.',
        },
        composition: compositionArgument,
      },
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const words = wordsOf(model, target);
    const found = retakes(words, (args.window_seconds as number | undefined) ?? DEFAULT_WINDOW_SECONDS);
    if (found.length === 0) return { changes: [], summary: `Found no retakes in ${target.name}; nothing changed` };
    const ranges: TimeRange[] = mergeRanges(found.map(([i, j]) => ({ from: words[i].start, to: words[j].start })));
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'cut', ranges } }],
      summary: `Removed ${plural(found.length, 'retake')} (${secondsText(totalSeconds(ranges))}) from ${target.name}; ${nowLastsAfterCut(target, ranges)}`,
    };
  },
};
