import assert from 'node:assert/strict';
import {
  compositionDuration,
  compositionMediaType,
  decideProject,
  evolveProject,
  initialProjectState,
  type ProjectEvent,
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

  const compose = (candidateIds: string[], clipMedia = ['a.wav', 'missing.wav']) => ({
    type: 'CreateComposition' as const,
    origin: 'job-1#0',
    name: 'Main',
    clipMedia,
    width: 1920,
    height: 1080,
    candidateIds,
    now: T0,
  });
  it('creates a composition from the imported clips, skipping media that is not there', () =>
    given(created, imported('a.wav'))
      .when(compose(['abcde000-0000-4000-8000-000000000000']))
      .then([
        {
          type: 'CompositionCreated',
          data: {
            project_id: 'p',
            composition_id: 'abcde000-0000-4000-8000-000000000000',
            short_id: 'abcde',
            name: 'Main',
            clips: [{ media: 'a.wav', in: 0, out: 2 }],
            width: 1920,
            height: 1080,
            origin: 'job-1#0',
            created_at: T0,
          },
        },
      ]));
  it('picks the next candidate when a short id is taken in the project', () => {
    const first = {
      type: 'CompositionCreated' as const,
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
    };
    const events = decideProject(
      compose(['abcde111-0000-4000-8000-000000000000', 'fffff000-0000-4000-8000-000000000000']),
      [created, imported('a.wav'), first].reduce(evolveProject, initialProjectState()),
    );
    assert.ok(Array.isArray(events));
    assert.equal(events[0].type === 'CompositionCreated' && events[0].data.short_id, 'fffff');
  });
  it('creates a composition once per origin', () => {
    const state = [created, imported('a.wav')].reduce(evolveProject, initialProjectState());
    const events = decideProject(compose(['abcde000-0000-4000-8000-000000000000']), state) as ProjectEvent[];
    given(created, imported('a.wav'), ...events)
      .when(compose(['abcde000-0000-4000-8000-000000000000']))
      .then([]);
  });

  it('measures compositions: duration is the clips end to end; video when any clip has video', () => {
    const clips = [
      { media: 'a', in: 0, out: 2.5 },
      { media: 'v', in: 1, out: 2 },
    ];
    assert.equal(compositionDuration(clips), 3.5);
    const state = [created, imported('a'), imported('v', 'job-1', 2, true)].reduce(evolveProject, initialProjectState());
    assert.ok(state.exists);
    assert.equal(compositionMediaType(clips, state.media), 'video');
    assert.equal(compositionMediaType([clips[0]], state.media), 'audio');
  });
});
