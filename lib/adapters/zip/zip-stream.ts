import { Readable } from 'node:stream';
import * as zlib from 'node:zlib';

/**
 * A streamed ZIP archive of stored (uncompressed) files: media is compressed already, and storing
 * lets each file go out as it is read, at disk speed, with memory flat whatever the sizes. Each
 * file's CRC-32 is known only once it has passed, so it follows the file in a data descriptor
 * (general purpose bit 3). Files or offsets past 4 GiB, or more than 65,535 files, use ZIP64
 * records (APPNOTE 4.5.3, 4.3.14-16), which `unzip`, Python's zipfile, macOS and Windows read.
 * Names are UTF-8 (bit 11). Every file gets one fixed date, so the same files make the same bytes.
 */

export type ZipEntry = {
  readonly name: string;
  /** Its size in bytes, known before it is read (a blob's): a file that turns out another size fails the archive. */
  readonly size: number;
  readonly open: () => Readable | Promise<Readable>;
};

export type ZipOptions = {
  /** ZIP64 records for every file even when small (tests prove the large-file path with it). */
  readonly forceZip64?: boolean;
};

const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
const FLAGS = 0x0008 | 0x0800; // sizes and CRC in a data descriptor; UTF-8 names
const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01, the format's first day
const DOS_TIME = 0;

/** CRC-32 (IEEE) of `bytes` continuing from `crc`: zlib's from Node 20.15, a table before (package.json allows any Node 20). */
export const crc32: (bytes: Buffer, crc: number) => number = (zlib as { crc32?: (b: Buffer, c: number) => number }).crc32 ?? tableCrc32;

const TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});

