import assert from 'node:assert/strict';
import { canonicalJson, fingerprintOf } from '../../lib/app/idempotency';

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
});
