import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { Document, Packer } from 'docx';
import { deflatedEntry, readZip, zipBuffer, type StoredEntry } from '../../lib/adapters/zip/zip-buffer';

/**
 * The in-memory ZIP reader and writer (the Word export's package): an archive it writes is read
 * back whole by Debian's `unzip -t` and Python's zipfile, and it reads another writer's archive
 * (the docx library's, fflate's deflate with data descriptors) into parts it can copy unchanged.
 */
describe('zip buffer', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'zipbuf-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const text = '<w:document>'.padEnd(20_000, ' Über café ✨');
  const stored: StoredEntry = { name: 'mimetype', method: 0, crc: zlib.crc32(Buffer.from('abc')), size: 3, data: Buffer.from('abc') };
  const entries = () => [
    deflatedEntry('word/document.xml', text),
    stored,
    deflatedEntry('[Content_Types].xml', ''),
    deflatedEntry('média/ü.txt', 'x'),
  ];

  /** Python's zipfile: each member's name and text, after testzip() checked every CRC; null without python3. */
  function pythonRead(archive: Buffer): { bad: string | null; members: [string, string][] } | null {
    const path = join(dir, `${Math.random().toString(36).slice(2)}.zip`);
    writeFileSync(path, archive);
    const unzip = spawnSync('unzip', ['-t', path], { encoding: 'utf8' });
    if (!unzip.error) assert.equal(unzip.status, 0, unzip.stdout + unzip.stderr);
    const script = `
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    print(json.dumps({"bad": z.testzip(), "members": [[i.filename, z.read(i).decode("utf-8")] for i in z.infolist()]}))`;
    const r = spawnSync('python3', ['-c', script, path], { encoding: 'utf8' });
    if (r.error) return null;
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  }

  it("writes deflated and stored parts that unzip -t and Python's zipfile read back, names in UTF-8", function () {
    const read = pythonRead(zipBuffer(entries()));
    if (read === null) return this.skip();
    assert.equal(read.bad, null, 'every CRC-32 matches');
    assert.deepEqual(read.members, [
      ['word/document.xml', text],
      ['mimetype', 'abc'],
      ['[Content_Types].xml', ''],
      ['média/ü.txt', 'x'],
    ]);
  });

  it('reads back what it wrote: the same entries, compressed bytes unchanged', () => {
    const archive = zipBuffer(entries());
    assert.deepEqual(readZip(archive), entries());
    assert.ok(archive.length < text.length / 10, 'the document is deflated');
  });

  it("reads the docx library's package, and a copy of its parts is an archive as good as the original", async function () {
    const original = await Packer.toBuffer(new Document({ creator: 'test', sections: [{ children: [] }] }));
    const parts = readZip(original);
    assert.ok(parts.some((p) => p.name === 'word/styles.xml') && parts.some((p) => p.name === '[Content_Types].xml'));
    for (const p of parts) {
      const bytes = p.method === 8 ? zlib.inflateRawSync(p.data) : p.data;
      assert.equal(bytes.length, p.size, p.name);
      assert.equal(zlib.crc32(bytes), p.crc, p.name);
    }
    const read = pythonRead(zipBuffer(parts));
    if (read === null) return this.skip();
    assert.equal(read.bad, null);
    assert.deepEqual(
      read.members.map(([name]) => name),
      parts.map((p) => p.name),
    );
  });

  it('refuses what is not a ZIP archive, or one it cannot read', () => {
    assert.throws(() => readZip(Buffer.from('not a zip at all')), /no end of central directory/);
    const archive = zipBuffer(entries());
    archive.writeUInt16LE(12, archive.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])) + 10); // bzip2, in the directory
    assert.throws(() => readZip(archive), /compression method 12/);
  });
});
