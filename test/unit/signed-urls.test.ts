import assert from 'node:assert/strict';
import { signUrl, verifySignedUrl } from '../../lib/app/signed-urls';

describe('signed URLs', () => {
  const secret = 'a-test-secret-of-some-length';
  const base = 'https://media.example/v1/';
  const path = '/uploads/6f1c1c53-2b7e-4f0e-9d2a-4a51d0f3c8e1';
  const params = { job_id: 'project-media-import-1', media_ref: 'Interview 1 & 2 = a/b.mp4', file_size: '1024', note: 'é✓' };
  const issuedAt = new Date('2025-03-01T10:00:00.000Z');
  const expiresAt = new Date('2025-03-01T13:00:00.000Z');
  const before = new Date('2025-03-01T12:59:59.000Z');

  const sign = () => new URL(signUrl(base, path, params, { secret, expiresAt }));
  const verify = (url: URL, now = issuedAt, key = secret) =>
    verifySignedUrl(url.pathname.slice('/v1'.length), url.search, { secret: key, now });
  const edited = (edit: (q: URLSearchParams) => void) => {
    const url = sign();
    edit(url.searchParams);
    return url;
  };

  it('signs a URL under the base URL that verifies until it expires, giving back its params', () => {
    const url = sign();
    assert.equal(url.origin + url.pathname, `https://media.example/v1${path}`);
    assert.equal(url.searchParams.get('expires'), String(expiresAt.getTime() / 1000));
    assert.match(url.searchParams.get('signature')!, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(verify(url, before), { ok: true, params, expiresAt });
  });

  it('reads the same params whichever way the query was percent-encoded', () => {
    const url = sign();
    const reencoded = [...url.searchParams].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
    assert.equal(verify(new URL(`${url.origin}${url.pathname}?${reencoded}`)).ok, true);
  });

  for (const name of [...Object.keys(params), 'expires']) {
    it(`is tampered when ${name} is changed, dropped or repeated`, () => {
      const changed = edited((q) => q.set(name, `${q.get(name)}0`));
      assert.deepEqual(verify(changed), { ok: false, reason: 'tampered' });
      const dropped = edited((q) => q.delete(name));
      assert.deepEqual(verify(dropped), { ok: false, reason: name === 'expires' ? 'malformed' : 'tampered' });
      const repeated = edited((q) => q.append(name, q.get(name)!));
      assert.deepEqual(verify(repeated), { ok: false, reason: 'malformed' });
    });
  }

  it('is tampered when a param is added, the path or the secret differs', () => {
    assert.deepEqual(verify(edited((q) => q.set('admin', 'true'))), { ok: false, reason: 'tampered' });
    const url = sign();
    assert.deepEqual(verifySignedUrl(path.replace('6f1c', '6f1d'), url.search, { secret, now: issuedAt }), {
      ok: false,
      reason: 'tampered',
    });
    assert.deepEqual(verify(url, issuedAt, `${secret}!`), { ok: false, reason: 'tampered' });
  });

  it('is tampered when the signature is changed, malformed when it is missing or not a signature', () => {
    const flipped = edited((q) => {
      const s = q.get('signature')!;
      q.set('signature', (s[0] === 'A' ? 'B' : 'A') + s.slice(1));
    });
    assert.deepEqual(verify(flipped), { ok: false, reason: 'tampered' });
    assert.deepEqual(verify(edited((q) => q.delete('signature'))), { ok: false, reason: 'malformed' });
    assert.deepEqual(verify(edited((q) => q.set('signature', `${q.get('signature')}A`))), { ok: false, reason: 'malformed' });
    assert.deepEqual(verify(edited((q) => q.set('signature', 'x'.repeat(42) + '!'))), { ok: false, reason: 'malformed' });
    assert.deepEqual(verify(edited((q) => q.set('expires', 'soon'))), { ok: false, reason: 'malformed' });
  });

  it('is expired from the expiry second on, and says when; the clock is an input', () => {
    assert.deepEqual(verify(sign(), expiresAt), { ok: false, reason: 'expired', expiresAt });
    assert.deepEqual(verify(sign(), new Date('2025-04-01T00:00:00Z')), { ok: false, reason: 'expired', expiresAt });
  });

  it('says tampered, not expired, of an expired URL whose expiry was pushed back', () => {
    const pushed = edited((q) => q.set('expires', String(Number(q.get('expires')) + 3600)));
    assert.deepEqual(verify(pushed, new Date('2025-03-01T13:30:00Z')), { ok: false, reason: 'tampered' });
  });

  it('refuses a short secret, reserved param names and a relative path', () => {
    assert.throws(() => signUrl(base, path, params, { secret: 'short', expiresAt }), /at least 16/);
    assert.throws(() => verifySignedUrl(path, '', { secret: '', now: issuedAt }), /at least 16/);
    assert.throws(() => signUrl(base, path, { expires: '1' }, { secret, expiresAt }), /reserved/);
    assert.throws(() => signUrl(base, path, { signature: '1' }, { secret, expiresAt }), /reserved/);
    assert.throws(() => signUrl(base, 'uploads/x', params, { secret, expiresAt }), /starts with/);
  });
});
