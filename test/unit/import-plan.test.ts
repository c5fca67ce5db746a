import assert from 'node:assert/strict';
import { planImport } from '../../lib/app/import-plan';
import { decodeCursor, encodeCursor } from '../../lib/http/cursor';
import { fieldPath } from '../../lib/http/schemas';

describe('import plan', () => {
  const url = 'https://m.example.com/a.wav';
  it('fills defaults and resolves clips and tracks against the request and the project', () => {
    const plan = planImport(
      {
        project_id: 'p',
        add_media: { 'b.wav': { url, language: 'de' }, seq: { tracks: [{ media: 'old.wav' }, { media: 'b.wav', offset: 2 }] } },
        add_compositions: [{ name: 'C', clips: [{ media: 'old.wav' }, { media: 'seq' }] }],
      },
      new Set(['old.wav']),
    );
    assert.deepEqual(plan, {
      media: [
        ['b.wav', { url, language: 'de' }],
        [
          'seq',
          {
            tracks: [
              { media: 'old.wav', offset: 0 },
              { media: 'b.wav', offset: 2 },
            ],
          },
        ],
      ],
      compositions: [{ name: 'C', clips: ['old.wav', 'seq'], width: 1920, height: 1080 }],
    });
  });
  it('refuses a sequence made of a sequence', () => {
    assert.throws(
      () =>
        planImport(
          { project_name: 'x', add_media: { a: { url }, s1: { tracks: [{ media: 'a' }] }, s2: { tracks: [{ media: 's1' }] } } },
          new Set(),
        ),
      /s2/,
    );
  });
});

describe('field paths and cursors', () => {
  it('names fields the way a user wrote them', () => {
    assert.equal(fieldPath('/add_media/a b.mp4/url'), 'add_media["a b.mp4"].url');
    assert.equal(fieldPath('/add_media/dir~1clip.mp4'), 'add_media["dir/clip.mp4"]');
    assert.equal(fieldPath('/add_compositions/0/clips/3', 'media'), 'add_compositions[0].clips[3].media');
    assert.equal(fieldPath('', 'prompt'), 'prompt');
  });
  it('round-trips a cursor and refuses garbage', () => {
    const p = { sort: 'created_at', direction: 'desc' as const, value: '2026-01-01T00:00:00Z', id: 'id-1' };
    assert.deepEqual(decodeCursor(encodeCursor(p), p), p);
    assert.deepEqual(decodeCursor(encodeCursor({ ...p, value: null }), p).value, null);
    assert.throws(() => decodeCursor(encodeCursor(p), { sort: 'name', direction: 'desc' }), /cursor belongs to sort=created_at/);
    assert.throws(() => decodeCursor('garbage', p), /cursor/);
    assert.throws(() => decodeCursor(Buffer.from('{"a":1}').toString('base64url'), p), /cursor/);
    const listed = { ...p, list: 'projects' };
    assert.deepEqual(decodeCursor(encodeCursor(listed), listed), listed);
    assert.throws(() => decodeCursor(encodeCursor(listed), { ...p, list: 'jobs' }), /cursor belongs to another list \(projects\)/);
    assert.throws(() => decodeCursor(encodeCursor({ ...p, value: 'yesterday' }), p), /not a cursor this API returned/);
  });
});
