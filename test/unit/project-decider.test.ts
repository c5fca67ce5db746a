import assert from 'node:assert/strict';
import {
  decideProject,
  evolveProject,
  foldProject,
  initialProjectState,
  mediaHasVideo,
  recordEdit,
  type ProjectEvent,
  type ProjectState,
} from '../../lib/domain/project';
import { specFor } from '../fixtures/given';

const given = specFor({ initialState: initialProjectState, evolve: evolveProject, decide: decideProject });
const T0 = '2026-01-01T00:00:00.000Z';
const project = {
  project_id: 'p',
  drive_id: 'd',
  name: 'P',
  folder_path: null,
  team_access: 'none' as const,
  created_by: 'u',
  job_id: 'job-1',
};
const created: ProjectEvent = { type: 'ProjectCreated', data: { ...project, created_at: T0 } };
const file = (ref: string, jobId: string, seconds: number, video = false) => ({
  project_id: 'p',
  ref,
  media_type: (video ? 'video' : 'audio') as 'video' | 'audio',
  duration_seconds: seconds,
  blob_key: `k/${ref}`,
  size_bytes: 10,
  has_audio: true,
  has_video: video,
  source_url: null,
  language: null,
  tracks: null,
  job_id: jobId,
});
const imported = (ref: string, jobId = 'job-1', seconds = 2, video = false): ProjectEvent => ({
  type: 'MediaImported',
  data: { ...file(ref, jobId, seconds, video), imported_at: T0 },
});

