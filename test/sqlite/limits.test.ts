import { describe, it } from 'node:test';
import { assertLimitStorm } from '../support/limit-storm.js';
import { limitConformance } from '../conformance/limits.js';
import { openTempSqlite } from '../support/sqlite.js';

limitConformance('sqlite (file)', openTempSqlite);

describe('sqlite: rate limits across OS processes', () => {
  it('a storm of processes on one file: every window within its limit, every denial required', {
    timeout: 240_000, // a hang catcher: the workers' own bounds (limit-storm.ts) fire first
  }, async () => {
    const temp = await openTempSqlite();
    try {
      const summary = await assertLimitStorm(temp.dibs, temp.store, { prefix: 'storm' });
      console.log('sqlite limit storm', JSON.stringify(summary));
    } finally {
      await temp.cleanup();
    }
  });
});
