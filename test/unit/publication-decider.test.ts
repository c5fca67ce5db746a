import assert from 'node:assert/strict';
import {
  evolvePublication,
  formatDuration,
  publicationDecider,
  publicationReadState,
  shareUrl,
  type PublicationCommand,
  type PublicationEvent,
} from '../../lib/domain/publication';
import type { AccessLevel } from '../../lib/domain/tenancy';
import { specFor } from '../fixtures/given';

describe('publication decider', () => {
  const given = specFor(publicationDecider);
  const T = '2026-01-01T00:00:00.000Z';
  const T2 = '2026-01-02T00:00:00.000Z';
  const publisher = { user_id: 'u1', first_name: 'Ada', last_name: 'Lovelace' };
  const publication = {
    slug: 'AAAAAAAAAAAAAAAA',
    project_id: 'p1',
    drive_id: 'd1',
    composition_id: 'c1',
    media_type: 'Video' as const,
    access_level: 'unlisted' as AccessLevel,
    job_id: 'j1',
    published_by: publisher,
  };
  const start = (over: Partial<typeof publication> = {}): PublicationCommand => ({
    type: 'StartPublication',
    publication: { ...publication, ...over },
    now: T,
  });
  const started: PublicationEvent = { type: 'PublicationStarted', data: { ...publication, publication_id: 'c1-video', started_at: T } };
  const render = {
    job_id: 'j1',
    blob_key: 'd1/p1/render-x',
    captions_blob_key: 'd1/p1/render-x.vtt',
    content_type: 'video/mp4',
    size_bytes: 10,
    duration_seconds: 3,
    width: 1280,
    height: 720,
    title: 'Interview',
  };
  const rendered: PublicationEvent = {
    type: 'PublicationRendered',
    data: { publication_id: 'c1-video', slug: publication.slug, ...render, rendered_at: T },
  };

  it('starts a new publication with the slug it is given, named by composition and media type', () => {
    given().when(start()).then([started]);
  });

  it('keeps the first slug when republished (SPEC republish rule), with the newest job and access level', () => {
    given(started, rendered)
      .when(start({ slug: 'BBBBBBBBBBBBBBBB', job_id: 'j2', access_level: 'public' }))
      .then([
        {
          type: 'PublicationStarted',
          data: {
            ...publication,
            slug: 'AAAAAAAAAAAAAAAA',
            job_id: 'j2',
            access_level: 'public',
            publication_id: 'c1-video',
            started_at: T,
          },
        },
      ]);
  });

  it('starts a job once: a retried attempt writes nothing', () => {
    given(started).when(start()).then([]);
  });

  it('records the render of the newest job once; a superseded job is refused', () => {
    given(started).when({ type: 'RecordRender', render, now: T }).then([rendered]);
    given(started, rendered).when({ type: 'RecordRender', render, now: T }).then([]);
    const restarted: PublicationEvent = { type: 'PublicationStarted', data: { ...started.data, job_id: 'j2' } };
    given(started, restarted).when({ type: 'RecordRender', render, now: T }).thenRejects('conflict', { state: 'superseded' });
    given().when({ type: 'RecordRender', render, now: T }).thenRejects('not_found');
  });

  it('serves the previous render while a republish runs; published_at stays the first render', () => {
    const restarted: PublicationEvent = { type: 'PublicationStarted', data: { ...started.data, job_id: 'j2' } };
    const second: PublicationEvent = { type: 'PublicationRendered', data: { ...rendered.data, job_id: 'j2', rendered_at: T2 } };
    const during = [started, rendered, restarted].reduce(evolvePublication, publicationDecider.initialState());
    assert.ok(during.exists);
    assert.equal(during.render?.job_id, 'j1');
    assert.equal(publicationReadState(during, false), 'published');
    const after = evolvePublication(during, second);
    assert.ok(after.exists);
    assert.equal(after.render?.job_id, 'j2');
    assert.equal(after.published_at, T);
  });

  it('reads processing until the first render, failed when the job ended without one', () => {
    const s = [started].reduce(evolvePublication, publicationDecider.initialState());
    assert.ok(s.exists);
    assert.equal(publicationReadState(s, false), 'processing');
    assert.equal(publicationReadState(s, true), 'failed');
  });

  it('formats durations as HH:MM:SS and share URLs under /s/', () => {
    assert.equal(formatDuration(0), '00:00:00');
    assert.equal(formatDuration(59.6), '00:01:00');
    assert.equal(formatDuration(3725), '01:02:05');
    assert.equal(shareUrl('http://web.test/', 'AAAAAAAAAAAAAAAA'), 'http://web.test/s/AAAAAAAAAAAAAAAA');
  });
});
