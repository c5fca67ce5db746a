import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeOpenAiServer } from '../fixtures/fake-openai-server';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, startService } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/**
 * Edit by text (issue 20, item 11) in the real process as `npm start` runs it: an import
 * transcribed by an OpenAI-compatible server on loopback (one word per second: `w0` at 0–0.5 s,
 * `w1` at 1–1.5 s, …), then the composition's transcript read, edited and read again over HTTP.
 */
describe('e2e: edit by text', function () {
  this.timeout(120_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let openai: Awaited<ReturnType<typeof startFakeOpenAiServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-text-'));
    media = await startMediaServer({ 'talk.wav': await makeTestMedia(dir, 'wav', 6) });
    openai = await startFakeOpenAiServer();
    await buildOnce();
  });
  after(async () => {
    await media?.close();
    await openai?.close();
  });

  it('cuts the words deleted from the text, answers 409 on a stale revision and 400 on an added word', async () => {
    const env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')),
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      TRANSCRIBER: 'openai',
      TRANSCRIBER_URL: openai.url,
      TRANSCRIBER_API_KEY: 'sk-test',
    };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Text drive');
      const client = apiClient(svc, drive.token);
      const res = await client.post('/jobs/import/project_media', {
        project_name: 'Talk',
        add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'talk.wav' }] }],
      });
      assert.equal(res.status, 201);
      const { job_id, project_id } = (await res.json()) as { job_id: string; project_id: string };
      const job = await waitFor(
        async () => {
          const j = (await (await client.get(`/jobs/${job_id}`)).json()) as Record<string, any>;
          return j.job_state === 'stopped' ? j : null;
        },
        { timeoutMs: 60_000, intervalMs: 100, what: 'the import to stop' },
      );
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      const compositionId = job.result.created_compositions[0].id as string;
      const path = `/projects/${project_id}/compositions/${compositionId}/transcript`;
      const put = (body: unknown) =>
        fetch(`${svc.base}/v1${path}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${drive.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });

      const read = (await (await client.get(path)).json()) as { revision: number; text: string; duration: number };
      assert.equal(read.text, 'w0 w1 w2 w3 w4 w5');
      assert.equal(read.duration, 6);

      const edited = await put({ text: 'w0 w1 w4 w5', revision: read.revision });
      assert.equal(edited.status, 200, await edited.clone().text());
      const body = (await edited.json()) as { revision: number; text: string; duration: number; words: { start: number }[] };
      // w2 (2–2.5 s) to w3 (3–3.5 s), the pause between them included: 1.5 s.
      assert.deepEqual([body.text, body.duration, body.revision], ['w0 w1 w4 w5', 4.5, read.revision + 1]);
      assert.deepEqual(
        body.words.map((w) => w.start),
        [0, 1, 2.5, 3.5],
      );
      const again = (await (await client.get(path)).json()) as { revision: number; text: string };
      assert.deepEqual([again.revision, again.text], [body.revision, 'w0 w1 w4 w5'], 'the next read shows the edit');
      const project = (await (await client.get(`/projects/${project_id}`)).json()) as { compositions: { id: string; duration: number }[] };
      assert.equal(project.compositions.find((c) => c.id === compositionId)?.duration, 4.5);

      const stale = await put({ text: 'w0', revision: read.revision });
      assert.equal(stale.status, 409);
      assert.equal(((await stale.json()) as { error: string }).error, 'conflict');
      const added = await put({ text: 'w0 hello', revision: body.revision });
      assert.equal(added.status, 400);
      assert.match(((await added.json()) as { message: string }).message, /^text: word 2 "hello" is not in the transcript/);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  });
});
