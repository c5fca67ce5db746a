import type { Decider } from './decider';
import { AppError, assertNever, ignoreUnknown, reject, type Rejection } from './errors';
import type { AccessLevel } from './tenancy';

/**
 * A publication (issue 21): what one (composition, media type) is published as, its own stream
 * `publication-<composition_id>-<video|audio>`. SPEC's republish rule falls out of the stream's
 * name: a second publish of the same composition and media type lands on the same stream and
 * keeps its slug, so its share URL; Video and Audio are two streams, two URLs. (The composition
 * id is a UUID unique across projects, so the project need not be in the name.)
 *
 * `PublicationStarted` is written when a publish job starts its work: from then the share URL
 * exists and reads `processing` (until a first render) or keeps serving the previous render.
 * `PublicationRendered` is written when the render is stored, before the job stops, so a job
 * that reads `stopped` has its render readable. A job that fails or is cancelled writes nothing
 * more: the read side sees the started job ended without a render (`failed` when there is no
 * earlier render, else the earlier render is still served).
 */

export type PublishMediaType = 'Video' | 'Audio';

/** Who published, as the metadata endpoint shows it (names from the token that created the job). */
export type Publisher = { readonly user_id: string; readonly first_name: string; readonly last_name: string };

export type PublicationStarted = {
  readonly type: 'PublicationStarted';
  readonly data: {
    /** `<composition_id>-<video|audio>`: the stream's key. */
    readonly publication_id: string;
    /** The share URL's last segment; chosen by the first publish, kept by every republish. */
    readonly slug: string;
    readonly project_id: string;
    readonly drive_id: string;
    readonly composition_id: string;
    readonly media_type: PublishMediaType;
    readonly access_level: AccessLevel;
    /** The publish job now rendering. */
    readonly job_id: string;
    readonly published_by: Publisher;
    readonly started_at: string;
  };
};

/** A finished render, stored in the blob store, now what the share URL serves. */
export type PublishedRender = {
  readonly job_id: string;
  /** Blob key of the MP4 (Video) or M4A (Audio). */
  readonly blob_key: string;
  /** Blob key of the WebVTT captions of the composition as rendered. */
  readonly captions_blob_key: string;
  readonly content_type: string;
  readonly size_bytes: number;
  readonly duration_seconds: number;
  readonly width: number | null;
  readonly height: number | null;
  /** The page's and the metadata's title (the project's name when rendered). */
  readonly title: string;
  readonly rendered_at: string;
};

export type PublicationRendered = {
  readonly type: 'PublicationRendered';
  readonly data: { readonly publication_id: string; readonly slug: string } & PublishedRender;
};

export type PublicationEvent = PublicationStarted | PublicationRendered;

// ---------------------------------------------------------------- state

export type PublicationState =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly started: PublicationStarted['data'];
      /** The render served now, or null before the first one. */
      readonly render: PublishedRender | null;
      /** When the first render was ready (SPEC `published_at`), or null. */
      readonly published_at: string | null;
    };

export const initialPublicationState = (): PublicationState => ({ exists: false });

export function evolvePublication(state: PublicationState, event: PublicationEvent): PublicationState {
  switch (event.type) {
    case 'PublicationStarted':
      // A republish: the newest start (job, access level, publisher); the slug stays the first one's.
      return state.exists
        ? { ...state, started: { ...event.data, slug: state.started.slug } }
        : { exists: true, started: event.data, render: null, published_at: null };
    case 'PublicationRendered': {
      if (!state.exists) return state;
      const { publication_id: _p, slug: _s, ...render } = event.data;
      return { ...state, render, published_at: state.published_at ?? render.rendered_at };
    }
    default:
      return ignoreUnknown(event, state);
  }
}

// ---------------------------------------------------------------- commands

/** A publish job starts rendering; `slug` is used only when the publication is new. */
export type StartPublication = {
  readonly type: 'StartPublication';
  readonly publication: Omit<PublicationStarted['data'], 'started_at' | 'publication_id'>;
  readonly now: string;
};
/** The job's render is stored. */
export type RecordRender = { readonly type: 'RecordRender'; readonly render: Omit<PublishedRender, 'rendered_at'>; readonly now: string };
export type PublicationCommand = StartPublication | RecordRender;

export function decidePublication(command: PublicationCommand, state: PublicationState): PublicationEvent[] | Rejection {
  switch (command.type) {
    case 'StartPublication': {
      const p = command.publication;
      const id = publicationIdOf(p.composition_id, p.media_type);
      // The same job starting again (a retried attempt): nothing new.
      if (state.exists && state.started.job_id === p.job_id) return [];
      const slug = state.exists ? state.started.slug : p.slug;
      return [{ type: 'PublicationStarted', data: { ...p, publication_id: id, slug, started_at: command.now } }];
    }
    case 'RecordRender': {
      if (!state.exists) return reject(new AppError('not_found', 'publication has not started'));
      // Written once per job; a render of a job a newer republish superseded is not served.
      if (state.render?.job_id === command.render.job_id) return [];
      if (state.started.job_id !== command.render.job_id) {
        return reject(
          new AppError('conflict', 'a newer publish of this composition started; its render replaces this one', {
            extra: { state: 'superseded' },
          }),
        );
      }
      const data = { publication_id: state.started.publication_id, slug: state.started.slug, ...command.render, rendered_at: command.now };
      return [{ type: 'PublicationRendered', data }];
    }
    default:
      return assertNever(command);
  }
}

export const publicationDecider: Decider<PublicationCommand, PublicationEvent, PublicationState> = {
  initialState: initialPublicationState,
  evolve: evolvePublication,
  decide: decidePublication,
};

// ---------------------------------------------------------------- names

/** The publication of `compositionId` as `mediaType`: its stream's key. */
export const publicationIdOf = (compositionId: string, mediaType: PublishMediaType): string =>
  `${compositionId}-${mediaType.toLowerCase()}`;

/** Slugs are 16 base64url characters (96 random bits): unguessable, so an unlisted link is a secret. */
export const SLUG = /^[A-Za-z0-9_-]{16}$/;

/** Where the share page of `slug` lives. */
export const SHARE_PATH = '/s';
export const shareUrl = (webUrl: string, slug: string): string => `${webUrl.replace(/\/+$/, '')}${SHARE_PATH}/${slug}`;

/** The state a publication reads as (SPEC: Published project), given whether its newest job ended without a render. */
export type PublicationReadState = 'processing' | 'published' | 'failed';
export function publicationReadState(p: { readonly render: unknown | null }, newestJobEndedWithoutRender: boolean): PublicationReadState {
  if (p.render !== null) return 'published';
  return newestJobEndedWithoutRender ? 'failed' : 'processing';
}

/** `HH:MM:SS` of whole seconds (SPEC `duration_formatted`). */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}
