/**
 * PostgreSQL failover mid-storm (issue: replicated stores fail over). A primary and a streaming
 * standby started here, the replication link behind a relay that delays it like a cross-zone link
 * (20 ms each way). While 4 processes claim codes and 4 processes buy units — every one of them on
 * the multi-host URL `postgres://…primary,…standby/…?target_session_attrs=read-write` — the
 * primary is SIGKILLed and its link cut at the same instant, and the standby promoted. Judged by
 * the clients' record of acknowledged answers, read back from the new primary:
 * - synchronous standby: every acknowledged claim and order is there, no code has two holders,
 *   sold ≤ cap, the audits are clean, the ledger matches the client record (the product's verifier),
 *   interrupted keyed calls replay, and a lock's fence after the failover is above the one before;
 * - asynchronous standby: acknowledged answers ARE lost — the round prints how many and requires
 *   the verifier to see them (proof the checker can see a loss), while the new primary's own audit
 *   stays clean.
 * A third round demotes a primary under open connections (it turns read-only): writes answer
 * `unavailable`, never a raw error, and the next connection finds the new primary.
 * Servers, relay and temp dirs are removed after each round, and on exit even when a test fails.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { verifyPool } from '../../src/loadtest/verify.js';
import { LONG } from '../support/faults.js';
import { requirePgBinaries, startReplicatedPair, type ReplicatedPair } from '../support/pg-cluster.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp, type SaleOutcome } from '../support/sale-storm.js';
import { assertStormInvariants, runClaimStorm, type StormOutcome } from '../support/storm.js';

const skip = requirePgBinaries();
const SCHEMA = 'dibs_failover';
/** Client timeouts short enough that a storm rides through the failover within the test's budget. */
const PARAMS = { schema: SCHEMA, poolSize: '4', connectTimeoutMs: '3000', queryTimeoutMs: '10000' };
const CLAIMANTS = LONG ? 20_000 : 3000;
const CODES = CLAIMANTS + 1000;
const BUYS = LONG ? 4000 : 800;
const CAP = BUYS / 2;
/** When the failover strikes after the workers were told to go. */
const FAILOVER_AFTER_MS = 700;

interface Round {
  claims: StormOutcome[];
  buys: SaleOutcome[];
  saleId: string;
  fenceBefore: number;
  promotedMs: number;
}

/** The storms with the failover in the middle of them, and a lock granted just before it. */
async function stormThroughFailover(pair: ReplicatedPair, dibs: Dibs): Promise<Round> {
  const store = pair.store(PARAMS);
  await dibs.pools.create({ name: 'fo' });
  await dibs.pools.importCodes(
    'fo',
    Array.from({ length: CODES }, (_, i) => `FO-${i}`),
  );
  const sale = await dibs.sales.create({
    sku: 'FAILOVER',
    startsAt: new Date().toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    cap: CAP,
    perCustomerLimit: 2,
  });
  // paced, so buys are under way before, during and after the failover
  const ops: SaleOp[] = Array.from({ length: BUYS }, (_, i) => ({
    customer: `buyer-${i % (BUYS / 2)}`,
    kind: 'buy',
    quantity: 1,
    thinkMs: 0,
    delayMs: 15,
    ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
  }));
  // the failover strikes once both storms' workers are all under way (on a loaded machine their
  // start-up takes seconds, and a worker still opening its store would fail its open instead)
  let claimsGo!: () => void;
  let buysGo!: () => void;
  const started = Promise.all([new Promise<void>((r) => (claimsGo = r)), new Promise<void>((r) => (buysGo = r))]);
  let fired = false;
  const struck = (async () => {
    await started;
    await sleep(FAILOVER_AFTER_MS);
    const lease = await dibs.locks.acquire('fenced', { ttlMs: 1000 });
    fired = true;
    const { promotedMs } = await pair.failover();
    return { promotedMs, fenceBefore: lease.fence };
  })();
  struck.catch(() => {});
  const claims = runClaimStorm({
    store,
    pool: 'fo',
    processes: 4,
    claimants: CLAIMANTS,
    concurrency: 4,
    timeoutMs: 240_000,
    onStart: () => claimsGo(),
  });
  const buys = runSaleStorm({
    store,
    sale: sale.id,
    lanes: spread(ops, 4),
    concurrency: 4,
    timeoutMs: 240_000,
    during: async () => buysGo(),
  });
  const [claimOutcomes, buyOutcomes] = await Promise.all([claims, buys]);
  const { promotedMs, fenceBefore } = await struck;
  assert.ok(fired, 'the failover happened');
  return { claims: claimOutcomes, buys: buyOutcomes, saleId: sale.id, fenceBefore, promotedMs };
}

