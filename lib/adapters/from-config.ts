import type { MongoClient } from 'mongodb';
import { randomBytes } from 'node:crypto';
import { linkSync, mkdtempSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterMongo, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config';
import type { CacheStats } from '../observability/metrics';
import type { DeadLetterStore } from '../ports/dead-letters';
import type { EventLog, LogProducer } from '../ports/event-log';
import type { EventStore } from '../ports/event-store';
import type { ReadQueries, ReadStore } from '../ports/read-store';
import type { SearchIndex } from '../ports/search-index';
import type { SecretBox } from '../ports/secret-box';
import { createSqliteDeadLetterStore } from './embedded/dead-letters';
import { createEmbeddedEventLog } from './embedded/event-log';
import { createSqliteEventStore, type SqliteEventStore } from './embedded/event-store';
import type { ServedWriters } from './embedded/event-writer';
import { createSqliteReadStore } from './embedded/read-store';
import { createSqliteSearchIndex } from './embedded/search-index';
import { createFfprobeProber } from './ffmpeg/prober';
import { resolveFfmpegPaths } from './ffmpeg/binaries';
import { createOutboundFetcher, literalRefusal, parseAllowlist } from './http/outbound-fetcher';
import { createLocalBlobStore } from './local/blob-store';
import { createSecretBox } from './system/secret-box';
import { makePrivateDir, PRIVATE_FILE_MODE } from './local/private-files';
import { createTranscriber } from './transcriber/from-config';

/**
 * Builds adapters from configuration: embedded when a server is not configured, distributed when
 * it is. Composition roots (services' main.ts, bin/) pick the pieces they need; each returned
 * resource is closed by whoever opened it.
 */

/** The server adapters, loaded on first use only (see distributed.ts). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const distributed = (): typeof import('./distributed') => require('./distributed');

/**
 * The event store. Embedded, the file has one writer: the process given `serveWriters` (its Unix
 * socket, and whom to tell of the others' appends) commits for the processes that name that
 * socket in EVENTS_WRITER_SOCKET (`serve` and its workers); a process with neither (the admin
 * CLI) writes itself.
 */
export function openEventStore(config: Config, options: { serveWriters?: ServedWriters } = {}): EventStore | SqliteEventStore {
  if (config.esdbUrl) return distributed().esdbEventStore(config.esdbUrl);
  makePrivateDir(config.dataDir);
  return createSqliteEventStore({
    path: join(config.dataDir, 'events.sqlite'),
    ...(options.serveWriters ? { serveWriters: options.serveWriters } : {}),
    ...(config.eventsWriterSocket && !options.serveWriters ? { writerSocket: config.eventsWriterSocket } : {}),
  });
}

/**
 * Where the events file's writer listens for other processes: in DATA_DIR (0700) unless that
 * path is too long for a Unix socket (108 bytes on Linux), then in a private temporary folder.
 */
export function eventsWriterSocketPath(config: Config): string {
  const inDataDir = join(config.dataDir, 'events.sock');
  return Buffer.byteLength(inDataDir) <= 100 ? inDataDir : join(mkdtempSync(join(tmpdir(), 'mps-')), 'events.sock');
}

const isSqlite = (store: EventStore): store is SqliteEventStore => 'loadCheckpoint' in store;

/**
 * Where poison events go: a table beside the events (embedded), or a MongoDB collection next to
 * the read models (distributed), so operators can list, retry and drop them. With Kafka and a
 * `logger` (the services that write letters), each letter is also copied to
 * `<topic>.dead-letters` for whoever reads the stream.
 */
export function openDeadLetters(config: Config, readSide: ReadSide, logger?: Logger): DeadLetterStore & { close(): Promise<void> } {
  let store: DeadLetterStore & { close(): Promise<void> };
  if (readSide.mongo) {
    store = Object.assign(distributed().mongoDeadLetters(readSide.mongo), { close: async () => undefined });
  } else {
    makePrivateDir(config.dataDir);
    const sqlite = createSqliteDeadLetterStore({ path: join(config.dataDir, 'events.sqlite') });
    // A copy, not Object.assign onto `sqlite`: its close would then call itself (a stack overflow on every stop).
    store = { ...sqlite, close: async () => sqlite.close() };
  }
  return config.kafka && logger ? distributed().withKafkaDeadLetterCopies(store, config.kafka, logger) : store;
}

/** The log consumers read: Kafka when configured, else the embedded store's `$all`. */
export async function openEventLog(config: Config, store: EventStore, logger: Logger, deadLetters: DeadLetterStore): Promise<EventLog> {
  if (config.kafka) return distributed().kafkaEventLog(config.kafka, logger, deadLetters);
  if (!isSqlite(store)) throw new Error('invalid configuration: KAFKA_BROKERS: required when ESDB_URL is set');
  return createEmbeddedEventLog({ store, logger, deadLetters });
}

export async function openLogProducer(config: Config, logger: Logger): Promise<LogProducer> {
  if (!config.kafka) throw new Error('invalid configuration: KAFKA_BROKERS: required to publish the log');
  return distributed().kafkaProducer(config.kafka, logger);
}

/**
 * The query side's stores: the read models and the search index, in MongoDB or in SQLite files.
 * `queries` is what the APIs answer from: in SQLite a snapshot at most 20 ms old (see
 * `snapshotQueries`), in MongoDB the store itself.
 */
export type ReadSide = {
  read: ReadStore;
  queries: ReadQueries;
  search: SearchIndex;
  mongo?: MongoClient;
  /** The in-memory caches of `queries`, by name, for `Metrics.watchCache`. */
  caches: Readonly<Record<string, () => CacheStats>>;
  close(): Promise<void>;
};

/**
 * `moves`: how often the projector's watermark moved, when another process projects (the
 * all-in-one mode's worker): the API's snapshot then starts again at once (read-your-writes).
 */
export async function openReadStore(config: Config, options: { moves?: () => number } = {}): Promise<ReadSide> {
  if (config.mongoUrl) {
    const { mongo, read, search } = await distributed().mongoReadSide(config.mongoUrl);
    return { read, queries: read, search, mongo, caches: {}, close: () => mongo.close() };
  }
  makePrivateDir(config.dataDir);
  const read = createSqliteReadStore({ path: join(config.dataDir, 'read.sqlite') });
  const search = createSqliteSearchIndex({ path: join(config.dataDir, 'search.sqlite') });
  return {
    read,
    queries: read.snapshotQueries(undefined, undefined, options.moves),
    search,
    caches: {
      document_texts: read.snapshotMemo,
    },
    async close() {
      await search.close();
      await read.close();
    },
  };
}

export function openRateLimiter(config: Config, mongo?: MongoClient): RateLimiterAbstract {
  const options = { points: config.rateLimitPerMinute, duration: 60, keyPrefix: 'api' };
  return mongo ? new RateLimiterMongo({ ...options, storeClient: mongo }) : new RateLimiterMemory(options);
}

/** GET /published_projects/{slug}: per user over a one-hour window; shared by replicas through MongoDB. */
export function openPublishedProjectsLimiter(config: Config, mongo?: MongoClient): RateLimiterAbstract {
  const options = { points: config.publishedProjectsPerHour, duration: 3600, keyPrefix: 'published-projects' };
  return mongo ? new RateLimiterMongo({ ...options, storeClient: mongo }) : new RateLimiterMemory(options);
}

/** Per client address, the web forms (`POST /login`, `/import`) in a one-minute window; shared by replicas through MongoDB. */
export function openWebFormLimiter(config: Config, mongo?: MongoClient): RateLimiterAbstract {
  const options = { points: config.web.formsPerMinute, duration: 60, keyPrefix: 'web-forms' };
  return mongo ? new RateLimiterMongo({ ...options, storeClient: mongo }) : new RateLimiterMemory(options);
}

/** `logger` receives what ffprobe says of files it cannot read (users get a fixed message). */
export function openMedia(config: Config, logger?: Logger) {
  const { ffmpeg, ffprobe } = resolveFfmpegPaths();
  return {
    blobs: openBlobStore(config),
    prober: createFfprobeProber({ ffprobePath: ffprobe, logger }),
    fetcher: createOutboundFetcher({ allowlist: config.outboundAllowlist, userAgent: 'Servicebot/1.0' }),
    transcriber: createTranscriber(config.transcriber, { ffmpegPath: ffmpeg }),
  };
}

/** Media blobs: a folder under DATA_DIR (a volume every service mounts in the distributed mode). */
export const openBlobStore = (config: Config) =>
  createLocalBlobStore({ root: join(config.dataDir, 'blobs'), maxBytes: config.mediaMaxBytes });

/**
 * The key of signed URLs: SIGNING_SECRET, else one made on first start and kept in
 * DATA_DIR/signing.key, so URLs stay valid across restarts of the all-in-one service. Services
 * that run apart must share SIGNING_SECRET (the compose file sets it).
 */
export function openSigningSecret(config: Config): string {
  return config.signingSecret ?? keyFile(config, 'signing.key');
}

/**
 * What seals the webhook secrets in drive events: SECRETS_KEY, else DATA_DIR/secrets.key, made
 * on first use (0600). Never in the event store or the log, so neither holds a usable secret.
 * Every process that creates drives or signs deliveries must have the same key.
 */
export function openSecretBox(config: Config): SecretBox {
  return createSecretBox(config.secretsKey ?? keyFile(config, 'secrets.key'));
}

/** A random key kept in DATA_DIR/`name` (0600); whoever makes it first wins, the others read theirs. */
function keyFile(config: Config, name: string): string {
  const path = join(config.dataDir, name);
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  makePrivateDir(config.dataDir);
  // Written whole under another name, then linked: a process that finds the file finds it full.
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temp, `${randomBytes(32).toString('base64url')}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  try {
    linkSync(temp, path);
  } catch (err) {
    // Another process of this DATA_DIR made it first: theirs is the one.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temp);
  }
  return readFileSync(path, 'utf8').trim();
}

/** The command API's early check of media and callback URLs against the outbound guard. */
export function openUrlRefusal(config: Config): (url: string) => string | null {
  const allowlist = parseAllowlist(config.outboundAllowlist);
  return (url) => literalRefusal(url, allowlist);
}
