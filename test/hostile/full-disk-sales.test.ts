/**
 * Flash-sale buys on a full disk: the store's files on a small tmpfs that the test fills
 * completely in the middle of a paced multi-process buy storm, keeps full, then frees (as
 * full-disk.test.ts does for claims). Judged by the client-side ledger (test/support/sale-storm.ts):
 * every failed buy is `unavailable`, every acknowledged order is in the store (read raw), each
 * interrupted keyed buy retried with its key replays or buys once, sold ≤ cap, the sale's audit
 * clean. Recovery: the same handle buys again once space is freed, and a second wave — more demand
 * than the units left — runs without a failure and sells out exactly the cap.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { LONG } from '../support/faults.js';
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';
import { buyStormOnFullDisk } from '../support/full-disk-sales.js';
import { diskFault, smallDiskForSuite, supervisedRedis, tmpfsUnavailable } from '../support/full-disk.js';

const skip = tmpfsUnavailable();
const SKU = 'DISK';
// more units than the storm's buys: what the full disk refused is sold by the wave after it
const CAP = LONG ? 7000 : 1000;
const ROUND = { sku: SKU, cap: CAP, buyers: LONG ? 6000 : 900, delayMs: 30 };

describe('SQLite on a full disk: flash-sale buys', { skip: skip ?? false, timeout: 300_000 }, () => {
  const smallDisk = smallDiskForSuite(16);
  let store: string;
  let dibs: Dibs;
  before(async () => {
    store = `sqlite:${smallDisk().dir}/dibs.db`;
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
  });

  it('a buy storm while the disk fills up and is freed: only `unavailable`, nothing acknowledged lost, sold ≤ cap, recovers by itself', async () => {
    const disk = smallDisk();
    const storedOrders = async (saleId: string) => {
      const db = new Database(`${disk.dir}/dibs.db`, { readonly: true, fileMustExist: true });
      try {
        const rows = db.prepare('SELECT id FROM dibs_orders WHERE sale_id = ?').all(saleId) as Array<{ id: string }>;
        return new Set(rows.map((r) => r.id));
      } finally {
        db.close();
      }
    };
    const saleId = await buyStormOnFullDisk({
      label: 'sqlite',
      ...ROUND,
      store,
      dibs,
      storedOrders,
      fault: (saleId) =>
        diskFault(disk, {
          afterMs: 300,
          fullMs: 1500,
          // while still full, this process' handle fails the same way
          whileFull: () =>
            dibs.sales.buy(saleId, 'while-full', 1).then(
              () => 'a buy from this process: ok',
              (e: { code?: string }) => `a buy from this process: ${e.code ?? String(e)}`,
            ),
        }),
    });
    // nothing acknowledged lost after reopening the file either
    await dibs.close();
    dibs = await openDibs(store);
    assert.equal((await dibs.sales.get(saleId)).stats.sold, CAP);
    assert.deepEqual(await dibs.sales.audit(saleId), []);
  });
});

/**
 * Redis with AOF on a small tmpfs, as for claims in full-disk.test.ts: with `appendfsync always`
 * Redis exits when it cannot log a write and is restarted by its supervisor (here the test) once
 * space is freed, replaying the AOF; with `everysec` it stays up and refuses writes (MISCONF) until
 * its AOF write succeeds again.
 */
describe('Redis AOF on a full disk: flash-sale buys', {
  skip: skip ?? (redisServerInstalled() ? false : 'redis-server missing'),
  timeout: 300_000,
}, () => {
  const smallDisk = smallDiskForSuite(24);
  const owned: OwnedRedis[] = [];
  after(async () => {
    for (const r of owned) await r.stop().catch(() => undefined);
  });

  for (const policy of ['always', 'everysec'] as const) {
    it(`appendfsync ${policy}: buy storm while the disk fills up: only \`unavailable\`, nothing acknowledged lost, sold ≤ cap, recovers`, async () => {
      const disk = smallDisk();
      const dir = join(disk.dir, policy);
      mkdirSync(dir);
      const redis = await startRedis(['--appendonly', 'yes', '--appendfsync', policy], dir);
      owned.push(redis);
      const prefix = 'disk';
      const store = `${redis.url}?prefix=${prefix}&commandTimeoutMs=2000`;
      const dibs = await openDibs(store);
      const supervised = supervisedRedis(redis);
      try {
        await buyStormOnFullDisk({
          label: `redis AOF ${policy}`,
          ...ROUND,
          store,
          dibs,
          storedOrders: async (saleId) => {
            const raw = new Redis(redis.port, '127.0.0.1');
            try {
              return new Set(await raw.hkeys(saleKey(saleTag(prefix, saleGroupOf(SKU)), 'orders', saleId)));
            } finally {
              raw.disconnect();
            }
          },
          fault: () => diskFault(disk, { afterMs: 300, fullMs: 1500, supervised }),
        });
      } finally {
        disk.free();
        if (supervised.down()) await supervised.restart().catch(() => undefined);
        await dibs.close();
      }
    });
  }
});
