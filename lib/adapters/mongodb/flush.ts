import type { Db } from 'mongodb';

/**
 * Makes every write made through `db` so far survive a power cut and a failover (`ReadStore.flush`,
 * `SearchIndex.flush`). Writes are acknowledged at the client's write concern, which may be before
 * the journal or a majority has them. One marker write acknowledged once a majority has it in its
 * journal covers every write acknowledged before it: the oplog and the journal keep their order.
 */
export async function flushWrites(db: Db): Promise<void> {
  await db
    .collection<{ _id: string; at: Date }>('durability_marks')
    .updateOne({ _id: 'flush' }, { $set: { at: new Date() } }, { upsert: true, writeConcern: { w: 'majority', j: true } });
}
