/**
 * Redis crashes during a claim storm and a sale storm, on test-owned servers:
 * - with AOF (appendfsync always), SIGKILL + restart: every acknowledged claim is still there
 *   and the audit is clean;
 * - without persistence, the same crash loses the pool: dibs says so (`not_found`, a health
 *   warning) and never hands out a code twice;
 * - a flash sale with AOF (appendfsync always), SIGKILL + restart mid-storm: every acknowledged
 *   order is still stored, interrupted keyed buys replay or buy once, sold ≤ cap, audit clean.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { isDibsError, openDibs } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';
import { assertStormInvariants, runClaimStorm, type StormOutcome } from '../support/storm.js';

const installed = redisServerInstalled();

/** Runs a storm and crashes the server `afterMs` in, restarting it `downMs` later. */
async function stormThroughCrash(
  server: OwnedRedis,
  pool: string,
  afterMs: number,
  downMs: number,
): Promise<StormOutcome[]> {
  let crash: Promise<void> = Promise.resolve();
  const outcomes = await runClaimStorm({
    store: server.url,
    pool,
    processes: 4,
    claimants: 10_000,
    concurrency: 8,
    timeoutMs: 90_000,
    onStart: () => {
      crash = (async () => {
        await sleep(afterMs);
        await server.kill();
        await sleep(downMs);
        await server.restart();
      })();
    },
  });
  await crash;
  return outcomes;
}

describe('redis crash during a claim storm', { skip: !installed }, () => {
  it('with appendfsync always: every acknowledged claim survives SIGKILL and restart', async () => {
    const server = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    try {
      const dibs = await openDibs(server.url);
      await dibs.pools.create({ name: 'durable' });
      await dibs.pools.importCodes(
        'durable',
        Array.from({ length: 5000 }, (_, i) => `CODE-${i}`),
      );
      const health = await dibs.health();
      assert.equal((health.details.persistence as { appendfsync: string }).appendfsync, 'always');
      assert.equal(health.details.warning, undefined, 'no durability warning with appendfsync always');
      await dibs.close();

      const outcomes = await stormThroughCrash(server, 'durable', 300, 300);
      const errors = outcomes.filter((o) => o.status === 'error').map((o) => o.error);
      assert.ok(errors.includes('unavailable'), 'the crash was felt: some claims failed as unavailable (retriable)');
      assert.ok(
        outcomes.some((o) => o.status === 'claimed'),
        'some claims were acknowledged',
      );

      const after = await openDibs(server.url);
      try {
        const summary = await assertStormInvariants(after, 'durable', outcomes, {
          codes: 5000,
          perClaimantLimit: 1,
          allowedErrors: ['unavailable'],
          allowUnacknowledged: true,
        });
        assert.ok(summary.codesGiven > 0);
      } finally {
        await after.close();
      }
    } finally {
      await server.stop();
    }
  });

  it('without persistence: the data is gone, dibs answers not_found and never double-issues', async () => {
    const server = await startRedis(['--appendonly', 'no']);
    try {
      const dibs = await openDibs(server.url);
      await dibs.pools.create({ name: 'volatile' });
      await dibs.pools.importCodes(
        'volatile',
        Array.from({ length: 5000 }, (_, i) => `CODE-${i}`),
      );
      assert.match(String((await dibs.health()).details.warning), /loses every acknowledged claim/);
      await dibs.close();

      const outcomes = await stormThroughCrash(server, 'volatile', 300, 200);
      const holders = new Map<string, string>();
      for (const o of outcomes) {
        if (o.status === 'error') {
          assert.ok(['unavailable', 'not_found', 'sold_out'].includes(o.error!), `unexpected ${o.error}`);
          continue;
        }
        const previous = holders.get(o.code!);
        assert.ok(
          previous === undefined || previous === o.claimant,
          `code ${o.code} acknowledged to ${previous} and ${o.claimant}`,
        );
        holders.set(o.code!, o.claimant);
      }
      assert.ok(
        outcomes.some((o) => o.error === 'not_found'),
        'after the restart the pool no longer exists',
      );

      const after = await openDibs(server.url);
      try {
        await assert.rejects(after.pools.get('volatile'), (error: unknown) => isDibsError(error, 'not_found'));
      } finally {
        await after.close();
      }
    } finally {
      await server.stop();
    }
  });
});

describe('redis crash during a sale storm', { skip: !installed }, () => {
  it('with appendfsync always: every acknowledged order survives SIGKILL and restart', async () => {
    const server = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    try {
      const dibs = await openDibs(server.url);
      const cap = 300;
      const sale = await dibs.sales.create({
        sku: 'CRASH',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap,
        perCustomerLimit: 2,
      });
      const ops: SaleOp[] = Array.from({ length: 1200 }, (_, i) => ({
        customer: `buyer-${i % 600}`,
        kind: 'buy',
        quantity: 1,
        thinkMs: 0,
        ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
      }));
      let crashed = false;
      const outcomes = await runSaleStorm({
        store: server.url,
        sale: sale.id,
        lanes: spread(ops, 4),
        concurrency: 8,
        timeoutMs: 120_000,
        during: async (done) => {
          // crash once the buyers are at it (some orders acknowledged), then come back
          for (
            const deadline = Date.now() + 60_000;
            !done() && Date.now() < deadline && (await dibs.sales.get(sale.id)).stats.sold < 20;
          )
            await sleep(5);
          if (done()) return;
          await server.kill();
          crashed = true;
          await sleep(300);
          await server.restart();
        },
      });
      assert.ok(crashed, 'the server was killed while the storm ran');
      assert.ok(
        outcomes.some((o) => o.status === 'ok'),
        'some orders were acknowledged',
      );
      const tag = saleTag('dibs', saleGroupOf('CRASH'));
      const stored = async () => {
        const raw = new Redis(server.url);
        try {
          return new Set(await raw.hkeys(saleKey(tag, 'orders', sale.id)));
        } finally {
          raw.disconnect();
        }
      };
      const after = await openDibs(server.url);
      try {
        const seen = await assertBuysSurvived(after, stored, sale.id, cap, outcomes);
        process.stderr.write(
          `redis SIGKILL mid-sale: ${seen.unavailable} buys answered unavailable (${seen.retried} keyed, retried); ${seen.sold} sold\n`,
        );
      } finally {
        await after.close();
        await dibs.close();
      }
    } finally {
      await server.stop();
    }
  });
});
