/**
 * Claim storms from two worker "hosts" (network namespaces, test/support/netns.ts) against a
 * test-owned PostgreSQL, redis-server and 3-master Redis Cluster (test/support/netns-cluster.ts) on
 * a store host, through nftables cuts on a schedule:
 * drop one direction only (the store never hears the client again / the client never hears the
 * answers to requests the store applied), drop both, reject with a reset; then flash-sale buys the
 * same way on both stores. Judged by the client-side ledgers (claims: src/loadtest/verify.ts — no
 * code acknowledged twice, every acknowledged claim still held, limits and idempotent replays, the
 * store's own audit clean; buys: every acknowledged order stored, keyed retries replay, sold ≤
 * cap); every failure must be `unavailable`. A round on the cluster starts once every node says
 * cluster_state:ok, and its clients open once the cluster answers (a client not ready within the
 * open's 10 s answers `unavailable`, "Cluster isn't ready", and opens again).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { uniqueId } from '../support/assert.js';
import { LONG } from '../support/faults.js';
import { netnsUnavailable, type Direction, type Host, type Link, type Network } from '../support/netns.js';
import { unixRelay, type HostPostgres, type HostRedis } from '../support/netns-stores.js';
import { hostileNetworkForSuite } from '../support/netns-suite.js';
import { openWhenReachable } from '../support/open-store.js';
import { startClusterOn, type HostCluster } from '../support/netns-cluster.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';

const skip = netnsUnavailable();

describe('claims through partitions between hosts', { skip: skip ?? false, timeout: 600_000 }, () => {
  const env = hostileNetworkForSuite();
  let net: Network;
  let hosts: Host[];
  let links: Link[];
  let pgHost: HostPostgres;
  let redisHost: HostRedis;
  let cluster: HostCluster | undefined;
  before(async () => {
    ({ net, hosts, links, pg: pgHost, redis: redisHost } = env());
    cluster = await startClusterOn(env().store, links);
  });
  after(async () => {
    await cluster?.stop();
  });

  /** Phases of 2 s, both worker hosts cut at once (each its own way) so that no host finishes the storm alone; 300 ms healed between. */
  const CLAIM_FAULTS: Array<Array<[number, Direction]>> = [
    [
      [0, 'to-store'],
      [1, 'from-store'],
    ],
    [
      [0, 'both'],
      [1, 'reject'],
    ],
    [
      [0, 'from-store'],
      [1, 'to-store'],
    ],
  ];
  const CLAIM_TARGETS: Array<{
    label: string;
    store: (address: string, tag: string) => string;
    local: (tag: string) => Promise<{ url: string; close(): Promise<void> }>;
  }> = [
    {
      label: 'postgres',
      store: (address, tag) =>
        `${pgHost.urlAt(address)}?schema=${tag}&poolSize=4&queryTimeoutMs=2000&connectTimeoutMs=2000`,
      local: async (tag) => ({ url: `${pgHost.localUrl}&schema=${tag}`, close: async () => undefined }),
    },
    {
      label: 'redis',
      store: (address, tag) => `${redisHost.urlAt(address)}?prefix=${tag}&commandTimeoutMs=1000`,
      local: async (tag) => {
        const relay = await unixRelay(redisHost.socket);
        return { url: `redis://127.0.0.1:${relay.port}/0?prefix=${tag}`, close: () => relay.close() };
      },
    },
    {
      label: 'redis cluster',
      store: (_address, tag) => `${cluster!.url}?prefix=${tag}&commandTimeoutMs=1000`,
      local: async (tag) => {
        // the cluster's own state before the round: every node cluster_state:ok (the last round's cuts healed)
        await cluster!.waitOk();
        return { url: `${cluster!.url}?prefix=${tag}`, close: async () => undefined };
      },
    },
  ];
  for (const target of CLAIM_TARGETS) {
    it(`${target.label}: claim storm from two hosts through one-sided partitions — client ledger clean`, async () => {
      const tag = uniqueId('c').toLowerCase();
      const local = await target.local(tag);
      const dibs = await openWhenReachable(local.url);
      try {
        const codes = LONG ? 20_000 : 4000;
        await dibs.pools.create({ name: 'part' });
        await dibs.pools.importCodes(
          'part',
          Array.from({ length: codes }, (_, i) => `P-${i}`),
        );
        const faultLog: string[] = [];
        let faulting: Promise<void> = Promise.resolve();
        const outcomes = await runClaimStorm({
          store: '',
          storeFor: (i) => target.store(links[i % 2]!.addressA, tag),
          spawnPrefix: (i) => hosts[i % 2]!.prefix,
          pool: 'part',
          processes: 4,
          claimants: LONG ? 30_000 : 6000,
          concurrency: 8,
          timeoutMs: 240_000,
          onStart: () => {
            faulting = (async () => {
              for (let round = 0; round < (LONG ? 6 : 1); round++) {
                for (const phase of CLAIM_FAULTS) {
                  for (const [i, direction] of phase) net.cut(links[i]!, direction);
                  faultLog.push(phase.map(([i, direction]) => `w${i + 1} ${direction}`).join(' + '));
                  await sleep(2000);
                  for (const [i] of phase) net.heal(links[i]!);
                  await sleep(300);
                }
              }
            })();
          },
        });
        const stormEnded = faultLog.length;
        await faulting;
        assert.equal(stormEnded, CLAIM_FAULTS.length * (LONG ? 6 : 1), 'every fault phase began while the storm ran');
        const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
        assert.deepEqual(
          [...new Set(errors.map((o) => o.error))].filter((e) => e !== 'unavailable'),
          [],
          'every failure is the retriable unavailable',
        );
        const summary = await assertStormInvariants(dibs, 'part', outcomes, {
          codes,
          perClaimantLimit: 1,
          allowedErrors: ['unavailable'],
          allowUnacknowledged: true,
        });
        console.log(
          `[partition] ${target.label} claims: 2 s phases ${faultLog.join(', ')}; answers ${outcomes.length}, unavailable ${errors.length}, codes given ${summary.codesGiven}, ledger violations 0`,
        );
        assert.ok(errors.length > 0, 'the faults were felt by the clients');
      } finally {
        await dibs.close();
        await local.close();
      }
    });
  }

  /** Runs the fault phases once (both hosts cut at once, 2 s each, 300 ms healed between). */
  async function phases(log: string[]): Promise<void> {
    for (let round = 0; round < (LONG ? 6 : 1); round++) {
      for (const phase of CLAIM_FAULTS) {
        for (const [i, direction] of phase) net.cut(links[i]!, direction);
        log.push(phase.map(([i, direction]) => `w${i + 1} ${direction}`).join(' + '));
        await sleep(2000);
        for (const [i] of phase) net.heal(links[i]!);
        await sleep(300);
      }
    }
  }

  /** Where a flash sale's workers (on the worker hosts) and the test process (outside) reach each store; its orders read raw. */
  const SALE_TARGETS: Array<{
    label: string;
    store: (address: string, tag: string) => string;
    local: (
      tag: string,
    ) => Promise<{ url: string; storedOrders(saleId: string): Promise<Set<string>>; close(): Promise<void> }>;
  }> = [
    {
      label: 'postgres',
      store: (address, tag) =>
        `${pgHost.urlAt(address)}?schema=${tag}&poolSize=4&queryTimeoutMs=2000&connectTimeoutMs=2000`,
      local: async (tag) => ({
        url: `${pgHost.localUrl}&schema=${tag}`,
        storedOrders: async () =>
          new Set((await pgHost.admin<{ id: string }>(`SELECT id FROM "${tag}".sale_orders`)).map((r) => r.id)),
        close: async () => undefined,
      }),
    },
    {
      label: 'redis',
      store: (address, tag) => `${redisHost.urlAt(address)}?prefix=${tag}&commandTimeoutMs=1000`,
      local: async (tag) => {
        const relay = await unixRelay(redisHost.socket);
        return {
          url: `redis://127.0.0.1:${relay.port}/0?prefix=${tag}`,
          storedOrders: async (saleId) => {
            const raw = redisHost.client();
            try {
              return new Set(await raw.hkeys(saleKey(saleTag(tag, saleGroupOf('PART')), 'orders', saleId)));
            } finally {
              raw.disconnect();
            }
          },
          close: () => relay.close(),
        };
      },
    },
    {
      label: 'redis cluster',
      store: (_address, tag) => `${cluster!.url}?prefix=${tag}&commandTimeoutMs=1000`,
      local: async (tag) => {
        await cluster!.waitOk();
        return {
          url: `${cluster!.url}?prefix=${tag}`,
          storedOrders: async (saleId) => {
            const raw = new Cluster(cluster!.ports.map((port) => ({ host: '127.0.0.1', port })));
            try {
              return new Set(await raw.hkeys(saleKey(saleTag(tag, saleGroupOf('PART')), 'orders', saleId)));
            } finally {
              raw.disconnect();
            }
          },
          close: async () => undefined,
        };
      },
    },
  ];
  for (const target of SALE_TARGETS) {
    it(`${target.label}: flash sale from two hosts through one-sided partitions — every acknowledged order kept, sold ≤ cap`, async () => {
      const tag = uniqueId('s').toLowerCase();
      const local = await target.local(tag);
      const dibs = await openWhenReachable(local.url);
      try {
        const cap = 300;
        const sale = await dibs.sales.create({
          sku: 'PART',
          startsAt: new Date().toISOString(),
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
          cap,
          perCustomerLimit: 2,
        });
        const buyers = LONG ? 6000 : 1200;
        // paced, so the storm is still running in every phase
        const ops: SaleOp[] = Array.from({ length: buyers }, (_, i) => ({
          customer: `buyer-${i % (buyers / 2)}`,
          kind: 'buy',
          quantity: 1,
          thinkMs: 0,
          delayMs: 40,
          ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
        }));
        const faultLog: string[] = [];
        const outcomes = await runSaleStorm({
          store: '',
          storeFor: (i) => target.store(links[i % 2]!.addressA, tag),
          spawnPrefix: (i) => hosts[i % 2]!.prefix,
          sale: sale.id,
          lanes: spread(ops, 4),
          concurrency: 4,
          timeoutMs: 240_000,
          during: () => phases(faultLog),
        });
        assert.ok(
          outcomes.some((o) => o.error === 'unavailable'),
          'the faults were felt',
        );
        const seen = await assertBuysSurvived(dibs, () => local.storedOrders(sale.id), sale.id, cap, outcomes);
        console.log(
          `[partition] ${target.label} buys: 2 s phases ${faultLog.join(', ')}; answers ${outcomes.length}, unavailable ${seen.unavailable} (${seen.retried} keyed, retried), sold ${seen.sold}/${cap}, violations 0`,
        );
      } finally {
        await dibs.close();
        await local.close();
      }
    });
  }
});
