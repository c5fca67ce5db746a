import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client } from '../../sdk/client';
import { BASE_URL, startHarness, type Harness } from '../fixtures/harness';
import { recordingProxy } from '../fixtures/recording-proxy';
import { waitFor } from '../fixtures/wait';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('the SDK streams a file to its upload URL (sdk/upload.ts)', function () {
  this.timeout(60_000);
  let h: Harness;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let client: Client;
  let dir: string;
  let file: string;
  let content: Buffer;

  before(async () => {
    h = await startHarness();
    await new Promise<void>((resolve) => h.server.listen(0, '127.0.0.1', resolve));
    proxy = await recordingProxy(`http://127.0.0.1:${(h.server.address() as AddressInfo).port}`);
    client = createClient({ baseUrl: `${proxy.url}/v1`, token: h.drive.token });
    dir = mkdtempSync(join(tmpdir(), 'mps-sdk-stream-'));
    // Several read buffers' worth and not a multiple of any of them: every buffer is used again,
    // and the last read is a short one.
    content = randomBytes(9 * 1024 * 1024 + 12_345);
    file = join(dir, 'noise.bin');
    writeFileSync(file, content);
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await proxy.close();
    await h.close();
  });

  /** A new upload item's URL, sent through the proxy. */
  async function uploadUrl(name: string): Promise<string> {
    const accepted = await client.importMedia({
      project_name: name,
      add_media: { 'noise.bin': { content_type: 'application/octet-stream', file_size: content.length } },
    });
    return accepted.upload_urls!['noise.bin'].upload_url.replace(new URL(BASE_URL).origin, proxy.url);
  }

  it('sends a new upload in one PUT without asking first, every byte as it is on disk', async () => {
    const url = await uploadUrl('Fresh');
    proxy.puts.length = 0;
    const progress: number[] = [];
    const done = await client.uploadFile(file, url, { fresh: true, onProgress: (sent) => progress.push(sent) });
    assert.equal(done.size, content.length);
    assert.deepEqual(
      proxy.puts.map((p) => [p.range, p.bytes, p.status]),
      [[`bytes 0-${content.length - 1}/${content.length}`, content.length, 200]],
      'one PUT of the whole file, no `bytes */total` question before it',
    );
    assert.equal(proxy.puts[0].sha256, sha256(content), 'the bytes sent are the file’s (no buffer reused before the socket took it)');
    assert.equal(progress[0], 0);
    assert.equal(progress.at(-1), content.length);
    assert.ok(
      progress.every((n, i) => i === 0 || n >= progress[i - 1]),
      `progress only grows: ${progress.join(',')}`,
    );
  });

  it('resumes a stream stopped mid-file with one PUT of exactly the bytes the server lacks', async () => {
    const url = await uploadUrl('Resumed stream');
    proxy.puts.length = 0;
    const stop = new AbortController();
    await assert.rejects(
      client.uploadFile(file, url, {
        fresh: true,
        signal: stop.signal,
        onProgress: (sent) => {
          if (sent >= 3 * 1024 * 1024) stop.abort();
        },
      }),
      (err: unknown) => (err as Error).name === 'AbortError',
    );
    // The service keeps what the cut body delivered once it sees the cut: wait for that, as a
    // user re-running the command later would find it.
    await waitFor(
      async () => {
        const answer = await fetch(url, { method: 'PUT', headers: { 'Content-Range': `bytes */${content.length}` } });
        return answer.status === 308 && answer.headers.get('range');
      },
      { what: 'the service to keep the cut body' },
    );
    proxy.puts.length = 0;
    const done = await client.uploadFile(file, url);
    assert.equal(done.size, content.length);
    const [question, rest, ...more] = proxy.puts;
    assert.deepEqual(more, []);
    assert.equal(question.range, `bytes */${content.length}`, 'a resumed upload asks first');
    assert.equal(question.status, 308);
    const first = Number(/^bytes (\d+)-/.exec(rest.range)?.[1]);
    assert.ok(first > 0 && first < content.length, `the rest starts at what the server held: ${rest.range}`);
    assert.equal(rest.range, `bytes ${first}-${content.length - 1}/${content.length}`);
    assert.equal(rest.sha256, sha256(content.subarray(first)), 'the rest is read from its offset in the file');
    assert.equal(rest.status, 200);
  });

  it('is safe when `fresh` is wrong: the server skips the bytes it already holds', async () => {
    const url = await uploadUrl('Wrongly fresh');
    const part = content.subarray(0, 4 * 1024 * 1024);
    const held = await fetch(url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `bytes 0-${part.length - 1}/${content.length}` },
      body: part,
    });
    assert.equal(held.status, 308);
    proxy.puts.length = 0;
    const done = await client.uploadFile(file, url, { fresh: true });
    assert.equal(done.size, content.length);
    assert.deepEqual(
      proxy.puts.map((p) => [p.range, p.status]),
      [[`bytes 0-${content.length - 1}/${content.length}`, 200]],
    );
  });
});
