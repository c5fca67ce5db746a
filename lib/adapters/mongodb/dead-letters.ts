import { randomUUID } from 'node:crypto';
import { MongoServerError, type Collection, type Db, type Filter } from 'mongodb';
import type { DeadLetter, DeadLetterStatus, DeadLetterStore, NewDeadLetter } from '../../ports/dead-letters';

/**
 * The distributed DeadLetterStore: collection `dead_letters` beside the read models, with the
 * embedded adapter's semantics (lib/adapters/embedded/dead-letters.ts). One letter per source and
 * event (`event_key`: the event id, or `@<position>` for a message that could not be decoded);
 * a second `put` for the same event adds its attempts, takes the new reason and makes it `dead`
 * again, keeping the first payload.
 */

const COLLECTION = 'dead_letters';
const DUPLICATE_KEY = 11000;

type Row = Omit<DeadLetter, 'id'> & { _id: string; event_key: string };

const toLetter = ({ _id, event_key: _key, ...row }: Row): DeadLetter => ({ id: _id, ...row });

export function createMongoDeadLetterStore(db: Db, options: { now?: () => Date } = {}): DeadLetterStore {
  const letters: Collection<Row> = db.collection<Row>(COLLECTION);
  const now = () => (options.now ?? (() => new Date()))().toISOString();

  let indexed: Promise<void> | null = null;
  // The unique index must exist before the first upsert, or two racing puts make two letters.
  const ready = () =>
    (indexed ??= letters
      .createIndexes([
        { key: { source: 1, event_key: 1 }, name: 'source_event_key', unique: true },
        { key: { source: 1, status: 1, updated_at: 1, _id: 1 }, name: 'source_status_updated_at' },
      ])
      .then(
        () => undefined,
        (err: unknown) => {
          indexed = null; // try again on the next call
          throw err;
        },
      ));

  async function upsert(letter: NewDeadLetter, eventKey: string): Promise<Row | null> {
    const at = now();
    // source and event_key come from the filter's equality clauses when the upsert inserts.
    const { attempts, reason, source, ...rest } = letter;
    return letters.findOneAndUpdate(
      { source, event_key: eventKey },
      {
        $setOnInsert: { ...rest, _id: randomUUID(), created_at: at },
        $set: { reason, status: 'dead' as DeadLetterStatus, updated_at: at },
        $inc: { attempts },
      },
      { upsert: true, returnDocument: 'after' },
    );
  }

  return {
    async put(letter) {
      await ready();
      // An undecodable message has no event id: its position identifies it instead.
      const eventKey = letter.event_id ?? `@${letter.position ?? randomUUID()}`;
      let row: Row | null;
      try {
        row = await upsert(letter, eventKey);
      } catch (err) {
        // Two upserts raced to insert: the loser now finds the winner's letter and updates it.
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
        row = await upsert(letter, eventKey);
      }
      if (!row) throw new Error(`dead letter ${letter.source} ${eventKey} was not written`);
      return toLetter(row);
    },
    async list(filter = {}) {
      await ready();
      const query: Filter<Row> = {
        ...(filter.source ? { source: filter.source } : {}),
        ...(filter.status ? { status: filter.status } : {}),
      };
      return (await letters.find(query, { sort: { created_at: 1, _id: 1 } }).toArray()).map(toLetter);
    },
    async get(id) {
      const row = await letters.findOne({ _id: id });
      return row ? toLetter(row) : null;
    },
    async markRetry(id) {
      const result = await letters.updateOne({ _id: id }, { $set: { status: 'retry', updated_at: now() } });
      return result.matchedCount > 0;
    },
    async remove(id) {
      return (await letters.deleteOne({ _id: id })).deletedCount > 0;
    },
    async dueRetries(source, limit) {
      await ready();
      const rows = await letters.find({ source, status: 'retry' }, { sort: { updated_at: 1, _id: 1 }, limit }).toArray();
      return rows.map(toLetter);
    },
    async markDead(id, reason) {
      await letters.updateOne({ _id: id }, { $set: { status: 'dead', reason, updated_at: now() } });
    },
    async count() {
      return letters.countDocuments({ status: 'dead' });
    },
  };
}
