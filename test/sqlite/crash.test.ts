/**
 * I5 on SQLite: worker processes are SIGKILLed in the middle of a claim storm. Every claim a
 * worker had been answered before it died must still be there, and the audit must be clean.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sqliteForSuite } from '../support/sqlite.js';
import { assertStormInvariants, planStorm, runClaimStorm, type StormOptions } from '../support/storm.js';

describe('sqlite: processes killed mid-storm', () => {
  const temp = sqliteForSuite();

  it('keeps every acknowledged claim and a clean audit after SIGKILL of 2 of 4 workers', async () => {
    await temp.dibs.pools.create({ name: 'crash' });
    await temp.dibs.pools.importCodes('crash', Array.from({ length: 5000 }, (_, i) => `CODE-${i}`));
    const options: StormOptions = { store: temp.store, pool: 'crash', processes: 4, claimants: 10_000, concurrency: 4, kill: { processes: 2, afterMs: 400 } };
    const outcomes = await runClaimStorm(options);
    const planned = planStorm(options).flat().length;
    assert.ok(outcomes.length > 0, 'some claims were answered before the kill');
    assert.ok(outcomes.length < planned, `the kill cut the storm short (${outcomes.length} of ${planned} answered)`);
    const summary = await assertStormInvariants(temp.dibs, 'crash', outcomes, { codes: 5000, perClaimantLimit: 1, allowUnacknowledged: true });
    assert.ok(summary.codesGiven > 0);
    // The database is still writable and consistent after the crash: the survivors' file lock state is sane.
    await temp.dibs.pools.claim('crash', 'after-the-crash').catch((error: { code?: string }) => assert.equal(error.code, 'sold_out'));
    assert.deepEqual(await temp.dibs.pools.audit('crash'), []);
  });
});
