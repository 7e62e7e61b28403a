/**
 * Redis Sentinel failover under load: 1 master + 2 replicas (replicating at first through relays that
 * delay the link 20 ms each way; the sentinels later re-point them straight at the master, see
 * test/support/replicas.ts) + 3 sentinels. A 4-process claim storm
 * and a 4-process flash sale run against `redis+sentinel://…`; mid-storm the master is SIGKILLed
 * and its replication links cut in the same instant, the sentinels promote a replica, and the
 * clients follow it without a restart. Judged by the clients' record of acknowledged answers:
 * - with `acks=replicas:1`: every acknowledged claim and order is on the new master, no code has
 *   two holders, sold ≤ cap, the audits are clean and the ledger matches;
 * - without acks: the test counts the acknowledged answers the failover lost and prints the number
 *   (only printed: the proof that this test can see a loss at all is the probe below).
 * Before the kill the master stops feeding its replicas (replicas.ts: its ACL refuses PSYNC and
 * REPLCONF and their connections are killed) while it goes on answering clients, and the test
 * claims a code of its own then (a probe, in a pool of its own that the storm cannot have
 * emptied, judged like the storm's answers): without acks that
 * claim is acknowledged and certainly lost, with acks it must not be acknowledged, whether or not
 * the storm (on a slow machine, maybe not started or already over) answered anything meanwhile.
 * The sentinels judge the master down after 1 s without an answer, which a loaded machine can cause
 * by itself: they then fail over before the test's crash, and without acks the writes of the round's
 * set-up can be lost with it (seen once: a sale created, then not found). The round watches what
 * the sentinels announce; a round without acks whose sentinels failed over before its crash starts
 * again, and a set-up that fails without any failover fails the test. With acks nothing changes: a
 * failover of any cause must lose nothing acknowledged.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { openDibs, type Dibs, type Sale } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { verifyPool } from '../../src/loadtest/verify.js';
import { LONG } from '../support/faults.js';
import { redisServerInstalled } from '../support/redis.js';
import { describeEvents, startSentinelSetup, withNode, type SentinelSetup } from '../support/replicas.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp, type SaleOutcome } from '../support/sale-storm.js';
import {
  assertStormInvariants,
  isLostAcknowledgedCode,
  probeClaim,
  runClaimStorm,
  type StormOutcome,
} from '../support/storm.js';

const CODES = LONG ? 20_000 : 3000;
const CLAIMANTS = LONG ? 24_000 : 3600;
const BUYS = LONG ? 6000 : 1200;
const CAP = LONG ? 2000 : 400;

interface Round {
  claims: StormOutcome[];
  orders: SaleOutcome[];
  /** The store after the failover, opened afresh through the sentinels. */
  after: Dibs;
  saleId: string;
  storedOrders: () => Promise<Set<string>>;
  promotedPort: number;
  /** The test's own claim in PROBE_POOL, answered while the replicas heard nothing. */
  probe: StormOutcome;
  /** Storm answers given while the replicas heard nothing, before the kill. */
  answeredInLag: number;
}

const PROBE_POOL = 'sen-probe';

const answerOf = (o: StormOutcome) => `${o.status}${o.code ? ` ${o.code}` : ''}${o.error ? ` ${o.error}` : ''}`;

/** Attempts of a round without acks whose sentinels fail over by themselves before its crash. */
const ATTEMPTS = 3;

/**
 * Runs both storms against a Sentinel setup, crashes the master mid-storm, waits for the promotion
 * and judges the round with `use`; without acks, starts again in a fresh setup when the sentinels
 * failed over before the crash (see the file's comment).
 */
async function failoverRound(acks: boolean, use: (round: Round) => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const setup = await startSentinelSetup({ replicas: 2, delayMs: 20 });
    try {
      const early = await roundOn(setup, acks, use);
      if (early.length === 0) return;
      const what = `the sentinels failed over by themselves before the test's crash (${early.join('; ')}; ${describeEvents(setup)})`;
      if (attempt === ATTEMPTS)
        throw new Error(`sentinel round without acks, ${ATTEMPTS} attempts: every time ${what}`);
      console.log(`sentinel round without acks, attempt ${attempt}: ${what}; the round starts again`);
    } finally {
      await setup.stop();
    }
  }
}

