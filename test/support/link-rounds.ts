/**
 * One claim, buy and lock round from the two worker hosts of a hostile network
 * (netns-suite.ts) over links that a test makes bad — random packet loss, a slow relay — with
 * `fault()` started when the workers are running and `heal()` after them. Each round is judged
 * by the client-side record of acknowledged answers: claims by the product's verifier (no code
 * acknowledged twice, every acknowledged claim still held, the store's audit), buys by the sale
 * ledger (every acknowledged order stored, keyed retries replay, sold ≤ cap, audit), locks by the
 * history checker on a fenced PostgreSQL table reached over the same bad links.
 */
import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { openDibs } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { uniqueId } from './assert.js';
import { GuardedResource } from './guarded-resource.js';
import { formatVerdict } from './history-checker.js';
import { runHistory, type WorkerRun } from './history-run.js';
import type { HistoryWorkerConfig } from './history-worker.js';
import type { HostCluster } from './netns-cluster.js';
import { unixRelay } from './netns-stores.js';
import type { HostileNetwork } from './netns-suite.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp } from './sale-storm.js';
import { assertStormInvariants, runClaimStorm } from './storm.js';

export type StoreKind = 'postgres' | 'redis' | 'redis-cluster';

export interface LinkRound {
  env: HostileNetwork;
  kind: StoreKind;
  /** The 3-master Cluster on the store host (netns-cluster.ts), for kind 'redis-cluster'. */
  cluster?: HostCluster;
  /** The store as a worker on link `i` reaches it (address, maybe a relay port), with `tag`'s scope. */
  storeAt(i: number, tag: string): string;
  /** The guarded resource's PostgreSQL as a worker on link `i` reaches it. */
  resourceAt(i: number): string;
  fault(): void;
  heal(): void;
  /** What the fault did, for the report line (e.g. "1,234 packets dropped"). */
  report(): string;
  /** Asserts that the fault really happened (e.g. packets were dropped), after `heal()`. */
  felt?(): void;
  /** `paceMs`: each claim waits this long first, so that a small storm is still running when the fault starts. */
  size: { claimants: number; buyers: number; lockMs: number; paceMs?: number };
}

/** The test process's own way in (Unix socket; a loopback relay for Redis) and a raw order reader. */
async function local(round: LinkRound, tag: string) {
  const { env, kind } = round;
  if (kind === 'redis-cluster') {
    const cluster = round.cluster;
    if (!cluster) throw new Error("a 'redis-cluster' round needs its cluster");
    return {
      url: `${cluster.url}?prefix=${tag}`,
      storedOrders: async (sku: string, saleId: string) => {
        const raw = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
        try {
          return new Set(await raw.hkeys(saleKey(saleTag(tag, saleGroupOf(sku)), 'orders', saleId)));
        } finally {
          raw.disconnect();
        }
      },
      close: async () => undefined,
    };
  }
  if (kind === 'postgres')
    return {
      url: `${env.pg.localUrl}&schema=${tag}`,
      storedOrders: async () =>
        new Set((await env.pg.admin<{ id: string }>(`SELECT id FROM "${tag}".sale_orders`)).map((r) => r.id)),
      close: async () => undefined,
    };
  const relay = await unixRelay(env.redis.socket);
  return {
    url: `redis://127.0.0.1:${relay.port}/0?prefix=${tag}`,
    storedOrders: async (sku: string, saleId: string) => {
      const raw = env.redis.client();
      try {
        return new Set(await raw.hkeys(saleKey(saleTag(tag, saleGroupOf(sku)), 'orders', saleId)));
      } finally {
        raw.disconnect();
      }
    },
    close: () => relay.close(),
  };
}

