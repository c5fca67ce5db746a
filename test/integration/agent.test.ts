import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive, updateDrive } from '../../lib/app/admin';
import { handleCommand, loadState } from '../../lib/app/command-handler';
import { randomIds } from '../../lib/adapters/system/clock';
import type { ProjectModel } from '../../lib/domain/agent/edits';
import { balanceDecider } from '../../lib/domain/balance';
import { compositionDecider } from '../../lib/domain/composition';
import { conversationDecider } from '../../lib/domain/conversation';
import { compositionDuration } from '../../lib/domain/edl';
import { invalidInput } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import { projectDecider } from '../../lib/domain/project';
import { jobDecider } from '../../lib/domain/job';
import * as processors from '../../services/processors';
import { toolsetOf, type AgentTool } from '../../services/processors/agent';
import { startFakeChatServer, type ChatRequest } from '../fixtures/fake-chat-server';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';

/**
 * The agent end to end through HTTP on the embedded adapters, with the `openai` model talking to
 * a fake chat-completions server on loopback and a few tools of the test's own (the real tools
 * are built beside this part): the request rules, the turn loop, credits, cancel, conversations.
 */

/** The composition the request named, else the first. */
const target = (model: ProjectModel, compositionId: string | null) =>
  model.compositions.find((c) => c.composition_id === compositionId) ?? model.compositions[0];

