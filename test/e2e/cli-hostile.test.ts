import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOnce, inheritedEnv, ROOT } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

const MPS = join(ROOT, 'dist', 'bin', 'mps.js');

type Run = { code: number | null; stdout: string; stderr: string };
type FakeJob = { id: string; project: string; state: 'running' | 'stopped' | 'cancelled'; uploads: Map<string, Upload>; gone?: 403 | 404 };
type Upload = { total: number; held: number };

/**
 * A small stand-in for the API with just what `mps import` uses (the import POST with its
 * Idempotency-Key, GET /jobs/{id}, resumable upload URLs), which a test can make misbehave: hold
 * an answer (so the CLI is interrupted at a known point), expire an upload URL, cancel a job.
 */
class FakeApi {
  server: Server;
  url = '';
  posts: {
    key: string | undefined;
    body: { project_name?: string; project_id?: string; add_media: Record<string, unknown>; add_compositions?: unknown[] };
  }[] = [];
  jobs = new Map<string, FakeJob>();
  answers = new Map<string, { status: number; body: string }>();
  /** Requests that are read and then never answered. */
  holdPosts = false;
  holdPutsOf = new Set<string>();
  heldPuts: string[] = [];
  /** A job is cancelled as its first upload arrives. */
  cancelOnUpload = false;
  /** Answers for everything else: a test's own route. */
  other?: (req: IncomingMessage, res: ServerResponse) => void;

