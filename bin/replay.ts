import { SingleBar } from 'cli-progress';
import { openBlobStore, openEventStore, openReadStore } from '../lib/adapters/from-config';
import { ConfigError, loadConfig } from '../lib/config';
import { replayReadModels } from '../services/query-api/replay';

/**
 * `npm run replay`: drops and rebuilds every read model and the search index from the event
 * store. May run beside the live service (see replayReadModels). On a terminal it draws a
 * progress bar with events/s on stderr; the result is one JSON line on stdout either way.
 */
async function main() {
  const config = loadConfig();
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const total = await countEvents(store);
  const bar = process.stderr.isTTY
    ? new SingleBar({
        format: 'replay [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | {duration}s',
        stream: process.stderr,
        hideCursor: true,
      })
    : null;
  const started = Date.now();
  bar?.start(total, 0, { rate: 0 });
  let lastLine = 0;
  try {
    const result = await replayReadModels({
      store,
      read: readSide.read,
      search: { index: readSide.search, blobs: openBlobStore(config) },
      onProgress: (n) => {
        const rate = Math.round(n / Math.max(0.001, (Date.now() - started) / 1000));
        if (bar) bar.update(Math.min(n, total), { rate });
        else if (Date.now() - lastLine >= 1000) {
          lastLine = Date.now();
          process.stderr.write(`replayed ${n} of ${total} events (${rate} events/s)\n`);
        }
      },
    });
    bar?.update(total, { rate: result.eventsPerSecond });
    bar?.stop();
    process.stdout.write(
      `${JSON.stringify({ events: result.events, seconds: Math.round(result.seconds * 1000) / 1000, events_per_second: result.eventsPerSecond })}\n`,
    );
  } finally {
    bar?.stop();
    await readSide.close();
    await store.close();
  }
}

/** How many events `$all` holds now (the bar's 100 %; events appended meanwhile are replayed too). */
async function countEvents(store: ReturnType<typeof openEventStore>): Promise<number> {
  let n = 0;
  for (let after: string | null = null; ;) {
    const page = await store.readAll(after, 5000);
    if (page.length === 0) return n;
    n += page.length;
    after = page[page.length - 1].position;
  }
}

main().catch((err) => {
  process.stderr.write(`error: ${err instanceof ConfigError ? err.message : (err?.stack ?? err)}\n`);
  process.exit(1);
});
