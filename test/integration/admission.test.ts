import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';
import { JOBS } from '../../lib/read-models/jobs';

/**
 * Admission control (lib/app/admission.ts): a drive with as many unfinished jobs as it may have
 * is answered 429 for the next, with Retry-After, until some finish; other drives are not held
 * back. No processors run here, so queued jobs stay queued until cancelled. The admission's clock
 * is the test's: the count is read again only when the test moves it past the refresh interval.
 */
describe('admission control: unfinished jobs per drive (HTTP, embedded adapters)', function () {
  this.timeout(30_000);
  let h: Harness;
  let clock = 0;
  const REFRESH_MS = 1000;

  before(async () => {
    h = await startHarness({ processors: false, admission: { limit: 3, refreshMs: REFRESH_MS, now: () => clock } });
  });
  after(() => h?.close());

  const importBody = (name: string) => ({ project_name: name, add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } } });
  const post = (name: string, token?: string, key?: string) => {
    const req = h.http.post('/v1/jobs/import/project_media').set(h.auth(token));
    return (key ? req.set('Idempotency-Key', key) : req).send(importBody(name));
  };
  /** The drive's unfinished jobs as the jobs read model has them, once it shows `n`. */
  const projected = (n: number) =>
    waitFor(
      async () =>
        (await h.read.count(JOBS, { drive_id: h.drive.drive_id, job_state: { $in: ['queued', 'running'] } })) === n ? true : null,
      { what: `${n} unfinished jobs in the read model` },
    );
  /** Moves the admission's clock past the refresh: the next request reads the count again (and is decided on the one kept). */
  const refresh = async () => {
    clock += REFRESH_MS;
    return post('reads the count');
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

    // Counted again from the read model, which has the three as queued: still refused.
    await projected(3);
    assert.equal((await refresh()).status, 429);
    assert.equal((await post('five')).status, 429);

    // Another drive is not held back by this one's backlog.
    const other = await post('other', h.other.token);
    assert.equal(other.status, 201, JSON.stringify(other.body));

    // A replayed Idempotency-Key answers as the first time: it creates nothing.
    const replay = await post('one', undefined, 'key-one');
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.job_id, first.body.job_id);

    // Jobs that end make room: two cancelled, counted again, then two more admitted and no third.
    for (const id of accepted.slice(0, 2)) assert.equal((await h.http.delete(`/v1/jobs/${id}`).set(h.auth())).status, 204);
    await projected(1);
    assert.equal((await refresh()).status, 429, 'decided on the count kept while the new one is read');
    // The count (one unfinished) was read while that request was answered.
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(`after ${i}`)).status);
    assert.deepEqual(statuses, [201, 201, 429], 'one unfinished left of three, then two admitted: at the limit again');
  });
});
