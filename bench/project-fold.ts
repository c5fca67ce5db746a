import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore } from '../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../lib/adapters/embedded/read-store';
import { prepareModels, projectBatch, rebuildModels } from '../lib/app/read-models';
import { randomIds } from '../lib/adapters/system/clock';
import { commandHandler } from '../lib/app/command-handler';
import { streams } from '../lib/domain/ids';
import { evolveProject, foldProject, initialProjectState, projectDecider, type ProjectEvent } from '../lib/domain/project';
import { foldProjectWithFiles, projectsModel, readProject } from '../lib/read-models/projects';
import { keptProjectFiles } from '../services/query-api/kept-project-files';
import { median } from './stats';

/**
 * Folding one long project stream (`node --import tsx bench/project-fold.ts`): a project of
 * BENCH_PROJECT_FILES (10,000) files, each imported and transcribed (two events), a composition
 * listed per hundred, a view per ten; stored in the embedded SQLite event store. Reports, never
 * asserts: the fold in memory (first, and warm); what the first command on the project costs a
 * process that has just started (reading and folding the whole stream, on the event loop of
 * whichever process reads the project first: `serve` for an import into it); and one more file
 * evolved on the folded state (each import into the project pays it); the `projects` read
 * model's document and files folded from the same events (a rebuild, a gap healed, the detail
 * answered before the projector has the project); and, on SQLite files, the projector's batch of
 * one more import into the project beside the baseline of the same run: the project's document
 * with its files in it, read and written once, as the projector did before the files had
 * documents of their own. Folding event by event, copying the media map each time, took 32 s for
 * these 10,000 files (docs/decisions.md).
 */

const FILES = Math.max(1, Number(process.env.BENCH_PROJECT_FILES ?? 10_000));
const AT = '2026-01-01T00:00:00.000Z';
const PROJECT = randomIds.uuidv7();

function projectEvents(): ProjectEvent[] {
  const events: ProjectEvent[] = [
    {
      type: 'ProjectCreated',
      data: {
        project_id: PROJECT,
        drive_id: 'd',
        name: 'Big',
        folder_path: null,
        team_access: 'none',
        created_by: 'u',
        job_id: null,
        created_at: AT,
      },
    },
  ];
  for (let i = 0; i < FILES; i++) {
    const ref = `episode-${i}.wav`;
    const job_id = `project-media-import-${randomIds.uuidv7()}`;
    events.push({
      type: 'MediaImported',
      data: {
        ...{
          project_id: PROJECT,
          ref,
          asset_id: randomIds.uuidv7(),
          media_type: 'audio',
          duration_seconds: 1800,
          blob_key: `media/${randomIds.uuidv7()}`,
        },
        ...{
          size_bytes: 57_600_000,
          has_audio: true,
          has_video: false,
          source_url: null,
          language: 'en',
          tracks: null,
          width: null,
          height: null,
        },
        ...{ frame_rate: null, rotation: null, sample_rate: 16_000, channels: 1, job_id, imported_at: AT },
      },
    });
    events.push({
      type: 'MediaTranscribed',
      data: {
        project_id: PROJECT,
        ref,
        transcript_key: `transcripts/${'0'.repeat(64)}`,
        sha256: '0'.repeat(64),
        word_count: 4000,
        language: 'en',
        transcriber: 'pocketsphinx',
        job_id,
        transcribed_at: AT,
      },
    });
    if (i % 100 === 0) {
      const id = randomIds.uuidv7();
      events.push({
        type: 'CompositionAdded',
        data: { project_id: PROJECT, composition_id: id, short_id: id.slice(-5), name: `Cut ${i}`, origin: `${job_id}#0`, created_at: AT },
      });
    }
    if (i % 10 === 0) events.push({ type: 'ProjectViewed', data: { project_id: PROJECT, user_id: `user-${i % 7}`, viewed_at: AT } });
  }
  return events;
}

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

