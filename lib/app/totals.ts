import type { Doc, ReadQueries, ReadStore } from '../ports/read-store';

/**
 * Running totals over facts (the media seconds a drive used, over its charges): a balance check
 * reads one document instead of summing every fact, which grew with the drive (50 ms on the event
 * loop per accepted import for a drive with 100,000 charged files, measured).
 *
 * A fact is added to its total exactly once with the store's compare-and-set writes alone
 * (MongoDB without a replica set has no transactions). The total lists a fact as pending from
 * the write that adds it until the fact's own document is written:
 * 1. unless the fact is pending or already written, add its amount and list it as pending;
 * 2. write the fact's document;
 * 3. take it off the pending list.
 * A delivery interrupted anywhere is finished by the redelivery (the log redelivers what a
 * handler did not finish), and a duplicate delivered beside it adds nothing: each step reads the
 * total first and writes it only at the revision it read.
 */

/** A total of the numeric `field` of a fact collection's documents per value of `by`, in `collection` (document id: that value). */
export type TotalSpec = { readonly collection: string; readonly by: string; readonly field: string };

export type Total = {
  readonly value: number;
  /** Facts added to `value` whose documents may not be written yet, with their amounts. */
  readonly pending: readonly (readonly [id: string, amount: number])[];
  /** The total document's revision; null when there is none (nothing added yet). */
  readonly rev: number | null;
};

export async function readTotal(read: ReadQueries, spec: TotalSpec, key: string): Promise<Total> {
  const doc = await read.get(spec.collection, key);
  if (!doc) return { value: 0, pending: [], rev: null };
  return { value: Number(doc[spec.field] ?? 0), pending: (doc.pending as Total['pending'] | undefined) ?? [], rev: doc._rev };
}

const isPending = (total: Total, id: string) => total.pending.some(([pending]) => pending === id);

/** Writes `fact` (a new document of `facts`) and adds it to its total, once however often it is delivered. */
export async function writeFactOnce(read: ReadStore, facts: string, spec: TotalSpec, fact: Doc): Promise<void> {
  const key = String(fact[spec.by]);
  const amount = Number(fact[spec.field] ?? 0);
  await changeTotal(read, spec, key, async (total) => {
    if (isPending(total, fact._id) || (await read.get(facts, fact._id))) return null;
    return { value: total.value + amount, pending: [...total.pending, [fact._id, amount]] };
  });
  await read.put(facts, fact, null); // `stale`: written by an earlier delivery
  await changeTotal(read, spec, key, async (total) =>
    isPending(total, fact._id) ? { value: total.value, pending: total.pending.filter(([id]) => id !== fact._id) } : null,
  );
}

/**
 * Sets the total of `key` to the sum of its facts (after a rebuild wrote them: a fact written by
 * a live projector between the rebuild's clearing of the totals and of the facts was never added
 * again). Done only while nothing is pending for `key`, read twice at one revision, so that no
 * fact can be on its way in between; false when something stayed pending (a delivery that was
 * interrupted, finished when it is redelivered) and the total was left as it is.
 */
export async function settleTotal(read: ReadStore, facts: string, spec: TotalSpec, key: string, attempts = 50): Promise<boolean> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const before = await readTotal(read, spec, key);
    if (before.pending.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    const sum = await read.sum(facts, { [spec.by]: key }, spec.field);
    const after = await readTotal(read, spec, key);
    if (after.rev !== before.rev) continue;
    if (after.value === sum) return true;
    if ((await read.put(spec.collection, totalDoc(spec, key, after, { value: sum, pending: [] }), after.rev)) === 'written') return true;
  }
  return false;
}

type Change = { value: number; pending: Total['pending'] };

/** Compare-and-set on a total: `change` says what it becomes (null: nothing to do); retried while another writer moves it. */
async function changeTotal(read: ReadStore, spec: TotalSpec, key: string, change: (total: Total) => Promise<Change | null>): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const total = await readTotal(read, spec, key);
    const next = await change(total);
    if (!next) return;
    if ((await read.put(spec.collection, totalDoc(spec, key, total, next), total.rev)) === 'written') return;
  }
  throw new Error(`the total ${spec.collection}/${key} kept changing under a hundred attempts to write it`);
}

const totalDoc = (spec: TotalSpec, key: string, total: Total, next: Change): Doc => ({
  _id: key,
  _rev: (total.rev ?? -1) + 1,
  [spec.by]: key,
  [spec.field]: next.value,
  pending: next.pending,
});
