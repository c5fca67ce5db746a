import assert from 'node:assert/strict';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { foldDocument } from '../../lib/app/projection';
import { prepareModels, projectBatch, rebuildModels } from '../../lib/app/read-models';
import type { ProjectEvent } from '../../lib/domain/project';
import type { StoredEvent } from '../../lib/ports/event-store';
import type { CollectionWrite, Doc, ReadStore } from '../../lib/ports/read-store';
import {
  evolveProjectDoc,
  foldProjectDoc,
  foldProjectWithFiles,
  PROJECT_FILES,
  PROJECTS,
  projectFilesOf,
  projectsModel,
  readProject,
  type ProjectDoc,
  type ProjectMediaEntry,
  type ProjectWithFiles,
} from '../../lib/read-models/projects';
import { keptProjectFiles } from '../../services/query-api/kept-project-files';

/**
 * The `projects` read model (lib/read-models/projects.ts) against the evolve it replaced, kept
 * here as the reference: each event applied one by one, the document, its files in it, copied at
 * each, `_rev` stamped as lib/app/projection.ts stamps it. The project's document is folded in
 * one pass; its files are documents of their own (`project_files`), projected beside it.
 */

function evolvedOneByOne(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as ProjectEvent;
  if (event.type === 'ProjectCreated') {
    const d = event.data;
    const created: Omit<ProjectDoc, '_rev'> = {
      _id: d.project_id,
      id: d.project_id,
      name: d.name,
      name_key: d.name.toLowerCase(),
      drive_id: d.drive_id,
      folder_path: d.folder_path,
      created_by: d.created_by,
      created_at: d.created_at,
      updated_at: d.created_at,
      last_viewed_at: null,
      partner: d.partner ? { partner_drive_id: d.partner.partner_drive_id, source_id: d.partner.source_id ?? null } : null,
      media: [],
      compositions: [],
      files_rev: null,
    };
    return created as Doc;
  }
  if (!doc) return null;
  const project = doc as ProjectWithFiles;
  switch (event.type) {
    case 'MediaImported': {
      const m = event.data;
      const entry: ProjectMediaEntry = {
        ref: m.ref,
        asset_id: m.asset_id ?? null,
        type: m.media_type,
        duration: m.duration_seconds,
        has_video: m.has_video,
        transcript_key: null,
        language: m.language,
        tracks: m.tracks,
        updated_at: m.imported_at,
      };
      const media = [...project.media.filter((x) => x.ref !== m.ref), entry];
      return { ...project, media, updated_at: m.imported_at, files_rev: stored.revision };
    }
    case 'MediaTranscribed': {
      const t = event.data;
      const media = project.media.map((x) =>
        x.ref === t.ref ? { ...x, transcript_key: t.transcript_key, language: t.language, updated_at: t.transcribed_at } : x,
      );
      return { ...project, media, updated_at: t.transcribed_at, files_rev: stored.revision };
    }
    case 'CompositionAdded': {
      const c = event.data;
      if (project.compositions.some((x) => x.id === c.composition_id)) return project;
      return {
        ...project,
        compositions: [...project.compositions, { id: c.composition_id, short_id: c.short_id }],
        updated_at: c.created_at,
      };
    }
    case 'ProjectViewed':
      return { ...project, last_viewed_at: event.data.viewed_at };
    case 'ProjectEdited':
      return { ...project, updated_at: event.data.edited_at };
    default: {
      const legacy = stored.type === 'CompositionCreated' ? (stored.data as { composition_id: string; short_id: string }) : null;
      if (!legacy) return project;
      return { ...project, compositions: [...project.compositions, { id: legacy.composition_id, short_id: legacy.short_id }] };
    }
  }
}

const byReference = (doc: Doc | null, events: readonly StoredEvent[]): Doc | null => {
  for (const e of events) {
    const next = evolvedOneByOne(doc, e);
    doc = next ? { ...next, _rev: e.revision } : doc;
  }
  return doc;
};

/** The reference's project document: without its files. */
const withoutFiles = (doc: Doc | null): Doc | null => {
  if (!doc) return doc;
  const { media: _files, ...rest } = doc;
  return rest as Doc;
};

const T = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
let revision = 0;
const stored = (type: string, data: object): StoredEvent => {
  const r = revision++;
  return {
    id: `e${r}`,
    type,
    data: { project_id: 'p', ...data },
    metadata: { partition_key: 'p' },
    streamId: 'project-p',
    revision: r,
    position: String(r),
    createdAt: T(r),
  } as StoredEvent;
};
const created = () =>
  stored('ProjectCreated', {
    drive_id: 'd',
    name: 'Big Project',
    folder_path: 'A/B',
    team_access: 'none',
    created_by: 'u',
    job_id: null,
    created_at: T(revision),
  });
