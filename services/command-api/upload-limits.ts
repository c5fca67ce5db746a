import { openFileLimit } from '../../lib/adapters/system/open-files';
import { AppErrorWithHeaders } from '../../lib/http/middleware';

/** How much upload traffic one command-API process receives at once (issue 19). */
export type UploadLimits = {
  /** PUT bodies of one drive being received at once. */
  readonly perDrive: number;
  /** PUT bodies being received at once in this process, whatever their drive. */
  readonly perProcess: number;
  /** Bytes the PUTs of one drive being received may declare together (Content-Length, or the rest of the file). */
  readonly bytesPerDrive: number;
  /** The longest wait for the next byte of an upload body: the PUT is then closed, its bytes kept to resume from. */
  readonly idleTimeoutMs: number;
};

/**
 * Limits sized to the process's open-file limit (each upload holds a socket and a file): a
 * quarter of it for uploads (16 to 1,024), half of those for one drive, at most 100 (the upload
 * items one import may have, so that a job's uploads can all run at once); 10 GiB in progress per
 * drive (what one import may declare); 30 s without a byte. `overrides` are the configured ones.
 */
export function uploadLimits(overrides: Partial<UploadLimits> = {}, openFiles = openFileLimit()): UploadLimits {
  const perProcess = overrides.perProcess ?? (openFiles === null ? 256 : Math.min(1024, Math.max(16, Math.floor(openFiles / 4))));
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  return {
    perDrive: Math.min(100, Math.max(1, Math.floor(perProcess / 2))),
    bytesPerDrive: 10 * 1024 ** 3,
    idleTimeoutMs: 30_000,
    ...defined,
    perProcess,
  };
}

/** Seconds a refused PUT is asked to wait: an upload in progress takes a while to end. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Admission of upload bodies, counted in this process: `admit` answers the release to call once
 * the body is read (or refused), or throws a 429 when the drive has too many PUTs or bytes in
 * progress, a 503 when the process has. Both carry Retry-After; the upload resumes where it was.
 * A slow PUT then holds one slot of its own drive, never the others' descriptors.
 */
export function createUploadGate(limits: UploadLimits) {
  const drives = new Map<string, { puts: number; bytes: number }>();
  let total = 0;
  return {
    admit(driveId: string, bytes: number): () => void {
      const drive = drives.get(driveId) ?? { puts: 0, bytes: 0 };
      if (drive.puts >= limits.perDrive)
        throw driveLimit(
          `${drive.puts} uploads of this drive are being received (at most ${limits.perDrive} at once)`,
          drive.puts,
          limits.perDrive,
        );
      if (drive.puts > 0 && drive.bytes + bytes > limits.bytesPerDrive) {
        throw driveLimit(
          `the uploads of this drive being received declare ${drive.bytes} bytes; ${bytes} more would pass the ${limits.bytesPerDrive} allowed at once`,
          drive.puts,
          limits.perDrive,
        );
      }
      if (total >= limits.perProcess) throw busy(`the server is receiving ${total} uploads, its most at once`);
      drive.puts += 1;
      drive.bytes += bytes;
      total += 1;
      drives.set(driveId, drive);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        drive.puts -= 1;
        drive.bytes -= bytes;
        total -= 1;
        if (drive.puts === 0) drives.delete(driveId);
      };
    },
  };
}

export type UploadGate = ReturnType<typeof createUploadGate>;

const retryAfter = { 'Retry-After': String(RETRY_AFTER_SECONDS) };

const driveLimit = (why: string, inFlight: number, limit: number) =>
  new AppErrorWithHeaders('rate_limit_exceeded', `${why}; retry after the Retry-After seconds, continuing from the upload's Range`, {
    ...retryAfter,
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': String(Math.max(0, limit - inFlight)),
    'X-RateLimit-Consumed': String(inFlight),
  });

const busy = (why: string) =>
  new AppErrorWithHeaders('unavailable', `${why}; retry after the Retry-After seconds, continuing from the upload's Range`, retryAfter);
