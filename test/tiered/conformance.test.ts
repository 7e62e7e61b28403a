/**
 * The flash-sale conformance suite, unchanged, against tiered stores: PostgreSQL and SQLite ledgers
 * with a Redis fast path (buys decided in Redis over granted capacity, orders written to the ledger),
 * and a PostgreSQL ledger with the fast path on a 3-master Redis Cluster started by this file.
 */
import { describe } from 'node:test';
import { saleConformance } from '../conformance/sales.js';
import { postgresUnreachable } from '../support/postgres.js';
import { clusterForSuite, redisServerInstalled, sharedRedisAvailable } from '../support/redis.js';
import { openTempTiered } from '../support/tiered.js';

const redis = await sharedRedisAvailable();
const pg = (await postgresUnreachable()) === null;

describe('tiered: postgres ledger + redis fast path', { skip: !redis || !pg }, () => {
  // A small chunk, so the suite also walks through refills, sealing and sold-out rechecks.
  saleConformance('tiered postgres+redis', () => openTempTiered('postgres', { fast: { chunk: '4' } }));
});

describe('tiered: sqlite ledger + redis fast path', { skip: !redis }, () => {
  saleConformance('tiered sqlite+redis', () => openTempTiered('sqlite', { fast: { chunk: '4' } }));
});

describe('tiered: postgres ledger + redis cluster fast path (3 masters)', {
  skip: !pg || !redisServerInstalled(),
}, () => {
  const { url } = clusterForSuite();
  saleConformance('tiered postgres+redis cluster', () =>
    openTempTiered('postgres', { redis: url(), fast: { chunk: '4' } }),
  );
});
