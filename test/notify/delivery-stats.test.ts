/**
 * The dispatcher's per-endpoint counts (the dashboard's success rates): each endpoint's
 * successes and failures with the last error, credentials never kept, a bounded number of endpoints.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeliveryStats } from '../../src/notify/delivery-stats.js';

describe('DeliveryStats', () => {
  it("counts each endpoint's outcomes, keeps the last error, and never keeps a URL's credentials", () => {
    const stats = new DeliveryStats();
    stats.record('https://user:secret@hooks.example.com/a', false, 'POST …: HTTP 500');
    stats.record('https://user:secret@hooks.example.com/a', true);
    stats.record('redis-stream:events', true);
    const list = stats.list();
    assert.deepEqual(
      list.map((e) => [e.endpoint, e.ok, e.failed, e.lastError]),
      [
        ['https://hooks.example.com/a', 1, 1, 'POST …: HTTP 500'],
        ['redis-stream:events', 1, 0, null],
      ],
    );
    assert.ok(!JSON.stringify(list).includes('secret'));
    assert.ok(list[0]!.lastOkAt && list[0]!.lastFailureAt);
  });

  it('keeps at most 200 endpoints', () => {
    const stats = new DeliveryStats();
    for (let i = 0; i < 250; i++) stats.record(`https://hooks.example.com/${i}`, true);
    assert.equal(stats.list().length, 200);
  });
});
