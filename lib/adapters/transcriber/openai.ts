import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { AppError } from '../../domain/errors';
import type { Transcriber, Transcription, Word } from '../../ports/transcriber';
import { createChunkedTranscriber, type ChunkingOptions, type ChunkRecognizer } from './chunked';

export interface OpenAiTranscriberOptions {
  /** Base URL of an OpenAI-compatible API, e.g. `https://api.openai.com/v1`; `/audio/transcriptions` is appended. */
  url: string;
  apiKey?: string;
  /** Default `whisper-1`. */
  model?: string;
  /** Attempts per chunk, the first included; default 4. */
  attempts?: number;
  /** First backoff; it doubles per attempt (with jitter). Default 1000. */
  retryBaseMs?: number;
  /** Longest wait between attempts, also for a server's Retry-After; default 60 000. */
  maxRetryDelayMs?: number;
  /** Default 10 000. */
  connectTimeoutMs?: number;
  /** Deadline for one chunk's request, upload to last response byte; default 300 000. Not retried: a slow server stays slow. */
  requestTimeoutMs?: number;
  /** Default 16 MiB. */
  maxResponseBytes?: number;
}

/** The openai Transcriber: chunks of the file to any OpenAI-compatible `/audio/transcriptions` endpoint. */
export function createOpenAiTranscriber(options: OpenAiTranscriberOptions & ChunkingOptions): Transcriber {
  return createChunkedTranscriber('openai', createOpenAiRecognizer(options), options);
}

/**
 * Transcribes one WAV chunk with `response_format=verbose_json` and word timestamps. Transient
 * failures (5xx, 429, 408, connection failures) are retried with backoff; after the last attempt,
 * and at once for any other 4xx, the chunk fails with a non-retriable AppError naming the server's
 * status and message: a transcription failure fails its file, not the job.
 */
export function createOpenAiRecognizer(options: OpenAiTranscriberOptions): ChunkRecognizer {
  const url = new URL(`${options.url.replace(/\/+$/, '')}/audio/transcriptions`);
  const model = options.model ?? 'whisper-1';
  const attempts = options.attempts ?? 4;
  const retryBaseMs = options.retryBaseMs ?? 1000;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
  const settings: PostSettings = {
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 300_000,
    maxResponseBytes: options.maxResponseBytes ?? 16 * 1024 * 1024,
  };

  return {
    async transcribeChunk(wavPath, { language, signal }) {
      const fields: [string, string][] = [
        ['model', model],
        ['response_format', 'verbose_json'],
        ['timestamp_granularities[]', 'word'],
        ['timestamp_granularities[]', 'segment'],
        ...(language ? [['language', language] as [string, string]] : []),
      ];
      for (let attempt = 1; ; attempt++) {
        let failure: string;
        let retryAfterMs: number | undefined;
        try {
          const answer = await postMultipart(url, fields, { name: 'file', path: wavPath, filename: 'chunk.wav' }, settings, signal);
          if (answer.status >= 200 && answer.status <= 299) return parseAnswer(answer.body, language);
          const message = serverMessage(answer.body);
          failure = `HTTP ${answer.status}${message ? `: ${message}` : ''}`;
          if (!isTransientStatus(answer.status)) throw refusal(answer.status, failure);
          retryAfterMs = parseRetryAfter(answer.retryAfter);
        } catch (err) {
          if (!(err instanceof TransientFailure)) throw err;
          failure = err.message;
        }
        if (attempt >= attempts) {
          throw new AppError('unavailable', `the transcription server failed ${attempt} times; last: ${failure}`, {
            retriable: false,
          });
        }
        const backoff = retryBaseMs * 2 ** (attempt - 1) * (0.75 + Math.random() / 2);
        await sleep(Math.min(retryAfterMs ?? backoff, maxRetryDelayMs), signal);
      }
    },
  };
}

const isTransientStatus = (status: number) => status >= 500 || status === 429 || status === 408;

