import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createReadStream, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createFfmpegSilenceDetector } from '../../lib/adapters/ffmpeg/silence';
import { createDrive } from '../../lib/app/admin';
import type { Word } from '../../lib/domain/edl';
import { streams } from '../../lib/domain/ids';
import { editingToolset } from '../../services/processors/agent/editing-tools';
import { startHarness, type Harness } from '../fixtures/harness';
import { seedTranscribedProject } from '../fixtures/seed-project';

/**
 * Issue 20 end to end on the engine: prompts through `POST /v1/jobs/agent` run by the builtin
 * model with the real editing tools, the composition events and the turn's commit, one
 * conversation after another. The recording is a real WAV made by ffmpeg (tone, 3 s of silence,
 * tone), so the silence tool measures it with ffmpeg; its transcript is a stored one whose words
 * fall on the tones.
 */
describe('agent edits: the builtin model and the editing tools on real compositions', function () {
  this.timeout(120_000);
  let h: Harness;
  let drive: Awaited<ReturnType<typeof createDrive>>;
  let projectId: string;
  let compositionId: string;
  let conversationId: string | undefined;
  let lastJobId: string | undefined;
  const word = (text: string, start: number, end: number): Word => ({ text, start, end, confidence: 0.9, speaker: null });
  const WORDS = [
    word('so', 0.2, 0.5),
    word('um', 1, 1.4),
    word('we', 1.5, 1.7),
    word('ship', 1.8, 2.2),
    word('uh', 3, 3.3),
    word('today', 3.5, 3.9),
    word('the', 7.2, 7.4),
    word('price', 7.5, 8),
  ];

  /** A 10 s recording: a tone until 4 s, silence until 7 s, a tone until 10 s. */
  async function recording(): Promise<string> {
    const file = join(mkdtempSync(join(tmpdir(), 'agent-edits-')), 'talk.wav');
    const tone = (d: number) => ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=16000:duration=${d}`];
    const quiet = (d: number) => ['-f', 'lavfi', '-i', `aevalsrc=0:s=16000:d=${d}`];
    await promisify(execFile)(resolveFfmpegPaths().ffmpeg, [
      ...['-hide_banner', '-loglevel', 'error', '-y', ...tone(4), ...quiet(3), ...tone(3)],
      ...['-filter_complex', '[0:a][1:a][2:a]concat=n=3:v=0:a=1', file],
    ]);
    return file;
  }

  before(async () => {
    const silences = (blobs: Harness['processorDeps']['blobs']) =>
      createFfmpegSilenceDetector({ ffmpegPath: resolveFfmpegPaths().ffmpeg, blobs, cacheDir: mkdtempSync(join(tmpdir(), 'silences-')) });
    h = await startHarness({
      agent: { toolset: editingToolset({ silences: { detect: (key, o) => silences(h.processorDeps.blobs).detect(key, o) } }) },
    });
    drive = await createDrive(h.admin, { name: 'Editing drive', credits: 1000 });
    ({ projectId, compositionId } = await seedProject());
  });
  after(() => h.close());

  async function seedProject(): Promise<{ projectId: string; compositionId: string }> {
    const blobKey = `${drive.drive_id}/${randomUUID()}/talk`;
    await h.processorDeps.blobs.put(blobKey, createReadStream(await recording()));
    return seedTranscribedProject(h, { driveId: drive.drive_id, words: WORDS, duration: 10, blobKey });
  }

  /** One prompt of the conversation, waited for until stopped; the job's result. */
  async function prompt(text: string): Promise<Record<string, any>> {
    const res = await h.http
      .post('/v1/jobs/agent')
      .set(h.auth(drive.token))
      .send({ prompt: text, project_id: projectId, ...(conversationId && { conversation_id: conversationId }) });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    conversationId = res.body.conversation_id;
    lastJobId = res.body.job_id;
    const job = (await h.waitForJob(res.body.job_id, undefined, 60_000, drive.token)) as Record<string, any>;
    assert.equal(job.job_state, 'stopped', JSON.stringify(job));
    assert.equal(job.result.status, 'success', JSON.stringify(job.result));
    return job.result;
  }
  const main = async () => {
    const res = await h.http.get(`/v1/projects/${projectId}/compositions/${compositionId}/transcript`).set(h.auth(drive.token));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { duration: number; text: string; revision: number };
  };
  const detail = async () => (await h.http.get(`/v1/projects/${projectId}`).set(h.auth(drive.token))).body;

  it('removes filler words: one event, shorter by exactly their spans, charged by the cost class, said concretely', async () => {
    const before = (await detail()).updated_at as string;
    const result = await prompt('remove filler words');
    assert.equal(result.project_changed, true);
    assert.equal(result.ai_credits_used, 3, 'auto is charged at medium whichever model runs: 2 for the turn, 1 for its one tool call');
    assert.equal(result.resolved_model, 'auto');
    assert.match(result.agent_response, /Removed 2 filler words \(0\.7 s\) from Main/);
    const now = await main();
    assert.equal(now.duration, 9.3);
    assert.equal(now.text, 'so we ship today the price');
    assert.equal(now.revision, 1, 'the whole turn is one event');
    // The project is updated when the job reads stopped: one ProjectEdited, written with the turn.
    const edited = (await h.store.readStream(streams.project(projectId))).filter((e) => e.type === 'ProjectEdited');
    assert.deepEqual(
      edited.map((e) => [e.data.composition_ids, e.data.job_id]),
      [[[compositionId], lastJobId]],
    );
    const updated = (await detail()).updated_at as string;
    assert.equal(updated, edited[0].data.edited_at);
    assert.ok(updated > before, `${updated} after ${before}`);
  });

  it('undoes that turn exactly', async () => {
    const result = await prompt('undo that');
    assert.equal(result.project_changed, true);
    const now = await main();
    assert.equal(now.duration, 10);
    assert.equal(now.text, 'so um we ship uh today the price');
  });

  it('cuts silences measured with ffmpeg in the recording itself', async () => {
    const result = await prompt('cut silences longer than 2 seconds');
    assert.equal(result.project_changed, true, result.agent_response);
    const { duration } = await main();
    assert.ok(Math.abs(duration - 7) < 0.1, `the 3 s silence is cut: ${duration} s left`);
  });

  it('renames, sets the audio, and answers a prompt it cannot read without changing anything', async () => {
    await prompt('rename this composition to Intro');
    assert.equal((await detail()).compositions[0].name, 'Intro');
    await prompt('enhance the audio');
    const last = (await h.store.readStream(streams.composition(compositionId))).at(-1)!;
    assert.deepEqual([last.type, last.data.loudness_lufs, last.data.noise_reduction], ['CompositionAudioSet', -16, true]);
    const edits = async () => (await h.store.readStream(streams.project(projectId))).filter((e) => e.type === 'ProjectEdited').length;
    const marks = await edits();
    const unread = await prompt('make it sound like a jazz record');
    assert.equal(unread.project_changed, false);
    assert.equal(await edits(), marks, 'a turn that changes nothing does not mark the project edited');
    assert.match(unread.agent_response, /remove filler words/i);
  });

  it('keeps every turn on the conversation, with the revisions each changed', async () => {
    const res = await h.http.get(`/v1/projects/${projectId}/conversations/${conversationId}`).set(h.auth(drive.token));
    assert.equal(res.status, 200);
    const turns = res.body.turns as { prompt: string; project_changed: boolean; revisions: { before: number; after: number }[] }[];
    assert.deepEqual(
      turns.map((t) => [t.prompt, t.project_changed]),
      [
        ['remove filler words', true],
        ['undo that', true],
        ['cut silences longer than 2 seconds', true],
        ['rename this composition to Intro', true],
        ['enhance the audio', true],
        ['make it sound like a jazz record', false],
      ],
    );
    // One event per turn that changed something; undo is a revert, itself one more revision.
    assert.deepEqual(
      turns.map((t) => t.revisions.map((r) => [r.before, r.after])),
      [[[0, 1]], [[1, 2]], [[2, 3]], [[3, 4]], [[4, 5]], []],
    );
  });

  it('brings back a composition the last turn deleted, as it was, in its place, and findable again', async () => {
    const before = await main();
    const listed = async () => ((await detail()).compositions as { id: string; name: string }[]).map((c) => [c.id, c.name]);
    const search = async () =>
      ((await h.http.get('/v1/search').query({ query: 'price' }).set(h.auth(drive.token))).body.results as {
        id?: string;
        composition_id?: string;
      }[]) ?? [];
    const inSearch = async () => JSON.stringify(await search()).includes(compositionId);
    assert.ok(await inSearch(), 'found before');
    const deleted = await prompt('delete the composition Intro');
    assert.equal(deleted.project_changed, true);
    assert.deepEqual(await listed(), []);
    assert.equal(await inSearch(), false, 'not found while deleted');
    const undone = await prompt('undo that');
    assert.equal(undone.project_changed, true, undone.agent_response);
    assert.match(undone.agent_response, /restored Intro \(0:07/);
    assert.deepEqual(await listed(), [[compositionId, 'Intro']]);
    const now = await main();
    assert.deepEqual([now.text, now.duration], [before.text, before.duration]);
    assert.equal(now.revision, before.revision + 2, 'deleted, then reverted: two events');
    assert.ok(await inSearch(), 'found again');
  });

  it('creates a composition, a copy and a clip one after another in one project, each with a short id of its own', async () => {
    // The tools propose time-ordered ids, whose first five hex digits (the short id) stay the same
    // for days: the second composition made by the agent was refused as taking a short id in use.
    await prompt('create a composition called Alpha');
    await prompt('make a copy called Beta');
    await prompt('create a composition called Gamma');
    const compositions = (await detail()).compositions as { id: string; name: string }[];
    assert.deepEqual(compositions.map((c) => c.name).sort(), ['Alpha', 'Beta', 'Gamma', 'Intro']);
    const shortIds = compositions.map((c) => c.id.replace(/-/g, '').slice(0, 5));
    assert.equal(new Set(shortIds).size, 4, `short ids ${shortIds.join(', ')}`);
  });
});