export function tableCrc32(bytes: Buffer, crc = 0): number {
  let c = ~crc;
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

type Written = { name: Buffer; crc: number; size: number; offset: number; zip64: boolean };

/** The archive of `entries`, in order, as a stream. */
export function zipStream(entries: Iterable<ZipEntry>, options: ZipOptions = {}): Readable {
  return Readable.from(archive(entries, options), { objectMode: false });
}

/**
 * The archive's length in bytes before it is written (a `Content-Length`, so a download shows its
 * progress): the same records `zipStream` writes, counted from the names and announced sizes.
 */
export function zipLength(entries: Iterable<ZipEntry>, options: ZipOptions = {}): number {
  const force = options.forceZip64 === true;
  const written: Written[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const zip64 = force || entry.size >= MAX32 || offset >= MAX32;
    written.push({ name, crc: 0, size: entry.size, offset, zip64 });
    offset += localHeader(name, zip64).length + entry.size + (zip64 ? 24 : 16);
  }
  let length = offset;
  for (const chunk of centralDirectory(written, offset, force)) length += chunk.length;
  return length;
}

async function* archive(entries: Iterable<ZipEntry>, options: ZipOptions): AsyncGenerator<Buffer> {
  const written: Written[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const zip64 = options.forceZip64 === true || entry.size >= MAX32 || offset >= MAX32;
    const header = localHeader(name, zip64);
    yield header;
    let crc = 0;
    let size = 0;
    for await (const chunk of await entry.open()) {
      const bytes = chunk as Buffer;
      crc = crc32(bytes, crc);
      size += bytes.length;
      yield bytes;
    }
    if (size !== entry.size) throw new Error(`zip: ${entry.name} was ${size} bytes, not the ${entry.size} announced`);
    const descriptor = dataDescriptor(crc, size, zip64);
    yield descriptor;
    written.push({ name, crc, size, offset, zip64 });
    offset += header.length + size + descriptor.length;
  }
  yield* centralDirectory(written, offset, options.forceZip64 === true);
}

function localHeader(name: Buffer, zip64: boolean): Buffer {
  // ZIP64 local headers carry 0xFFFFFFFF sizes and an extra field; the real sizes come in the descriptor.
  const extra = zip64 ? zip64Extra([0, 0]) : Buffer.alloc(0);
  const b = Buffer.alloc(30);
  b.writeUInt32LE(0x04034b50, 0);
  b.writeUInt16LE(zip64 ? 45 : 20, 4);
  b.writeUInt16LE(FLAGS, 6);
  b.writeUInt16LE(0, 8); // stored
  b.writeUInt16LE(DOS_TIME, 10);
  b.writeUInt16LE(DOS_DATE, 12);
  b.writeUInt32LE(0, 14);
  b.writeUInt32LE(zip64 ? MAX32 : 0, 18);
  b.writeUInt32LE(zip64 ? MAX32 : 0, 22);
  b.writeUInt16LE(name.length, 26);
  b.writeUInt16LE(extra.length, 28);
  return Buffer.concat([b, name, extra]);
}

function dataDescriptor(crc: number, size: number, zip64: boolean): Buffer {
  const b = Buffer.alloc(zip64 ? 24 : 16);
  b.writeUInt32LE(0x08074b50, 0);
  b.writeUInt32LE(crc >>> 0, 4);
  if (zip64) {
    b.writeBigUInt64LE(BigInt(size), 8);
    b.writeBigUInt64LE(BigInt(size), 16);
  } else {
    b.writeUInt32LE(size, 8);
    b.writeUInt32LE(size, 12);
  }
  return b;
}

/** The ZIP64 extended information extra field (tag 0x0001) with these 8-byte values. */
function zip64Extra(values: readonly number[]): Buffer {
  const b = Buffer.alloc(4 + 8 * values.length);
  b.writeUInt16LE(0x0001, 0);
  b.writeUInt16LE(8 * values.length, 2);
  values.forEach((v, i) => b.writeBigUInt64LE(BigInt(v), 4 + 8 * i));
  return b;
}

function centralEntry(w: Written, force: boolean): Buffer {
  const big = (v: number) => force || w.zip64 || v >= MAX32;
  // The extra field holds exactly the values whose 4-byte field says 0xFFFFFFFF, in this order.
  const values = [...(big(w.size) ? [w.size, w.size] : []), ...(big(w.offset) ? [w.offset] : [])];
  const extra = values.length > 0 ? zip64Extra(values) : Buffer.alloc(0);
  const b = Buffer.alloc(46);
  b.writeUInt32LE(0x02014b50, 0);
  b.writeUInt16LE((3 << 8) | 45, 4); // made by: UNIX, so the attributes below read as a mode
  b.writeUInt16LE(extra.length > 0 ? 45 : 20, 6);
  b.writeUInt16LE(FLAGS, 8);
  b.writeUInt16LE(0, 10);
  b.writeUInt16LE(DOS_TIME, 12);
  b.writeUInt16LE(DOS_DATE, 14);
  b.writeUInt32LE(w.crc >>> 0, 16);
  b.writeUInt32LE(big(w.size) ? MAX32 : w.size, 20);
  b.writeUInt32LE(big(w.size) ? MAX32 : w.size, 24);
  b.writeUInt16LE(w.name.length, 28);
  b.writeUInt16LE(extra.length, 30);
  b.writeUInt32LE(0o100644 * 0x10000, 38); // a regular file, rw-r--r--
  b.writeUInt32LE(big(w.offset) ? MAX32 : w.offset, 42);
  return Buffer.concat([b, w.name, extra]);
}

function* centralDirectory(written: readonly Written[], start: number, force: boolean): Generator<Buffer> {
  let size = 0;
  for (const w of written) {
    const entry = centralEntry(w, force);
    size += entry.length;
    yield entry;
  }
  const zip64 = force || written.length >= MAX16 || start >= MAX32 || size >= MAX32 || written.some((w) => w.zip64);
  if (zip64) yield zip64End(written.length, size, start);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(zip64 ? MAX16 : written.length, 8);
  end.writeUInt16LE(zip64 ? MAX16 : written.length, 10);
  end.writeUInt32LE(zip64 ? MAX32 : size, 12);
  end.writeUInt32LE(zip64 ? MAX32 : start, 16);
  yield end;
}

/** The ZIP64 end of central directory record and its locator, which follow the central directory at `start + size`. */
function zip64End(count: number, size: number, start: number): Buffer {
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4); // the size of the rest of the record
  record.writeUInt16LE((3 << 8) | 45, 12);
  record.writeUInt16LE(45, 14);
  record.writeBigUInt64LE(BigInt(count), 24);
  record.writeBigUInt64LE(BigInt(count), 32);
  record.writeBigUInt64LE(BigInt(size), 40);
  record.writeBigUInt64LE(BigInt(start), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(start + size), 8);
  locator.writeUInt32LE(1, 16);
  return Buffer.concat([record, locator]);
}
