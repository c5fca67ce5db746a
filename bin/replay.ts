import { openEventStore, openReadStore } from '../lib/adapters/from-config';
import { ConfigError, loadConfig } from '../lib/config';
import { replayReadModels } from '../services/query-api/replay';

/** `npm run replay`: rebuilds the read models from the event store and reports events/s. */
async function main() {
  const config = loadConfig();
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  try {
    let lastReport = Date.now();
    const result = await replayReadModels({
      store,
      read: readSide.read,
      onProgress: (n) => {
        if (Date.now() - lastReport < 1000) return;
        lastReport = Date.now();
        process.stderr.write(`replayed ${n} events…\n`);
      },
    });
    process.stdout.write(
      `${JSON.stringify({ events: result.events, seconds: Math.round(result.seconds * 1000) / 1000, events_per_second: result.eventsPerSecond })}\n`,
    );
  } finally {
    await readSide.close();
    await store.close();
  }
}

main().catch((err) => {
  process.stderr.write(`error: ${err instanceof ConfigError ? err.message : (err?.stack ?? err)}\n`);
  process.exit(1);
});
