import assert from 'node:assert/strict';
import type { SearchEntry, SearchHit, SearchIndex, SearchQuery } from '../../lib/ports/search-index';

/** What a factory hands the suite: an index on fresh, empty storage, and how to dispose of it. */
export interface SearchIndexSubject {
  readonly index: SearchIndex;
  /** Closes every index the test opened (closing twice must be harmless) and drops the storage. */
  readonly cleanup: () => Promise<void>;
  /** Opens another index on the same storage; required when `persistent` is set. */
  readonly reopen?: () => Promise<SearchIndex>;
}

export interface SearchIndexContractOptions {
  /** The adapter keeps entries across a close and reopen (a file, a server). */
  readonly persistent?: boolean;
}

const D1 = '6f1c2a9e-0d4b-4c55-9a43-1b2c3d4e5f60';
const D2 = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d';
const T = (day: number) => `2024-01-0${day}T00:00:00.000Z`;

const entry = (id: string, kind: SearchEntry['kind'], name: string, day: number, more: Partial<SearchEntry> = {}): SearchEntry => ({
  id,
  drive_id: D1,
  kind,
  name,
  updated_at: T(day),
  ...more,
});
const media = (id: string, media_type: SearchEntry['media_type'], name: string, day: number, more: Partial<SearchEntry> = {}) =>
  entry(id, 'media', name, day, { media_type, project_id: 'p-summer', asset_id: `asset-${id}`, ...more });

const FOX = 'Well, the quick brown fox jumps over the lazy dog near the old harbour.';
const ENTRIES: readonly SearchEntry[] = [
  entry('project:summer', 'project', 'Summer Interview', 2, { project_id: 'p-summer' }),
  entry('project:cafe', 'project', 'Café Owners', 3, { project_id: 'p-cafe' }),
  entry('folder:interviews', 'project_folder', 'Interviews 2024', 1),
  media('media:a1', 'audio', 'street-recording.wav', 4, { content: FOX, duration: 12.5 }),
  media('media:a2', 'audio', 'fox take two.wav', 1, { content: 'a fox again', duration: null }),
  media('media:v1', 'video', 'harbour drone.mp4', 3, { duration: 30 }),
  media('media:i1', 'image', 'harbour sunset.jpg', 2),
  media('media:s1', 'sequence', 'interview multitrack', 1, { duration: 60 }),
  media('media:u1', 'audio', 'über.wav', 1, { content: 'Ärger über die Brücke' }),
  entry('composition:c1', 'composition', 'Final Cut', 2, { project_id: 'p-summer', composition_id: 'c1' }),
  entry('project:extended', 'project', 'Final Cut Final Cut Extended', 5),
  entry('twin:a', 'project', 'Twin Take', 1),
  entry('twin:c', 'project', 'Twin Take', 3),
  entry('twin:b', 'project', 'Twin Take', 3),
  // Words that match nothing, so that no searched word is in most entries (bm25's idf floors those).
  ...Array.from({ length: 12 }, (_, i) => entry(`filler:${i}`, 'project', `Filler ${i} zz${i}`, 1)),
  { ...entry('project:d2summer', 'project', 'Summer Interview', 2), drive_id: D2 },
  { ...media('media:d2a1', 'audio', 'other drive.wav', 2, { content: 'the quick brown fox' }), drive_id: D2 },
];

const withoutContent = ({ content: _content, ...rest }: SearchEntry) => rest;
const byId = new Map(ENTRIES.map((e) => [e.id, e]));
const ids = (hits: readonly SearchHit[]) => hits.map((h) => h.entry.id);
const sorted = (hits: readonly SearchHit[]) => ids(hits).sort();
const invalid = { code: 'invalid_input' };

/** One hour of speech: about 9,000 words, "golden needle" once at word 6,000, "tail" once near the end. */
function hourOfSpeech(): string {
  const vocabulary = ['so', 'we', 'talked', 'about', 'the', 'budget', 'and', 'then', 'moved', 'on', 'to', 'timing'];
  const words = Array.from({ length: 9000 }, (_, i) => vocabulary[(i * 7 + (i >> 3)) % vocabulary.length] + (i % 17 === 16 ? '.' : ''));
  words.splice(6000, 0, 'golden', 'needle');
  words.splice(8990, 0, 'tail');
  return words.join(' ');
}

