import assert from 'node:assert/strict';
import { waitFor } from '../fixtures/wait';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { randomIds } from '../../lib/adapters/system/clock';
import { createDrive, revokeToken } from '../../lib/app/admin';
import { createAuthenticator } from '../../lib/app/tenancy';
import { streams } from '../../lib/domain/ids';
import type { Clock } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';

// ---- test doubles -------------------------------------------------------------------------

/** The real embedded store, with the streams the authenticator reads recorded. */
function spyingStore(store: EventStore, options: { fail?: () => boolean } = {}) {
  const reads: string[] = [];
  const spy: EventStore = {
    append: (...args) => store.append(...args),
    readAll: (...args) => store.readAll(...args),
    subscribeAll: (...args) => store.subscribeAll(...args),
    close: () => store.close(),
    readStream: (streamId, range) => {
      reads.push(streamId);
      return options.fail?.() ? Promise.reject(new Error('store unreachable')) : store.readStream(streamId, range);
    },
  };
  return { spy, reads };
}

function manualClock(start = Date.UTC(2026, 0, 1)) {
  let now = start;
  const clock: Clock = { now: () => new Date(now) };
  return { clock, advance: (ms: number) => (now += ms) };
}

const bearer = (token: string) => `Bearer ${token}`;
const junkTokenLike = (i: number) => `mps_${i.toString(16).padStart(16, '0')}_${'A'.repeat(43)}`;

const refused = async (p: Promise<unknown>) =>
  assert.rejects(p, (err: { code?: string; status?: number }) => err.code === 'unauthorized' && err.status === 401);

// ---- scenarios ----------------------------------------------------------------------------

describe('authenticator: bearer token → principal', () => {
  let dir: string;
  let store: ReturnType<typeof createSqliteEventStore>;
  let token: string;
  let tokenId: string;
  let driveId: string;
  const t0 = manualClock();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mps-auth-'));
    store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
    const drive = await createDrive({ store, clock: t0.clock, ids: randomIds }, { name: 'Auth drive' });
    token = drive.token;
    driveId = drive.drive_id;
    tokenId = token.split('_')[1];
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resolves a valid token to its drive and user', async () => {
    const auth = createAuthenticator({ store, clock: t0.clock });
    const principal = await auth(bearer(token));
    assert.equal(principal.driveId, driveId);
    assert.equal(principal.driveName, 'Auth drive');
    assert.equal(principal.tokenId, tokenId);
  });

  it('refuses a malformed token at once: it never reaches the store', async () => {
    const { spy, reads } = spyingStore(store);
    const auth = createAuthenticator({ store: spy, clock: t0.clock });
    for (const junk of ['abc', 'mps_0123_short', `${token}x`, `${token.slice(0, -1)}!`, 'x'.repeat(14_000), token.toUpperCase()]) {
      await refused(auth(bearer(junk)));
    }
    assert.deepEqual(reads, []);
  });

  it('keeps no trace of 20,000 distinct junk bearer values', async () => {
    const { spy, reads } = spyingStore(store);
    const auth = createAuthenticator({ store: spy, clock: t0.clock });
    await auth(bearer(token));
    for (let i = 0; i < 20_000; i++) await refused(auth(bearer(`${i}-${'x'.repeat(1_000)}`)));
    await auth(bearer(token));
    assert.equal(reads.length, 2, 'the real token stayed cached: junk neither filled nor flushed the cache');
    assert.equal(auth.cacheSize, 1);
  });

  it('bounds the cache when well-formed unknown tokens pour in', async () => {
    const { spy, reads } = spyingStore(store);
    const auth = createAuthenticator({ store: spy, clock: t0.clock, cacheMax: 100 });
    for (let i = 0; i < 1_000; i++) await refused(auth(bearer(junkTokenLike(i))));
    assert.equal(auth.cacheSize, 100);
    assert.equal(reads.length, 1_000, 'one token stream read per unknown token, no drive read');
    const principal = await auth(bearer(token));
    assert.equal(principal.driveId, driveId, 'a real token still works with a full cache');
    assert.equal(auth.cacheSize, 100);
  });

  it('reads neither the token nor the drive stream while the token is cached', async () => {
    const { spy, reads } = spyingStore(store);
    const { clock, advance } = manualClock();
    const auth = createAuthenticator({ store: spy, clock });
    await auth(bearer(token));
    assert.deepEqual(reads, [streams.token(tokenId), streams.drive(driveId)]);
    const before = reads.length;
    advance(999);
    for (let i = 0; i < 10; i++) await auth(bearer(token));
    assert.equal(reads.length, before);
    advance(1);
    await auth(bearer(token));
    assert.equal(reads.length, before + 2, 'after the TTL both streams are read again');
  });

  it('shares one store lookup among concurrent requests for the same token', async () => {
    const { spy, reads } = spyingStore(store);
    const auth = createAuthenticator({ store: spy, clock: t0.clock });
    await Promise.all(Array.from({ length: 20 }, () => auth(bearer(token))));
    assert.equal(reads.length, 2);
  });

  /** A drive whose token was looked up (TTL 1 s) and then revoked, at the clock's start. */
  async function revokedAfterLookup(name: string) {
    const { clock, advance } = manualClock();
    const drive = await createDrive({ store, clock, ids: randomIds }, { name });
    const auth = createAuthenticator({ store, clock, cacheTtlMs: 1000 });
    await auth(bearer(drive.token));
    await revokeToken({ store, clock, ids: randomIds }, drive.token.split('_')[1]);
    return { drive, auth, advance };
  }

  it('stops accepting a revoked token once the TTL has passed', async () => {
    const { drive, auth, advance } = await revokedAfterLookup('Revoked');
    advance(1000);
    await refused(auth(bearer(drive.token)));
  });

  it('stops accepting a revoked token within the TTL of its lookup, however often the same header is sent', async () => {
    const { drive, auth, advance } = await revokedAfterLookup('Polled');
    for (let i = 0; i < 3; i++) {
      advance(300);
      assert.equal((await auth(bearer(drive.token))).driveId, drive.drive_id, 'still within the TTL of the lookup');
    }
    advance(100);
    await refused(auth(bearer(drive.token)));
  });

  it('forgets a remembered header once its TTL has passed, raw tokens included', async () => {
    const { clock, advance } = manualClock();
    const auth = createAuthenticator({ store, clock, cacheTtlMs: 40 });
    await auth(bearer(token));
    assert.equal(auth.headersRemembered, 1);
    advance(40);
    await waitFor(() => auth.headersRemembered === 0, { timeoutMs: 2000, what: 'the header to be forgotten' });
  });

  it('asks the store again after a failed lookup instead of caching the failure', async () => {
    let fail = true;
    const { spy } = spyingStore(store, { fail: () => fail });
    const auth = createAuthenticator({ store: spy, clock: t0.clock });
    await assert.rejects(auth(bearer(token)), /store unreachable/);
    fail = false;
    assert.equal((await auth(bearer(token))).driveId, driveId);
  });
});
