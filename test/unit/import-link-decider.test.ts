import assert from 'node:assert/strict';
import { partnerImportRequest } from '../../lib/app/import-link';
import { planImport } from '../../lib/app/import-plan';
import {
  IMPORT_LINK_TTL_MS,
  importLinkDecider,
  importLinkStatus,
  type ImportLinkEvent,
  type ImportLinkFile,
  type ImportLinkState,
} from '../../lib/domain/import-link';
import { specFor } from '../fixtures/given';

const given = specFor(importLinkDecider);
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T01:00:00.000Z';
const T3H = '2026-01-01T03:00:00.000Z';
const NONCE = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const files: ImportLinkFile[] = [{ uri: 'https://cdn.example/a.wav', name: null, start_offset: null }];
const link = { nonce: NONCE, drive_id: 'partner-drive', partner_drive_id: 'partner-drive', source_id: 'ep-1', files };
const issued: ImportLinkEvent = { type: 'ImportLinkIssued', data: { ...link, expires_at: T3H, issued_at: T0 } };
const use = (now: string, user = 'u1') => ({
  type: 'UseImportLink' as const,
  by: { drive_id: 'user-drive', user_id: user },
  project_id: 'p1',
  job_id: 'j1',
  now,
});
const used: ImportLinkEvent = {
  type: 'ImportLinkUsed',
  data: { nonce: NONCE, used_by_drive: 'user-drive', used_by_user: 'u1', project_id: 'p1', job_id: 'j1', used_at: T1 },
};
const fold = (...events: ImportLinkEvent[]): ImportLinkState => events.reduce(importLinkDecider.evolve, importLinkDecider.initialState());

describe('import link decider', () => {
  it('issues a link valid for 3 hours from now', () => {
    assert.equal(IMPORT_LINK_TTL_MS, 3 * 3600 * 1000);
    given().when({ type: 'IssueImportLink', link, validForMs: IMPORT_LINK_TTL_MS, now: T0 }).then([issued]);
  });
  it('refuses a second link on the same nonce, and a link without files', () => {
    given(issued)
      .when({ type: 'IssueImportLink', link, validForMs: IMPORT_LINK_TTL_MS, now: T1 })
      .thenRejects('conflict', { state: 'issued' });
    given()
      .when({ type: 'IssueImportLink', link: { ...link, files: [] }, validForMs: 1000, now: T0 })
      .thenRejects('invalid_input');
  });
  it('is used once, recording who used it and the ids it reserves', () => {
    given(issued).when(use(T1)).then([used]);
  });
  it('refuses a used link, also to the user who used it', () => {
    given(issued, used).when(use(T1)).thenRejects('conflict', { state: 'used' });
    given(issued, used).when(use(T1, 'u2')).thenRejects('conflict', { state: 'used' });
  });
  it('refuses an expired link: at its expiry time and after', () => {
    given(issued).when(use(T3H)).thenRejects('conflict', { state: 'expired' });
    given(issued).when(use('2026-01-02T00:00:00.000Z')).thenRejects('conflict', { state: 'expired' });
  });
  it('refuses an unknown link as not found', () => {
    given().when(use(T1)).thenRejects('not_found');
  });
  it('derives the state from the events and the time: unknown, issued, expired, used (also after expiry)', () => {
    assert.equal(importLinkStatus(fold(), T0), 'unknown');
    assert.equal(importLinkStatus(fold(issued), T1), 'issued');
    assert.equal(importLinkStatus(fold(issued), '2026-01-01T02:59:59.999Z'), 'issued');
    assert.equal(importLinkStatus(fold(issued), T3H), 'expired');
    assert.equal(importLinkStatus(fold(issued, used), T1), 'used');
    assert.equal(importLinkStatus(fold(issued, used), '2026-01-05T00:00:00.000Z'), 'used');
  });
  it('keeps the first use when a use is delivered twice', () => {
    const again: ImportLinkEvent = { ...used, data: { ...used.data, project_id: 'p2' } };
    const state = fold(issued, used, again);
    assert.ok(state.exists && state.used?.project_id === 'p1');
  });
});

describe('partner import request (pure)', () => {
  const file = (uri: string, name: string | null = null, seconds?: number): ImportLinkFile => ({
    uri,
    name,
    start_offset: seconds === undefined ? null : { seconds },
  });

  it('names files by name, else the last path segment (decoded), else the host; repeats get a number', () => {
    const request = partnerImportRequest([
      file('https://cdn.example/show/Episode%201.wav?sig=abc'),
      file('https://cdn.example/other/Episode%201.wav'),
      file('https://cdn.example/'),
      file('https://cdn.example/x.mp4', 'Host cam.mp4'),
      file('https://cdn.example/y.mp4', 'Host cam.mp4'),
      file('https://cdn.example/z', '__proto__'),
    ]);
    assert.deepEqual(Object.keys(request.add_media!), [
      'Episode 1.wav',
      'Episode 1 (2).wav',
      'cdn.example',
      'Host cam.mp4',
      'Host cam (2).mp4',
      '__proto__',
    ]);
    assert.equal(request.project_name, 'Episode 1');
    assert.ok(Object.values(request.add_media!).every((m) => m.retry_until_found === true));
  });

  it('without start offsets: one composition playing the files in order', () => {
    const request = partnerImportRequest([file('https://cdn.example/a.wav'), file('https://cdn.example/b.mp4')]);
    assert.deepEqual(request.add_compositions, [{ name: 'a', clips: [{ media: 'a.wav' }, { media: 'b.mp4' }] }]);
    const plan = planImport(request, new Set());
    assert.deepEqual(plan.media[0], ['a.wav', { url: 'https://cdn.example/a.wav', language: null, retry_until_found: true }]);
  });

  it('with start offsets: a multitrack sequence of every file at its offset, and a composition playing it', () => {
    const request = partnerImportRequest([
      file('https://cdn.example/host.wav', null, 0),
      file('https://cdn.example/guest.wav', null, 2.5),
      file('https://cdn.example/Multitrack'),
    ]);
    const plan = planImport(request, new Set());
    assert.deepEqual(plan.media[3], [
      'Multitrack (2)',
      {
        tracks: [
          { media: 'host.wav', offset: 0 },
          { media: 'guest.wav', offset: 2.5 },
          { media: 'Multitrack', offset: 0 },
        ],
      },
    ]);
    assert.deepEqual(plan.compositions, [{ name: 'host', clips: ['Multitrack (2)'], width: 1920, height: 1080 }]);
  });
});
