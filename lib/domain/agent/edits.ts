import type { Clip, Marker, Word } from '../edl';

/**
 * What an agent tool (or an edit by text) asks of a project's compositions: values, not events.
 * The tools are pure functions over a `ProjectModel` returning these; the turn applies them to its
 * in-memory model as it goes (so later tool calls see earlier ones) and, when the turn ends, the
 * composition deciders turn them into events: one event per edit, all of a turn appended together
 * at the revisions they were planned on (issue 20, "The composition model, ready for edits").
 * Times are composition seconds unless a field says media.
 */
export type TimeRange = { readonly from: number; readonly to: number };

export type CompositionEdit =
  /** Removes every range at once (sorted, merged), splitting clips at their edges. */
  | { readonly kind: 'cut'; readonly ranges: readonly TimeRange[] }
  /** Keeps only [from, to). */
  | { readonly kind: 'keep'; readonly from: number; readonly to: number }
  | { readonly kind: 'rename'; readonly name: string }
  | { readonly kind: 'add_markers'; readonly markers: readonly Marker[] }
  /** Audio enhancement rendered by publish: loudness target in LUFS (null: none) and noise reduction. */
  | { readonly kind: 'set_audio'; readonly loudness_lufs: number | null; readonly noise_reduction: boolean }
  | { readonly kind: 'delete' }
  /** Becomes exactly what it was after stream revision `to_revision` (undo). */
  | { readonly kind: 'revert'; readonly to_revision: number };

/** One planned change: an edit of an existing composition, or a new one (create, duplicate, clip of a passage). */
export type PlannedChange =
  | { readonly composition_id: string; readonly edit: CompositionEdit }
  | {
      readonly create: {
        readonly composition_id: string;
        readonly name: string;
        readonly clips: readonly Clip[];
        readonly markers: readonly Marker[];
      };
    };

/** A media file as the tools read it. */
export type ModelMedia = {
  readonly ref: string;
  readonly duration: number;
  readonly has_video: boolean;
  /** Word-timed transcript in media time; empty when none. */
  readonly words: readonly Word[];
};

/** A composition as the tools read it, at `revision` of its stream. */
export type ModelComposition = {
  readonly composition_id: string;
  readonly short_id: string;
  readonly name: string;
  readonly revision: number;
  readonly clips: readonly Clip[];
  readonly markers: readonly Marker[];
  readonly audio: { readonly loudness_lufs: number | null; readonly noise_reduction: boolean };
};

/** What every tool reads: the project's media and compositions, in project order. */
export type ProjectModel = {
  readonly project_id: string;
  readonly media: readonly ModelMedia[];
  readonly compositions: readonly ModelComposition[];
};

/** What a tool call returns: the changes it plans and a sentence saying concretely what they do. */
export type ToolOutcome = { readonly changes: readonly PlannedChange[]; readonly summary: string; readonly data?: unknown };
