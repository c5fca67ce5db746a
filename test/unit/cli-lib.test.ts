import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../../sdk/client';
import { configDir, loadSession, normalizeBaseUrl, removeSession, saveSession } from '../../cli/lib/config';
import { CliError, describeFailure, Exit } from '../../cli/lib/exit';
import { findRecord, identify, removeRecord, saveRecords } from '../../cli/lib/resume';
import { plainSnippet } from '../../cli/lib/output';

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
      message: "the drive's balance is too low: why; its operator raises it (admin drive update --media-seconds N or --credits N)",
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

  it('keeps a resume record per file, path and size and mtime, until it is removed', async () => {
    const file = join(dir, 'talk.wav');
    writeFileSync(file, 'abc');
    const first = await identify(file);
    await saveRecords(new Map([[first.key, { upload_url: 'http://u.test/1', job_id: 'j1', project_id: 'p1', ref: 'talk.wav' }]]));
    assert.equal(statSync(join(dir, 'mps', 'uploads.json')).mode & 0o777, 0o600);
    assert.equal((await findRecord((await identify(file)).key))?.job_id, 'j1');
    // An edited file (another mtime) is another file: its upload starts over.
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    assert.equal(await findRecord((await identify(file)).key), undefined);
    await removeRecord(first.key);
    assert.equal(await findRecord(first.key), undefined);
  });
  it("shows a search snippet's matches in bold on a terminal, in brackets elsewhere, its text unescaped", () => {
    const snippet = '… says &quot;<mark>launch</mark>&quot; &amp; <mark>LAUNCH</mark> &lt;b&gt; it&#39;s…';
    assert.equal(plainSnippet(snippet, false), '… says "[launch]" & [LAUNCH] <b> it\'s…');
    assert.equal(plainSnippet(snippet, true), '… says "\x1b[1mlaunch\x1b[22m" & \x1b[1mLAUNCH\x1b[22m <b> it\'s…');
    // Escaped markup in the text itself is text, never a match.
    assert.equal(plainSnippet('&lt;mark&gt;x&lt;/mark&gt;', false), '<mark>x</mark>');
  });
});
