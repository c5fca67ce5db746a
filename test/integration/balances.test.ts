import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive } from '../../lib/app/admin';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { startHarness, type Harness } from '../fixtures/harness';

/**
 * Reservations through the whole engine (DESIGN §8): many imports of one drive at once on a
 * small balance. Each file's seconds are reserved on the drive's balance stream before it joins
 * its project; the balance never goes below zero, and what is settled is what the jobs used.
 */
describe('balances under concurrent imports (HTTP, embedded adapters)', function () {
  this.timeout(180_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'balances-'));
    media = await startMediaServer({ 'one.wav': await makeTestMedia(dir, 'wav', 1) });
    h = await startHarness({ concurrency: 8 });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  it('200 imports at once on a 150-second balance: never below zero, settled exactly what the jobs used', async () => {
    const drive = await createDrive(h.admin, { name: 'Small balance', mediaSeconds: 150 });
    const accepted = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        h.http
          .post('/v1/jobs/import/project_media')
          .set(h.auth(drive.token))
          .send({ project_name: `Many ${i}`, add_media: { 'one.wav': { url: media.url('file', 'one.wav') } } }),
      ),
    );
    assert.deepEqual(
      accepted.map((r) => r.status).filter((s) => s !== 201),
      [],
    );
    const jobs = await Promise.all(accepted.map((r) => h.waitForJob(r.body.job_id, undefined, 150_000, drive.token)));
    const used = jobs.reduce((n, j) => n + ((j.result as { media_seconds_used: number }).media_seconds_used ?? 0), 0);
    const refused = jobs.filter((j) => /not enough media seconds/.test(JSON.stringify(j.result))).length;
    const shown = (await h.balance.show(drive.drive_id)).media_seconds;
    assert.equal(shown.reserved, 0, 'every job ended: nothing stays reserved');
    assert.ok(Math.abs(shown.used - used) < 1e-6, `settled ${shown.used}, jobs used ${used}`);
    assert.ok(shown.left! >= 0 && used <= 150, `used ${used} of 150`);
    assert.ok(refused > 0, 'the balance ran out: later files were refused');
    assert.ok(used > 140, `it ran out at the end, not early (used ${used})`);
  });
});
