import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { markBuilt, projectBatch, projectEvent, projectPage, staleModels, type ReadModel } from '../../lib/app/read-models';
import type { EventStore, StoredEvent } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { READ_MODELS } from '../../services/query-api/read-models';
import { isDeletedComposition } from '../../lib/read-models/compositions';

/**
 * Every read model in the list, driven through the generic projector functions: a scenario of
 * its stream's events, each delivered twice, gives the same documents as once (STYLE §9).
 */

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const PROJECT = '1e7d4a0c-3b5f-4c8e-a2d9-6f0b1c3e5a77';
const COMPOSITION = 'abcde000-0000-4000-8000-000000000000';
const FOLDER = '2f7d4a0c-3b5f-4c8e-a2d9-6f0b1c3e5a77';
const JOB = 'project-media-import-8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10';

function stream(streamId: string, events: [string, Record<string, unknown>][]): StoredEvent[] {
  return events.map(([type, data], revision) => ({
    id: randomUUID(),
    type,
    data,
    metadata: { partition_key: streamId },
    streamId,
    revision,
    position: '0',
    createdAt: T(revision),
  }));
}

const clip = { media: 'a.wav', in: 0, out: 4 };
const SCENARIOS: Record<string, StoredEvent[]> = {
  jobs: stream(`job-${JOB}`, [
    [
      'JobQueued',
      {
        job_id: JOB,
        job_type: 'import/project_media',
        drive_id: 'd',
        project_id: PROJECT,
        project_url: 'u',
        created_by: 'u',
        callback_url: null,
        request: { media: [], compositions: [] },
        created_at: T(0),
      },
    ],
    ['JobStarted', { job_id: JOB, attempt: 1, started_at: T(1) }],
    ['MediaSecondsCharged', { job_id: JOB, drive_id: 'd', ref: 'a.wav', seconds: 4, charged_at: T(2) }],
    ['JobStopped', { job_id: JOB, result: { status: 'success' }, project_url: null, stopped_at: T(3) }],
  ]),
  charges: stream(`job-${JOB}`, [
    ['MediaSecondsCharged', { job_id: JOB, drive_id: 'd', ref: 'a.wav', seconds: 4, charged_at: T(2) }],
    ['MediaSecondsCharged', { job_id: JOB, drive_id: 'd', ref: 'b.wav', seconds: 2, charged_at: T(3) }],
  ]),
  projects: stream(`project-${PROJECT}`, [
    [
      'ProjectCreated',
      {
        project_id: PROJECT,
        drive_id: 'd',
        name: 'P',
        folder_path: 'A/B',
        team_access: 'none',
        created_by: 'u',
        job_id: JOB,
        created_at: T(0),
      },
    ],
    [
      'MediaImported',
      {
        project_id: PROJECT,
        ref: 'a.wav',
        media_type: 'audio',
        duration_seconds: 4,
        blob_key: 'k',
        size_bytes: 1,
        has_audio: true,
        has_video: false,
        source_url: null,
        language: null,
        tracks: null,
        job_id: JOB,
        imported_at: T(1),
      },
    ],
    [
      'MediaTranscribed',
      {
        project_id: PROJECT,
        ref: 'a.wav',
        transcript_key: 'transcripts/x.json',
        sha256: 'x',
        word_count: 3,
        language: 'en',
        transcriber: 'openai',
        job_id: JOB,
        transcribed_at: T(2),
      },
    ],
    [
      'CompositionAdded',
      { project_id: PROJECT, composition_id: COMPOSITION, short_id: 'abcde', name: 'Main', origin: `${JOB}#0`, created_at: T(3) },
    ],
    ['ProjectViewed', { project_id: PROJECT, user_id: 'u', viewed_at: T(4) }],
  ]),
  compositions: stream(`composition-${COMPOSITION}`, [
    [
      'CompositionCreated',
      {
        project_id: PROJECT,
        composition_id: COMPOSITION,
        short_id: 'abcde',
        name: 'Main',
        clips: [clip],
        markers: [],
        width: 1920,
        height: 1080,
        origin: `${JOB}#0`,
        created_at: T(0),
      },
    ],
    ['CompositionRangeCut', { from: 1, to: 2, at: T(1) }],
    ['CompositionRenamed', { name: 'Tight', at: T(2) }],
    [
      'CompositionRangesCut',
      {
        ranges: [
          { from: 0, to: 0.5 },
          { from: 1, to: 1.5 },
        ],
        planned_on: 2,
        at: T(3),
      },
    ],
    ['CompositionMarkersAdded', { markers: [{ time: 1, label: 'm' }], planned_on: 3, at: T(3) }],
    ['CompositionAudioSet', { loudness_lufs: -16, noise_reduction: true, planned_on: 4, at: T(3) }],
    // Written before audio settings existed: restores none.
    ['CompositionReverted', { to_revision: 0, name: 'Main', clips: [clip], markers: [], at: T(3) }],
    ['CompositionDeleted', { planned_on: 6, at: T(4) }],
  ]),
  deliveries: stream(`delivery-${JOB}`, [
    [
      'DeliveryScheduled',
      { delivery_id: 'wh', job_id: JOB, drive_id: 'd', project_id: PROJECT, url: 'https://h/x', due_at: T(0), scheduled_at: T(0) },
    ],
    ['DeliveryClaimed', { attempt: 1, worker_id: 'w', lease_until: T(30), at: T(0) }],
    ['DeliveryAttempted', { attempt: 1, at: T(1), status: 500, error: null, duration_ms: 9, outcome: 'retry', next_attempt_at: T(6) }],
    ['DeliveryRequested', { at: T(2), by: 'u' }],
  ]),
  publications: stream('publication-c1-video', [
    [
      'PublicationStarted',
      {
        publication_id: 'c1-video',
        slug: 'AAAAAAAAAAAAAAAA',
        project_id: 'p',
        drive_id: 'd',
        composition_id: 'c1',
        media_type: 'Video',
        access_level: 'unlisted',
        job_id: 'j1',
        published_by: { user_id: 'u', first_name: 'Ada', last_name: 'Lovelace' },
        started_at: T(0),
      },
    ],
    [
      'PublicationRendered',
      {
        publication_id: 'c1-video',
        slug: 'AAAAAAAAAAAAAAAA',
        job_id: 'j1',
        blob_key: 'd/p/render-x',
        captions_blob_key: 'd/p/render-x.vtt',
        content_type: 'video/mp4',
        size_bytes: 10,
        duration_seconds: 3,
        width: 1280,
        height: 720,
        title: 'Interview',
        rendered_at: T(5),
      },
    ],
  ]),
  folders: stream(`folder-${FOLDER}`, [
    ['FolderCreated', { folder_id: FOLDER, drive_id: 'd', path: 'A/B', name: 'B', parent_path: 'A', created_by: 'u', created_at: T(0) }],
  ]),
};

