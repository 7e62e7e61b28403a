/** dibs/client's `waitingRooms` against the real service (SQLite store) over real HTTP. */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { drawnPlaces } from '../../src/index.js';
import { isDibsError } from '../../src/client/index.js';
import { serveOverHttp, type ServedDibs } from '../support/client.js';
import { openTempSqlite } from '../support/sqlite.js';

describe('dibs/client: waiting rooms', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let served: ServedDibs;

  before(async () => {
    env = await openTempSqlite();
    served = await serveOverHttp(env.dibs);
  });
  after(async () => {
    await served?.close();
    await env?.cleanup();
  });

  it('a fair start with verification: join early, drawn at the opening, verify, reserve', async () => {
    const c = served.client();
    const sale = await c.sales.create({
      sku: 'CLIENT-ROOM',
      startsAt: new Date(Date.now() + 600_000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: 1,
    });
    const room = await c.waitingRooms.enable(sale.id, {
      admitPerSecond: 100,
      windowMs: 60_000,
      fairStart: true,
      verification: true,
    });
    assert.deepEqual([room.fairStart, room.verification, room.draw], [true, true, null]);
    const a = await c.waitingRooms.join(sale.id, 'a');
    const b = await c.waitingRooms.join(sale.id, 'b');
    assert.equal(a.place, null);
    // the opening, brought forward once both are in (a loaded machine's round trips set no deadline)
    await c.sales.update(sale.id, { startsAt: new Date(Date.now() + 300).toISOString() });
    await sleep(500);
    const { draw } = await c.waitingRooms.get(sale.id);
    assert.ok(draw?.seed);
    const places = drawnPlaces(draw.seed, draw.preQueue);
    const first = places[a.number] === 1 ? a : b;
    assert.equal((await c.waitingRooms.ticket(sale.id, first.customer, first.token!)).status, 'waiting');
    await assert.rejects(c.waitingRooms.reserve(sale.id, first.customer, first.token!, 1, 60_000), (e: unknown) =>
      isDibsError(e, 'not_admitted'),
    );
    const verified = await c.waitingRooms.verify(sale.id, first.customer, first.token!);
    assert.deepEqual([verified.status, verified.place], ['admitted', 1]);
    const { hold } = await c.waitingRooms.reserve(sale.id, first.customer, first.token!, 1, 60_000);
    assert.equal((await c.sales.confirm(hold.id)).order.quantity, 1);
  });
});
