import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { canonicalJson, fingerprintOf } from '../../lib/app/idempotency';

/** The canonical JSON and fingerprint as first written: recorded keys hold fingerprints made this way. */
function canonicalJsonAsFirstWritten(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJsonAsFirstWritten).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const fields = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJsonAsFirstWritten(o[k])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
const fingerprintAsFirstWritten = (method: string, path: string, body: unknown) =>
  createHash('sha256')
    .update(`${method} ${path}\n${canonicalJsonAsFirstWritten(body)}`)
    .digest('hex');

describe('Idempotency-Key fingerprint', () => {
  it('writes canonical JSON: keys sorted at every depth, arrays in order, no whitespace', () => {
    const a = { b: [{ z: 1, a: null }, 'x'], a: { d: true, c: 1.5 } };
    assert.equal(canonicalJson(a), '{"a":{"c":1.5,"d":true},"b":[{"a":null,"z":1},"x"]}');
    assert.equal(canonicalJson(JSON.parse(JSON.stringify(a, null, 2))), canonicalJson(a));
    assert.equal(canonicalJson({ 'é"\n': 'ü' }), JSON.stringify({ 'é"\n': 'ü' }));
    assert.equal(canonicalJson([]), '[]');
    assert.equal(canonicalJson({}), '{}');
  });
  it('is the same for the same request sent with other key order or spacing', () => {
    const one = fingerprintOf('POST', '/v1/jobs/import/project_media', JSON.parse('{"a":1,"b":{"x":[1,2]}}'));
    const two = fingerprintOf('POST', '/v1/jobs/import/project_media', JSON.parse('{ "b" : { "x" : [ 1 , 2 ] } , "a" : 1 }'));
    assert.equal(one, two);
    assert.match(one, /^[0-9a-f]{64}$/);
  });
  it('differs with the body (array order too), the path or the method', () => {
    const base = fingerprintOf('POST', '/v1/p', { x: [1, 2] });
    assert.notEqual(fingerprintOf('POST', '/v1/p', { x: [2, 1] }), base);
    assert.notEqual(fingerprintOf('POST', '/v1/p', { x: [1, 2], y: 1 }), base);
    assert.notEqual(fingerprintOf('POST', '/v1/q', { x: [1, 2] }), base);
    assert.notEqual(fingerprintOf('PUT', '/v1/p', { x: [1, 2] }), base);
    assert.notEqual(fingerprintOf('POST', '/v1/p', { x: '1,2' }), fingerprintOf('POST', '/v1/p', { x: ['1,2'] }));
  });
  it('is the fingerprint keys were recorded with before (the same text, the same SHA-256)', () => {
    const bodies: unknown[] = [
      { project_name: 'Bench', add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } } },
      { b: [{ z: 1, a: null, u: undefined }, 'x', undefined, [], {}], a: { d: true, c: -1.5e-7, '': 'ü"\\\n' }, 10: 0, 9: [[1]] },
      [],
      {},
      'text',
      42,
      null,
      { constructor: 1, __proto__x: 2, é: { ß: ['✓', false] } },
    ];
    for (const body of bodies) {
      assert.equal(canonicalJson(body), canonicalJsonAsFirstWritten(body), JSON.stringify(body));
      assert.equal(
        fingerprintOf('POST', '/v1/jobs/import/project_media', body),
        fingerprintAsFirstWritten('POST', '/v1/jobs/import/project_media', body),
      );
    }
  });
});
