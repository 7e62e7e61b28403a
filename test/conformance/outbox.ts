/**
 * The outbox delivery contract (core/outbox.ts), run unchanged against every store with an outbox.
 * Events are made the portable way: a sale goes live for a SKU with wishlisters. Each test opens
 * its own store, so counts are exact. Waits are bounded lower limits (a lease or retry delay must
 * have passed), never speed assertions.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { OutboxBackend } from '../../src/core/outbox.js';
import type { Dibs } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import type { ConformanceTarget } from './pools.js';

/** Opens a store, makes `fans` + 1 events (one sale.live, one notification per fan), runs `fn`. */
async function withEvents(
  open: () => Promise<ConformanceTarget>,
  fans: number,
  fn: (outbox: OutboxBackend, dibs: Dibs) => Promise<void>,
): Promise<void> {
  const target = await open();
  try {
    const { dibs } = target;
    for (let i = 0; i < fans; i++)
      await dibs.sales.wish('OUTBOX-SKU', `fan-${String(i).padStart(3, '0')}`, {
        webhook: `http://127.0.0.1:9/fan-${i}`,
      });
    await dibs.sales.create({
      sku: 'OUTBOX-SKU',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: 10,
    });
    assert.equal((await dibs.sales.activateDue()).notifications, fans);
    await fn(dibs.backend.outbox, dibs);
  } finally {
    await target.cleanup();
  }
}