/**
 * One round on `setup`. Returns the failovers the sentinels made before the test's crash when the
 * round, being without acks, must start again (the round is then not judged); else [].
 */
async function roundOn(setup: SentinelSetup, acks: boolean, use: (round: Round) => Promise<void>): Promise<string[]> {
  const prefix = acks ? 'acked' : 'plain';
  const store = `${setup.url}?prefix=${prefix}&commandTimeoutMs=5000${acks ? '&acks=replicas:1&acksTimeoutMs=1500' : ''}`;
  const dibs = await openDibs(store);
  const sku = `SEN-${prefix}`;
  let sale: Sale;
  try {
    await dibs.pools.create({ name: 'sen' });
    await dibs.pools.importCodes(
      'sen',
      Array.from({ length: CODES }, (_, i) => `SEN-${i}`),
    );
    await dibs.pools.create({ name: PROBE_POOL });
    await dibs.pools.importCodes(PROBE_POOL, ['PROBE-0']);
    sale = await dibs.sales.create({
      sku,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: CAP,
      perCustomerLimit: 2,
    });
  } catch (error) {
    await dibs.close();
    // without acks a write the master acknowledged may be lost to a failover, and only then
    const failovers = await setup.askFailovers();
    if (!acks && failovers.length > 0) return failovers;
    throw new Error(
      `the round's set-up failed ${acks ? 'with acks' : 'without acks and without a failover'} (${describeEvents(setup)}): ${String(error)}`,
      { cause: error },
    );
  }
  // Paced buys (a few ms apart) so the sale is still selling when the master dies.
  const ops: SaleOp[] = Array.from({ length: BUYS }, (_, i) => ({
    customer: `buyer-${i % (BUYS / 2)}`,
    kind: 'buy',
    quantity: 1,
    thinkMs: 0,
    delayMs: 3,
    ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
  }));
  let crashed = false;
  let promotedPort = 0;
  let probe: StormOutcome | undefined;
  const lag = { from: 0, to: 0 };
  let early: string[] = [];
  const crash = async () => {
    // Once both storms have acknowledged something, so the crash lands in the middle of them.
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(20)) {
      const [pool, s] = await Promise.all([dibs.pools.stats('sen'), dibs.sales.get(sale.id)]).catch(
        () => [undefined, undefined] as const,
      );
      if (pool && s && pool.claimed >= 100 && s.stats.sold >= 20) break;
    }
    early = setup.failovers();
    // without acks, a round whose master has already changed is not the round it means to run
    if (!acks && early.length > 0) return;
    // the replicas hear nothing while the test's own claim is answered, so without acks the loss
    // this round must count is there whatever the machine's speed; with acks it must lose nothing
    await setup.crashMaster({
      lag: async () => {
        lag.from = Date.now();
        probe = await probeClaim(dibs, PROBE_POOL, `probe-${prefix}`);
        lag.to = Date.now();
      },
    });
    crashed = true;
    promotedPort = await setup.promoted();
    assert.ok(
      (await setup.askFailovers()).some((f) => f.includes(`-> :${promotedPort}`)),
      `the failover watch sees the failover the crash caused (${describeEvents(setup)})`,
    );
  };
  let crashing: Promise<void> = Promise.resolve();
  const [claims, orders] = await Promise.all([
    runClaimStorm({
      store,
      pool: 'sen',
      processes: 4,
      claimants: CLAIMANTS,
      concurrency: 8,
      timeoutMs: 240_000,
      onStart: () => (crashing = crash()),
    }),
    runSaleStorm({ store, sale: sale.id, lanes: spread(ops, 4), concurrency: 4, timeoutMs: 240_000 }),
  ]);
  await crashing;
  await dibs.close();
  if (!acks && early.length > 0) return early;
  assert.ok(crashed && probe, 'the master was killed while the storms ran');
  const answeredInLag = claims.filter((o) => o.endedAt! >= lag.from && o.endedAt! <= lag.to).length;
  if (early.length > 0) console.log(`sentinel round with acks: ${describeEvents(setup)} (judged all the same)`);
  const tag = saleTag(prefix, saleGroupOf(sku));
  const storedOrders = () =>
    withNode(promotedPort, async (raw) => new Set(await raw.hkeys(saleKey(tag, 'orders', sale.id))));
  const after = await openDibs(`${setup.url}?prefix=${prefix}`);
  try {
    await use({ claims, orders, after, saleId: sale.id, storedOrders, promotedPort, probe, answeredInLag });
  } finally {
    await after.close();
  }
  return [];
}

