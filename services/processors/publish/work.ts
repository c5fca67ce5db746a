import { signedExpiry } from '../../../lib/app/signed-urls';
import { fileStem } from '../../../lib/domain/file-name';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { wordsOfClips } from '../../../lib/app/composition-words';
import { signDownloadUrl } from '../../../lib/app/downloads';
import { renderCached } from '../../../lib/app/render-cache';
import { AppError } from '../../../lib/domain/errors';
import { projectUrl, streams } from '../../../lib/domain/ids';
import type { PublishResult } from '../../../lib/domain/job';
import type { ProjectState } from '../../../lib/domain/project';
import { publicationDecider, publicationIdOf, shareUrl, type PublishedRender } from '../../../lib/domain/publication';
import type { RenderSpec } from '../../../lib/domain/render-plan';
import { missingMedia, renderMediaOf } from '../../../lib/domain/render-sources';
import { eachCue } from '../../../lib/domain/transcript/cues';
import { renderVtt } from '../../../lib/domain/transcript/formats';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { Clock, Ids } from '../../../lib/ports/clock';
import type { EventStore } from '../../../lib/ports/event-store';
import type { Renderer } from '../../../lib/ports/renderer';
import type { ProcessorHandlers } from '../handlers';
import { handleInBatch } from '../../../lib/app/command-handler';
import type { JobContext, WorkOutcome } from '../job-runner';

/**
 * One publish (issue 21): the publication is started (its share URL reads `processing`, or keeps
 * serving the previous render), the composition as it is now is rendered, or found rendered
 * already (lib/app/render-cache.ts: an unchanged republish runs no ffmpeg), its captions are
 * written beside it, and the render is recorded on the publication before the job stops, so a
 * job that reads `stopped` has its render served. A cancel kills ffmpeg (the renderer leaves no
 * file) and records nothing more: the share URL serves the previous render, or reads `failed`.
 */

export type PublishWorkDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  blobs: BlobStore;
  on: ProcessorHandlers;
  webUrl: string;
  publish: {
    renderer: Renderer;
    /** Download URLs: signed with SIGNING_SECRET under BASE_URL, valid DOWNLOAD_URL_TTL seconds. */
    downloads: { baseUrl: string; secret: string; ttlSeconds: number };
  };
};

type Ctx = JobContext<'publish'>;

const CONTENT_TYPE = { Video: 'video/mp4', Audio: 'audio/mp4' } as const;
const EXTENSION = { Video: 'mp4', Audio: 'm4a' } as const;

