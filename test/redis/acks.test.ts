/**
 * Replica acknowledgement on a test-owned master with one replica: under `acks=replicas:1` a claim
 * is answered once the replica has it; with the replica gone the claim answers `unavailable`
 * (after acksTimeoutMs) although the master applied it, and the same idempotency key, retried once
 * the replica is back, replays that claim instead of taking a second code. health() reports the
 * setting and warns that writes cannot be acknowledged.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { isDibsError, openDibs } from '../../src/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { redisServerInstalled, startRedis } from '../support/redis.js';

async function inSync(port: number): Promise<void> {
  const probe = new Redis({ port, host: '127.0.0.1' });
  try {
    for (
      const deadline = Date.now() + 30_000;
      !String(await probe.info('replication')).includes('master_link_status:up');
      await sleep(100)
    ) {
      if (Date.now() > deadline) throw new Error('the replica did not sync');
    }
  } finally {
    probe.disconnect();
  }
}

describe('redis acks=replicas:1', {
  skip: redisServerInstalled() ? false : 'redis-server is not installed',
  timeout: 120_000,
}, () => {
  it('waits for the replica; without it answers unavailable, and the keyed retry replays', async () => {
    const master = await startRedis();
    const replica = await startRedis(['--replicaof', '127.0.0.1', String(master.port)]);
    try {
      await inSync(replica.port);
      const dibs = await openDibs(`${master.url}?prefix=acks&acks=replicas:1&acksTimeoutMs=300`);
      try {
        await dibs.pools.create({ name: 'p' });
        await dibs.pools.importCodes('p', ['A', 'B', 'C']);
        assert.equal((await dibs.pools.claim('p', 'first')).status, 'claimed');
        await dibs.counters.incr('c', 1);
        const keyId = (await createApiKey(dibs.backend.service, { name: 'old', scopes: ['admin'] })).record.id;
        assert.match(String((await dibs.health()).details.acks), /^replicas:1/);
        await replica.kill();
        const refused = await dibs.pools.claim('p', 'second', { idempotencyKey: 'k2' }).then(
          () => null,
          (error: unknown) => error,
        );
        assert.ok(
          isDibsError(refused) && refused.code === 'unavailable',
          `a claim no replica acknowledged is unavailable (got ${String(refused)})`,
        );
        assert.match(String((await dibs.health()).details.warning), /only 0 replica\(s\) online/);
        // Writes that are not claim/buy scripts are acknowledged the same way: a deleted pool, a
        // reset counter or a new API key a failover could undo must not be answered as done.
        await dibs.pools.create({ name: 'gone' }).catch(() => {});
        const admin: [string, () => Promise<unknown>][] = [
          ['pools.delete', () => dibs.pools.delete('gone')],
          ['counters.reset', () => dibs.counters.reset('c')],
          ['API key created', () => createApiKey(dibs.backend.service, { name: 'ops', scopes: ['admin'] })],
          ['API key revoked', () => dibs.backend.service.revokeKey(keyId)],
        ];
        for (const [what, call] of admin) {
          const answer = await call().then(
            () => 'done',
            (error: unknown) => error,
          );
          assert.ok(
            isDibsError(answer, 'unavailable'),
            `${what} with no replica to acknowledge it is unavailable (got ${String(answer)})`,
          );
        }
        await replica.restart();
        await inSync(replica.port);
        const retried = await dibs.pools.claim('p', 'second', { idempotencyKey: 'k2' });
        assert.equal(retried.replayed, true, 'the write the master applied is replayed, not repeated');
        assert.deepEqual(await dibs.pools.stats('p').then((s) => s.claimed), 2);
      } finally {
        await dibs.close();
      }
    } finally {
      await replica.stop();
      await master.stop();
    }
  });
});
