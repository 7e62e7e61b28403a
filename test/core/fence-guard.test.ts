/**
 * FenceGuard: a write passes only with a fence above every fence the resource has seen, or with
 * the SAME lease that wrote last (a holder writing twice). Two different holders carrying equal
 * fences — what a store that lost its fence history used to hand out — must not both pass.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FenceGuard } from '../../src/index.js';

const lease = (fence: number, token: string) => ({ fence, token: `${token}.30000` });

describe('FenceGuard', () => {
  it('refuses an older fence and accepts a newer one', () => {
    const guard = new FenceGuard();
    assert.equal(guard.accept('row', lease(5, 'a')), true);
    assert.equal(guard.accept('row', lease(4, 'b')), false);
    assert.equal(guard.accept('row', lease(6, 'c')), true);
    assert.equal(guard.accept('row', lease(5, 'a')), false);
    assert.throws(() => guard.check('row', lease(5, 'a')), { code: 'lease_lost' });
  });

  it('lets the same lease write again with its fence, also after a renewal (same token)', () => {
    const guard = new FenceGuard();
    assert.equal(guard.accept('row', lease(7, 'a')), true);
    assert.equal(guard.accept('row', lease(7, 'a')), true);
    // a renewal from another instance that only had the store token (no TTL suffix)
    assert.equal(guard.accept('row', { fence: 7, token: 'a' }), true);
  });

  it('refuses an equal fence from a different holder', () => {
    const guard = new FenceGuard();
    assert.equal(guard.accept('row', lease(1, 'a')), true);
    assert.equal(guard.accept('row', lease(1, 'b')), false, 'two holders with one fence both passed');
  });

  it('a bare fence number proves no identity: only a strictly greater one passes', () => {
    const guard = new FenceGuard();
    assert.equal(guard.accept('row', 3), true);
    assert.equal(guard.accept('row', 3), false);
    assert.equal(guard.accept('row', lease(3, 'a')), false);
    assert.equal(guard.accept('row', 4), true);
  });

  it('resources are independent', () => {
    const guard = new FenceGuard();
    assert.equal(guard.accept('a', lease(9, 'x')), true);
    assert.equal(guard.accept('b', lease(1, 'y')), true);
  });
});
