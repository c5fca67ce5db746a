import type { Decider } from './decider';
import {
  addMarker,
  type Clip,
  compositionDuration,
  cutMarkers,
  cutRange,
  insertClips,
  insertMarkers,
  keepMarkers,
  keepRange,
  type Marker,
  ms,
  removeClipMarkers,
  removeClips,
  reorderClips,
  reorderMarkers,
} from './edl';
import { assertNever, conflict, ignoreUnknown, invalidInput, isRejection, notFound, reject, type Rejection } from './errors';

/**
 * A composition, an edit decision list, in its own stream `composition-<composition_id>`
 * (DESIGN §4), so edits to one composition never contend with another. Each edit event carries
 * the edit, not the resulting list; the state keeps what the composition was after every
 * revision, so "revert to revision N" (N: the 0-based revision of an event in the stream) is exact.
 */

// ---------------------------------------------------------------- events

type At = { readonly at: string };

export type CompositionCreated = {
  readonly type: 'CompositionCreated';
  readonly data: {
    readonly project_id: string;
    readonly composition_id: string;
    readonly short_id: string;
    readonly name: string;
    readonly clips: readonly Clip[];
    readonly markers: readonly Marker[];
    readonly width: number;
    readonly height: number;
    /** What asked for it ("<job_id>#<index>"), so a retried job creates it once. */
    readonly origin: string;
    readonly created_at: string;
  };
};
/** Composition time [from, to) was removed. */
export type CompositionRangeCut = {
  readonly type: 'CompositionRangeCut';
  readonly data: { readonly from: number; readonly to: number } & At;
};
/** Only composition time [from, to) was kept. */
export type CompositionRangeKept = {
  readonly type: 'CompositionRangeKept';
  readonly data: { readonly from: number; readonly to: number } & At;
};
export type CompositionClipsInserted = {
  readonly type: 'CompositionClipsInserted';
  readonly data: { readonly time: number; readonly clips: readonly Clip[] } & At;
};
export type CompositionClipsRemoved = {
  readonly type: 'CompositionClipsRemoved';
  readonly data: { readonly indexes: readonly number[] } & At;
};
export type CompositionClipsReordered = {
  readonly type: 'CompositionClipsReordered';
  readonly data: { readonly order: readonly number[] } & At;
};
export type CompositionRenamed = { readonly type: 'CompositionRenamed'; readonly data: { readonly name: string } & At };
export type CompositionMarkerAdded = { readonly type: 'CompositionMarkerAdded'; readonly data: Marker & At };
/** The composition became exactly what it was after stream revision `to_revision`. */
/**
 * The composition became exactly what it was after stream revision `to_revision`. The event
 * carries that snapshot, so a reader (a read model, a data team replaying the stream) needs no
 * history of its own to apply it.
 */
export type CompositionReverted = {
  readonly type: 'CompositionReverted';
  readonly data: { readonly to_revision: number } & CompositionSnapshot & At;
};

export type CompositionEvent =
  | CompositionCreated
  | CompositionRangeCut
  | CompositionRangeKept
  | CompositionClipsInserted
  | CompositionClipsRemoved
  | CompositionClipsReordered
  | CompositionRenamed
  | CompositionMarkerAdded
  | CompositionReverted;

// ---------------------------------------------------------------- state

/** What an edit can change, as it was after one revision. */
export type CompositionSnapshot = { readonly name: string; readonly clips: readonly Clip[]; readonly markers: readonly Marker[] };

export type CompositionState =
  | { readonly exists: false }
  | ({
      readonly exists: true;
      readonly updated_at: string;
      /** Revision of the last event folded (0: the creation). */
      readonly revision: number;
      /** The snapshot after each revision, by revision. */
      readonly history: readonly CompositionSnapshot[];
    } & Omit<CompositionCreated['data'], keyof CompositionSnapshot> &
      CompositionSnapshot);

type Existing = Extract<CompositionState, { exists: true }>;

export const initialCompositionState = (): CompositionState => ({ exists: false });

const snapshotOf = (s: Existing): CompositionSnapshot => ({ name: s.name, clips: s.clips, markers: s.markers });

