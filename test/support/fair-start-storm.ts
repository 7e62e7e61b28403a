/**
 * The fair-start storm, run per store. Shoppers in several OS processes join a scheduled sale's
 * waiting room before it opens (the pre-queue); once all are in, the start is moved to now, a few
 * more join one after another in each process (late arrivals), and everyone polls until admitted
 * or turned away; admitted shoppers reserve and confirm, a tenth abandon their hold (1 s TTL) so
 * its unit goes back to the line. Judged by the client-side record (checkFairStart):
 *   - one draw, recorded: the room's seed re-derives every early ticket's place (drawnPlaces), and
 *     every poll of a ticket, from any process, saw that same place (a second draw would move some);
 *   - the pre-queue is arrival numbers 1..pre, the late arrivals come after it in arrival order
 *     (an answer acknowledged before another request began has the smaller number and place);
 *   - admission is a prefix of the line: the admitted places are exactly 1..k, everyone turned
 *     away is behind them, nobody holds two holds; exactly the cap sold; the sale's audit is clean.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { drawnPlaces, type Dibs, type RoomDraw } from '../../src/index.js';
import { runSaleStorm, type SaleOp } from './sale-storm.js';

const WORKER = new URL('./fair-start-worker.ts', import.meta.url).pathname;
const LONG = process.env.FAULTS_LONG === '1';

export interface FairOutcome {
  customer: string;
  step: 'join' | 'poll' | 'reserve' | 'confirm';
  number: number;
  place: number | null;
  phase?: 'pre' | 'late';
  t0?: number;
  t1?: number;
  ticketStatus?: string;
  status?: 'ok' | 'error';
  holdId?: string;
  orderId?: string;
  error?: string;
  at?: number;
}

/** Everything wrong with a fair-start run, judged from what the clients were told (empty: fair). */
export function checkFairStart(input: {
  outcomes: FairOutcome[];
  draw: RoomDraw | null;
  pre: number;
  late: number;
  cap: number;
}): string[] {
  const { outcomes, draw, pre, late, cap } = input;
  const problems: string[] = [];
  const joins = outcomes.filter((o) => o.step === 'join');
  const early = joins.filter((o) => o.phase === 'pre');
  const after = joins.filter((o) => o.phase === 'late');
  if (early.length !== pre || after.length !== late)
    problems.push(`joins acknowledged: ${early.length} early of ${pre}, ${after.length} late of ${late}`);
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
  if (JSON.stringify(sorted(early.map((o) => o.number))) !== JSON.stringify(range(1, early.length)))
    problems.push('the pre-queue is not arrival numbers 1..pre, one each');
  if (JSON.stringify(sorted(after.map((o) => o.number))) !== JSON.stringify(range(early.length + 1, after.length)))
    problems.push('late arrivals are not numbered right after the pre-queue');
  if (!draw?.seed) {
    problems.push(`no recorded draw seed: ${JSON.stringify(draw)}`);
    return problems;
  }
  if (draw.preQueue !== pre) problems.push(`the draw covers ${draw.preQueue} tickets, ${pre} joined early`);
  const places = drawnPlaces(draw.seed, draw.preQueue);
  const expected = (n: number) => (n <= draw.preQueue ? places[n]! : n);
  // every place any process was told, for every ticket
  const told = new Map<number, Set<number | null>>();
  for (const o of outcomes) {
    if (o.step === 'join' && o.phase === 'pre') {
      if (o.place !== null) problems.push(`ticket ${o.number} was placed (${o.place}) before the opening`);
      continue;
    }
    if (!told.has(o.number)) told.set(o.number, new Set());
    told.get(o.number)!.add(o.place);
  }
  let misplaced = 0;
  for (const [number, seen] of told) {
    if (seen.size !== 1 || !seen.has(expected(number))) {
      if (++misplaced <= 3)
        problems.push(
          `ticket ${number}: told place ${[...seen].join(', ')}, the recorded seed gives ${expected(number)}`,
        );
    }
  }
  if (misplaced > 3) problems.push(`… ${misplaced} tickets in all were not where the recorded draw puts them`);
  if (told.size !== pre + late) problems.push(`${told.size} tickets polled after the opening, ${pre + late} joined`);
  // late arrivals: acknowledged before another began → earlier in line
  for (const a of after)
    for (const b of after)
      if (a.t1! < b.t0! && a.number > b.number)
        problems.push(`late ticket ${a.number} was answered before ${b.number} was asked for, yet is behind it`);
  // admission is a prefix of the line
  const fate = new Map<number, string>();
  for (const o of outcomes)
    if (o.step === 'poll' && o.ticketStatus !== 'waiting') fate.set(expected(o.number), o.ticketStatus!);
  const admitted = [...fate].filter(([, s]) => s !== 'sold_out').map(([p]) => p);
  const away = [...fate].filter(([, s]) => s === 'sold_out').map(([p]) => p);
  if (fate.size !== pre + late) problems.push(`${pre + late - fate.size} shoppers never learned their fate`);
  if (JSON.stringify(sorted(admitted)) !== JSON.stringify(range(1, admitted.length)))
    problems.push(`the admitted places are not 1..${admitted.length}: ${sorted(admitted).slice(0, 12).join(',')}…`);
  if (away.length > 0 && Math.min(...away) < Math.max(...admitted))
    problems.push(`place ${Math.min(...away)} was turned away while ${Math.max(...admitted)} was admitted`);
  const holds = outcomes.filter((o) => o.step === 'reserve' && o.status === 'ok');
  if (new Set(holds.map((o) => o.customer)).size !== holds.length) problems.push('a shopper reserved twice');
  const orders = outcomes.filter((o) => o.step === 'confirm' && o.status === 'ok');
  if (orders.length !== cap) problems.push(`${orders.length} orders acknowledged for ${cap} units`);
  return problems;
}