/** Acknowledged claims whose claimant does not hold the code on the new primary, and how many of those codes someone else holds. */
async function lostClaims(dibs: Dibs, claims: StormOutcome[]): Promise<{ lost: number; reissued: number }> {
  const holder = new Map<string, string | null>();
  for await (const batch of dibs.pools.exportCodes('fo', { batchSize: 5000 }))
    for (const c of batch) holder.set(c.code, c.claimant ?? null);
  const acknowledged = claims.filter((o) => o.status !== 'error' && o.code);
  const lost = acknowledged.filter((o) => holder.get(o.code!) !== o.claimant);
  return { lost: lost.length, reissued: lost.filter((o) => holder.get(o.code!) != null).length };
}

const storedOrders = (pair: ReplicatedPair) => async () =>
  new Set((await pair.standby.query<{ id: string }>(`SELECT id FROM "${SCHEMA}".sale_orders`)).map((r) => r.id));

/** A fresh Dibs on the multi-host URL, retried while the failover settles. */
async function reopen(pair: ReplicatedPair): Promise<Dibs> {
  for (let i = 0; ; i++) {
    try {
      return await openDibs(pair.store(PARAMS));
    } catch (error) {
      if (i > 50 || !isDibsError(error, 'unavailable')) throw error;
      await sleep(200);
    }
  }
}

