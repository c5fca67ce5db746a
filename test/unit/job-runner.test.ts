import assert from 'node:assert/strict';
import pino from 'pino';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createBalances } from '../../lib/app/balances';
import { handleCommand, loadState } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/domain/job';
import { AppError } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import type { ImportPlan } from '../../lib/domain/import';
import { runJob, type Job, type RunnerDeps } from '../../services/processors/job-runner';

/** The runner decides between trying again and a result, in one place (STYLE §15), from the error's `retriable` flag. */
describe('job runner: retriable or not', () => {
  const store = createSqliteEventStore({ path: ':memory:' });
  const deps: RunnerDeps = {
    store,
    balances: createBalances({ store, clock: systemClock, ids: randomIds }),
    clock: systemClock,
    ids: randomIds,
    logger: pino({ level: 'silent' }),
    shutdown: new AbortController().signal,
    workerId: 'test-worker',
    cancelPollMs: 10_000,
    maxAttempts: 3,
  };
  after(() => store.close());

  async function queued(): Promise<Job> {
    const jobId = `project-media-import-${randomIds.uuid()}`;
    const job = {
      job_id: jobId,
      job_type: 'import/project_media' as const,
      drive_id: randomIds.uuid(),
      project_id: randomIds.uuid(),
      project_url: 'http://web.test/p',
      created_by: randomIds.uuid(),
      callback_url: null,
      request: { media: [], compositions: [] } as unknown as ImportPlan,
    };
    const made = await handleCommand(
      store,
      streams.job(jobId),
      jobDecider,
      { type: 'QueueJob', job, now: new Date().toISOString() },
      {
        newId: randomIds.uuidv7,
        metadata: { partition_key: job.project_id },
      },
    );
    return (made.state as { job: Job }).job;
  }
  const stateOf = async (job: Job) => (await loadState(store, streams.job(job.job_id), jobDecider)).state as Record<string, any>;

  it('stops the job at once with an error not worth retrying, its code and message as the result', async () => {
    const job = await queued();
    await runJob(deps, job, async () => {
      throw new AppError('invalid_input', 'the composition names media the project does not have');
    });
    const state = await stateOf(job);
    assert.equal(state.status, 'stopped');
    assert.equal(state.attempt, 1, 'one attempt');
    const events = await store.readStream(streams.job(job.job_id));
    const stopped = events.find((e) => e.type === 'JobStopped')!;
    assert.deepEqual(stopped.data.result, {
      status: 'error',
      error_code: 'invalid_input',
      error_message: 'the composition names media the project does not have',
    });
  });

  it('tries a retriable failure again, records each reason, and gives up after the bound with the last one', async () => {
    const job = await queued();
    let tries = 0;
    const flaky = async () => {
      tries += 1;
      throw new AppError('unavailable', `the transcriber answered 503 (try ${tries})`, { retriable: true });
    };
    for (let i = 0; i < 3; i++) await assert.rejects(runJob(deps, job, flaky), /answered 503/);
    assert.equal((await stateOf(job)).status, 'running', 'still the job of a next attempt');
    await runJob(deps, job, flaky); // the fourth claim: given up without running
    assert.equal(tries, 3);
    const events = await store.readStream(streams.job(job.job_id));
    assert.equal(events.filter((e) => e.type === 'JobAttemptFailed').length, 3);
    const stopped = events.find((e) => e.type === 'JobStopped')!;
    // A server the job needs kept failing: unavailable, not internal_error (which says "a bug").
    assert.deepEqual(stopped.data.result, {
      status: 'error',
      error_code: 'unavailable',
      error_message: 'the job failed repeatedly and was given up; the last: the transcriber answered 503 (try 3)',
    });
  });

  it('gives up as internal_error when the last failure was unexpected (no error code)', async () => {
    const job = await queued();
    let tries = 0;
    const failing = async () => {
      tries += 1;
      if (tries < 3) throw new AppError('unavailable', 'the transcriber answered 503', { retriable: true });
      throw new TypeError("Cannot read properties of undefined (reading 'words')");
    };
    for (let i = 0; i < 3; i++) await assert.rejects(runJob(deps, job, failing));
    await runJob(deps, job, failing);
    const stopped = (await store.readStream(streams.job(job.job_id))).find((e) => e.type === 'JobStopped')!;
    assert.equal((stopped.data.result as { error_code: string }).error_code, 'internal_error');
  });

  describe('progress grace', () => {
    const success = { status: 'success' } as never;
    const progressed = async (job: Job) =>
      (await store.readStream(streams.job(job.job_id))).filter((e) => e.type === 'JobProgressed').map((e) => e.data.label);

    it('writes no progress for a job done within the grace', async () => {
      const job = await queued();
      await runJob(
        deps,
        job,
        async (ctx) => {
          await ctx.progress('planning', 0);
          await ctx.progress('running a tool', 50);
          return { result: success, projectUrl: null };
        },
        undefined,
        250,
      );
      assert.deepEqual(await progressed(job), []);
      assert.equal((await stateOf(job)).status, 'stopped');
    });

    it('writes the newest held progress when the grace ends, then progress as usual; without a grace, every phase', async () => {
      const job = await queued();
      await runJob(
        deps,
        job,
        async (ctx) => {
          await ctx.progress('first', 0);
          await ctx.progress('second', 10);
          await new Promise((r) => setTimeout(r, 400));
          await ctx.progress('third', 60);
          return { result: success, projectUrl: null };
        },
        undefined,
        250,
      );
      assert.deepEqual(await progressed(job), ['second', 'third']);
      const plain = await queued();
      await runJob(deps, plain, async (ctx) => {
        await ctx.progress('first', 0);
        await ctx.progress('second', 10);
        return { result: success, projectUrl: null };
      });
      assert.deepEqual(await progressed(plain), ['first', 'second']);
    });
  });
});
