/**
 * The lock history checker on a guarded resource (test/support/history-checker.ts): worker
 * processes take locks on a real store and write through a PostgreSQL table that applies a write
 * only with a fence at least as high as the last one; the checker judges the recorded history
 * against the table's own log. It must find nothing on dibs' locks — also with a holder that
 * stalls past its lease and writes late — and must fail on a lock that does not exclude and on a
 * guard that ignores fences. Verdicts are printed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkHistory, formatVerdict, type History } from '../support/history-checker.js';
import { GuardedResource } from '../support/guarded-resource.js';
import { runHistory, type WorkerRun } from '../support/history-run.js';
import { requirePostgres, TEST_PG, tempPgStore } from '../support/postgres.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { uniqueId } from '../support/assert.js';
import type { HistoryWorkerConfig } from '../support/history-worker.js';

describe('history checker on hand-made histories', () => {
  const base = (): History => ({
    sections: [
      { lease: 'a', key: 'k', fence: 1, grantAt: 0, endAt: 10 },
      { lease: 'b', key: 'k', fence: 2, grantAt: 11, endAt: 20 },
    ],
    writes: [
      { id: 'a1', lease: 'a', key: 'k', fence: 1, invokeAt: 1, completeAt: 2, outcome: 'accepted' },
      { id: 'b1', lease: 'b', key: 'k', fence: 2, invokeAt: 12, completeAt: 13, outcome: 'accepted' },
    ],
    log: [
      { seq: 1, key: 'k', writeId: 'a1', fence: 1, lease: 'a' },
      { seq: 2, key: 'k', writeId: 'b1', fence: 2, lease: 'b' },
    ],
  });
  const kinds = (h: History) =>
    checkHistory(h)
      .violations.map((v) => v.kind)
      .sort();

  it('a valid history passes', () => assert.deepEqual(kinds(base()), []));
  it('two holders writing in one critical section', () => {
    const h = base();
    h.sections[1]!.grantAt = 5;
    h.writes[1]!.invokeAt = 6;
    h.writes[1]!.completeAt = 7;
    h.writes[0]!.invokeAt = 8;
    h.writes[0]!.completeAt = 9;
    h.log = [
      { seq: 1, key: 'k', writeId: 'b1', fence: 2, lease: 'b' },
      { seq: 2, key: 'k', writeId: 'a1', fence: 1, lease: 'a' },
    ];
    assert.deepEqual(kinds(h), ['fence-order', 'two-holders']);
  });
  it('a holder whose lease was lost may overlap, but its late write must not be applied', () => {
    const h = base();
    h.sections[0]!.lostAt = 4;
    h.sections[0]!.endAt = 30;
    h.writes.push({ id: 'a2', lease: 'a', key: 'k', fence: 1, invokeAt: 25, completeAt: 26, outcome: 'refused' });
    assert.deepEqual(kinds(h), []);
    h.writes[2]!.outcome = 'accepted';
    h.log.push({ seq: 3, key: 'k', writeId: 'a2', fence: 1, lease: 'a' });
    assert.deepEqual(kinds(h), ['fence-order']);
  });
  it('an equal fence from another lease', () => {
    const h = base();
    h.writes[1]!.fence = 1;
    h.log[1]!.fence = 1;
    assert.deepEqual(kinds(h), ['fence-order']);
  });
  it('an acknowledged write missing, a refused one applied, one nobody wrote', () => {
    const h = base();
    h.log.pop();
    assert.deepEqual(kinds(h), ['missing-ack']);
    const g = base();
    g.writes[1]!.outcome = 'refused';
    g.log.push({ seq: 3, key: 'k', writeId: 'zz', fence: 9, lease: 'z' });
    assert.deepEqual(kinds(g), ['phantom', 'phantom']);
  });
  it('a write logged before one that had completed before it began', () => {
    const h = base();
    h.log[0]!.seq = 3;
    assert.deepEqual(kinds(h), ['fence-order', 'realtime-order']);
  });
  it('an unknown outcome may or may not be applied', () => {
    const h = base();
    h.writes[1]!.outcome = 'unknown';
    assert.deepEqual(kinds(h), []);
    h.log.pop();
    assert.deepEqual(kinds(h), []);
  });
});

const pgSkip = await requirePostgres();
const redisSkip = (await sharedRedisAvailable()) ? false : 'redis on 127.0.0.1:6379 is not reachable';

interface LockStore {
  label: string;
  skip: string | false;
  open(): { store: string; cleanup(): Promise<void> };
}
const STORES: LockStore[] = [
  {
    label: 'sqlite',
    skip: false,
    open: () => {
      const t = tempSqliteStore();
      return { store: t.store, cleanup: async () => t.cleanup() };
    },
  },
  {
    label: 'postgres',
    skip: pgSkip,
    open: () => {
      const t = tempPgStore();
      return { store: t.store, cleanup: () => t.drop() };
    },
  },
  {
    label: 'redis',
    skip: redisSkip,
    open: () => {
      const p = testPrefix();
      return { store: `${SHARED_REDIS}?prefix=${p}`, cleanup: () => deletePrefix(SHARED_REDIS, p) };
    },
  },
];

/** 3 processes, one key: 8 sections each of 3 writes; `pause` adds a 4th that stalls past its TTL. */
function workers(
  store: string,
  resource: HistoryWorkerConfig['resource'],
  options: { brokenLock?: boolean; pause?: boolean } = {},
): WorkerRun[] {
  const config: HistoryWorkerConfig = {
    store,
    resource,
    keys: ['invoice'],
    rounds: 8,
    writes: 3,
    holdMs: 10,
    ttlMs: 5000,
    ...(options.brokenLock ? { brokenLock: true } : {}),
  };
  const runs: WorkerRun[] = Array.from({ length: 3 }, () => ({ config }));
  if (options.pause) runs.unshift({ config: { ...config, rounds: 1, ttlMs: 1000, pauseMs: 3000 } });
  return runs;
}