const rename: AgentTool = {
  schema: {
    name: 'rename_composition',
    description: 'rename a composition',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
  run(model, args, ctx) {
    if (typeof args.name !== 'string' || args.name === '') throw invalidInput('name must be a non-empty string');
    const c = target(model, ctx.composition_id);
    return {
      changes: [{ composition_id: c.composition_id, edit: { kind: 'rename', name: args.name } }],
      summary: `Renamed ${c.name} to ${args.name}.`,
    };
  },
};
const cut: AgentTool = {
  schema: {
    name: 'cut_ranges',
    description: 'cut ranges of composition time',
    parameters: { type: 'object', properties: { ranges: { type: 'array' } }, required: ['ranges'] },
  },
  run(model, args, ctx) {
    const c = target(model, ctx.composition_id);
    const ranges = args.ranges as { from: number; to: number }[];
    return {
      changes: [{ composition_id: c.composition_id, edit: { kind: 'cut', ranges } }],
      summary: `Cut ${ranges.length} ranges from ${c.name}.`,
    };
  },
};
/** `cut_ranges` once two calls have come: two turns then plan on the same revision. */
let arrived = 0;
let bothArrived: () => void = () => undefined;
const together = new Promise<void>((resolve) => (bothArrived = resolve));
const cutTogether: AgentTool = {
  schema: { ...cut.schema, name: 'cut_together' },
  async run(model, args, ctx) {
    if (++arrived === 2) bothArrived();
    await together;
    return cut.run(model, args, ctx);
  },
};
/** Renames every composition; `meanwhile` runs after planning, as another writer would. */
let meanwhile: () => Promise<void> = async () => undefined;
const renameAll: AgentTool = {
  schema: { name: 'rename_all', description: 'rename every composition', parameters: { type: 'object' } },
  async run(model) {
    await meanwhile();
    const changes = model.compositions.map((c) => ({
      composition_id: c.composition_id,
      edit: { kind: 'rename' as const, name: `${c.name} (all)` },
    }));
    return { changes, summary: 'Renamed them all.' };
  },
};
/** Holds the turn until the job is cancelled (its signal), then plans a rename: what a cancelled turn must not apply. */
let entered: () => void = () => undefined;
const waitUntilCancelled: AgentTool = {
  schema: { name: 'wait', description: 'wait', parameters: { type: 'object' } },
  async run(model, _args, ctx) {
    entered();
    await new Promise<void>((resolve) => (ctx.signal.aborted ? resolve() : ctx.signal.addEventListener('abort', () => resolve())));
    const c = target(model, ctx.composition_id);
    return { changes: [{ composition_id: c.composition_id, edit: { kind: 'rename', name: 'Half applied' } }], summary: 'waited' };
  },
};

describe('agent jobs (HTTP, embedded adapters, fake chat server)', function () {
  this.timeout(120_000);
  let h: Harness;
  let llm: Awaited<ReturnType<typeof startFakeChatServer>>;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let drive: Awaited<ReturnType<typeof createDrive>>;
  let projectId: string;
  let main: { composition_id: string; short_id: string };

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 10) });
    llm = await startFakeChatServer();
    h = await startHarness({
      agent: {
        llm: { url: llm.url, apiKey: 'sk-test' },
        toolset: toolsetOf([rename, cut, cutTogether, renameAll, waitUntilCancelled]),
        concurrency: 16,
      },
    });
    drive = await createDrive(h.admin, { name: 'Agent drive', credits: 1000 });
    const imported = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(drive.token))
      .send({
        project_name: 'Interview',
        add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'voice.wav' }] }],
      });
    assert.equal(imported.status, 201, imported.text);
    await h.waitForJob(imported.body.job_id, undefined, 30_000, drive.token);
    projectId = imported.body.project_id;
    const { state } = await loadState(h.store, streams.project(projectId), projectDecider);
    main = state.exists ? state.compositions.find((c) => c.name === 'Main')! : assert.fail('no project');
  });
  after(async () => {
    await h?.close();
    await llm?.close();
    await media?.close();
  });

  const post = (body: Record<string, unknown>, token = drive.token) => h.http.post('/v1/jobs/agent').set(h.auth(token)).send(body);
  const valid = (schema: string, body: unknown) => {
    const validate = h.schemas.validator(schema);
    assert.ok(validate(body), JSON.stringify(validate.errors));
  };
  const composition = async (id: string) => {
    const { state, revision } = await loadState(h.store, streams.composition(id), compositionDecider);
    return state.exists ? { ...state, revision } : assert.fail(`composition ${id} does not exist`);
  };
  const expectError = (
    res: { status: number; body: { error?: string; message?: string } },
    status: number,
    code: string,
    message: RegExp,
  ) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error, code);
    assert.match(res.body.message ?? '', message);
  };
  const finished = async (jobId: string) => (await h.waitForJob(jobId, undefined, 60_000, drive.token)) as Record<string, any>;

  describe('request rules', () => {
    it('400 naming the field for every malformed request', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ project_id: projectId }, /prompt is required/],
        [{ prompt: '', project_id: projectId }, /prompt/],
        [{ prompt: '   ', project_id: projectId }, /prompt must not be empty/],
        [{ prompt: '\u0000', project_id: projectId }, /prompt must not be empty or only white space, control or invisible/],
        [{ prompt: '\u200b\u200b \u2060', project_id: projectId }, /prompt must not be empty/],
        [{ prompt: 'x'.repeat(10_001), project_id: projectId }, /prompt/],
        [{ prompt: 42, project_id: projectId }, /prompt/],
        [{ prompt: 'x', project_id: projectId, project_name: 'Also' }, /mutually exclusive/],
        [{ prompt: 'x' }, /project_id or project_name is required/],
        [{ prompt: 'x', project_name: 'New', composition_id: main.short_id }, /composition_id requires project_id/],
        [{ prompt: 'x', project_name: 'New', conversation_id: drive.drive_id }, /conversation_id requires project_id/],
        [{ prompt: 'x', project_id: projectId, team_access: 'edit' }, /team_access applies only when creating a project/],
        [{ prompt: 'x', project_name: 'New', team_access: 'everyone' }, /team_access/],
        [{ prompt: 'x', project_id: 'not-a-uuid' }, /project_id/],
        [
          { prompt: 'x', project_id: projectId, composition_id: 'Main' },
          /composition_id must be a composition UUID, a short id \(5 hex digits\), or a project URL/,
        ],
        [
          { prompt: 'x', project_id: projectId, composition_id: `${WEB_URL}/${drive.drive_id}/${main.short_id}` },
          /composition_id names a composition of project/,
        ],
        [
          { prompt: 'x', project_id: projectId, composition_id: `https://elsewhere.test/${projectId}/${main.short_id}` },
          /composition_id as a URL must be/,
        ],
        [{ prompt: 'x', project_id: projectId, conversation_id: 'c-1' }, /conversation_id/],
        [{ prompt: 'x', project_id: projectId, model: 'gpt-99' }, /model: "gpt-99" is not a model or alias/],
        [{ prompt: 'x', project_id: projectId, callback_url: 'not a url' }, /callback_url/],
        [{ prompt: 'x', project_id: projectId, callback_url: 'http://10.1.2.3/hook' }, /callback_url: refused/],
        [{ prompt: 'x', project_id: projectId, temperature: 1 }, /temperature is not a known field/],
      ];
      for (const [body, message] of cases) expectError(await post(body), 400, 'invalid_input', message);
      assert.equal((await h.http.post('/v1/jobs/agent').send({ prompt: 'x', project_id: projectId })).status, 401);
    });

    it('404 for a project, composition or conversation that does not exist; 403 for another drive’s project', async () => {
      const unknown = '0193a3c2-0000-7abc-8def-0123456789ab';
      expectError(await post({ prompt: 'x', project_id: unknown }), 404, 'not_found', /project .* does not exist/);
      expectError(await post({ prompt: 'x', project_id: projectId, composition_id: unknown }), 404, 'not_found', /composition/);
      expectError(await post({ prompt: 'x', project_id: projectId, composition_id: 'fffff' }), 404, 'not_found', /short id fffff/);
      expectError(
        await post({ prompt: 'x', project_id: projectId, composition_id: `${WEB_URL}/${projectId}/fffff` }),
        404,
        'not_found',
        /fffff/,
      );
      expectError(await post({ prompt: 'x', project_id: projectId, conversation_id: unknown }), 404, 'not_found', /conversation/);
      expectError(await post({ prompt: 'x', project_id: projectId }, h.drive.token), 403, 'forbidden', /another drive/);
    });

    it('400 for a conversation of another project', async () => {
      llm.script([{ final: 'Nothing to do.' }]);
      const other = await post({ prompt: 'hello', project_name: 'Other project' });
      assert.equal(other.status, 201);
      const res = await post({ prompt: 'x', project_id: projectId, conversation_id: other.body.conversation_id });
      expectError(res, 400, 'invalid_input', /conversation_id: conversation .* belongs to another project/);
      await finished(other.body.job_id);
    });

    it('402 with the credits required and available when the drive cannot pay for a turn', async () => {
      const poor = await createDrive(h.admin, { name: 'Poor drive', credits: 1 });
      expectError(await post({ prompt: 'x', project_name: 'P' }, poor.token), 402, 'payment_required', /2 required .* and 1 available/);
      // The builtin model is cheaper (cost low: 1 credit a turn), so the same drive can afford it.
      assert.equal((await post({ prompt: 'x', project_name: 'P', model: 'offline' }, poor.token)).status, 201);
    });

    it('403 while the drive admin has disabled the agent, 201 once enabled again', async () => {
      const admin = await createDrive(h.admin, { name: 'Managed drive', credits: 100 });
      await updateDrive(h.admin, admin.drive_id, { agent_disabled: true });
      expectError(await post({ prompt: 'x', project_name: 'P' }, admin.token), 403, 'forbidden', /disabled agent usage/);
      await updateDrive(h.admin, admin.drive_id, { agent_disabled: false });
      assert.equal((await post({ prompt: 'x', project_name: 'P', model: 'offline' }, admin.token)).status, 201);
    });

    it('201 with a UUID v7 job id, the conversation and the resolved model (auto stays auto, an alias its canonical id)', async () => {
      llm.script([{ final: 'Nothing to do.' }]);
      const auto = await post({ prompt: 'hello', project_id: projectId, composition_id: main.short_id });
      assert.equal(auto.status, 201, auto.text);
      valid('agent-response', auto.body);
      assert.deepEqual(Object.keys(auto.body).sort(), [
        'conversation_id',
        'drive_id',
        'drive_name',
        'job_id',
        'project_id',
        'project_url',
        'resolved_model',
      ]);
      assert.match(auto.body.job_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.match(auto.body.conversation_id, /^[0-9a-f-]{36}$/);
      assert.equal(auto.body.drive_name, 'Agent drive');
      assert.equal(auto.body.project_url, `${WEB_URL}/${projectId}/${main.short_id}`);
      assert.equal(auto.body.resolved_model, 'auto');
      assert.equal((await post({ prompt: 'hello', project_id: projectId, model: 'offline' })).body.resolved_model, 'builtin');
      assert.equal((await post({ prompt: 'hello', project_id: projectId, model: 'smart' })).body.resolved_model, 'test-llm');
      const job = await finished(auto.body.job_id);
      assert.equal(job.job_type, 'agent');
      assert.equal(job.result.resolved_model, 'auto');
      assert.equal(job.result.conversation_id, auto.body.conversation_id);
    });

    it('takes an Idempotency-Key: the same request answers the first 201 again and queues nothing more', async () => {
      llm.script([{ final: 'Nothing to do.' }]);
      const body = { prompt: 'hello again', project_id: projectId };
      const first = await post(body).set('Idempotency-Key', 'agent-key-1');
      const again = await post(body).set('Idempotency-Key', 'agent-key-1');
      assert.equal(first.status, 201);
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.body, first.body);
      await finished(first.body.job_id);
    });
  });

  it('GET /v1/agent/models lists auto at medium, the served model and an alias', async () => {
    const res = await h.http.get('/v1/agent/models').set(h.auth(drive.token));
    assert.equal(res.status, 200);
    valid('agent-models', res.body);
    assert.deepEqual(res.body.availableModels, [
      { id: 'auto', cost: 'medium' },
      { id: 'builtin', cost: 'low' },
      { id: 'test-llm', cost: 'medium' },
    ]);
    assert.ok(res.body.aliases.length >= 1);
    for (const alias of res.body.aliases) assert.deepEqual(Object.keys(alias).sort(), ['cost', 'description', 'id', 'resolvesTo']);
    assert.equal((await h.http.get('/v1/agent/models')).status, 401);
  });

  describe('the turn loop', () => {
    let conversationId: string;

    it('runs the model’s tool calls (after a 429 and a 500), applies their edits at once and charges the turn exactly', async () => {
      const before = await composition(main.composition_id);
      const credits = (await h.balance.show(drive.drive_id)).ai_credits;
      llm.script([
        { status: 429, retryAfter: '0' },
        { status: 500 },
        {
          calls: [
            { name: 'rename_composition', arguments: { name: 'Intro' } },
            {
              name: 'cut_ranges',
              arguments: {
                ranges: [
                  { from: 1, to: 2 },
                  { from: 5, to: 7 },
                ],
              },
            },
          ],
        },
        { final: 'Renamed Main to Intro and cut 3 seconds.' },
      ]);
      const res = await post({ prompt: 'call it Intro and cut 1-2 and 5-7', project_id: projectId, composition_id: main.composition_id });
      assert.equal(res.status, 201, res.text);
      const job = await finished(res.body.job_id);
      valid('job', job);
      conversationId = res.body.conversation_id;
      assert.deepEqual(job.result, {
        status: 'success',
        agent_response: 'Renamed Main to Intro and cut 3 seconds.',
        project_changed: true,
        media_seconds_used: 0,
        ai_credits_used: 4, // auto: medium, 2 a turn and 1 per tool call
        conversation_id: conversationId,
        resolved_model: 'auto',
      });
      const after = await composition(main.composition_id);
      assert.equal(after.name, 'Intro');
      assert.equal(compositionDuration(after.clips), compositionDuration(before.clips) - 3);
      const now = (await h.balance.show(drive.drive_id)).ai_credits;
      assert.equal(now.used - credits.used, 4);
      assert.equal(now.reserved, 0);
      // What the model saw: the system prompt naming the composition, the prompt, the tools; then its calls' results.
      assert.equal(llm.received.length, 4, 'the 429 and the 500 were asked again');
      const [, , first, second] = llm.received;
      assert.equal(first.authorization, 'Bearer sk-test');
      assert.match(first.body.messages[0].content ?? '', new RegExp(main.composition_id));
      assert.equal(first.body.messages.at(-1)?.content, 'call it Intro and cut 1-2 and 5-7');
      assert.deepEqual(first.body.tools?.map((t) => t.function.name).sort(), [
        'cut_ranges',
        'cut_together',
        'rename_all',
        'rename_composition',
        'wait',
      ]);
      assert.deepEqual(
        second.body.messages.slice(-2).map((m) => m.role),
        ['tool', 'tool'],
      );
      assert.match(second.body.messages.at(-2)?.content ?? '', /Renamed Main to Intro/);
    });

    it('records the turn on its conversation and shows the next turn the earlier ones; the history is readable', async () => {
      llm.script([{ final: 'Yes, it is called Intro now.' }]);
      const res = await post({ prompt: 'is it renamed?', project_id: projectId, conversation_id: conversationId });
      assert.equal(res.body.conversation_id, conversationId);
      await finished(res.body.job_id);
      const seen = llm.received[0].body.messages.map((m) => m.role);
      assert.deepEqual(seen, ['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'user']);
      assert.equal(llm.received[0].body.messages[1].content, 'call it Intro and cut 1-2 and 5-7');

      const history = await h.http.get(`/v1/projects/${projectId}/conversations/${conversationId}`).set(h.auth(drive.token));
      assert.equal(history.status, 200);
      valid('conversation', history.body);
      assert.equal(history.body.turns.length, 2);
      const [turn] = history.body.turns;
      assert.equal(turn.model, 'test-llm');
      assert.deepEqual(turn.tool_calls[0].arguments, { name: 'Intro' });
      assert.match(turn.tool_calls[0].result.summary, /Renamed Main to Intro/);
      assert.equal(turn.revisions.length, 1);
      assert.equal(turn.revisions[0].composition_id, main.composition_id);
      assert.equal(turn.revisions[0].after - turn.revisions[0].before, 2, 'a rename, and one event cutting both ranges');
      assert.equal(history.body.turns[1].project_changed, false);
      const elsewhere = `/v1/projects/${drive.drive_id}/conversations/${conversationId}`;
      assert.equal((await h.http.get(elsewhere).set(h.auth(drive.token))).status, 404);
      assert.equal((await h.http.get(`/v1/projects/${projectId}/conversations/${conversationId}`).set(h.auth(h.drive.token))).status, 403);
    });

    it('a model that never stops is stopped after 8 steps; what it planned is applied and every call charged', async () => {
      llm.script([{ calls: [{ name: 'rename_composition', arguments: { name: 'Loop' } }] }]);
      const res = await post({ prompt: 'keep going', project_id: projectId, composition_id: main.short_id });
      const job = await finished(res.body.job_id);
      assert.equal(llm.received.length, 8);
      assert.equal(job.result.status, 'success');
      assert.match(job.result.agent_response, /Stopped after 8 steps/);
      assert.equal(job.result.ai_credits_used, 2 + 8);
      assert.equal((await composition(main.composition_id)).name, 'Loop');
    });

    it('a model asking for more than 16 tool calls in a turn is stopped at 16, told so (not that credits ran out)', async () => {
      const rename = (n: number) => ({ name: 'rename_composition', arguments: { name: `Take ${n}` } });
      llm.script([{ calls: Array.from({ length: 20 }, (_, n) => rename(n + 1)) }, { final: 'Done.' }]);
      const res = await post({ prompt: 'rename it twenty times', project_id: projectId, composition_id: main.short_id });
      const job = await finished(res.body.job_id);
      assert.equal(job.result.status, 'success');
      assert.equal(job.result.ai_credits_used, 2 + 16, 'the drive has 1,000 credits: the bound is the turn, not the balance');
      assert.match(job.result.agent_response, /Stopped: a turn makes at most 16 tool calls; ask again for the rest\.$/);
      assert.doesNotMatch(job.result.agent_response, /credits/);
      assert.match(job.result.agent_response, /to Take 1\. Renamed /, 'the summaries read as sentences');
      assert.equal((await composition(main.composition_id)).name, 'Take 16');
    });

    it('a tool call the tool refuses goes back to the model as its result, not into the job', async () => {
      llm.script([
        {
          calls: [
            { name: 'rename_composition', arguments: { name: '' } },
            { name: 'no_such_tool', arguments: {} },
          ],
        },
        { final: 'Could not.' },
      ]);
      const before = await composition(main.composition_id);
      const job = await finished((await post({ prompt: 'rename to nothing', project_id: projectId })).body.job_id);
      assert.equal(job.result.status, 'success');
      assert.equal(job.result.project_changed, false);
      const results = llm.received[1].body.messages.slice(-2).map((m) => JSON.parse(m.content ?? '{}') as { error?: string });
      assert.match(results[0].error ?? '', /name must be a non-empty string/);
      assert.match(results[1].error ?? '', /no tool named no_such_tool/);
      assert.equal((await composition(main.composition_id)).revision, before.revision);
    });

    it('a server that refuses the key ends the job with an error result at once, charging nothing', async () => {
      llm.script([{ status: 401 }]);
      const credits = (await h.balance.show(drive.drive_id)).ai_credits;
      const job = await finished((await post({ prompt: 'x', project_id: projectId })).body.job_id);
      assert.equal(job.result.status, 'error');
      assert.equal(job.result.error_code, 'unavailable');
      assert.match(job.result.error_message, /refused the request: HTTP 401/);
      const now = await waitFor(
        async () => {
          const c = (await h.balance.show(drive.drive_id)).ai_credits;
          return c.reserved === 0 ? c : null;
        },
        { timeoutMs: 10_000, what: 'the reservation to be released' },
      );
      assert.equal(now.used, credits.used);
    });

    it('a prompt with project_name makes a project with its empty placeholder, which holds the result', async () => {
      llm.script([{ calls: [{ name: 'rename_composition', arguments: { name: 'Made by a prompt' } }] }, { final: 'Done.' }]);
      const res = await post({ prompt: 'start a project', project_name: 'From a prompt', team_access: 'view' });
      const job = await finished(res.body.job_id);
      assert.equal(job.result.project_changed, true);
      const { state } = await loadState(h.store, streams.project(res.body.project_id), projectDecider);
      assert.ok(state.exists);
      assert.equal(state.project.team_access, 'view');
      assert.equal(state.compositions.length, 1);
      const placeholder = await composition(state.compositions[0].composition_id);
      assert.equal(placeholder.name, 'Made by a prompt');
      assert.deepEqual(placeholder.clips, []);
      assert.equal(res.body.project_url, `${WEB_URL}/${res.body.project_id}/${placeholder.short_id}`);
    });
  });

  describe('concurrent writers, cancel and credits', () => {
    it('a turn written by an attempt that died before the job stopped is finished, not run again', async () => {
      const jobId = randomIds.uuidv7();
      const conversationId = randomIds.uuidv7();
      const now = new Date().toISOString();
      const write = { newId: randomIds.uuidv7, metadata: { partition_key: projectId } };
      const conversation = { conversation_id: conversationId, project_id: projectId, drive_id: drive.drive_id, job_id: jobId };
      await handleCommand(
        h.store,
        streams.conversation(conversationId),
        conversationDecider,
        { type: 'StartConversation', conversation, now },
        write,
      );
      const turn = {
        job_id: jobId,
        prompt: 'rename',
        model: 'test-llm',
        tool_calls: [],
        response: 'Renamed it before.',
        project_changed: true,
        revisions: [],
        ai_credits_used: 2,
      };
      await handleCommand(h.store, streams.conversation(conversationId), conversationDecider, { type: 'RecordTurn', turn, now }, write);
      const request = {
        prompt: 'rename',
        model: 'test-llm',
        resolved_model: 'auto',
        cost: 'medium' as const,
        composition_id: null,
        conversation_id: conversationId,
        new_project: false,
      };
      const job = {
        job_id: jobId,
        job_type: 'agent' as const,
        drive_id: drive.drive_id,
        project_id: projectId,
        project_url: `${WEB_URL}/${projectId}`,
        created_by: 'u',
        callback_url: null,
        request,
      };
      llm.script([{ final: 'must not be asked' }]);
      await handleCommand(h.store, streams.job(jobId), jobDecider, { type: 'QueueJob', job, now }, write);
      const stopped = await finished(jobId);
      assert.equal(stopped.result.agent_response, 'Renamed it before.');
      assert.equal(stopped.result.ai_credits_used, 2);
      assert.equal(llm.received.length, 0);
    });

    it('two turns on one composition at once: both edits land, one after the other, never a mixture', async () => {
      const before = await composition(main.composition_id);
      const duration = compositionDuration(before.clips);
      // Each turn cuts its own first second, both planned on the same revision (the tool waits for the other);
      // the one that commits second finds the composition moved, and its next attempt plans again.
      llm.script([
        (r: ChatRequest) =>
          r.body.messages.at(-1)?.role === 'tool'
            ? { final: 'Cut.' }
            : { calls: [{ name: 'cut_ranges', arguments: { ranges: [{ from: 0, to: 1 }] } }] },
      ]);
      const [a, b] = await Promise.all([
        post({ prompt: 'cut the first second', project_id: projectId, composition_id: main.short_id }),
        post({ prompt: 'cut the first second', project_id: projectId, composition_id: main.short_id }),
      ]);
      const jobs = await Promise.all([finished(a.body.job_id), finished(b.body.job_id)]);
      assert.deepEqual(
        jobs.map((j) => j.result.status),
        ['success', 'success'],
      );
      const after = await composition(main.composition_id);
      assert.equal(compositionDuration(after.clips), duration - 2);
      assert.equal(after.revision, before.revision! + 2, 'one cut event per turn, none twice');
      const failures = (await Promise.all([a, b].map((r) => h.store.readStream(streams.job(r.body.job_id)))))
        .flat()
        .filter((e) => e.type === 'JobAttemptFailed');
      assert.deepEqual(
        failures.map((e) => (e.data as { reason: string }).reason),
        ['a composition changed while the turn planned its edits; planning again'],
      );
    });

    /** What `meanwhile` does once, as another writer would: renames the composition. */
    const renamedOnce = (compositionId: string, name: string) => async () => {
      meanwhile = async () => undefined;
      const write = { newId: randomIds.uuidv7, metadata: { partition_key: projectId } };
      const rename = { type: 'Rename' as const, name, now: new Date().toISOString() };
      await handleCommand(h.store, streams.composition(compositionId), compositionDecider, rename, write);
    };

    it('a turn over two compositions whose second moved meanwhile: nothing of it is written, and the attempt plans again on both', async () => {
      const { state: project } = await loadState(h.store, streams.project(projectId), projectDecider);
      const [first, second] = project.exists ? project.compositions : assert.fail('no project');
      const [firstBefore, secondBefore] = [await composition(first.composition_id), await composition(second.composition_id)];
      meanwhile = renamedOnce(second.composition_id, `${secondBefore.name} moved`);
      llm.script([
        (r: ChatRequest) =>
          r.body.messages.at(-1)?.role === 'tool' ? { final: 'Renamed them all.' } : { calls: [{ name: 'rename_all', arguments: {} }] },
      ]);
      const res = await post({ prompt: 'rename them all', project_id: projectId });
      const job = await finished(res.body.job_id);
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      const [firstAfter, secondAfter] = [await composition(first.composition_id), await composition(second.composition_id)];
      assert.equal(firstAfter.name, `${firstBefore.name} (all)`);
      assert.equal(firstAfter.revision, firstBefore.revision! + 1, 'the first attempt wrote nothing to the first composition');
      assert.equal(secondAfter.name, `${secondBefore.name} moved (all)`, 'planned again on the composition as it had become');
      const failures = (await h.store.readStream(streams.job(res.body.job_id))).filter((e) => e.type === 'JobAttemptFailed');
      assert.deepEqual(
        failures.map((e) => (e.data as { reason: string }).reason),
        ['a composition changed while the turn planned its edits; planning again'],
      );
      const { state } = await loadState(h.store, streams.conversation(res.body.conversation_id), conversationDecider);
      assert.ok(state.exists);
      assert.equal(state.turns.length, 1, 'one turn recorded');
      assert.deepEqual(state.turns[0].revisions.map((r) => r.composition_id).sort(), [first.composition_id, second.composition_id].sort());
    });

    it('the same without whole appends (EventStoreDB): the first change is kept and recorded, the job says which did not land', async () => {
      const { state: project } = await loadState(h.store, streams.project(projectId), projectDecider);
      const [first, second] = project.exists ? project.compositions : assert.fail('no project');
      const firstBefore = await composition(first.composition_id);
      // As on a store without `appendAll`: the batch is made up to its first conflict.
      const whole = h.balance.reserveAndSettleWhole;
      h.balance.reserveAndSettleWhole = async () => null;
      try {
        await keptAndRecorded(first, second, firstBefore);
      } finally {
        h.balance.reserveAndSettleWhole = whole;
      }
    });

    async function keptAndRecorded(
      first: { composition_id: string },
      second: { composition_id: string },
      firstBefore: Awaited<ReturnType<typeof composition>>,
    ) {
      meanwhile = renamedOnce(second.composition_id, 'Renamed by someone else');
      llm.script([{ calls: [{ name: 'rename_all', arguments: {} }] }, { final: 'Renamed them all.' }]);
      const res = await post({ prompt: 'rename them all', project_id: projectId });
      const job = await finished(res.body.job_id);
      assert.equal(job.result.status, 'error');
      assert.equal(job.result.error_code, 'conflict');
      assert.match(
        job.result.error_message,
        new RegExp(`changed composition ${first.composition_id}, but composition ${second.composition_id} changed meanwhile`),
      );
      assert.equal((await composition(first.composition_id)).name, `${firstBefore.name} (all)`);
      assert.equal((await composition(second.composition_id)).name, 'Renamed by someone else');
      const { state } = await loadState(h.store, streams.conversation(res.body.conversation_id), conversationDecider);
      assert.ok(state.exists);
      assert.deepEqual(state.turns[0].revisions, [
        { composition_id: first.composition_id, before: firstBefore.revision, after: firstBefore.revision! + 1 },
      ]);
      assert.equal(state.turns[0].ai_credits_used, 3);
      // The project is marked edited once, for what was written, after it.
      const marks = (await h.store.readStream(streams.project(projectId))).filter(
        (e) => e.type === 'ProjectEdited' && e.data.job_id === res.body.job_id,
      );
      assert.deepEqual(
        marks.map((e) => e.data.composition_ids),
        [[first.composition_id]],
      );
    }

    it('an attempt retried after a conflict reserves again what the first held, even on a drive with just enough', async () => {
      const exact = await createDrive(h.admin, { name: 'Just enough', credits: 20 });
      llm.script([{ final: 'Made it.' }]);
      const made = await post({ prompt: 'start', project_name: 'Retried' }, exact.token);
      await h.waitForJob(made.body.job_id, undefined, 30_000, exact.token);
      const { state: project } = await loadState(h.store, streams.project(made.body.project_id), projectDecider);
      const [placeholder] = project.exists ? project.compositions : assert.fail('no project');
      meanwhile = async () => {
        meanwhile = async () => undefined;
        const write = { newId: randomIds.uuidv7, metadata: { partition_key: made.body.project_id } };
        const rename = { type: 'Rename' as const, name: 'Moved under the turn', now: new Date().toISOString() };
        await handleCommand(h.store, streams.composition(placeholder.composition_id), compositionDecider, rename, write);
      };
      llm.script([
        (r: ChatRequest) =>
          r.body.messages.at(-1)?.role === 'tool' ? { final: 'Renamed.' } : { calls: [{ name: 'rename_all', arguments: {} }] },
      ]);
      const res = await post(
        { prompt: 'rename them all', project_id: made.body.project_id, conversation_id: made.body.conversation_id },
        exact.token,
      );
      const job = (await h.waitForJob(res.body.job_id, undefined, 30_000, exact.token)) as Record<string, any>;
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      assert.equal((await composition(placeholder.composition_id)).name, 'Moved under the turn (all)');
      const credits = (await h.balance.show(exact.drive_id)).ai_credits;
      assert.deepEqual(credits, { allowance: 20, used: 2 + 3, reserved: 0, left: 15 });
    });

    it('cancel between tool calls: the job ends cancelled, the project is as it was, nothing is charged or recorded', async () => {
      const before = await composition(main.composition_id);
      const credits = (await h.balance.show(drive.drive_id)).ai_credits;
      llm.script([
        {
          calls: [
            { name: 'wait', arguments: {} },
            { name: 'rename_composition', arguments: { name: 'Never' } },
          ],
        },
        { final: 'x' },
      ]);
      const inTool = new Promise<void>((resolve) => (entered = resolve));
      const res = await post({ prompt: 'wait, then rename', project_id: projectId });
      await inTool;
      assert.equal((await h.http.delete(`/v1/jobs/${res.body.job_id}`).set(h.auth(drive.token))).status, 204);
      const job = await finished(res.body.job_id);
      assert.equal(job.job_state, 'cancelled');
      assert.equal(job.result, undefined);
      const released = await waitFor(
        async () => {
          const c = (await h.balance.show(drive.drive_id)).ai_credits;
          return c.reserved === 0 ? c : null;
        },
        { timeoutMs: 10_000, what: 'the reservation to be released' },
      );
      assert.equal(released.used, credits.used, 'no credits charged');
      const after = await composition(main.composition_id);
      assert.equal(after.revision, before.revision, 'no edit written');
      assert.equal(after.name, before.name);
      const { state } = await loadState(h.store, streams.conversation(res.body.conversation_id), conversationDecider);
      assert.ok(state.exists);
      assert.equal(state.turns.length, 0, 'no turn recorded');
      assert.equal(llm.received.length, 1, 'the model was not asked again');
    });

    it('8 turns at once on 10 credits: 5 run, each waiting for what the others hold, and 3 are refused; none below zero', async () => {
      const ten = await createDrive(h.admin, { name: 'Ten credits', credits: 10 });
      llm.script([{ final: 'Done.' }]); // 2 credits a turn (medium, no tool call)
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => post({ prompt: `turn ${i}`, project_name: `T${i}` }, ten.token)),
      );
      // Held credits count as available at accept: every turn is taken, and the reservations decide.
      assert.deepEqual(
        answers.map((r) => r.status),
        Array(8).fill(201),
      );
      const jobs = await Promise.all(
        answers.map((r) => h.waitForJob(r.body.job_id, undefined, 90_000, ten.token) as Promise<Record<string, any>>),
      );
      const outcomes = jobs.map((j) => (j.result.status === 'success' ? 'success' : j.result.error_code)).sort();
      assert.deepEqual(
        outcomes,
        [...Array(3).fill('payment_required'), ...Array(5).fill('success')],
        JSON.stringify(jobs.map((j) => j.result)),
      );
      for (const j of jobs.filter((j) => j.result.status !== 'success')) {
        assert.match(j.result.error_message, /^not enough AI credits: 2 required \(model \S+, cost medium\) and 0 available$/);
      }
      const shown = (await h.balance.show(ten.drive_id)).ai_credits;
      assert.deepEqual([shown.used, shown.reserved, shown.left], [10, 0, 0]);
    });

    it('50 agent jobs at once in one drive: the AI credits never go below zero and settle at what the turns used', async () => {
      const small = await createDrive(h.admin, { name: 'Small credits', credits: 60 });
      // Each turn: one tool call, then a final answer (3 credits at auto's medium class).
      llm.script([
        (r: ChatRequest) =>
          r.body.messages.at(-1)?.role === 'tool'
            ? { final: 'Renamed.' }
            : { calls: [{ name: 'rename_composition', arguments: { name: 'Busy' } }] },
      ]);
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => post({ prompt: `turn ${i}`, project_name: `Busy ${i}` }, small.token)),
      );
      // Refused at accept (402: what is left is reserved by running turns) or when the turn reserves: never a third way.
      assert.deepEqual(
        answers.map((r) => r.status).filter((s) => s !== 201 && s !== 402),
        [],
      );
      const accepted = answers.filter((r) => r.status === 201);
      const jobs = await Promise.all(
        accepted.map((r) => h.waitForJob(r.body.job_id, undefined, 90_000, small.token) as Promise<Record<string, any>>),
      );
      const succeeded = jobs.filter((j) => j.result.status === 'success');
      const refused = jobs.filter((j) => j.result.status === 'error');
      for (const j of refused) assert.equal(j.result.error_code, 'payment_required', JSON.stringify(j.result));
      assert.ok(refused.length + answers.length - accepted.length > 0, 'the credits ran out');
      const used = succeeded.reduce((n, j) => n + j.result.ai_credits_used, 0);
      const shown = await waitFor(
        async () => {
          const c = (await h.balance.show(small.drive_id)).ai_credits;
          return c.reserved === 0 ? c : null;
        },
        { timeoutMs: 10_000, what: 'every reservation to end' },
      );
      assert.equal(shown.used, used);
      assert.ok(used <= 60 && shown.left! >= 0, `used ${used} of 60`);
      // Each running turn holds the most it may cost (18 at medium) until it ends, so a busy drive refuses new turns before it is spent.
      assert.ok(succeeded.length > 0 && used === 3 * succeeded.length, `${succeeded.length} turns used ${used}`);
      // Never below zero at any point: replay the drive's balance stream.
      const events = await h.store.readStream(streams.balance(small.drive_id));
      let state = balanceDecider.initialState();
      for (const e of events) {
        state = balanceDecider.evolve(state, { type: e.type, data: e.data } as never);
        const reserved = [...state.open.values()].reduce((n, r) => n + r.amount, 0);
        assert.ok(state.used.ai_credits + reserved <= 60, `over the allowance at revision ${e.revision}`);
      }
    });
  });
});

