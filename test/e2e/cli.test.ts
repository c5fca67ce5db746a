import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { startGatedProxy, type GatedProxy } from '../fixtures/gated-proxy';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, buildOnce, freePort, inheritedEnv, ROOT, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

const execFileP = promisify(execFile);
const MPS = join(ROOT, 'dist', 'bin', 'mps.js');

type Run = { code: number | null; stdout: string; stderr: string };
type Job = {
  job_id: string;
  job_state: string;
  project_id: string;
  result?: {
    status: string;
    media_status?: Record<string, { status: string; duration_seconds: number }>;
    resolved_model?: string;
    agent_response?: string;
  };
};

/**
 * The built CLI (`node dist/bin/mps.js`, what `npx mps` runs) as a user runs it, against the
 * service as `npm start` runs it, with HOME and XDG_CONFIG_HOME in a temporary folder. Everything
 * goes through a proxy (the service's BASE_URL) that can hold upload parts, so an upload is
 * interrupted mid-way for certain and then resumed.
 */
describe('e2e: the mps CLI against the running service', function () {
  this.timeout(240_000);
  let svc: ServiceProcess | undefined;
  let proxy: GatedProxy;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let dir: string;
  let home: string;
  let token: string;
  let clip: string;
  let bigWav: string;
  let projectId: string;

  const config = () => join(home, 'config', 'mps');
  /** Runs the CLI to its end; `env` on top of the test's HOME (and the session, once `session` is set). */
  const mps = (args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [MPS, ...args], {
        cwd: dir,
        env: { ...inheritedEnv(), HOME: home, XDG_CONFIG_HOME: join(home, 'config'), ...options.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.stdin.end(options.input ?? '');
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  const ok = (run: Run) => {
    assert.equal(run.code, 0, `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
    return run;
  };
  const json = <T>(run: Run): T => JSON.parse(ok(run).stdout) as T;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'e2e-cli-'));
    home = mkdtempSync(join(tmpdir(), 'e2e-cli-home-'));
    clip = await makeTestMedia(dir, 'mp4', 2);
    bigWav = await bigWavFile(dir);
    const slowWav = await makeTestMedia(dir, 'wav', 10);
    media = await startMediaServer({ 'clip.mp4': clip, 'slow.wav': slowWav });
    proxy = await startGatedProxy();
    await buildOnce();
    const env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-cli-data-')),
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      TRANSCRIBER: 'none',
      BASE_URL: `${proxy.url}/v1`,
      WEB_URL: proxy.url,
    };
    svc = await startService(env);
    proxy.target = svc.base;
    token = (await admin(env, 'drive', 'create', '--name', 'E2E CLI', '--credits', '20', '--first-name', 'Ada', '--last-name', 'Lovelace'))
      .token;
  });
  after(async () => {
    svc?.killAll('SIGTERM');
    await svc?.exited;
    await proxy?.close();
    await media?.close();
  });

  it('logs in (a private config file), says the status, and a refused token exits 2 saying what to do', async () => {
    const refused = await mps(['login', '--base-url', proxy.url, '--token', 'mps_not-a-token']);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /token was refused.*run mps login/);
    assert.equal(existsSync(join(config(), 'config.json')), false, 'a refused token is not stored');

    // The token from stdin (no TTY here: read as a line), the base URL from the option, /v1 added.
    ok(await mps(['login', '--base-url', proxy.url], { input: `${token}\n` }));
    const file = join(config(), 'config.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(config()).mode & 0o777, 0o700);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { base_url: `${proxy.url}/v1`, token });

    const status = ok(await mps(['status']));
    assert.match(status.stdout, /drive:\s+E2E CLI \(/);
    assert.match(status.stdout, /api version:\s+1\.2/);
    assert.equal(json<{ drive_name: string }>(await mps(['status', '--json'])).drive_name, 'E2E CLI');

    const badEnv = await mps(['status'], { env: { MPS_TOKEN: 'mps_revoked-or-wrong' } });
    assert.equal(badEnv.code, 2, 'MPS_TOKEN overrides the stored token');
    assert.match(badEnv.stderr, /token was refused/);
  });

  it('imports a URL and waits: the job and its composition, human and --json', async () => {
    const url = media.url('file', 'clip.mp4');
    const job = json<Job>(await mps(['import', url, '--name', 'Launch video', '--composition', 'Main', '--wait', '--json']));
    assert.equal(job.job_state, 'stopped');
    assert.equal(job.result?.status, 'success', JSON.stringify(job.result));
    projectId = job.project_id;

    const human = ok(await mps(['import', media.url('file', 'slow.wav'), '--project', projectId, '--wait']));
    assert.match(human.stdout, /state:\s+stopped/);
    assert.match(human.stdout, /result:\s+success/);
    assert.match(human.stderr, /stopped: success/, 'the changes are followed on stderr');
  });

  it('uploads a local file in parts and waits for the import', async () => {
    const run = ok(
      await mps(['import', clip, '--name', 'Uploaded clip', '--wait', '--json'], { env: { MPS_PART_SIZE: String(64 * 1024) } }),
    );
    const job = JSON.parse(run.stdout) as Job;
    assert.equal(job.result?.status, 'success', JSON.stringify(job.result));
    const status = job.result!.media_status!;
    assert.equal(status['mp4-2s.mp4'].status, 'success');
    assert.ok(Math.abs(status['mp4-2s.mp4'].duration_seconds - 2) < 0.2);
    assert.equal(resumeRecords(), '{}', 'no resume record once uploaded');
  });

  it('streams a file and waits, loading only what an import uses (no progress bar library off a terminal, no MCP SDK, no https, no undici)', async () => {
    // What the process loaded, written as it exits: its module files and Node's built-in modules.
    const preload = join(dir, 'loaded.js');
    const loaded = join(dir, 'loaded.json');
    writeFileSync(
      preload,
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, JSON.stringify({ files: Object.keys(require.cache), builtins: process.moduleLoadList })));\n`,
    );
    const run = ok(await mps(['import', bigWav, '--name', 'Streamed', '--wait'], { env: { NODE_OPTIONS: `--require ${preload}` } }));
    assert.match(run.stdout, /result:\s+success/);
    // The job is followed during the upload, quietly: its lines come after the upload's.
    const uploaded = run.stderr.indexOf('uploaded wav-long.wav');
    assert.ok(uploaded >= 0 && uploaded < run.stderr.indexOf('stopped: success'), run.stderr);
    const { files, builtins } = JSON.parse(readFileSync(loaded, 'utf8')) as { files: string[]; builtins: string[] };
    // The CLI is one file (bin/bundle-cli.ts): none of the project's other modules is read.
    assert.deepEqual(
      files.filter((f) => f.startsWith(join(ROOT, 'dist'))),
      [MPS],
      'the CLI runs as the one file esbuild made',
    );
    for (const heavy of [
      /node_modules\/cli-progress\//,
      /node_modules\/@modelcontextprotocol\//,
      /node_modules\/zod\//,
      /cli\/mcp\/server/,
    ]) {
      assert.deepEqual(
        files.filter((f) => heavy.test(f)),
        [],
        `${heavy} is not loaded`,
      );
    }
    assert.ok(!builtins.includes('NativeModule https'), 'node:https is not loaded for an http URL');
    // The POST, the upload and the event stream go by node:http: undici (fetch) is never loaded.
    assert.deepEqual(
      builtins.filter((m) => m.includes('undici')),
      [],
    );
    assert.equal(resumeRecords(), '{}');
  });

  it('resumes an upload interrupted by Ctrl-C when the same command runs again', async () => {
    const total = statSync(bigWav).size;
    const partSize = 1024 * 1024;
    const args = ['import', bigWav, '--name', 'Long interview', '--wait'];
    const env = { MPS_PART_SIZE: String(partSize) };
    proxy.resetCounts();
    proxy.holdPartsAfter(5);
    const child = spawn(process.execPath, [MPS, ...args], {
      cwd: dir,
      env: { ...inheritedEnv(), HOME: home, XDG_CONFIG_HOME: join(home, 'config'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitFor(() => proxy.held > 0, { timeoutMs: 30_000, what: 'the sixth part to be held' });
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    assert.match(stderr, /interrupted: run the same command again to resume the upload of wav-long\.wav \(job (\S+)\)/);
    const jobId = /\(job (\S+)\)/.exec(stderr)![1];
    assert.equal(proxy.parts, 5);
    const record = JSON.parse(resumeRecords()) as Record<string, { job_id: string; upload_url: string }>;
    assert.deepEqual(
      Object.values(record).map((r) => r.job_id),
      [jobId],
    );
    proxy.release();

    proxy.resetCounts();
    const again = ok(await mps([...args, '--json'], { env }));
    assert.match(again.stderr, new RegExp(`resuming the upload of job ${jobId}`));
    const job = JSON.parse(again.stdout) as Job;
    assert.equal(job.job_id, jobId, 'the same job, not a new import');
    assert.equal(job.result?.status, 'success', JSON.stringify(job.result));
    // Only the rest was sent: the five parts the server held were not sent again.
    assert.equal(proxy.partBytes, total - 5 * partSize);
    assert.equal(resumeRecords(), '{}');
  });

  it('jobs: list, get, watch live, cancel; a 404 and a 409 exit 2', async () => {
    const listed = json<{ data: Job[] }>(await mps(['jobs', 'list', '--type', 'import/project_media', '--limit', '50', '--json']));
    assert.ok(listed.data.length >= 4);
    assert.deepEqual(
      listed.data.filter((j) => j.job_state !== 'stopped'),
      [],
    );
    const table = ok(await mps(['jobs', 'list', '--project', projectId]));
    assert.match(table.stdout.split('\n')[0], /^JOB\s+TYPE\s+STATE\s+CREATED\s+PROJECT$/);
    assert.equal(table.stdout.trim().split('\n').length, 3, table.stdout);

    const someJob = listed.data[0].job_id;
    assert.match(ok(await mps(['jobs', 'get', someJob])).stdout, new RegExp(`job:\\s+${someJob}\\n`));
    assert.equal(json<Job>(await mps(['jobs', 'get', someJob, '--json'])).job_id, someJob);

    const missing = await mps(['jobs', 'get', 'project-media-import-00000000-0000-7000-8000-000000000000']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /not found/);

    // Watch follows a slow import to its end: running with a percent, then stopped.
    const started = json<{ job_id: string }>(await mps(['import', media.url('slow', 'slow.wav'), '--name', 'Watched', '--json']));
    const watched = ok(await mps(['jobs', 'watch', started.job_id]));
    const lines = watched.stdout.trim().split('\n');
    assert.ok(
      lines.some((l) => /^running \d+% /.test(l)),
      watched.stdout,
    );
    assert.equal(lines.at(-1), 'stopped: success');
    const ndjson = ok(await mps(['jobs', 'watch', started.job_id, '--json']))
      .stdout.trim()
      .split('\n');
    assert.equal((JSON.parse(ndjson.at(-1)!) as Job).job_state, 'stopped');

    // Cancel a running import; watching it then exits 3; cancelling again is a 409.
    const waiting = json<{ job_id: string }>(await mps(['import', media.url('slow', 'slow.wav'), '--name', 'To cancel', '--json']));
    assert.match(ok(await mps(['jobs', 'cancel', waiting.job_id])).stderr, /cancelled/);
    const cancelled = await mps(['jobs', 'watch', waiting.job_id]);
    assert.equal(cancelled.code, 3, cancelled.stderr);
    assert.equal(cancelled.stdout.trim().split('\n').at(-1), 'cancelled');
    const again = await mps(['jobs', 'cancel', waiting.job_id]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /the request was refused \(409 conflict, state cancelled\)/);
  });

  it('projects list and get, search', async () => {
    const table = ok(await mps(['projects', 'list', '--name', 'Launch']));
    assert.match(table.stdout, new RegExp(`${projectId}\\s+Launch video`));
    const page = json<{ data: { id: string }[] }>(await mps(['projects', 'list', '--limit', '10', '--json']));
    assert.ok(page.data.some((p) => p.id === projectId));
    const detail = ok(await mps(['projects', 'get', projectId]));
    assert.match(detail.stdout, /name:\s+Launch video/);
    assert.match(detail.stdout, /COMPOSITION\s+NAME\s+SECONDS\s+TYPE\n(.+\n)*\S+\s+Main\s+2\.0\s+video\n/);
    assert.equal(json<{ id: string }>(await mps(['projects', 'get', projectId, '--json'])).id, projectId);
    const gone = await mps(['projects', 'get', '00000000-0000-7000-8000-000000000000']);
    assert.equal(gone.code, 2);

    const hits = await waitFor(
      async () => {
        const found = json<{ results: { type: string; project_id?: string }[] }>(
          await mps(['search', 'Launch', '--type', 'project', '--json']),
        );
        return found.results.some((r) => r.project_id === projectId) ? found : null;
      },
      { timeoutMs: 20_000, intervalMs: 250, what: 'the project to be found' },
    );
    assert.ok(hits.results.every((r) => r.type === 'project'));
    assert.match(ok(await mps(['search', 'Launch'])).stdout, /^TYPE\s+NAME\s+PROJECT\s+COMPOSITION\s+MATCH\nproject\s+Launch video\s+/);
    const badType = await mps(['search', 'x', '--type', 'song']);
    assert.equal(badType.code, 1);
    assert.match(badType.stderr, /--type.*must be one of/);
  });

  it('prompts the agent (builtin model) and waits for its turn', async () => {
    const job = json<Job>(
      await mps(['agent', 'add a marker called Intro at 0 seconds', '--project', projectId, '--model', 'builtin', '--wait', '--json']),
    );
    assert.equal(job.job_state, 'stopped');
    assert.equal(job.result?.status, 'success', JSON.stringify(job.result));
    assert.equal(job.result?.resolved_model, 'builtin');
    assert.equal(typeof job.result?.agent_response, 'string');
  });

  it('publishes, waits and downloads the render: an MP4 ffprobe reads', async () => {
    const out = join(dir, 'render.mp4');
    const run = ok(await mps(['publish', '--project', projectId, '--download', out]));
    assert.match(run.stdout, /result:\s+success/);
    assert.match(run.stdout, /share url:\s+http/);
    const { ffprobe } = resolveFfmpegPaths();
    const { stdout } = await execFileP(ffprobe, [
      '-v',
      'error',
      '-show_entries',
      'stream=codec_type:format=format_name',
      '-of',
      'json',
      out,
    ]);
    const probed = JSON.parse(stdout) as { streams: { codec_type: string }[]; format: { format_name: string } };
    assert.ok(probed.streams.some((s) => s.codec_type === 'video'));
    assert.match(probed.format.format_name, /mp4/);
    assert.equal(existsSync(`${out}.part`), false);
  });

  it('exports a transcript and timelines to files', async () => {
    const srt = join(dir, 'talk.srt');
    const written = json<{ file: string; bytes: number; content_type: string }>(
      await mps(['export', 'transcript', '--project', projectId, '--format', 'srt', '-o', srt, '--json']),
    );
    assert.equal(written.bytes, statSync(srt).size);
    assert.match(written.content_type, /^(text|application)\//);

    const otio = join(dir, 'cut.otio');
    ok(await mps(['export', 'timeline', '--project', projectId, '--format', 'otio', '-o', otio]));
    assert.equal((JSON.parse(readFileSync(otio, 'utf8')) as { OTIO_SCHEMA: string }).OTIO_SCHEMA.split('.')[0], 'Timeline');
    const zip = join(dir, 'cut.zip');
    ok(await mps(['export', 'timeline', '--project', projectId, '--format', 'fcpxml', '--with-media', '-o', zip]));
    assert.equal(readFileSync(zip).subarray(0, 2).toString(), 'PK');
    const badFormat = await mps(['export', 'timeline', '--project', projectId, '--format', 'aaf', '-o', zip]);
    assert.equal(badFormat.code, 1);
  });

  it('exit codes: usage 1, unreachable 4, no session 1 after logout', async () => {
    const usage = await mps(['jobs', 'list', '--limit', 'many']);
    assert.equal(usage.code, 1);
    assert.match(usage.stderr, /--limit/);
    const both = await mps(['import', clip, '--project', projectId, '--name', 'x']);
    assert.equal(both.code, 1);
    const noFile = await mps(['import', join(dir, 'nope.wav')]);
    assert.equal(noFile.code, 1);
    assert.match(noFile.stderr, /nope\.wav: no such file/);

    const closed = await freePort();
    const unreachable = await mps(['status'], { env: { MPS_BASE_URL: `http://127.0.0.1:${closed}` } });
    assert.equal(unreachable.code, 4);
    assert.match(unreachable.stderr, /cannot reach the service at http:\/\/127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\)/);

    const loginUnreachable = await mps(['login', '--base-url', `http://127.0.0.1:${closed}`, '--token', token]);
    assert.equal(loginUnreachable.code, 4);
    assert.match(loginUnreachable.stderr, /cannot reach the service at http:\/\/127\.0\.0\.1:\d+\/v1/);
    assert.equal(JSON.parse(readFileSync(join(config(), 'config.json'), 'utf8')).base_url, `${proxy.url}/v1`, 'the session is kept');

    ok(await mps(['logout']));
    assert.equal(existsSync(join(config(), 'config.json')), false);
    const loggedOut = await mps(['status']);
    assert.equal(loggedOut.code, 1);
    assert.match(loggedOut.stderr, /not logged in: run mps login/);
  });

  it('reads the token without echo in a terminal (tmux)', async function () {
    if (spawnSync('tmux', ['-V']).status !== 0) {
      console.log('      skipped: tmux is not installed');
      this.skip();
    }
    const socket = `mps-e2e-login-${process.pid}`;
    const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const env = `HOME=${home} XDG_CONFIG_HOME=${join(home, 'config')}`;
    const started = tmux(
      'new-session',
      '-d',
      '-x',
      '160',
      '-y',
      '20',
      `env ${env} ${process.execPath} ${MPS} login --base-url ${proxy.url}; sleep 120`,
    );
    assert.equal(started.status, 0, started.stderr);
    try {
      const screen = () => tmux('capture-pane', '-p').stdout;
      await waitFor(() => /^Token:\s*$/m.test(screen()), { timeoutMs: 20_000, intervalMs: 100, what: 'the token prompt' }).catch(
        (err: Error) => {
          throw new Error(`${err.message}; the screen:\n${screen()}`);
        },
      );
      tmux('send-keys', token, 'Enter');
      const shown = await waitFor(() => (/logged in to E2E CLI/.test(screen()) ? screen() : null), {
        timeoutMs: 20_000,
        intervalMs: 100,
        what: 'the login to end',
      });
      assert.equal(shown.includes(token), false, `the token was echoed:\n${shown}`);
      assert.equal((JSON.parse(readFileSync(join(config(), 'config.json'), 'utf8')) as { token: string }).token, token);
    } finally {
      tmux('kill-server');
    }
  });

  it('draws a progress bar by bytes in a terminal (tmux)', async function () {
    if (spawnSync('tmux', ['-V']).status !== 0) {
      console.log('      skipped: tmux is not installed');
      this.skip();
    }
    const socket = `mps-e2e-${process.pid}`;
    const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const env = `HOME=${home} XDG_CONFIG_HOME=${join(home, 'config')} MPS_BASE_URL=${proxy.url} MPS_TOKEN=${token} MPS_PART_SIZE=${1024 * 1024}`;
    proxy.resetCounts();
    proxy.holdPartsAfter(8);
    const started = tmux(
      'new-session',
      '-d',
      '-x',
      '160',
      '-y',
      '20',
      `env ${env} ${process.execPath} ${MPS} import ${bigWav} --name Terminal; sleep 120`,
    );
    assert.equal(started.status, 0, started.stderr);
    try {
      const screen = () => tmux('capture-pane', '-p').stdout;
      // Held after eight parts of 1 MiB: the bar stands still at 8 MiB of the file.
      const bar = await waitFor(() => /wav-long\.wav \[[█░]+\] \d+% \| 8\.4 MB \/ \d+\.\d MB/.exec(screen()), {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: 'the progress bar at the held part',
      }).catch((err: Error) => {
        throw new Error(`${err.message}; the screen:\n${screen()}`);
      });
      assert.match(bar[0], /█+░+/);
      proxy.release();
      const done = await waitFor(() => (/uploaded wav-long\.wav/.test(screen()) ? screen() : null), {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: 'the upload to end',
      });
      assert.match(done, /\[█+\] 100% \| (\d+\.\d MB) \/ \1/);
    } finally {
      proxy.release();
      tmux('kill-server');
    }
  });

  function resumeRecords(): string {
    const path = join(config(), 'uploads.json');
    return existsSync(path) ? JSON.stringify(JSON.parse(readFileSync(path, 'utf8'))) : '{}';
  }
});

/** About 40 MB of stereo 48 kHz WAV (ffmpeg's sine), named wav-long.wav. */
async function bigWavFile(dir: string): Promise<string> {
  const path = join(dir, 'wav-long.wav');
  const { ffmpeg } = resolveFfmpegPaths();
  await execFileP(
    ffmpeg,
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=210',
      '-ac',
      '2',
      '-c:a',
      'pcm_s16le',
      path,
    ],
    {
      timeout: 60_000,
    },
  );
  return path;
}
