import { fileStem } from '../../lib/domain/file-name';
import type Router from '@koa/router';
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { chooseComposition } from '../../lib/domain/composition-ref';
import { zipLength, zipStream, type ZipEntry } from '../../lib/adapters/zip/zip-stream';
import type { Clip, Marker } from '../../lib/domain/edl';
import { invalidInput, notFound } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import type { SequenceTrack } from '../../lib/domain/import';
import type { MediaImported } from '../../lib/domain/project';
import {
  rateOf,
  renderTimeline,
  stableFileNames,
  type TimelineFormat,
  type TimelineInput,
  type TimelineMedia,
} from '../../lib/domain/timeline';
import type { ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { EventStore } from '../../lib/ports/event-store';
import { COMPOSITIONS } from '../../lib/read-models/compositions';
import type { ProjectMediaEntry, ProjectWithFiles } from '../../lib/read-models/projects';
import { loadProjectView, type ProjectViewDeps } from './project-view';

/**
 * `POST /v1/export/timeline` (issue 22 item 6, beyond the spec): a composition as a timeline other
 * editors open (FCPXML, CMX 3600 EDL, OTIO), or with `?with_media=true` a ZIP of that file and the
 * media it plays under their stable names, streamed. A read, so the query API answers it (the
 * gateways send this one POST here) after the token's writes are projected, as every read.
 */

/** `webUrl`: a `composition_id` may be a project URL of this site. */
export type TimelineExportDeps = ProjectViewDeps & { blobs: BlobStore; schemas: SchemaRegistry; store: EventStore; webUrl: string };

type Body = { project_id: string; composition_id?: string; format: TimelineFormat };

/** What the project stream says of a media file that the read model does not keep (its blob, audio, frame rate). */
type StoredMedia = { readonly blob_key: string | null; readonly has_audio: boolean; readonly rate: TimelineMedia['rate'] };

export function mountTimelineExport(v1: Router, deps: TimelineExportDeps): void {
  v1.post('/export/timeline', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const body = ctx.request.body as Body;
    deps.schemas.assertBody('timeline-export-request', body);
    const query: Record<string, unknown> = { ...ctx.query };
    deps.schemas.assertQuery('timeline-export-query', query);
    const view = await loadProjectView(deps, auth, body.project_id);
    const entry = chooseComposition(view.compositions, body.composition_id, {
      projectId: body.project_id,
      webUrl: deps.webUrl,
      hasContent: (c) => c.clips.length > 0,
    });
    const { input, stored } = await exportInput(deps, view.project, entry.id);
    const file = renderTimeline(body.format, input);
    ctx.set('X-Composition-Id', entry.id);
    const base = fileStem(input.name, 'timeline');
    if (query.with_media === true)
      return sendBundle(ctx, deps.blobs, { name: base + file.extension, text: file.text }, input.media, stored, base);
    ctx.attachment(base + file.extension);
    ctx.type = file.contentType;
    ctx.body = file.text;
  });
}

/** What the timeline is written from: one read of the composition document (clips, markers, name and size of one revision). */
async function exportInput(deps: TimelineExportDeps, project: ProjectWithFiles, compositionId: string) {
  const doc = await deps.read.get(COMPOSITIONS, compositionId);
  if (!doc) throw notFound(`composition ${compositionId} does not exist in this project`);
  const clips = doc.clips as Clip[];
  const stored = await storedMedia(deps.store, project.id);
  const input: TimelineInput = {
    name: String(doc.name),
    width: Number(doc.width) || 1920,
    height: Number(doc.height) || 1080,
    clips,
    markers: (doc.markers ?? []) as Marker[],
    ...timelineMedia(project.media, stored, clips),
  };
  return { input, stored };
}

/**
 * Blob, audio and frame rate per reference, from the project's `MediaImported` events (the last
 * import of a reference wins, as in the read model). `frame_rate` is read when an event has one:
 * probed frame rates are being added to imports (issue 22's other part); until then it is absent.
 */
async function storedMedia(store: EventStore, projectId: string): Promise<Map<string, StoredMedia>> {
  const media = new Map<string, StoredMedia>();
  for (const e of await store.readStream(streams.project(projectId))) {
    if (e.type !== 'MediaImported') continue;
    const d = e.data as MediaImported['data'] & { frame_rate?: unknown };
    media.set(d.ref, { blob_key: d.blob_key, has_audio: d.has_audio, rate: rateOf(d.frame_rate) });
  }
  return media;
}

/**
 * The media files the clips play, a sequence's being its tracks' files, with their stable names
 * (numbered over the whole project, so they never change with the composition); and the
 * sequences the clips play, by reference.
 */
function timelineMedia(
  project: readonly ProjectMediaEntry[],
  stored: ReadonlyMap<string, StoredMedia>,
  clips: readonly Clip[],
): Pick<TimelineInput, 'media' | 'sequences'> {
  const names = stableFileNames(project);
  const byRef = new Map(project.map((m) => [m.ref, m]));
  const entryOf = (ref: string) => {
    const m = byRef.get(ref);
    if (!m) throw notFound(`media ${JSON.stringify(ref)} of the composition is not in the project`);
    return m;
  };
  const media = new Map<string, TimelineMedia>();
  const sequences = new Map<string, readonly SequenceTrack[]>();
  const addFile = (m: ProjectMediaEntry) => {
    const s = stored.get(m.ref);
    const rate = s?.rate ?? null;
    media.set(m.ref, {
      ref: m.ref,
      file: names.get(m.ref)!,
      duration: m.duration,
      has_video: m.has_video,
      has_audio: s?.has_audio ?? m.type !== 'image',
      rate,
    });
  };
  for (const ref of new Set(clips.map((c) => c.media))) {
    const m = entryOf(ref);
    if (!m.tracks) {
      addFile(m);
      continue;
    }
    sequences.set(ref, m.tracks);
    for (const t of m.tracks) {
      const track = entryOf(t.media);
      // The import makes tracks of files only; a history that says otherwise cannot be laid out on lanes.
      if (track.tracks) throw invalidInput(`the sequence ${JSON.stringify(ref)} has a track that is itself a sequence`);
      addFile(track);
    }
  }
  return { media, sequences };
}

/**
 * The timeline file and its media in one ZIP, streamed as it is read. Every blob is opened before
 * the answer starts, so a missing file is a 404, not a broken download.
 */
async function sendBundle(
  ctx: Context,
  blobs: BlobStore,
  timeline: { name: string; text: string },
  media: ReadonlyMap<string, TimelineMedia>,
  stored: ReadonlyMap<string, StoredMedia>,
  base: string,
): Promise<void> {
  const text = Buffer.from(timeline.text, 'utf8');
  const entries: ZipEntry[] = [{ name: timeline.name, size: text.length, open: () => Readable.from([text]) }];
  for (const m of media.values()) {
    const key = stored.get(m.ref)?.blob_key;
    const blob = key ? await blobs.open(key) : null;
    if (!blob) throw notFound(`media ${JSON.stringify(m.ref)} has no stored file to bundle; export without with_media`);
    entries.push({ name: m.file, size: blob.size, open: () => blob.read() });
  }
  ctx.attachment(`${base}.zip`);
  ctx.type = 'application/zip';
  ctx.body = zipStream(entries);
  ctx.length = zipLength(entries); // after the body: a stream body drops a length set before it
}

/** A composition name as a download's file name: no path separators or control characters (Koa encodes the rest per RFC 6266). */
