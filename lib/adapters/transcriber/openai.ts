import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { AppError } from '../../domain/errors';
import type { Transcriber, Transcription, Word } from '../../ports/transcriber';
import { postOnce, upstreamOf, withRetries, type UpstreamBody, type UpstreamOptions } from '../http/upstream';
import { createChunkedTranscriber, type ChunkingOptions, type ChunkRecognizer } from './chunked';

/**
 * Defaults: 4 attempts, back-off from 1 s up to 60 s, connect 10 s, a chunk's request 300 s (not
 * retried: a slow server stays slow), answers up to 16 MiB.
 */
export interface OpenAiTranscriberOptions extends UpstreamOptions {
  /** Default `whisper-1`. */
  model?: string;
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
  const model = options.model ?? 'whisper-1';
  const { url, policy, settings } = upstreamOf(options, '/audio/transcriptions', {
    server: 'the transcription server',
    attempts: 4,
    retryBaseMs: 1000,
    maxRetryDelayMs: 60_000,
    connectTimeoutMs: 10_000,
    requestTimeoutMs: 300_000,
    retryDeadline: false,
    maxResponseBytes: 16 * 1024 * 1024,
  });

  return {
    async transcribeChunk(wavPath, { language, signal }) {
      const fields: [string, string][] = [
        ['model', model],
        ['response_format', 'verbose_json'],
        ['timestamp_granularities[]', 'word'],
        ['timestamp_granularities[]', 'segment'],
        ...(language ? [['language', language] as [string, string]] : []),
      ];
      const send = async () =>
        postOnce(url, await multipart(fields, { name: 'file', path: wavPath, filename: 'chunk.wav' }), settings, signal);
      return withRetries(policy, signal, send, {
        accept: (answer) => parseAnswer(answer.body, language),
        refused: refusal,
        exhausted: (attempts, failure) =>
          new AppError('unavailable', `the transcription server failed ${attempts} times; last: ${failure}`, { retriable: false }),
      });
    },
  };
}

function refusal(status: number, failure: string): AppError {
  const message = `the transcription server refused the request: ${failure}`;
  // A refused key is the deployment's fault, not the file's; 503 if it ever reaches an HTTP answer.
  const code = status === 401 || status === 403 ? 'unavailable' : status === 413 ? 'payload_too_large' : 'invalid_input';
  return new AppError(code, message, { retriable: false });
}

/** A multipart/form-data body of `fields` and the file streamed from disk, with its length. */
async function multipart(fields: [string, string][], file: { name: string; path: string; filename: string }): Promise<UpstreamBody> {
  const boundary = `----media-project-${randomBytes(12).toString('hex')}`;
  const part = (disposition: string, extra = '') => `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n${extra}\r\n`;
  const head = Buffer.from(
    fields.map(([name, value]) => `${part(`name="${name}"`)}${value}\r\n`).join('') +
      part(`name="${file.name}"; filename="${file.filename}"`, 'Content-Type: audio/wav\r\n'),
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const { size } = await stat(file.path);
  const stream = Readable.from(
    (async function* () {
      yield head;
      yield* createReadStream(file.path);
      yield tail;
    })(),
  );
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    stream,
    length: head.length + size + tail.length,
    readFailure: (err) => new AppError('internal_error', `cannot read the audio chunk: ${err.message}`),
  };
}

// ---- the answer ------------------------------------------------------------------------------

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
