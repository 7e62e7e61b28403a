/**
 * Redis servers that answer but refuse to serve, produced for real on test-owned redis-servers:
 * READONLY (a replica), OOM (maxmemory under noeviction), MISCONF (a failed RDB save with
 * stop-writes-on-bgsave-error), NOREPLICAS (min-replicas-to-write), BUSY (a long script),
 * MASTERDOWN (a replica of a dead primary with replica-serve-stale-data no).
 * - the plain Redis store answers `unavailable` (retriable, reason and retryAfterMs in details),
 *   and over HTTP 503 with Retry-After (NOREPLICAS; OOM refuses only a script's first write, and
 *   the HTTP claim's first write frees memory);
 * - a tiered store (SQLite ledger) sells the buy through the ledger, opens the breaker, and its
 *   health reports the fast path degraded with the reason.
 * LOADING, CLUSTERDOWN and TRYAGAIN are classified by test/redis/errors.test.ts.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { freePort, redisServerInstalled, startRedis, testPrefix, type OwnedRedis } from '../support/redis.js';
import { tempTieredStore } from '../support/tiered.js';

const installed = redisServerInstalled();
const HOUR = 3_600_000;

async function withClient<T>(url: string, fn: (client: Redis) => Promise<T>): Promise<T> {
  // No ready check: it sends INFO, which a BUSY server refuses.
  const client = new Redis(url, { maxRetriesPerRequest: 1, enableReadyCheck: false });
  client.on('error', () => {});
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** A state a server is put in; `undo` takes it back (nothing when the server is thrown away). */
interface State {
  reason: string;
  /** The server the stores talk to. */
  server(): OwnedRedis;
  produce(): Promise<void>;
  undo(): Promise<void>;
}

