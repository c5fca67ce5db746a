import { cleanEnv, makeValidator, port, str, url } from 'envalid';
import { resolve } from 'node:path';
import { parseAllowlist } from './adapters/http/outbound-fetcher';

/**
 * Configuration from the environment (DESIGN §5). A malformed or unknown value stops start-up
 * with a message that names the variable; nothing downstream reads `process.env` directly.
 */

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

/** "90", "90s", "15m", "1h", "3d" → seconds. */
export function parseDurationSeconds(input: string): number {
  const m = DURATION.exec(input.trim());
  if (!m) throw new Error(`"${input}" is not a duration (examples: 90, 90s, 15m, 1h, 3d)`);
  return Number(m[1]) * UNIT_SECONDS[m[2] ?? 's'];
}

const duration = makeValidator<number>((input) => parseDurationSeconds(input));
const durationList = makeValidator<number[]>((input) => input.split(',').map((part) => parseDurationSeconds(part)));
const positiveInt = makeValidator<number>((input) => {
  const n = Number(input);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`"${input}" is not a positive whole number`);
  return n;
});
const nonNegativeInt = makeValidator<number>((input) => {
  const n = Number(input);
  if (!Number.isInteger(n) || n < 0) throw new Error(`"${input}" is not a whole number (0 or more)`);
  return n;
});
const splitList = (input: string) =>
  input
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const list = makeValidator<string[]>(splitList);
/** Within what a Kafka broker accepts by default (group.min/max.session.timeout.ms: 6 s to 30 min). */
const sessionTimeout = makeValidator<number>((input) => {
  const seconds = parseDurationSeconds(input);
  if (seconds < 6 || seconds > 1800) throw new Error(`"${input}" is not between 6s and 30m, what Kafka brokers accept by default`);
  return seconds;
});
/**
 * A MongoDB connection string as the driver reads it: several hosts (`mongodb://a,b,c/db?replicaSet=rs0`)
 * and `mongodb+srv://` are fine, which a WHATWG URL check refuses. Building a client parses and
 * checks every option without connecting (SRV records are looked up only at connect). The
 * message names the problem, never the string, which may hold a password.
 */
/**
 * BASE_URL: where clients reach the API, `/v1` included (upload and download URLs are made under
 * it). A gateway may put it under a path of its own, but it ends in `/v1` as every API path begins.
 */
