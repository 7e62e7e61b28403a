/**
 * The fair start's draw (src/core/sales/fair-draw.ts): a permutation, a pure function of the seed,
 * and pinned — PostgreSQL's room_draw and Redis's Lua run the same steps, and an auditor's copy of
 * this function must keep re-deriving orders drawn by stores of any version.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { drawnPlaces, drawOrder } from '../../src/index.js';

describe('fair start draw', () => {
  it('is a permutation of 1..n that the seed alone decides', () => {
    for (const n of [0, 1, 2, 7, 1000]) {
      const order = drawOrder('8c1f00d2b7a94e65', n);
      assert.deepEqual(
        [...order].sort((a, b) => a - b),
        Array.from({ length: n }, (_, i) => i + 1),
      );
      assert.deepEqual(drawOrder('8c1f00d2b7a94e65', n), order);
    }
    assert.notDeepEqual(drawOrder('8c1f00d2b7a94e65', 50), drawOrder('8c1f00d2b7a94e66', 50));
  });

  it('keeps the orders it drew (pinned vectors)', () => {
    assert.deepEqual(drawOrder('0123456789abcdef', 10), [9, 10, 2, 5, 4, 1, 3, 7, 6, 8]);
    assert.deepEqual(drawOrder('ffffffffffffffff', 5), [3, 5, 4, 2, 1]);
  });

  it('places are the inverse of the order', () => {
    const order = drawOrder('00000000deadbeef', 30);
    const places = drawnPlaces('00000000deadbeef', 30);
    order.forEach((number, k) => assert.equal(places[number], k + 1));
  });

  it('spreads places evenly: each early arrival is equally likely to be first', () => {
    const firsts = new Array<number>(5).fill(0);
    for (let s = 0; s < 5000; s++) firsts[drawOrder(s.toString(16).padStart(16, '0'), 5)[0]! - 1]!++;
    for (const f of firsts) assert.ok(f > 850 && f < 1150, `first places by arrival: ${firsts}`);
  });

  it('refuses a malformed seed', () => {
    assert.throws(() => drawOrder('xyz', 3));
  });
});
