import { AppError, assertNever, ignoreUnknown, invalidInput, reject, type Rejection } from './errors';
import { shortIdOf } from './ids';

/** A project: media files and compositions (DESIGN §4). */

// ---------------------------------------------------------------- events

export type TeamAccess = 'edit' | 'comment' | 'view' | 'none';
export type ProjectMediaType = 'audio' | 'video' | 'image' | 'sequence' | 'other';

export type Track = { readonly media: string; readonly offset: number };
export type Clip = { readonly media: string; readonly in: number; readonly out: number };

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
    readonly created_at: string;
  };
};
export type MediaImported = {
  readonly type: 'MediaImported';
  readonly data: {
    readonly project_id: string;
    readonly ref: string;
    readonly media_type: ProjectMediaType;
    readonly duration_seconds: number | null;
    readonly blob_key: string | null;
    readonly size_bytes: number | null;
    readonly has_audio: boolean;
    readonly has_video: boolean;
    readonly source_url: string | null;
    readonly language: string | null;
    readonly tracks: readonly Track[] | null;
    readonly job_id: string;
    readonly imported_at: string;
  };
};
export type CompositionCreated = {
  readonly type: 'CompositionCreated';
  readonly data: {
    readonly project_id: string;
    readonly composition_id: string;
    readonly short_id: string;
    readonly name: string;
    readonly clips: readonly Clip[];
    readonly width: number;
    readonly height: number;
    /** What asked for it ("<job_id>#<index>"), so a retried job creates it once. */
    readonly origin: string;
    readonly created_at: string;
  };
};

export type ProjectEvent = ProjectCreated | MediaImported | CompositionCreated;

// ---------------------------------------------------------------- state

export type MediaFile = Omit<MediaImported['data'], 'project_id'>;
export type Composition = Omit<CompositionCreated['data'], 'project_id'>;

export type ProjectState =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly project: ProjectCreated['data'];
      /** By media reference. A Map: references are user-chosen names (`constructor` is a valid one). */
      readonly media: ReadonlyMap<string, MediaFile>;
      readonly compositions: readonly Composition[];
      readonly updatedAt: string;
    };

export const initialProjectState = (): ProjectState => ({ exists: false });

export function evolveProject(state: ProjectState, event: ProjectEvent): ProjectState {
  switch (event.type) {
    case 'ProjectCreated':
      return { exists: true, project: event.data, media: new Map(), compositions: [], updatedAt: event.data.created_at };
    case 'MediaImported': {
      if (!state.exists) return state;
      const { project_id: _p, ...file } = event.data;
      return { ...state, media: new Map(state.media).set(file.ref, file), updatedAt: file.imported_at };
    }
    case 'CompositionCreated': {
      if (!state.exists) return state;
      const { project_id: _p, ...composition } = event.data;
      return { ...state, compositions: [...state.compositions, composition], updatedAt: composition.created_at };
    }
    default:
      return ignoreUnknown(event, state);
  }
}

/** Duration of a composition: its clips laid end to end. */
export const compositionDuration = (clips: readonly Clip[]): number =>
  Math.round(clips.reduce((sum, c) => sum + (c.out - c.in), 0) * 1000) / 1000;

/** `video` when any clip's media has video (a sequence: any of its tracks). */
export function compositionMediaType(clips: readonly Clip[], media: ReadonlyMap<string, MediaFile>): 'video' | 'audio' {
  const hasVideo = (ref: string, depth = 0): boolean => {
    const m = media.get(ref);
    if (!m || depth > 4) return false;
    return m.has_video || (m.tracks ?? []).some((t) => hasVideo(t.media, depth + 1));
  };
  return clips.some((c) => hasVideo(c.media)) ? 'video' : 'audio';
}

// ---------------------------------------------------------------- commands

export type CreateProject = {
  readonly type: 'CreateProject';
  readonly project: Omit<ProjectCreated['data'], 'created_at'>;
  readonly now: string;
};
export type AddMedia = { readonly type: 'AddMedia'; readonly file: Omit<MediaImported['data'], 'imported_at'>; readonly now: string };
export type CreateComposition = {
  readonly type: 'CreateComposition';
  readonly origin: string;
  readonly name: string;
  readonly clipMedia: readonly string[];
  readonly width: number;
  readonly height: number;
  /** Candidate UUIDs in order of preference; the first whose short id is free in the project wins. */
  readonly candidateIds: readonly string[];
  readonly now: string;
};

export type ProjectCommand = CreateProject | AddMedia | CreateComposition;

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
      return [{ type: 'MediaImported', data: { ...command.file, imported_at: command.now } }];
    }
    case 'CreateComposition': {
      if (!state.exists) return reject(new AppError('not_found', 'project does not exist'));
      if (state.compositions.some((c) => c.origin === command.origin)) return [];
      const clips: Clip[] = [];
      for (const ref of command.clipMedia) {
        const m = state.media.get(ref);
        if (m && m.duration_seconds !== null) clips.push({ media: ref, in: 0, out: m.duration_seconds });
      }
      const taken = new Set(state.compositions.map((c) => c.short_id));
      const id = command.candidateIds.find((c) => !taken.has(shortIdOf(c)));
      if (!id) return reject(new AppError('internal_error', 'no free composition short id among candidates', { retriable: true }));
      return [
        {
          type: 'CompositionCreated',
          data: {
            project_id: state.project.project_id,
            composition_id: id,
            short_id: shortIdOf(id),
            name: command.name,
            clips,
            width: command.width,
            height: command.height,
            origin: command.origin,
            created_at: command.now,
          },
        },
      ];
    }
    default:
      return assertNever(command);
  }
}
