/**
 * The same small load test on every other landed backend (PostgreSQL, Redis): 2 processes, 500
 * claimants, 200 codes, each in its own schema / key prefix, dropped afterwards. A backend whose
 * URL scheme is not registered on this branch yet, or whose server is unreachable, is skipped
 * loudly (with CI=true an unreachable server fails).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { deletePrefix } from '../support/redis.js';
import { after, describe, it } from 'node:test';
import { isDibsError, openDibs } from '../../src/index.js';
import { runLoadtest } from '../../src/loadtest/run.js';
import { uniqueId } from '../support/assert.js';

interface BackendCase {
  label: string;
  port: number;
  store(id: string): string;
  drop(id: string): Promise<void>;
}

const CASES: BackendCase[] = [
  {
    label: 'postgres',
    port: 5432,
    store: (id) => `postgres://root@127.0.0.1:5432/test?schema=${id}`,
    async drop(id) {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'root', database: 'test' });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${id}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  },
  {
    label: 'redis',
    port: 6379,
    store: (id) => `redis://127.0.0.1:6379/0?prefix=${id}`,
    // Every key of a run lives under its unique prefix.
    drop: (id) => deletePrefix('redis://127.0.0.1:6379/0', id),
  },
];

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** Why this backend cannot be tested here, or null when it can. */
async function unavailable(c: BackendCase, store: string): Promise<string | null> {
  if (!(await reachable(c.port))) {
    const message = `${c.label} is not reachable on 127.0.0.1:${c.port}: start it to run this test`;
    if (process.env.CI === 'true') assert.fail(message);
    return message;
  }
  try {
    await (await openDibs(store)).close();
    return null;
  } catch (error) {
    if (isDibsError(error, 'invalid_input') && /unsupported scheme/.test(error.message))
      return `the ${c.label} backend is not on this branch yet: merge main once it has landed`;
    throw error;
  }
}

for (const c of CASES) {
  describe(`loadtest on ${c.label}: 2 processes`, () => {
    const id = uniqueId('lt');
    const store = c.store(id);
    let opened = false;
    after(async () => {
      if (opened) await c.drop(id);
    });

    it('500 claimants vs 200 codes: clean, and the report matches the store', async (t) => {
      const why = await unavailable(c, store);
      if (why !== null) {
        t.skip(why);
        return;
      }
      opened = true;
      const report = await runLoadtest({
        target: { kind: 'store', store },
        processes: 2,
        claimants: 500,
        codes: 200,
        repeatRatio: 0.2,
      });
      assert.deepEqual(report.violations, []);
      assert.equal(report.target.backend, c.label);
      assert.deepEqual(report.numbers, {
        demand: 500,
        supply: 200,
        expectedCodesGiven: 200,
        codesGiven: 200,
        winners: 200,
        losers: 300,
      });
      const dibs = await openDibs(store);
      try {
        assert.deepEqual(report.finalStats, await dibs.pools.stats(report.pool));
        assert.deepEqual(await dibs.pools.audit(report.pool), []);
      } finally {
        await dibs.close();
      }
    });
  });
}
