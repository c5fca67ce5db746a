import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { AppError } from '../../lib/domain/errors';
import { waitFor } from '../fixtures/wait';

/** Every file under `dir`, recursively, relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));

describe('BlobStore: local folder', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'blobs-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('puts a blob, reports its size, and serves it from a local path until deleted', async () => {
    const store = createLocalBlobStore({ root });
    const key = 'drive-1/project-1/0b6e.wav';
    assert.equal(await store.exists(key), false);

    const { size } = await store.put(key, Readable.from([Buffer.from('hello '), Buffer.from('world')]));

    assert.equal(size, 11);
    assert.equal(await store.exists(key), true);
    assert.equal(readFileSync(store.localPath(key), 'utf8'), 'hello world');
    assert.deepEqual(filesUnder(root), [key]);
    await store.delete(key);
    assert.equal(await store.exists(key), false);
    await store.delete(key); // deleting twice is fine: consumers may see a command twice
  });

  it('replaces a blob written again under the same key', async () => {
    const store = createLocalBlobStore({ root });
    await store.put('a/b.bin', Readable.from([Buffer.from('first')]));
    await store.put('a/b.bin', Readable.from([Buffer.from('second')]));
    assert.equal(readFileSync(store.localPath('a/b.bin'), 'utf8'), 'second');
  });

  for (const key of [
    '../escape.wav',
    'a/../../b',
    '/etc/passwd',
    'a//b',
    'a/',
    '',
    '.',
    'a/./b',
    'a/.hidden',
    'nul\0byte',
    'back\\slash',
  ]) {
    it(`rejects the unsafe key ${JSON.stringify(key)}`, async () => {
      const store = createLocalBlobStore({ root });
      assert.throws(() => store.localPath(key), /unsafe blob key/);
      await assert.rejects(store.put(key, Readable.from([Buffer.from('x')])), /unsafe blob key/);
      await assert.rejects(store.exists(key), /unsafe blob key/);
      await assert.rejects(store.delete(key), /unsafe blob key/);
    });
  }

  it('fails with payload_too_large when more than maxBytes arrive, leaving no file', async () => {
    const store = createLocalBlobStore({ root, maxBytes: 10 });
    const source = Readable.from([Buffer.alloc(6), Buffer.alloc(6), Buffer.alloc(6)]);
    await assert.rejects(store.put('d/p/big.bin', source), { code: 'payload_too_large' });
    assert.equal(await store.exists('d/p/big.bin'), false);
    assert.deepEqual(filesUnder(root), []);
    assert.equal(source.destroyed, true);
  });

  it('accepts exactly maxBytes', async () => {
    const store = createLocalBlobStore({ root, maxBytes: 10 });
    assert.deepEqual(await store.put('d/p/fits.bin', Readable.from([Buffer.alloc(10)])), { size: 10 });
  });

  it('stops on abort while the source is still sending, leaving no file', async () => {
    const store = createLocalBlobStore({ root });
    const source = new PassThrough();
    const controller = new AbortController();
    const putting = store.put('d/p/slow.bin', source, { signal: controller.signal });
    source.write(Buffer.alloc(1024));
    // The temp file exists once the first chunk is being written; abort mid-stream.
    await waitFor(() => filesUnder(root).length === 1, { what: 'the temp file' });
    controller.abort();
    await assert.rejects(putting, { name: 'AbortError' });
    assert.deepEqual(filesUnder(root), []);
    assert.equal(await store.exists('d/p/slow.bin'), false);
  });

  it('writes nothing when the signal is already aborted', async () => {
    const store = createLocalBlobStore({ root });
    await assert.rejects(store.put('d/p/x.bin', Readable.from([Buffer.from('x')]), { signal: AbortSignal.abort() }), {
      name: 'AbortError',
    });
    assert.deepEqual(filesUnder(root), []);
  });

  it('reports broken storage as a retriable unavailable error that names no server path', async () => {
    writeFileSync(join(root, 'not-a-folder'), 'x');
    const store = createLocalBlobStore({ root: join(root, 'not-a-folder', 'blobs') });
    const err = await store.put('d/p/a.wav', Readable.from([Buffer.from('x')])).then(
      () => assert.fail('put should fail'),
      (e: unknown) => e as AppError,
    );
    assert.ok(err instanceof AppError);
    assert.equal(err.code, 'unavailable');
    assert.equal(err.retriable, true);
    assert.doesNotMatch(err.message, new RegExp(root.replace(/[/.]/g, '\\$&')));
    assert.doesNotMatch(err.message, /\//);
  });
});
