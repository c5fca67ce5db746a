import { chooseComposition, resolveCompositionRef } from '../domain/composition-ref';
import { compositionDecider, type CompositionState } from '../domain/composition';
import type { Clip } from '../domain/edl';
import { AppError, forbidden, invalidInput, notFound } from '../domain/errors';
import { projectUrl, streams } from '../domain/ids';
import { jobDecider, type PublishRequest } from '../domain/job';
import { projectDecider, type ProjectState } from '../domain/project';
import type { PublishMediaType } from '../domain/publication';
import type { RenderResolution } from '../domain/render-plan';
import { hasVideoContent } from '../domain/render-sources';
import { DEFAULT_SETTINGS, driveDecider, type AccessLevel } from '../domain/tenancy';
import type { Clock, Ids } from '../ports/clock';
import type { EventStore, StreamAppend } from '../ports/event-store';
import { appendInOrder, commandHandler, decideNew } from './command-handler';
import { IdempotencyKeyTaken } from './idempotency';
import type { Principal } from './tenancy';

/**
 * Accepting a publish (SPEC: POST /jobs/publish; issue 21 item 1): the project, the composition,
 * the media type and the access level are settled here, from the event store, before anything is
 * written; the job then carries a `PublishRequest` with every default applied, so the publish
 * processor decides nothing the caller could have been told about at once.
 */

/** The request body, as schemas/api/publish-request.json admits it. */
export type PublishJobRequest = {
  readonly project_id: string;
  readonly composition_id?: string;
  readonly media_type?: PublishMediaType;
  readonly resolution?: RenderResolution;
  readonly access_level?: AccessLevel;
  readonly callback_url?: string;
};

export type PublishJobResponse = {
  readonly job_id: string;
  readonly drive_id: string;
  readonly drive_name: string | null;
  readonly project_id: string;
  readonly project_url: string;
};

export type PublishAcceptDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  webUrl: string;
  /** Why a callback URL is refused from its text alone (an internal address), or null: as for imports. */
  urlRefusal: (url: string) => string | null;
};

export type PublishAccept = (
  who: Principal,
  body: PublishJobRequest,
  requestId: string,
  idempotency?: { record: (response: PublishJobResponse) => StreamAppend },
) => Promise<PublishJobResponse>;

type Existing<S> = Extract<S, { exists: true }>;
/** A composition of the project as a publish weighs it: its listing and its current clips. */
type Candidate = { readonly id: string; readonly short_id: string; readonly state: CompositionState };

const unprocessable = (message: string) => new AppError('unprocessable_entity', message);
const clipsOf = (c: Candidate): readonly Clip[] => (c.state.exists ? c.state.clips : []);
const deleted = (c: Candidate): boolean => c.state.exists && c.state.deleted;
/** Content, as exports read it too: clips, on a composition not deleted. */
const hasContent = (c: Candidate): boolean => !deleted(c) && clipsOf(c).length > 0;

