import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { startFakeOpenAiServer } from '../fixtures/fake-openai-server';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, buildOnce, inheritedEnv, ROOT, startService, type ServiceProcess } from '../fixtures/service-process';

/**
 * `npx mps mcp` as an assistant runs it: the SDK's own MCP client spawns the built server
 * (`node dist/bin/mps.js mcp`) over stdio, against the service as `npm start` runs it, with media
 * on a loopback server and transcripts from an OpenAI-compatible server on loopback (`w0 w1 …`,
 * one word a second). Each tool is called for real; failures come back as tool errors.
 */
describe('e2e: the MCP server (mps mcp) through an MCP client over stdio', function () {
  this.timeout(180_000);
  let svc: ServiceProcess | undefined;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let openai: Awaited<ReturnType<typeof startFakeOpenAiServer>>;
  let token: string;
  let driveName: string;
  let dir: string;
  const clients: Client[] = [];

  /** An MCP client connected to a new `mps mcp` process with this environment (and an empty config dir unless given one). */
  async function connect(env: Record<string, string>): Promise<{ client: Client; stderr: () => string; protocolErrors: Error[] }> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(ROOT, 'dist', 'bin', 'mps.js'), 'mcp'],
      env: { ...outsideSettings(), XDG_CONFIG_HOME: mkdtempSync(join(dir, 'config-')), ...env },
      cwd: ROOT,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d) => (stderr += d));
    const protocolErrors: Error[] = [];
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    client.onerror = (err) => protocolErrors.push(err);
    await client.connect(transport);
    clients.push(client);
    return { client, stderr: () => stderr, protocolErrors };
  }

  /** This process's environment without any MPS_ settings of the person running the tests. */
  const outsideSettings = () => {
    const { MPS_BASE_URL: _url, MPS_TOKEN: _token, ...rest } = inheritedEnv();
    return rest as Record<string, string>;
  };

  type ToolResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}, onprogress?: (p: Progress) => void) =>
    (await client.callTool({ name, arguments: args }, undefined, {
      onprogress,
      timeout: 120_000,
      resetTimeoutOnProgress: true,
    })) as ToolResult;
  const text = (result: ToolResult) => result.content.map((c) => c.text ?? '').join('\n');
  const ok = (result: ToolResult) => {
    assert.ok(!result.isError, `a tool error: ${text(result)}`);
    return result.structuredContent;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'e2e-mcp-'));
    media = await startMediaServer({
      'clip.mp4': await makeTestMedia(dir, 'mp4', 3),
      'long.wav': await makeTestMedia(dir, 'wav', 30),
    });
    openai = await startFakeOpenAiServer();
    await buildOnce();
    const env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-mcp-data-')),
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      TRANSCRIBER: 'openai',
      TRANSCRIBER_URL: openai.url,
    };
    svc = await startService(env);
    driveName = 'MCP drive';
    const drive = await admin(env, 'drive', 'create', '--name', driveName, '--credits', '50');
    token = drive.token;
  });
  after(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    svc?.killAll('SIGTERM');
    await svc?.exited;
    await media?.close();
    await openai?.close();
  });

  describe('with a valid token', () => {
    let client: Client;
    let protocolErrors: Error[];
    let projectId: string;
    let compositionId: string;
    let importJobId: string;

    before(async () => {
      ({ client, protocolErrors } = await connect({ MPS_BASE_URL: svc!.base, MPS_TOKEN: token }));
    });
    after(() => assert.deepEqual(protocolErrors, [], 'stdout carried only the protocol'));

    it('lists every tool with a description and an input schema whose fields are described', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), [
        'cancel_job',
        'export_timeline',
        'export_transcript',
        'get_drive_info',
        'get_project',
        'import_media',
        'list_folders',
        'list_jobs',
        'list_projects',
        'prompt_agent',
        'publish_composition',
        'search_drive',
        'wait_for_job',
      ]);
      for (const tool of tools) {
        assert.ok((tool.description ?? '').length > 40, `${tool.name} is described`);
        assert.equal(tool.inputSchema.type, 'object');
        for (const [field, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
          assert.ok((schema as { description?: string }).description, `${tool.name}.${field} is described`);
        }
      }
      const importTool = tools.find((t) => t.name === 'import_media')!;
      assert.deepEqual(importTool.inputSchema.required, ['media']);
    });

    it('get_drive_info names the drive and the agent models', async () => {
      const info = ok(await call(client, 'get_drive_info'));
      assert.equal(info.drive_name, driveName);
      assert.ok(info.agent_models.availableModels.some((m: { id: string }) => m.id === 'builtin'));
    });

    it('import_media from a URL into a new project, waiting with progress notifications', async () => {
      const progress: Progress[] = [];
      const result = await call(
        client,
        'import_media',
        {
          media: [{ url: media.url('file', 'clip.mp4') }],
          project_name: 'Interview',
          folder_name: 'Clients/Acme',
          compositions: [{ name: 'Main', media: ['clip.mp4'] }],
          wait: true,
          wait_timeout_seconds: 90,
        },
        (p) => progress.push(p),
      );
      const data = ok(result);
      assert.equal(data.finished, true);
      assert.equal(data.job.job_state, 'stopped');
      assert.equal(data.job.result.status, 'success', JSON.stringify(data.job.result));
      assert.match(text(result), /result success/);
      projectId = data.accepted.project_id;
      importJobId = data.accepted.job_id;
      compositionId = data.job.result.created_compositions.find((c: { name: string }) => c.name === 'Main').id;
      assert.ok(progress.length >= 1, 'at least one progress notification');
      assert.equal(progress.at(-1)!.progress, 100);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, 'progress increases');
    });

    it('list_projects, get_project, list_folders and search_drive find it', async () => {
      const listed = ok(await call(client, 'list_projects', { name: 'interv' }));
      assert.deepEqual(
        listed.data.map((p: { id: string }) => p.id),
        [projectId],
      );
      const inFolder = ok(await call(client, 'list_projects', { folder_path: 'Clients/Acme' }));
      assert.deepEqual(
        inFolder.data.map((p: { id: string }) => p.id),
        [projectId],
      );

      const project = await call(client, 'get_project', { project_id: projectId });
      assert.ok(ok(project).compositions.some((c: { id: string }) => c.id === compositionId));
      assert.match(text(project), /Project "Interview"/);

      const folders = ok(await call(client, 'list_folders'));
      assert.deepEqual(folders.folders, [
        { path: 'Clients', projects: 0 },
        { path: 'Clients/Acme', projects: 1 },
      ]);
      assert.equal(folders.complete, true);
      assert.deepEqual(ok(await call(client, 'list_folders', { under: 'Clients/Acme' })).folders, [{ path: 'Clients/Acme', projects: 1 }]);

      const found = ok(await call(client, 'search_drive', { query: 'Interview', types: ['project'] }));
      assert.ok(found.results.some((r: { type: string; project_id: string }) => r.type === 'project' && r.project_id === projectId));
      const either = ok(await call(client, 'search_drive', { query: 'Interview', types: ['composition', 'project'], match: ['name'] }));
      assert.ok(either.results.some((r: { project_id: string }) => r.project_id === projectId));
      assert.ok(either.results.every((r: { type: string }) => ['composition', 'project'].includes(r.type)));
    });

    it('prompt_agent with the builtin model renames the composition, and waits for the turn', async () => {
      const result = await call(client, 'prompt_agent', {
        project_id: projectId,
        composition_id: compositionId,
        prompt: 'rename this composition to Intro',
        model: 'builtin',
        wait: true,
        wait_timeout_seconds: 60,
      });
      const data = ok(result);
      assert.equal(data.finished, true);
      assert.equal(data.job.result.status, 'success', JSON.stringify(data.job.result));
      assert.equal(data.accepted.resolved_model, 'builtin');
      assert.match(text(result), /agent: /);
      const project = ok(await call(client, 'get_project', { project_id: projectId }));
      assert.equal(project.compositions.find((c: { id: string }) => c.id === compositionId).name, 'Intro');
    });

    it('publish_composition waits for the render and returns the share URL', async () => {
      const result = await call(client, 'publish_composition', {
        project_id: projectId,
        composition_id: compositionId,
        access_level: 'unlisted',
        wait: true,
        wait_timeout_seconds: 90,
      });
      const data = ok(result);
      assert.equal(data.job.result.status, 'success', JSON.stringify(data.job.result));
      assert.match(data.job.result.share_url, /^https?:\/\//);
      assert.ok(text(result).includes(data.job.result.share_url));
    });

    it('export_transcript returns the text (txt, srt) and, for docx, its name and size', async () => {
      const txt = ok(await call(client, 'export_transcript', { project_id: projectId, composition_id: compositionId }));
      assert.equal(txt.format, 'txt');
      const direct = await fetch(`${svc!.base}/v1/export/transcript`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ project_id: projectId, composition_id: compositionId, format: 'txt' }),
      });
      assert.equal(txt.text, await direct.text());
      assert.match(txt.text, /^Intro\n\nw0 w1/);
      const timed = ok(
        await call(client, 'export_transcript', {
          project_id: projectId,
          composition_id: compositionId,
          timecodes: { on_paragraphs: true },
        }),
      );
      assert.notEqual(timed.text, txt.text);
      assert.match(timed.text, /00:00/);
      const srt = ok(await call(client, 'export_transcript', { project_id: projectId, composition_id: compositionId, format: 'srt' }));
      assert.match(srt.text, /00:00:00,000 --> /);
      const docx = await call(client, 'export_transcript', { project_id: projectId, composition_id: compositionId, format: 'docx' });
      assert.ok(ok(docx).size_bytes > 1000);
      assert.equal(ok(docx).text, undefined);
      assert.match(text(docx), /docx file.*bytes/);
    });

    it('export_timeline returns the text of fcpxml, edl and otio', async () => {
      const fcpxml = ok(await call(client, 'export_timeline', { project_id: projectId, composition_id: compositionId, format: 'fcpxml' }));
      assert.match(fcpxml.text, /<fcpxml/);
      const edl = ok(await call(client, 'export_timeline', { project_id: projectId, composition_id: compositionId, format: 'edl' }));
      assert.match(edl.text, /^TITLE: /m);
      const otio = ok(await call(client, 'export_timeline', { project_id: projectId, composition_id: compositionId, format: 'otio' }));
      assert.equal(JSON.parse(otio.text).OTIO_SCHEMA, 'Timeline.1');
    });

    it('list_jobs lists the jobs; wait_for_job gives up after its timeout; cancel_job cancels', async () => {
      const jobs = ok(await call(client, 'list_jobs', { project_id: projectId }));
      assert.ok(jobs.data.some((j: { job_id: string }) => j.job_id === importJobId));
      const imports = ok(await call(client, 'list_jobs', { project_id: projectId, type: 'import/project_media' }));
      assert.ok(imports.data.every((j: { job_type: string }) => j.job_type === 'import/project_media'));

      // A 30 s WAV trickled at 80 KiB/s takes about 12 s to download: still running after a 1 s wait.
      const started = ok(
        await call(client, 'import_media', { media: [{ url: media.url('slow', 'long.wav'), name: 'long.wav' }], project_id: projectId }),
      );
      const jobId = started.accepted.job_id;
      const waited = await call(client, 'wait_for_job', { job_id: jobId, timeout_seconds: 1 });
      assert.equal(ok(waited).finished, false);
      assert.match(text(waited), /call wait_for_job/);

      const cancelled = ok(await call(client, 'cancel_job', { job_id: jobId }));
      assert.equal(cancelled.job.job_state, 'cancelled');
      const after = ok(await call(client, 'wait_for_job', { job_id: jobId, timeout_seconds: 5 }));
      assert.deepEqual([after.finished, after.job.job_state], [true, 'cancelled']);
    });

    it('a bad argument is a tool error naming the field', async () => {
      const badId = await call(client, 'get_project', { project_id: 'not-a-uuid' });
      assert.equal(badId.isError, true);
      assert.match(text(badId), /project_id/);
      const badFormat = await call(client, 'export_timeline', { project_id: projectId, format: 'mp4' });
      assert.equal(badFormat.isError, true);
      assert.match(text(badFormat), /format/);
      const noProject = await call(client, 'import_media', { media: [{ url: media.url('file', 'clip.mp4') }] });
      assert.equal(noProject.isError, true);
      assert.match(text(noProject), /project_id.*project_name/);
    });

    it("an API error is a tool error with the API's message", async () => {
      const unknown = randomUUID();
      const direct = await fetch(`${svc!.base}/v1/projects/${unknown}`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(direct.status, 404);
      const { message } = (await direct.json()) as { message: string };
      const result = await call(client, 'get_project', { project_id: unknown });
      assert.equal(result.isError, true);
      assert.ok(text(result).includes(message), text(result));
      assert.match(text(result), /404 not_found/);

      const stopped = await call(client, 'cancel_job', { job_id: importJobId });
      assert.equal(stopped.isError, true);
      assert.match(text(stopped), /409 conflict, state stopped/);
    });
  });

  describe('configuration', () => {
    it('reads the CLI config file (base_url, token) when MPS_BASE_URL and MPS_TOKEN are not set', async () => {
      const config = mkdtempSync(join(dir, 'xdg-'));
      mkdirSync(join(config, 'mps'));
      writeFileSync(join(config, 'mps', 'config.json'), JSON.stringify({ base_url: `${svc!.base}/v1`, token }), { mode: 0o600 });
      const { client } = await connect({ XDG_CONFIG_HOME: config });
      assert.equal(ok(await call(client, 'get_drive_info')).drive_name, driveName);
    });

    it('a config file that is not JSON is named by each tool call, the server still answering', async () => {
      const config = mkdtempSync(join(dir, 'xdg-'));
      mkdirSync(join(config, 'mps'));
      writeFileSync(join(config, 'mps', 'config.json'), '{"base_url": ');
      const { client } = await connect({ XDG_CONFIG_HOME: config });
      const result = await call(client, 'list_jobs');
      assert.equal(result.isError, true);
      assert.ok(text(result).includes(join(config, 'mps', 'config.json')), text(result));
    });

    it('a bad token makes tool calls fail saying to run mps login', async () => {
      const { client } = await connect({ MPS_BASE_URL: svc!.base, MPS_TOKEN: 'not-a-token' });
      const result = await call(client, 'list_projects');
      assert.equal(result.isError, true);
      assert.match(text(result), /mps login/);
    });

    it('without any configuration the tools are listed and each call says to run mps login', async () => {
      const { client, stderr } = await connect({});
      assert.ok((await client.listTools()).tools.length > 0);
      const result = await call(client, 'get_drive_info');
      assert.equal(result.isError, true);
      assert.match(text(result), /run `mps login`/);
      assert.match(stderr(), /not configured/);
    });
  });
});
