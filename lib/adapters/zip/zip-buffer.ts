import * as zlib from 'node:zlib';
import { crc32 } from './zip-stream';

/**
 * Small ZIP archives held whole in memory, for packages of small parts (a Word document): read
 * one into its entries as stored, swap some, write them back. An entry keeps its compressed bytes,
 * so a part copied from one archive to another is never inflated and deflated again. Plain ZIP
 * only (no ZIP64, encryption or spanning): the parts are kilobytes. zip-stream.ts streams large
 * stored files instead.
 */

export type StoredEntry = {
  readonly name: string;
  /** 0: stored, 8: deflated. */
  readonly method: 0 | 8;
  /** CRC-32 and size of the uncompressed bytes. */
  readonly crc: number;
  readonly size: number;
  /** The bytes as they are in the archive. */
  readonly data: Buffer;
};

const LOCAL = 0x04034b50;
const CENTRAL = 0x02014b50;
const END = 0x06054b50;
const UTF8_NAMES = 0x0800;
const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01, as zip-stream.ts: the same parts make the same bytes

/** A part deflated with zlib (level 6, as zip tools do by default). */
export function deflatedEntry(name: string, content: string | Buffer): StoredEntry {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return { name, method: 8, crc: crc32(bytes, 0), size: bytes.length, data: zlib.deflateRawSync(bytes) };
}

/** The entries of `archive`, in the order of its central directory. Throws on what is not a plain ZIP. */
export function readZip(archive: Buffer): StoredEntry[] {
  const end = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0 || end + 22 > archive.length) throw new Error('zip: no end of central directory record');
  const count = archive.readUInt16LE(end + 10);
  let at = archive.readUInt32LE(end + 16);
  const entries: StoredEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (archive.readUInt32LE(at) !== CENTRAL) throw new Error(`zip: central directory entry ${i} is damaged`);
    const method = archive.readUInt16LE(at + 10);
    if (method !== 0 && method !== 8) throw new Error(`zip: compression method ${method} is not read here`);
    const [crc, compressed, size] = [archive.readUInt32LE(at + 16), archive.readUInt32LE(at + 20), archive.readUInt32LE(at + 24)];
    const [nameLength, extraLength, commentLength] = [
      archive.readUInt16LE(at + 28),
      archive.readUInt16LE(at + 30),
      archive.readUInt16LE(at + 32),
    ];
    const name = archive.toString('utf8', at + 46, at + 46 + nameLength);
    const local = archive.readUInt32LE(at + 42);
    if (archive.readUInt32LE(local) !== LOCAL) throw new Error(`zip: the local header of ${name} is damaged`);
    const start = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28);
    entries.push({ name, method, crc, size, data: archive.subarray(start, start + compressed) });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** An archive of `entries`, in order: each local header with its sizes (no data descriptors), then the central directory. */
export function zipBuffer(entries: readonly StoredEntry[]): Buffer {
  const pieces: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const local = header(30, e, name);
    local.writeUInt32LE(LOCAL, 0);
    local.writeUInt16LE(20, 4);
    pieces.push(local, e.data);
    const entry = header(46, e, name);
    entry.writeUInt32LE(CENTRAL, 0);
    entry.writeUInt16LE(20, 4); // made by: MS-DOS (no UNIX mode)
    entry.writeUInt16LE(20, 6);
    entry.writeUInt32LE(offset, 42);
    central.push(entry);
    offset += local.length + e.data.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(END, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...pieces, directory, end]);
}

/**
 * A local header (30 bytes) or central directory entry (46) with what both hold, at their own
 * offsets, then the name: the central entry's fields sit 2 bytes further (its "made by" comes first).
 */
function header(fixed: 30 | 46, e: StoredEntry, name: Buffer): Buffer {
  const b = Buffer.alloc(fixed + name.length);
  const s = fixed === 46 ? 2 : 0;
  b.writeUInt16LE(UTF8_NAMES, 6 + s);
  b.writeUInt16LE(e.method, 8 + s);
  b.writeUInt16LE(0, 10 + s);
  b.writeUInt16LE(DOS_DATE, 12 + s);
  b.writeUInt32LE(e.crc >>> 0, 14 + s);
  b.writeUInt32LE(e.data.length, 18 + s);
  b.writeUInt32LE(e.size, 22 + s);
  b.writeUInt16LE(name.length, 26 + s);
  name.copy(b, fixed);
  return b;
}
