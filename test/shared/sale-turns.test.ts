/**
 * Turns on sales (src/backends/firestore/sale-turns.ts), in process, no store: random jobs over
 * random sets of sales (a cart: several; a grouped buy: one), random durations and failures. Every
 * job runs, none overlaps another that shares a sale, a failing job frees its turns, and nothing
 * is left behind. Two carts taking the same sales in opposite orders would wait for each other for
 * ever: a job that has not ended within a bound fails the property.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { SaleTurns } from '../../src/backends/firestore/sale-turns.js';

const jobArb = fc.record({
  sales: fc.uniqueArray(fc.constantFrom('s0', 's1', 's2', 's3'), { minLength: 1, maxLength: 3 }),
  /** Event-loop turns before it asks. */
  delay: fc.nat(3),
  /** Event-loop turns it runs. */
  duration: fc.nat(3),
  fails: fc.boolean(),
});

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await nextTurn();
}

describe('sale turns', () => {
  it('runs every job, never two sharing a sale at once, frees turns on failure, leaves nothing behind', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(jobArb, { minLength: 1, maxLength: 12 }), async (jobs) => {
        const saleTurns = new SaleTurns();
        const running = new Map<string, number>();
        const ran: number[] = [];
        const all = Promise.allSettled(
          jobs.map(async (job, i) => {
            await turns(job.delay);
            return saleTurns.run(job.sales, async () => {
              for (const sale of job.sales) {
                assert.equal(
                  running.get(sale),
                  undefined,
                  `job ${i} runs on ${sale} while job ${running.get(sale)} does`,
                );
                running.set(sale, i);
              }
              await turns(job.duration);
              for (const sale of job.sales) running.delete(sale);
              ran.push(i);
              if (job.fails) throw new Error(`job ${i} fails`);
              return i;
            });
          }),
        );
        const outcome = await Promise.race([all, sleep(2000).then(() => 'stuck' as const)]);
        assert.notEqual(outcome, 'stuck', `jobs still waiting for their turns: ran ${ran.length} of ${jobs.length}`);
        const settled = outcome as PromiseSettledResult<number>[];
        settled.forEach((s, i) => {
          if (jobs[i]!.fails) assert.equal(s.status, 'rejected');
          else assert.deepEqual(s, { status: 'fulfilled', value: i });
        });
        assert.equal(ran.length, jobs.length);
        assert.equal(saleTurns.active, 0, 'an idle process keeps no turns');
      }),
      { numRuns: 200 },
    );
  });

  it('takes the turns of a cart in sale-id order, whatever the order of its lines', async () => {
    const saleTurns = new SaleTurns();
    const order: string[] = [];
    let releaseA!: () => void;
    const holdA = saleTurns.run(['a'], () => new Promise<void>((resolve) => (releaseA = resolve)));
    // the cart lists b first: it must not take b while it waits for a, or the buy of b waits too
    const cart = saleTurns.run(['b', 'a'], async () => void order.push('cart'));
    const buyB = saleTurns.run(['b'], async () => void order.push('buy b'));
    await turns(3);
    assert.deepEqual(order, ['buy b'], 'the buy of b waits for a cart that waits for a');
    releaseA();
    await Promise.all([holdA, cart, buyB]);
    assert.deepEqual(order, ['buy b', 'cart']);
  });
});
