/**
 * The PostgreSQL store through a test-owned PgBouncer in transaction-pooling mode
 * (`?pooler=transaction`): the pool, sale and lock conformance suites unchanged, lock wake-ups by
 * polling and through a direct LISTEN connection (`listen=`), and concurrent first opens migrating
 * a fresh schema exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lockConformance } from '../conformance/locks.js';
import { poolConformance } from '../conformance/pools.js';
import { saleConformance } from '../conformance/sales.js';
import { openDibs } from '../../src/index.js';
import { openTempPgThrough, requirePgBouncer, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { adminQuery, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

const skip = (await requirePostgres()) || requirePgBouncer();

if (skip) {
  it('postgres through pgbouncer', { skip }, () => {});
} else {
  let bouncer: PgBouncer;
  // One bouncer for the file, started by the first suite that needs it.
  let starting: Promise<PgBouncer> | undefined;
  const started = () => (starting ??= startPgBouncer().then((b) => (bouncer = b)));
  const through = (params: Record<string, string> = {}) => async () => openTempPgThrough(await started(), params);

  poolConformance('postgres via pgbouncer (transaction mode)', through());
  saleConformance('postgres via pgbouncer (transaction mode)', through());
  lockConformance('postgres via pgbouncer (transaction mode, polling wake-ups)', through());
  lockConformance('postgres via pgbouncer (transaction mode, LISTEN on a direct connection)', through({ listen: TEST_PG }));

  describe('postgres via pgbouncer: opening', () => {
    before(started);
    after(async () => {
      await bouncer?.stop();
    });

    it('a URL without pooler=transaction is refused by PgBouncer (the startup options), typed', async () => {
      const temp = tempPgStore();
      await assert.rejects(openDibs(bouncer.url({ schema: temp.schema })), (e: Error & { code?: string }) => /unsupported startup parameter: options/.test(e.message));
    });

    it('eight concurrent first opens migrate a fresh schema exactly once (5 rounds)', async () => {
      for (let round = 0; round < 5; round++) {
        const temp = tempPgStore();
        const store = bouncer.url({ schema: temp.schema, pooler: 'transaction', poolSize: '2' });
        try {
          const opened = await Promise.all(Array.from({ length: 8 }, () => openDibs(store)));
          const rows = await adminQuery<{ id: number; n: number }>(`SELECT id, count(*)::int AS n FROM "${temp.schema}".migrations GROUP BY id ORDER BY id`);
          assert.ok(rows.length >= 14, `every migration: ${rows.length}`);
          assert.ok(rows.every((r) => r.n === 1));
          await opened[0]!.pools.create({ name: 'p' });
          assert.equal((await opened[7]!.pools.get('p')).name, 'p');
          await Promise.all(opened.map((d) => d.close()));
        } finally {
          await temp.drop();
        }
      }
    });
  });
}