// Two lanes side by side: the storms through a failover (CPU-bound, one after the other) and the
// rounds without a storm (they mostly wait: server start-up, the locale build), which then add
// next to nothing to the file's time.
describe('postgres replication faults', { concurrency: true }, () => {
  describe('failovers mid-storm', { concurrency: 1 }, () => {
    for (const sync of [true, false]) {
      describe(`postgres failover mid-storm, ${sync ? 'synchronous' : 'asynchronous'} standby`, {
        skip,
        timeout: 300_000,
      }, () => {
        let pair: ReplicatedPair | undefined;
        let dibs: Dibs | undefined;
        before(async () => {
          pair = await startReplicatedPair({ sync, delayMs: 20 });
        });
        after(async () => {
          await dibs?.close().catch(() => {});
          await pair?.stop();
        });

        it(
          sync
            ? 'loses nothing: every acknowledged claim and order on the new primary, ledger matched, fences grow'
            : 'loses acknowledged answers, and the checker sees them',
          async () => {
            const first = await openDibs(pair!.store(PARAMS));
            let round: Round;
            try {
              round = await stormThroughFailover(pair!, first);
            } finally {
              await first.close().catch(() => {});
            }
            dibs = await reopen(pair!);
            const health = await dibs.health();
            assert.equal(
              health.details.primary,
              `127.0.0.1:${pair!.standby.port}`,
              'the multi-host URL reaches the promoted standby',
            );
            const unavailable =
              round.claims.filter((o) => o.error === 'unavailable').length +
              round.buys.filter((o) => o.error === 'unavailable').length;
            const strange = [...round.claims, ...round.buys].filter(
              (o) => o.status === 'error' && !['unavailable', 'sold_out', 'limit_reached'].includes(o.error!),
            );
            assert.deepEqual(strange, [], 'errors are unavailable (or sold_out / limit_reached), never raw');
            assert.ok(unavailable > 0, 'the failover struck while the storms were running');
            const { lost, reissued } = await lostClaims(dibs, round.claims);
            const stored = await storedOrders(pair!)();
            const lostOrders = round.buys.filter((o) => o.status === 'ok' && !stored.has(o.orderId!)).length;
            const fenceAfter = (await dibs.locks.acquire('fenced', { ttlMs: 1000, waitMs: 5000 })).fence;
            const acknowledged = round.claims.filter((o) => o.status !== 'error').length;
            process.stderr.write(
              `${sync ? 'sync' : 'async'} standby: promoted in ${Math.round(round.promotedMs)} ms; ${acknowledged} claims and ${round.buys.filter((o) => o.status === 'ok').length} buys acknowledged, ${unavailable} answered unavailable; LOST ${lost} acknowledged claims (${reissued} of their codes re-issued) and ${lostOrders} acknowledged orders; fence ${round.fenceBefore} before, ${fenceAfter} after; relay moved ${pair!.relay.stats.bytes} bytes, dropped ${pair!.relay.stats.dropped} at the cut\n`,
            );

            if (sync) {
              assert.equal(lost, 0, 'no acknowledged claim lost');
              assert.equal(lostOrders, 0, 'no acknowledged order lost');
              await assertStormInvariants(dibs, 'fo', round.claims, {
                codes: CODES,
                perClaimantLimit: 1,
                allowUnacknowledged: true,
                allowedErrors: ['unavailable'],
              });
              // interrupted keyed claims, retried with their key, answer one code each (a replay or a first claim)
              for (const o of round.claims.filter((c) => c.error === 'unavailable' && c.key)) {
                const again = await dibs.pools.claim('fo', o.claimant, { idempotencyKey: o.key! });
                assert.equal(again.held.length, 1, `${o.claimant} holds one code after the retry`);
              }
              await assertBuysSurvived(dibs, storedOrders(pair!), round.saleId, CAP, round.buys);
              assert.deepEqual(await dibs.pools.audit('fo'), []);
              assert.ok(
                fenceAfter > round.fenceBefore,
                `fence after the failover (${fenceAfter}) > before (${round.fenceBefore})`,
              );
            } else {
              // The proof that this test can see a loss: the product's verifier, given the client record, reports it.
              const { violations } = await verifyPool(dibs, 'fo', round.claims, {
                codes: CODES,
                total: CODES,
                perClaimantLimit: 1,
                allowUnacknowledged: true,
                allowedErrors: ['unavailable'],
              });
              process.stderr.write(
                `async standby: the verifier reports ${violations.length} violations, e.g. ${violations[0]?.message ?? '-'}\n`,
              );
              assert.ok(
                lost + lostOrders > 0,
                'an asynchronous standby loses acknowledged answers when its link is slow and the primary dies',
              );
              assert.equal(violations.length > 0, lost > 0, 'the verifier sees exactly when claims were lost');
              // what the new primary holds is consistent in itself: the loss is invisible to the store
              assert.deepEqual(await dibs.pools.audit('fo'), []);
              assert.deepEqual(await dibs.sales.audit(round.saleId), []);
              assert.ok((await dibs.sales.get(round.saleId)).stats.sold <= CAP);
              // The grant before the failover may be lost with the rest; a fence taken from the server's
              // clock (µs since the epoch, > 1e12) still grows. A per-key counter repeats it: reported.
              if (round.fenceBefore > 1e12)
                assert.ok(
                  fenceAfter > round.fenceBefore,
                  `fence after the failover (${fenceAfter}) > before (${round.fenceBefore})`,
                );
              else if (fenceAfter <= round.fenceBefore)
                process.stderr.write(
                  `async standby: fences are per-key counters in this build: the fence ${fenceAfter} was granted again after the failover\n`,
                );
            }
          },
        );
      });
    }
  });

  describe('a primary turned read-only, a synchronous standby cut: no storm', { concurrency: 1 }, () => {
    describe('postgres: a primary turned read-only under open connections', { skip, timeout: 120_000 }, () => {
      let pair: ReplicatedPair | undefined;
      let dibs: Dibs | undefined;
      before(async () => {
        pair = await startReplicatedPair({ sync: false, delayMs: 0 });
      });
      after(async () => {
        await dibs?.close().catch(() => {});
        await pair?.stop();
      });

      it('answers unavailable (never a raw error), drops the connection and then writes to the new primary', async () => {
        dibs = await openDibs(pair!.store({ ...PARAMS, poolSize: '2' }));
        await dibs.pools.create({ name: 'ro' });
        await dibs.pools.importCodes('ro', ['RO-1', 'RO-2', 'RO-3']);
        await dibs.pools.claim('ro', 'before');
        // the old primary stays up but refuses writes on every session, the open ones included
        await pair!.primary.query('ALTER SYSTEM SET default_transaction_read_only = on');
        await pair!.primary.query('SELECT pg_reload_conf()');
        // reloaded once a new session sees it (the postmaster then signals the open ones), not after a
        // fixed pause that a loaded machine can outlast
        for (let i = 0; ; i++) {
          const [row] = await pair!.primary.query<{ default_transaction_read_only: string }>(
            'SHOW default_transaction_read_only',
          );
          if (row?.default_transaction_read_only === 'on') break;
          if (i > 100) throw new Error('the primary did not turn read-only within 10 s');
          await sleep(100);
        }
        const refused = await dibs.pools.claim('ro', 'during').then(
          () => null,
          (error: unknown) => error,
        );
        assert.ok(
          isDibsError(refused, 'unavailable'),
          `a write on a read-only primary is unavailable, got ${String(refused)}`,
        );
        await pair!.standby.query('SELECT pg_promote(true, 60)');
        let answer: Awaited<ReturnType<typeof dibs.pools.claim>> | undefined;
        for (let i = 0; i < 50 && !answer; i++) {
          answer = await dibs.pools.claim('ro', 'after').catch((error: unknown) => {
            assert.ok(isDibsError(error, 'unavailable'), String(error));
            return undefined;
          });
          if (!answer) await sleep(100);
        }
        assert.equal(answer?.status, 'claimed', 'the next connection found the promoted standby');
        assert.equal((await dibs.health()).details.primary, `127.0.0.1:${pair!.standby.port}`);
        const onOldPrimary = await pair!.primary
          .query<{ n: number }>(`SELECT count(*)::int AS n FROM "${SCHEMA}".codes WHERE claimant = 'after'`)
          .catch(() => [{ n: -1 }]);
        assert.equal(onOldPrimary[0]!.n, 0, 'nothing was written to the old primary');
      });
    });

    /**
     * A German locale for the servers' messages, compiled into a temp dir the servers find through
     * LOCPATH (nothing installed system-wide). Null when this machine cannot build one; CI must.
     * Asynchronous: the build takes seconds of a loaded machine, spent while the rounds beside it run.
     */
    async function germanMessages(): Promise<{ env: NodeJS.ProcessEnv; dir: string } | null> {
      const dir = mkdtempSync(join(tmpdir(), 'dibs-locale-'));
      // removed on exit too: the build starts with the file, also when its round is filtered out or fails
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      chmodSync(dir, 0o755);
      const built = await new Promise<{ ok: boolean; why: string }>((resolve) =>
        execFile(
          'localedef',
          ['-i', 'de_DE', '-f', 'UTF-8', join(dir, 'de_DE.UTF-8')],
          { timeout: 120_000 },
          (error, _out, stderr) => resolve({ ok: !error, why: `${stderr}${error?.message ?? ''}` }),
        ),
      );
      if (built.ok || existsSync(join(dir, 'de_DE.UTF-8', 'LC_MESSAGES'))) return { env: { LOCPATH: dir }, dir };
      rmSync(dir, { recursive: true, force: true });
      if (process.env.CI)
        throw new Error(`localedef could not build de_DE.UTF-8 (Debian package locales): ${built.why}`);
      return null;
    }

    // started with the file, so that the build runs while the read-only round does
    const localeBuild = skip ? Promise.resolve(null) : germanMessages();
    localeBuild.catch(() => {});

    describe('postgres: the synchronous standby unreachable, the primary alive', { skip, timeout: 120_000 }, () => {
      let pair: ReplicatedPair | undefined;
      let dibs: Dibs | undefined;
      let locale: Awaited<typeof localeBuild> = null;
      before(async () => {
        locale = await localeBuild;
        pair = await startReplicatedPair({ sync: true, delayMs: 0, env: locale?.env });
      });
      after(async () => {
        await dibs?.close().catch(() => {});
        await pair?.stop();
        const built = locale ?? (await localeBuild.catch(() => null));
        if (built) rmSync(built.dir, { recursive: true, force: true });
      });

      it('never acknowledges a commit whose wait for the standby was cancelled (pg_cancel_backend)', async () => {
        dibs = await openDibs(pair!.store({ ...PARAMS, queryTimeoutMs: '20000' }));
        await dibs.pools.create({ name: 'wait' });
        await dibs.pools.importCodes('wait', ['W-1', 'W-2', 'W-3']);
        const sale = await dibs.sales.create({
          sku: 'WAIT',
          startsAt: new Date().toISOString(),
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
          cap: 5,
          perCustomerLimit: 1,
        });
        assert.equal((await dibs.pools.claim('wait', 'linked')).status, 'claimed');
        pair!.relay.cut();
        // Each commit now waits for a standby that no longer hears the primary; an operator (or a
        // proxy) cancels the wait: PostgreSQL then answers success, committed on the primary only.
        // cancels every commit waiting for the standby until `call` has answered (bounded)
        const cancelling = async (call: Promise<unknown>) => {
          let answered = false;
          const answer = call
            .then(
              (r) => r,
              (error: unknown) => error,
            )
            .finally(() => (answered = true));
          let cancelled = 0;
          for (let i = 0; i < 150 && !answered; i++) {
            const rows = await pair!.primary.query<{ ok: boolean }>(
              `SELECT pg_cancel_backend(pid) AS ok FROM pg_stat_activity WHERE wait_event = 'SyncRep'`,
            );
            cancelled += rows.filter((r) => r.ok).length;
            await sleep(100);
          }
          assert.ok(cancelled > 0, 'a commit waited for the synchronous standby and was cancelled');
          return answer;
        };
        const claim = await cancelling(dibs.pools.claim('wait', 'cut', { idempotencyKey: 'cut-1' }));
        assert.ok(
          isDibsError(claim, 'unavailable'),
          `a claim the synchronous standby never confirmed is unavailable, got ${JSON.stringify(claim)}`,
        );
        const buy = await cancelling(dibs.sales.buy(sale.id, 'cut', 1, { idempotencyKey: 'buy-1' }));
        assert.ok(
          isDibsError(buy, 'unavailable'),
          `a buy the synchronous standby never confirmed is unavailable, got ${JSON.stringify(buy)}`,
        );

        // The cancelled wait's WARNING has no SQLSTATE of its own and its text is translated: a server
        // speaking German must be recognised all the same.
        if (!locale) return;
        await pair!.primary.query(`ALTER SYSTEM SET lc_messages = 'de_DE.UTF-8'`);
        await pair!.primary.query('SELECT pg_reload_conf()');
        const german = await pair!.primary.query('SELECT 1/0').then(
          () => '',
          (error: Error) => error.message,
        );
        assert.match(german, /Division durch Null/i, 'the server now answers in German');
        const claimDe = await cancelling(dibs.pools.claim('wait', 'cut-de', { idempotencyKey: 'cut-de-1' }));
        assert.ok(
          isDibsError(claimDe, 'unavailable'),
          `with German server messages, an unconfirmed claim is unavailable, got ${JSON.stringify(claimDe)}`,
        );
        const buyDe = await cancelling(dibs.sales.buy(sale.id, 'cut-de', 1, { idempotencyKey: 'buy-de-1' }));
        assert.ok(
          isDibsError(buyDe, 'unavailable'),
          `with German server messages, an unconfirmed buy is unavailable, got ${JSON.stringify(buyDe)}`,
        );
      });
    });
  });
});
