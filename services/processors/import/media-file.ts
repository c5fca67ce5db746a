import { storeTranscript } from '../../../lib/app/transcripts';
import { AppError } from '../../../lib/domain/errors';
import { acceptMedia } from '../../../lib/domain/media-formats';
import type { AddMedia, MediaFile } from '../../../lib/domain/project';
import type { ProbeResult } from '../../../lib/ports/media';
import type { ImportWorkDeps } from './work';
import type { JobContext } from '../job-runner';

/**
 * A stored file becomes a project media file: probe it, decide whether it is media we import,
 * and transcribe its speech into a transcript blob. What this returns is one `AddMedia`.
 */

export type FileOutcome = Pick<AddMedia, 'file' | 'transcript'>;

/**
 * What a file's `media_status` entry says of its transcript: `skipped` when it has audio and no
 * transcript came of it (only TRANSCRIBER=none answers none), so that a job without transcription
 * does not read as a plain success. A file an earlier attempt imported carries its transcript on
 * the project's media file.
 */
export function transcriptStatus({ file, transcript }: FileOutcome): { transcript?: 'skipped' } {
  const transcribed = transcript ?? (file as Partial<MediaFile>).transcript;
  return file.has_audio && file.media_type !== 'image' && !transcribed ? { transcript: 'skipped' } : {};
}

export type Source = {
  readonly ref: string;
  readonly assetId: string;
  readonly blobKey: string;
  readonly size: number;
  readonly sourceUrl: string | null;
  readonly language: string | null;
};

/** Phases of one file, each reported with the fraction of that phase done. */
export type Phase = 'probing' | 'transcribing';

export async function describeMedia(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  source: Source,
  report: (phase: Phase, fraction: number) => void,
): Promise<FileOutcome> {
  const { signal } = ctx;
  report('probing', 0);
  const path = deps.blobs.localPath(source.blobKey);
  const probe = await deps.prober.probe(path, { signal });
  const accepted = acceptMedia(probe);
  if ('error_message' in accepted) throw new AppError('invalid_input', accepted.error_message);
  const duration = accepted.type === 'image' ? null : (probe.durationSeconds ?? 0);

  let transcript: FileOutcome['transcript'] = null;
  if (probe.hasAudio && accepted.type !== 'image') {
    // Without a transcriber (TRANSCRIBER=none) nothing is transcribed, and the progress does not say it is.
    const shown = deps.transcriber.name !== 'none';
    if (shown) report('transcribing', 0);
    const transcription = await deps.transcriber.transcribe(path, {
      language: source.language,
      signal,
      durationSeconds: duration ?? undefined,
      onProgress: (fraction) => shown && report('transcribing', fraction),
    });
    if (transcription) {
      const stored = await storeTranscript(deps.blobs, transcription.words, { signal });
      transcript = {
        transcript_key: stored.key,
        sha256: stored.sha256,
        word_count: stored.word_count,
        language: transcription.language,
        transcriber: deps.transcriber.name,
      };
    }
  }
  return {
    file: {
      project_id: ctx.job.project_id,
      ref: source.ref,
      asset_id: source.assetId,
      media_type: accepted.type,
      duration_seconds: duration,
      blob_key: source.blobKey,
      size_bytes: source.size,
      has_audio: probe.hasAudio,
      has_video: accepted.type === 'video',
      source_url: source.sourceUrl,
      language: transcript?.language ?? source.language,
      tracks: null,
      ...mediaProperties(probe),
      job_id: ctx.job.job_id,
    },
    transcript,
  };
}

/** The properties a render reads (issue 21), null where the file has none. */
function mediaProperties(probe: ProbeResult) {
  return {
    width: probe.width ?? null,
    height: probe.height ?? null,
    frame_rate: probe.frameRate ?? null,
    rotation: probe.width ? (probe.rotation ?? 0) : null,
    sample_rate: probe.sampleRate ?? null,
    channels: probe.channels ?? null,
  };
}