describe('project decider', () => {
  it('creates a project', () => given().when({ type: 'CreateProject', project, now: T0 }).then([created]));
  it('is idempotent when the same job creates it again', () => given(created).when({ type: 'CreateProject', project, now: T0 }).then([]));
  it('refuses another creation of an existing project', () =>
    given(created)
      .when({ type: 'CreateProject', project: { ...project, job_id: 'job-2' }, now: T0 })
      .thenRejects('conflict'));

  it('adds media', () =>
    given(created)
      .when({ type: 'AddMedia', file: file('a.wav', 'job-1', 2), now: T0 })
      .then([imported('a.wav')]));
  it('adds the same media from the same job once', () =>
    given(created, imported('a.wav'))
      .when({ type: 'AddMedia', file: file('a.wav', 'job-1', 2), now: T0 })
      .then([]));
  it('refuses a reference another job already imported', () =>
    given(created, imported('a.wav'))
      .when({ type: 'AddMedia', file: file('a.wav', 'job-2', 2), now: T0 })
      .thenRejects('invalid_input'));
  it('refuses media for a project that does not exist', () =>
    given()
      .when({ type: 'AddMedia', file: file('a.wav', 'j', 1), now: T0 })
      .thenRejects('not_found'));

  it('adds media with its transcript in one decision', () =>
    given(created)
      .when({
        type: 'AddMedia',
        file: file('a.wav', 'job-1', 2),
        transcript: { transcript_key: 'transcripts/ab.json', sha256: 'ab', word_count: 3, language: 'en', transcriber: 'openai' },
        now: T0,
      })
      .then([
        imported('a.wav'),
        {
          type: 'MediaTranscribed',
          data: {
            project_id: 'p',
            ref: 'a.wav',
            transcript_key: 'transcripts/ab.json',
            sha256: 'ab',
            word_count: 3,
            language: 'en',
            transcriber: 'openai',
            job_id: 'job-1',
            transcribed_at: T0,
          },
        },
      ]));
  it('keeps the transcript reference on the media file', () => {
    const [, transcribed] = decideProject(
      {
        type: 'AddMedia',
        file: file('a.wav', 'job-1', 2),
        transcript: { transcript_key: 'k', sha256: 's', word_count: 1, language: null, transcriber: 'pocketsphinx' },
        now: T0,
      },
      evolveProject(initialProjectState(), created),
    ) as ProjectEvent[];
    const state = [created, imported('a.wav'), transcribed].reduce(evolveProject, initialProjectState());
    assert.ok(state.exists);
    assert.equal(state.media.get('a.wav')?.transcript?.transcript_key, 'k');
  });

  const compose = (candidateIds: string[]) => ({
    type: 'AddComposition' as const,
    origin: 'job-1#0',
    name: 'Main',
    candidateIds,
    now: T0,
  });
  it('lists a composition with a short id free in the project', () =>
    given(created, imported('a.wav'))
      .when(compose(['abcde000-0000-4000-8000-000000000000']))
      .then([
        {
          type: 'CompositionAdded',
          data: {
            project_id: 'p',
            composition_id: 'abcde000-0000-4000-8000-000000000000',
            short_id: 'abcde',
            name: 'Main',
            origin: 'job-1#0',
            created_at: T0,
          },
        },
      ]));
  it('picks the next candidate when a short id is taken, also by a composition of the old whole-project shape', () => {
    // Before compositions had their own streams, the project stream held them whole.
    const legacy = {
      type: 'CompositionCreated',
      data: {
        project_id: 'p',
        composition_id: 'abcde000-0000-4000-8000-000000000000',
        short_id: 'abcde',
        name: 'Old',
        clips: [],
        width: 1,
        height: 1,
        origin: 'other#0',
        created_at: T0,
      },
    } as unknown as ProjectEvent;
    const state = [created, imported('a.wav'), legacy].reduce(evolveProject, initialProjectState());
    assert.ok(state.exists);
    assert.deepEqual(
      state.compositions.map((c) => c.short_id),
      ['abcde'],
    );
    const events = decideProject(compose(['abcde111-0000-4000-8000-000000000000', 'fffff000-0000-4000-8000-000000000000']), state);
    assert.ok(Array.isArray(events));
    assert.equal(events[0].type === 'CompositionAdded' && events[0].data.short_id, 'fffff');
  });
  it('lists a composition once per origin', () => {
    const state = [created, imported('a.wav')].reduce(evolveProject, initialProjectState());
    const events = decideProject(compose(['abcde000-0000-4000-8000-000000000000']), state) as ProjectEvent[];
    given(created, imported('a.wav'), ...events)
      .when(compose(['abcde000-0000-4000-8000-000000000000']))
      .then([]);
  });

  it("tells whether a media reference plays video, through a sequence's tracks too", () => {
    const sequence: ProjectEvent = {
      type: 'MediaImported',
      data: { ...file('s', 'job-1', 2), media_type: 'sequence', has_video: false, tracks: [{ media: 'v', offset: 0 }], imported_at: T0 },
    };
    const state = [created, imported('a'), imported('v', 'job-1', 2, true), sequence].reduce(evolveProject, initialProjectState());
    assert.ok(state.exists);
    assert.equal(mediaHasVideo(state.media, 'v'), true);
    assert.equal(mediaHasVideo(state.media, 's'), true);
    assert.equal(mediaHasVideo(state.media, 'a'), false);
    assert.equal(mediaHasVideo(state.media, 'constructor'), false);
  });

  it('records a view at most once a minute per user, without making the project updated', () => {
    const viewed = (user: string, at: string): ProjectEvent => ({
      type: 'ProjectViewed',
      data: { project_id: 'p', user_id: user, viewed_at: at },
    });
    const view = (user: string, now: string) => ({ type: 'RecordView' as const, userId: user, now });
    given(created)
      .when(view('u1', T0))
      .then([viewed('u1', T0)]);
    given(created, viewed('u1', T0)).when(view('u1', '2026-01-01T00:00:59.000Z')).then([]);
    given(created, viewed('u1', T0))
      .when(view('u1', '2026-01-01T00:01:00.000Z'))
      .then([viewed('u1', '2026-01-01T00:01:00.000Z')]);
    given(created, viewed('u1', T0))
      .when(view('u2', T0))
      .then([viewed('u2', T0)]);
    given().when(view('u1', T0)).thenRejects('not_found');
    const state = [created, viewed('u1', '2026-02-01T00:00:00.000Z')].reduce(evolveProject, initialProjectState());
    assert.ok(state.exists);
    assert.equal(state.updatedAt, T0);
  });

  it('records edits of its compositions, each composition named once, and they make the project updated', () => {
    const edit = recordEdit({ projectId: 'p', compositionIds: ['c1', 'c2', 'c1'], jobId: 'j', now: '2026-02-01T00:00:00.000Z' });
    assert.deepEqual(edit, {
      type: 'ProjectEdited',
      data: { project_id: 'p', composition_ids: ['c1', 'c2'], job_id: 'j', edited_at: '2026-02-01T00:00:00.000Z' },
    });
    const state = [created, edit].reduce(evolveProject, initialProjectState());
    assert.ok(state.exists);
    assert.equal(state.updatedAt, '2026-02-01T00:00:00.000Z');
    assert.equal(evolveProject(initialProjectState(), edit).exists, false, 'an edit of no project is no project');
  });
});