export function outboxConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: outbox delivery`, () => {
    it('leases due events oldest first, each to one caller at a time', async () => {
      await withEvents(open, 11, async (outbox) => {
        const first = await outbox.claimDue(4, 60_000);
        assert.equal(first.length, 4);
        assert.deepEqual(
          first.map((e) => Number(e.id)),
          [...first.map((e) => Number(e.id))].sort((a, b) => a - b),
          'oldest first',
        );
        assert.equal(first[0]!.type, 'sale.live');
        assert.ok(
          first.every((e) => e.attempts === 0 && typeof e.idempotencyKey === 'string' && e.payload.sale !== undefined),
        );
        // Concurrent callers split the rest between them: no event is leased twice.
        const batches = await Promise.all(Array.from({ length: 4 }, () => outbox.claimDue(3, 60_000)));
        const ids = [...first, ...batches.flat()].map((e) => e.id);
        assert.equal(ids.length, 12);
        assert.equal(new Set(ids).size, 12);
        assert.deepEqual(await outbox.claimDue(10, 60_000), [], 'everything is leased');
        const status = await outbox.status();
        assert.equal(status.pending, 12, 'leased events are still pending');
        assert.equal(status.delivered, 0);
      });
    });

    it('an expired lease makes the event due again (a crashed dispatcher loses nothing)', async () => {
      await withEvents(open, 2, async (outbox) => {
        const leased = await outbox.claimDue(10, 1000);
        assert.equal(leased.length, 3);
        assert.deepEqual(await outbox.claimDue(10, 1000), []);
        await sleep(1300);
        const again = await outbox.claimDue(10, 60_000);
        assert.deepEqual(
          again.map((e) => e.id),
          leased.map((e) => e.id),
        );
      });
    });

    it('retries after the delay, logs every attempt, delivers once, dead-letters on give-up', async () => {
      await withEvents(open, 2, async (outbox) => {
        const [a, b, c] = await outbox.claimDue(10, 60_000);
        await outbox.markFailed(a!.id, 'HTTP 503', 1000);
        await outbox.markFailed(b!.id, 'HTTP 410', null);
        await outbox.markDelivered(c!.id, 'HTTP 200');
        assert.deepEqual(
          await outbox.claimDue(10, 60_000),
          [],
          'the retry is not due yet; dead and delivered never are',
        );
        await sleep(1300);
        const retry = await outbox.claimDue(10, 60_000);
        assert.deepEqual(
          retry.map((e) => [e.id, e.attempts]),
          [[a!.id, 1]],
        );
        await outbox.markDelivered(a!.id, 'HTTP 200');
        await outbox.markDelivered(a!.id, 'HTTP 200 (late duplicate)');
        assert.deepEqual(
          (await outbox.deliveries(a!.id)).map((d) => [d.attempt, d.ok, d.detail]),
          [
            [1, false, 'HTTP 503'],
            [2, true, 'HTTP 200'],
          ],
          'a second success is not logged',
        );
        assert.deepEqual(
          (await outbox.deliveries(b!.id)).map((d) => [d.attempt, d.ok]),
          [[1, false]],
        );
        assert.ok((await outbox.deliveries(c!.id)).every((d) => !Number.isNaN(Date.parse(d.at))));
        const status = await outbox.status();
        assert.deepEqual(
          { pending: status.pending, delivered: status.delivered, dead: status.dead },
          { pending: 0, delivered: 2, dead: 1 },
        );
        assert.equal(status.oldestPendingMs, 0, 'no lag when nothing is pending');
        await rejectsWith(outbox.deliveries('not-an-id'), 'invalid_input', 'id');
      });
    });

    it('lists dead letters newest first; retry now makes a dead or waiting event due, keeping its log', async () => {
      await withEvents(open, 2, async (outbox) => {
        const [a, b, c] = await outbox.claimDue(10, 60_000);
        await outbox.markFailed(a!.id, 'HTTP 500', null);
        await sleep(50);
        await outbox.markFailed(b!.id, 'HTTP 410', null);
        await outbox.markFailed(c!.id, 'HTTP 503', 60_000);
        const dead = await outbox.deadLetters(10);
        assert.deepEqual(
          dead.map((d) => [d.id, d.type, d.attempts, d.lastError]),
          [
            [b!.id, b!.type, 1, 'HTTP 410'],
            [a!.id, a!.type, 1, 'HTTP 500'],
          ],
        );
        assert.ok(dead.every((d) => !Number.isNaN(Date.parse(d.deadAt)) && !Number.isNaN(Date.parse(d.createdAt))));
        assert.deepEqual(
          (await outbox.deadLetters(1)).map((d) => d.id),
          [b!.id],
        );
        assert.deepEqual(await outbox.claimDue(10, 60_000), [], 'dead and backed-off events are not due');

        assert.equal(await outbox.retryNow(a!.id), 'queued', 'a dead letter');
        assert.equal(await outbox.retryNow(c!.id), 'queued', 'an event waiting for its retry');
        const due = await outbox.claimDue(10, 60_000);
        assert.deepEqual(
          due.map((e) => [e.id, e.attempts]).sort(),
          [
            [a!.id, 1],
            [c!.id, 1],
          ].sort(),
        );
        const status = await outbox.status();
        assert.deepEqual({ pending: status.pending, dead: status.dead }, { pending: 2, dead: 1 });
        assert.deepEqual(
          (await outbox.deadLetters(10)).map((d) => d.id),
          [b!.id],
        );

        await outbox.markDelivered(a!.id, 'HTTP 200');
        assert.deepEqual(
          (await outbox.deliveries(a!.id)).map((d) => [d.attempt, d.ok, d.detail]),
          [
            [1, false, 'HTTP 500'],
            [2, true, 'HTTP 200'],
          ],
          'the retry continues the log',
        );
        assert.equal(await outbox.retryNow(a!.id), 'delivered');
        await rejectsWith(outbox.retryNow('not-an-id'), 'invalid_input', 'id');
      });
    });

    it('reports the age of the oldest undelivered event as the lag', async () => {
      await withEvents(open, 1, async (outbox) => {
        await sleep(400);
        const { pending, oldestPendingMs } = await outbox.status();
        assert.equal(pending, 2);
        assert.ok(oldestPendingMs >= 300, `lag ${oldestPendingMs} ms`);
      });
    });
  });
}