const apiBaseUrl = makeValidator<string>((input) => {
  let parsed: URL;
  try {
    parsed = new URL(input);
  } catch {
    throw new Error(`"${input}" is not a URL (for example https://api.example.com/v1)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`"${input}" is not an http(s) URL`);
  if (!/\/v1\/*$/.test(parsed.pathname)) {
    throw new Error(`"${input}" does not end in /v1, where the API is (for example ${parsed.origin}/v1)`);
  }
  if (parsed.search || parsed.hash) throw new Error(`"${input}" has a query or fragment; give the base address alone`);
  return input;
});

const mongoUrl = makeValidator<string>((input) => {
  // Loaded only when MONGO_URL is set: the driver is heavy (see adapters/distributed.ts).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { checkMongoUrl } = require('./adapters/distributed') as typeof import('./adapters/distributed');
  try {
    checkMongoUrl(input);
  } catch (err) {
    throw new Error(`not a MongoDB connection string: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  return input;
});

const allowlist = makeValidator<string[]>((input) => {
  const entries = splitList(input);
  parseAllowlist(entries); // throws naming a malformed entry
  return entries;
});

export type Config = ReturnType<typeof loadConfig>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const raw = cleanEnv(
    // An empty variable is an unset one (compose's `${X:-}` passes optional settings through so).
    Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')),
    {
      PORT: port({ default: 8080 }),
      DATA_DIR: str({ default: './data' }),
      BASE_URL: apiBaseUrl({ default: undefined }),
      WEB_URL: url({ default: undefined }),
      ESDB_URL: str({ default: undefined }),
      KAFKA_BROKERS: list({ default: undefined }),
      KAFKA_TOPIC: str({ default: 'media-project-events' }),
      KAFKA_PARTITIONS: positiveInt({ default: 12 }),
      // How long a consumer group waits for a member that stopped heartbeating (killed, frozen)
      // before it gives the member's partitions to the others.
      KAFKA_SESSION_TIMEOUT: sessionTimeout({ default: 30 }),
      MONGO_URL: mongoUrl({ default: undefined }),
      TRANSCRIBER: str({ choices: ['openai', 'pocketsphinx', 'none'], default: 'none' }),
      TRANSCRIBER_URL: url({ default: undefined }),
      TRANSCRIBER_API_KEY: str({ default: undefined }),
      TRANSCRIBER_MODEL: str({ default: undefined }),
      AGENT_LLM_URL: url({ default: undefined }),
      AGENT_LLM_API_KEY: str({ default: undefined }),
      AGENT_MODELS_FILE: str({ default: undefined }),
      // The model AGENT_LLM_URL serves: its id in the catalog and the name sent upstream.
      AGENT_LLM_MODEL: str({ default: 'gpt-4o-mini' }),
      OUTBOUND_ALLOWLIST: allowlist({ default: [] }),
      SIGNING_SECRET: str({ default: undefined }),
      SECRETS_KEY: str({ default: undefined }),
      DOWNLOAD_URL_TTL: duration({ default: 3600 }),
      UPLOAD_URL_TTL: duration({ default: 3 * 3600 }),
      RATE_LIMIT_PER_MINUTE: positiveInt({ default: 600 }),
      // GET /published_projects/{slug}, per user (DESIGN §3), on top of the per-token limit.
      PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR: positiveInt({ default: 1000 }),
      WEB_FORM_RATE_LIMIT_PER_MINUTE: positiveInt({ default: 30 }),
      WEB_SESSION_TTL: duration({ default: 8 * 3600 }),
      TRUSTED_PROXY_HOPS: nonNegativeInt({ default: 0 }),
      WEBHOOK_RETRY_SCHEDULE: durationList({ default: undefined }),
      LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
      MAX_REQUEST_BYTES: positiveInt({ default: 1024 * 1024 }),
      MEDIA_MAX_BYTES: positiveInt({ default: 2 * 1024 ** 3 }),
      MEDIA_DOWNLOAD_TIMEOUT: duration({ default: 1800 }),
      // Upload bounds (issue 19), unset: sized to the open-file limit (services/command-api/upload-limits.ts):
      // PUTs receiving at once per drive and per process, the bytes a drive's PUTs in progress and an
      // import request's upload items may declare, the longest wait for the next byte of an upload
      // body, and connections per server.
      UPLOADS_PER_DRIVE: positiveInt({ default: undefined }),
      UPLOADS_PER_PROCESS: positiveInt({ default: undefined }),
      UPLOAD_BYTES_PER_DRIVE: positiveInt({ default: undefined }),
      UPLOAD_BYTES_PER_REQUEST: positiveInt({ default: 10 * 1024 ** 3 }),
      // Admission control: queued and running jobs one drive may have (429 beyond); 0 for no limit.
      MAX_UNFINISHED_JOBS_PER_DRIVE: nonNegativeInt({ default: 10_000 }),
      UPLOAD_IDLE_TIMEOUT: duration({ default: 30 }),
      MAX_CONNECTIONS: positiveInt({ default: undefined }),
      // Live job events (GET /v1/jobs/{id}/events): streams open at once per token, and how long one lasts.
      JOB_EVENTS_PER_TOKEN: positiveInt({ default: 20 }),
      JOB_EVENTS_MAX_DURATION: duration({ default: 3600 }),
      // Each job type's pool (DESIGN §8); PROCESSOR_CONCURRENCY is the import pool's older name.
      IMPORT_CONCURRENCY: positiveInt({ default: undefined }),
      PROCESSOR_CONCURRENCY: positiveInt({ default: undefined }),
      AGENT_CONCURRENCY: positiveInt({ default: 4 }),
      PUBLISH_CONCURRENCY: positiveInt({ default: 1 }),
      WORKER_ID: str({ default: undefined }),
      // Set by `serve` for its workers: the Unix socket of the events file's one writer.
      EVENTS_WRITER_SOCKET: str({ default: undefined }),
    },
    {
      reporter: ({ errors }) => {
        const entries = Object.entries(errors);
        if (entries.length === 0) return;
        throw new ConfigError(
          `invalid configuration: ${entries.map(([name, err]) => `${name}: ${(err as Error).message || 'missing or malformed'}`).join('; ')}`,
        );
      },
    },
  );
  if (raw.TRANSCRIBER === 'openai' && !raw.TRANSCRIBER_URL) {
    throw new ConfigError('invalid configuration: TRANSCRIBER_URL: required when TRANSCRIBER=openai');
  }
  if (raw.SIGNING_SECRET !== undefined && raw.SIGNING_SECRET.length < 16) {
    throw new ConfigError('invalid configuration: SIGNING_SECRET: must be at least 16 characters (32 random bytes recommended)');
  }
  if (raw.SECRETS_KEY !== undefined && raw.SECRETS_KEY.length < 32) {
    throw new ConfigError('invalid configuration: SECRETS_KEY: must be at least 32 characters (32 random bytes, base64, recommended)');
  }
  if (raw.UPLOAD_IDLE_TIMEOUT <= 0)
    throw new ConfigError('invalid configuration: UPLOAD_IDLE_TIMEOUT: must be longer than 0 (for example 30s)');
  const port_ = raw.PORT;
  return {
    port: port_,
    dataDir: raw.DATA_DIR,
    baseUrl: (raw.BASE_URL ?? `http://localhost:${port_}/v1`).replace(/\/+$/, ''),
    webUrl: (raw.WEB_URL ?? `http://localhost:${port_}`).replace(/\/+$/, ''),
    esdbUrl: raw.ESDB_URL,
    kafka: raw.KAFKA_BROKERS
      ? {
          brokers: raw.KAFKA_BROKERS,
          topic: raw.KAFKA_TOPIC,
          partitions: raw.KAFKA_PARTITIONS,
          sessionTimeoutMs: Math.round(raw.KAFKA_SESSION_TIMEOUT * 1000),
        }
      : undefined,
    mongoUrl: raw.MONGO_URL,
    transcriber: { kind: raw.TRANSCRIBER, url: raw.TRANSCRIBER_URL, apiKey: raw.TRANSCRIBER_API_KEY, model: raw.TRANSCRIBER_MODEL },
    agent: {
      llmUrl: raw.AGENT_LLM_URL,
      llmApiKey: raw.AGENT_LLM_API_KEY,
      llmModel: raw.AGENT_LLM_MODEL,
      modelsFile: raw.AGENT_MODELS_FILE,
    },
    outboundAllowlist: raw.OUTBOUND_ALLOWLIST,
    signingSecret: raw.SIGNING_SECRET,
    /** Seals the webhook secrets that events carry; unset: DATA_DIR/secrets.key, made on first use. */
    secretsKey: raw.SECRETS_KEY,
    downloadUrlTtlSeconds: raw.DOWNLOAD_URL_TTL,
    uploadUrlTtlSeconds: raw.UPLOAD_URL_TTL,
    rateLimitPerMinute: raw.RATE_LIMIT_PER_MINUTE,
    publishedProjectsPerHour: raw.PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR,
    web: {
      formsPerMinute: raw.WEB_FORM_RATE_LIMIT_PER_MINUTE,
      sessionTtlSeconds: raw.WEB_SESSION_TTL,
      trustedProxyHops: raw.TRUSTED_PROXY_HOPS,
    },
    webhookRetryScheduleSeconds: raw.WEBHOOK_RETRY_SCHEDULE,
    logLevel: raw.LOG_LEVEL,
    maxRequestBytes: raw.MAX_REQUEST_BYTES,
    mediaMaxBytes: raw.MEDIA_MAX_BYTES,
    mediaDownloadTimeoutSeconds: raw.MEDIA_DOWNLOAD_TIMEOUT,
    uploadLimits: {
      perDrive: raw.UPLOADS_PER_DRIVE,
      perProcess: raw.UPLOADS_PER_PROCESS,
      bytesPerDrive: raw.UPLOAD_BYTES_PER_DRIVE,
      idleTimeoutMs: Math.round(raw.UPLOAD_IDLE_TIMEOUT * 1000),
    },
    uploadBytesPerRequest: raw.UPLOAD_BYTES_PER_REQUEST,
    maxUnfinishedJobsPerDrive: raw.MAX_UNFINISHED_JOBS_PER_DRIVE,
    maxConnections: raw.MAX_CONNECTIONS,
    jobEvents: { maxStreamsPerToken: raw.JOB_EVENTS_PER_TOKEN, maxStreamMs: Math.round(raw.JOB_EVENTS_MAX_DURATION * 1000) },
    /**
     * Jobs each pool runs at once per processor: imports mostly wait (downloads, fsyncs, ffprobe
     * children), agents wait on a model, a render takes a core. 8 imports finished 2.7 times as
     * many per second as 4 on two cores (docs/decisions.md).
     */
    concurrency: {
      import: raw.IMPORT_CONCURRENCY ?? raw.PROCESSOR_CONCURRENCY ?? 8,
      agent: raw.AGENT_CONCURRENCY,
      publish: raw.PUBLISH_CONCURRENCY,
    },
    workerId: raw.WORKER_ID,
    eventsWriterSocket: raw.EVENTS_WRITER_SOCKET,
  };
}

/** A URL as it may be logged: without user name and password (MongoDB and EventStoreDB URLs carry them). */
const withoutCredentials = (url: string): string => url.replace(/\/\/[^/@]*@/, '//***@');

/**
 * What a process runs with, for its start-up line: the settings a first user or an operator
 * checks first, resolved as the process uses them. Never a secret: keys and the signing secret
 * appear only as whether they are set, connection strings without their credentials.
 */
export function effectiveConfig(config: Config) {
  const distributed = config.esdbUrl !== undefined || config.mongoUrl !== undefined || config.kafka !== undefined;
  return {
    mode: distributed ? 'distributed' : 'embedded',
    port: config.port,
    base_url: config.baseUrl,
    web_url: config.webUrl,
    data_dir: resolve(config.dataDir),
    event_store: config.esdbUrl ? withoutCredentials(config.esdbUrl) : 'sqlite',
    event_log: config.kafka ? `kafka ${config.kafka.brokers.join(',')} topic ${config.kafka.topic}` : 'sqlite',
    read_store: config.mongoUrl ? withoutCredentials(config.mongoUrl) : 'sqlite',
    transcriber: config.transcriber.kind,
    ...(config.transcriber.url && { transcriber_url: withoutCredentials(config.transcriber.url) }),
    ...(config.transcriber.kind === 'openai' && {
      transcriber_model: config.transcriber.model ?? 'whisper-1',
      transcriber_api_key: config.transcriber.apiKey ? 'set' : 'unset',
    }),
    outbound_allowlist: config.outboundAllowlist.length > 0 ? config.outboundAllowlist.join(',') : '(none: public addresses only)',
    signing_secret: config.signingSecret ? 'set' : 'kept in data_dir',
    log_level: config.logLevel,
    import_concurrency: config.concurrency.import,
  };
}