/** Built once per app, with the handlers of the streams an accept reads. */
export function publishAccept(deps: PublishAcceptDeps): PublishAccept {
  const projects = commandHandler(deps.store, projectDecider, streams.project);
  const compositions = commandHandler(deps.store, compositionDecider, streams.composition);
  const drives = commandHandler(deps.store, driveDecider, streams.drive);

  async function projectOf(who: Principal, projectId: string): Promise<Existing<ProjectState>> {
    const { state } = await projects.load(projectId);
    if (!state.exists) throw notFound(`project ${projectId} does not exist`);
    if (state.project.drive_id !== who.driveId) throw forbidden(`project ${projectId} belongs to another drive`);
    return state;
  }

  const candidate = async (entry: { composition_id: string; short_id: string }): Promise<Candidate> => ({
    id: entry.composition_id,
    short_id: entry.short_id,
    state: (await compositions.load(entry.composition_id)).state,
  });

  /** The composition named (any of the three forms), or the first with content; 404 and 422 as SPEC says. */
  async function compositionOf(project: Existing<ProjectState>, ref: string | undefined): Promise<Candidate> {
    const projectId = project.project.project_id;
    if (ref !== undefined) {
      const id = resolveCompositionRef(ref, { project_id: projectId, compositions: project.compositions }, deps.webUrl);
      const named = await candidate(project.compositions.find((c) => c.composition_id === id)!);
      if (deleted(named)) throw notFound(`composition_id: composition ${id} was deleted`);
      // A composition listed before its stream is written (an import adding it) has no clips yet either.
      if (!hasContent(named)) throw unprocessable(`composition ${id} has no clips: there is nothing to publish`);
      return named;
    }
    const all = await Promise.all(project.compositions.map(candidate));
    const chosen = all.length > 0 ? chooseComposition(all, undefined, { projectId, webUrl: deps.webUrl, hasContent }) : null;
    if (!chosen || !hasContent(chosen)) {
      throw unprocessable(
        `project ${projectId} has no composition with clips to publish (the empty placeholder and deleted ones do not count)`,
      );
    }
    return chosen;
  }

  async function accessLevelOf(who: Principal, asked: AccessLevel | undefined): Promise<AccessLevel> {
    const { state } = await drives.load(who.driveId);
    const settings = state.exists ? state.settings : DEFAULT_SETTINGS;
    const level = asked ?? settings.default_access_level;
    if (!settings.allowed_access_levels.includes(level)) {
      const allowed = settings.allowed_access_levels.join(', ');
      throw forbidden(
        `access_level: "${level}" is not permitted on this drive (allowed: ${allowed})${asked ? '' : ': it is the drive default'}`,
      );
    }
    return level;
  }

  return async (who, body, requestId, idempotency) => {
    checkRequest(body);
    const refused = body.callback_url === undefined ? null : deps.urlRefusal(body.callback_url);
    if (refused) throw invalidInput(`callback_url: refused: ${refused}`);
    // What the request names (404, 400, 422) before what the drive permits (403): the caller fixes those first.
    const project = await projectOf(who, body.project_id);
    const composition = await compositionOf(project, body.composition_id);
    const mediaType = mediaTypeOf(body.media_type, composition, project);
    const accessLevel = await accessLevelOf(who, body.access_level);

    const now = deps.clock.now().toISOString();
    const jobId = deps.ids.uuidv7();
    const url = projectUrl(deps.webUrl, body.project_id, composition.short_id);
    const metadata = { partition_key: body.project_id, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId };
    const request: PublishRequest = {
      composition_id: composition.id,
      media_type: mediaType,
      // The Audio fallback ignores a resolution (an explicit Audio with one was refused above).
      resolution: mediaType === 'Video' ? (body.resolution ?? null) : null,
      access_level: accessLevel,
      published_by: { user_id: who.userId, first_name: who.firstName, last_name: who.lastName },
    };
    const job = {
      job_id: jobId,
      job_type: 'publish' as const,
      drive_id: who.driveId,
      project_id: body.project_id,
      project_url: url,
      created_by: who.userId,
      callback_url: body.callback_url ?? null,
      request,
    };
    const appends = [
      decideNew(streams.job(jobId), jobDecider, { type: 'QueueJob', job, now }, { newId: () => deps.ids.uuidv7(), metadata }),
    ];
    const response: PublishJobResponse = {
      job_id: jobId,
      drive_id: who.driveId,
      drive_name: who.driveName,
      project_id: body.project_id,
      project_url: url,
    };
    if (idempotency) appends.unshift(idempotency.record(response));
    const made = await appendInOrder(deps.store, appends);
    if (idempotency && made[0]?.ok === false) throw new IdempotencyKeyTaken();
    if (made.length < appends.length || made.some((r) => !r.ok)) {
      throw new AppError('unavailable', 'the new job id was taken by another request; send the request again', { retriable: true });
    }
    return response;
  };
}

/** The rule the JSON Schema cannot say: a resolution is for Video. */
function checkRequest(body: PublishJobRequest): void {
  if (body.media_type === 'Audio' && body.resolution !== undefined) {
    throw invalidInput('resolution applies only to media_type Video: leave it out for Audio');
  }
}

/** SPEC: `Video` unless the composition has no video content; then `Audio` when left out, 422 when asked for. */
function mediaTypeOf(asked: PublishMediaType | undefined, composition: Candidate, project: Existing<ProjectState>): PublishMediaType {
  if (asked === 'Audio') return 'Audio';
  if (hasVideoContent(clipsOf(composition), project.media)) return 'Video';
  if (asked === 'Video') {
    throw unprocessable(
      `media_type Video: composition ${composition.id} has no video content (no clip of a video or image file): publish it as Audio or leave media_type out`,
    );
  }
  return 'Audio';
}