describe('agent jobs queued when the drive admin disables the agent', function () {
  this.timeout(60_000);

  it('are refused when their turn comes, as the POST would have been: nothing reserved, changed or charged', async () => {
    // No worker yet: the prompt stays queued while the admin changes the setting.
    const h = await startHarness({ processors: false });
    let worker: Awaited<ReturnType<typeof processors.start>> | undefined;
    try {
      const drive = await createDrive(h.admin, { name: 'Managed drive', credits: 100 });
      const accepted = await h.http
        .post('/v1/jobs/agent')
        .set(h.auth(drive.token))
        .send({ prompt: 'rename this composition to Intro', project_name: 'Queued', model: 'offline' });
      assert.equal(accepted.status, 201, accepted.text);
      await updateDrive(h.admin, drive.drive_id, { agent_disabled: true });
      worker = await processors.start(h.processorDeps);
      const job = (await h.waitForJob(accepted.body.job_id, undefined, 20_000, drive.token)) as { result: Record<string, string> };
      assert.equal(job.result.status, 'error');
      assert.equal(job.result.error_code, 'forbidden');
      assert.match(job.result.error_message, /disabled agent usage on this drive after the prompt was accepted/);
      const credits = (await h.balance.show(drive.drive_id)).ai_credits;
      assert.deepEqual([credits.used, credits.reserved], [0, 0]);
      const { state } = await loadState(h.store, streams.conversation(accepted.body.conversation_id), conversationDecider);
      assert.ok(state.exists && state.turns.length === 0, 'no turn recorded');
    } finally {
      await worker?.stop();
      await h.close();
    }
  });
});