/** One more revision: every event occupies one, even one that changes nothing this version knows. */
function next(state: CompositionState, at: string, change: (s: Existing) => Partial<CompositionSnapshot>): CompositionState {
  if (!state.exists) return state;
  const snapshot = { ...snapshotOf(state), ...change(state) };
  return { ...state, ...snapshot, updated_at: at, revision: state.revision + 1, history: [...state.history, snapshot] };
}

export function evolveComposition(state: CompositionState, event: CompositionEvent): CompositionState {
  switch (event.type) {
    case 'CompositionCreated': {
      if (state.exists) return next(state, state.updated_at, () => ({})); // never decided; still a revision
      // Read as JSON from the store, an event written before markers existed has none.
      const { clips, markers = [], name } = event.data;
      return { exists: true, ...event.data, markers, updated_at: event.data.created_at, revision: 0, history: [{ name, clips, markers }] };
    }
    case 'CompositionRangeCut': {
      const { from, to, at } = event.data;
      return next(state, at, (s) => ({ clips: cutRange(s.clips, from, to), markers: cutMarkers(s.markers, from, to) }));
    }
    case 'CompositionRangeKept': {
      const { from, to, at } = event.data;
      return next(state, at, (s) => ({ clips: keepRange(s.clips, from, to), markers: keepMarkers(s.markers, from, to) }));
    }
    case 'CompositionClipsInserted': {
      const { time, clips, at } = event.data;
      return next(state, at, (s) => ({
        clips: insertClips(s.clips, time, clips),
        markers: insertMarkers(s.markers, time, compositionDuration(clips)),
      }));
    }
    case 'CompositionClipsRemoved': {
      const { indexes, at } = event.data;
      return next(state, at, (s) => ({ clips: removeClips(s.clips, indexes), markers: removeClipMarkers(s.clips, s.markers, indexes) }));
    }
    case 'CompositionClipsReordered': {
      const { order, at } = event.data;
      return next(state, at, (s) => ({ clips: reorderClips(s.clips, order), markers: reorderMarkers(s.clips, s.markers, order) }));
    }
    case 'CompositionRenamed':
      return next(state, event.data.at, () => ({ name: event.data.name }));
    case 'CompositionMarkerAdded': {
      const { time, label, at } = event.data;
      return next(state, at, (s) => ({ markers: addMarker(s.markers, { time, label }) }));
    }
    case 'CompositionReverted':
      return next(state, event.data.at, () => ({ name: event.data.name, clips: event.data.clips, markers: event.data.markers }));
    default:
      // Unknown to this version, yet it holds a stream revision: count it, so revert targets stay aligned.
      return ignoreUnknown(event, state.exists ? next(state, state.updated_at, () => ({})) : state);
  }
}

// ---------------------------------------------------------------- commands

type Now = { readonly now: string };

/** `markers` may be left out: a new composition usually has none. */
export type CreateComposition = {
  readonly type: 'CreateComposition';
  readonly composition: Omit<CompositionCreated['data'], 'created_at' | 'markers'> & { readonly markers?: readonly Marker[] };
} & Now;
export type CutRange = { readonly type: 'CutRange'; readonly from: number; readonly to: number } & Now;
export type KeepRange = { readonly type: 'KeepRange'; readonly from: number; readonly to: number } & Now;
export type InsertClips = {
  readonly type: 'InsertClips';
  readonly time: number;
  readonly clips: readonly Clip[];
  /** The project's media by reference: its duration, null for media without one (an image). */
  readonly mediaDurations: ReadonlyMap<string, number | null>;
} & Now;
export type RemoveClips = { readonly type: 'RemoveClips'; readonly indexes: readonly number[] } & Now;
export type ReorderClips = { readonly type: 'ReorderClips'; readonly order: readonly number[] } & Now;
export type Rename = { readonly type: 'Rename'; readonly name: string } & Now;
export type AddMarker = { readonly type: 'AddMarker'; readonly time: number; readonly label: string } & Now;
export type Revert = { readonly type: 'Revert'; readonly to_revision: number } & Now;

export type CompositionCommand =
  CreateComposition | CutRange | KeepRange | InsertClips | RemoveClips | ReorderClips | Rename | AddMarker | Revert;

