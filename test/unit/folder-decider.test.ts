import assert from 'node:assert/strict';
import { folderIdOf } from '../../lib/app/folders';
import { decideFolder, evolveFolder, folderPaths, initialFolderState, type FolderEvent } from '../../lib/domain/folder';
import { specFor } from '../fixtures/given';

const given = specFor({ initialState: initialFolderState, evolve: evolveFolder, decide: decideFolder });
const T0 = '2026-01-01T00:00:00.000Z';
const folder = { folder_id: 'f', drive_id: 'd', path: 'Clients/Acme', created_by: 'u' };
const created: FolderEvent = {
  type: 'FolderCreated',
  data: { ...folder, name: 'Acme', parent_path: 'Clients', created_at: T0 },
};

describe('folder decider', () => {
  it('creates a folder with its name and the folder it sits in', () =>
    given().when({ type: 'CreateFolder', folder, now: T0 }).then([created]));
  it('creates a folder at the drive root with no parent', () =>
    given()
      .when({ type: 'CreateFolder', folder: { ...folder, path: 'Clients' }, now: T0 })
      .then([{ type: 'FolderCreated', data: { ...folder, path: 'Clients', name: 'Clients', parent_path: null, created_at: T0 } }]));
  it('creates nothing when the folder exists (as needed)', () => given(created).when({ type: 'CreateFolder', folder, now: T0 }).then([]));
  it('refuses a different folder on the same stream', () =>
    given(created)
      .when({ type: 'CreateFolder', folder: { ...folder, drive_id: 'other' }, now: T0 })
      .thenRejects('conflict'));
  it('lists the folders a path needs, outermost first', () => {
    assert.deepEqual(folderPaths('A/B/C'), ['A', 'A/B', 'A/B/C']);
    assert.deepEqual(folderPaths('A'), ['A']);
  });
  it('names a folder by its drive and path, the same every time', () => {
    assert.equal(folderIdOf('8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', 'A/B'), folderIdOf('8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', 'A/B'));
    assert.notEqual(folderIdOf('8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', 'A/B'), folderIdOf('9c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', 'A/B'));
  });
});
