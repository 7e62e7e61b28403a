/** Rate limits on PostgreSQL: the conformance suite unchanged and the multi-process storm. */
import { it } from 'node:test';
import { limitConformance } from '../conformance/limits.js';
import { assertLimitStorm } from '../support/limit-storm.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  it('postgres limits', { skip }, () => {});
} else {
  limitConformance('postgres', () => openTempPg({ poolSize: '4' }));

  it('postgres: a storm of processes, every window within its limit, every denial required', {
    timeout: 240_000, // a hang catcher: the workers' own bounds (limit-storm.ts) fire first
  }, async () => {
    const temp = await openTempPg({ poolSize: '4' });
    try {
      console.log(
        'postgres limit storm',
        JSON.stringify(await assertLimitStorm(temp.dibs, temp.store, { prefix: 'storm' })),
      );
    } finally {
      await temp.cleanup();
    }
  });
}
