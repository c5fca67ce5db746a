import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';

/**
 * The floor of the download figure: a bare static server of one file (`FILE`) on node:http with
 * single byte ranges, in its own process; what `curl` gets from it is what the machine can move.
 * `PORT` from the environment; prints `ready <port>` once listening.
 */
const file = process.env.FILE!;
const size = statSync(file).size;
const RANGE = /^bytes=(\d*)-(\d*)$/;

createServer((req, res) => {
  const m = RANGE.exec(req.headers.range ?? '');
  let [start, end] = [0, size - 1];
  if (m) {
    [start, end] =
      m[1] === '' ? [size - Number(m[2]), size - 1] : [Number(m[1]), m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)];
    res.statusCode = 206;
    res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  }
  res.setHeader('Content-Length', end - start + 1);
  res.setHeader('Content-Type', 'video/mp4');
  // The same 1 MiB reads as the service's blob store: the figure compares serving, not read sizes.
  createReadStream(file, { start, end, highWaterMark: 1 << 20 }).pipe(res);
}).listen(Number(process.env.PORT ?? 0), '127.0.0.1', function (this: import('node:net').Server) {
  const address = this.address() as import('node:net').AddressInfo;
  process.stdout.write(`ready ${address.port}\n`);
});
