import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sdkTypes } from '../../sdk/generate';
import { retryAfterSeconds } from '../../sdk/errors';
import { eventData } from '../../sdk/jobs';

describe('SDK', () => {
  it('sdk/schema.d.ts is what the document generates, byte for byte (run `npx tsx bin/sdk-types.ts` after changing the API)', async function () {
    this.timeout(20_000);
    const committed = readFileSync(join(__dirname, '../../sdk/schema.d.ts'), 'utf8');
    assert.ok((await sdkTypes()) === committed, 'sdk/schema.d.ts is stale: regenerate it');
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    assert.equal(retryAfterSeconds('5'), 5);
    assert.equal(retryAfterSeconds(null), undefined);
    assert.equal(retryAfterSeconds('soon'), undefined);
    const now = Date.parse('2026-01-05T10:00:00Z');
    assert.equal(retryAfterSeconds('Mon, 05 Jan 2026 10:00:30 GMT', now), 30);
  });

  it('splits a Server-Sent Events stream into its events, across chunks, multi-line data joined', async () => {
    const chunks = ['id: 1\nevent: job\nda', 'ta: {"a":1}\n\n: comment\n\r\n', 'data: x\ndata: y\r\n\r\n', 'data: cut'];
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const chunk of chunks) c.enqueue(encoder.encode(chunk));
        c.close();
      },
    });
    const events: string[] = [];
    for await (const data of eventData(body)) events.push(data);
    assert.deepEqual(events, ['{"a":1}', 'x\ny']);
  });
});