describe('Redis answers but refuses to serve', { skip: !installed }, () => {
  let primary: OwnedRedis;
  let replica: OwnedRedis;
  let misconf: OwnedRedis;
  let stale: OwnedRedis;
  let busyClient: Redis | undefined;

  before(async () => {
    primary = await startRedis();
    replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)]);
    // Saves configured (MISCONF needs them), into a directory that is removed below.
    misconf = await startRedis(['--save', '3600 1']);
    // Made a replica of a primary that never answers, refusing stale reads, by its state below.
    stale = await startRedis();
    await until('the replica to sync', () =>
      withClient(replica.url, async (c) => (await c.info('replication')).includes('master_link_status:up')),
    );
  });

  after(async () => {
    busyClient?.disconnect();
    await Promise.all([primary, replica, misconf, stale].map((s) => s?.stop()));
  });

  const config = (server: () => OwnedRedis, name: string, value: string, back: string) => ({
    produce: () => withClient(server().url, async (c) => void (await c.config('SET', name, value))),
    undo: () => withClient(server().url, async (c) => void (await c.config('SET', name, back))),
  });

  const states: State[] = [
    { reason: 'READONLY', server: () => replica, produce: async () => {}, undo: async () => {} },
    { reason: 'OOM', server: () => primary, ...config(() => primary, 'maxmemory', '1', '0') },
    // The primary has one replica: two are required.
    { reason: 'NOREPLICAS', server: () => primary, ...config(() => primary, 'min-replicas-to-write', '2', '0') },
    {
      reason: 'BUSY',
      server: () => primary,
      produce: async () => {
        await withClient(primary.url, async (c) => void (await c.config('SET', 'busy-reply-threshold', '100')));
        busyClient = new Redis(primary.url, { maxRetriesPerRequest: 0 });
        busyClient.on('error', () => {});
        // A read-only script that spins for 20 s (SCRIPT KILL ends it): Redis answers BUSY meanwhile.
        busyClient
          .eval(
            "local t = redis.call('TIME') while true do local n = redis.call('TIME') if n[1] - t[1] > 20 then break end end return 1",
            0,
          )
          .catch(() => {});
        await until('BUSY', () =>
          withClient(primary.url, (c) =>
            c.ping().then(
              () => false,
              (e: Error) => e.message.startsWith('BUSY'),
            ),
          ),
        );
      },
      undo: async () => {
        await until('SCRIPT KILL', () =>
          withClient(primary.url, (c) =>
            c.script('KILL').then(
              () => true,
              (e: Error) => e.message.startsWith('NOTBUSY'),
            ),
          ),
        );
        await until('the script to end', () =>
          withClient(primary.url, (c) =>
            c.ping().then(
              () => true,
              () => false,
            ),
          ),
        );
        busyClient?.disconnect();
        busyClient = undefined;
      },
    },
    {
      reason: 'MISCONF',
      server: () => misconf,
      produce: async () => {
        rmSync(misconf.dir, { recursive: true, force: true });
        await withClient(misconf.url, async (c) => {
          await c.bgsave();
          await until('the RDB save to fail', async () =>
            (await c.info('persistence')).includes('rdb_last_bgsave_status:err'),
          );
        });
      },
      undo: async () => {},
    },
    {
      reason: 'MASTERDOWN',
      server: () => stale,
      produce: async () => {
        const nobody = await freePort();
        await withClient(stale.url, async (c) => {
          await c.config('SET', 'replica-serve-stale-data', 'no');
          await c.replicaof('127.0.0.1', nobody);
        });
      },
      undo: () => withClient(stale.url, async (c) => void (await c.replicaof('NO', 'ONE'))),
    },
  ];

  for (const state of states) {
    it(`${state.reason}: the plain Redis store answers unavailable (retriable), and succeeds once it is over`, async () => {
      const prefix = testPrefix();
      const target = state.server();
      // The pool is made where writes are accepted: on the primary, for its replica.
      const maker = await openDibs(`${(target === replica ? primary : target).url}?prefix=${prefix}`);
      await maker.pools.create({ name: 'p' });
      await maker.pools.importCodes('p', ['A', 'B', 'C']);
      await maker.close();
      if (target === replica) await withClient(primary.url, async (c) => void (await c.wait(1, 5000)));
      const dibs = await openDibs(`${target.url}?prefix=${prefix}&commandTimeoutMs=5000`);
      try {
        await state.produce();
        try {
          // A script is refused only at its first write, and only a write that may grow memory
          // under OOM: a claim starts with ZPOPMIN (which frees), an import with HSET.
          const step = state.reason === 'OOM' ? dibs.pools.importCodes('p', ['D']) : dibs.pools.claim('p', 'alice');
          await assert.rejects(step, (error: unknown) => {
            assert.ok(isDibsError(error, 'unavailable'), `unavailable, not ${String(error)}`);
            assert.equal(error.retriable, true);
            assert.equal(error.status, 503);
            assert.deepEqual(error.details, { reason: state.reason, retryAfterMs: 1000 });
            return true;
          });
          if (state.reason === 'READONLY') {
            const health = await dibs.health();
            assert.equal(health.ok, false, 'a replica is not ready');
            assert.equal(health.details.role, 'replica');
          }
        } finally {
          await state.undo();
        }
        if (state.reason !== 'READONLY' && state.reason !== 'MISCONF') {
          assert.equal((await dibs.pools.claim('p', 'alice')).status, 'claimed', 'served again once the state is over');
        }
      } finally {
        await dibs.close();
      }
    });

    it(`${state.reason}: a tiered store sells through the ledger, opens the breaker, and health says the fast path is degraded`, async () => {
      const temp = tempTieredStore('sqlite', {
        redis: state.server().url,
        fast: { breakerMs: '600000', commandTimeoutMs: '5000' },
      });
      const dibs: Dibs = await openDibs(temp.store);
      try {
        const sale = await dibs.sales.create({
          sku: `STATE-${state.reason}`,
          startsAt: new Date().toISOString(),
          endsAt: new Date(Date.now() + HOUR).toISOString(),
          cap: 10,
          perCustomerLimit: 1,
        });
        await state.produce();
        try {
          const { order } = await dibs.sales.buy(sale.id, 'alice', 1, { idempotencyKey: 'alice/1' });
          assert.equal(order.customer, 'alice');
          assert.equal(
            (await dibs.sales.buy(sale.id, 'bob')).order.customer,
            'bob',
            'the next buyer goes straight to the ledger',
          );
          const fast = (await dibs.health()).details.fastPath as {
            ok: boolean;
            degraded?: boolean;
            breaker: string;
            reason?: string;
          };
          assert.equal(fast.ok, false, JSON.stringify(fast));
          assert.equal(fast.degraded, true, JSON.stringify(fast));
          assert.equal(fast.breaker, 'open');
          assert.equal(fast.reason, state.reason);
        } finally {
          await state.undo();
        }
        assert.equal((await dibs.sales.get(sale.id)).stats.sold, 2);
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      } finally {
        await dibs.close();
        await temp.drop().catch(() => {}); // a replica refuses the key cleanup; the server is thrown away
      }
    });
  }

  it('NOREPLICAS over HTTP: 503 unavailable with Retry-After', async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${primary.url}?prefix=${prefix}`);
    const app = buildServer({ dibs, rateLimit: false });
    const refusing = config(() => primary, 'min-replicas-to-write', '2', '0');
    try {
      await app.ready();
      const auth = `Bearer ${(await createApiKey(dibs.backend.service, { tenant: 'default', name: 'test', scopes: ['pools:admin', 'pools:claim'] })).key}`;
      await dibs.pools.create({ name: 'p' });
      await dibs.pools.importCodes('p', ['A']);
      await refusing.produce();
      try {
        const res = await app.inject({
          method: 'POST',
          url: '/v1/pools/p/claims',
          headers: { authorization: auth, 'content-type': 'application/json' },
          payload: JSON.stringify({ claimant: 'alice' }),
        });
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.headers['retry-after'], '1');
        assert.equal((res.json() as { error: { code: string } }).error.code, 'unavailable');
      } finally {
        await refusing.undo();
      }
    } finally {
      await app.close();
      await dibs.close();
    }
  });
});
