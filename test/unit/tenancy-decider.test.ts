import assert from 'node:assert/strict';
import {
  mediaSecondsAllowance,
  DEFAULT_SETTINGS,
  decideDrive,
  decideToken,
  evolveDrive,
  evolveToken,
  initialDriveState,
  initialTokenState,
  type DriveEvent,
  type TokenEvent,
} from '../../lib/domain/tenancy';
import { specFor } from '../fixtures/given';

const T0 = '2026-01-01T00:00:00.000Z';
const drive = specFor({ initialState: initialDriveState, evolve: evolveDrive, decide: decideDrive });
const token = specFor({ initialState: initialTokenState, evolve: evolveToken, decide: decideToken });
const driveData = { drive_id: 'd', name: 'D', webhook_secret: 'whsec_x', settings: DEFAULT_SETTINGS };
const driveCreated: DriveEvent = { type: 'DriveCreated', data: { ...driveData, created_at: T0 } };
const tokenData = { token_id: 't', secret_hash: 'h', drive_id: 'd', user_id: 'u', name: 'n' };
const tokenCreated: TokenEvent = { type: 'TokenCreated', data: { ...tokenData, created_at: T0 } };

describe('tenancy deciders', () => {
  it('creates a drive once', () => {
    drive().when({ type: 'CreateDrive', drive: driveData, now: T0 }).then([driveCreated]);
    drive(driveCreated).when({ type: 'CreateDrive', drive: driveData, now: T0 }).thenRejects('conflict');
  });
  it('updates drive settings', () =>
    drive(driveCreated)
      .when({ type: 'UpdateDrive', changes: { agent_disabled: true }, now: T0 })
      .then([{ type: 'DriveUpdated', data: { drive_id: 'd', changes: { agent_disabled: true }, updated_at: T0 } }]));
  it('rotates the webhook secret, which then signs, and the settings stay as they were', () => {
    const rotated: DriveEvent = { type: 'DriveUpdated', data: { drive_id: 'd', changes: { webhook_secret: 'whsec_new' }, updated_at: T0 } };
    drive(driveCreated)
      .when({ type: 'UpdateDrive', changes: { webhook_secret: 'whsec_new' }, now: T0 })
      .then([rotated]);
    const state = [driveCreated, rotated].reduce(evolveDrive, initialDriveState());
    assert.ok(state.exists);
    assert.equal(state.webhookSecret, 'whsec_new');
    assert.deepEqual(state.settings, DEFAULT_SETTINGS);
  });
  it('refuses a default access level that is not allowed', () =>
    drive(driveCreated)
      .when({ type: 'UpdateDrive', changes: { allowed_access_levels: ['private'] }, now: T0 })
      .thenRejects('invalid_input'));
  it('refuses to update a drive that does not exist', () =>
    drive()
      .when({ type: 'UpdateDrive', changes: { partner: true }, now: T0 })
      .thenRejects('not_found'));

  it('keeps counting charges recorded on the drive stream before they moved to jobs', () => {
    const limited: DriveEvent = {
      type: 'DriveCreated',
      data: { ...driveData, settings: { ...DEFAULT_SETTINGS, media_seconds: 10 }, created_at: T0 },
    };
    const legacyCharge: DriveEvent = {
      type: 'MediaSecondsCharged',
      data: { drive_id: 'd', job_id: 'j', ref: 'a.wav', seconds: 4, charged_at: T0 },
    };
    assert.equal(mediaSecondsAllowance([limited, legacyCharge].reduce(evolveDrive, initialDriveState())), 6);
    assert.equal(mediaSecondsAllowance([driveCreated].reduce(evolveDrive, initialDriveState())), null);
  });

  it('creates and revokes a token; revoking twice changes nothing', () => {
    token().when({ type: 'CreateToken', token: tokenData, now: T0 }).then([tokenCreated]);
    const revoked: TokenEvent = { type: 'TokenRevoked', data: { token_id: 't', revoked_at: T0 } };
    token(tokenCreated).when({ type: 'RevokeToken', now: T0 }).then([revoked]);
    token(tokenCreated, revoked).when({ type: 'RevokeToken', now: T0 }).then([]);
    token().when({ type: 'RevokeToken', now: T0 }).thenRejects('not_found');
  });
});
