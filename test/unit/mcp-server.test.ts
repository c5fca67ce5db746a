import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import { createClient, type Client, type Job } from '../../sdk/client';
import { jobDoc } from '../fixtures/job-doc';
import { ApiError, UnexpectedAnswerError } from '../../sdk/errors';
import { apiBase, configFilePath, loadConnection } from '../../cli/mcp/config';
import { foldersOf } from '../../cli/mcp/drive-tools';
import { jobSummary, LAST_LOOK_MS, PROGRESS_ANSWER_GAP_MS, progressReporter, waitBounded } from '../../cli/mcp/job-wait';
import { describeFailure, type Extra } from '../../cli/mcp/tool-kit';

/** The MCP server's parts that need no service: its configuration, folders from paths, progress, error wording. */
describe('MCP server (mps mcp)', () => {
  describe('configuration', () => {
    const configDir = (file?: string) => {
      const dir = mkdtempSync(join(tmpdir(), 'mcp-config-'));
      if (file !== undefined) {
        mkdirSync(join(dir, 'mps'));
        writeFileSync(join(dir, 'mps', 'config.json'), file);
      }
      return dir;
    };

    it('takes MPS_BASE_URL and MPS_TOKEN over the config file', async () => {
      const dir = configDir(JSON.stringify({ base_url: 'http://file:1/v1', token: 'from-file' }));
      const env = { XDG_CONFIG_HOME: dir, MPS_BASE_URL: 'http://env:2', MPS_TOKEN: 'from-env' };
      assert.deepEqual(await loadConnection(env), { baseUrl: 'http://env:2/v1', token: 'from-env' });
    });

    it('reads {base_url, token} from $XDG_CONFIG_HOME/mps/config.json, else ~/.config/mps/config.json', async () => {
      const dir = configDir(JSON.stringify({ base_url: 'http://file:1/v1/', token: 'from-file' }));
      assert.deepEqual(await loadConnection({ XDG_CONFIG_HOME: dir }), { baseUrl: 'http://file:1/v1', token: 'from-file' });
      assert.equal(configFilePath({ HOME: '/home/ada' }), '/home/ada/.config/mps/config.json');
    });

    it('is null without a file or with a file lacking the token; a file that is not JSON is an error naming it', async () => {
      assert.equal(await loadConnection({ XDG_CONFIG_HOME: configDir() }), null);
      assert.equal(await loadConnection({ XDG_CONFIG_HOME: configDir(JSON.stringify({ base_url: 'http://x' })) }), null);
      const dir = configDir('{not json');
      await assert.rejects(loadConnection({ XDG_CONFIG_HOME: dir }), (err: Error) => err.message.includes(join(dir, 'mps', 'config.json')));
    });

    it('gives a base URL without /v1 its /v1', () => {
      assert.equal(apiBase('http://localhost:8080'), 'http://localhost:8080/v1');
      assert.equal(apiBase('http://localhost:8080/v1//'), 'http://localhost:8080/v1');
      assert.equal(apiBase('https://api.example.com/media/v1'), 'https://api.example.com/media/v1');
    });
  });

  describe('list_folders', () => {
    /** A client whose listProjects pages through `projects` two at a time. */
    const pagedClient = (projects: { folder_path?: string }[]) => {
      const asked: (string | undefined)[] = [];
      const client = {
        async listProjects(query: { cursor?: string }) {
          asked.push(query.cursor);
          const at = Number(query.cursor ?? 0);
          const data = projects.slice(at, at + 2).map((p, i) => ({ id: `p${at + i}`, name: 'n', created_at: '', updated_at: '', ...p }));
          return { data, pagination: at + 2 < projects.length ? { next_cursor: String(at + 2) } : {} };
        },
      } as unknown as Client;
      return { client, asked };
    };

    it('derives every folder and its parents from the projects of every page, counting projects directly inside', async () => {
      const { client, asked } = pagedClient([
        { folder_path: 'A/B' },
        {},
        { folder_path: 'A' },
        { folder_path: 'A/B' },
        { folder_path: 'C/D/E' },
      ]);
      const { folders, complete } = await foldersOf(client);
      assert.deepEqual(asked, [undefined, '2', '4']);
      assert.equal(complete, true);
      assert.deepEqual(folders, [
        { path: 'A', projects: 1 },
        { path: 'A/B', projects: 2 },
        { path: 'C', projects: 0 },
        { path: 'C/D', projects: 0 },
        { path: 'C/D/E', projects: 1 },
      ]);
    });

    it('keeps only a folder and those inside it with `under` (not a folder that merely starts with its name)', async () => {
      const { client } = pagedClient([{ folder_path: 'A/B' }, { folder_path: 'AB' }, { folder_path: 'A/B/C' }]);
      assert.deepEqual((await foldersOf(client, 'A/B')).folders, [
        { path: 'A/B', projects: 1 },
        { path: 'A/B/C', projects: 1 },
      ]);
    });
  });

  describe('progress notifications', () => {
    const job = jobDoc;
    const extraWith = (progressToken?: string | number) => {
      const sent: { progress: number; message?: string }[] = [];
      const extra = {
        _meta: progressToken === undefined ? undefined : { progressToken },
        sendNotification: async (n: { params: { progress: number; message?: string; progressToken: unknown } }) => {
          assert.equal(n.params.progressToken, progressToken);
          sent.push({ progress: n.params.progress, message: n.params.message });
        },
      } as unknown as Extra;
      return { extra, sent };
    };

    it('sends only increasing progress, the end as 100, and nothing when the client sent no progressToken', async () => {
      const { extra, sent } = extraWith('t1');
      const progress = progressReporter(extra)!;
      for (const update of [job('queued'), job('running', 10), job('running', 10), job('running', 5), job('running', 60), job('stopped')]) {
        progress.report(update);
      }
      await progress.sent();
      assert.deepEqual(
        sent.map((s) => s.progress),
        [0, 10, 60, 100],
      );
      assert.equal(sent[1].message, 'running: fetching');
      assert.equal(progressReporter(extraWith().extra), undefined);
    });

    it('writes notifications one after the other, and sent() waits for the last (the answer must not overtake it)', async () => {
      const written: number[] = [];
      let openGate!: () => void;
      const gate = new Promise<void>((resolve) => (openGate = resolve));
      const extra = {
        _meta: { progressToken: 7 },
        // The first write waits for the gate: were writes not chained, 100 would be written first.
        sendNotification: async (n: { params: { progress: number } }) => {
          if (n.params.progress === 0) await gate;
          written.push(n.params.progress);
        },
      } as unknown as Extra;
      const progress = progressReporter(extra)!;
      progress.report(job('queued'));
      progress.report(job('stopped'));
      let allSent = false;
      const sent = progress.sent().then(() => (allSent = true));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual([written, allSent], [[], false]);
      openGate();
      await sent;
      assert.deepEqual(written, [0, 100]);
    });

    it('holds the answer until PROGRESS_ANSWER_GAP_MS after the last notification, so the two arrive in separate reads', async () => {
      const { extra } = extraWith('t2');
      const progress = progressReporter(extra)!;
      progress.report(job('stopped'));
      const started = performance.now();
      await progress.sent();
      const held = performance.now() - started;
      assert.ok(held >= PROGRESS_ANSWER_GAP_MS, `held ${held} ms`);
      // Nothing sent: nothing to hold (no timer: it resolves before the event loop turns, however loaded the machine).
      const idle = progressReporter(extraWith('t3').extra)!;
      const first = await Promise.race([
        idle.sent().then(() => 'sent'),
        new Promise((resolve) => setImmediate(() => resolve('a turn later'))),
      ]);
      assert.equal(first, 'sent');
    });

    it('summarises an unfinished job with what to do next', () => {
      assert.match(jobSummary(job('running', 42), false), /is running at 42% \(fetching\); call wait_for_job/);
    });

    it('ends a finished summary with one full stop, also when the agent already ended its sentence', () => {
      const said = (agent_response: string) =>
        jobSummary({ ...job('stopped'), result: { status: 'success', agent_response } } as Job, true);
      assert.match(said('Renamed it.'), /agent: Renamed it\.$/);
      assert.match(said('Done!'), /agent: Done!$/);
      assert.match(said('Renamed it'), /agent: Renamed it\.$/);
    });
  });

  describe('wait_for_job against a service that accepts connections and never answers', () => {
    let server: Server;
    const sockets = new Set<Socket>();
    before(async () => {
      server = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });

    it('answers finished: false soon after its timeout, with no job when none was ever seen', async () => {
      const { port } = server.address() as { port: number };
      // The client's own bounds as they are by default (30 s): the wait must not rely on them.
      const client = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, token: 't' });
      const extra = { signal: new AbortController().signal } as unknown as Extra;
      const started = performance.now();
      const waited = await waitBounded(client, 'j1', 1, extra);
      const took = performance.now() - started;
      assert.deepEqual(waited, { job: null, finished: false });
      assert.ok(took < 1000 + LAST_LOOK_MS + 1000, `answered after ${Math.round(took)} ms`);
    });
  });

  describe('error wording', () => {
    const connection = { baseUrl: 'http://127.0.0.1:9/v1', token: 't' };

    it("passes the API's message on, with status, code and state; a refused token says to run mps login", () => {
      assert.equal(
        describeFailure(new ApiError(409, 'conflict', 'Job already stopped', 'stopped'), connection),
        'Job already stopped (HTTP 409 conflict, state stopped)',
      );
      assert.match(describeFailure(new ApiError(401, 'unauthorized', 'Invalid token'), connection), /Invalid token.*run `mps login`/);
    });

    it('reads the network failures of node:http (the import POST, the event stream) as "cannot reach"', () => {
      for (const err of [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), new Error('socket hang up')]) {
        assert.match(
          describeFailure(err, connection),
          /^Cannot reach the Media Project Service at http:\/\/127\.0\.0\.1:9\/v1 \(.+\): is it running\?/,
        );
      }
    });

    it('says a 2xx that is not JSON is not the service, rather than reading it as an answer', () => {
      const html = new UnexpectedAnswerError(200, 'text/html', '<html>', 'http://127.0.0.1:9/v1/jobs/import/project_media');
      assert.match(
        describeFailure(html, connection),
        /^What answers at http:\/\/127\.0\.0\.1:9\/v1 does not look like the Media Project Service \(.*200 text\/html.*\): check the base URL/,
      );
    });

    it('says where the service was looked for when it cannot be reached', async () => {
      const err = await fetch('http://127.0.0.1:9/v1/status').catch((e: unknown) => e);
      assert.match(
        describeFailure(err, connection),
        /Cannot reach the Media Project Service at http:\/\/127\.0\.0\.1:9\/v1 .*is it running\?/,
      );
    });
  });
});
