import { compositionDuration, keepRange, ms } from '../../edl';
import { rangesWithin, totalSeconds } from '../timeline';
import {
  askedSeconds,
  clock,
  compositionArgument,
  nowLasts,
  nowLastsAfterCut,
  plural,
  secondsText,
  targetOf,
  ToolInputError,
  type AgentTool,
} from './tool';

/** Cutting and keeping composition time: the tools every other cut reduces to. */

const seconds = { type: 'number', minimum: 0, description: 'Composition time in seconds.' } as const;
const range = {
  type: 'object',
  properties: { from: seconds, to: seconds },
  required: ['from', 'to'],
  additionalProperties: false,
} as const;

export const cutRanges: AgentTool = {
  schema: {
    name: 'cut_ranges',
    description: 'Removes ranges of composition time (seconds), all at once; later content moves earlier.',
    parameters: {
      type: 'object',
      properties: { ranges: { type: 'array', items: range, minItems: 1, maxItems: 10_000 }, composition: compositionArgument },
      required: ['ranges'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const asked = args.ranges as { from: number; to: number }[];
    const bad = asked.findIndex((r) => r.to <= r.from);
    if (bad !== -1) throw new ToolInputError(`ranges[${bad}]: "to" (${asked[bad].to}) must be after "from" (${asked[bad].from})`);
    const ranges = rangesWithin(target.clips, asked);
    if (ranges.length === 0)
      return {
        changes: [],
        summary: `Nothing to cut: the ranges are past the end of ${target.name} (${clock(compositionDuration(target.clips))})`,
      };
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'cut', ranges } }],
      summary: `Cut ${plural(ranges.length, 'range')} (${secondsText(totalSeconds(ranges))}) from ${target.name}; ${nowLastsAfterCut(target, ranges)}`,
    };
  },
};

export const keepOnly: AgentTool = {
  schema: {
    name: 'keep_range',
    description: 'Keeps only composition time [from, to) (seconds) and removes everything before and after it.',
    parameters: {
      type: 'object',
      properties: { from: seconds, to: seconds, composition: compositionArgument },
      required: ['from', 'to'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const duration = compositionDuration(target.clips);
    const from = ms(args.from as number);
    const to = ms(Math.min(args.to as number, duration));
    if (from >= duration) throw new ToolInputError(`"from" (${from} s) is past the end of ${target.name} (${clock(duration)})`);
    if (to <= from) throw new ToolInputError(`"to" (${args.to}) must be after "from" (${from})`);
    const clips = keepRange(target.clips, from, to);
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'keep', from, to } }],
      summary: `Kept only ${clock(from)} to ${clock(to)} of ${target.name}; ${nowLasts({ clips })}`,
    };
  },
};

export const trim: AgentTool = {
  schema: {
    name: 'trim',
    description: 'Trims seconds off the start and/or the end of a composition.',
    parameters: {
      type: 'object',
      properties: {
        start: { type: 'number', exclusiveMinimum: 0 },
        end: { type: 'number', exclusiveMinimum: 0 },
        composition: compositionArgument,
      },
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const [start, end] = [(args.start as number | undefined) ?? 0, (args.end as number | undefined) ?? 0];
    if (start === 0 && end === 0) throw new ToolInputError('give "start" or "end": the seconds to trim');
    const duration = compositionDuration(target.clips);
    if (start + end >= duration)
      throw new ToolInputError(`trimming ${start + end} s would leave nothing of ${target.name} (${clock(duration)})`);
    const ranges = rangesWithin(target.clips, [
      { from: 0, to: start },
      { from: duration - end, to: duration },
    ]);
    const what = [start > 0 && `the first ${askedSeconds(start)}`, end > 0 && `the last ${askedSeconds(end)}`]
      .filter(Boolean)
      .join(' and ');
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'cut', ranges } }],
      summary: `Trimmed ${what} of ${target.name}; ${nowLastsAfterCut(target, ranges)}`,
    };
  },
};
