import assert from 'node:assert/strict';
import type { Doc } from '../../lib/ports/read-store';
import { keptJobAnswers } from '../../services/query-api/kept-answers';

const text = (id: string, status = 'queued') => JSON.stringify({ job_id: id, drive_id: 'd1', status, _id: id, _rev: 0 });
const noFold = async (): Promise<Doc | null> => assert.fail('a job the read model holds is not folded');

describe('GET /jobs/{id}: the kept answers', () => {
  it('answers a poll of an unchanged job with the answer it kept, and makes a new one when the document changed', async () => {
    const answers = keptJobAnswers(10);
    const first = await answers.of('j1', async () => text('j1'), noFold);
    assert.deepEqual(JSON.parse(first!.json), { job_id: 'j1', drive_id: 'd1', status: 'queued' });
    assert.equal(await answers.of('j1', async () => text('j1'), noFold), first);
    const changed = await answers.of('j1', async () => text('j1', 'running'), noFold);
    assert.notEqual(changed, first);
    assert.equal(JSON.parse(changed!.json).status, 'running');
  });

  it('counts its hits and misses and the answers it holds, for /metrics', async () => {
    const answers = keptJobAnswers(2);
    assert.deepEqual(answers.stats(), { entries: 0, hits: 0, misses: 0 });
    await answers.of('j1', async () => text('j1'), noFold);
    await answers.of('j1', async () => text('j1'), noFold);
    await answers.of('j1', async () => text('j1', 'running'), noFold);
    await answers.of('j2', async () => text('j2'), noFold);
    await answers.of('j3', async () => text('j3'), noFold);
    assert.deepEqual(answers.stats(), { entries: 2, hits: 1, misses: 4 });
  });

  it('keeps the jobs being polled when more jobs are read than it holds, dropping the least recently read', async () => {
    const answers = keptJobAnswers(100);
    const hot = ['hot-1', 'hot-2', 'hot-3'];
    const kept = new Map<string, unknown>();
    for (const id of hot) kept.set(id, await answers.of(id, async () => text(id), noFold));
    // A stream of jobs read once each (old finished jobs, a listing's links), ten times the capacity,
    // while the hot jobs are polled between them.
    for (let i = 0; i < 1000; i++) {
      await answers.of(`cold-${i}`, async () => text(`cold-${i}`), noFold);
      if (i % 20 === 0)
        for (const id of hot) assert.equal(await answers.of(id, async () => text(id), noFold), kept.get(id), `${id} after ${i} cold reads`);
    }
    const old = await answers.of('cold-0', async () => text('cold-0'), noFold);
    assert.equal(await answers.of('cold-0', async () => text('cold-0'), noFold), old, 'a job read again is kept again');
  });

  it('does not keep the answer folded from the stream of a job the read model has not reached', async () => {
    const answers = keptJobAnswers(10);
    let folds = 0;
    const fold = async () => (folds++, JSON.parse(text('new')) as Doc);
    const a = await answers.of('new', async () => null, fold);
    const b = await answers.of('new', async () => null, fold);
    assert.equal(folds, 2);
    assert.notEqual(a, b);
    assert.equal(a!.driveId, 'd1');
  });
});
