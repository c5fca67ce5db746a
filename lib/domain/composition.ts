import type { Decider } from './decider';
import {
  addMarker,
  type Clip,
  compositionDuration,
  cutMarkers,
  cutRange,
  cutRanges,
  cutRangesMarkers,
  cutsInPlace,
  insertClips,
  insertMarkers,
  keepMarkers,
  keepRange,
  type Marker,
  ms,
  removeClipMarkers,
  removeClips,
  reorderClips,
  mergeRanges,
  reorderMarkers,
  type TimeSpan,
} from './edl';
import type { CompositionEdit } from './agent/edits';
import { AppError, assertNever, conflict, ignoreUnknown, invalidInput, isRejection, notFound, reject, type Rejection } from './errors';

/**
 * A composition, an edit decision list, in its own stream `composition-<composition_id>`
 * (DESIGN §4), so edits to one composition never contend with another. Each edit event carries
 * the edit, not the resulting list. The state keeps the events it folded (a shared list, one
 * cell per event, never a snapshot per revision), so "revert to revision N" (N: the 0-based
 * revision of an event in the stream) folds them again up to N and is exact.
 *
 * Edits made by agents and by editing text are `ApplyEdits`: a list of `CompositionEdit`s planned
 * on one revision, decided together into one event per edit, each carrying that revision
 * (`planned_on`), and refused as a `conflict` when the composition moved on since, so a retried
 * or concurrent edit never removes content it did not see.
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
/** The revision an edit was planned on; absent (null once read through Avro) on events of single edits. */
type PlannedOn = { readonly planned_on?: number | null };
/** Only composition time [from, to) was kept. */
export type CompositionRangeKept = {
  readonly type: 'CompositionRangeKept';
  readonly data: { readonly from: number; readonly to: number } & PlannedOn & At;
};
/** Every range of composition time (as it was before this edit; sorted, apart) was removed at once. */
export type CompositionRangesCut = {
  readonly type: 'CompositionRangesCut';
  readonly data: { readonly ranges: readonly TimeSpan[]; readonly planned_on: number } & At;
};
export type CompositionMarkersAdded = {
  readonly type: 'CompositionMarkersAdded';
  readonly data: { readonly markers: readonly Marker[]; readonly planned_on: number } & At;
};
/** Audio enhancement publish renders: loudness target in LUFS (null: none) and noise reduction. */
export type CompositionAudioSet = {
  readonly type: 'CompositionAudioSet';
  readonly data: AudioSettings & { readonly planned_on: number } & At;
};
/** The composition is gone from its project; only a revert to an earlier revision brings it back. */
export type CompositionDeleted = { readonly type: 'CompositionDeleted'; readonly data: { readonly planned_on: number } & At };
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
export type CompositionRenamed = { readonly type: 'CompositionRenamed'; readonly data: { readonly name: string } & PlannedOn & At };
export type CompositionMarkerAdded = { readonly type: 'CompositionMarkerAdded'; readonly data: Marker & At };
/**
 * The composition became exactly what it was after stream revision `to_revision`. The event
 * carries that snapshot, so a reader (a read model, a data team replaying the stream) needs no
 * history of its own to apply it.
 */