function refusal(status: number, failure: string): AppError {
  const message = `the transcription server refused the request: ${failure}`;
  // A refused key is the deployment's fault, not the file's; 503 if it ever reaches an HTTP answer.
  const code = status === 401 || status === 403 ? 'unavailable' : status === 413 ? 'payload_too_large' : 'invalid_input';
  return new AppError(code, message, { retriable: false });
}

/** Retry-After is seconds or an HTTP date. */
function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new DOMException('the transcription was aborted', 'AbortError'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
  });
}

// ---- one request -----------------------------------------------------------------------------

/**
 * A failure worth another attempt: the connection, not the audio. It never leaves the retry loop,
 * which tells it by its class rather than by `retriable`: an audio chunk that cannot be read is a
 * retriable `internal_error` too, but one for the job's next attempt, not for this loop.
 */
class TransientFailure extends AppError {
  constructor(message: string) {
    super('unavailable', message, { retriable: true });
  }
}

interface PostSettings {
  headers: Record<string, string>;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  maxResponseBytes: number;
}
interface Answer {
  status: number;
  retryAfter?: string;
  body: Buffer;
}

/**
 * One multipart/form-data POST on `node:http`, the file streamed from disk with a Content-Length
 * (some servers refuse chunked uploads). Not undici/fetch: undici 7 turns a server closing right
 * after its answer into an uncaught exception (nodejs/undici#5360). Messages never name the
 * server's host: they reach API users as a file's error_message, and the host is the deployment's.
 */
async function postMultipart(
  url: URL,
  fields: [string, string][],
  file: { name: string; path: string; filename: string },
  settings: PostSettings,
  signal: AbortSignal,
): Promise<Answer> {
  signal.throwIfAborted();
  const boundary = `----media-project-${randomBytes(12).toString('hex')}`;
  const part = (disposition: string, extra = '') => `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n${extra}\r\n`;
  const head = Buffer.from(
    fields.map(([name, value]) => `${part(`name="${name}"`)}${value}\r\n`).join('') +
      part(`name="${file.name}"; filename="${file.filename}"`, 'Content-Type: audio/wav\r\n'),
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const { size } = await stat(file.path);
  const body = Readable.from(
    (async function* () {
      yield head;
      yield* createReadStream(file.path);
      yield tail;
    })(),
  );
  const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method: 'POST',
    // No agent: no pooled connection outlives the attempt, so a retry always gets a fresh one.
    agent: false,
    headers: {
      ...settings.headers,
      accept: 'application/json',
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + size + tail.length),
      connection: 'close',
    },
  });

  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, answer?: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(deadline);
      signal.removeEventListener('abort', onAbort);
      if (err) {
        req.destroy();
        body.destroy();
        reject(err);
      } else resolve(answer!);
    };
    const onAbort = () =>
      finish(signal.reason instanceof Error ? signal.reason : new DOMException('the transcription was aborted', 'AbortError'));
    const connectTimer = setTimeout(
      () => finish(new TransientFailure(`could not connect to the transcription server within ${settings.connectTimeoutMs / 1000} s`)),
      settings.connectTimeoutMs,
    );
    const deadline = setTimeout(
      () =>
        finish(
          new AppError('unavailable', `the transcription server did not answer within ${settings.requestTimeoutMs / 1000} s`, {
            retriable: false,
          }),
        ),
      settings.requestTimeoutMs,
    );
    req.on('socket', (socket) => socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer)));
    // Permanent: an 'error' with no listener would be an uncaught exception.
    req.on('error', (err) => finish(networkFailure(err)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received <= settings.maxResponseBytes) chunks.push(chunk);
        else
          finish(
            new AppError('unavailable', `the transcription server answered with more than ${settings.maxResponseBytes} bytes`, {
              retriable: false,
            }),
          );
      });
      res.on('error', () => undefined); // its 'close' without `complete` says it
      res.on('end', () =>
        finish(null, { status: res.statusCode ?? 0, retryAfter: header(res.headers['retry-after']), body: Buffer.concat(chunks) }),
      );
      res.on('close', () => {
        if (!res.complete) finish(new TransientFailure('the transcription server closed the connection before the end of its answer'));
      });
    });
    body.on('error', (err) => finish(new AppError('internal_error', `cannot read the audio chunk: ${err.message}`)));
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    else body.pipe(req);
  });
}

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
const TLS_FAILURE = /^EPROTO$|^ERR_(SSL|TLS)_|CERT|SIGNATURE|ISSUER/;

