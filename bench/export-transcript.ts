import { randomUUID } from 'node:crypto';
import { handleCommand } from '../lib/app/command-handler';
import { storeTranscript } from '../lib/app/transcripts';
import { compositionDecider } from '../lib/domain/composition';
import type { Word } from '../lib/domain/edl';
import type { DomainEvent } from '../lib/domain/events';
import { shortIdOf, streams } from '../lib/domain/ids';
import { projectDecider } from '../lib/domain/project';
import { startHarness, type Harness } from '../test/fixtures/harness';

/**
 * Transcript export (issue 22): `npx tsx bench/export-transcript.ts`. One project whose
 * composition plays a one-hour recording with BENCH_EXPORT_WORDS words (9,000: speech at 150 words
 * a minute), two speakers taking turns, a marker every five minutes; the embedded adapters behind
 * the real HTTP stack on loopback, as the integration tests run it. Reports, never asserts: the
 * median time of `POST /v1/export/transcript` in each format (markers and timecodes on) next to
 * `GET /v1/projects/{id}` for the same project, and their ratio. Goals: docx within 10×, the text
 * formats within 3×.
 */

const WORDS = Math.max(1, Number(process.env.BENCH_EXPORT_WORDS ?? 9000));
const ROUNDS = Math.max(1, Number(process.env.BENCH_EXPORT_ROUNDS ?? 7));
const FORMATS = ['txt', 'markdown', 'html', 'rtf', 'srt', 'docx'] as const;
const AT = '2026-01-01T00:00:00.000Z';

export type ExportFigures = { words: number; projectMs: number; formats: Record<string, { ms: number; ratio: number; bytes: number }> };

function hourOfWords(): Word[] {
  const vocabulary = 'so we shipped the new release yesterday and everyone was really happy about how it went'.split(' ');
  const step = 3600 / WORDS;
  return Array.from({ length: WORDS }, (_, i) => ({
    text: vocabulary[(i * 7) % vocabulary.length] + (i % 12 === 11 ? '.' : i % 5 === 4 ? ',' : ''),
    start: Math.round(i * step * 1000) / 1000,
    end: Math.round((i * step + step * 0.8) * 1000) / 1000,
    confidence: 0.9,
    speaker: Math.floor(i / 60) % 2 === 0 ? 'ana.wav' : 'ben.wav',
  }));
}

/** A project whose one composition plays a one-hour recording with `words` (default: the export's hour); its id. */
export async function seed(h: Harness, words: Word[] = hourOfWords()): Promise<string> {
  const projectId = randomUUID();
  const compositionId = randomUUID();
  const write = { newId: randomUUID, metadata: { partition_key: projectId } };
  const project = { project_id: projectId, drive_id: h.drive.drive_id, name: 'Bench', folder_path: null, team_access: 'none' as const };
  await handleCommand(
    h.store,
    streams.project(projectId),
    projectDecider,
    { type: 'CreateProject', project: { ...project, created_by: randomUUID(), job_id: null }, now: AT },
    write,
  );
  const stored = await storeTranscript(h.processorDeps.blobs, words);
  const common = { project_id: projectId, job_id: null as unknown as string };
  const events: DomainEvent[] = [
    {
      type: 'MediaImported',
      data: {
        ...common,
        ...{ ref: 'talk.wav', asset_id: null, media_type: 'audio', duration_seconds: 3600, blob_key: null, size_bytes: 1 },
        ...{ has_audio: true, has_video: false, source_url: null, language: 'en', tracks: null, imported_at: AT },
      },
    },
    {
      type: 'MediaTranscribed',
      data: {
        ...common,
        ref: 'talk.wav',
        transcript_key: stored.key,
        sha256: stored.sha256,
        word_count: words.length,
        language: 'en',
        transcriber: 'bench',
        transcribed_at: AT,
      },
    },
    {
      type: 'CompositionAdded',
      data: {
        project_id: projectId,
        composition_id: compositionId,
        short_id: shortIdOf(compositionId),
        name: 'One hour',
        origin: `${projectId}#0`,
        created_at: AT,
      },
    },
  ];
  await h.store.append(
    streams.project(projectId),
    events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data as never, metadata: write.metadata })),
    0,
  );
  const markers = Array.from({ length: 12 }, (_, i) => ({ time: i * 300, label: `Part ${i + 1}` }));
  const composition = { project_id: projectId, composition_id: compositionId, short_id: shortIdOf(compositionId), name: 'One hour' };
  const create = {
    ...composition,
    clips: [{ media: 'talk.wav', in: 0, out: 3600 }],
    markers,
    width: 1920,
    height: 1080,
    origin: `${projectId}#0`,
  };
  await handleCommand(
    h.store,
    streams.composition(compositionId),
    compositionDecider,
    { type: 'CreateComposition', composition: create, now: AT },
    write,
  );
  return projectId;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timed(run: () => Promise<number>): Promise<{ ms: number; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  await run(); // warm: the first request compiles the route's code paths
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    bytes = await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { ms: median(times), bytes };
}

export async function measureExports(): Promise<ExportFigures> {
  const h = await startHarness({ processors: false });
  try {
    const projectId = await seed(h);
    const detail = () => h.http.get(`/v1/projects/${projectId}`).set(h.auth());
    for (let i = 0; i < 500 && (await detail()).body.compositions?.length !== 1; i++) await new Promise((r) => setTimeout(r, 20));
    const project = await timed(async () => (await detail()).text.length);
    const formats: ExportFigures['formats'] = {};
    for (const format of FORMATS) {
      const body = { project_id: projectId, format, include_markers: true, timecodes: { frequency_seconds: 30 } };
      const figure = await timed(async () => {
        const res = await h.http
          .post('/v1/export/transcript')
          .set(h.auth())
          .send(body)
          .buffer(true)
          .parse((r, done) => {
            let n = 0;
            r.on('data', (c: Buffer) => (n += c.length));
            r.on('end', () => done(null, n));
          });
        if (res.status !== 200) throw new Error(`${format}: ${res.status}`);
        return res.body as number;
      });
      formats[format] = { ...figure, ratio: figure.ms / project.ms };
    }
    return { words: WORDS, projectMs: project.ms, formats };
  } finally {
    await h.close();
  }
}

if (require.main === module) {
  measureExports().then(
    (f) => {
      console.log(
        `transcript export, one hour (${f.words} words), median of ${ROUNDS}: GET /v1/projects/{id} ${f.projectMs.toFixed(1)} ms`,
      );
      for (const [format, x] of Object.entries(f.formats)) {
        const goal = format === 'docx' ? 10 : 3;
        console.log(
          `  ${format.padEnd(8)} ${x.ms.toFixed(1).padStart(7)} ms  ${x.ratio.toFixed(1).padStart(5)}× (goal ${goal}×)  ${(x.bytes / 1024).toFixed(0)} KiB`,
        );
      }
    },
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
