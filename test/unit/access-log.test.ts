import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { AppError } from '../../lib/domain/errors';
import { accessLogger, errorResponse, infoLine } from '../../lib/http/middleware';
import { LOG_OPTIONS, prettyLine, prettyLines } from '../../lib/logger';
import { waitFor } from '../fixtures/wait';

/** A pino logger as createLogger makes one (JSON), writing into `lines`. */
function loggerInto(lines: string[], level = 'info') {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return pino({ level, base: { service: 'query-api' }, ...LOG_OPTIONS }, sink);
}

describe('access log', () => {
  const record = {
    requestId: 'req-1',
    method: 'GET',
    path: '/v1/jobs/a "quoted" \\ path/ünï',
    status: 200,
    started: performance.now(),
    driveId: 'drive-1',
  };

  it('writes the line pino would write for the same fields, on one line', async () => {
    const lines: string[] = [];
    const logger = loggerInto(lines);
    const { requestId, method, path, status, driveId } = record;
    logger.info({ request_id: requestId, method, path, status, ms: 0, drive_id: driveId }, 'request');
    accessLogger(logger)(record);
    await waitFor(() => lines.length === 2, { what: 'both lines' });
    const [pinos, ours] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(typeof ours.ms, 'number');
    assert.ok(Math.abs(Date.parse(ours.time as string) - Date.now()) < 5000);
    assert.deepEqual(Object.keys(ours), Object.keys(pinos), 'the same keys in the same order');
    assert.deepEqual({ ...ours, time: 0, ms: 0 }, { ...pinos, time: 0, ms: 0 });
  });

  it('writes an info line of a hot path as pino would write it, leaving undefined fields out', async () => {
    const lines: string[] = [];
    const logger = loggerInto(lines);
    const fields = { request_id: 'req-1', job_id: 'job "1" \\ ünï', project_id: undefined };
    logger.info(fields, 'import accepted');
    infoLine(logger, 'import accepted')(fields);
    await waitFor(() => lines.length === 2, { what: 'both lines' });
    const [pinos, ours] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.ok(Math.abs(Date.parse(ours.time as string) - Date.now()) < 5000);
    assert.deepEqual(Object.keys(ours), Object.keys(pinos), 'the same keys in the same order');
    assert.deepEqual({ ...ours, time: 0 }, { ...pinos, time: 0 });
    assert.ok(!('project_id' in ours));
  });

  it("keeps the order in which a logger's template lines were made, whichever template made them", async () => {
    const lines: string[] = [];
    const logger = loggerInto(lines);
    const access = accessLogger(logger);
    const accepted = infoLine(logger, 'import accepted');
    for (let i = 0; i < 50; i++) {
      accepted({ request_id: `req-${i}` });
      access({ ...record, requestId: `req-${i}` });
    }
    await waitFor(() => lines.length >= 100, { what: '100 lines' });
    assert.deepEqual(
      lines.map((line) => {
        const { request_id, msg } = JSON.parse(line) as { request_id: string; msg: string };
        return `${request_id} ${msg}`;
      }),
      Array.from({ length: 50 }, (_, i) => [`req-${i} import accepted`, `req-${i} request`]).flat(),
    );
  });

  it('writes the lines of many requests in their order, each once', async () => {
    const lines: string[] = [];
    const log = accessLogger(loggerInto(lines));
    for (let i = 0; i < 500; i++) log({ ...record, requestId: `req-${i}` });
    await waitFor(() => lines.length >= 500, { what: '500 lines' });
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { request_id: string }).request_id),
      Array.from({ length: 500 }, (_, i) => `req-${i}`),
    );
  });

  it('leaves drive_id out when the request had no principal, as pino leaves out undefined', async () => {
    const lines: string[] = [];
    accessLogger(loggerInto(lines))({ ...record, driveId: undefined });
    await waitFor(() => lines.length === 1, { what: 'the line' });
    assert.ok(!('drive_id' in JSON.parse(lines[0])));
  });

  it('writes ISO times and level names, and the error code and message of a 4xx or 5xx answer, as pino would', async () => {
    const lines: string[] = [];
    const logger = loggerInto(lines);
    const error = { code: 'invalid_input', message: 'add_media is required: "give" one' };
    const { requestId, method, path, driveId } = record;
    logger.info(
      { request_id: requestId, method, path, status: 400, ms: 0, drive_id: driveId, error_code: error.code, error_message: error.message },
      'request',
    );
    accessLogger(logger)({ ...record, status: 400, error });
    await waitFor(() => lines.length === 2, { what: 'both lines' });
    const [pinos, ours] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(ours.level, 'info');
    assert.match(String(ours.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual({ ...ours, time: 0, ms: 0 }, { ...pinos, time: 0, ms: 0 });
    assert.equal(ours.error_code, 'invalid_input');
    assert.equal(ours.error_message, error.message);
  });

  it('logs an expected error (contention, a refusal) by code and message without a stack; a bug with its stack', async () => {
    const lines: string[] = [];
    const logger = loggerInto(lines, 'warn');
    logger.warn({ err: new AppError('unavailable', 'too many concurrent changes to job-1; try again', { retriable: true }) }, 'retrying');
    logger.error({ err: new TypeError('x is undefined') }, 'request failed');
    await waitFor(() => lines.length === 2, { what: 'both lines' });
    const [expected, bug] = lines.map((line) => JSON.parse(line) as { level: string; err: Record<string, unknown> });
    assert.deepEqual(expected.err, { type: 'AppError', code: 'unavailable', message: 'too many concurrent changes to job-1; try again' });
    assert.equal(expected.level, 'warn');
    assert.match(String(bug.err.stack), /TypeError: x is undefined\n\s+at /);
  });

  it('logs a 503 unavailable as a warning with its cause and no stack, an unexpected error as an error with its stack', async () => {
    const lines: string[] = [];
    const logger = loggerInto(lines, 'info');
    const fault = new AppError('unavailable', 'the event store is read-only', { retriable: true });
    fault.cause = new Error('/data/events.sqlite (SQLITE_READONLY)');
    assert.equal(errorResponse(fault, () => logger).status, 503);
    assert.equal(errorResponse(new TypeError('x is undefined'), () => logger).status, 500);
    await waitFor(() => lines.length === 2, { what: 'both lines' });
    const [expected, bug] = lines.map(
      (line) => JSON.parse(line) as { level: string; msg: string; cause?: string; err: Record<string, unknown> },
    );
    assert.equal(expected.level, 'warn');
    assert.equal(expected.cause, '/data/events.sqlite (SQLITE_READONLY)');
    assert.equal(expected.err.stack, undefined);
    assert.equal(bug.level, 'error');
    assert.match(String(bug.err.stack), /TypeError: x is undefined\n\s+at /);
  });

  it('reads as a short line on a terminal: time, level, service, message, fields', async () => {
    const written: string[] = [];
    const logger = pino(
      { level: 'info', base: { service: 'serve' }, ...LOG_OPTIONS },
      prettyLines({ write: (t: string) => written.push(t) }),
    );
    logger.info({ port: 8080, data_dir: './data' }, 'listening');
    accessLogger(logger)({ ...record, path: '/v1/status', status: 401, error: { code: 'unauthorized', message: 'no token' } });
    await waitFor(() => written.join('').split('\n').length >= 3, { what: 'two lines' });
    const [listening, access] = written.join('').split('\n');
    assert.match(listening, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}serve: listening port=8080 data_dir=\.\/data$/);
    assert.match(
      access,
      /INFO {2}serve: request request_id=req-1 method=GET path=\/v1\/status status=401 ms=[\d.]+ drive_id=drive-1 error_code=unauthorized error_message="no token"$/,
    );
    assert.equal(prettyLine('not json'), 'not json\n');
  });

  it('writes nothing above the info level', async () => {
    const lines: string[] = [];
    accessLogger(loggerInto(lines, 'warn'))(record);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(lines, []);
  });

  it('writes what is waiting when the process exits at once', () => {
    const script = [
      `const { createLogger } = require(${JSON.stringify(join(__dirname, '../../lib/logger'))});`,
      `const { accessLogger } = require(${JSON.stringify(join(__dirname, '../../lib/http/middleware'))});`,
      "const log = accessLogger(createLogger('info', 'exit-test'));",
      "log({ requestId: 'last-words', method: 'GET', path: '/', status: 200, started: performance.now(), driveId: undefined });",
      'process.exit(0);',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
    assert.match(out, /"request_id":"last-words"/);
    assert.match(out, /^\{"level":"info","time":"\d{4}-/, 'JSON, as stdout is not a terminal');
  });
});
