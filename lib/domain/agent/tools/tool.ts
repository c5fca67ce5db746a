import { compositionDuration, compositionTranscript, ms, type Word } from '../../edl';
import { rangesWithin, totalSeconds } from '../timeline';
import type { CompositionSnapshot } from '../apply';
import type { ModelComposition, ProjectModel, TimeRange, ToolOutcome } from '../edits';

/**
 * What the agent tools share: the context a turn hands them, the shape of a tool, the composition
 * an argument names, and the words of a summary. Tools are pure: a model and arguments in, planned
 * changes and a sentence out; a request they cannot honour throws a `ToolInputError`, whose message
 * goes back to the model so it can correct the call.
 */

/** The composition a turn edited, as it was before that turn (what `undo` restores). */
export type TurnTouch = {
  readonly composition_id: string;
  /** The stream revision before the turn; null when the turn created the composition (undo deletes it). */
  readonly revision_before: number | null;
  /** Its content at `revision_before`, for later tools of the turn to read; null when created. */
  readonly before: CompositionSnapshot | null;
};

export type ToolContext = {
  /** The composition the prompt is about (the request's, else the project's first). */
  readonly composition_id: string;
  /** A fresh composition id (UUID) for a composition a tool creates. */
  readonly newId: () => string;
  /** Silence intervals in media time, by media reference; a media file missing here has not been measured. */
  readonly silences: ReadonlyMap<string, readonly TimeRange[]>;
  /** The compositions the conversation's last turn changed; null when there is no turn to undo. */
  readonly lastTurn: readonly TurnTouch[] | null;
};

/** A tool as the model sees it: its name, what it does, and its arguments as a JSON Schema object. */
export type ToolSchema = {
  readonly name: string;
  readonly description: string;
  readonly parameters: { readonly type: 'object'; readonly [keyword: string]: unknown };
};

export type AgentTool = {
  readonly schema: ToolSchema;
  /** `args` has passed `schema.parameters`. */
  readonly run: (model: ProjectModel, args: Readonly<Record<string, unknown>>, ctx: ToolContext) => ToolOutcome;
};

/** A call the tool cannot carry out as asked; the message is for the model (and the user). */
export class ToolInputError extends Error {
  override readonly name = 'ToolInputError';
}

/** The optional `composition` argument every composition tool takes. */
export const compositionArgument = {
  type: 'string',
  minLength: 1,
  description: 'The composition to act on, by name, id or short id; default: the composition of the request.',
} as const;

/** The composition an argument names (id, short id, or name ignoring case), else the context's. */
export function targetOf(model: ProjectModel, named: unknown, ctx: ToolContext): ModelComposition {
  if (typeof named !== 'string') {
    const target = model.compositions.find((c) => c.composition_id === ctx.composition_id);
    if (!target) throw new ToolInputError('the composition of the request no longer exists; name one of the project');
    return target;
  }
  const byId = model.compositions.find((c) => c.composition_id === named || c.short_id === named);
  if (byId) return byId;
  const byName = model.compositions.filter((c) => c.name.toLowerCase() === named.trim().toLowerCase());
  if (byName.length === 1) return byName[0];
  const names = model.compositions.map((c) => `"${c.name}"`).join(', ');
  if (byName.length > 1) throw new ToolInputError(`${byName.length} compositions are named "${named}"; name one by id (${names})`);
  throw new ToolInputError(`no composition is named "${named}"; the project has ${names || 'none'}`);
}

/** The composition's transcript in composition time. */
export function wordsOf(model: ProjectModel, c: Pick<ModelComposition, 'clips'>): Word[] {
  const byRef = new Map(model.media.map((m) => [m.ref, m.words]));
  return compositionTranscript(c.clips, (ref) => byRef.get(ref));
}

/** A word as compared: lower case, without punctuation around or inside it (apostrophes kept). */
export const normalWord = (text: string): string =>
  // Most words are plain lower-case ASCII already: those skip the Unicode-aware replaces.
  PLAIN.test(text)
    ? text
    : text
        .toLowerCase()
        .replace(/[^\p{L}\p{N}']+/gu, '')
        .replace(/^'+|'+$/g, '');
const PLAIN = /^[a-z0-9]+$/;

/** 192.6 → "3:12.6"; 3723.4 → "1:02:03.4". */
export function clock(seconds: number): string {
  const tenths = Math.round(seconds * 10);
  const s = ((tenths % 600) / 10).toFixed(1).padStart(4, '0');
  const minutes = Math.floor(tenths / 600);
  return minutes >= 60 ? `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}:${s}` : `${minutes}:${s}`;
}

/** A length as it was asked for: 1 → "1 s", 0.25 → "0.25 s". */
export const askedSeconds = (seconds: number): string => `${Number(seconds.toFixed(3))} s`;

/** A measured length, to a tenth: 2.44 → "2.4 s". */
export const secondsText = (seconds: number): string => `${(Math.round(seconds * 10) / 10).toFixed(1)} s`;

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** "…; it is now 3:12.6", from the clips after the change. */
export const nowLasts = (c: Pick<ModelComposition, 'clips'>): string => `it is now ${clock(compositionDuration(c.clips))}`;

/**
 * "…; it is now 3:12.6" after cutting `ranges`, counted rather than cut: the ranges, merged and
 * within the composition, remove exactly their length (a summary shows tenths; cutting 300 ranges
 * only to say how long the rest is cost a long composition's turn more than the edit).
 */
export const nowLastsAfterCut = (c: Pick<ModelComposition, 'clips'>, ranges: readonly TimeRange[]): string =>
  `it is now ${clock(ms(compositionDuration(c.clips) - totalSeconds(rangesWithin(c.clips, ranges))))}`;
