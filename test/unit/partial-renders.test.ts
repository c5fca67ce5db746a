import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { partialRenderPath, removeOrphanedPartials } from '../../lib/adapters/ffmpeg/partial-renders';

/** A process that ran and is gone, and one that runs until killed. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('partial renders left by a crashed worker (lib/adapters/ffmpeg/partial-renders.ts)', () => {
  it('names a partial render after its target, this host and this process, hidden beside the target', () => {
    const target = join('/data/blobs/renders', 'abc.mp4');
    const path = partialRenderPath(target);
    assert.equal(join(path, '..'), '/data/blobs/renders');
    assert.match(basename(path), new RegExp(`^\\.abc\\.mp4\\.[0-9a-f]{8}-${process.pid}-[0-9a-f]{12}\\.part$`));
    assert.notEqual(partialRenderPath(target), path, 'two renders of one target never share a file');
  });

  it("removes only this host's partial renders whose process is gone", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partials-'));
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      const mine = basename(partialRenderPath(join(dir, 'a.mp4')));
      const host = /\.([0-9a-f]{8})-/.exec(mine)![1];
      const gone = await deadPid();
      const files = {
        crashed: `.a.mp4.${host}-${gone}-0123456789ab.part`,
        crashedOther: `.b.m4a.${host}-${gone}-ba9876543210.part`,
        running: `.a.mp4.${host}-${live.pid}-0123456789ab.part`,
        ours: mine,
        otherHost: `.a.mp4.${host === '00000000' ? '11111111' : '00000000'}-${gone}-0123456789ab.part`,
        olderName: '.a.mp4.0123456789ab.part',
        blob: 'a.mp4',
      };
      for (const name of Object.values(files)) writeFileSync(join(dir, name), 'x');
      const removed = await removeOrphanedPartials(dir);
      assert.deepEqual(removed.sort(), [files.crashed, files.crashedOther].sort());
      assert.deepEqual(readdirSync(dir).sort(), [files.running, files.ours, files.otherHost, files.olderName, files.blob].sort());
      assert.deepEqual(await removeOrphanedPartials(join(dir, 'missing')), [], 'no folder yet: nothing to do');
    } finally {
      live.kill();
    }
  });
});
