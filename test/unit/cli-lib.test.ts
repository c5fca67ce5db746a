import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, ResponseTimeoutError, UnexpectedAnswerError } from '../../sdk/client';
import { configDir, loadSession, normalizeBaseUrl, removeSession, saveSession } from '../../cli/lib/config';
import { CliError, describeFailure, Exit } from '../../cli/lib/exit';
import { commandKey, findRecord, identify, removeRecord, saveRecord, type ImportCommand } from '../../cli/lib/resume';
import { plainSnippet, printFields, printTable, visible } from '../../cli/lib/output';

/** The CLI's helpers (cli/lib): its session, its exit codes and messages, its resume records. */
describe('mps CLI helpers', () => {
  let dir: string;
  let saved: string | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mps-cli-lib-'));
    saved = process.env.XDG_CONFIG_HOME;
    process.env.XDG_CONFIG_HOME = dir;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.XDG_CONFIG_HOME;
    else process.env.XDG_CONFIG_HOME = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  it('normalizes the base URL to end in /v1 and refuses what is not http(s)', () => {
    assert.equal(normalizeBaseUrl('http://localhost:8080'), 'http://localhost:8080/v1');
    assert.equal(normalizeBaseUrl('https://api.example.com/media/v1/'), 'https://api.example.com/media/v1');
    assert.equal(normalizeBaseUrl('https://api.example.com/media//'), 'https://api.example.com/media/v1');
    assert.throws(
      () => normalizeBaseUrl('localhost:8080'),
      (e: CliError) => e.code === Exit.usage && /--base-url/.test(e.message),
    );
    assert.throws(() => normalizeBaseUrl('ftp://x'), /must be http or https/);
  });

  it('stores the session in $XDG_CONFIG_HOME/mps privately; MPS_BASE_URL and MPS_TOKEN override it one by one', async () => {
    assert.equal(configDir(), join(dir, 'mps'));
    await assert.rejects(loadSession({}), (e: CliError) => e.code === Exit.usage && /run mps login/.test(e.message));
    await saveSession({ baseUrl: 'http://a.test/v1', token: 't1' });
    assert.equal(statSync(join(dir, 'mps', 'config.json')).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'mps')).mode & 0o777, 0o700);
    assert.deepEqual(await loadSession({}), { baseUrl: 'http://a.test/v1', token: 't1' });
    assert.deepEqual(await loadSession({ MPS_TOKEN: 't2' }), { baseUrl: 'http://a.test/v1', token: 't2' });
    assert.deepEqual(await loadSession({ MPS_BASE_URL: 'http://b.test' }), { baseUrl: 'http://b.test/v1', token: 't1' });
    assert.equal(await removeSession(), true);
    assert.equal(await removeSession(), false);
  });

  it('falls back to ~/.config/mps when XDG_CONFIG_HOME is unset or relative', () => {
    assert.match(configDir({ XDG_CONFIG_HOME: 'relative' }), /\/\.config\/mps$/);
    assert.match(configDir({}), /\/\.config\/mps$/);
  });

  it('maps failures to exit codes with a message that says what to do', () => {
    const api = (status: number, error: string, state?: string) => describeFailure(new ApiError(status, error, 'why', state));
    assert.deepEqual(api(401, 'unauthorized'), { code: Exit.refused, message: 'the token was refused: why; run mps login' });
    assert.equal(api(404, 'not_found').code, 2);
    assert.deepEqual(api(402, 'payment_required'), {
      code: 2,
      message:
        "the drive's balance is too low: why; its operator raises it (admin drive update --drive <drive-id> --media-seconds N or --credits N)",
    });
    assert.deepEqual(api(409, 'conflict', 'stopped'), { code: 2, message: 'the request was refused (409 conflict, state stopped): why' });
    assert.equal(api(500, 'internal_error').code, Exit.unavailable);
    assert.equal(api(503, 'unavailable').code, 4);
    const refused = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    assert.deepEqual(describeFailure(refused, 'http://x.test/v1'), {
      code: 4,
      message: 'cannot reach the service at http://x.test/v1 (ECONNREFUSED): is it running? Check the base URL with mps login',
    });
    assert.equal(describeFailure(new DOMException('aborted', 'AbortError')).code, Exit.interrupted);
    assert.deepEqual(describeFailure(new CliError(Exit.jobFailed, 'job j ended in error')), { code: 3, message: 'job j ended in error' });
  });

  it('reads the network failures of node:http as fetch ones: exit 4, saying the service cannot be reached', () => {
    const failures = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      Object.assign(new Error('getaddrinfo ENOTFOUND nope.test'), { code: 'ENOTFOUND' }),
      Object.assign(new Error('getaddrinfo EAI_AGAIN nope.test'), { code: 'EAI_AGAIN' }),
      Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }),
      Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' }),
      new Error('socket hang up'),
      new ResponseTimeoutError('http://x.test/v1/status', 30_000),
    ];
    for (const err of failures) {
      const { code, message } = describeFailure(err, 'http://x.test/v1');
      assert.equal(code, Exit.unavailable, err.message);
      assert.match(message, /^cannot reach the service at http:\/\/x\.test\/v1 \(.+\): is it running\?/);
    }
    assert.match(describeFailure(failures[7]).message, /no answer from http:\/\/x\.test\/v1\/status within 30 s/);
  });

  it('says a 2xx that is not JSON does not look like the service (exit 4), naming what came back', () => {
    const html = new UnexpectedAnswerError(200, 'text/html', '<html><body>Welcome to nginx', 'http://x.test/v1/status');
    const { code, message } = describeFailure(html, 'http://x.test/v1');
    assert.equal(code, Exit.unavailable);
    assert.match(
      message,
      /does not look like the service at http:\/\/x\.test\/v1: .*200 text\/html.*<html><body>Welcome.*check the base URL/,
    );
  });

  it('keys a resume record by the whole command: only the same command finds it', async () => {
    const file = join(dir, 'talk.wav');
    writeFileSync(file, 'abc');
    const info = await identify(file);
    const item = { file: info.path, size: info.size, mtime_ms: info.mtimeMs };
    const command: ImportCommand = { baseUrl: 'http://a.test/v1', items: [item], name: 'First' };
    const key = commandKey(command);
    await saveRecord(key, { idempotency_key: 'k1', created_at: 'now', job_id: 'j1', upload_urls: { 'talk.wav': 'http://u.test/1' } });
    assert.equal(statSync(join(dir, 'mps', 'uploads.json')).mode & 0o777, 0o600);
    assert.equal((await findRecord(commandKey({ ...command })))?.job_id, 'j1');
    const others: ImportCommand[] = [
      { ...command, items: [item, { url: 'http://host/tone.wav' }] },
      { ...command, name: 'Second' },
      { ...command, name: undefined, project: 'p1' },
      { ...command, composition: 'Both' },
      { ...command, baseUrl: 'http://b.test/v1' },
    ];
    for (const other of others) assert.equal(await findRecord(commandKey(other)), undefined, JSON.stringify(other));
    // Items in another order are another import (the composition follows their order).
    const two = { ...command, items: [item, { url: 'http://host/a.wav' }] };
    assert.notEqual(commandKey(two), commandKey({ ...two, items: [...two.items].reverse() }));
    // An edited file (another mtime) is another file: its import starts over.
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    const edited = await identify(file);
    assert.notEqual(commandKey({ ...command, items: [{ ...item, mtime_ms: edited.mtimeMs }] }), key);
    await removeRecord(key);
    assert.equal(await findRecord(key), undefined);
  });

  it('ignores the per-file records of an older CLI', async () => {
    await saveRecord('k', { idempotency_key: 'i', created_at: 'now' });
    const path = join(dir, 'mps', 'uploads.json');
    writeFileSync(
      path,
      JSON.stringify({
        '/a.wav|3|1': { upload_url: 'u', job_id: 'j', project_id: 'p', ref: 'a.wav' },
        k: { idempotency_key: 'i', created_at: 'now' },
      }),
    );
    assert.equal(await findRecord('/a.wav|3|1'), undefined);
    assert.equal((await findRecord('k'))?.idempotency_key, 'i');
  });

  it('shows control characters of API text as visible escapes in tables, fields and notes', () => {
    assert.equal(visible('a\x1b[31mred\x1b]0;title\x07\nrow\r\t\x9bz'), 'a\\x1b[31mred\\x1b]0;title\\x07\\nrow\\r\\t\\x9bz');
    assert.equal(visible('plain ünïcode – ok \\ back'), 'plain ünïcode – ok \\ back');
    const written = captureStdout(() => {
      printTable(['ID', 'NAME'], [['p1', 'evil\nfake-id  fake-name\x1b[2J']], 'none');
      printFields([['name', '\x1b]8;;http://x\x07link']]);
    });
    assert.equal(written, 'ID  NAME\np1  evil\\nfake-id  fake-name\\x1b[2J\nname: \\x1b]8;;http://x\\x07link\n');
    assert.equal(written.includes('\x1b'), false);
  });

  it("shows a search snippet's matches in bold on a terminal, in brackets elsewhere, its text unescaped", () => {
    const snippet = '… says &quot;<mark>launch</mark>&quot; &amp; <mark>LAUNCH</mark> &lt;b&gt; it&#39;s…';
    assert.equal(plainSnippet(snippet, false), '… says "[launch]" & [LAUNCH] <b> it\'s…');
    assert.equal(plainSnippet(snippet, true), '… says "\x1b[1mlaunch\x1b[22m" & \x1b[1mLAUNCH\x1b[22m <b> it\'s…');
    // Escaped markup in the text itself is text, never a match.
    assert.equal(plainSnippet('&lt;mark&gt;x&lt;/mark&gt;', false), '<mark>x</mark>');
    // Only our own styles reach the terminal: the transcript's text is made visible.
    assert.equal(plainSnippet('a\x1b[2J <mark>b\x1b[0m</mark>', true), 'a\\x1b[2J \x1b[1mb\\x1b[0m\x1b[22m');
  });
});

function captureStdout(run: () => void): string {
  const write = process.stdout.write;
  let written = '';
  process.stdout.write = ((chunk: string) => {
    written += chunk;
    return true;
  }) as typeof process.stdout.write;
  try {
    run();
  } finally {
    process.stdout.write = write;
  }
  return written;
}
