/**
 * The waiting-room conformance suite, run unchanged against every backend with waiting rooms.
 * Waits are the smallest window/TTL the API allows (1 s) plus slack; nothing asserts speed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { drawnPlaces, type Dibs, type DibsError, type Ticket } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import type { ConformanceTarget } from './pools.js';

const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

export function waitingRoomConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: waiting rooms`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    /** A live capped sale behind a waiting room. */
    const room = async (
      options: {
        cap?: number;
        limit?: number;
        rate?: number;
        windowMs?: number;
        startsInMs?: number;
        fairStart?: boolean;
        verification?: boolean;
      } = {},
    ) => {
      const sale = await dibs.sales.create({
        sku: `WR-${++n}`,
        startsAt: iso(options.startsInMs ?? 0),
        endsAt: iso(3_600_000),
        cap: options.cap ?? 2,
        perCustomerLimit: options.limit ?? 1,
      });
      await dibs.waitingRooms.enable(sale.id, {
        admitPerSecond: options.rate ?? 1000,
        windowMs: options.windowMs ?? 60_000,
        ...(options.fairStart ? { fairStart: true } : {}),
        ...(options.verification ? { verification: true } : {}),
      });
      return sale.id;
    };
    const line = async (sale: string, count: number): Promise<Ticket[]> => {
      const tickets: Ticket[] = [];
      for (let i = 1; i <= count; i++) tickets.push(await dibs.waitingRooms.join(sale, `c${i}`));
      return tickets;
    };
    const status = (sale: string, t: Ticket) => dibs.waitingRooms.ticket(sale, t.customer, t.token);

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    it('numbers tickets in arrival order; joining again returns the same ticket', async () => {
      const sale = await room({ cap: 1 });
      const [a, b, c] = await line(sale, 3);
      assert.deepEqual([a!.number, b!.number, c!.number], [1, 2, 3]);
      assert.deepEqual(await dibs.waitingRooms.join(sale, 'c2'), { ...b!, ...(await status(sale, b!)) });
      assert.equal((await dibs.waitingRooms.join(sale, 'c2')).number, 2);
      const info = await dibs.waitingRooms.get(sale);
      assert.equal(info.tickets.waiting + info.tickets.admitted, 3);
    });

    it('admits only while units remain, in order; the others wait with a position', async () => {
      const sale = await room({ cap: 2 });
      const tickets = await line(sale, 5);
      const now = await Promise.all(tickets.map((t) => status(sale, t)));
      assert.deepEqual(
        now.map((t) => t.status),
        ['admitted', 'admitted', 'waiting', 'waiting', 'waiting'],
      );
      assert.deepEqual(
        now.map((t) => t.position),
        [0, 0, 0, 1, 2],
      );
      assert.ok(now[4]!.estimatedWaitMs! > 0);
      await rejectsWith(dibs.waitingRooms.reserve(sale, 'c3', tickets[2]!.token, 1, 60_000), 'not_admitted');
    });

    it('a sale behind a waiting room refuses plain buys and reservations', async () => {
      const sale = await room();
      await rejectsWith(dibs.sales.buy(sale, 'x', 1), 'ticket_required');
      await rejectsWith(dibs.sales.reserve(sale, 'x', 1, 60_000), 'ticket_required');
      await rejectsWith(
        dibs.sales.holdCart({ customer: 'x', lines: [{ sale, quantity: 1 }], ttlMs: 60_000 }),
        'ticket_required',
      );
    });

    it('refuses forged tickets and tickets presented by another customer', async () => {
      const sale = await room();
      const [a, b] = await line(sale, 2);
      await rejectsWith(dibs.waitingRooms.ticket(sale, 'c2', a!.token), 'invalid_ticket');
      await rejectsWith(dibs.waitingRooms.reserve(sale, 'c2', a!.token, 1, 60_000), 'invalid_ticket');
      const forged = `${b!.number}.${'A'.repeat(43)}`;
      await rejectsWith(dibs.waitingRooms.reserve(sale, 'c2', forged, 1, 60_000), 'invalid_ticket');
      await rejectsWith(dibs.waitingRooms.ticket(sale, 'c2', 'not-a-token'), 'invalid_input');
      // a token minted for another sale is worthless here
      const other = await room();
      const elsewhere = await dibs.waitingRooms.join(other, 'c2');
      await rejectsWith(dibs.waitingRooms.reserve(sale, 'c2', elsewhere.token, 1, 60_000), 'invalid_ticket');
    });

    it('reserving with an admitted ticket uses it; a retry returns the same hold', async () => {
      const sale = await room({ cap: 2, limit: 2 });
      const [a] = await line(sale, 1);
      const first = await dibs.waitingRooms.reserve(sale, 'c1', a!.token, 2, 60_000);
      assert.equal(first.hold.quantity, 2);
      const again = await dibs.waitingRooms.reserve(sale, 'c1', a!.token, 2, 60_000);
      assert.equal(again.hold.id, first.hold.id);
      assert.equal(again.replayed, true);
      assert.equal((await status(sale, a!)).status, 'used');
      await dibs.sales.confirm(first.hold.id);
      assert.equal((await dibs.sales.get(sale)).stats.sold, 2);
    });

    it('a cancelled hold admits the next ticket in line', async () => {
      const sale = await room({ cap: 1 });
      const [a, b, c] = await line(sale, 3);
      const { hold } = await dibs.waitingRooms.reserve(sale, 'c1', a!.token, 1, 60_000);
      assert.equal((await status(sale, b!)).status, 'waiting');
      await dibs.sales.cancelHold(hold.id);
      assert.equal((await status(sale, b!)).status, 'admitted');
      assert.equal((await status(sale, c!)).status, 'waiting');
    });

    it('an admitted ticket that does not reserve in its window expires and the next is admitted', async () => {
      const windowMs = 1000;
      const sale = await room({ cap: 1, windowMs });
      // a's admission is read from its own join (the same atomic step), not from a later poll: a
      // loaded store took longer than the 1 s window to join b and poll a, which then read expired
      const asked = Date.now();
      const [a, b] = await line(sale, 2);
      assert.equal(a!.status, 'admitted');
      const aUntil = Date.parse(a!.admittedUntil!);
      // the store admitted a after it was asked (the store is on this host: one clock; 10 ms for rounding)
      assert.ok(aUntil >= asked + windowMs - 10, `a's window ends at ${a!.admittedUntil}, sooner than ${windowMs} ms`);
      // the state, not a timer: a's window has passed once a poll says so (the store is on this host,
      // so this clock read after its answer is at least the store's clock of the step)
      let late = await status(sale, a!);
      for (const deadline = Date.now() + 30_000; late.status === 'admitted'; late = await status(sale, a!)) {
        assert.ok(Date.now() < deadline, `a still admitted 30 s after its ${windowMs} ms window began`);
        await sleep(50);
      }
      assert.equal(late.status, 'expired');
      assert.ok(Date.now() >= aUntil, `a expired before the end of its window (${a!.admittedUntil})`);
      // the step that expired a admitted b; b's own window may have passed too by the time a loaded
      // store answers, but never before a's window and b's had both run
      const next = await status(sale, b!);
      if (next.status === 'expired')
        assert.ok(Date.now() >= aUntil + windowMs, 'b expired before a window of its own had passed');
      else assert.equal(next.status, 'admitted');
      await rejectsWith(dibs.waitingRooms.reserve(sale, 'c1', a!.token, 1, 60_000), 'not_admitted');
    });

    it('when the sale sells out, everyone still waiting is told at once', async () => {
      const sale = await room({ cap: 1 });
      const [a, b, c] = await line(sale, 3);
      const { hold } = await dibs.waitingRooms.reserve(sale, 'c1', a!.token, 1, 60_000);
      await dibs.sales.confirm(hold.id);
      assert.equal((await status(sale, c!)).status, 'sold_out');
      assert.equal((await status(sale, b!)).status, 'sold_out');
      assert.equal((await status(sale, b!)).estimatedWaitMs, null);
      assert.equal((await dibs.waitingRooms.get(sale)).tickets.sold_out, 2);
    });

    it('admits at the configured rate', async () => {
      const sale = await room({ cap: 100, rate: 2 });
      const opened = performance.now();
      const tickets = await line(sale, 6);
      // One poll after another: a poll that finds the room busy being stepped by another answers
      // from the last committed state (PostgreSQL, room_poll), so concurrent polls could all miss
      // the admissions one of them is committing; in sequence each sees the one before it.
      const admitted = async () => {
        let n = 0;
        for (const t of tickets) if ((await status(sale, t)).status === 'admitted') n++;
        return n;
      };
      const first = await admitted();
      // a slow store (the emulator on a loaded machine) takes a while to join and poll: the rate
      // goes on admitting meanwhile, 2 a second
      const since = (performance.now() - opened) / 1000;
      const most = 3 + Math.ceil(Math.max(0, since - 0.5) * 2);
      assert.ok(
        first >= 2 && first <= most,
        `a full bucket admits about one second's worth at once (${first} in ${since.toFixed(2)} s, at most ${most})`,
      );
      await sleep(1100);
      const later = await admitted();
      assert.ok(later > first || first === tickets.length, `more were admitted a second later (${first} → ${later})`);
    });

    it('the line forms before the start; admission begins at it (in arrival order without a fair start)', async () => {
      // the start is brought forward once both are in line (a loaded store took longer than 1.5 s
      // to create the room and join them, so the first joined after a start 1.5 s ahead)
      const sale = await room({ cap: 5, startsInMs: 600_000 });
      const [a, b] = await line(sale, 2);
      assert.equal(a!.status, 'waiting');
      assert.deepEqual([a!.place, b!.place], [1, 2]);
      const startsAt = Date.now() + 300;
      await dibs.sales.update(sale, { startsAt: new Date(startsAt).toISOString() });
      await sleep(Math.max(0, startsAt - Date.now()) + 200); // the state waited for is the clock past the start
      assert.equal((await status(sale, a!)).status, 'admitted');
      const { draw } = await dibs.waitingRooms.get(sale);
      assert.deepEqual([draw?.seed, draw?.preQueue], [null, 2], 'the opening is recorded, with no shuffle');
    });

    it('a fair start turned off before the opening: its pre-queue is placed in arrival order at it', async () => {
      // the opening of a room in arrival order writes only tickets without a place: here the two
      // that joined while the fair start was on, between two that joined without it
      const sale = await room({ cap: 2, startsInMs: 600_000 });
      const settings = { admitPerSecond: 1000, windowMs: 60_000 };
      const tickets = [await dibs.waitingRooms.join(sale, 'c1')];
      await dibs.waitingRooms.enable(sale, { ...settings, fairStart: true });
      tickets.push(await dibs.waitingRooms.join(sale, 'c2'), await dibs.waitingRooms.join(sale, 'c3'));
      await dibs.waitingRooms.enable(sale, { ...settings, fairStart: false });
      tickets.push(await dibs.waitingRooms.join(sale, 'c4'));
      assert.deepEqual(
        tickets.map((t) => t.place),
        [1, null, null, 4],
      );
      await dibs.sales.update(sale, { startsAt: iso(300) });
      await sleep(500);
      const { draw } = await dibs.waitingRooms.get(sale); // a step: the opening's draw and admission
      assert.deepEqual([draw?.seed, draw?.preQueue], [null, 4]);
      const now = [];
      for (const t of tickets) now.push(await status(sale, t));
      assert.deepEqual(
        now.map((t) => [t.number, t.place, t.status]),
        [
          [1, 1, 'admitted'],
          [2, 2, 'admitted'],
          [3, 3, 'waiting'],
          [4, 4, 'waiting'],
        ],
      );
      assert.deepEqual(await dibs.sales.audit(sale), []);
    });

    it('a fair start draws the pre-queue once at the opening; later arrivals queue behind in order', async () => {
      const sale = await room({ cap: 3, startsInMs: 600_000, fairStart: true });
      const early = await line(sale, 12);
      for (const t of await Promise.all(early.map((e) => status(sale, e)))) {
        assert.equal(t.status, 'waiting');
        assert.equal(t.place, null, 'no place before the draw');
        assert.equal(t.position, 11, 'before the draw, everyone else in the pre-queue');
      }
      const before = await dibs.waitingRooms.get(sale);
      assert.equal(before.fairStart, true);
      assert.equal(before.draw, null);
      // the opening, brought forward once all are in (a loaded machine's joins set no deadline)
      await dibs.sales.update(sale, { startsAt: iso(300) });
      await sleep(500);
      const late1 = await dibs.waitingRooms.join(sale, 'late-1');
      const late2 = await dibs.waitingRooms.join(sale, 'late-2');
      const { draw } = await dibs.waitingRooms.get(sale);
      assert.ok(draw, 'drawn at the opening');
      assert.match(draw.seed!, /^[0-9a-f]{16}$/);
      assert.equal(draw.preQueue, 12);
      const places = drawnPlaces(draw.seed!, 12);
      const now = await Promise.all(early.map((t) => status(sale, t)));
      assert.deepEqual(
        now.map((t) => t.place),
        early.map((t) => places[t.number]),
        'every place re-derives from the recorded seed',
      );
      assert.deepEqual(
        now
          .filter((t) => t.status === 'admitted')
          .map((t) => t.place!)
          .sort((a, b) => a - b),
        [1, 2, 3],
        'the first three places are admitted',
      );
      assert.deepEqual(
        [late1.number, late1.place, late2.number, late2.place],
        [13, 13, 14, 14],
        'arrivals after the opening keep arrival order, behind the pre-queue',
      );
      // drawn once: nothing moves on later steps
      const again = await Promise.all(early.map((t) => status(sale, t)));
      assert.deepEqual(
        again.map((t) => t.place),
        now.map((t) => t.place),
      );
      assert.deepEqual((await dibs.waitingRooms.get(sale)).draw, draw);
    });

    it('with verification, a ticket is admitted only once verified; the unverified keep their place', async () => {
      const sale = await room({ cap: 2, verification: true });
      const [a, b, c] = await line(sale, 3);
      assert.deepEqual([a!.status, a!.verified], ['waiting', false]);
      await assert.rejects(dibs.waitingRooms.reserve(sale, 'c1', a!.token, 1, 60_000), (e: DibsError) => {
        assert.equal(e.code, 'not_admitted');
        assert.equal((e.details as { verified?: boolean }).verified, false);
        return true;
      });
      const vb = await dibs.waitingRooms.verify(sale, 'c2', b!.token);
      assert.deepEqual([vb.verified, vb.status], [true, 'admitted']);
      assert.equal((await status(sale, a!)).status, 'waiting', 'passed over, not admitted');
      const va = await dibs.waitingRooms.verify(sale, 'c1', a!.token);
      assert.equal(va.status, 'admitted', 'a verified ticket that was passed over goes in first');
      assert.equal((await dibs.waitingRooms.verify(sale, 'c1', a!.token)).status, 'admitted', 'idempotent');
      const vc = await dibs.waitingRooms.verify(sale, 'c3', c!.token);
      assert.equal(vc.status, 'waiting', 'no units left for a third');
      await rejectsWith(dibs.waitingRooms.verify(sale, 'c3', a!.token), 'invalid_ticket');
      // a change of rate that leaves the other settings out keeps them
      const changed = await dibs.waitingRooms.enable(sale, { admitPerSecond: 500, windowMs: 60_000 });
      assert.deepEqual([changed.admitPerSecond, changed.verification, changed.fairStart], [500, true, false]);
      const { hold } = await dibs.waitingRooms.reserve(sale, 'c1', a!.token, 1, 60_000);
      assert.equal(hold.quantity, 1);
    });

    it('turning verification off admits the tickets it passed over first', async () => {
      const sale = await room({ cap: 2, verification: true });
      const [a, b, c] = await line(sale, 3);
      assert.equal((await dibs.waitingRooms.verify(sale, 'c2', b!.token)).status, 'admitted');
      assert.equal((await status(sale, a!)).status, 'waiting', 'passed over');
      const off = await dibs.waitingRooms.enable(sale, { admitPerSecond: 1000, windowMs: 60_000, verification: false });
      assert.equal(off.verification, false);
      assert.deepEqual(
        [(await status(sale, a!)).status, (await status(sale, c!)).status],
        ['admitted', 'waiting'],
        'the one unit left goes to the first place, passed over while unverified',
      );
    });

    it('rejects bad settings and unknown rooms', async () => {
      const sale = await dibs.sales.create({
        sku: `WR-${++n}`,
        startsAt: iso(0),
        endsAt: iso(3_600_000),
        cap: null,
        perCustomerLimit: 1,
      });
      await rejectsWith(dibs.waitingRooms.enable(sale.id, { admitPerSecond: 10, windowMs: 60_000 }), 'invalid_input');
      const capped = await room();
      await rejectsWith(
        dibs.waitingRooms.enable(capped, { admitPerSecond: 0, windowMs: 60_000 }),
        'invalid_input',
        'admitPerSecond',
      );
      await rejectsWith(dibs.waitingRooms.join('sale_000000000000000000000000', 'c1'), 'not_found');
    });
  });
}
