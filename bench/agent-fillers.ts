import { updateDrive } from '../lib/app/admin';
import type { Word } from '../lib/domain/edl';
import { streams } from '../lib/domain/ids';
import { createBuiltinModel } from '../lib/adapters/agent/builtin';
import { editingToolset } from '../services/processors/agent/editing-tools';
import { startHarness } from '../test/fixtures/harness';
import { seed } from './export-transcript';
import { median } from './stats';

/**
 * (k) An agent turn on a long composition (issue 20): "remove filler words" on a one-hour
 * transcript (BENCH_AGENT_WORDS, 9,000 words, one in thirty a filler: 300), run by the builtin
 * model with the real tools through the engine (the HTTP stack on the embedded adapters, as the
 * integration tests run it). Reports the time from the job's creation to its stop (its own
 * `created_at` and `stopped_at`), the median of BENCH_AGENT_ROUNDS turns, each on a project of its
 * own, next to the median time of `GET /v1/projects/{id}` of such a project (goal: within 10×),
 * and checks that each turn wrote one composition event.
 */

const WORDS = Math.max(30, Number(process.env.BENCH_AGENT_WORDS ?? 9000));
const ROUNDS = Math.max(1, Number(process.env.BENCH_AGENT_ROUNDS ?? 3));
const FILLERS = ['um', 'uh', 'erm', 'ah'];

export type AgentFigures = { words: number; fillers: number; turnMs: number; projectMs: number; eventsPerTurn: number[] };

function hourWithFillers(): Word[] {
  const vocabulary = 'so we shipped the new release yesterday and everyone was really happy about how it went'.split(' ');
  const step = 3600 / WORDS;
  return Array.from({ length: WORDS }, (_, i) => ({
    text: i % 30 === 15 ? FILLERS[((i / 30) % FILLERS.length) | 0] : vocabulary[(i * 7) % vocabulary.length],
    start: Math.round(i * step * 1000) / 1000,
    end: Math.round((i * step + step * 0.8) * 1000) / 1000,
    confidence: 0.9,
    speaker: null,
  }));
}

export async function measureAgentFillers(): Promise<AgentFigures> {
  const silences = { detect: async () => [] };
  const h = await startHarness({ agent: { toolset: editingToolset({ silences }), builtin: createBuiltinModel() } });
  try {
    await updateDrive(h.admin, h.drive.drive_id, { ai_credits: 1_000_000 });
    const words = hourWithFillers();
    const turns: number[] = [];
    const reads: number[] = [];
    const eventsPerTurn: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const projectId = await seed(h, words);
      const detail = () => h.http.get(`/v1/projects/${projectId}`).set(h.auth());
      let compositionId: string | undefined;
      for (let i = 0; i < 500 && !(compositionId = (await detail()).body.compositions?.[0]?.id); i++)
        await new Promise((r) => setTimeout(r, 20));
      for (let i = 0; i < 5; i++) {
        const start = process.hrtime.bigint();
        await detail();
        if (round > 0) reads.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      const res = await h.http.post('/v1/jobs/agent').set(h.auth()).send({ prompt: 'remove filler words', project_id: projectId });
      if (res.status !== 201) throw new Error(`POST /v1/jobs/agent answered ${res.status}: ${res.text}`);
      const job = (await h.waitForJob(res.body.job_id, undefined, 300_000)) as {
        result: { status: string };
        created_at: string;
        stopped_at: string;
      };
      if (job.result.status !== 'success') throw new Error(`the turn ended ${JSON.stringify(job.result)}`);
      // The first round warms the code paths up; it is not counted.
      if (round === 0) continue;
      turns.push(Date.parse(job.stopped_at) - Date.parse(job.created_at));
      eventsPerTurn.push((await h.store.readStream(streams.composition(compositionId!))).length - 1);
    }
    return {
      words: WORDS,
      fillers: words.filter((w) => FILLERS.includes(w.text)).length,
      turnMs: median(turns),
      projectMs: median(reads),
      eventsPerTurn,
    };
  } finally {
    await h.close();
  }
}

if (require.main === module) {
  measureAgentFillers().then(
    (f) => console.log(JSON.stringify({ ...f, ratio: f.turnMs / f.projectMs })),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
