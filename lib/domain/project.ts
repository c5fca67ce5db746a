import type { Decider } from './decider';
import { AppError, assertNever, ignoreUnknown, invalidInput, reject, type Rejection } from './errors';
import type { Clip } from './edl';
import type { SequenceTrack } from './import';
import { shortIdOf } from './ids';
import { LayeredMap } from './layered-map';

/** A project: media files and compositions (DESIGN §4). */

// ---------------------------------------------------------------- events

export type TeamAccess = 'edit' | 'comment' | 'view' | 'none';
export type ProjectMediaType = 'audio' | 'video' | 'image' | 'sequence' | 'other';

/** Where a project imported through a partner's link came from (SPEC Events 2: the export pages' meta tags). */
export type ProjectPartner = { readonly partner_drive_id: string; readonly source_id: string | null };

export type ProjectCreated = {
  readonly type: 'ProjectCreated';
  readonly data: {
    readonly project_id: string;
    readonly drive_id: string;
    readonly name: string;
    readonly folder_path: string | null;
    readonly team_access: TeamAccess;
    readonly created_by: string;
    readonly job_id: string | null;
    /** Null or absent (events before partner links) unless the project came through a partner's link. */
    readonly partner?: ProjectPartner | null;
    readonly created_at: string;
  };
};
export type MediaImported = {
  readonly type: 'MediaImported';
  readonly data: {
    readonly project_id: string;
    readonly ref: string;
    /** The file's id: an upload item's `asset_id`; for other media, derived from project and reference. Absent on early events. */
    readonly asset_id?: string | null;
    readonly media_type: ProjectMediaType;
    readonly duration_seconds: number | null;
    readonly blob_key: string | null;
    readonly size_bytes: number | null;
    readonly has_audio: boolean;
    readonly has_video: boolean;
    readonly source_url: string | null;
    readonly language: string | null;
    readonly tracks: readonly SequenceTrack[] | null;
    /**
     * What a render needs (issue 21), as probed at import: the picture's stored size, frame rate
     * and rotation (degrees clockwise), the sound's sample rate and channels. Null when the file
     * has none (a sequence: its tracks have them); absent on events from before they were stored.
     */
    readonly width?: number | null;
    readonly height?: number | null;
    readonly frame_rate?: number | null;
    readonly rotation?: number | null;
    readonly sample_rate?: number | null;
    readonly channels?: number | null;
    readonly job_id: string;
    readonly imported_at: string;
  };
};
/** A media file's word-timed transcript, stored as a blob named by its content hash (events stay small). */
export type MediaTranscribed = {
  readonly type: 'MediaTranscribed';
  readonly data: {
    readonly project_id: string;
    readonly ref: string;
    readonly transcript_key: string;
    readonly sha256: string;
    readonly word_count: number;
    readonly language: string | null;
    readonly transcriber: string;
    readonly job_id: string;
    readonly transcribed_at: string;
  };
};
/**
 * A composition joined the project. Its clips, markers and later edits live on its own stream
 * (`composition-<id>`); the project only lists it, and guarantees its short id is unique here.
 */
export type CompositionAdded = {
  readonly type: 'CompositionAdded';
  readonly data: {
    readonly project_id: string;
    readonly composition_id: string;
    readonly short_id: string;
    readonly name: string;
    /** What asked for it ("<job_id>#<index>", "<job_id>#placeholder"), so a retried job adds it once. */
    readonly origin: string;
    readonly created_at: string;
  };
};
/** A member of the drive opened the project (recorded at most once a minute per user). */
export type ProjectViewed = {
  readonly type: 'ProjectViewed';
  readonly data: { readonly project_id: string; readonly user_id: string; readonly viewed_at: string };
};
/**
 * Compositions of the project were edited (an agent turn, an edit by text): their events are on
 * their own streams, so this one records on the project's that it changed, for `updated_at`. It
 * is decided without the project's state (`recordEdit`: it only stamps a time) and appended
 * expecting any revision, in the same batch as the edits it follows, so it adds no conflict point.
 */
export type ProjectEdited = {
  readonly type: 'ProjectEdited';
  readonly data: {
    readonly project_id: string;
    /** The compositions edited, in the order their streams were written. */
    readonly composition_ids: readonly string[];
    /** The agent job that made the edits; null for an edit by text (its user is in the metadata). */
    readonly job_id: string | null;
    readonly edited_at: string;
  };
};
/**
 * Before compositions had their own streams, the project stream held them whole. Still read
 * (as a list entry) so that old projects keep their compositions.
 */
