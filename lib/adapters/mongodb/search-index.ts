import type { Collection, Db, Document } from 'mongodb';
import { flushWrites } from './flush';
import { containsAll, nameKey, planSearch, snippet, typeOf, type SearchPlan } from '../../app/snippet';
import type { SearchEntry, SearchHit, SearchIndex, SearchQuery } from '../../ports/search-index';

/**
 * The MongoDB SearchIndex: one document per entry in one collection, found with `$text`.
 *
 * - The text index is `{drive_id: 1, name: 'text', content: 'text'}`: the drive as an equality
 *   prefix splits the index by drive, so a search reads its own drive's keys only (every search
 *   has the drive; nothing else uses the index). Weights name 10, content 1.
 * - `default_language: 'none'`: no stemming and no stop words, so words match whole as on FTS5
 *   ("the" is found; "interview" does not find "interviews"). Text index version 3 folds case and
 *   diacritics and splits on Unicode spaces and punctuation, close to FTS5's unicode61.
 * - `$search` gets each query word as its own quoted phrase: quoted, Mongo requires every one
 *   (unquoted words are ORed), and the words are runs of letters and digits, so no user quote,
 *   `-` or operator reaches it. Mongo matches phrases as substrings and across fields, so it only
 *   proposes candidates: each is checked in JS with the shared rules (phrase adjacency, the
 *   whole query within one field, the fields asked for) before it counts towards `limit`.
 * - Candidates come sorted without their transcripts; transcripts are fetched by id, a batch at
 *   a time, only for those whose name did not match.
 */

type Stored = Omit<SearchEntry, 'id'> & { _id: string; type: string; name_key: string };
type Candidate = Omit<Stored, 'content'> & { has_content: boolean };

const WRITE_OPTIONS = { ignoreUndefined: true } as const;
const ENTRY_FIELDS = [
  'drive_id',
  'kind',
  'name',
  'media_type',
  'project_id',
  'asset_id',
  'composition_id',
  'duration',
  'updated_at',
] as const;

function toEntry(doc: Candidate): SearchHit['entry'] {
  const entry: Record<string, unknown> = { id: doc._id };
  for (const field of ENTRY_FIELDS) if (doc[field] !== undefined) entry[field] = doc[field];
  return entry as SearchHit['entry'];
}

const toStored = ({ id, ...rest }: SearchEntry): Stored => ({
  _id: id,
  ...rest,
  type: typeOf({ id, ...rest }),
  name_key: nameKey(rest.name),
});

function pipeline(query: SearchQuery, plan: SearchPlan): Document[] {
  const updated = { ...(plan.after && { $gt: plan.after }), ...(plan.before && { $lt: plan.before }) };
  const match: Document = {
    drive_id: query.drive_id,
    $text: { $search: plan.clauses.flatMap((c) => c.raw.map((word) => `"${word}"`)).join(' ') },
    ...(plan.types && { type: { $in: plan.types } }),
    ...(Object.keys(updated).length > 0 && { updated_at: updated }),
  };
  const sort: Document =
    query.sort === 'relevance'
      ? { exact: -1, score: -1, updated_at: -1, _id: 1 }
      : { updated_at: query.sort === 'newest' ? -1 : 1, _id: 1 };
  return [
    { $match: match },
    {
      $addFields: {
        score: { $meta: 'textScore' },
        exact: { $eq: ['$name_key', plan.exactName] },
        has_content: { $eq: [{ $type: '$content' }, 'string'] },
      },
    },
    { $project: { content: 0 } },
    { $sort: sort },
  ];
}

/** The candidates of a batch that really match, in order, as hits. */
async function check(collection: Collection<Stored>, batch: Candidate[], plan: SearchPlan): Promise<SearchHit[]> {
  const nameHit = (c: Candidate) => plan.fields.includes('name') && containsAll(c.name, plan.clauses);
  const needContent = plan.fields.includes('content') ? batch.filter((c) => c.has_content && !nameHit(c)).map((c) => c._id) : [];
  const contents = new Map<string, string>();
  if (needContent.length > 0) {
    const docs = await collection.find({ _id: { $in: needContent } }, { projection: { content: 1 } }).toArray();
    for (const doc of docs) if (typeof doc.content === 'string') contents.set(doc._id, doc.content);
  }
  return batch.flatMap((c): SearchHit[] => {
    if (nameHit(c)) return [{ entry: toEntry(c), matched: 'name' }];
    const content = contents.get(c._id);
    if (content === undefined || !containsAll(content, plan.clauses)) return [];
    return [{ entry: toEntry(c), matched: 'content', snippet: snippet(content, plan.clauses) }];
  });
}

/** Creates the indexes (idempotent) before it returns. `close` leaves the client to whoever connected it. */
export async function createMongoSearchIndex(db: Db, options: { collection?: string } = {}): Promise<SearchIndex> {
  const collection = db.collection<Stored>(options.collection ?? 'search_entries');
  await collection.createIndexes([
    {
      key: { drive_id: 1, name: 'text', content: 'text' },
      name: 'search_text',
      weights: { name: 10, content: 1 },
      default_language: 'none',
      // A `language` field in a document would otherwise switch its analysis.
      language_override: 'search_language',
    },
    { key: { drive_id: 1, updated_at: 1, _id: 1 }, name: 'search_drive_updated' },
  ]);

  return {
    async upsert(entries) {
      if (entries.length === 0) return;
      const writes = entries.map((entry) => ({ replaceOne: { filter: { _id: entry.id }, replacement: toStored(entry), upsert: true } }));
      await collection.bulkWrite(writes, { ordered: true, ...WRITE_OPTIONS });
    },
    async remove(ids) {
      if (ids.length > 0) await collection.deleteMany({ _id: { $in: [...ids] } });
    },
    async search(query) {
      const plan = planSearch(query);
      if (plan.clauses.length === 0) return [];
      const batchSize = Math.max(20, query.limit);
      const cursor = collection.aggregate<Candidate>(pipeline(query, plan), { allowDiskUse: true, batchSize });
      const hits: SearchHit[] = [];
      try {
        let batch: Candidate[] = [];
        for await (const candidate of cursor) {
          batch.push(candidate);
          if (batch.length < batchSize) continue;
          hits.push(...(await check(collection, batch, plan)));
          batch = [];
          if (hits.length >= query.limit) break;
        }
        if (hits.length < query.limit && batch.length > 0) hits.push(...(await check(collection, batch, plan)));
      } finally {
        await cursor.close();
      }
      return hits.slice(0, query.limit);
    },
    async clear() {
      await collection.deleteMany({});
    },
    flush: () => flushWrites(db),
    async close() {},
  };
}