for (const lockStore of STORES) {
  describe(`${lockStore.label}: lock histories on a fenced PostgreSQL resource`, {
    skip: lockStore.skip || pgSkip,
    timeout: 240_000,
  }, () => {
    let store: ReturnType<LockStore['open']>;
    const resources: GuardedResource[] = [];
    const resource = async (broken = false) => {
      const r = new GuardedResource({ url: TEST_PG, schema: uniqueId('g').toLowerCase(), broken });
      resources.push(r);
      await r.create();
      return r;
    };
    before(() => {
      store = lockStore.open();
    });
    after(async () => {
      for (const r of resources)
        await r
          .drop()
          .catch(() => undefined)
          .then(() => r.close());
      await store?.cleanup();
    });

    it('dibs locks: valid, also with a holder that stalls past its lease (its late write refused)', async () => {
      const r = await resource();
      const { verdict } = await runHistory(workers(store.store, r.config, { pause: true }), () => r.log());
      console.log(formatVerdict(`${lockStore.label}, dibs lock + fence guard`, verdict));
      assert.deepEqual(verdict.violations, []);
      assert.equal(
        verdict.writes.accepted,
        3 * 8 * 3 + 1,
        'every section of the 3 well-behaved workers wrote, plus the stalled one before its pause',
      );
      assert.ok(
        verdict.writes.refused >= 1 && verdict.lost >= 1,
        'the stalled holder lost its lease and its late writes were refused',
      );
    });

    it('the checker fails on a lock that does not exclude', async () => {
      const r = await resource();
      const { verdict } = await runHistory(workers(store.store, r.config, { brokenLock: true }), () => r.log());
      console.log(formatVerdict(`${lockStore.label}, broken lock`, verdict));
      assert.ok(
        verdict.violations.some((v) => v.kind === 'two-holders'),
        JSON.stringify(verdict.violations.slice(0, 3)),
      );
    });

    it('the checker fails on a guard that ignores fences', async () => {
      const r = await resource(true);
      const { verdict } = await runHistory(workers(store.store, r.config, { pause: true }), () => r.log());
      console.log(formatVerdict(`${lockStore.label}, broken fence guard`, verdict));
      assert.ok(
        verdict.violations.some((v) => v.kind === 'fence-order'),
        JSON.stringify(verdict.violations.slice(0, 3)),
      );
    });
  });
}
