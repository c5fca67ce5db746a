import { formatBytes } from './output';

export type ByteProgress = { update(sent: number, total: number): void; stop(): void };

/**
 * A progress bar by bytes on stderr, drawn only when stderr is a terminal: in a pipe or a log it
 * would be a stream of carriage returns, and stdout must stay parseable either way. cli-progress
 * is loaded only then (it costs a command ~10 ms to start).
 */
export async function byteProgress(label: string, stream: NodeJS.WriteStream = process.stderr): Promise<ByteProgress> {
  if (!stream.isTTY) return { update: () => undefined, stop: () => undefined };
  const { Presets, SingleBar } = await import('cli-progress');
  const bar = new SingleBar(
    {
      stream,
      format: `${label} [{bar}] {percentage}% | {sentText} / {totalText} | {speed}`,
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
      // Redraws are throttled by cli-progress itself; a forced redraw per part would flicker.
      fps: 10,
    },
    Presets.shades_classic,
  );
  let started = false;
  let since = Date.now();
  let from = 0;
  return {
    update(sent, total) {
      const payload = { sentText: formatBytes(sent), totalText: formatBytes(total), speed: rate(sent - from, Date.now() - since) };
      if (!started) {
        bar.start(total, sent, payload);
        started = true;
        since = Date.now();
        from = sent;
      } else bar.update(sent, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

function rate(bytes: number, ms: number): string {
  return ms > 0 ? `${formatBytes((bytes * 1000) / ms)}/s` : '';
}
