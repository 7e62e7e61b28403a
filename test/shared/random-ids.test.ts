import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomId } from '../../src/backends/shared/random-ids.js';

describe('randomId (hot-path ids drawn from the CSPRNG in batches)', () => {
  it('never hands out the same id twice, across many batches', () => {
    const ids = Array.from({ length: 20_000 }, () => randomId(16)); // 78 batches of 4 kB
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids.slice(0, 300)) assert.match(id, /^[A-Za-z0-9_-]{22}$/);
  });

  it('gives the bytes asked for, also when they straddle the end of a batch', () => {
    for (let i = 0; i < 600; i++) {
      const bytes = 1 + (i % 37);
      assert.equal(Buffer.from(randomId(bytes), 'base64url').length, bytes);
    }
  });
});