type LegacyCompositionCreated = {
  readonly type: 'CompositionCreated';
  readonly data: CompositionAdded['data'] & { readonly clips: readonly Clip[]; readonly width: number; readonly height: number };
};

export type ProjectEvent = ProjectCreated | MediaImported | MediaTranscribed | CompositionAdded | ProjectViewed | ProjectEdited;

// ---------------------------------------------------------------- state

export type TranscriptRef = Omit<MediaTranscribed['data'], 'project_id' | 'ref' | 'job_id'>;
export type MediaFile = Omit<MediaImported['data'], 'project_id'> & { readonly transcript?: TranscriptRef };
export type CompositionEntry = Omit<CompositionAdded['data'], 'project_id'>;

export type ProjectState =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly project: ProjectCreated['data'];
      /** By media reference. A Map: references are user-chosen names (`constructor` is a valid one). */
      readonly media: ReadonlyMap<string, MediaFile>;
      readonly compositions: readonly CompositionEntry[];
      readonly updatedAt: string;
      /** When each user last viewed it (views do not make a project updated). */
      readonly viewedBy: ReadonlyMap<string, string>;
    };

export const initialProjectState = (): ProjectState => ({ exists: false });

type ProjectFact = ProjectEvent | LegacyCompositionCreated;
type Existing = Extract<ProjectState, { exists: true }>;

/**
 * The state after `events`, the same as reducing them with `evolveProject`, in one pass: the
 * compositions and views are copied at most once, on their first change, and the copy changed in
 * place; the files the events set are laid over the state's as a new version of its LayeredMap,
 * which shares the rest. Copying the map of files per event made a fold quadratic (10,000 files,
 * 30,000 events: 32 s on the event loop of whichever process read the project first after a
 * start), and a copy per fold still cost each import into such a project 3–5 ms.
 */
export function foldProject(state: ProjectState, events: readonly ProjectFact[]): ProjectState {
  // What the fold has so far; the collections are `state`'s until the fold first changes them.
  let base: Existing | null = state.exists ? state : null;
  // Files set by this fold, laid over `base.media` at the end (a LayeredMap: not a copy of them all).
  const files = new Map<string, MediaFile>();
  let compositions: CompositionEntry[] | null = null;
  let viewedBy: Map<string, string> | null = null;
  let updatedAt = base?.updatedAt ?? '';
  let changed = false;
  for (const event of events) {
    switch (event.type) {
      case 'ProjectCreated':
        base = { exists: true, project: event.data, media: LayeredMap.empty(), compositions: [], updatedAt: '', viewedBy: new Map() };
        files.clear();
        compositions = viewedBy = null;
        updatedAt = event.data.created_at;
        break;
      case 'MediaImported': {
        if (!base) continue;
        const { project_id: _p, ...file } = event.data;
        files.set(file.ref, file);
        updatedAt = file.imported_at;
        break;
      }
      case 'MediaTranscribed': {
        const file = base ? (files.get(event.data.ref) ?? base.media.get(event.data.ref)) : undefined;
        if (!base || !file) continue;
        const { project_id: _p, ref: _r, job_id: _j, ...transcript } = event.data;
        files.set(file.ref, { ...file, transcript });
        updatedAt = transcript.transcribed_at;
        break;
      }
      case 'ProjectEdited':
        if (!base) continue;
        updatedAt = event.data.edited_at;
        break;
      case 'ProjectViewed':
        if (!base) continue;
        (viewedBy ??= new Map(base.viewedBy)).set(event.data.user_id, event.data.viewed_at);
        break;
      case 'CompositionAdded':
      case 'CompositionCreated': {
        if (!base) continue;
        const { composition_id, short_id, name, origin, created_at } = event.data;
        (compositions ??= [...base.compositions]).push({ composition_id, short_id, name, origin, created_at });
        updatedAt = created_at;
        break;
      }
      default:
        ignoreUnknown(event, state);
        continue;
    }
    changed = true;
  }
  if (!changed || !base) return state;
  return {
    ...base,
    media: files.size > 0 ? LayeredMap.from(base.media).withAll(files) : base.media,
    compositions: compositions ?? base.compositions,
    viewedBy: viewedBy ?? base.viewedBy,
    updatedAt,
  };
}

export const evolveProject = (state: ProjectState, event: ProjectFact): ProjectState => foldProject(state, [event]);

/** Whether a media reference plays video (a sequence: any of its tracks). */
export function mediaHasVideo(media: ReadonlyMap<string, MediaFile>, ref: string, depth = 0): boolean {
  const m = media.get(ref);
  if (!m || depth > 4) return false;
  return m.has_video || (m.tracks ?? []).some((t) => mediaHasVideo(media, t.media, depth + 1));
}

