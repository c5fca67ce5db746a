import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore } from '../lib/adapters/embedded/event-store';
import { randomIds } from '../lib/adapters/system/clock';
import { commandHandler } from '../lib/app/command-handler';
import { foldDocument } from '../lib/app/projection';
import {
  compositionDecider,
  type CompositionEvent,
  decideComposition,
  foldComposition,
  initialCompositionState,
} from '../lib/domain/composition';
import { streams } from '../lib/domain/ids';
import type { NewEvent } from '../lib/ports/event-store';
import { compositionsModel } from '../lib/read-models/compositions';

/**
 * Folding one composition's edit events (issue 20): `node --expose-gc --import tsx
 * bench/composition-fold.ts`. A three-hour recording edited BENCH_FOLD_EDITS times (20,000), each
 * edit cutting a tenth of a second somewhere (so the clip list grows to about as many clips as
 * edits, the worst case for copying it), every tenth edit a rename; stored in the embedded
 * SQLite event store. Reports, never asserts: the time to fold the events in memory (the first
 * fold, with the code still cold, and the median of three more, as in a service that has folded
 * before), to read and fold the stream as a command does (`commandHandler.load`), to fold the
 * `compositions` read model's document from it (a rebuild, a gap healed), the heap the
 * folded state keeps and the heap's peak growth while folding, and the time to decide a revert
 * to the middle revision (it folds the events again up to there). Goal: < 1 s and < 100 MB.
 */

const EDITS = Math.max(1, Number(process.env.BENCH_FOLD_EDITS ?? 20_000));
const AT = '2026-01-01T00:00:00.000Z';
const COMPOSITION = randomIds.uuidv7();

function editEvents(): CompositionEvent[] {
  const created: CompositionEvent = {
    type: 'CompositionCreated',
    data: {
      ...{ project_id: randomIds.uuidv7(), composition_id: COMPOSITION, short_id: COMPOSITION.slice(0, 5), name: 'Main' },
      ...{ clips: [{ media: 'talk.mp4', in: 0, out: 10_800 }], markers: [], width: 1920, height: 1080, origin: 'bench#0', created_at: AT },
    },
  };
  const edits = Array.from({ length: EDITS }, (_, i): CompositionEvent => {
    if (i % 10 === 9) return { type: 'CompositionRenamed', data: { name: `Main ${i}`, planned_on: i, at: AT } };
    // Spread over what is left of the composition, a deterministic scatter.
    const from = Math.round((((i * 7919) % EDITS) / EDITS) * (10_800 - i * 0.1 - 1) * 1000) / 1000;
    return { type: 'CompositionRangesCut', data: { ranges: [{ from, to: from + 0.1 }], planned_on: i, at: AT } };
  });
  return [created, ...edits];
}

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;
const gc = (globalThis as { gc?: () => void }).gc;
const heapMb = () => {
  gc?.();
  return process.memoryUsage().heapUsed / 1e6;
};

async function main() {
  if (!gc) process.stderr.write('composition-fold: run with node --expose-gc for heap figures\n');
  const events = editEvents();
  const dir = mkdtempSync(join(tmpdir(), 'bench-fold-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  try {
    const stream = streams.composition(COMPOSITION);
    const stored: NewEvent[] = events.map((e) => ({
      id: randomIds.uuidv7(),
      type: e.type,
      data: e.data as never,
      metadata: { partition_key: COMPOSITION },
    }));
    for (let i = 0; i < stored.length; i += 1000) await store.append(stream, stored.slice(i, i + 1000), i === 0 ? 'no_stream' : i - 1);

    const before = heapMb();
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed / 1e6)), 5);
    const foldStart = process.hrtime.bigint();
    const state = foldComposition(initialCompositionState(), events);
    const foldSeconds = seconds(foldStart);
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().heapUsed / 1e6);
    const kept = heapMb() - before;
    const warm = [0, 1, 2].map(() => {
      const start = process.hrtime.bigint();
      foldComposition(initialCompositionState(), events);
      return seconds(start);
    });
    const warmSeconds = warm.sort((a, b) => a - b)[1];

    const loadStart = process.hrtime.bigint();
    const loaded = await commandHandler(store, compositionDecider, streams.composition).load(COMPOSITION);
    const loadSeconds = seconds(loadStart);

    // The `compositions` read model's document from the same stream (a rebuild, a gap healed).
    const storedEvents = await store.readStream(stream);
    const documentStart = process.hrtime.bigint();
    const document = foldDocument(storedEvents, compositionsModel.evolve);
    const documentSeconds = seconds(documentStart);
    if (!document) throw new Error('the document was not folded');

    if (!state.exists || !loaded.state.exists) throw new Error('the composition was not folded');
    const revertStart = process.hrtime.bigint();
    const middle = Math.floor(state.revision / 2);
    const revert = decideComposition(
      { type: 'ApplyEdits', edits: [{ kind: 'revert', to_revision: middle }], planned_on: state.revision, now: AT },
      state,
    );
    const revertSeconds = seconds(revertStart);
    if (!Array.isArray(revert) || revert.length !== 1) throw new Error('the revert was not decided');

    console.log(
      `composition fold: ${EDITS.toLocaleString('en-US')} edit events, ${state.clips.length.toLocaleString('en-US')} clips at the end`,
    );
    console.log(`  fold in memory, first    ${(foldSeconds * 1000).toFixed(0)} ms (goal < 1000 ms)`);
    console.log(`  fold in memory, warm     ${(warmSeconds * 1000).toFixed(0)} ms (the median of three more)`);
    console.log(`  read + fold (a command)  ${(loadSeconds * 1000).toFixed(0)} ms`);
    console.log(`  its read model document  ${(documentSeconds * 1000).toFixed(0)} ms (folded from the stream read)`);
    console.log(`  heap kept by the state   ${gc ? `${kept.toFixed(1)} MB` : 'n/a'}`);
    console.log(`  heap peak while folding  ${(peak - before).toFixed(1)} MB above the start (goal < 100 MB)`);
    console.log(`  revert to revision ${middle}  ${(revertSeconds * 1000).toFixed(0)} ms (folds the log again)`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