describe('folding a project stream', () => {
  const transcribed = (ref: string, at: string): ProjectEvent => ({
    type: 'MediaTranscribed',
    data: {
      project_id: 'p',
      ref,
      transcript_key: `t/${ref}`,
      sha256: 'h',
      word_count: 3,
      language: 'en',
      transcriber: 't',
      job_id: 'job-1',
      transcribed_at: at,
    },
  });
  const added = (id: string, at: string): ProjectEvent => ({
    type: 'CompositionAdded',
    data: { project_id: 'p', composition_id: id, short_id: id.slice(0, 5), name: id, origin: `${id}#0`, created_at: at },
  });
  const viewed = (user: string, at: string): ProjectEvent => ({
    type: 'ProjectViewed',
    data: { project_id: 'p', user_id: user, viewed_at: at },
  });
  const legacy = {
    type: 'CompositionCreated',
    data: {
      project_id: 'p',
      composition_id: 'legacy-1',
      short_id: 'legac',
      name: 'Old',
      origin: 'old#0',
      created_at: '2026-01-03T00:00:00.000Z',
      clips: [],
      width: 1,
      height: 1,
    },
  } as unknown as ProjectEvent;
  const unknown = { type: 'SomethingLater', data: {} } as unknown as ProjectEvent;
  const events: ProjectEvent[] = [
    imported('before-creation.wav'), // ignored: no project yet
    viewed('u0', T0),
    created,
    transcribed('not-there.wav', '2026-01-01T00:00:01.000Z'), // ignored: no such media
    imported('a.wav'),
    {
      ...imported('b.mp4', 'job-2', 5, true),
      data: { ...imported('b.mp4').data, imported_at: '2026-01-02T00:00:00.000Z' },
    } as ProjectEvent,
    transcribed('a.wav', '2026-01-02T00:00:01.000Z'),
    added('comp-1', '2026-01-02T00:00:02.000Z'),
    viewed('u1', '2026-01-05T00:00:00.000Z'), // a view does not make the project updated
    legacy,
    unknown,
    added('comp-2', '2026-01-04T00:00:00.000Z'),
    viewed('u1', '2026-01-06T00:00:00.000Z'),
    viewed('u2', '2026-01-06T00:00:00.000Z'),
  ];
  const plain = (s: ProjectState) => (s.exists ? { ...s, media: [...s.media], viewedBy: [...s.viewedBy] } : s);

  it('is the same state as evolving event by event, whatever the batches', () => {
    const stepwise = events.reduce(evolveProject, initialProjectState());
    assert.deepEqual(plain(foldProject(initialProjectState(), events)), plain(stepwise));
    for (let cut = 0; cut <= events.length; cut++) {
      const inTwo = foldProject(foldProject(initialProjectState(), events.slice(0, cut)), events.slice(cut));
      assert.deepEqual(plain(inTwo), plain(stepwise), `cut at ${cut}`);
    }
    assert.ok(stepwise.exists);
    assert.deepEqual([...stepwise.media.keys()], ['a.wav', 'b.mp4']);
    assert.equal(stepwise.media.get('a.wav')!.transcript?.transcript_key, 't/a.wav');
    assert.deepEqual(
      stepwise.compositions.map((c) => c.composition_id),
      ['comp-1', 'legacy-1', 'comp-2'],
    );
    assert.equal(stepwise.updatedAt, '2026-01-04T00:00:00.000Z');
    assert.deepEqual(
      [...stepwise.viewedBy],
      [
        ['u1', '2026-01-06T00:00:00.000Z'],
        ['u2', '2026-01-06T00:00:00.000Z'],
      ],
    );
  });

  it('leaves the state it started from as it was (handlers keep it), and returns it when nothing applies', () => {
    const before = foldProject(initialProjectState(), events.slice(0, 8));
    const copy = plain(before);
    foldProject(before, events.slice(8));
    foldProject(before, [imported('c.wav'), transcribed('a.wav', '2026-03-01T00:00:00.000Z'), added('comp-3', T0), viewed('u9', T0)]);
    assert.deepEqual(plain(before), copy);
    assert.equal(foldProject(before, [unknown, transcribed('nothing.wav', T0)]), before);
    assert.equal(foldProject(initialProjectState(), [imported('x.wav')]).exists, false);
  });

  it('takes time in proportion to the events, not to events times files (counted in Map writes)', () => {
    const many: ProjectEvent[] = [created];
    for (let i = 0; i < 3000; i++) many.push(imported(`f${i}.wav`), transcribed(`f${i}.wav`, T0), viewed(`u${i % 7}`, T0));
    const set = Map.prototype.set;
    let writes = 0;
    Map.prototype.set = function (this: Map<unknown, unknown>, key: unknown, value: unknown) {
      writes += 1;
      return set.call(this, key, value);
    };
    try {
      const state = foldProject(initialProjectState(), many);
      assert.ok(state.exists && state.media.size === 3000);
    } finally {
      Map.prototype.set = set;
    }
    // Each event writes one entry; copying the media map per event wrote about 9 million.
    assert.ok(writes <= 2 * many.length, `${writes} Map writes for ${many.length} events`);
  });
});
