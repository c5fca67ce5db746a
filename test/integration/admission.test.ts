import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startHarness, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';

/**
 * Admission control (lib/app/admission.ts): a drive with as many unfinished jobs as it may have
 * is answered 429 for the next, with Retry-After, until some finish; other drives are not held
 * back. No processors run here, so queued jobs stay queued until cancelled.
 */
describe('admission control: unfinished jobs per drive (HTTP, embedded adapters)', function () {
  this.timeout(30_000);
  let h: Harness;
  const REFRESH_MS = 100;

  before(async () => {
    h = await startHarness({ processors: false, admission: { limit: 3, refreshMs: REFRESH_MS } });
  });
  after(() => h?.close());

  const importBody = (name: string) => ({ project_name: name, add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } } });
  const post = (name: string, token?: string, key?: string) => {
    const req = h.http.post('/v1/jobs/import/project_media').set(h.auth(token));
    return (key ? req.set('Idempotency-Key', key) : req).send(importBody(name));
  };

  it('refuses the job after the limit with 429 rate_limit_exceeded and Retry-After, lets other drives and replayed keys through, and admits again once jobs end', async () => {
    const first = await post('one', undefined, 'key-one');
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const accepted = [first.body.job_id as string];
    for (const name of ['two', 'three']) {
      const res = await post(name);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      accepted.push(res.body.job_id);
    }

    const refused = await post('four');
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.deepEqual(Object.keys(refused.body).sort(), ['error', 'message']);
    assert.equal(refused.body.error, 'rate_limit_exceeded');
    assert.match(refused.body.message, /3 unfinished jobs/);
    assert.equal(refused.headers['retry-after'], '5');
    // Still refused once the count is read again: the three are projected as queued.
    await sleep(REFRESH_MS * 2);
    await post('five'); // starts the read; decided on the count kept
    await sleep(REFRESH_MS);
    assert.equal((await post('six')).status, 429);

    // Another drive is not held back by this one's backlog.
    const other = await post('other', h.other.token);
    assert.equal(other.status, 201, JSON.stringify(other.body));

    // A replayed Idempotency-Key answers as the first time: it creates nothing.
    const replay = await post('one', undefined, 'key-one');
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.job_id, first.body.job_id);

    // Jobs that end make room: two cancelled, then (within a refresh) two more are admitted.
    for (const id of accepted.slice(0, 2)) assert.equal((await h.http.delete(`/v1/jobs/${id}`).set(h.auth())).status, 204);
    const admitted = await waitFor(
      async () => {
        const res = await post('after');
        return res.status === 201 ? res : null;
      },
      { timeoutMs: 5_000, intervalMs: REFRESH_MS, what: 'a job to be admitted after two ended' },
    );
    assert.ok(admitted.body.job_id);
  });
});
