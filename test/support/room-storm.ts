/**
 * The waiting-room storm suite, run per backend. A fair line under load: 2,000 shoppers in 4 OS
 * processes join the waiting room of a 20-unit sale at once; admitted shoppers reserve with their ticket and confirm, a fifth abandon their
 * hold (1 s TTL) so its unit goes back to the line. Afterwards: exactly 20 sold, admission went to
 * the earliest tickets in order (nobody skipped the line), nobody held two tickets or two units,
 * forged tickets were refused, and the sale's audit is clean.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { runSaleStorm, type SaleOp } from './sale-storm.js';

const WORKER = new URL('./room-worker.ts', import.meta.url).pathname;

/** Outcomes of the waiting-room storm (room-worker.ts), one per step a shopper took. */
export interface RoomOutcome {
  customer: string;
  then: 'confirm' | 'cancel' | 'abandon';
  step: 'join' | 'forged' | 'admission' | 'reserve' | 'confirm';
  status: 'ok' | 'error';
  number?: number;
  ticketStatus?: string;
  holdId?: string;
  orderId?: string;
  error?: string;
}

export function roomStormSuite(
  label: string,
  temp: { readonly dibs: Dibs; readonly store: string },
  sizes: { shoppers: number; cap: number; processes: number } = { shoppers: 2000, cap: 20, processes: 4 },
): void {
  const { shoppers: SHOPPERS, cap: CAP, processes: PROCESSES } = sizes;
  describe(`${label}: waiting room, ${SHOPPERS} shoppers in ${PROCESSES} processes for ${CAP} units`, () => {
    it('admits in ticket order, sells exactly the cap, refuses forgeries, audit clean', async () => {
      const { dibs, store } = temp;
      const sale = await dibs.sales.create({
        sku: 'ROOM',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: CAP,
        perCustomerLimit: 1,
      });
      await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 40, windowMs: 3000 });
      const ops: SaleOp[] = Array.from({ length: SHOPPERS }, (_, i) => ({
        customer: `s${i}`,
        kind: 'reserve',
        quantity: 1,
        then: i % 5 === 0 ? 'abandon' : 'confirm',
        thinkMs: 20,
        ...(i % 50 === 7 ? { key: 'forge' } : {}),
      }));
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RoomOutcome>({
        store,
        sale: sale.id,
        lanes,
        ttlMs: 1000,
        concurrency: Math.ceil(SHOPPERS / PROCESSES),
        timeoutMs: 240_000,
        worker: WORKER,
      });

      const joins = outcomes.filter((o) => o.step === 'join');
      assert.equal(joins.length, SHOPPERS, 'every shopper joined once');
      const numbers = joins.map((o) => o.number!).sort((a, b) => a - b);
      assert.deepEqual(
        numbers,
        Array.from({ length: SHOPPERS }, (_, i) => i + 1),
        `tickets 1..${SHOPPERS}, one per shopper`,
      );

      const forged = outcomes.filter((o) => o.step === 'forged');
      assert.equal(forged.length, ops.filter((o) => o.key === 'forge').length);
      assert.deepEqual(
        forged.filter((o) => o.status !== 'error' || o.error !== 'invalid_ticket'),
        [],
        'every forged ticket refused as invalid_ticket',
      );

      // Fairness: every ticket that was ever admitted precedes every ticket that never was.
      const admissions = outcomes.filter((o) => o.step === 'admission');
      assert.equal(admissions.length, SHOPPERS, 'every shopper learned its fate');
      const admitted = admissions
        .filter((o) => o.ticketStatus === 'admitted' || o.ticketStatus === 'expired')
        .map((o) => o.number!);
      const turnedAway = admissions.filter((o) => o.ticketStatus === 'sold_out').map((o) => o.number!);
      assert.equal(
        admitted.length + turnedAway.length,
        SHOPPERS,
        `no one left waiting: ${JSON.stringify(admissions.filter((o) => !['admitted', 'expired', 'sold_out'].includes(o.ticketStatus!)).slice(0, 3))}`,
      );
      assert.ok(
        Math.max(...admitted) < Math.min(...turnedAway),
        `nobody skipped the line: last admitted ${Math.max(...admitted)}, first turned away ${Math.min(...turnedAway)}`,
      );
      assert.deepEqual(
        [...admitted].sort((a, b) => a - b),
        Array.from({ length: admitted.length }, (_, i) => i + 1),
        'the admitted are exactly the first tickets',
      );
      assert.ok(admitted.length > CAP, 'abandoned holds handed their units to the next tickets');

      // Units: exactly the cap, one per customer, each to an admitted ticket.
      const orders = outcomes.filter((o) => o.step === 'confirm' && o.status === 'ok');
      assert.equal(orders.length, CAP);
      assert.equal(new Set(orders.map((o) => o.customer)).size, CAP);
      const finished = await dibs.sales.get(sale.id);
      assert.equal(finished.stats.sold, CAP);
      assert.deepEqual(await dibs.sales.audit(sale.id), []);
      const room = await dibs.waitingRooms.get(sale.id);
      assert.equal(room.tickets.waiting, 0);
      assert.equal(room.tickets.sold_out, turnedAway.length);
    });
  });
}
