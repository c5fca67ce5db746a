import type { Word } from '../lib/domain/edl';
import { eachCue } from '../lib/domain/transcript/cues';
import { startHarness, type Harness } from '../test/fixtures/harness';
import { seedTranscribedProject } from '../test/fixtures/seed-project';
import { median } from './stats';

/**
 * Transcript export (issue 22): `npx tsx bench/export-transcript.ts`. One project whose
 * composition plays a one-hour recording with BENCH_EXPORT_WORDS words (9,000: speech at 150 words
 * a minute), two speakers taking turns, a marker every five minutes; the embedded adapters behind
 * the real HTTP stack on loopback, as the integration tests run it. Reports, never asserts: the
 * median time of `POST /v1/export/transcript` in each format (markers and timecodes on) next to
 * `GET /v1/projects/{id}` for the same project, timed in the same rounds, and their ratio. Goals:
 * docx within 10×, the text formats within 3×. Every round after the first exports an unchanged
 * composition, whose words (and, for SRT, cues) are kept: what making the cues anew costs, as the
 * first SRT export after an edit pays it, is reported beside (`cuesMs`).
 */

const WORDS = Math.max(1, Number(process.env.BENCH_EXPORT_WORDS ?? 9000));
// Rounds enough for a median that holds on a shared machine (7 gave ratios that moved by 2× run to run).
const ROUNDS = Math.max(1, Number(process.env.BENCH_EXPORT_ROUNDS ?? 31));
const FORMATS = ['txt', 'markdown', 'html', 'rtf', 'srt', 'docx'] as const;

/** `projectMs`: the median GET over all rounds; each format's `getMs`, the median GET of its own rounds, is its ratio's denominator. */
export type ExportFigures = {
  words: number;
  projectMs: number;
  formats: Record<string, { ms: number; getMs: number; ratio: number; bytes: number }>;
  /**
   * Making the hour's cues anew, in the process alone (median): what the first SRT export of a
   * composition adds to the figure, the next ones reading the cues kept with its words.
   */
  cuesMs: number;
};

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
  const markers = Array.from({ length: 12 }, (_, i) => ({ time: i * 300, label: `Part ${i + 1}` }));
  const { projectId } = await seedTranscribedProject(h, { words, duration: 3600, name: 'Bench', compositionName: 'One hour', markers });
  return projectId;
}

const WARM = 3;

/**
 * Each round times the GET and then the export, so both are measured under the same load (the
 * machine is often shared: timed one phase after the other, a busy minute lands on one side of
 * the ratio only).
 */
async function timedPair(
  baseline: () => Promise<unknown>,
  run: () => Promise<number>,
): Promise<{ ms: number; baselineMs: number[]; bytes: number }> {
  const times: number[] = [];
  const baselineMs: number[] = [];
  let bytes = 0;
  for (let i = 0; i < ROUNDS; i++) {
    let start = process.hrtime.bigint();
    await baseline();
    baselineMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    start = process.hrtime.bigint();
    bytes = await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { ms: median(times), baselineMs, bytes };
}

export async function measureExports(): Promise<ExportFigures> {
  const h = await startHarness({ processors: false });
  try {
    const projectId = await seed(h);
    const detail = () => h.http.get(`/v1/projects/${projectId}`).set(h.auth());
    for (let i = 0; i < 500 && (await detail()).body.compositions?.length !== 1; i++) await new Promise((r) => setTimeout(r, 20));
    const exportOf = (format: string) => async () => {
      const body = { project_id: projectId, format, include_markers: true, timecodes: { frequency_seconds: 30 } };
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
    };
    // Untimed, every format first: they compile the route's code paths, so the first format timed
    // does not pay for the others' shared code.
    for (let i = 0; i < WARM; i++) {
      for (const format of FORMATS) {
        await detail();
        await exportOf(format)();
      }
    }
    const projectMs: number[] = [];
    const formats: ExportFigures['formats'] = {};
    for (const format of FORMATS) {
      const figure = await timedPair(detail, exportOf(format));
      projectMs.push(...figure.baselineMs);
      const getMs = median(figure.baselineMs);
      formats[format] = { ms: figure.ms, getMs, bytes: figure.bytes, ratio: figure.ms / getMs };
    }
    const words = hourOfWords();
    const cuesMs = median(
      Array.from({ length: ROUNDS }, () => {
        const start = process.hrtime.bigint();
        for (const cue of eachCue(words, { labels: 'changes' })) void cue;
        return Number(process.hrtime.bigint() - start) / 1e6;
      }),
    );
    return { words: WORDS, projectMs: median(projectMs), formats, cuesMs };
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
      console.log(`  (the hour's cues made anew, in the process alone: ${f.cuesMs.toFixed(1)} ms)`);
      for (const [format, x] of Object.entries(f.formats)) {
        const goal = format === 'docx' ? 10 : 3;
        console.log(
          `  ${format.padEnd(8)} ${x.ms.toFixed(1).padStart(7)} ms vs GET ${x.getMs.toFixed(1).padStart(4)} ms ${x.ratio.toFixed(1).padStart(5)}× (goal ${goal}×)  ${(x.bytes / 1024).toFixed(0)} KiB`,
        );
      }
    },
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