export function describeSearchIndexContract(
  name: string,
  factory: () => Promise<SearchIndexSubject>,
  options: SearchIndexContractOptions = {},
): void {
  describe(`SearchIndex contract: ${name}`, function () {
    let subject: SearchIndexSubject;
    let index: SearchIndex;
    const search = (text: string, more: Partial<SearchQuery> = {}) =>
      index.search({ drive_id: D1, text, sort: 'relevance', limit: 100, ...more });
    const found = async (text: string, more: Partial<SearchQuery> = {}) => sorted(await search(text, more));

    beforeEach(async () => {
      subject = await factory();
      index = subject.index;
      await index.upsert(ENTRIES);
    });
    afterEach(async () => subject.cleanup());

    it('flushes: what was upserted before is found the same after', async () => {
      const before = await found('summer interview');
      await index.flush();
      assert.deepEqual(await found('summer interview'), before);
    });

    describe('drives', function () {
      it('finds only the query drive’s entries, for the same name in two drives', async () => {
        assert.deepEqual(await found('summer interview'), ['project:summer']);
        assert.deepEqual(await found('summer interview', { drive_id: D2 }), ['project:d2summer']);
        assert.deepEqual(await found('quick brown fox', { drive_id: D2 }), ['media:d2a1']);
      });
      it('finds nothing in an unknown drive, nor by searching a drive id', async () => {
        assert.deepEqual(await found('summer', { drive_id: 'no-such-drive' }), []);
        assert.deepEqual(await found(D2), []);
        assert.deepEqual(await found(`d${Buffer.from(D1).toString('hex')}`), []);
      });
    });

    describe('words', function () {
      const cases: ReadonlyArray<readonly [string, string, readonly string[]]> = [
        ['ignores case', 'SUMMER', ['project:summer']],
        ['ignores diacritics in the query', 'CAFÉ', ['project:cafe']],
        ['ignores diacritics in the text', 'cafe owners', ['project:cafe']],
        ['ignores diacritics in transcripts', 'arger uber brucke', ['media:u1']],
        ['matches whole words, not prefixes', 'summ', []],
        ['does not stem', 'interviews', ['folder:interviews']],
        ['needs every word', 'quick zebra', []],
        ['takes words in any order', 'harbour quick', ['media:a1']],
        ['splits on punctuation', 'street recording wav', ['media:a1']],
        ['matches a phrase in order', '"quick brown fox"', ['media:a1']],
        ['refuses a phrase out of order', '"brown quick"', []],
        ['refuses a phrase whose words are apart', '"quick fox"', []],
        ['combines a phrase and a word', '"lazy dog" harbour', ['media:a1']],
        ['needs the whole query within one field', 'street quick', []],
      ];
      for (const [title, text, expected] of cases) it(`${title}: ${text}`, async () => assert.deepEqual(await found(text), expected));
    });

    describe('fields', function () {
      it('looks at names only, or transcripts only, when asked', async () => {
        assert.deepEqual(await found('harbour', { match: ['name'] }), ['media:i1', 'media:v1']);
        assert.deepEqual(await found('harbour', { match: ['content'] }), ['media:a1']);
        assert.deepEqual(await found('harbour', { match: ['name', 'content'] }), ['media:a1', 'media:i1', 'media:v1']);
      });
      it('says which field matched, the name when both did, with a snippet for transcripts only', async () => {
        const hits = new Map((await search('fox')).map((h) => [h.entry.id, h]));
        assert.equal(hits.get('media:a2')?.matched, 'name');
        assert.equal(hits.get('media:a2')?.snippet, undefined);
        assert.equal(hits.get('media:a1')?.matched, 'content');
        assert.equal(typeof hits.get('media:a1')?.snippet, 'string');
      });
      it('says content when only the transcript is searched, even if the name matches too', async () => {
        const [hit] = await search('fox', { match: ['content'], types: ['audio'], sort: 'oldest', limit: 1 });
        assert.deepEqual([hit.entry.id, hit.matched, hit.snippet], ['media:a2', 'content', 'a <mark>fox</mark> again']);
      });
      it('returns each entry as upserted, without its transcript', async () => {
        for (const id of ['media:a1', 'media:a2', 'media:i1', 'project:summer', 'composition:c1']) {
          const wanted = byId.get(id)!;
          const hit = (await search(wanted.name, { match: ['name'] })).find((h) => h.entry.id === id);
          assert.deepEqual(hit?.entry, withoutContent(wanted), id);
        }
      });
    });

    describe('types and dates', function () {
      const cases: ReadonlyArray<readonly [string, string, Partial<SearchQuery>, readonly string[]]> = [
        ['video media', 'harbour', { types: ['video'] }, ['media:v1']],
        ['image and audio media', 'harbour', { types: ['image', 'audio'] }, ['media:a1', 'media:i1']],
        ['projects', 'summer', { types: ['project'] }, ['project:summer']],
        ['folders', 'interviews', { types: ['project_folder'] }, ['folder:interviews']],
        ['compositions', 'final cut', { types: ['composition'] }, ['composition:c1']],
        ['no type selects sequences', 'multitrack', { types: ['audio', 'video', 'image', 'project'] }, []],
        ['absent types select everything', 'multitrack', {}, ['media:s1']],
        ['updated_after is exclusive', 'harbour', { updated_after: T(2) }, ['media:a1', 'media:v1']],
        ['updated_before is exclusive', 'harbour', { updated_before: T(4) }, ['media:i1', 'media:v1']],
        ['both bounds', 'harbour', { updated_after: T(2), updated_before: T(4) }, ['media:v1']],
      ];
      for (const [title, text, more, expected] of cases)
        it(`filters: ${title}`, async () => assert.deepEqual(await found(text, more), expected));
      it('refuses a bound that is not a date', async () => {
        await assert.rejects(search('harbour', { updated_after: 'yesterday' }), invalid);
      });
    });

    describe('order and limit', function () {
      it('puts the entry whose name is the query first, however it is typed', async () => {
        for (const text of ['final cut', '  FINAL   Cut ', '"Final Cut"']) {
          assert.deepEqual(ids(await search(text)), ['composition:c1', 'project:extended'], text);
        }
      });
      it('ranks a name match above a transcript match', async () => {
        assert.deepEqual(ids(await search('fox')), ['media:a2', 'media:a1']);
      });
      it('breaks relevance ties by updated_at, newest first, then id', async () => {
        assert.deepEqual(ids(await search('twin take')), ['twin:b', 'twin:c', 'twin:a']);
      });
      it('sorts newest and oldest by updated_at, ties by id', async () => {
        assert.deepEqual(ids(await search('harbour', { sort: 'newest' })), ['media:a1', 'media:v1', 'media:i1']);
        assert.deepEqual(ids(await search('harbour', { sort: 'oldest' })), ['media:i1', 'media:v1', 'media:a1']);
        assert.deepEqual(ids(await search('twin', { sort: 'oldest' })), ['twin:a', 'twin:b', 'twin:c']);
        assert.deepEqual(ids(await search('twin', { sort: 'newest' })), ['twin:b', 'twin:c', 'twin:a']);
      });
      it('keeps the first hits of the order, the same ones every time', async () => {
        assert.deepEqual(ids(await search('twin', { sort: 'newest', limit: 2 })), ['twin:b', 'twin:c']);
        assert.deepEqual(ids(await search('take', { limit: 1 })), ids(await search('take', { limit: 1 })));
        assert.equal((await search('filler', { limit: 5 })).length, 5);
      });
      it('refuses a limit outside 1..100 and an unknown sort', async () => {
        for (const limit of [0, 101, 1.5]) await assert.rejects(search('twin', { limit }), invalid);
        await assert.rejects(search('twin', { sort: 'random' as SearchQuery['sort'] }), invalid);
      });
    });

    describe('snippets', function () {
      it('shows the words around the first match, marked, with … where cut', async () => {
        const [hit] = await search('lazy dog');
        assert.equal(hit.snippet, '…brown fox jumps over the <mark>lazy</mark> <mark>dog</mark> near the old harbour.');
      });
      it('marks each word of a phrase', async () => {
        const [hit] = await search('"quick brown fox"');
        assert.equal(
          hit.snippet,
          'Well, the <mark>quick</mark> <mark>brown</mark> <mark>fox</mark> jumps over the lazy dog near the old harbour.',
        );
      });
      it('cuts a short window out of an hour of transcript, accented or not', async () => {
        const hour = hourOfSpeech();
        await index.upsert([
          media('media:hour', 'audio', 'hour.wav', 1, { content: hour, duration: 3600 }),
          media('media:heure', 'audio', 'heure.wav', 2, { content: hour.replace(/budget/g, 'budgét'), duration: 3600 }),
        ]);
        for (const [text, mark] of [
          ['"golden needle"', '<mark>golden</mark> <mark>needle</mark>'],
          ['TAIL', '<mark>tail</mark>'],
        ]) {
          const hits = await search(text);
          assert.deepEqual(ids(hits), ['media:heure', 'media:hour']);
          for (const { snippet = '' } of hits) {
            assert.ok(snippet.includes(mark), snippet);
            assert.ok(snippet.startsWith('…') && snippet.endsWith('…'), snippet);
            const words = snippet.split(/\s+/).length;
            assert.ok(words >= 10 && words <= 20 && snippet.length < 200, snippet);
          }
        }
      });
      it('marks accented words found without their accents', async () => {
        const [hit] = await search('brucke');
        assert.equal(hit.snippet, 'Ärger über die <mark>Brücke</mark>');
      });
      it('escapes HTML in the transcript, keeping only its own marks', async () => {
        await index.upsert([
          media('media:html', 'audio', '<b>Bold</b> move', 1, { content: `Click <script>alert("pwned")</script> & enjoy O'Brien's tape` }),
          media('media:tag', 'audio', 'tag.wav', 1, { content: 'the <mark> element is literal here' }),
        ]);
        assert.equal(
          (await search('alert'))[0].snippet,
          'Click &lt;script&gt;<mark>alert</mark>(&quot;pwned&quot;)&lt;/script&gt; &amp; enjoy O&#39;Brien&#39;s tape',
        );
        assert.equal((await search('element'))[0].snippet, 'the &lt;mark&gt; <mark>element</mark> is literal here');
        const [named] = await search('bold');
        assert.deepEqual([named.entry.name, named.matched, named.snippet], ['<b>Bold</b> move', 'name', undefined]);
      });
    });

    describe('hostile input', function () {
      const cases: ReadonlyArray<readonly [string, readonly string[]]> = [
        ['NEAR(quick fox)', ['media:a1']],
        ['quick*', ['media:a1']],
        ['-quick', ['media:a1']],
        ['quick OR zebra', []],
        ['summer AND NOT interview', []],
        ['name:summer', []],
        ['{name}: summer', []],
        ['"quick harbour', ['media:a1']],
        ['"lazy dog" "', ['media:a1']],
        ['^quick', ['media:a1']],
        ['$where', []],
        ['{"$gt": ""}', []],
        ["summer'); DROP TABLE search_entries; --", []],
        ['', []],
        ['   ', []],
        ['"', []],
        ['*** -- ::', []],
      ];
      for (const [text, expected] of cases) {
        it(`searches ${JSON.stringify(text)} as plain words`, async () => {
          assert.deepEqual(await found(text), expected);
          assert.deepEqual(await found('summer interview'), ['project:summer']);
        });
      }
      it('refuses more than 64 words cleanly', async () => {
        await assert.rejects(search(Array.from({ length: 65 }, (_, i) => `w${i}`).join(' ')), invalid);
      });
    });

    describe('writes', function () {
      it('replaces an entry on upsert: old words are gone, new ones found', async () => {
        await index.upsert([media('media:a1', 'video', 'renamed clip.mov', 5, { content: 'entirely different words' })]);
        assert.deepEqual(await found('lazy dog'), []);
        assert.deepEqual(await found('street'), []);
        assert.deepEqual(await found('different'), ['media:a1']);
        assert.deepEqual(await found('renamed', { types: ['video'] }), ['media:a1']);
        assert.deepEqual((await search('clip'))[0].entry.updated_at, T(5));
      });
      it('keeps the words and the transcript of an entry upserted again with a new date only', async () => {
        await index.upsert([
          { ...byId.get('media:a1')!, updated_at: T(9) },
          { ...byId.get('project:summer')!, updated_at: T(8) },
        ]);
        assert.deepEqual(await found('lazy dog'), ['media:a1']);
        assert.deepEqual(await found('summer interview'), ['project:summer']);
        assert.equal((await search('street-recording'))[0].entry.updated_at, T(9));
        assert.equal((await search('summer interview'))[0].entry.updated_at, T(8));
        assert.match((await search('harbour', { match: ['content'] }))[0].snippet ?? '', /<mark>harbour<\/mark>/);
      });
      it('moves an entry to another drive when its drive changes', async () => {
        await index.upsert([{ ...byId.get('project:cafe')!, drive_id: D2 }]);
        assert.deepEqual(await found('cafe'), []);
        assert.deepEqual(await found('cafe', { drive_id: D2 }), ['project:cafe']);
      });
      it('keeps the last of two upserts of one id in a batch, and drops a transcript no longer given', async () => {
        await index.upsert([entry('x', 'project', 'First Name', 1), entry('x', 'project', 'Second Name', 1)]);
        assert.deepEqual(await found('first'), []);
        assert.deepEqual(await found('second'), ['x']);
        await index.upsert([media('media:a1', 'audio', 'street-recording.wav', 4)]);
        assert.deepEqual(await found('quick'), []);
      });
      it('removes entries by id, ignoring unknown ones', async () => {
        await index.remove(['media:a1', 'no-such-entry']);
        await index.remove([]);
        assert.deepEqual(await found('quick'), []);
        assert.deepEqual(await found('harbour'), ['media:i1', 'media:v1']);
      });
      it('clears every drive, and takes entries again after', async () => {
        await index.clear();
        assert.deepEqual(await found('summer'), []);
        assert.deepEqual(await found('summer', { drive_id: D2 }), []);
        await index.upsert([byId.get('project:summer')!]);
        assert.deepEqual(await found('summer'), ['project:summer']);
      });
    });

    if (options.persistent) {
      it('keeps entries across a close and reopen', async () => {
        await index.close();
        assert.ok(subject.reopen, 'a persistent subject must provide reopen');
        const again = await subject.reopen();
        const hits = await again.search({ drive_id: D1, text: 'lazy dog', sort: 'relevance', limit: 5 });
        assert.deepEqual(ids(hits), ['media:a1']);
        await again.close();
      });
    }
  });
}
