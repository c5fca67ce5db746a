import pino, { type DestinationStream, type Logger } from 'pino';
import { AppError } from './domain/errors';

/**
 * Logs to stdout, one line per event; the level comes from LOG_LEVEL. Each line is JSON with an
 * ISO time and the level's name (`{"level":"info","time":"2025-…Z",…}`), or, on a terminal, a
 * short readable line (`prettyLines`). Written asynchronously: a synchronous write per line cost
 * about a tenth of the accept path's CPU. What is still buffered is flushed when the process exits.
 */
export type LogFormat = 'json' | 'pretty';

export const createLogger = (level: string, service: string, format: LogFormat = defaultLogFormat()): Logger => {
  const destination = pino.destination({ sync: false });
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // not writable any more (stdout closed): nothing left to do
    }
  });
  return pino({ level, base: { service }, ...LOG_OPTIONS }, format === 'pretty' ? prettyLines(destination) : destination);
};

/** Readable lines where a person reads them (stdout is a terminal), JSON where a machine does. */
export const defaultLogFormat = (): LogFormat => (process.stdout.isTTY ? 'pretty' : 'json');

/**
 * Every logger's options. An expected error (an AppError of the taxonomy other than
 * `internal_error`: a refusal, a conflict to retry, contention) is logged by its code and message
 * alone: its stack says nothing a reader can act on, and a busy upload once logged eleven.
 */
export const LOG_OPTIONS = {
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label: string) => ({ level: label }) },
  serializers: { err: serializeError },
} satisfies pino.LoggerOptions;

function serializeError(err: unknown): unknown {
  if (err instanceof AppError && err.code !== 'internal_error') return { type: err.name, code: err.code, message: err.message };
  return pino.stdSerializers.err(err as Error);
}

const SHOWN_APART = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'err']);

/**
 * A destination that turns pino's JSON lines into `12:00:01.234 INFO  serve: message key=value`,
 * an error's stack below its line. Takes whole lines, as pino and the template lines write them
 * (several at once); anything that is not a JSON object goes through as it is.
 */
export function prettyLines(out: DestinationStream & { flushSync?(): void }): DestinationStream & { flushSync?(): void } {
  return {
    write: (text: string) => out.write(text.split('\n').filter(Boolean).map(prettyLine).join('')),
    flushSync: () => out.flushSync?.(),
  };
}

export function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${line}\n`;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : String(entry.time ?? '');
  const fields = Object.entries(entry)
    .filter(([key]) => !SHOWN_APART.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
  const err = entry.err as { type?: string; code?: string; message?: string; stack?: string } | undefined;
  const errText = err ? ` ${err.code ?? err.type ?? 'error'}: ${err.message ?? ''}` : '';
  const head = `${time} ${String(entry.level).toUpperCase().padEnd(5)} ${entry.service ?? ''}: ${entry.msg ?? ''}${errText}`;
  const stack = err?.stack ? `\n${err.stack.split('\n').slice(1).join('\n')}` : '';
  return `${[head, ...fields].join(' ')}${stack}\n`;
}
