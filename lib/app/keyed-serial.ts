/**
 * Runs tasks of one key one after another (a drive's balance commands, a job's upload records in
 * this process), tasks of different keys side by side. A key's chain is forgotten once it is idle.
 * It spares a hot stream the revision conflicts its own process would cause; other processes
 * still conflict, and the command handler's retries take those.
 */
export function keyedSerial() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, task: () => Promise<T>): Promise<T> => {
    const before = tails.get(key) ?? Promise.resolve();
    const result = before.then(task, task);
    const tail = result.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => tails.get(key) === tail && tails.delete(key));
    return result;
  };
}