/**
 * The model's documents after `project` ran on an empty store, and its totals' (if it keeps any)
 * unless told: replay's pages leave totals to be settled at the end.
 */
async function documentsMadeBy(
  model: ReadModel,
  project: (deps: { read: ReadStore; store: EventStore }) => Promise<void>,
  { totals = true } = {},
) {
  const read = createSqliteReadStore({ path: ':memory:' });
  const store = createSqliteEventStore({ path: ':memory:' });
  try {
    await project({ read, store });
    const docs = (await read.find(model.name, {})).map(({ _rev, ...doc }) => doc);
    return model.total && totals ? [...docs, ...(await read.find(model.total.collection, {}))] : docs;
  } finally {
    await read.close();
    await store.close();
  }
}

/** The documents `deliveries` make delivered one by one, as the projector's lone path applies them. */
const documentsAfter = (model: ReadModel, deliveries: StoredEvent[], options?: { totals?: boolean }) =>
  documentsMadeBy(
    model,
    (deps) => deliveries.reduce((done, e) => done.then(() => projectEvent(deps, [model], e)), Promise.resolve()),
    options,
  );

describe('read models', () => {
  it('each has a scenario here (a new model needs one)', () => {
    assert.deepEqual(READ_MODELS.map((m) => m.name).sort(), Object.keys(SCENARIOS).sort());
  });

  for (const model of READ_MODELS) {
    describe(`${model.name} read model`, () => {
      const events = SCENARIOS[model.name] ?? [];
      it('is idempotent when an event is delivered twice', async () => {
        const once = await documentsAfter(model, events);
        assert.ok(once.length > 0, 'the scenario makes documents');
        const twice = await documentsAfter(
          model,
          events.flatMap((e) => [e, e]),
        );
        const replayed = await documentsAfter(model, [...events, ...events]);
        assert.deepEqual(twice, once);
        assert.deepEqual(replayed, once);
      });
      it('makes the same documents, totals and lag reports from batches (the projector) as from single events', async () => {
        const single = await documentsAfter(model, events);
        assert.ok(single.length > 0, 'the scenario makes documents');
        // The whole scenario in one batch; and split in two, the second batch with a duplicate of the first's last event.
        const reported: string[] = [];
        const whole = await documentsMadeBy(model, (deps) =>
          projectBatch({ ...deps, observeLag: (name, seconds) => reported.push(`${name} ${seconds >= 0}`) }, [model], events),
        );
        assert.deepEqual(whole, single);
        assert.deepEqual(
          reported,
          events.map(() => `${model.name} true`),
          'one report per event the model read',
        );
        const half = Math.ceil(events.length / 2);
        const split = await documentsMadeBy(model, async (deps) => {
          await projectBatch(deps, [model], events.slice(0, half));
          await projectBatch(deps, [model], events.slice(half - 1));
        });
        assert.deepEqual(split, single);
      });

      it('makes the same documents from a page (replay) as from single events', async () => {
        const read = createSqliteReadStore({ path: ':memory:' });
        const store = createSqliteEventStore({ path: ':memory:' });
        try {
          await projectPage({ read, store }, [model], events);
          const paged = (await read.find(model.name, {})).map(({ _rev, ...doc }) => doc);
          assert.deepEqual(paged, await documentsAfter(model, events, { totals: false }));
        } finally {
          await read.close();
          await store.close();
        }
      });
    });
  }

  it('projects a reverted composition to exactly what it was', async () => {
    const [doc] = await documentsAfter(
      READ_MODELS.find((m) => m.name === 'compositions')!,
      SCENARIOS.compositions,
    );
    assert.deepEqual([doc.name, doc.clips, doc.duration, doc.markers], ['Main', [clip], 4, []]);
    assert.deepEqual(doc.audio, { loudness_lufs: null, noise_reduction: false });
  });

  it('keeps a deleted composition as a tombstone its readers skip', async () => {
    const [doc] = await documentsAfter(
      READ_MODELS.find((m) => m.name === 'compositions')!,
      SCENARIOS.compositions,
    );
    assert.deepEqual([doc.deleted, doc.revision, isDeletedComposition(doc)], [true, 7, true]);
    assert.equal('log' in doc, false, 'the events folded stay out of the document');
  });

  it('knows which models a read store lacks or holds at another version', async () => {
    const read = createSqliteReadStore({ path: ':memory:' });
    try {
      assert.deepEqual((await staleModels(read, READ_MODELS)).length, READ_MODELS.length, 'no marker: all of them');
      await markBuilt(read, READ_MODELS);
      assert.deepEqual(await staleModels(read, READ_MODELS), []);
      const bumped = READ_MODELS.map((m) => (m.name === 'projects' ? { ...m, version: m.version + 1 } : m));
      assert.deepEqual(
        (await staleModels(read, bumped)).map((m) => m.name),
        ['projects'],
      );
    } finally {
      await read.close();
    }
  });

  it('takes a read store marked before models had versions as holding jobs and charges at their first versions only', async () => {
    const read = createSqliteReadStore({ path: ':memory:' });
    try {
      await read.put('meta', { _id: 'read-models', _rev: 0, created_at: T(0) }, null);
      // charges (its per-drive totals) and jobs (`_ended_at`) are at version 2 since, so they are rebuilt too.
      assert.deepEqual((await staleModels(read, READ_MODELS)).map((m) => m.name).sort(), [
        'charges',
        'compositions',
        'deliveries',
        'folders',
        'jobs',
        'projects',
        'publications',
      ]);
    } finally {
      await read.close();
    }
  });
});