const imported = (ref: string) =>
  stored('MediaImported', {
    ...{ ref, asset_id: `asset-${ref}`, media_type: 'audio', duration_seconds: 3, blob_key: `k/${ref}`, size_bytes: 1 },
    ...{ has_audio: true, has_video: false, source_url: null, language: null, tracks: null, job_id: 'j', imported_at: T(revision) },
  });
const transcribed = (ref: string) =>
  stored('MediaTranscribed', {
    ref,
    transcript_key: `t/${ref}`,
    sha256: 'h',
    word_count: 1,
    language: 'fr',
    transcriber: 't',
    job_id: 'j',
    transcribed_at: T(revision),
  });
const added = (id: string) =>
  stored('CompositionAdded', { composition_id: id, short_id: id.slice(0, 5), name: id, origin: `${id}#0`, created_at: T(revision) });
const viewed = () => stored('ProjectViewed', { user_id: 'u', viewed_at: T(revision) });
const edited = (id: string) => stored('ProjectEdited', { composition_ids: [id], job_id: null, edited_at: T(revision) });
const legacy = (id: string) =>
  stored('CompositionCreated', {
    composition_id: id,
    short_id: id.slice(0, 5),
    name: id,
    origin: 'o',
    created_at: T(revision),
    clips: [],
    width: 1,
    height: 1,
  });
const unknown = () => stored('SomethingLater', {});

/**
 * A deterministic stream of every kind of event, files imported again and transcripts of no file
 * among them. It starts with the project's creation and has no other, as the decider writes it.
 */
function stream(seed: number, length: number): StoredEvent[] {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  revision = 0;
  const events: StoredEvent[] = [created()];
  while (events.length < length) {
    const pick = next();
    const ref = `f${Math.floor(next() * 40)}.wav`;
    if (pick < 0.4) events.push(imported(ref));
    else if (pick < 0.65) events.push(transcribed(ref));
    else if (pick < 0.8) events.push(added(`c${Math.floor(next() * 10)}`));
    else if (pick < 0.85) events.push(viewed());
    else if (pick < 0.9) events.push(edited(`c${Math.floor(next() * 10)}`));
    else if (pick < 0.95) events.push(legacy(`legacy${Math.floor(next() * 3)}`));
    else events.push(unknown());
  }
  return events;
}

describe('the projects document folded in one pass', () => {
  it('is the document evolving event by event made, whatever the batches and whatever it starts from', () => {
    for (const seed of [1, 2, 3, 4]) {
      const events = stream(seed, 160);
      const reference = byReference(null, events);
      const whole = withoutFiles(reference);
      assert.deepEqual(foldProjectDoc(null, events), whole, `seed ${seed}`);
      assert.deepEqual(foldDocument(events, evolveProjectDoc), whole);
      assert.deepEqual(foldProjectWithFiles(events), reference, 'with its files, folded from the stream');
      for (let cut = 0; cut <= events.length; cut += 7) {
        const first = foldProjectDoc(null, events.slice(0, cut));
        assert.deepEqual(first, withoutFiles(byReference(null, events.slice(0, cut))));
        // As the projector does: the first part written and read back (JSON), then the rest.
        const stored = first && (JSON.parse(JSON.stringify(first)) as Doc);
        assert.deepEqual(foldProjectDoc(stored, events.slice(cut)), whole, `seed ${seed}, cut ${cut}`);
      }
      const project = reference as ProjectWithFiles;
      assert.ok(project.media.length > 10 && project.compositions.length > 3 && project.last_viewed_at !== null);
      assert.ok(project.media.some((m) => m.transcript_key !== null));
    }
  });

  it('leaves the document it started from as it was', () => {
    const events = stream(9, 80);
    const start = foldProjectDoc(null, events.slice(0, 40))!;
    const copy = JSON.parse(JSON.stringify(start)) as Doc;
    foldProjectDoc(start, events.slice(40));
    foldProjectDoc(start, [imported('f1.wav'), transcribed('f1.wav'), added('new-one')]);
    assert.deepEqual(start, copy);
  });

  it('moves a file imported again to the end, as the list did', () => {
    revision = 0;
    const doc = foldProjectWithFiles([created(), imported('a'), imported('b'), imported('c'), transcribed('a'), imported('a')])!;
    assert.deepEqual(
      doc.media.map((m: ProjectMediaEntry) => [m.ref, m.transcript_key]),
      [
        ['b', null],
        ['c', null],
        ['a', null],
      ],
    );
    assert.equal(doc._rev, 5);
    assert.equal('media' in foldProjectDoc(null, [created(), imported('a')])!, false, 'the document holds no files');
  });
});