// ---------------------------------------------------------------- validation

/** A validated value, or the reason it is not one. */
type Checked<T> = T | Rejection;
const refuse = (message: string): Rejection => reject(invalidInput(message));

/** A time of the composition in [0, duration], rounded to milliseconds. */
function timeIn(field: string, value: number, duration: number): Checked<number> {
  if (!Number.isFinite(value)) return refuse(`${field} must be a number`);
  const t = ms(value);
  if (t < 0) return refuse(`${field} must not be negative`);
  if (t > duration) return refuse(`${field} ${t} is past the end of the composition (${duration} s)`);
  return t;
}

function rangeIn(from: number, to: number, duration: number): Checked<{ from: number; to: number }> {
  const f = timeIn('from', from, duration);
  if (isRejection(f)) return f;
  const t = timeIn('to', to, duration);
  if (isRejection(t)) return t;
  return f < t ? { from: f, to: t } : refuse('from must be less than to');
}

/**
 * Clips rounded to milliseconds. With `durations`, each clip's media must be in the project and
 * have a duration: an image has none, and a clip is a range of media time, so it is refused
 * rather than given an invented length.
 */
function checkClips(clips: readonly Clip[], durations: ReadonlyMap<string, number | null> | null): Checked<Clip[]> {
  const out: Clip[] = [];
  for (const [i, c] of clips.entries()) {
    const field = `clips[${i}]`;
    if (!Number.isFinite(c.in) || !Number.isFinite(c.out)) return refuse(`${field}.in and ${field}.out must be numbers`);
    const clip = { media: c.media, in: ms(c.in), out: ms(c.out) };
    if (clip.in < 0) return refuse(`${field}.in must not be negative`);
    if (clip.in >= clip.out) return refuse(`${field}.in must be less than ${field}.out`);
    if (durations) {
      if (!durations.has(c.media)) return refuse(`${field}.media "${c.media}" is not a media file of the project`);
      const duration = durations.get(c.media);
      if (duration === null || duration === undefined)
        return refuse(`${field}.media "${c.media}" has no duration (an image) and cannot be a clip`);
      if (clip.out > ms(duration)) return refuse(`${field}.out ${clip.out} is past the end of "${c.media}" (${ms(duration)} s)`);
    }
    out.push(clip);
  }
  return out;
}

function checkMarkers(markers: readonly Marker[], duration: number): Checked<Marker[]> {
  let out: Marker[] = [];
  for (const [i, m] of markers.entries()) {
    const time = timeIn(`markers[${i}].time`, m.time, duration);
    if (isRejection(time)) return time;
    out = addMarker(out, { time, label: m.label });
  }
  return out;
}

const positiveInteger = (field: string, n: number): Rejection | null =>
  Number.isInteger(n) && n > 0 ? null : refuse(`${field} must be a positive integer`);

function checkIndexes(indexes: readonly number[], count: number): Checked<number[]> {
  if (indexes.length === 0) return refuse('indexes must not be empty');
  const bad = indexes.find((i) => !Number.isInteger(i) || i < 0 || i >= count);
  if (bad !== undefined) return refuse(`indexes: ${bad} is not a clip index (the composition has ${count} clips)`);
  if (new Set(indexes).size !== indexes.length) return refuse('indexes must not repeat an index');
  return [...indexes].sort((a, b) => a - b);
}

function checkOrder(order: readonly number[], count: number): Checked<number[]> {
  const valid = order.length === count && order.every((i) => Number.isInteger(i) && i >= 0 && i < count) && new Set(order).size === count;
  return valid ? [...order] : refuse(`order must list each clip index from 0 to ${count - 1} exactly once`);
}

// ---------------------------------------------------------------- decide

const sameClips = (a: readonly Clip[], b: readonly Clip[]) =>
  a.length === b.length && a.every((c, i) => c.media === b[i].media && c.in === b[i].in && c.out === b[i].out);
const sameMarkers = (a: readonly Marker[], b: readonly Marker[]) =>
  a.length === b.length && a.every((m, i) => m.time === b[i].time && m.label === b[i].label);