export type CompositionReverted = {
  readonly type: 'CompositionReverted';
  readonly data: { readonly to_revision: number } & CompositionSnapshot & PlannedOn & At;
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
  | CompositionReverted
  | CompositionRangesCut
  | CompositionMarkersAdded
  | CompositionAudioSet
  | CompositionDeleted;

// ---------------------------------------------------------------- state

export type AudioSettings = { readonly loudness_lufs: number | null; readonly noise_reduction: boolean };
export const NO_AUDIO_SETTINGS: AudioSettings = { loudness_lufs: null, noise_reduction: false };

/** What an edit can change, as it was after one revision. */
export type CompositionSnapshot = {
  readonly name: string;
  readonly clips: readonly Clip[];
  readonly markers: readonly Marker[];
  readonly audio: AudioSettings;
  readonly deleted: boolean;
};

/** The events folded so far, newest first: one cell per event, shared by every later state. */
export type EventLog = { readonly event: CompositionEvent; readonly prev: EventLog } | null;

export type CompositionState =
  | { readonly exists: false }
  | ({
      readonly exists: true;
      readonly updated_at: string;
      /** Revision of the last event folded (0: the creation). */
      readonly revision: number;
      /** What reverts fold again; null where the state was rebuilt from a read model's document. */
      readonly log: EventLog;
    } & Omit<CompositionCreated['data'], keyof CompositionSnapshot> &
      CompositionSnapshot);

type Existing = Extract<CompositionState, { exists: true }>;

export const initialCompositionState = (): CompositionState => ({ exists: false });

const snapshotOf = (s: CompositionSnapshot): CompositionSnapshot => ({
  name: s.name,
  clips: s.clips,
  markers: s.markers,
  audio: s.audio,
  deleted: s.deleted,
});

/** What an edit event makes of a snapshot; an event that is no edit (or unknown here) changes nothing. */
export function evolveSnapshot(s: CompositionSnapshot, event: CompositionEvent): CompositionSnapshot {
  switch (event.type) {
    case 'CompositionCreated':
      return s;
    case 'CompositionRangeCut': {
      const { from, to } = event.data;
      return { ...s, clips: cutRange(s.clips, from, to), markers: cutMarkers(s.markers, from, to) };
    }
    case 'CompositionRangesCut': {
      const { ranges } = event.data;
      return { ...s, clips: rangesCut(s.clips, event), markers: cutRangesMarkers(s.markers, ranges) };
    }
    case 'CompositionRangeKept': {
      const { from, to } = event.data;
      return { ...s, clips: keepRange(s.clips, from, to), markers: keepMarkers(s.markers, from, to) };
    }
    case 'CompositionClipsInserted': {
      const { time, clips } = event.data;
      return { ...s, clips: insertClips(s.clips, time, clips), markers: insertMarkers(s.markers, time, compositionDuration(clips)) };
    }
    case 'CompositionClipsRemoved': {
      const { indexes } = event.data;
      return { ...s, clips: removeClips(s.clips, indexes), markers: removeClipMarkers(s.clips, s.markers, indexes) };
    }
    case 'CompositionClipsReordered': {
      const { order } = event.data;
      return { ...s, clips: reorderClips(s.clips, order), markers: reorderMarkers(s.clips, s.markers, order) };
    }
    case 'CompositionRenamed':
      return { ...s, name: event.data.name };
    case 'CompositionMarkerAdded':
      return { ...s, markers: addMarker(s.markers, { time: event.data.time, label: event.data.label }) };
    case 'CompositionMarkersAdded':
      return { ...s, markers: event.data.markers.reduce<Marker[]>(addMarker, [...s.markers]) };
    case 'CompositionAudioSet':
      return { ...s, audio: { loudness_lufs: event.data.loudness_lufs, noise_reduction: event.data.noise_reduction } };
    case 'CompositionDeleted':
      return { ...s, deleted: true };
    case 'CompositionReverted': {
      // Written before audio settings and deletion existed: the composition then had neither.
      const { name, clips, markers, audio = NO_AUDIO_SETTINGS, deleted = false } = event.data;
      return { name, clips, markers, audio: audio ?? NO_AUDIO_SETTINGS, deleted: deleted ?? false };
    }
    default:
      return ignoreUnknown(event, s);
  }
}

/**
 * The clips after a cut of many ranges, remembered per event for the list it was last applied to.
 * Deciding an edit applies its event three times to the same list (`ifChanged`, the next edit's
 * snapshot, the new state), and 300 ranges on a long composition cost a few milliseconds each
 * time. A cache of a pure function, not state: clip lists are never mutated.
 */
const cutsByEvent = new WeakMap<CompositionRangesCut, { readonly clips: readonly Clip[]; readonly after: Clip[] }>();

function rangesCut(clips: readonly Clip[], event: CompositionRangesCut): Clip[] {
  const kept = cutsByEvent.get(event);
  if (kept?.clips === clips) return kept.after;
  const after = cutRanges(clips, event.data.ranges);
  cutsByEvent.set(event, { clips, after });
  return after;
}

/** When an event happened, for `updated_at` (an event without a time leaves it). */
const timeOf = (event: CompositionEvent): string | null => {
  const at = (event.data as { at?: unknown }).at;
  return typeof at === 'string' ? at : null;
};

function created(event: CompositionCreated): Existing {
  // Read as JSON from the store, an event written before markers existed has none.
  const { markers = [] } = event.data;
  const extra = { markers, audio: NO_AUDIO_SETTINGS, deleted: false };
  return { exists: true, ...event.data, ...extra, updated_at: event.data.created_at, revision: 0, log: { event, prev: null } };
}

/** Every event occupies a revision, even one that changes nothing this version knows, so revert targets stay aligned. */
export function evolveComposition(state: CompositionState, event: CompositionEvent): CompositionState {
  if (!state.exists) return event.type === 'CompositionCreated' ? created(event) : state;
  const updated_at = event.type === 'CompositionCreated' ? state.updated_at : (timeOf(event) ?? state.updated_at);
  const log = { event, prev: state.log };
  return { ...state, ...evolveSnapshot(snapshotOf(state), event), updated_at, revision: state.revision + 1, log };
}

const isCut = (e: CompositionEvent): e is CompositionRangeCut | CompositionRangesCut =>
  e.type === 'CompositionRangeCut' || e.type === 'CompositionRangesCut';
/** Events that leave the clip list as it is. */
const CLIPS_KEPT: ReadonlySet<CompositionEvent['type']> = new Set([
  'CompositionRenamed',
  'CompositionMarkerAdded',
  'CompositionMarkersAdded',
  'CompositionAudioSet',
  'CompositionDeleted',
] as const);
const foldsInPlace = (e: CompositionEvent) => isCut(e) || CLIPS_KEPT.has(e.type);

/**
 * The same state as `events.reduce(evolveComposition, state)`, without copying the clip list per
 * event: a run of cuts (what agents and text edits append, thousands on a long composition),
 * and of edits that leave the clips as they are, is applied in place on one working list
 * (`cutsInPlace`), handed over when the run ends.
 */
export function foldComposition(state: CompositionState, events: readonly CompositionEvent[]): CompositionState {
  let s = state;
  for (let i = 0; i < events.length;) {
    if (!s.exists || !isCut(events[i])) {
      s = evolveComposition(s, events[i++]);
      continue;
    }
    const clips = cutsInPlace(s.clips);
    let rest = snapshotOf(s); // all but the clips, which are cut in place
    let { log, updated_at } = s;
    const first = i;
    for (; i < events.length && foldsInPlace(events[i]); i++) {
      const e = events[i];
      if (isCut(e)) {
        const ranges = e.type === 'CompositionRangesCut' ? e.data.ranges : [e.data];
        for (const r of [...mergeRanges(ranges)].reverse()) clips.cut(r.from, r.to);
        const markers =
          e.type === 'CompositionRangesCut' ? cutRangesMarkers(rest.markers, ranges) : cutMarkers(rest.markers, e.data.from, e.data.to);
        rest = { ...rest, markers };
      } else rest = evolveSnapshot(rest, e);
      log = { event: e, prev: log };
      updated_at = timeOf(e) ?? updated_at;
    }
    s = { ...s, ...rest, clips: clips.done(), log, updated_at, revision: s.revision + (i - first) };
  }
  return s;
}

/** The events a log holds, oldest first. */
function eventsOf(log: EventLog): CompositionEvent[] {
  const out: CompositionEvent[] = [];
  for (let cell = log; cell; cell = cell.prev) out.push(cell.event);
  return out.reverse();
}

/** What the composition was after `revision`, folded again from its log (null: no such revision, or no log). */
export function snapshotAt(state: Existing, revision: number): CompositionSnapshot | null {
  const events = eventsOf(state.log);
  if (events.length !== state.revision + 1 || revision < 0 || revision > state.revision) return null;
  const then = foldComposition(initialCompositionState(), events.slice(0, revision + 1));
  return then.exists ? snapshotOf(then) : null;
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
/**
 * A turn's edits (an agent's, an edit by text), all planned on revision `planned_on`: one event
 * per edit that changes something, each edit seeing the ones before it; none when any is refused.
 */
export type ApplyEdits = { readonly type: 'ApplyEdits'; readonly edits: readonly CompositionEdit[]; readonly planned_on: number } & Now;

export type CompositionCommand =
  CreateComposition | CutRange | KeepRange | InsertClips | RemoveClips | ReorderClips | Rename | AddMarker | Revert | ApplyEdits;

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
function ifChanged(state: CompositionSnapshot, event: CompositionEvent): CompositionEvent[] {
  const after = evolveSnapshot(state, event);
  const unchanged =
    after.name === state.name &&
    sameClips(after.clips, state.clips) &&
    sameMarkers(after.markers, state.markers) &&
    after.audio.loudness_lufs === state.audio.loudness_lufs &&
    after.audio.noise_reduction === state.audio.noise_reduction &&
    after.deleted === state.deleted;
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
  if (command.type === 'ApplyEdits') return applyEdits(command, state);
  if (state.deleted && command.type !== 'Revert') return reject(notFound('composition was deleted'));
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
      const then = snapshotAt(state, to);
      if (!then) return reject(new AppError('internal_error', 'the composition was folded without its events; cannot revert'));
      return ifChanged(state, { type: 'CompositionReverted', data: { to_revision: to, ...then, at } });
    }
    default:
      return assertNever(command);
  }
}