async function main() {
  const events = projectEvents();
  const dir = mkdtempSync(join(tmpdir(), 'bench-project-fold-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  try {
    const stream = streams.project(PROJECT);
    const stored = events.map((e) => ({
      id: randomIds.uuidv7(),
      type: e.type,
      data: e.data as never,
      metadata: { partition_key: PROJECT },
    }));
    for (let i = 0; i < stored.length; i += 1000) await store.append(stream, stored.slice(i, i + 1000), i === 0 ? 'no_stream' : i - 1);

    let start = process.hrtime.bigint();
    foldProject(initialProjectState(), events);
    const first = ms(start);
    const warm = [0, 1, 2]
      .map(() => {
        start = process.hrtime.bigint();
        foldProject(initialProjectState(), events);
        return ms(start);
      })
      .sort((a, b) => a - b)[1];

    // A process that has just started: the whole stream, read and folded by a new handler.
    start = process.hrtime.bigint();
    const loaded = await commandHandler(store, projectDecider, streams.project).load(PROJECT);
    const whole = ms(start);
    if (!loaded.state.exists || loaded.state.media.size !== FILES) throw new Error('the project was not folded');

    // The `projects` read model's document from the whole stream: a rebuild, a gap healed, or the
    // detail answered before the projector has the project.
    const storedEvents = await store.readStream(stream);
    start = process.hrtime.bigint();
    const doc = foldProjectWithFiles(storedEvents);
    const document = ms(start);
    if (doc?.media.length !== FILES) throw new Error('the document was not folded');

    // The projector on SQLite files: the model rebuilt, then one import at a time projected.
    const read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
    start = process.hrtime.bigint();
    await rebuildModels({ read, store }, [projectsModel]);
    const rebuilt = ms(start);
    await prepareModels(read, [projectsModel]);
    const batches: number[] = [];
    const wholeDocument: number[] = [];
    for (let i = 0; i < 21; i++) {
      const next = { ...events[1].data, ref: `batch-${i}.wav` };
      const appended = await store.append(
        stream,
        [{ id: randomIds.uuidv7(), type: 'MediaImported', data: next as never, metadata: { partition_key: PROJECT } }],
        'any',
      );
      if (!appended.ok) throw new Error('the append failed');
      const [event] = await store.readStream(stream, { fromRevision: appended.nextRevision });
      start = process.hrtime.bigint();
      await projectBatch({ read, store }, [projectsModel], [event]);
      batches.push(ms(start));
      // The baseline: the project's document with every file in it, read and written as one.
      start = process.hrtime.bigint();
      const big = await read.get('whole_projects', PROJECT);
      await read.put('whole_projects', { ...doc, _id: PROJECT, _rev: (big?._rev ?? -1) + 1 }, big ? big._rev : null);
      wholeDocument.push(ms(start));
    }
    if ((await readProject(read, PROJECT))?.media.length !== FILES + 21) throw new Error('the imports were not projected');
    // What the detail, the page and the exports read: the project with every file, against the old shape's one document.
    // The query API keeps a large project's files until one changes (keptProjectFiles): a read again.
    const kept = keptProjectFiles();
    await readProject(read, PROJECT, kept.read);
    const reads: number[] = [];
    const wholeReads: number[] = [];
    const keptReads: number[] = [];
    for (let i = 0; i < 7; i++) {
      start = process.hrtime.bigint();
      await readProject(read, PROJECT);
      reads.push(ms(start));
      start = process.hrtime.bigint();
      await read.get('whole_projects', PROJECT);
      wholeReads.push(ms(start));
      start = process.hrtime.bigint();
      await readProject(read, PROJECT, kept.read);
      keptReads.push(ms(start));
    }
    if (kept.stats().hits !== 7) throw new Error(`the kept files were not read: ${JSON.stringify(kept.stats())}`);
    await read.close();

    const another = { ...events[1], data: { ...events[1].data, ref: 'one-more.wav' } } as ProjectEvent;
    const more = Array.from({ length: 21 }, () => {
      start = process.hrtime.bigint();
      evolveProject(loaded.state, another);
      return ms(start);
    }).sort((a, b) => a - b)[10];

    console.log(`project fold: ${FILES.toLocaleString('en-US')} files, ${events.length.toLocaleString('en-US')} events`);
    console.log(`  fold in memory, first      ${first.toFixed(0)} ms`);
    console.log(`  fold in memory, warm       ${warm.toFixed(0)} ms (the median of three more)`);
    console.log(`  read + fold, whole stream  ${whole.toFixed(0)} ms (the first command after a start)`);
    console.log(`  one more file on the fold  ${more.toFixed(1)} ms (the median of 21)`);
    console.log(`  its read model document    ${document.toFixed(0)} ms (folded from the stream read, with its files)`);
    console.log(`  its read model rebuilt     ${rebuilt.toFixed(0)} ms (SQLite files)`);
    console.log(
      `  one import projected       ${median(batches).toFixed(1)} ms (the median of 21; the project's document with its files in it, ` +
        `read and written once: ${median(wholeDocument).toFixed(1)} ms, ${(median(wholeDocument) / median(batches)).toFixed(0)}×)`,
    );
    console.log(
      `  the project read whole     ${median(reads).toFixed(1)} ms (the median of 7: its document and ${(FILES + 21).toLocaleString('en-US')} files; ` +
        `the one document of before: ${median(wholeReads).toFixed(1)} ms)`,
    );
    console.log(
      `  read again, files kept     ${median(keptReads).toFixed(2)} ms (the median of 7: its files unchanged since the last read)`,
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
