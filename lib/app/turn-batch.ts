/**
 * Gathers the items handed over during one turn of the event loop and handles them together:
 * `together` once for all of them, after the turn (`setImmediate`), one batch at a time in the
 * order they came. Each caller's promise settles with its item's outcome. When `together` fails,
 * each item of that batch is handled `alone`, so one that cannot be handled (a poison event)
 * fails by itself and the others are done.
 */
export function turnBatches<T>(
  together: (items: readonly T[]) => Promise<void>,
  alone: (item: T) => Promise<void>,
): (item: T) => Promise<void> {
  type Waiting = { item: T; resolve: () => void; reject: (err: unknown) => void };
  let waiting: Waiting[] = [];
  let scheduled = false;
  let running = false;

  const schedule = () => {
    if (scheduled || running || waiting.length === 0) return;
    scheduled = true;
    setImmediate(() => void run());
  };

  const run = async () => {
    scheduled = false;
    running = true;
    const batch = waiting;
    waiting = [];
    try {
      await together(batch.map((w) => w.item));
      for (const w of batch) w.resolve();
    } catch {
      for (const w of batch) await alone(w.item).then(w.resolve, w.reject);
    } finally {
      running = false;
      // What came while this batch ran goes after the next turn, with whatever that turn brings.
      schedule();
    }
  };

  return (item) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      schedule();
    });
}