/** A project's events appended to a real store, read back as the projector gets them. */
async function storedStream(seed: number, length: number) {
  const events = stream(seed, length);
  const store = createSqliteEventStore({ path: ':memory:' });
  await store.append(
    'project-p',
    events.map(({ id, type, data }) => ({ id: `${seed}-${id}`, type, data, metadata: { partition_key: 'p' } })),
    'no_stream',
  );
  return { store, events: await store.readStream('project-p') };
}

/**
 * A read store whose next write to the collection `armed` names throws (a crash before the
 * documents' writes, or before the parts').
 */
function crashing(read: ReadStore) {
  const state = { armed: null as string | null, crashed: 0 };
  const check = (writes: readonly CollectionWrite[]) => {
    if (state.armed && writes.some((w) => w.collection === state.armed)) {
      state.armed = null;
      state.crashed++;
      throw new Error('crash');
    }
  };
  const wrapped: ReadStore = {
    ...read,
    put: async (collection, doc, expectedRev) => (check([{ collection, doc, expectedRev }]), read.put(collection, doc, expectedRev)),
    putMany: async (writes) => (check(writes), read.putMany(writes)),
  };
  return { read: wrapped, state };
}

/**
 * The document without its revision: the reference stamps every event, the projector only those
 * the model reads (or all of them, when it heals a gap from the store).
 */
const unstamped = (doc: Doc | null) => {
  if (!doc) return doc;
  const { _rev: _revision, ...rest } = doc;
  return rest;
};

describe('the projects read model: a document per project, a document per file', () => {
  it('projects what the reference makes, in batches, with redeliveries, gaps and a crash between the writes', async () => {
    for (const seed of [5, 6, 7]) {
      const { store, events } = await storedStream(seed, 400);
      const reference = byReference(null, events) as ProjectWithFiles;
      const base = createSqliteReadStore({ path: ':memory:' });
      const { read, state } = crashing(base);
      const deps = { read, store };
      await prepareModels(read, [projectsModel]);
      const kept = keptProjectFiles({ keptFrom: 1 });
      let s = seed;
      const next = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      let at = 0;
      let gaps = 0;
      let aheadUpTo = 0;
      let checked = 0;
      while (at < events.length) {
        const size = 1 + Math.floor(next() * 12);
        const pick = next();
        // A batch that starts a few events back (redelivered), or skips a few (a gap, healed from the store).
        const from = pick < 0.2 ? Math.max(0, at - 5) : pick < 0.3 && at > 0 ? Math.min(events.length - 1, at + 3) : at;
        if (from > at) gaps++;
        const batch = events.slice(from, from + size);
        if (pick > 0.9) state.armed = next() < 0.5 ? PROJECTS : PROJECT_FILES;
        try {
          await projectBatch(deps, [projectsModel], batch);
        } catch {
          // Not acknowledged, so delivered again. Until then a file may be ahead of the document:
          // its parts were written, the document not.
          aheadUpTo = Math.max(aheadUpTo, from + batch.length);
          continue;
        }
        at = Math.max(at, from + batch.length);
        if (at < aheadUpTo) continue;
        const project = await readProject(base, 'p');
        const expected = unstamped(byReference(null, events.slice(0, at)));
        assert.deepEqual(unstamped(project), expected, `seed ${seed}, after event ${at}`);
        // Twice through files kept by their `files_rev`: once kept (or read), once from what was kept.
        for (let i = 0; i < 2; i++)
          assert.deepEqual(unstamped(await readProject(base, 'p', kept.read)), expected, `kept, after event ${at}`);
        checked++;
      }
      assert.ok(checked > 15, `checked ${checked} times`);
      assert.ok(gaps > 0 && state.crashed > 0, `gaps (${gaps}) and crashes (${state.crashed}) were met`);
      assert.ok(kept.stats().hits > checked, `files answered from those kept (${JSON.stringify(kept.stats())})`);
      assert.deepEqual(unstamped(await readProject(base, 'p')), unstamped(reference));
      const some = reference.media.slice(0, 3).map((m) => m.ref);
      assert.deepEqual(
        (await projectFilesOf(base, 'p', [...some, 'no-such-file'])).sort((a, b) => a.ref.localeCompare(b.ref)),
        reference.media.filter((m) => some.includes(m.ref)).sort((a, b) => a.ref.localeCompare(b.ref)),
      );
      // A rebuild from the store makes the same.
      await rebuildModels({ read: base, store, batchSize: 17 }, [projectsModel]);
      assert.deepEqual(unstamped(await readProject(base, 'p')), unstamped(reference));
      assert.equal((await base.find(PROJECT_FILES, {})).length, reference.media.length, 'nothing else left in the files');
      await base.close();
      await store.close();
    }
  });

  it("reads a file's document, not the project's, for one file", async () => {
    const { store, events } = await storedStream(11, 60);
    const read = createSqliteReadStore({ path: ':memory:' });
    await prepareModels(read, [projectsModel]);
    await projectBatch({ read, store }, [projectsModel], events);
    const doc = (await read.get(PROJECTS, 'p')) as ProjectDoc;
    assert.equal('media' in doc, false);
    const files = await read.find(PROJECT_FILES, { project_id: 'p' });
    assert.ok(files.length > 5);
    for (const f of files) assert.equal(f._id, `p/${String(f.ref)}`);
    await read.close();
    await store.close();
  });
});

