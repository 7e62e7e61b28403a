import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sign, verify } from '../../src/notify/signature.js';

describe('webhook signatures', () => {
  const body = JSON.stringify({ id: '1', type: 'pool.low_stock' });

  it('verifies what it signed', () => {
    assert.deepEqual(verify('whsec_test', sign('whsec_test', body), body), { ok: true });
  });

  it('rejects another secret, a changed body, an old timestamp and garbage', () => {
    const header = sign('whsec_test', body);
    assert.deepEqual(verify('whsec_other', header, body), { ok: false, reason: 'mismatch' });
    assert.deepEqual(verify('whsec_test', header, body.replace('low', 'LOW')), { ok: false, reason: 'mismatch' });
    const old = sign('whsec_test', body, Math.floor(Date.now() / 1000) - 3600);
    assert.deepEqual(verify('whsec_test', old, body), { ok: false, reason: 'too_old' });
    assert.deepEqual(verify('whsec_test', 't=abc,v1=zz', body), { ok: false, reason: 'malformed' });
    assert.deepEqual(verify('whsec_test', undefined, body), { ok: false, reason: 'malformed' });
  });
});