describe('redis sentinel: the master is SIGKILLed mid-storm and a replica promoted', {
  skip: redisServerInstalled() ? false : 'redis-server is not installed',
  timeout: 600_000,
}, () => {
  it('with acks=replicas:1: nothing acknowledged is lost, nothing handed out twice, audits clean', async () => {
    await failoverRound(true, async ({ claims, orders, after, saleId, storedOrders, promotedPort, probe }) => {
      const errors = [...claims, ...orders].filter(
        (o) => o.status === 'error' && !['sold_out', 'limit_reached'].includes(o.error!),
      );
      assert.ok(errors.length > 0, 'the failover was felt by the clients');
      assert.deepEqual(
        [...new Set(errors.map((o) => o.error))],
        ['unavailable'],
        'failures are the retriable unavailable',
      );
      const acknowledgedAfter = claims.filter((o) => o.status === 'claimed').length;
      const summary = await assertStormInvariants(after, 'sen', claims, {
        codes: CODES,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
      });
      const seen = await assertBuysSurvived(after, storedOrders, saleId, CAP, orders);
      // the test's own claim, answered while the replicas heard nothing: not acknowledged, or kept
      await assertStormInvariants(after, PROBE_POOL, [probe], {
        codes: 1,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
      });
      console.log(
        `sentinel failover with acks=replicas:1 (new master :${promotedPort}): claimed answers ${acknowledgedAfter}, codes given ${summary.codesGiven}, unavailable ${errors.length}; orders: sold ${seen.sold}, ${seen.retried} keyed buys retried; the test's own claim while the replicas heard nothing: ${answerOf(probe)}; lost 0, violations 0`,
      );
    });
  });

  it('without acks: the failover loses acknowledged answers, and the test counts them', async () => {
    await failoverRound(false, async ({ claims, orders, after, storedOrders, probe, answeredInLag }) => {
      const { violations } = await verifyPool(after, 'sen', claims, {
        codes: CODES,
        total: CODES,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
        maxPerCheck: 1_000_000,
      });
      const lostClaims = violations.filter(isLostAcknowledgedCode).length;
      const twoHolders = violations.filter((v) => v.check === 'I1').length;
      const probeLost = (
        await verifyPool(after, PROBE_POOL, [probe], {
          codes: 1,
          total: 1,
          perClaimantLimit: 1,
          allowedErrors: ['unavailable'],
          allowUnacknowledged: true,
        })
      ).violations.some(isLostAcknowledgedCode);
      const stored = await storedOrders();
      const lostOrders = orders.filter((o) => o.status === 'ok' && !stored.has(o.orderId!)).length;
      const acknowledged =
        claims.filter((o) => o.status === 'claimed').length + orders.filter((o) => o.status === 'ok').length;
      console.log(
        `sentinel failover WITHOUT acks: ${lostClaims} acknowledged claims and ${lostOrders} acknowledged orders lost (of ${acknowledged} acknowledged answers); ${twoHolders} codes acknowledged to two claimants; the test's own claim while the replicas heard nothing: ${answerOf(probe)}, ${probeLost ? 'lost' : 'not lost'}; storm answers meanwhile: ${answeredInLag}`,
      );
      // the storm's own losses depend on where its writes were at the kill; the probe's does not
      assert.ok(
        probeLost,
        `the cut makes the loss visible: the test's own claim, answered while the replicas heard nothing, is lost (otherwise this test proves nothing); it was ${answerOf(probe)}`,
      );
    });
  });
});
