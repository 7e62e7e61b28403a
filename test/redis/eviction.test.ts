/**
 * The eviction check at open, on test-owned redis-servers: a master whose maxmemory-policy may
 * evict keys (allkeys-*, volatile-*) makes open refuse with `invalid_input` on `store`, naming the
 * allowEviction option; with allowEviction=true it opens and health reports the policy with a
 * warning; noeviction opens without one. On a Cluster every master is read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { isDibsError, openDibs } from '../../src/index.js';
import { redisServerInstalled, startCluster, startRedis } from '../support/redis.js';

const installed = redisServerInstalled();

async function refusesEviction(url: string, policy: string): Promise<void> {
  await assert.rejects(openDibs(url), (error: unknown) => {
    assert.ok(isDibsError(error, 'invalid_input'), String(error));
    assert.equal(error.field, 'store');
    assert.match(error.message, new RegExp(`maxmemory-policy ${policy}`));
    assert.match(error.message, /allowEviction=true/);
    assert.equal(error.details?.option, 'allowEviction');
    return true;
  });
}

describe('Redis eviction policy at open', { skip: !installed }, () => {
  it('allkeys-lru: open refuses, naming the option; allowEviction=true opens and health warns; noeviction opens clean', async () => {
    const server = await startRedis(['--maxmemory-policy', 'allkeys-lru']);
    try {
      await refusesEviction(server.url, 'allkeys-lru');
      await assert.rejects(openDibs(`${server.url}?allowEviction=maybe`), (error: unknown) =>
        isDibsError(error, 'invalid_input'),
      );

      const accepted = await openDibs(`${server.url}?allowEviction=true`);
      try {
        const health = await accepted.health();
        assert.equal(health.ok, true);
        assert.equal(health.details.maxmemoryPolicy, 'allkeys-lru');
        assert.match(String(health.details.evictionWarning), /allkeys-lru \(accepted by allowEviction=true\)/);
        await accepted.pools.create({ name: 'p' }); // and it works
      } finally {
        await accepted.close();
      }

      const admin = new Redis(server.url);
      await admin.config('SET', 'maxmemory-policy', 'volatile-ttl');
      await refusesEviction(server.url, 'volatile-ttl');
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      admin.disconnect();
      const clean = await openDibs(server.url);
      try {
        const health = await clean.health();
        assert.equal(health.details.maxmemoryPolicy, 'noeviction');
        assert.equal(health.details.evictionWarning, undefined);
      } finally {
        await clean.close();
      }
    } finally {
      await server.stop();
    }
  });

  it('a Cluster: one master with volatile-lru is enough to refuse', async () => {
    const cluster = await startCluster();
    try {
      assert.ok(await openDibs(cluster.url).then((d) => d.close().then(() => true)), 'noeviction everywhere opens');
      const last = cluster.nodes[2]!;
      const admin = new Redis(last.url);
      await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
      admin.disconnect();
      await refusesEviction(cluster.url, 'volatile-lru');
      const accepted = await openDibs(`${cluster.url}?allowEviction=true`);
      await accepted.close();
    } finally {
      await cluster.stop();
    }
  });
});
