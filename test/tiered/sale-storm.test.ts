/**
 * The multi-process flash-sale storms (support/sale-storm-suite.ts) on a tiered store: PostgreSQL
 * ledger + Redis fast path, 4 processes — 1,000 buyers on the last 10 units, and holds racing
 * confirmations, cancellations and expiries (reservations go to the ledger, which takes granted
 * units back from Redis when it needs them). The same again with the fast path on a 3-master Redis
 * Cluster started by this file.
 */
import { describe } from 'node:test';
import { saleStormSuite } from '../support/sale-storm-suite.js';
import { postgresUnreachable } from '../support/postgres.js';
import { clusterForSuite, redisServerInstalled, sharedRedisAvailable } from '../support/redis.js';
import { tieredForSuite } from '../support/tiered.js';

const ready = (await sharedRedisAvailable()) && (await postgresUnreachable()) === null;

describe('tiered postgres+redis storms', { skip: !ready }, () => {
  saleStormSuite(
    'tiered postgres+redis',
    tieredForSuite('postgres', { ledgerParams: { poolSize: '8' }, fast: { chunk: '4' } }),
  );
});

describe('tiered postgres+redis cluster storms (3 masters)', {
  skip: (await postgresUnreachable()) !== null || !redisServerInstalled(),
}, () => {
  const { url } = clusterForSuite();
  saleStormSuite(
    'tiered postgres+redis cluster',
    tieredForSuite('postgres', { redis: url, ledgerParams: { poolSize: '8' }, fast: { chunk: '4' } }),
  );
});
