import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteSearchIndex } from '../lib/adapters/embedded/search-index';
import type { SearchEntry, SearchIndex } from '../lib/ports/search-index';

/**
 * Search latency on the embedded index at the size DESIGN §7 plans for one drive: 10,000
 * projects with their media and 1,000 hours of transcripts (9,000 words an hour drawn from a few
 * thousand made-up words with a Zipf-like distribution, so some words are everywhere and most are
 * rare), plus a smaller second drive that every search must leave out. Everything is generated
 * from a fixed seed, so two runs search the same text. Queries are words and 2–3 word phrases
 * that occur in the transcripts, sort relevance, limit 30, one at a time.
 *
 * `npx tsx bench/search.ts` prints the figures; BENCH_SEARCH_PROJECTS and BENCH_SEARCH_HOURS
 * change the size.
 */

export type Latency = { p50: number; p99: number; mean: number };
export type SearchFigures = { projects: number; hours: number; entries: number; seedSeconds: number; oneWord: Latency; phrase: Latency };
export type SearchBenchOptions = { projects?: number; hours?: number; queries?: number };

const WORDS_PER_HOUR = 9000;
const VOCABULARY = 4000;
const NAME_WORDS = (
  'harbor summer river studio city night morning story voice field market garden winter forest coast bridge ' +
  'station kitchen island valley school office festival concert island desert mountain tower village street'
).split(' ');
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'do', 'fe', 'gu', 'hi', 'ja', 'bo', 'ce', 'wy'];

