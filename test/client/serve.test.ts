/**
 * The pool, sale and lock conformance suites through dibs/client against a real `dibs serve`
 * process on PostgreSQL (the in-process runs are in conformance.test.ts).
 */
import { it } from 'node:test';
import { lockConformance } from '../conformance/locks.js';
import { poolConformance } from '../conformance/pools.js';
import { saleConformance } from '../conformance/sales.js';
import { throughServe } from '../support/client-dibs.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();
if (skip) {
  it('client against dibs serve on postgres', { skip }, () => {});
} else {
  poolConformance(
    'client → dibs serve (postgres)',
    throughServe(() => openTempPg()),
  );
  saleConformance(
    'client → dibs serve (postgres)',
    throughServe(() => openTempPg()),
  );
  lockConformance(
    'client → dibs serve (postgres)',
    throughServe(() => openTempPg()),
  );
}
