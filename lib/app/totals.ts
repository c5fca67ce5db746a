import type { Doc, ReadQueries, ReadStore } from '../ports/read-store';

/**
 * Running totals over facts (the media seconds a drive used, over its charges): a reader of the
 * ledger reads one document instead of summing every fact, which grew with the drive (50 ms on
 * the event loop for a drive with 100,000 charged files, measured). Balances are decided on the
 * drives' balance streams (lib/domain/balance.ts), not here.
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
 * Sets the total of `key` from its facts, after a rebuild wrote them without adding them: the sum
 * of the facts written, plus the amounts pending whose facts are not written yet. Read between
 * two reads of the total at one revision, and written at that revision. A delivery beside it
 * (a live projector during a replay) adds a fact to the pending list before writing it, which
 * moves the total; it writes the fact before taking it off the list, which does not, so a fact
 * written between the sum and the look-up of the pending ones could be missed: settling waits
 * for the list to empty first (a second at most; a list that stays is a delivery cut short,
 * which is not moving).
 */
export async function settleTotal(read: ReadStore, facts: string, spec: TotalSpec, key: string, waitMs = 1000): Promise<void> {
  for (const until = Date.now() + waitMs; Date.now() < until;) {
    if ((await readTotal(read, spec, key)).pending.length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await changeTotal(read, spec, key, async (total) => {
    const sum = await read.sum(facts, { [spec.by]: key }, spec.field);
    const ids = total.pending.map(([id]) => id);
    const written = ids.length > 0 ? new Set((await read.getMany(facts, ids)).map((doc) => doc._id)) : new Set<string>();
    const value = total.pending.reduce((n, [id, amount]) => (written.has(id) ? n : n + amount), sum);
    const again = await readTotal(read, spec, key);
    if (again.rev !== total.rev) throw new Moved();
    return value === total.value ? null : { value, pending: total.pending };
  });
}

/** Thrown by a change that saw the total move while it read: it is read again. */
class Moved extends Error {}

type Change = { value: number; pending: Total['pending'] };

/** Compare-and-set on a total: `change` says what it becomes (null: nothing to do); retried while another writer moves it. */
async function changeTotal(read: ReadStore, spec: TotalSpec, key: string, change: (total: Total) => Promise<Change | null>): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const total = await readTotal(read, spec, key);
    let next: Change | null;
    try {
      next = await change(total);
    } catch (err) {
      if (err instanceof Moved) continue;
      throw err;
    }
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