/** mulberry32: small, fast and deterministic. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function vocabulary(random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < VOCABULARY) {
    const length = 2 + Math.floor(random() * 3);
    words.add(Array.from({ length }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join(''));
  }
  return [...words];
}

/** Draws ranks with probability proportional to 1 / (rank + 1). */
function zipf(size: number, random: () => number): () => number {
  const cdf = new Float64Array(size);
  let total = 0;
  for (let r = 0; r < size; r += 1) cdf[r] = total += 1 / (r + 1);
  return () => {
    const x = random() * total;
    let [lo, hi] = [0, size - 1];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

type Corpus = { words: string[]; draw: () => number; random: () => number; used: Uint8Array; phrases: string[][] };

/** An hour of transcript; keeps `take` random 2–3 word phrases of it as queries. */
function hourOfSpeech(corpus: Corpus, take: number): string {
  const ranks = Array.from({ length: WORDS_PER_HOUR }, corpus.draw);
  for (const r of ranks) corpus.used[r] = 1;
  for (let k = 0; k < take; k += 1) {
    const at = Math.floor(corpus.random() * (WORDS_PER_HOUR - 3));
    corpus.phrases.push(ranks.slice(at, at + 2 + Math.floor(corpus.random() * 2)).map((r) => corpus.words[r]));
  }
  return ranks.map((r, i) => (i % 15 === 14 ? `${corpus.words[r]}.` : corpus.words[r])).join(' ');
}

/** One drive: a project each, two media each, a folder every 25th and a composition every 10th; `hours` media carry a transcript. */
async function seedDrive(index: SearchIndex, driveId: string, projects: number, hours: number, corpus: Corpus, phrasesPerHour: number) {
  const at = (i: number) => new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();
  const name = (i: number) => `${NAME_WORDS[i % NAME_WORDS.length]} ${NAME_WORDS[(i * 7 + 3) % NAME_WORDS.length]} ${i}`;
  const mediaCount = projects * 2;
  const every = hours > 0 ? Math.max(1, Math.floor(mediaCount / hours)) : Infinity;
  let batch: SearchEntry[] = [];
  let batchWords = 0;
  let entries = 0;
  const add = async (entry: SearchEntry) => {
    batch.push(entry);
    entries += 1;
    batchWords += entry.content ? WORDS_PER_HOUR : 10;
    // About 250,000 words a transaction: few commits, bounded memory.
    if (batchWords < 250_000) return;
    await index.upsert(batch);
    [batch, batchWords] = [[], 0];
  };
  let transcripts = 0;
  for (let p = 0; p < projects; p += 1) {
    const project_id = `${driveId}-p${p}`;
    await add({ id: `project:${project_id}`, drive_id: driveId, kind: 'project', name: name(p), project_id, updated_at: at(p) });
    if (p % 25 === 0)
      await add({
        id: `folder:${project_id}`,
        drive_id: driveId,
        kind: 'project_folder',
        name: `${name(p + 1)} folder`,
        updated_at: at(p),
      });
    if (p % 10 === 0) {
      const composition_id = `${project_id}-c`;
      await add({
        id: `composition:${composition_id}`,
        drive_id: driveId,
        kind: 'composition',
        name: `${name(p)} cut`,
        project_id,
        composition_id,
        updated_at: at(p),
      });
    }
    for (let m = 0; m < 2; m += 1) {
      const withText = (p * 2 + m) % every === 0 && transcripts < hours;
      transcripts += withText ? 1 : 0;
      await add({
        id: `media:${project_id}:${m}`,
        drive_id: driveId,
        kind: 'media',
        media_type: m === 0 ? 'audio' : 'video',
        name: `${NAME_WORDS[(p + m) % NAME_WORDS.length]}-${p}-${m}.${m === 0 ? 'wav' : 'mp4'}`,
        project_id,
        asset_id: `${project_id}-a${m}`,
        duration: withText ? 3600 : 120,
        ...(withText && { content: hourOfSpeech(corpus, phrasesPerHour) }),
        updated_at: at(p),
      });
    }
  }
  if (batch.length > 0) await index.upsert(batch);
  return { entries, transcripts };
}

function latency(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const pick = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return { p50: round(pick(0.5)), p99: round(pick(0.99)), mean: round(samples.reduce((a, b) => a + b, 0) / samples.length) };
}

const num = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
};

export async function measureSearch(options: SearchBenchOptions = {}): Promise<SearchFigures> {
  const projects = options.projects ?? num('BENCH_SEARCH_PROJECTS', 10_000);
  const hours = options.hours ?? num('BENCH_SEARCH_HOURS', 1000);
  const queries = options.queries ?? 300;
  const random = prng(20_240_601);
  const words = vocabulary(random);
  const corpus: Corpus = { words, draw: zipf(words.length, random), random, used: new Uint8Array(words.length), phrases: [] };
  const dir = mkdtempSync(join(tmpdir(), 'bench-search-'));
  const index = createSqliteSearchIndex({ path: join(dir, 'search.sqlite') });
  const [drive, other] = ['11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222'];
  try {
    const start = process.hrtime.bigint();
    const phrasesPerHour = hours > 0 ? Math.ceil(queries / hours) : 0;
    const main = await seedDrive(index, drive, projects, hours, corpus, phrasesPerHour);
    const phrases = corpus.phrases.splice(0);
    const second = await seedDrive(index, other, Math.ceil(projects / 10), Math.ceil(hours / 20), corpus, 0);
    const seedSeconds = Number(process.hrtime.bigint() - start) / 1e9;

    const used = words.filter((_, r) => corpus.used[r]);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
    const run = async (texts: string[], mustFind: boolean) => {
      const samples: number[] = [];
      for (const text of texts) {
        const began = process.hrtime.bigint();
        const hits = await index.search({ drive_id: drive, text, sort: 'relevance', limit: 30 });
        samples.push(Number(process.hrtime.bigint() - began) / 1e6);
        // The figures only count if the searches are right: each phrase was cut out of this drive's text.
        if (hits.some((h) => h.entry.drive_id !== drive)) throw new Error(`"${text}" found another drive's entries`);
        if (mustFind && hits.length === 0) throw new Error(`"${text}" found nothing though it was taken from a transcript`);
      }
      return latency(samples);
    };
    if (used.length === 0 || phrases.length === 0) throw new Error('nothing to search: BENCH_SEARCH_HOURS must be at least 1');
    await run(
      Array.from({ length: 20 }, () => pick(used)),
      true,
    ); // warm the page cache and statements
    const oneWord = await run(
      Array.from({ length: queries }, () => pick(used)),
      true,
    );
    const phrase = await run(
      Array.from({ length: queries }, () => `"${pick(phrases).join(' ')}"`),
      true,
    );
    return {
      projects,
      hours: main.transcripts,
      entries: main.entries + second.entries,
      seedSeconds: Math.round(seedSeconds * 10) / 10,
      oneWord,
      phrase,
    };
  } finally {
    await index.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  measureSearch().then(
    (figures) => {
      const ms = (l: Latency) => `p50 ${l.p50} ms, p99 ${l.p99} ms, mean ${l.mean} ms`;
      console.log(`node ${process.version}, embedded SearchIndex (SQLite FTS5), sort relevance, limit 30`);
      console.log(
        `seeded ${figures.entries} entries (${figures.projects} projects, ${figures.hours} hours of transcript) in ${figures.seedSeconds} s`,
      );
      console.log(`one word:  ${ms(figures.oneWord)}`);
      console.log(`phrase:    ${ms(figures.phrase)}`);
      console.log(`\nsummary: ${JSON.stringify(figures)}`);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