  constructor() {
    this.server = createServer((req, res) => void this.route(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', this.url).pathname;
    if (req.method === 'POST' && path === '/v1/jobs/import/project_media') return this.importMedia(req, res);
    const job = /^\/v1\/jobs\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && job) return this.getJob(job[1], res);
    const upload = /^\/up\/([^/]+)\/([^/]+)$/.exec(path);
    if (req.method === 'PUT' && upload) return this.put(upload[1], decodeURIComponent(upload[2]), req, res);
    if (this.other) return this.other(req, res);
    req.resume();
    json(res, 404, { error: 'not_found', message: `no route for ${req.method} ${path}` });
  }

  private async importMedia(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse(await text(req)) as FakeApi['posts'][number]['body'];
    const key = req.headers['idempotency-key'] as string | undefined;
    this.posts.push({ key, body });
    const replay = key ? this.answers.get(key) : undefined;
    if (replay) {
      res.writeHead(replay.status, { 'Content-Type': 'application/json', 'Idempotent-Replayed': 'true' }).end(replay.body);
      return;
    }
    const id = `job-${this.jobs.size + 1}`;
    const job: FakeJob = { id, project: body.project_id ?? `project-${this.jobs.size + 1}`, state: 'running', uploads: new Map() };
    const uploadUrls: Record<string, { upload_url: string }> = {};
    for (const [ref, item] of Object.entries(body.add_media)) {
      const size = (item as { file_size?: number }).file_size;
      if (size === undefined) continue;
      job.uploads.set(ref, { total: size, held: 0 });
      uploadUrls[ref] = { upload_url: `${this.url}/up/${id}/${encodeURIComponent(ref)}` };
    }
    this.jobs.set(id, job);
    const answer = JSON.stringify({ job_id: id, project_id: job.project, upload_urls: uploadUrls });
    if (key) this.answers.set(key, { status: 201, body: answer });
    // The job exists, but its answer never leaves: the client is cut off during its POST.
    if (this.holdPosts) return;
    res.writeHead(201, { 'Content-Type': 'application/json' }).end(answer);
  }

  private getJob(id: string, res: ServerResponse): void {
    const job = this.jobs.get(id);
    if (!job) return json(res, 404, { error: 'not_found', message: `job ${id} does not exist` });
    if (job.state === 'running' && [...job.uploads.values()].every((u) => u.held === u.total)) job.state = 'stopped';
    json(res, 200, {
      job_id: id,
      job_type: 'import/project_media',
      job_state: job.state,
      project_id: job.project,
      project_url: `${this.url}/p/${job.project}`,
      created_at: '2026-01-01T00:00:00Z',
      drive_id: 'd',
      ...(job.state === 'stopped' ? { result: { status: 'success' } } : {}),
    });
  }

  private async put(id: string, ref: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const job = this.jobs.get(id);
    const upload = job?.uploads.get(ref);
    const range = /^bytes (?:(\d+)-(\d+)|\*)\/(\d+)$/.exec(String(req.headers['content-range']));
    if (!job || !upload || !range) {
      req.resume();
      return json(res, 404, { error: 'not_found', message: 'no such upload' });
    }
    if (this.cancelOnUpload) job.state = 'cancelled';
    if (job.gone) {
      req.resume();
      return json(res, job.gone, { error: job.gone === 403 ? 'forbidden' : 'not_found', message: 'the upload URL expired' });
    }
    if (job.state === 'cancelled') {
      req.resume();
      return json(res, 409, { error: 'conflict', message: `job ${id} was cancelled`, state: 'cancelled' });
    }
    if (range[1] !== undefined) {
      if (Number(range[1]) !== upload.held) {
        req.resume();
        return json(res, 409, { error: 'conflict', message: `continue at ${upload.held}`, state: 'incomplete' });
      }
      // A held PUT is read and lost (the server keeps none of it), its answer never sent.
      if (this.holdPutsOf.has(ref)) {
        this.heldPuts.push(ref);
        return void req.resume();
      }
      for await (const chunk of req) upload.held += (chunk as Buffer).length;
    }
    if (upload.held === upload.total) return json(res, 200, { asset_id: `${id}-${ref}`, size: upload.total });
    res.writeHead(308, upload.held > 0 ? { Range: `bytes=0-${upload.held - 1}` } : {}).end();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

async function text(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The built CLI against peers that misbehave on purpose: a stand-in API that is cut off at known
 * points (resume semantics), and servers that never answer, answer HTML, or reset.
 */
describe('e2e: the mps CLI against a stand-in API and hostile peers', function () {
  this.timeout(60_000);
  let api: FakeApi;
  let dir: string;
  let home: string;
  let a: string;
  let b: string;

  before(async () => {
    await buildOnce();
    dir = mkdtempSync(join(tmpdir(), 'e2e-cli-hostile-'));
    a = join(dir, 'a.wav');
    b = join(dir, 'b.wav');
    writeFileSync(a, Buffer.alloc(300_000, 1));
    writeFileSync(b, Buffer.alloc(200_000, 2));
  });
  beforeEach(async () => {
    api = new FakeApi();
    await api.start();
    home = mkdtempSync(join(tmpdir(), 'e2e-cli-hostile-home-'));
  });
  afterEach(async () => {
    await api.close();
    rmSync(home, { recursive: true, force: true });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const start = (args: string[], env: Record<string, string> = {}): { child: ChildProcess; done: Promise<Run> } => {
    const child = spawn(process.execPath, [MPS, ...args], {
      cwd: dir,
      env: { ...inheritedEnv(), HOME: home, XDG_CONFIG_HOME: join(home, 'config'), MPS_BASE_URL: api.url, MPS_TOKEN: 't', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
    return { child, done };
  };
  const mps = (args: string[], env?: Record<string, string>) => start(args, env).done;
  const ok = (run: Run) => {
    assert.equal(run.code, 0, `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
    return run;
  };
  /** Runs the command until `when` holds, then sends Ctrl-C: it must exit 130. */
  const interrupted = async (args: string[], when: () => boolean, what: string) => {
    const { child, done } = start(args);
    await waitFor(when, { timeoutMs: 20_000, what });
    child.kill('SIGINT');
    const run = await done;
    assert.equal(run.code, 130, run.stderr);
    return run;
  };
  const records = () => {
    const path = join(home, 'config', 'mps', 'uploads.json');
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, { idempotency_key: string; job_id?: string }>) : {};
  };

  it('resumes only the very same command: another item, name or composition is a new import', async () => {
    api.holdPutsOf.add('a.wav');
    await interrupted(['import', a, '--name', 'First'], () => api.heldPuts.length > 0, 'the upload of a.wav to be held');
    api.holdPutsOf.clear();

    const other = ok(await mps(['import', a, 'http://media.test/tone.wav', '--name', 'Second', '--composition', 'Both', '--json']));
    assert.doesNotMatch(other.stderr, /resuming/);
    assert.equal(api.jobs.size, 2, 'a second job, not the first one resumed');
    const second = api.posts[1].body;
    assert.equal(second.project_name, 'Second');
    assert.deepEqual(Object.keys(second.add_media), ['a.wav', 'tone.wav']);
    assert.equal(second.add_compositions?.length, 1);
    assert.equal(api.jobs.get('job-2')!.uploads.get('a.wav')!.held, 300_000);

    const first = ok(await mps(['import', a, '--name', 'First']));
    assert.match(first.stderr, /resuming the upload of job job-1/);
    assert.equal(api.posts.length, 2, 'the same command sends no POST again');
    assert.equal(api.jobs.get('job-1')!.uploads.get('a.wav')!.held, 300_000);
    assert.deepEqual(records(), {});
  });

  it('resumes an import of several files cut off after the first one was whole', async () => {
    api.holdPutsOf.add('b.wav');
    await interrupted(['import', a, b, '--name', 'Both'], () => api.heldPuts.includes('b.wav'), 'the upload of b.wav to be held');
    assert.equal(api.jobs.get('job-1')!.uploads.get('a.wav')!.held, 300_000);
    assert.deepEqual(
      Object.values(records()).map((r) => r.job_id),
      ['job-1'],
      'the record stays until every upload is done',
    );
    api.holdPutsOf.clear();

    const again = ok(await mps(['import', a, b, '--name', 'Both', '--wait']));
    assert.match(again.stderr, /resuming the upload of job job-1/);
    assert.match(again.stdout, /result:\s+success/);
    assert.equal(api.jobs.size, 1, 'no second job, no second project');
    assert.deepEqual(records(), {});
  });

  it('sends the POST again with the same Idempotency-Key after Ctrl-C during it: nothing is created twice', async () => {
    api.holdPosts = true;
    const cut = await interrupted(['import', a, '--name', 'Once'], () => api.posts.length > 0, 'the POST to arrive');
    assert.match(cut.stderr, /run the same command again/);
    const [record] = Object.values(records());
    assert.equal(record.idempotency_key, api.posts[0].key, 'the key was saved before the POST was sent');
    api.holdPosts = false;

    ok(await mps(['import', a, '--name', 'Once']));
    assert.equal(api.posts.length, 2);
    assert.equal(api.posts[1].key, api.posts[0].key);
    assert.equal(api.jobs.size, 1, 'the first job was answered again');
    assert.equal(api.jobs.get('job-1')!.uploads.get('a.wav')!.held, 300_000);
    assert.deepEqual(records(), {});
  });

  it('drops the record of an upload URL that expired (403) or is gone (404), saying to run the command again', async () => {
    for (const gone of [403, 404] as const) {
      api.holdPutsOf.add('a.wav');
      api.heldPuts = [];
      await interrupted(['import', a, '--name', `Gone ${gone}`], () => api.heldPuts.length > 0, 'the upload to be held');
      api.holdPutsOf.clear();
      const job = [...api.jobs.values()].at(-1)!;
      job.gone = gone;
      const failed = await mps(['import', a, '--name', `Gone ${gone}`]);
      assert.equal(failed.code, 2, failed.stderr);
      assert.match(
        failed.stderr,
        new RegExp(
          `upload URL of a\\.wav \\(job ${job.id}\\) is no longer valid \\(${gone}.*run the same command again to start a new import`,
        ),
      );
      assert.deepEqual(records(), {});
      const jobs = api.jobs.size;
      ok(await mps(['import', a, '--name', `Gone ${gone}`]));
      assert.equal(api.jobs.size, jobs + 1, 'a new import');
    }
  });

  it('exits 3 saying the job was cancelled when it is cancelled during its upload (--wait)', async () => {
    api.cancelOnUpload = true;
    const run = await mps(['import', a, '--wait']);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /job job-1 was cancelled/);
    assert.deepEqual(records(), {}, 'a cancelled job can resume nothing');
  });

  it('checks the part size and the files before anything is created', async () => {
    const badPart = await mps(['import', a], { MPS_PART_SIZE: 'abc' });
    assert.equal(badPart.code, 1);
    assert.match(badPart.stderr, /MPS_PART_SIZE/);
    const folder = await mps(['import', a, dir]);
    assert.equal(folder.code, 1);
    assert.match(folder.stderr, /not a regular file/);
    assert.deepEqual(api.posts, []);
    assert.deepEqual(records(), {});
  });

  it('publish --download into a folder that does not exist fails before publishing; export -o - writes to stdout', async () => {
    const seen: string[] = [];
    api.other = (req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      res
        .writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Disposition': 'attachment; filename="cut.txt"' })
        .end('the transcript\n');
    };
    const run = await mps(['publish', '--project', 'p1', '--download', join(dir, 'nope', 'cut.m4a')]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /--download: the folder .*nope does not exist/);
    assert.deepEqual(seen, []);

    const exported = ok(await mps(['export', 'transcript', '--project', 'p1', '--format', 'txt', '-o', '-']));
    assert.equal(exported.stdout, 'the transcript\n');
    assert.equal(existsSync(join(dir, '-')), false);
  });

  describe('peers that are not the service', () => {
    let peer: Server;
    let handler: (req: IncomingMessage, res: ServerResponse) => void;
    let peerUrl: string;
    before(async () => {
      peer = createServer((req, res) => handler(req, res));
      await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
      peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
    });
    after(async () => {
      peer.closeAllConnections();
      await new Promise((resolve) => peer.close(resolve));
    });
    const against = (args: string[], env: Record<string, string> = {}) => mps(args, { MPS_BASE_URL: peerUrl, ...env });

    it('a server that never answers: exit 4 after MPS_TIMEOUT_SECONDS, for status and import', async () => {
      handler = (req) => req.resume();
      for (const args of [['status'], ['import', 'http://media.test/a.wav']]) {
        const started = performance.now();
        const run = await against(args, { MPS_TIMEOUT_SECONDS: '0.5' });
        assert.equal(run.code, 4, `${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, /cannot reach the service at .*no answer from .* within 0\.5 s/);
        assert.ok(performance.now() - started < 10_000, `${args.join(' ')} took ${performance.now() - started} ms`);
      }
    });

    it('a server that answers HTML: exit 4, this does not look like the service', async () => {
      handler = (req, res) => {
        req.resume();
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>Welcome to nginx!</html>');
      };
      for (const args of [['import', 'http://media.test/a.wav'], ['status']]) {
        const run = await against(args);
        assert.equal(run.code, 4, run.stderr);
        assert.match(run.stderr, /this does not look like the service at .*200 text\/html.*<html>Welcome to nginx!.*check the base URL/);
      }
    });

    it('a server that resets the connection: exit 4, cannot reach the service (the import POST by node:http too)', async () => {
      handler = (req) => req.socket.destroy();
      for (const args of [['import', 'http://media.test/a.wav'], ['status']]) {
        const run = await against(args);
        assert.equal(run.code, 4, run.stderr);
        assert.match(run.stderr, /cannot reach the service at .*\((ECONNRESET|socket hang up|UND_ERR_SOCKET)\)/);
      }
    });

    it('login to a base URL that is not the API (/v2) says the base URL looks wrong', async () => {
      handler = (req, res) => json(res, 404, { error: 'not_found', message: `no route for GET ${req.url}` });
      const run = await mps(['login', '--base-url', `${peerUrl}/v2`, '--token', 't']);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /--base-url: .*\/v2\/v1 looks wrong.*ending in \/v1/);
      assert.equal(existsSync(join(home, 'config', 'mps', 'config.json')), false);
    });
  });
});
