import assert from 'node:assert/strict';
import { foldDocument } from '../../lib/app/projection';
import type { ProjectEvent } from '../../lib/domain/project';
import type { StoredEvent } from '../../lib/ports/event-store';
import type { Doc } from '../../lib/ports/read-store';
import { evolveProjectDoc, foldProjectDoc, type ProjectDoc, type ProjectMediaEntry } from '../../lib/read-models/projects';

/**
 * The `projects` document folded in one pass (lib/read-models/projects.ts) against the evolve it
 * replaced, kept here as the reference: each event applied one by one, the document copied at
 * each, `_rev` stamped as lib/app/projection.ts stamps it.
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
    };
    return created as Doc;
  }
  if (!doc) return null;
  const project = doc as ProjectDoc;
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
      return { ...project, media: [...project.media.filter((x) => x.ref !== m.ref), entry], updated_at: m.imported_at };
    }
    case 'MediaTranscribed': {
      const t = event.data;
      const media = project.media.map((x) =>
        x.ref === t.ref ? { ...x, transcript_key: t.transcript_key, language: t.language, updated_at: t.transcribed_at } : x,
      );
      return { ...project, media, updated_at: t.transcribed_at };
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

/** A deterministic stream of every kind of event, files imported again and transcripts of no file among them. */
function stream(seed: number, length: number): StoredEvent[] {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  revision = 0;
  const events: StoredEvent[] = [imported('too-early.wav'), created()];
  while (events.length < length) {
    // Never written by the decider, but an evolve takes it: the document starts again.
    if (events.length === Math.floor(length / 4)) events.push(created());
    const pick = next();
    const ref = `f${Math.floor(next() * 40)}.wav`;
    if (pick < 0.4) events.push(imported(ref));
    else if (pick < 0.65) events.push(transcribed(ref));
    else if (pick < 0.8) events.push(added(`c${Math.floor(next() * 10)}`));
    else if (pick < 0.9) events.push(viewed());
    else if (pick < 0.95) events.push(legacy(`legacy${Math.floor(next() * 3)}`));
    else events.push(unknown());
  }
  return events;
}

describe('the projects document folded in one pass', () => {
  it('is the document evolving event by event made, whatever the batches and whatever it starts from', () => {
    for (const seed of [1, 2, 3, 4]) {
      const events = stream(seed, 160);
      const whole = byReference(null, events);
      assert.deepEqual(foldProjectDoc(null, events), whole, `seed ${seed}`);
      assert.deepEqual(foldDocument(events, evolveProjectDoc), whole);
      for (let cut = 0; cut <= events.length; cut += 7) {
        const first = foldProjectDoc(null, events.slice(0, cut));
        assert.deepEqual(first, byReference(null, events.slice(0, cut)));
        // As the projector does: the first part written and read back (JSON), then the rest.
        const stored = first && (JSON.parse(JSON.stringify(first)) as Doc);
        assert.deepEqual(foldProjectDoc(stored, events.slice(cut)), whole, `seed ${seed}, cut ${cut}`);
      }
      const project = whole as ProjectDoc;
      assert.ok(project.media.length > 10 && project.compositions.length > 3 && project.last_viewed_at !== null);
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
    const doc = foldProjectDoc(null, [
      created(),
      imported('a'),
      imported('b'),
      imported('c'),
      transcribed('a'),
      imported('a'),
    ]) as ProjectDoc;
    assert.deepEqual(
      doc.media.map((m: ProjectMediaEntry) => [m.ref, m.transcript_key]),
      [
        ['b', null],
        ['c', null],
        ['a', null],
      ],
    );
    assert.equal(doc._rev, 5);
  });
});
