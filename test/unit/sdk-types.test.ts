import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sdkTypes } from '../../sdk/generate';
import { retryAfterSeconds } from '../../sdk/errors';
import { eventData } from '../../sdk/jobs';
import { retrying } from '../../sdk/retry';

/** A fetch answering from a script, counting the bodies it was sent. */
function scripted(answers: { status: number; retryAfter?: string }[]) {
  const bodies: string[] = [];
  const fetch: typeof globalThis.fetch = async (input) => {
    bodies.push(await (input as Request).text());
    const a = answers[Math.min(bodies.length - 1, answers.length - 1)];
    return new Response(null, { status: a.status, headers: a.retryAfter === undefined ? {} : { 'Retry-After': a.retryAfter } });
  };
  return { fetch, bodies };
}

describe('SDK', () => {
  it('sdk/schema.d.ts is what the document generates, byte for byte (run `npx tsx bin/sdk-types.ts` after changing the API)', async function () {
    this.timeout(20_000);
    const committed = readFileSync(join(__dirname, '../../sdk/schema.d.ts'), 'utf8');
    assert.ok((await sdkTypes()) === committed, 'sdk/schema.d.ts is stale: regenerate it');
  });

  it('retries 429, and 503 with Retry-After, sending the body again, at most maxAttempts times', async () => {
    const options = { maxAttempts: 3, maxRetryAfterSeconds: 60 };
    const busy = scripted([{ status: 503, retryAfter: '0' }, { status: 429, retryAfter: '0' }, { status: 201 }]);
    const res = await retrying(busy.fetch, options)('http://x.test/v1/jobs/agent', { method: 'POST', body: '{"prompt":"p"}' });
    assert.equal(res.status, 201);
    assert.deepEqual(busy.bodies, ['{"prompt":"p"}', '{"prompt":"p"}', '{"prompt":"p"}']);

    const always = scripted([{ status: 429, retryAfter: '0' }]);
    assert.equal((await retrying(always.fetch, options)('http://x.test/v1/status')).status, 429);
    assert.equal(always.bodies.length, 3);

    for (const answer of [{ status: 503 }, { status: 400 }, { status: 409, retryAfter: '0' }, { status: 429, retryAfter: '61' }]) {
      const once = scripted([answer]);
      assert.equal((await retrying(once.fetch, options)('http://x.test/v1/status')).status, answer.status);
      assert.equal(once.bodies.length, 1, JSON.stringify(answer));
    }
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