describe("a project's files kept by their files_rev (the query API's keptProjectFiles)", () => {
  /** A read store that counts the finds of `project_files`: the reads of a project's files. */
  const counting = (read: ReadStore) => {
    const count = { finds: 0 };
    const queries: ReadStore = {
      ...read,
      find: async (collection, filter, options) => {
        if (collection === PROJECT_FILES) count.finds++;
        return read.find(collection, filter, options);
      },
    };
    return { queries, count };
  };

  it('reads them again only when a file changed, never older than the document', async () => {
    revision = 0;
    const events = [created(), imported('a.wav'), imported('b.wav'), imported('c.wav')];
    const store = createSqliteEventStore({ path: ':memory:' });
    const read = createSqliteReadStore({ path: ':memory:' });
    await prepareModels(read, [projectsModel]);
    const { queries, count } = counting(read);
    const kept = keptProjectFiles({ keptFrom: 3 });
    const project = async (more: StoredEvent[]) => {
      if (more.length > 0) await projectBatch({ read, store }, [projectsModel], more);
      return (await readProject(queries, 'p', kept.read))!;
    };
    const first = await project(events);
    assert.deepEqual(
      first.media.map((m) => m.ref),
      ['a.wav', 'b.wav', 'c.wav'],
    );
    assert.equal(count.finds, 1);
    await project([]);
    assert.equal(count.finds, 1, 'the same files: kept');
    // A view, a composition: the document moves, its files do not.
    const seen = await project([viewed(), added('c1')]);
    assert.equal(seen.last_viewed_at, T(4));
    assert.deepEqual(seen.compositions, [{ id: 'c1', short_id: 'c1' }]);
    assert.equal(count.finds, 1, 'files kept across a view and a new composition');
    assert.equal(seen.media, first.media);
    // A transcription, an import again: read again.
    const heard = await project([transcribed('b.wav')]);
    assert.equal(count.finds, 2);
    assert.equal(heard.media.find((m) => m.ref === 'b.wav')?.transcript_key, 't/b.wav');
    const again = await project([imported('a.wav')]);
    assert.deepEqual(
      again.media.map((m) => m.ref),
      ['b.wav', 'c.wav', 'a.wav'],
    );
    assert.equal(count.finds, 3);
    assert.throws(
      () => (again.media as ProjectMediaEntry[]).push(again.media[0]!),
      TypeError,
      'what is kept cannot be changed by a reader',
    );
    assert.deepEqual(kept.stats(), { entries: 1, hits: 2, misses: 3 });
    await read.close();
    await store.close();
  });

  it('keeps no small project, and drops the least recently read past its bound', async () => {
    const store = createSqliteEventStore({ path: ':memory:' });
    const read = createSqliteReadStore({ path: ':memory:' });
    await prepareModels(read, [projectsModel]);
    const { queries, count } = counting(read);
    const kept = keptProjectFiles({ keptFrom: 3, maxFiles: 7 });
    const projectOf = (id: string, files: number) => {
      revision = 0;
      const events = [created(), ...Array.from({ length: files }, (_, i) => imported(`f${i}.wav`))];
      return events.map((e) => ({ ...e, streamId: `project-${id}`, data: { ...(e.data as object), project_id: id } }) as StoredEvent);
    };
    for (const [id, files] of [
      ['small', 2],
      ['p1', 4],
      ['p2', 3],
      ['p3', 3],
    ] as const) {
      await projectBatch({ read, store }, [projectsModel], projectOf(id, files));
    }
    const reads = async (id: string) => {
      const before = count.finds;
      await readProject(queries, id, kept.read);
      return count.finds - before;
    };
    assert.equal(await reads('small'), 1);
    assert.equal(await reads('small'), 1, 'two files: read each time');
    assert.equal(await reads('p1'), 1);
    assert.equal(await reads('p2'), 1);
    assert.equal(await reads('p1'), 0);
    assert.equal(await reads('p3'), 1, 'p2, the least recently read, goes: 4 + 3 files within 7');
    assert.equal(await reads('p1'), 0);
    assert.equal(await reads('p2'), 1);
    await read.close();
    await store.close();
  });
});
