/**
 * The fair start's draw on Redis runs in slices (sale_lib.lua `draw`: at most 500 places per
 * script run) so that a large pre-queue does not stop Redis for everyone. A draw interrupted
 * between slices — its caller gone after one slice, as a killed process leaves it — is finished by
 * whoever steps next, with the seed recorded by the first slice (not the one the next caller
 * proposes), into the one permutation that seed gives; meanwhile nobody is admitted and a newcomer
 * is placed after the pre-queue. Here a raw client runs single slices with seeds of its own, as two
 * callers that die after one slice each, then the facade (with fresh seeds) finishes the draw.
 *
 * Also here: `waitingRooms.get` reads the room's counters of tickets by status (kept in the same
 * script as each ticket), and the sale's audit checks them against the tickets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { drawnPlaces, openDibs, type Dibs, type Ticket } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { runScript } from '../../src/backends/redis/scripts.js';
import { SETTLED, settledRoom } from '../support/room-counters.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const available = await sharedRedisAvailable();
/** Three slices: 500, 500 and 300 places. */
const PRE = 1300;

describe('redis: a fair draw interrupted between slices', { skip: !available }, () => {
  const prefix = testPrefix();
  let dibs: Dibs;
  let raw: Redis;

  before(async () => {
    dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    raw = new Redis(SHARED_REDIS);
  });

  after(async () => {
    await dibs?.close();
    raw?.disconnect();
    await deletePrefix(SHARED_REDIS, prefix);
  });

  it('is finished by the next caller into the permutation of the recorded seed, admitting nobody meanwhile', async () => {
    const sku = `SLICED-${Date.now()}`;
    const sale = await dibs.sales.create({
      sku,
      startsAt: new Date(Date.now() + 3_600_000).toISOString(),
      endsAt: new Date(Date.now() + 7_200_000).toISOString(),
      cap: 5,
      perCustomerLimit: 1,
    });
    await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 100, windowMs: 60_000, fairStart: true });
    const tickets: Ticket[] = [];
    for (let i = 0; i < PRE; i += 50)
      tickets.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, PRE - i) }, (_, k) => dibs.waitingRooms.join(sale.id, `c${i + k}`)),
        )),
      );
    await dibs.sales.update(sale.id, { startsAt: new Date(Date.now() + 100).toISOString() });
    await sleep(250);

    const tag = saleTag(prefix, saleGroupOf(sku));
    const roomKey = saleKey(tag, 'room', sale.id);
    /** One step of a caller that dies right after it: a single script run, never repeated. */
    const oneSlice = async (seed: string) =>
      JSON.parse(
        (await runScript(raw, 'sale_room_step', [roomKey], [tag, sale.id, 'ticket', 'c0', seed])) as string,
      ) as { room: { more?: boolean; drawn?: string } };

    const first = await oneSlice('0123456789abcdef');
    assert.equal(first.room.more, true, 'one slice does not draw 1,300 places');
    const second = await oneSlice('fedcba9876543210');
    assert.equal(second.room.more, true, 'two slices do not draw 1,300 places');
    assert.equal(await raw.hget(roomKey, 'drawn'), null, 'not drawn yet');
    assert.equal(await raw.hget(roomKey, 'dseed'), '0123456789abcdef', 'the first slice recorded its seed');
    const half = await raw.hvals(saleKey(tag, 'tickets', sale.id));
    assert.equal(
      half.filter((t) => (JSON.parse(t) as { s: string }).s !== 'waiting').length,
      0,
      'nobody is admitted while the draw is half done',
    );
    assert.equal(
      half.filter((t) => (JSON.parse(t) as { p?: number }).p !== undefined).length,
      1000,
      'two slices placed 1,000 tickets',
    );

    // a newcomer during the draw: behind the pre-queue, in arrival order
    const late = await dibs.waitingRooms.join(sale.id, 'late');
    assert.deepEqual([late.number, late.place], [PRE + 1, PRE + 1]);

    const { draw, tickets: counts } = await dibs.waitingRooms.get(sale.id);
    assert.deepEqual([draw?.seed, draw?.preQueue], ['0123456789abcdef', PRE], 'the seed of the first slice');
    const places = drawnPlaces('0123456789abcdef', PRE);
    const now: Ticket[] = [];
    for (let i = 0; i < PRE; i += 100)
      now.push(
        ...(await Promise.all(
          tickets.slice(i, i + 100).map((t) => dibs.waitingRooms.ticket(sale.id, t.customer, t.token)),
        )),
      );
    const wrong = now.filter((t) => t.place !== places[t.number]);
    assert.equal(
      wrong.length,
      0,
      `${wrong.length} tickets are not where the recorded seed puts them, e.g. ${wrong
        .slice(0, 3)
        .map((t) => `${t.number} at ${t.place}, not ${places[t.number]}`)
        .join('; ')}`,
    );
    assert.deepEqual(
      now
        .filter((t) => t.status === 'admitted')
        .map((t) => t.place)
        .sort((a, b) => a! - b!),
      [1, 2, 3, 4, 5],
      'admission begins at place 1 once the draw is done',
    );
    assert.equal(counts.admitted, 5);
    assert.equal(counts.waiting, PRE + 1 - 5);
    assert.equal(await raw.exists(saleKey(tag, 'dord', sale.id)), 0, 'the draw leaves no working state');
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
  });

  it('a sold-out line is told in slices too, and a caller is answered once all of it is', async () => {
    const sku = `SWEPT-${Date.now()}`;
    const sale = await dibs.sales.create({
      sku,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: 1,
      perCustomerLimit: 1,
    });
    // one admission a second: the first in line is admitted, the rest wait
    await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 1, windowMs: 60_000 });
    const first = await dibs.waitingRooms.join(sale.id, 'c0');
    for (let i = 1; i < PRE; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, PRE - i) }, (_, k) => dibs.waitingRooms.join(sale.id, `c${i + k}`)),
      );
    const { hold } = await dibs.waitingRooms.reserve(sale.id, 'c0', first.token, 1, 60_000);
    await dibs.sales.confirm(hold.id); // sold out: the next step tells the line

    const tag = saleTag(prefix, saleGroupOf(sku));
    const roomKey = saleKey(tag, 'room', sale.id);
    const one = JSON.parse(
      (await runScript(raw, 'sale_room_step', [roomKey], [tag, sale.id, 'ticket', 'c1', '0123456789abcdef'])) as string,
    ) as { room: { more?: boolean } };
    assert.equal(one.room.more, true, 'one slice does not tell 1,299 tickets');
    // the slice went through numbers 1..500: the used one and 499 waiting
    assert.deepEqual(await raw.hmget(roomKey, 'n_waiting', 'n_sold_out'), [String(PRE - 500), '499']);
    const { tickets } = await dibs.waitingRooms.get(sale.id);
    assert.deepEqual(tickets, { waiting: 0, admitted: 0, used: 1, expired: 0, sold_out: PRE - 1 });
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
  });

  it('get counts tickets by counters the audit checks against the tickets', async () => {
    const sku = `COUNTED-${Date.now()}`;
    const sale = { id: await settledRoom(dibs, sku) };
    const { tickets } = await dibs.waitingRooms.get(sale.id);
    assert.deepEqual(tickets, SETTLED);
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
    // a counter that drifts from the tickets is an I4 finding
    const roomKey = saleKey(saleTag(prefix, saleGroupOf(sku)), 'room', sale.id);
    await raw.hincrby(roomKey, 'n_used', 1);
    const found = await dibs.sales.audit(sale.id);
    assert.deepEqual(
      found.map((v) => [v.invariant, v.expected, v.actual]),
      [['I4', 2, 3]],
      JSON.stringify(found),
    );
    await raw.hincrby(roomKey, 'n_used', -1);
  });

  it('a room from before the counters is counted from its tickets at its first step', async () => {
    const sku = `UNCOUNTED-${Date.now()}`;
    const sale = await settledRoom(dibs, sku);
    await dibs.waitingRooms.get(sale); // the line is closed: every ticket settled
    const roomKey = saleKey(saleTag(prefix, saleGroupOf(sku)), 'room', sale);
    // the room hash as a build before the counters left it
    await raw.hdel(roomKey, 'counted', 'n_waiting', 'n_admitted', 'n_used', 'n_expired', 'n_sold_out', 'unplaced');
    assert.deepEqual(await dibs.sales.audit(sale), [], 'an uncounted room is not judged by its counters');
    assert.deepEqual((await dibs.waitingRooms.get(sale)).tickets, SETTLED);
    assert.equal(await raw.hget(roomKey, 'counted'), '1');
    assert.deepEqual(await dibs.sales.audit(sale), []);
  });
});
