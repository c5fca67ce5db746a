import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { removeOrphanedTemporaries, temporaryPath } from '../../lib/adapters/local/process-temporaries';

/** The pid of a process that ran and is gone. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

/** This host's part of a temporary's name. */
const HOST = /\.([0-9a-f]{8})-/.exec(basename(temporaryPath('/x', 'y', 'tmp')))![1];

describe('temporary files left by a crashed process (lib/adapters/local/process-temporaries.ts)', () => {
  it('names a temporary after what it becomes, this host and this process, hidden beside it', () => {
    const path = temporaryPath('/data/blobs/p', 'render-abc.mp4', 'part');
    assert.equal(join(path, '..'), '/data/blobs/p');
    assert.match(basename(path), new RegExp(`^\\.render-abc\\.mp4\\.${HOST}-${process.pid}-[0-9a-f]{12}\\.part$`));
    assert.notEqual(temporaryPath('/data/blobs/p', 'render-abc.mp4', 'part'), path, 'two writers of one target never share a file');
  });

  it("removes only this host's temporaries whose process is gone", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'temporaries-'));
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      const gone = await deadPid();
      const files = {
        crashedRender: `.a.mp4.${HOST}-${gone}-0123456789ab.part`,
        crashedBlob: `.b.wav.${HOST}-${gone}-ba9876543210.tmp`,
        running: `.a.mp4.${HOST}-${live.pid}-0123456789ab.part`,
        ours: basename(temporaryPath(dir, 'a.mp4', 'tmp')),
        otherHost: `.a.mp4.${HOST === '00000000' ? '11111111' : '00000000'}-${gone}-0123456789ab.part`,
        olderName: '.0123456789abcdef.tmp',
        blob: 'a.mp4',
      };
      for (const name of Object.values(files)) writeFileSync(join(dir, name), 'x');
      const removed = await removeOrphanedTemporaries(dir);
      assert.deepEqual(removed.sort(), [files.crashedRender, files.crashedBlob].sort());
      assert.deepEqual(readdirSync(dir).sort(), [files.running, files.ours, files.otherHost, files.olderName, files.blob].sort());
      assert.deepEqual(await removeOrphanedTemporaries(join(dir, 'missing')), [], 'no folder yet: nothing to do');
    } finally {
      live.kill();
    }
  });

  it('a blob stored in a folder removes what a process killed while storing there left', async () => {
    const root = mkdtempSync(join(tmpdir(), 'blobs-'));
    mkdirSync(join(root, 'p'));
    const left = `.big.wav.${HOST}-${await deadPid()}-0123456789ab.tmp`;
    writeFileSync(join(root, 'p', left), Buffer.alloc(1024));
    const blobs = createLocalBlobStore({ root });
    await blobs.put('p/small.wav', Readable.from([Buffer.from('bytes')]));
    assert.deepEqual(readdirSync(join(root, 'p')), ['small.wav']);
    // Once per folder and process: a folder of one file per transcript is not listed at every write.
    const later = `.other.wav.${HOST}-${await deadPid()}-0123456789ab.tmp`;
    writeFileSync(join(root, 'p', later), 'x');
    await blobs.put('p/second.wav', Readable.from([Buffer.from('bytes')]));
    assert.deepEqual(readdirSync(join(root, 'p')).sort(), [later, 'second.wav', 'small.wav'].sort());
  });
});
