import { ms } from '../../edl';
import type { ModelComposition, TimeRange } from '../edits';
import { compositionRangesOf, mergeRanges, totalSeconds } from '../timeline';
import {
  askedSeconds,
  compositionArgument,
  nowLastsAfterCut,
  plural,
  secondsText,
  targetOf,
  ToolInputError,
  type AgentTool,
  type ToolContext,
} from './tool';

/**
 * Silences, from the intervals ffmpeg `silencedetect` measured on each media file (media time,
 * in the tool context). They are mapped into composition time and joined where they touch, so
 * the silence a cut left between two clips counts as one; a silence's length is its length in
 * the composition.
 */

/** The composition's silences in composition time, merged. */
export function compositionSilences(target: ModelComposition, ctx: ToolContext): TimeRange[] {
  const refs = [...new Set(target.clips.map((c) => c.media))];
  const unmeasured = refs.filter((ref) => !ctx.silences.has(ref));
  if (unmeasured.length > 0)
    throw new ToolInputError(`the silences of ${unmeasured.map((r) => `"${r}"`).join(', ')} have not been measured`);
  return mergeRanges(refs.flatMap((ref) => ctx.silences.get(ref)!.flatMap((s) => compositionRangesOf(target.clips, ref, s))));
}

const cutOutcome = (target: ModelComposition, ranges: TimeRange[], what: string) => {
  return {
    changes: [{ composition_id: target.composition_id, edit: { kind: 'cut' as const, ranges } }],
    summary: `${what} (${secondsText(totalSeconds(ranges))} removed) in ${target.name}; ${nowLastsAfterCut(target, ranges)}`,
  };
};

export const removeSilences: AgentTool = {
  schema: {
    name: 'remove_silences',
    description: 'Cuts every silence longer than `longer_than` seconds, whole.',
    parameters: {
      type: 'object',
      properties: { longer_than: { type: 'number', minimum: 0.1, maximum: 3600 }, composition: compositionArgument },
      required: ['longer_than'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const longerThan = args.longer_than as number;
    const ranges = compositionSilences(target, ctx).filter((s) => s.to - s.from > longerThan);
    if (ranges.length === 0)
      return { changes: [], summary: `Found no silence longer than ${askedSeconds(longerThan)} in ${target.name}; nothing changed` };
    return cutOutcome(target, ranges, `Cut ${plural(ranges.length, 'silence')} longer than ${askedSeconds(longerThan)}`);
  },
};

export const shortenPauses: AgentTool = {
  schema: {
    name: 'shorten_pauses',
    description: 'Shortens every silence longer than `to` seconds to `to` seconds, keeping half of it on each side.',
    parameters: {
      type: 'object',
      properties: { to: { type: 'number', minimum: 0.1, maximum: 3600 }, composition: compositionArgument },
      required: ['to'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const to = args.to as number;
    const long = compositionSilences(target, ctx).filter((s) => s.to - s.from > to);
    // Rounded first: a cut that rounds to nothing is no cut.
    const ranges = long.map((s) => ({ from: ms(s.from + to / 2), to: ms(s.to - to / 2) })).filter((r) => r.to > r.from);
    if (ranges.length === 0)
      return { changes: [], summary: `Found no pause longer than ${askedSeconds(to)} in ${target.name}; nothing changed` };
    return cutOutcome(target, ranges, `Shortened ${plural(ranges.length, 'pause')} to ${askedSeconds(to)}`);
  },
};
