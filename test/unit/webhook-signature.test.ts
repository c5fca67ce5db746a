import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { generateWebhookSecret } from '../../lib/app/tokens';
import { signWebhook, verifyWebhook, type WebhookHeaders } from '../../lib/app/webhook-signature';

/**
 * The Standard Webhooks reference vector, checked by hand as well:
 *   printf '%s' 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}' \
 *     | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(echo MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw | base64 -d | xxd -p -c 100) -binary | base64
 */
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const at = (seconds: number) => new Date(seconds * 1000);
const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('webhook signatures (Standard Webhooks)', () => {
  const secret = generateWebhookSecret();
  const body = JSON.stringify({ job_id: 'j1', job_state: 'stopped', name: 'Café ☕' });
  const ts = 1_760_000_000;
  const headers = signWebhook({ id: 'delivery-1', timestamp: ts, body }, secret);
  const verify = (h: Record<string, string | string[] | undefined>, b: string | Buffer = body, now = at(ts)) =>
    verifyWebhook(h, b, secret, { now });

  it('matches the reference vector', () => {
    const { id, timestamp, body: vectorBody, secret: vectorSecret, signature } = VECTOR;
    assert.deepEqual(signWebhook({ id, timestamp, body: vectorBody }, vectorSecret), {
      'webhook-id': id,
      'webhook-timestamp': '1614265330',
      'webhook-signature': signature,
    });
    const vectorHeaders = { 'webhook-id': id, 'webhook-timestamp': '1614265330', 'webhook-signature': signature };
    assert.equal(verifyWebhook(vectorHeaders, vectorBody, vectorSecret, { now: at(timestamp) }), true);
  });

  it('reads a secret without "whsec_" as base64, as the Standard Webhooks libraries do', () => {
    const bare = VECTOR.secret.slice('whsec_'.length);
    const signed = signWebhook({ id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body }, bare);
    assert.equal(signed['webhook-signature'], VECTOR.signature);
    assert.equal(new Webhook(bare).sign(VECTOR.id, at(VECTOR.timestamp), VECTOR.body), VECTOR.signature);
  });

  it('signs what the standardwebhooks library signs, for generated secrets', () => {
    for (let i = 0; i < 20; i++) {
      const s = generateWebhookSecret();
      const b = JSON.stringify({ i, text: 'ü'.repeat(i) });
      assert.equal(
        signWebhook({ id: `d${i}`, timestamp: ts + i, body: b }, s)['webhook-signature'],
        new Webhook(s).sign(`d${i}`, at(ts + i), b),
      );
    }
  });

  it('verifies with our verifier and with standardwebhooks, from a string or the raw bytes', () => {
    assert.equal(verify({ ...headers }), true);
    assert.equal(verify({ ...headers }, Buffer.from(body, 'utf8')), true);
    const live = signWebhook({ id: 'delivery-2', timestamp: nowSeconds(), body }, secret);
    assert.deepEqual(new Webhook(secret).verify(body, { ...live }), JSON.parse(body));
    assert.deepEqual(new Webhook(secret).verify(Buffer.from(body), { ...live }), JSON.parse(body));
  });

  const tampered: [string, (h: WebhookHeaders) => [Record<string, string>, string]][] = [
    ['the body changed', (h) => [{ ...h }, body.replace('stopped', 'running')]],
    ['the body gained a trailing newline', (h) => [{ ...h }, `${body}\n`]],
    ['the id changed', (h) => [{ ...h, 'webhook-id': 'delivery-9' }, body]],
    ['the timestamp changed', (h) => [{ ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) + 1) }, body]],
    [
      'one character of the signature changed',
      (h) => [{ ...h, 'webhook-signature': h['webhook-signature'].replace(/.(?==$)/, (c) => (c === 'A' ? 'B' : 'A')) }, body],
    ],
  ];
  for (const [what, change] of tampered) {
    it(`refuses a message when ${what}, as standardwebhooks does`, () => {
      const [h, b] = change(headers);
      assert.equal(verify(h, b), false);
      const live = signWebhook({ id: 'delivery-1', timestamp: nowSeconds(), body }, secret);
      const [liveHeaders, liveBody] = change(live);
      assert.throws(() => new Webhook(secret).verify(liveBody, liveHeaders), /No matching signature/);
    });
  }

  it('refuses a signature made with another secret', () => {
    assert.equal(verifyWebhook({ ...headers }, body, generateWebhookSecret(), { now: at(ts) }), false);
  });

  it('refuses stale and future timestamps beyond the tolerance, either way', () => {
    assert.equal(verify({ ...headers }, body, at(ts + 300)), true);
    assert.equal(verify({ ...headers }, body, at(ts - 300)), true);
    assert.equal(verify({ ...headers }, body, at(ts + 301)), false);
    assert.equal(verify({ ...headers }, body, at(ts - 301)), false);
    assert.equal(verifyWebhook({ ...headers }, body, secret, { now: at(ts + 60), toleranceSeconds: 59 }), false);
    assert.equal(verifyWebhook({ ...headers }, body, secret, { now: at(ts + 60), toleranceSeconds: 60 }), true);
    const stale = signWebhook({ id: 'old', timestamp: nowSeconds() - 301, body }, secret);
    assert.throws(() => new Webhook(secret).verify(body, { ...stale }), /too old/);
  });

  it('accepts a space-separated list in which one v1 signature matches', () => {
    const good = headers['webhook-signature'];
    const other = signWebhook({ id: 'delivery-1', timestamp: ts, body }, generateWebhookSecret())['webhook-signature'];
    assert.equal(verify({ ...headers, 'webhook-signature': `${other} v1a,xyz ${good}` }), true);
    assert.equal(verify({ ...headers, 'webhook-signature': `${other} v1,${'A'.repeat(44)}` }), false);
    assert.equal(verify({ ...headers, 'webhook-signature': good.replace('v1,', 'v2,') }), false);
    assert.equal(verify({ ...headers, 'webhook-signature': good.slice(3) }), false);
  });

  it('reads header names case-insensitively and refuses missing or repeated headers', () => {
    const capitalised = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.equal(verify(capitalised), true);
    for (const name of Object.keys(headers) as (keyof WebhookHeaders)[]) {
      assert.equal(verify({ ...headers, [name]: undefined }), false, `without ${name}`);
      assert.equal(verify({ ...headers, [name]: [headers[name], headers[name]] }), false, `${name} twice`);
    }
    assert.equal(verify({ ...headers, 'webhook-timestamp': `${ts}.0` }), false);
    assert.equal(verify({ ...headers, 'webhook-timestamp': ` ${ts}` }), false);
  });

  for (const bad of ['', 'whsec_', 'whsec_not base64!', 'whsec_abc', 'whsec_YWJj\n']) {
    it(`refuses to sign or verify with the malformed secret ${JSON.stringify(bad)}`, () => {
      assert.throws(() => signWebhook({ id: 'd', timestamp: ts, body }, bad), /webhook secret/);
      assert.throws(() => verifyWebhook({ ...headers }, body, bad, { now: at(ts) }), /webhook secret/);
    });
  }

  it('refuses to sign a timestamp that is not whole seconds or an id a header cannot carry', () => {
    assert.throws(() => signWebhook({ id: 'd', timestamp: Date.now() + 0.5, body }, secret), /whole Unix seconds/);
    assert.throws(() => signWebhook({ id: 'd\r\nx: y', timestamp: ts, body }, secret), /printable ASCII/);
  });
});