// ---------------------------------------------------------------- edits planned on a revision

/** Where an edit is decided: the composition as the edits before it left it, and what a revert restores. */
type EditContext = {
  readonly planned_on: number;
  readonly at: string;
  readonly snapshotAt: (revision: number) => CompositionSnapshot | null;
};

/** A loudness target publish can render (ffmpeg `loudnorm` takes -70 to -5 LUFS). */
const LOUDNESS_RANGE = { min: -70, max: -5 };

function checkRanges(ranges: readonly TimeSpan[], duration: number): Checked<TimeSpan[]> {
  if (ranges.length === 0) return refuse('ranges must not be empty');
  const out: TimeSpan[] = [];
  for (const [i, r] of ranges.entries()) {
    const range = rangeIn(r.from, r.to, duration);
    if (isRejection(range)) return refuse(`ranges[${i}]: ${range.error.message}`);
    out.push(range);
  }
  return mergeRanges(out);
}

function checkAudio(lufs: number | null, noiseReduction: boolean): Rejection | null {
  if (lufs !== null && (!Number.isFinite(lufs) || lufs < LOUDNESS_RANGE.min || lufs > LOUDNESS_RANGE.max))
    return refuse(`loudness_lufs must be null or a number from ${LOUDNESS_RANGE.min} to ${LOUDNESS_RANGE.max}`);
  return typeof noiseReduction === 'boolean' ? null : refuse('noise_reduction must be true or false');
}

