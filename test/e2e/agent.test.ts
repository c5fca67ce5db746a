import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeChatServer } from '../fixtures/fake-chat-server';
import { admin, apiClient, buildOnce, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/**
 * The agent as `npm start` wires it from configuration: AGENT_LLM_URL and AGENT_LLM_MODEL put the
 * served model in the catalog and make `auto` run it, AGENT_MODELS_FILE adds an alias, the turn
 * reaches the chat server with AGENT_LLM_API_KEY, and `admin drive show` shows the credits spent.
 * A bad AGENT_MODELS_FILE stops start-up naming the problem.
 */
describe('e2e: agent configuration and one turn', function () {
  this.timeout(120_000);
  let llm: Awaited<ReturnType<typeof startFakeChatServer>>;
  let svc: ServiceProcess | undefined;
  let dir: string;

  before(async () => {
    llm = await startFakeChatServer();
    dir = mkdtempSync(join(tmpdir(), 'e2e-agent-'));
    await buildOnce();
  });
  after(async () => {
    svc?.killAll('SIGTERM');
    await svc?.exited;
    await llm?.close();
  });

  it('a bad AGENT_MODELS_FILE stops start-up with a message naming the file and the field', async () => {
    const file = join(dir, 'bad-models.json');
    writeFileSync(file, JSON.stringify({ aliases: [{ id: 'fast', resolvesTo: 'nowhere', description: 'x' }] }));
    await assert.rejects(startService({ DATA_DIR: join(dir, 'bad'), AGENT_MODELS_FILE: file }), (err: Error) =>
      /AGENT_MODELS_FILE .*bad-models\.json.*alias "fast" resolves to "nowhere", which is not a model/.test(err.message),
    );
  });

  it('lists the served model, runs auto on it with the key, and charges the drive', async () => {
    const file = join(dir, 'models.json');
    writeFileSync(file, JSON.stringify({ aliases: [{ id: 'house', resolvesTo: 'house-llm', description: 'Our model' }] }));
    const env = {
      DATA_DIR: join(dir, 'data'),
      AGENT_LLM_URL: llm.url,
      AGENT_LLM_API_KEY: 'sk-e2e',
      AGENT_LLM_MODEL: 'house-llm',
      AGENT_MODELS_FILE: file,
    };
    svc = await startService(env);
    const drive = await admin(env, 'drive', 'create', '--name', 'E2E agent', '--credits', '20');
    const api = apiClient(svc, drive.token);

    const models = (await (await api.get('/agent/models')).json()) as {
      availableModels: { id: string }[];
      aliases: { id: string; resolvesTo: string }[];
    };
    assert.deepEqual(
      models.availableModels.map((m) => m.id),
      ['auto', 'builtin', 'house-llm'],
    );
    assert.ok(models.aliases.some((a) => a.id === 'house' && a.resolvesTo === 'house-llm'));

    llm.script([{ final: 'Nothing needed changing.' }]);
    const res = await api.post('/jobs/agent', { prompt: 'tidy it up', project_name: 'E2E project' });
    assert.equal(res.status, 201);
    const accepted = (await res.json()) as { job_id: string; resolved_model: string };
    assert.equal(accepted.resolved_model, 'auto');
    const job = await waitFor(
      async () => {
        const body = (await (await api.get(`/jobs/${accepted.job_id}`)).json()) as { job_state: string; result?: Record<string, unknown> };
        return body.job_state === 'stopped' ? body : null;
      },
      { timeoutMs: 30_000, what: 'the agent job to stop' },
    );
    assert.equal(job.result?.agent_response, 'Nothing needed changing.');
    assert.equal(job.result?.ai_credits_used, 2);
    assert.equal(llm.received.length, 1);
    assert.equal(llm.received[0].authorization, 'Bearer sk-e2e');
    assert.equal(llm.received[0].body.model, 'house-llm');
    const shown = (await admin(env, 'drive', 'show', '--drive', drive.drive_id)) as unknown as {
      balances: { ai_credits: Record<string, number> };
    };
    assert.deepEqual(shown.balances.ai_credits, { allowance: 20, used: 2, reserved: 0, left: 18 });
  });
});