export async function claimRound(round: LinkRound, label: string): Promise<void> {
  const tag = uniqueId('c').toLowerCase();
  const me = await local(round, tag);
  const dibs = await openDibs(me.url);
  try {
    const codes = round.size.claimants;
    await dibs.pools.create({ name: 'lossy' });
    await dibs.pools.importCodes(
      'lossy',
      Array.from({ length: codes }, (_, i) => `L-${i}`),
    );
    let faulted = false;
    const outcomes = await runClaimStorm({
      store: '',
      storeFor: (i) => round.storeAt(i % 2, tag),
      spawnPrefix: (i) => round.env.hosts[i % 2]!.prefix,
      pool: 'lossy',
      processes: 4,
      claimants: round.size.claimants,
      concurrency: 8,
      ...(round.size.paceMs ? { paceMs: round.size.paceMs } : {}),
      timeoutMs: 240_000,
      onStart: () => {
        round.fault();
        faulted = true;
      },
    }).finally(() => round.heal());
    assert.ok(faulted, 'the fault was on while the storm ran');
    round.felt?.();
    const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
    assert.deepEqual(
      [...new Set(errors.map((o) => o.error))].filter((e) => e !== 'unavailable'),
      [],
      'every failure is the retriable unavailable',
    );
    const summary = await assertStormInvariants(dibs, 'lossy', outcomes, {
      codes,
      perClaimantLimit: 1,
      allowedErrors: ['unavailable'],
      allowUnacknowledged: true,
    });
    console.log(
      `[link] ${label} claims: ${round.report()}; answers ${outcomes.length}, unavailable ${errors.length}, codes given ${summary.codesGiven}/${codes}, ledger violations 0`,
    );
  } finally {
    await dibs.close();
    await me.close();
  }
}

export async function buyRound(round: LinkRound, label: string): Promise<void> {
  const tag = uniqueId('s').toLowerCase();
  const me = await local(round, tag);
  const dibs = await openDibs(me.url);
  try {
    const buyers = round.size.buyers;
    const cap = Math.floor(buyers / 4);
    const sku = 'LOSSY';
    const sale = await dibs.sales.create({
      sku,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap,
      perCustomerLimit: 2,
    });
    // paced, ⅔ keyed: a keyed buy interrupted by the link is retried with its key afterwards
    const ops: SaleOp[] = Array.from({ length: buyers }, (_, i) => ({
      customer: `buyer-${i % (buyers / 2)}`,
      kind: 'buy',
      quantity: 1,
      thinkMs: 0,
      delayMs: 20,
      ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
    }));
    const outcomes = await runSaleStorm({
      store: '',
      storeFor: (i) => round.storeAt(i % 2, tag),
      spawnPrefix: (i) => round.env.hosts[i % 2]!.prefix,
      sale: sale.id,
      lanes: spread(ops, 4),
      concurrency: 4,
      timeoutMs: 240_000,
      during: async () => round.fault(),
    }).finally(() => round.heal());
    round.felt?.();
    const seen = await assertBuysSurvived(dibs, () => me.storedOrders(sku, sale.id), sale.id, cap, outcomes);
    console.log(
      `[link] ${label} buys: ${round.report()}; answers ${outcomes.length}, unavailable ${seen.unavailable} (${seen.retried} keyed, retried), sold ${seen.sold}/${cap}, violations 0`,
    );
  } finally {
    await dibs.close();
    await me.close();
  }
}

export async function lockRound(round: LinkRound, label: string): Promise<void> {
  const tag = uniqueId('l').toLowerCase();
  const resource = new GuardedResource({ url: round.env.pg.localUrl, schema: tag });
  await resource.create();
  if (round.kind === 'postgres') await (await openDibs(`${round.env.pg.localUrl}&schema=${tag}`)).close(); // migrate once
  const runs: WorkerRun[] = round.env.hosts.flatMap((host, i) => {
    const config: HistoryWorkerConfig = {
      store: round.storeAt(i, tag),
      resource: { url: round.resourceAt(i), schema: tag },
      keys: ['invoice', 'ledger'],
      rounds: 0,
      writes: 3,
      holdMs: 20,
      ttlMs: 1500,
      durationMs: round.size.lockMs,
    };
    return [
      { config, prefix: host.prefix },
      { config, prefix: host.prefix },
    ];
  });
  try {
    round.fault();
    const result = await runHistory(runs, () => resource.log(), round.size.lockMs + 120_000).finally(() =>
      round.heal(),
    );
    round.felt?.();
    console.log(`[link] ${label} locks: ${round.report()}; rounds retried ${result.unavailable}`);
    console.log(formatVerdict(`${label} lock storm`, result.verdict));
    assert.deepEqual(result.verdict.violations, []);
    assert.ok(result.verdict.writes.accepted >= 20, 'the storm made progress');
  } finally {
    await resource.drop().finally(() => resource.close());
  }
}