/** The events of one edit on `s` (none when it changes nothing), or why it is refused. */
export function decideEdit(s: CompositionSnapshot, edit: CompositionEdit, ctx: EditContext): CompositionEvent[] | Rejection {
  if (s.deleted && edit.kind !== 'revert') return reject(notFound('composition was deleted'));
  const { planned_on, at } = ctx;
  const duration = compositionDuration(s.clips);
  switch (edit.kind) {
    case 'cut': {
      const ranges = checkRanges(edit.ranges, duration);
      if (isRejection(ranges)) return ranges;
      return ifChanged(s, { type: 'CompositionRangesCut', data: { ranges, planned_on, at } });
    }
    case 'keep': {
      const range = rangeIn(edit.from, edit.to, duration);
      if (isRejection(range)) return range;
      return ifChanged(s, { type: 'CompositionRangeKept', data: { ...range, planned_on, at } });
    }
    case 'rename':
      if (typeof edit.name !== 'string' || edit.name.trim() === '') return refuse('name must not be empty');
      return ifChanged(s, { type: 'CompositionRenamed', data: { name: edit.name, planned_on, at } });
    case 'add_markers': {
      const markers = checkMarkers(edit.markers, duration);
      if (isRejection(markers)) return markers;
      if (markers.some((m) => m.label.trim() === '')) return refuse('markers: a label must not be empty');
      // A marker already there is a retry, not a second marker.
      const fresh = markers.filter((m) => !s.markers.some((x) => x.time === m.time && x.label === m.label));
      return fresh.length === 0 ? [] : [{ type: 'CompositionMarkersAdded', data: { markers: fresh, planned_on, at } }];
    }
    case 'set_audio': {
      const bad = checkAudio(edit.loudness_lufs, edit.noise_reduction);
      if (bad) return bad;
      const data = { loudness_lufs: edit.loudness_lufs, noise_reduction: edit.noise_reduction, planned_on, at };
      return ifChanged(s, { type: 'CompositionAudioSet', data });
    }
    case 'delete':
      return [{ type: 'CompositionDeleted', data: { planned_on, at } }];
    case 'revert': {
      const to = edit.to_revision;
      if (!Number.isInteger(to) || to < 0 || to > planned_on)
        return refuse(`to_revision must be a revision from 0 to ${planned_on} (the revision the edits were planned on)`);
      const then = ctx.snapshotAt(to);
      if (!then) return refuse(`to_revision ${to}: what the composition was then is not known here`);
      return ifChanged(s, { type: 'CompositionReverted', data: { to_revision: to, ...then, planned_on, at } });
    }
    default:
      return assertNever(edit);
  }
}

/** `planned_on` must be the composition's revision: an older one means it moved on since the edits were planned. */
function applyEdits(command: ApplyEdits, state: Existing): CompositionEvent[] | Rejection {
  const { planned_on } = command;
  if (!Number.isInteger(planned_on) || planned_on < 0) return refuse('planned_on must be a non-negative integer');
  if (planned_on < state.revision)
    return reject(conflict(`the composition moved on: edits planned on revision ${planned_on}, it is at ${state.revision}`, 'moved_on'));
  if (planned_on > state.revision)
    return refuse(`planned_on ${planned_on} does not exist (the composition is at revision ${state.revision})`);
  const ctx: EditContext = { planned_on, at: command.now, snapshotAt: (r) => snapshotAt(state, r) };
  const events: CompositionEvent[] = [];
  let s = snapshotOf(state);
  for (const edit of command.edits) {
    const decided = decideEdit(s, edit, ctx);
    if (isRejection(decided)) return decided;
    events.push(...decided);
    s = decided.reduce(evolveSnapshot, s);
  }
  return events;
}

export const compositionDecider: Decider<CompositionCommand, CompositionEvent, CompositionState> = {
  initialState: initialCompositionState,
  evolve: evolveComposition,
  decide: decideComposition,
  fold: foldComposition,
};