/**
 * An edit that would leave name, clips and markers as they are yields no event: retries and
 * redundant agent calls add no revisions, and undoing a turn that changed nothing is a no-op.
 */
function ifChanged(state: Existing, event: CompositionEvent): CompositionEvent[] {
  const after = evolveComposition(state, event);
  if (!after.exists) return [event];
  const unchanged = after.name === state.name && sameClips(after.clips, state.clips) && sameMarkers(after.markers, state.markers);
  return unchanged ? [] : [event];
}

function create(command: CreateComposition, state: CompositionState): CompositionEvent[] | Rejection {
  const { composition } = command;
  if (state.exists) return state.origin === composition.origin ? [] : reject(conflict('composition already exists', 'exists'));
  const size = positiveInteger('width', composition.width) ?? positiveInteger('height', composition.height);
  if (size) return size;
  const clips = checkClips(composition.clips, null);
  if (isRejection(clips)) return clips;
  const markers = checkMarkers(composition.markers ?? [], compositionDuration(clips));
  if (isRejection(markers)) return markers;
  // Field by field: a caller's richer object must not smuggle fields into the event.
  const { project_id, composition_id, short_id, name, width, height, origin } = composition;
  const data = { project_id, composition_id, short_id, name, clips, markers, width, height, origin, created_at: command.now };
  return [{ type: 'CompositionCreated', data }];
}

/** Validation failures are `invalid_input` rejections naming the field; a no-op edit yields no event. */
export function decideComposition(command: CompositionCommand, state: CompositionState): CompositionEvent[] | Rejection {
  if (command.type === 'CreateComposition') return create(command, state);
  if (!state.exists) return reject(notFound('composition does not exist'));
  const at = command.now;
  const duration = compositionDuration(state.clips);
  switch (command.type) {
    case 'CutRange':
    case 'KeepRange': {
      const range = rangeIn(command.from, command.to, duration);
      if (isRejection(range)) return range;
      return ifChanged(state, {
        type: command.type === 'CutRange' ? 'CompositionRangeCut' : 'CompositionRangeKept',
        data: { ...range, at },
      });
    }
    case 'InsertClips': {
      const time = timeIn('time', command.time, duration);
      if (isRejection(time)) return time;
      if (command.clips.length === 0) return refuse('clips must not be empty');
      const clips = checkClips(command.clips, command.mediaDurations);
      if (isRejection(clips)) return clips;
      return [{ type: 'CompositionClipsInserted', data: { time, clips, at } }];
    }
    case 'RemoveClips': {
      const indexes = checkIndexes(command.indexes, state.clips.length);
      if (isRejection(indexes)) return indexes;
      return [{ type: 'CompositionClipsRemoved', data: { indexes, at } }];
    }
    case 'ReorderClips': {
      const order = checkOrder(command.order, state.clips.length);
      if (isRejection(order)) return order;
      return ifChanged(state, { type: 'CompositionClipsReordered', data: { order, at } });
    }
    case 'Rename':
      if (command.name.trim() === '') return refuse('name must not be empty');
      return ifChanged(state, { type: 'CompositionRenamed', data: { name: command.name, at } });
    case 'AddMarker': {
      const time = timeIn('time', command.time, duration);
      if (isRejection(time)) return time;
      if (command.label.trim() === '') return refuse('label must not be empty');
      // The same marker twice is a retry, not a second marker.
      if (state.markers.some((m) => m.time === time && m.label === command.label)) return [];
      return [{ type: 'CompositionMarkerAdded', data: { time, label: command.label, at } }];
    }
    case 'Revert': {
      const to = command.to_revision;
      if (!Number.isInteger(to) || to < 0) return refuse('to_revision must be a non-negative integer');
      if (to > state.revision) return refuse(`to_revision ${to} does not exist (the composition is at revision ${state.revision})`);
      const { name, clips, markers } = state.history[to];
      return ifChanged(state, { type: 'CompositionReverted', data: { to_revision: to, name, clips, markers, at } });
    }
    default:
      return assertNever(command);
  }
}

export const compositionDecider: Decider<CompositionCommand, CompositionEvent, CompositionState> = {
  initialState: initialCompositionState,
  evolve: evolveComposition,
  decide: decideComposition,
};