/** Connection failures are transient, except TLS ones: a bad certificate stays bad. */
function networkFailure(err: Error): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code && TLS_FAILURE.test(code)) {
    return new AppError('unavailable', `the TLS handshake with the transcription server failed (${code})`, { retriable: false });
  }
  if (code === 'ECONNREFUSED') return new TransientFailure('could not connect to the transcription server: connection refused');
  if (code === 'ECONNRESET') return new TransientFailure('the transcription server closed or reset the connection without answering');
  return new TransientFailure(`the request to the transcription server failed${code ? ` (${code})` : ''}`);
}

// ---- the answer ------------------------------------------------------------------------------

/** OpenAI's error body is `{error: {message}}`; other servers send `{detail}`, `{message}` or text. */
function serverMessage(body: Buffer): string {
  const text = body.toString('utf8').trim();
  try {
    const json = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown; message?: unknown };
    const candidate = typeof json.error === 'object' ? json.error?.message : (json.error ?? json.detail ?? json.message);
    if (typeof candidate === 'string') return candidate.slice(0, 300);
  } catch {
    // not JSON: the text itself, if short
  }
  return text.slice(0, 300);
}

interface VerboseJson {
  text?: unknown;
  language?: unknown;
  words?: unknown;
  segments?: unknown;
}
type OpenAiWord = { word: string; start: number; end: number };
type Segment = { start: number; end: number; avg_logprob: number };

function parseAnswer(body: Buffer, asked: string | null): Transcription {
  const bad = (what: string) => new AppError('unavailable', `the transcription server answered ${what}`, { retriable: false });
  let json: VerboseJson;
  try {
    json = JSON.parse(body.toString('utf8')) as VerboseJson;
  } catch {
    throw bad('with a body that is not JSON');
  }
  if (typeof json !== 'object' || json === null) throw bad('with JSON that is not an object');
  const language = asked ?? isoLanguage(json.language);
  if (json.words === undefined) {
    // Silence comes back without `words` from some servers; text without words means no word timing.
    if (typeof json.text === 'string' && json.text.trim() !== '')
      throw bad('without word timestamps (is timestamp_granularities[]=word supported?)');
    return { words: [], language };
  }
  if (!Array.isArray(json.words) || !json.words.every(isOpenAiWord)) throw bad('with a malformed `words` list');
  const segments = Array.isArray(json.segments) ? json.segments.filter(isSegment) : [];
  const turns = Array.isArray(json.segments) ? json.segments.filter(isSpeakerSegment) : [];
  const words = json.words
    .filter((w) => w.word.trim() !== '')
    .map((w): Word => ({
      text: w.word.trim(),
      start: w.start,
      end: Math.max(w.start, w.end),
      confidence: confidenceOf(w, segments),
      speaker: speakerOf(w, turns),
    }));
  return { words, language };
}

const isOpenAiWord = (w: unknown): w is OpenAiWord =>
  typeof w === 'object' &&
  w !== null &&
  typeof (w as OpenAiWord).word === 'string' &&
  isTime((w as OpenAiWord).start) &&
  isTime((w as OpenAiWord).end);
const isSegment = (s: unknown): s is Segment =>
  typeof s === 'object' &&
  s !== null &&
  isTime((s as Segment).start) &&
  isTime((s as Segment).end) &&
  Number.isFinite((s as Segment).avg_logprob);