export async function runPublish(deps: PublishWorkDeps, ctx: Ctx): Promise<WorkOutcome<'publish'>> {
  const { job } = ctx;
  const { request } = job;
  const project = await loadProject(deps, job.project_id);
  const composition = await loadComposition(deps, request.composition_id);
  const spec = renderSpecOf(project, composition, request);
  const publications = deps.on.publications;
  const publicationId = publicationIdOf(request.composition_id, request.media_type);
  const write = {
    newId: deps.ids.uuidv7,
    metadata: { partition_key: job.project_id, drive_id: job.drive_id, causation_id: job.job_id },
  };
  // Behind the job's fence: a job cancelled meanwhile starts and records nothing.
  const onPublication = { handler: publications, decider: publicationDecider, streamOf: streams.publication };
  const fenced = { before: async () => [await ctx.fence()] };
  const started = await handleInBatch(
    deps.store,
    onPublication,
    publicationId,
    {
      type: 'StartPublication',
      publication: {
        slug: newSlug(),
        project_id: job.project_id,
        drive_id: job.drive_id,
        composition_id: request.composition_id,
        media_type: request.media_type,
        access_level: request.access_level,
        job_id: job.job_id,
        published_by: request.published_by,
      },
      now: deps.clock.now().toISOString(),
    },
    write,
    fenced,
  );
  if (!started.state.exists) throw new Error('a started publication reads as none');
  const slug = started.state.started.slug;
  ctx.log.info({ slug, publication_id: publicationId, media_type: request.media_type }, 'publication started; rendering');

  await ctx.progress('rendering', 0);
  const scope = { driveId: job.drive_id, projectId: job.project_id };
  const onProgress = (fraction: number) => void ctx.progress('rendering', Math.floor(fraction * 100)).catch(() => undefined);
  const made = await renderCached({ renderer: deps.publish.renderer, blobs: deps.blobs }, scope, spec, { signal: ctx.signal, onProgress });
  ctx.signal.throwIfAborted();
  ctx.log.info(
    { blob: made.blobKey, cached: made.cached, seconds: made.durationSeconds },
    made.cached ? 'render found in the cache' : 'rendered',
  );

  const captionsKey = `${made.blobKey}.vtt`;
  const words = await wordsOfClips(deps.blobs, wordSourceOf(project), spec.clips);
  await deps.blobs.put(captionsKey, Readable.from(renderVtt(eachCue(words))), { signal: ctx.signal });
  const size = (await deps.blobs.open(made.blobKey))?.size;
  if (size === undefined)
    throw new AppError('internal_error', `the render ${made.blobKey} is gone from the blob store`, { retriable: true });
  const render: Omit<PublishedRender, 'rendered_at'> = {
    job_id: job.job_id,
    blob_key: made.blobKey,
    captions_blob_key: captionsKey,
    content_type: CONTENT_TYPE[request.media_type],
    size_bytes: size,
    duration_seconds: made.durationSeconds,
    width: made.width,
    height: made.height,
    title: project.project.name,
  };
  await handleInBatch(
    deps.store,
    onPublication,
    publicationId,
    { type: 'RecordRender', render, now: deps.clock.now().toISOString() },
    write,
    fenced,
  );

  const expiresAt = signedExpiry(deps.clock.now(), deps.publish.downloads.ttlSeconds * 1000);
  const { baseUrl, secret } = deps.publish.downloads;
  const filename = `${fileStem(project.project.name, 'render')}.${EXTENSION[request.media_type]}`;
  const target = { blob: made.blobKey, filename, contentType: render.content_type };
  const result: PublishResult = {
    status: 'success',
    composition_id: request.composition_id,
    share_url: shareUrl(deps.webUrl, slug),
    download_url: signDownloadUrl(baseUrl, secret, target, expiresAt),
    download_url_expires_at: expiresAt.toISOString(),
    media_type: request.media_type,
  };
  return { result, projectUrl: projectUrl(deps.webUrl, job.project_id, composition.short_id) };
}

type Project = Extract<ProjectState, { exists: true }>;

async function loadProject(deps: PublishWorkDeps, projectId: string): Promise<Project> {
  const { state } = await deps.on.projects.load(projectId);
  if (!state.exists) throw new AppError('not_found', `project ${projectId} no longer exists`, { retriable: false });
  return state;
}

async function loadComposition(deps: PublishWorkDeps, compositionId: string) {
  const { state } = await deps.on.compositions.load(compositionId);
  if (!state.exists || state.deleted) {
    throw new AppError('not_found', `composition ${compositionId} no longer exists`, { retriable: false });
  }
  return state;
}

/** What ffmpeg renders: the composition's clips over the project's media, its frame and audio settings. */
function renderSpecOf(
  project: Project,
  composition: Awaited<ReturnType<typeof loadComposition>>,
  request: Ctx['job']['request'],
): RenderSpec {
  if (composition.clips.length === 0) {
    throw new AppError('unprocessable_entity', `composition ${composition.composition_id} has no clips to publish`, { retriable: false });
  }
  const media = renderMediaOf(project.media);
  const missing = missingMedia(composition.clips, media);
  if (missing.length > 0) {
    throw new AppError('unprocessable_entity', `the composition uses media that cannot be rendered: ${missing.join(', ')}`, {
      retriable: false,
    });
  }
  return {
    clips: composition.clips,
    media,
    mediaType: request.media_type,
    frame: { width: composition.width, height: composition.height },
    ...(request.resolution !== null && { resolution: request.resolution, upscale: true }),
    audio: composition.audio,
  };
}

const wordSourceOf = (project: Project) => (ref: string) => {
  const file = project.media.get(ref);
  return file && { transcript_key: file.transcript?.transcript_key ?? null, tracks: file.tracks };
};

/** 96 random bits, base64url: an unlisted page's link is as hard to guess as a token. */
const newSlug = (): string => randomBytes(12).toString('base64url');