export function fairStartStormSuite(
  label: string,
  temp: { readonly dibs: Dibs; readonly store: string },
  sizes: { pre: number; late: number; cap: number; processes: number } = LONG
    ? { pre: 5000, late: 400, cap: 200, processes: 4 }
    : { pre: 1000, late: 100, cap: 60, processes: 4 },
): void {
  const { pre, late, cap, processes } = sizes;
  describe(`${label}: fair start, ${pre} early and ${late} late shoppers in ${processes} processes for ${cap} units`, () => {
    it('draws the pre-queue once (re-derivable from the seed), late arrivals in order, nobody skipped', async () => {
      const { dibs, store } = temp;
      const sale = await dibs.sales.create({
        sku: `FAIR-${Date.now()}`,
        startsAt: new Date(Date.now() + 3_600_000).toISOString(),
        endsAt: new Date(Date.now() + 7_200_000).toISOString(),
        cap,
        perCustomerLimit: 1,
      });
      await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 400, windowMs: 20_000, fairStart: true });
      const ops: SaleOp[] = Array.from({ length: pre + late }, (_, i) => ({
        customer: `f${i}`,
        kind: 'reserve',
        quantity: 1,
        then: i % 10 === 0 ? 'abandon' : 'confirm',
        thinkMs: 0,
        ...(i < pre ? { key: 'pre' } : {}),
      }));
      const lanes = Array.from({ length: processes }, (_, p) => ops.filter((_, i) => i % processes === p));
      const outcomes = await runSaleStorm<FairOutcome>({
        store,
        sale: sale.id,
        lanes,
        ttlMs: 1000,
        concurrency: 50,
        timeoutMs: 240_000,
        worker: WORKER,
        during: async (done) => {
          // the opening, once every early shopper holds a ticket
          while (!done() && (await dibs.waitingRooms.get(sale.id)).tickets.waiting < pre)
            await new Promise((r) => setTimeout(r, 50));
          if (!done()) await dibs.sales.update(sale.id, { startsAt: new Date(Date.now() + 200).toISOString() });
        },
      });
      const room = await dibs.waitingRooms.get(sale.id);
      assert.deepEqual(checkFairStart({ outcomes, draw: room.draw, pre, late, cap }), []);
      assert.equal((await dibs.sales.get(sale.id)).stats.sold, cap);
      assert.deepEqual(await dibs.sales.audit(sale.id), []);
      assert.equal(room.tickets.waiting, 0);
    });
  });
}