// ---------------------------------------------------------------- commands

export type CreateProject = {
  readonly type: 'CreateProject';
  readonly project: Omit<ProjectCreated['data'], 'created_at'>;
  readonly now: string;
};
/** Adds a media file, and with it its transcript when it has one (one append: both or neither). */
export type AddMedia = {
  readonly type: 'AddMedia';
  readonly file: Omit<MediaImported['data'], 'imported_at'>;
  readonly transcript?: Omit<TranscriptRef, 'transcribed_at'> | null;
  readonly now: string;
};
/** Lists a new composition in the project with a short id free here; its stream is created next. */
export type AddComposition = {
  readonly type: 'AddComposition';
  readonly origin: string;
  readonly name: string;
  /** Candidate UUIDs in order of preference; the first whose short id is free in the project wins. */
  readonly candidateIds: readonly string[];
  readonly now: string;
};

/** Records that `userId` viewed the project, unless they did less than `VIEW_INTERVAL_MS` ago. */
export type RecordView = { readonly type: 'RecordView'; readonly userId: string; readonly now: string };
export const VIEW_INTERVAL_MS = 60_000;

/**
 * The `ProjectEdited` event of edits to the compositions `compositionIds`, decided
 * without the project's state: it changes nothing a decision reads, so it never conflicts.
 */
export function recordEdit(command: {
  readonly projectId: string;
  readonly compositionIds: readonly string[];
  readonly jobId: string | null;
  readonly now: string;
}): ProjectEdited {
  const ids = [...new Set(command.compositionIds)];
  return {
    type: 'ProjectEdited',
    data: { project_id: command.projectId, composition_ids: ids, job_id: command.jobId, edited_at: command.now },
  };
}

export type ProjectCommand = CreateProject | AddMedia | AddComposition | RecordView;

// ---------------------------------------------------------------- decide

export function decideProject(command: ProjectCommand, state: ProjectState): ProjectEvent[] | Rejection {
  switch (command.type) {
    case 'CreateProject':
      if (state.exists) {
        if (command.project.job_id !== null && state.project.job_id === command.project.job_id) return [];
        return reject(new AppError('conflict', 'project already exists', { extra: { state: 'exists' } }));
      }
      return [{ type: 'ProjectCreated', data: { ...command.project, created_at: command.now } }];
    case 'AddMedia': {
      if (!state.exists) return reject(new AppError('not_found', 'project does not exist'));
      const existing = state.media.get(command.file.ref);
      if (existing) {
        if (existing.job_id === command.file.job_id) return [];
        return reject(invalidInput(`media reference "${command.file.ref}" already exists in the project`));
      }
      const imported: ProjectEvent = { type: 'MediaImported', data: { ...command.file, imported_at: command.now } };
      if (!command.transcript) return [imported];
      const { project_id, ref, job_id } = command.file;
      return [
        imported,
        { type: 'MediaTranscribed', data: { ...command.transcript, project_id, ref, job_id, transcribed_at: command.now } },
      ];
    }
    case 'AddComposition': {
      if (!state.exists) return reject(new AppError('not_found', 'project does not exist'));
      if (state.compositions.some((c) => c.origin === command.origin)) return [];
      const taken = new Set(state.compositions.map((c) => c.short_id));
      const id = command.candidateIds.find((c) => !taken.has(shortIdOf(c)));
      if (!id) return reject(new AppError('internal_error', 'no free composition short id among candidates', { retriable: true }));
      return [
        {
          type: 'CompositionAdded',
          data: {
            project_id: state.project.project_id,
            composition_id: id,
            short_id: shortIdOf(id),
            name: command.name,
            origin: command.origin,
            created_at: command.now,
          },
        },
      ];
    }
    case 'RecordView': {
      if (!state.exists) return reject(new AppError('not_found', 'project does not exist'));
      const last = state.viewedBy.get(command.userId);
      if (last !== undefined && Date.parse(command.now) - Date.parse(last) < VIEW_INTERVAL_MS) return [];
      return [{ type: 'ProjectViewed', data: { project_id: state.project.project_id, user_id: command.userId, viewed_at: command.now } }];
    }
    default:
      return assertNever(command);
  }
}

export const projectDecider: Decider<ProjectCommand, ProjectEvent | LegacyCompositionCreated, ProjectState> = {
  initialState: initialProjectState,
  evolve: evolveProject,
  decide: decideProject,
  fold: foldProject,
};