/** A diarized segment (`diarized_json`, or a server that adds `speaker` to verbose_json's): who spoke then. */
type SpeakerSegment = { start: number; end: number; speaker: string };
const isSpeakerSegment = (s: unknown): s is SpeakerSegment =>
  typeof s === 'object' &&
  s !== null &&
  isTime((s as SpeakerSegment).start) &&
  isTime((s as SpeakerSegment).end) &&
  typeof (s as SpeakerSegment).speaker === 'string' &&
  (s as SpeakerSegment).speaker.trim() !== '';

/**
 * The speaker of the segment holding the word's middle, null when the server names none. Labels
 * are the server's per request ("A", "B" or names it was given), so with chunking the same person
 * may carry different labels in different chunks.
 */
function speakerOf(word: OpenAiWord, turns: SpeakerSegment[]): string | null {
  const middle = (word.start + word.end) / 2;
  return (
    turns
      .find((s) => s.start <= middle && middle <= s.end)
      ?.speaker.trim()
      .slice(0, 100) ?? null
  );
}

const isTime = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/**
 * OpenAI gives no per-word confidence. The segment around the word has `avg_logprob`, the mean
 * log-probability of its tokens: exp() of it is the segment's mean token probability, a fair
 * stand-in. Without segments: 1.
 */
function confidenceOf(word: OpenAiWord, segments: Segment[]): number {
  const middle = (word.start + word.end) / 2;
  const segment = segments.find((s) => s.start <= middle && middle <= s.end);
  if (!segment) return 1;
  return Math.round(Math.min(1, Math.max(0, Math.exp(segment.avg_logprob))) * 1000) / 1000;
}

/** Whisper's language names → ISO 639-1 (Whisper languages without such a code are left out). */
const LANGUAGE_CODES = new Map(
  (
    'english:en chinese:zh mandarin:zh german:de spanish:es castilian:es russian:ru korean:ko french:fr japanese:ja portuguese:pt ' +
    'turkish:tr polish:pl catalan:ca valencian:ca dutch:nl flemish:nl arabic:ar swedish:sv italian:it indonesian:id hindi:hi ' +
    'finnish:fi vietnamese:vi hebrew:he ukrainian:uk greek:el malay:ms czech:cs romanian:ro moldavian:ro moldovan:ro danish:da ' +
    'hungarian:hu tamil:ta norwegian:no thai:th urdu:ur croatian:hr bulgarian:bg lithuanian:lt latin:la maori:mi malayalam:ml ' +
    'welsh:cy slovak:sk telugu:te persian:fa latvian:lv bengali:bn serbian:sr azerbaijani:az slovenian:sl kannada:kn estonian:et ' +
    'macedonian:mk breton:br basque:eu icelandic:is armenian:hy nepali:ne mongolian:mn bosnian:bs kazakh:kk albanian:sq swahili:sw ' +
    'galician:gl marathi:mr punjabi:pa panjabi:pa sinhala:si sinhalese:si khmer:km shona:sn yoruba:yo somali:so afrikaans:af ' +
    'occitan:oc georgian:ka belarusian:be tajik:tg sindhi:sd gujarati:gu amharic:am yiddish:yi lao:lo uzbek:uz faroese:fo ' +
    'haitian:ht pashto:ps pushto:ps turkmen:tk nynorsk:nn maltese:mt sanskrit:sa luxembourgish:lb letzeburgesch:lb myanmar:my ' +
    'burmese:my tibetan:bo tagalog:tl malagasy:mg assamese:as tatar:tt lingala:ln hausa:ha bashkir:ba javanese:jv sundanese:su'
  )
    .split(' ')
    .map((pair) => pair.split(':') as [string, string]),
);

/** A code stays a code ("en", as some compatible servers answer); a name is looked up; else null. */
function isoLanguage(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const lower = value.trim().toLowerCase();
  if (/^[a-z]{2}$/.test(lower)) return lower;
  return LANGUAGE_CODES.get(lower.replace(/ creole$/, '')) ?? null;
}
