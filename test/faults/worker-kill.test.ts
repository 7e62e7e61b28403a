/**
 * I5 under process crashes: 2 of 4 worker processes are SIGKILLed in the middle of a claim storm
 * (a serverless instance reclaimed, a pod OOM-killed), on every store. Every claim a worker had been
 * answered before it died must still be there, nothing may be half-done (counters = ledger, the
 * audit clean), and the store must go on serving.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';
import { openTempSqlite } from '../support/sqlite.js';
import { LONG } from '../support/faults.js';
import { assertStormInvariants, planStorm, runClaimStorm, type StormOptions } from '../support/storm.js';

// What the kill proves needs the killed workers' lanes unfinished when they have answered 50 (the
// storm checks every 10 ms; asserted below) and the survivors serving after it; the survivors' longer
// tail of thousands more claims proves nothing more, so the default run is 1,000 codes for 2,000
// claimants (500 calls a lane, ten times the kill point), FAULTS_LONG=1 5,000 for 10,000.
const CODES = LONG ? 5000 : 1000;
const CLAIMANTS = 2 * CODES;
const KILLED_AFTER = 50;

const stores: {
  label: string;
  skip: string | false;
  open: () => Promise<{ dibs: Dibs; store: string; cleanup(): Promise<void> }>;
}[] = [
  { label: 'sqlite', skip: false, open: openTempSqlite },
  { label: 'postgres', skip: await requirePostgres(), open: () => openTempPg({ poolSize: '4' }) },
  {
    label: 'redis',
    skip: (await sharedRedisAvailable()) ? false : 'redis on 127.0.0.1:6379 is not reachable',
    open: async () => {
      const prefix = testPrefix();
      const store = `${SHARED_REDIS}?prefix=${prefix}`;
      const dibs = await openDibs(store);
      return { dibs, store, cleanup: async () => (await dibs.close(), await deletePrefix(SHARED_REDIS, prefix)) };
    },
  },
];

for (const target of stores) {
  describe(`${target.label}: worker processes killed mid-storm`, { skip: target.skip }, () => {
    let env: Awaited<ReturnType<(typeof target)['open']>>;
    before(async () => {
      env = await target.open();
    });
    after(async () => env?.cleanup());

    it('keeps every acknowledged claim and a clean audit after SIGKILL of 2 of 4 workers', async () => {
      const { dibs, store } = env;
      await dibs.pools.create({ name: 'crash' });
      await dibs.pools.importCodes(
        'crash',
        Array.from({ length: CODES }, (_, i) => `CODE-${i}`),
      );
      const options: StormOptions = {
        store,
        pool: 'crash',
        processes: 4,
        claimants: CLAIMANTS,
        concurrency: 4,
        // killed once each has answered 50: what they acknowledged before dying is put to the test
        kill: { processes: 2, afterAnswers: KILLED_AFTER },
      };
      const outcomes = await runClaimStorm(options);
      const planned = planStorm(options).flat().length;
      assert.ok(outcomes.length > 0, 'some claims were answered before the kill');
      assert.ok(outcomes.length < planned, `the kill cut the storm short (${outcomes.length} of ${planned} answered)`);
      const killedLanes = planStorm(options).slice(0, 2).flat().length;
      // the survivors answer their whole lanes: the rest was answered by the killed two before the kill
      const answeredByKilled = outcomes.length - (planned - killedLanes);
      console.log(
        `[worker-kill] ${target.label}: ${outcomes.length} of ${planned} answered; the 2 killed workers had answered ${answeredByKilled} of their ${killedLanes}`,
      );
      assert.ok(answeredByKilled >= 2 * KILLED_AFTER, 'the killed workers had acknowledged claims before they died');
      const summary = await assertStormInvariants(dibs, 'crash', outcomes, {
        codes: CODES,
        perClaimantLimit: 1,
        allowUnacknowledged: true,
      });
      assert.ok(summary.codesGiven > 0);
      // the store goes on serving after the crash (SQLite: the dead processes' locks are gone)
      await dibs.pools
        .claim('crash', 'after-the-crash')
        .catch((error: { code?: string }) => assert.equal(error.code, 'sold_out'));
      assert.deepEqual(await dibs.pools.audit('crash'), []);
    });
  });
}
